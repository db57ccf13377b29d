//! Server information (Master Admins only): the version serving, the
//! store (its kind and location as the start-up log says them), the
//! schema this binary needs, whether the store is ready (the check of
//! `/health/ready`), its connections, and the event chain's head; on
//! request, the chain verified (`admin events verify`: every hash link from
//! the last archive's checkpoint).

use std::time::Duration;

use axum::extract::Query;
use axum::response::Response;
use maud::html;
use serde::Deserialize;

use super::{Ctx, Nav, PageAnswers};

#[derive(Deserialize, utoipa::IntoParams, Default)]
#[into_params(parameter_in = Query)]
pub(crate) struct ServerQuery {
    /// `1`: verify the event chain too (reads the whole stored log).
    verify: Option<String>,
}

const TITLE: &str = "Server";

/// The server, its store and its health.
#[utoipa::path(
    get,
    path = "/admin/server",
    tag = "admin console",
    operation_id = "console_server",
    params(ServerQuery),
    responses(PageAnswers)
)]
pub(crate) async fn page(Query(q): Query<ServerQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Server);
    }
    let store = &ctx.app.store;
    let ready = match tokio::time::timeout(Duration::from_secs(2), store.ready()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the store did not answer within 2 s".to_owned()),
    };
    let head = store.event_head().await.map(|(seq, _)| seq);
    let pool = store.pool_status();
    let verified = match q.verify.as_deref() {
        Some("1") => Some(ctx.admin().verify_events().await),
        _ => None,
    };
    let body = html! {
        table {
            tbody {
                tr { th scope="row" { "Version" } td #version { "strongroom " (env!("CARGO_PKG_VERSION")) } }
                tr { th scope="row" { "Store" } td #store { (store.describe()) } }
                tr { th scope="row" { "Schema" } td #schema { (strongroom_store::schema_version())
                    @if ready.is_ok() { " (the store is at this binary's schema)" } } }
                tr { th scope="row" { "Health" } td #health {
                    @match &ready {
                        Ok(()) => { strong { "ready" } ": the store answers and takes writes (" code { "/health/ready" } " answers 200)" }
                        Err(why) => { strong.error { "not ready" } ": " (why) } } } }
                tr { th scope="row" { "Connections" } td { (pool.in_use) " in use of " (pool.max) ", " (pool.waiting) " requests waiting" } }
                tr { th scope="row" { "Events" } td { @match head { Ok(seq) => { (seq) " (the chain's head; " a href="/admin/log" { "the log" } ")" } Err(_) => { "—" } } } }
                tr { th scope="row" { "Event chain" } td #chain {
                    @match &verified {
                        None => { a href="/admin/server?verify=1" id="verify" { "Verify the chain" } " (reads the whole stored log)" }
                        Some(Ok(v)) => { strong { "whole" } ": " (v.events) " events checked"
                            @if let Some((seq, _)) = v.checkpoint { " after the archive's checkpoint at #" (seq) } }
                        Some(Err(e)) => { strong.error { "broken" } ": " (e) }
                    }
                } }
            }
        }
    };
    ctx.page(Nav::Server, TITLE, body)
}
