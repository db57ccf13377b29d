//! `GET /`: a small page for people who open the server's address in a
//! browser, pointing to what is there.

use axum::extract::State;
use axum::response::{IntoResponse as _, Response};
use maud::html;

use super::respond::Page;
use crate::state::HttpState;

/// `GET /`.
#[utoipa::path(
    get,
    path = "/",
    tag = "server",
    responses((status = 200, description = "A page linking to the approval page, the applications a person approved, the admin console, health and the API description.", content_type = "text/html; charset=utf-8", body = String)),
)]
pub(crate) async fn page(State(app): State<HttpState>) -> Response {
    let base = &app.public_url;
    Page::Ok(html! {
        (maud::DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "Strongroom" }
                link rel="stylesheet" href="/vedauth/device/style.css";
            }
            body {
                main {
                    h1 { "Strongroom" }
                    p { "A token authority and secret vault. Applications get tokens here; people approve them." }
                    ul {
                        li { a href="/vedauth/device" { "Approve a sign-in" } " — enter the code an application shows you." }
                        li { a href="/vedauth/device/grants" { "Applications I have approved" } " — see them, and revoke what you no longer want." }
                        li { a href="/admin" { "Admin console" } " — for administrators: users, integrations, grants, the vault." }
                        li { a href="/health/ready" { "Readiness" } " — whether this server can take requests." }
                        li { a href="/openapi.json" { "API description" } " (OpenAPI 3.1)." }
                        li { a href="/.well-known/oauth-authorization-server" { "OAuth metadata" } " (RFC 8414) for standard clients." }
                    }
                    p { small { "Served at " (base) " by strongroom " (env!("CARGO_PKG_VERSION")) "." } }
                }
            }
        }
    })
    .into_response()
}
