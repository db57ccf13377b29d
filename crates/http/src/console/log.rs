//! The event log, newest first, filtered by kind, identity and time, a page
//! at a time. A Master Admin sees every event; anyone else what `GET
//! /vedsdk/Log` shows them (`sql::visible_to`: their own events and those on
//! entries they may read).

use std::collections::HashMap;

use axum::extract::Query;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use strongroom_core::event::EventKind;
use strongroom_core::time::UnixTime;
use strongroom_store::EventFilter;

use super::{Ctx, Nav, PageAnswers};
use strongroom_app::service::console::ConsoleError;

const TITLE: &str = "Event log";

/// Events per page.
const PAGE: u32 = 50;

#[derive(Deserialize, utoipa::IntoParams, Default, Clone)]
#[into_params(parameter_in = Query)]
pub(crate) struct LogQuery {
    /// An event kind, such as `user.created`.
    kind: Option<String>,
    /// Who acted: a user's name, or an identity as stored (`local:{…}`).
    identity: Option<String>,
    /// Events at or after this time, UTC (`2026-01-02T03:04:05Z`; seconds and `Z` may be left out).
    from: Option<String>,
    /// Events before this time, UTC.
    to: Option<String>,
    /// The page, from 0 (the newest).
    page: Option<String>,
}

/// A time as typed: `YYYY-MM-DDTHH:MM[:SS][Z]` (a space for the `T` too), UTC.
fn parse_time(s: &str) -> Option<UnixTime> {
    let s = s.trim().replace(' ', "T");
    let s = s.trim_end_matches(['Z', 'z']);
    let full = match s.len() {
        10 => format!("{s}T00:00:00Z"),
        16 => format!("{s}:00Z"),
        _ => format!("{s}Z"),
    };
    strongroom_core::vault::value::parse_date(&full).map(|ticks| UnixTime::from_millis(ticks / 10_000))
}

fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

fn link(q: &LogQuery, page: u32) -> String {
    let mut pairs: Vec<(&str, String)> = Vec::new();
    for (k, v) in [("kind", &q.kind), ("identity", &q.identity), ("from", &q.from), ("to", &q.to)] {
        if let Some(v) = given(v) {
            pairs.push((k, v.to_owned()));
        }
    }
    pairs.push(("page", page.to_string()));
    format!("/admin/log?{}", serde_urlencoded::to_string(pairs).unwrap_or_default())
}

async fn body(ctx: &Ctx, q: &LogQuery) -> Result<Markup, ConsoleError> {
    let admin = ctx.admin();
    let users = admin.list_users().await?;
    let names: HashMap<String, String> = users.iter().map(|u| (u.id.identity(), u.name.clone())).collect();
    let kind = given(&q.kind);
    if let Some(k) = kind
        && !EventKind::ALL.iter().any(|e| e.as_str() == k)
    {
        return Err(ConsoleError::Invalid(format!("No event kind {k}.")));
    }
    let identity =
        given(&q.identity).map(|i| users.iter().find(|u| u.name.eq_ignore_ascii_case(i)).map_or_else(|| i.to_owned(), |u| u.id.identity()));
    let time = |v: &Option<String>, what: &str| -> Result<Option<UnixTime>, ConsoleError> {
        given(v)
            .map(|t| parse_time(t).ok_or_else(|| ConsoleError::Invalid(format!("{what} must be a UTC time such as 2026-01-02T03:04:05Z."))))
            .transpose()
    };
    let (since, until) = (time(&q.from, "From")?, time(&q.to, "To")?);
    let page: u32 = match given(&q.page) {
        None => 0,
        Some(p) => p.parse().ok().filter(|p| *p < 100_000).ok_or_else(|| ConsoleError::Invalid("The page is a number.".into()))?,
    };
    let filter = EventFilter {
        since,
        until,
        kind: kind.map(str::to_owned),
        identity,
        newest_first: true,
        limit: PAGE + 1,
        offset: page * PAGE,
        viewer: ctx.standing.viewer(),
        ..Default::default()
    };
    let mut events = admin.events(filter).await?;
    let older = events.len() > PAGE as usize;
    events.truncate(PAGE as usize);
    Ok(html! {
        @if !ctx.standing.master_admin() { p.muted { "You see your own events and those on vault entries you may read." } }
        form method="get" action="/admin/log" {
            fieldset {
                legend { "Filter" }
                label for="log_kind" { "Kind" }
                select id="log_kind" name="kind" {
                    option value="" { "any" }
                    @for k in EventKind::ALL { option value=(k.as_str()) selected[kind == Some(k.as_str())] { (k.as_str()) } }
                }
                " "
                label for="log_identity" { "Who" }
                input type="text" id="log_identity" name="identity" value=(given(&q.identity).unwrap_or("")) size="14" maxlength="300";
                " "
                label for="log_from" { "From (UTC)" }
                input type="text" id="log_from" name="from" value=(given(&q.from).unwrap_or("")) size="17" placeholder="2026-01-02T03:04";
                " "
                label for="log_to" { "To (UTC)" }
                input type="text" id="log_to" name="to" value=(given(&q.to).unwrap_or("")) size="17" placeholder="2026-01-02T03:04";
                " " button type="submit" id="filter" { "Filter" }
            }
        }
        // Identities, GUIDs, scopes and paths are long words: `log` lets them break, and keeps
        // the number, the time, the kind and the address `whole` (the style sheet): the table fits its card.
        table.log {
            caption.muted { "Page " (page + 1) ", newest first" }
            thead { tr { th scope="col" { "#" } th scope="col" { "Time (UTC)" } th scope="col" { "Event" } th scope="col" { "Who" }
                th scope="col" { "Object" } th scope="col" { "Integration" } th scope="col" { "Detail" } th scope="col" { "From" } } }
            tbody {
                @if events.is_empty() { tr { td colspan="8" { span.muted { "No events." } } } }
                @for se in &events {
                    @let e = &se.event;
                    tr {
                        td.whole { (se.seq) }
                        td.whole { (e.at.iso8601()) }
                        td.whole { code { (e.kind.as_str()) } }
                        td { (names.get(&e.identity).cloned().unwrap_or_else(|| e.identity.clone())) }
                        td { (e.object) }
                        td { (e.client_id) }
                        td { (e.detail) }
                        td.whole { (e.source) }
                    }
                }
            }
        }
        nav aria-label="Pages" {
            @if page > 0 { a href=(link(q, page - 1)) rel="prev" { "Newer events" } " " }
            @if older { a href=(link(q, page + 1)) rel="next" id="older" { "Older events" } }
        }
    })
}

/// The event log.
#[utoipa::path(get, path = "/admin/log", tag = "admin console", operation_id = "console_log", params(LogQuery), responses(PageAnswers))]
pub(crate) async fn page(Query(q): Query<LogQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.has_any() {
        return ctx.forbidden(Nav::Log);
    }
    match body(&ctx, &q).await {
        Ok(page) => ctx.page(Nav::Log, TITLE, page),
        Err(e) => ctx.problem(e, Nav::Log, TITLE, html! { p { a href="/admin/log" { "All events" } } }),
    }
}
