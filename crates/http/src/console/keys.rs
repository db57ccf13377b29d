//! Keys (Master Admins only): the named keys that seal the vault
//! (`Driver:Name`), where each lives, which one is the default (the
//! configuration's `keys.default`: it seals new entries), their data keys
//! and how many entries each seals; rotate one (`admin keys rotate NAME`)
//! after a confirmation page saying what it re-encrypts. Creating a key in
//! a PKCS#11 token and moving entries between keys stay with the CLI.

use axum::extract::Query;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use super::{Confirm, Ctx, Nav, PageAnswers, PostRefusals, Posted, count, query, yes_no};
use strongroom_app::service::console::ConsoleError;

const TITLE: &str = "Keys";

async fn body(ctx: &Ctx) -> Result<Markup, ConsoleError> {
    let admin = ctx.admin();
    let keys = admin.named_keys().await?;
    let data = admin.data_keys().await?;
    Ok(html! {
        table {
            caption.muted { (count(keys.len() as u64, "named key", "named keys")) }
            thead { tr { th scope="col" { "Named key" } th scope="col" { "Where it lives" } th scope="col" { "Default" }
                th scope="col" { "Data keys (the last seals new data)" } th scope="col" { "Entries sealed" } th scope="col" { "Action" } } }
            tbody {
                @for k in &keys {
                    tr {
                        th scope="row" { code { (k.name) } }
                        td { @match &k.location { Some(l) => { (l) } None => { span.error { "not configured: its data cannot be read" } } } }
                        td { (yes_no(k.default)) }
                        td { @if k.data_keys.is_empty() { span.muted { "none yet" } } @else {
                            (k.data_keys.iter().map(|id| {
                                let made = data.iter().find(|(d, ..)| d == id).map(|(_, _, at)| at.iso8601()).unwrap_or_default();
                                format!("#{id} ({made})")
                            }).collect::<Vec<_>>().join(", ")) } }
                        td { (k.entries) }
                        td { @if k.location.is_some() {
                            a href=(format!("/admin/keys/rotate?{}", query(&[("name", &k.name)]))) aria-label=(format!("Rotate {}", k.name)) { "Rotate" }
                        } }
                    }
                }
            }
        }
        p.muted { "The default key is set in the configuration (" code { "keys.default" } "); creating a PKCS#11 key and moving entries between keys are done with "
            code { "strongroom admin keys" } "." }
    })
}

async fn show(ctx: &Ctx, outcome: Option<Result<String, ConsoleError>>) -> Response {
    match (body(ctx).await, outcome) {
        (Ok(page), None) => ctx.page(Nav::Keys, TITLE, page),
        (Ok(page), Some(o)) => ctx.after(o, Nav::Keys, TITLE, page),
        (Err(e), _) => ctx.problem(e, Nav::Keys, TITLE, html! {}),
    }
}

/// The named keys and their data keys.
#[utoipa::path(get, path = "/admin/keys", tag = "admin console", operation_id = "console_keys", responses(PageAnswers))]
pub(crate) async fn page(ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Keys);
    }
    show(&ctx, None).await
}

/// The named key a confirmation page names.
#[derive(Deserialize, utoipa::IntoParams, Default)]
#[into_params(parameter_in = Query)]
pub(crate) struct KeyQuery {
    /// The named key, `Driver:Name`.
    name: Option<String>,
}

/// Asks before rotating a named key: what it re-encrypts.
#[utoipa::path(
    get,
    path = "/admin/keys/rotate",
    tag = "admin console",
    operation_id = "console_key_rotate_confirm",
    params(KeyQuery),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_rotate(Query(q): Query<KeyQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Keys);
    }
    let name = q.name.as_deref().unwrap_or("").trim();
    let key = match ctx.admin().named_keys().await {
        Ok(keys) => keys.into_iter().find(|k| k.name.eq_ignore_ascii_case(name) && k.location.is_some()),
        Err(e) => return show(&ctx, Some(Err(e.into()))).await,
    };
    let Some(k) = key else { return show(&ctx, Some(Err(ConsoleError::NotFound(format!("named key {name}"))))).await };
    ctx.confirm(Confirm {
        nav: Nav::Keys,
        title: &format!("Rotate {}?", k.name),
        consequences: html! {
            p { "This makes a new data key for " strong { code { (k.name) } } " and re-encrypts with it " strong { (count(k.entries, "entry", "entries")) }
                " sealed under it now, before this page answers. The old data keys are kept (nothing becomes unreadable); nothing ends." }
        },
        action: "/admin/keys/rotate",
        fields: &[("name", &k.name)],
        button: &format!("Rotate {}", k.name),
        back: "/admin/keys",
    })
}

/// The form of `POST /admin/keys/rotate` (a description).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct ConsoleKeyForm {
    /// The anti-forgery token (equal to the cookie's).
    csrf: String,
    /// The named key, `Driver:Name`.
    name: String,
}

/// Rotate a named key: a new data key, and everything under it re-sealed with it.
#[utoipa::path(
    post,
    path = "/admin/keys/rotate",
    tag = "admin console",
    operation_id = "console_key_rotate",
    request_body(content = ConsoleKeyForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Rotated; the keys again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn rotate(Posted(ctx, form): Posted) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Keys);
    }
    let name = form.get("name");
    let outcome = ctx
        .admin()
        .rotate_key(name, &mut |_| {})
        .await
        .map(|(id, n)| format!("{name} rotated: data key #{id} now seals it; {} re-encrypted.", count(n, "value", "values")));
    show(&ctx, Some(outcome.map_err(ConsoleError::from))).await
}
