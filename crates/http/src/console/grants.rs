//! Grants (Master Admins only): the live grants, filtered by user or
//! integration; revoke one.

use axum::extract::Query;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use super::{Confirm, Ctx, Nav, PageAnswers, PostRefusals, Posted, count, query};
use strongroom_app::service::console::ConsoleError;

const TITLE: &str = "Grants";

#[derive(Deserialize, utoipa::IntoParams, Default)]
#[into_params(parameter_in = Query)]
pub(crate) struct GrantsQuery {
    /// Only this user's grants (their name, any case).
    user: Option<String>,
    /// Only this integration's grants (its client id, exactly).
    integration: Option<String>,
}

async fn body(ctx: &Ctx, q: &GrantsQuery) -> Result<Markup, ConsoleError> {
    let user = q.user.as_deref().map(str::trim).filter(|u| !u.is_empty());
    let integration = q.integration.as_deref().map(str::trim).filter(|u| !u.is_empty());
    let grants: Vec<_> = ctx
        .admin()
        .list_grants(false)
        .await?
        .into_iter()
        .filter(|g| user.is_none_or(|u| g.user_name.eq_ignore_ascii_case(u)))
        .filter(|g| integration.is_none_or(|i| g.grant.client_id == i))
        .collect();
    Ok(html! {
        form method="get" action="/admin/grants" {
            label for="filter_user" { "User" }
            input type="text" id="filter_user" name="user" value=(user.unwrap_or("")) maxlength="300";
            " "
            label for="filter_integration" { "Integration (client ID)" }
            input type="text" id="filter_integration" name="integration" value=(integration.unwrap_or("")) maxlength="128";
            " " button type="submit" id="filter" { "Filter" }
        }
        @if let (Some(u), false) = (user, grants.is_empty()) {
            p { a href=(format!("/admin/grants/revoke?{}", query(&[("user", u)]))) id="revoke_user" { "Revoke every grant of " (u) "…" } }
        }
        table {
            caption.muted { (grants.len()) " live grants" }
            thead { tr { th scope="col" { "Grant" } th scope="col" { "User" } th scope="col" { "Integration" } th scope="col" { "Scope" }
                th scope="col" { "Approved" } th scope="col" { "Last issued" } th scope="col" { "Ends" } th scope="col" { "Action" } } }
            tbody {
                @for g in &grants {
                    tr {
                        td { code { (g.grant.id.as_str().get(..8).unwrap_or(g.grant.id.as_str())) } }
                        td { (g.user_name) }
                        td { code { (g.grant.client_id) } }
                        td { code { (g.grant.scope) } }
                        td { (g.grant.created_at.iso8601()) }
                        td { (g.grant.access_issued_at.iso8601()) @if let Some(a) = &g.grant.last_addr { " to " (a) } }
                        td { (g.grant.refresh_until.iso8601()) }
                        td {
                            a.revoke href=(format!("/admin/grants/revoke?{}", query(&[("grant", g.grant.id.as_str())])))
                                aria-label=(format!("Revoke the grant of {} to {}", g.user_name, g.grant.client_id)) { "Revoke" }
                        }
                    }
                }
            }
        }
    })
}

async fn show(ctx: &Ctx, outcome: Option<Result<String, ConsoleError>>, q: &GrantsQuery) -> Response {
    match (body(ctx, q).await, outcome) {
        (Ok(page), None) => ctx.page(Nav::Grants, TITLE, page),
        (Ok(page), Some(o)) => ctx.after(o, Nav::Grants, TITLE, page),
        (Err(e), _) => ctx.problem(e, Nav::Grants, TITLE, html! {}),
    }
}

/// The live grants.
#[utoipa::path(
    get,
    path = "/admin/grants",
    tag = "admin console",
    operation_id = "console_grants",
    params(GrantsQuery),
    responses(PageAnswers)
)]
pub(crate) async fn page(Query(q): Query<GrantsQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Grants);
    }
    show(&ctx, None, &q).await
}

/// The grant a confirmation page names.
#[derive(Deserialize, utoipa::IntoParams, Default)]
#[into_params(parameter_in = Query)]
pub(crate) struct GrantQuery {
    /// The grant's id.
    grant: Option<String>,
    /// Or a user: every live grant of theirs (`admin grants revoke --user`).
    user: Option<String>,
}

/// Asks before revoking a grant: whose, to which integration, and that its tokens stop.
#[utoipa::path(
    get,
    path = "/admin/grants/revoke",
    tag = "admin console",
    operation_id = "console_grant_revoke_confirm",
    params(GrantQuery),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_revoke(Query(q): Query<GrantQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Grants);
    }
    if let Some(user) = q.user.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
        return confirm_revoke_user(&ctx, user).await;
    }
    let id = q.grant.as_deref().unwrap_or("").trim();
    let found = match ctx.admin().list_grants(false).await {
        Ok(all) => all.into_iter().find(|g| g.grant.id.as_str() == id),
        Err(e) => return show(&ctx, Some(Err(e.into())), &GrantsQuery::default()).await,
    };
    let Some(g) = found else {
        return show(&ctx, Some(Err(ConsoleError::NotFound(format!("live grant {id}")))), &GrantsQuery::default()).await;
    };
    ctx.confirm(Confirm {
        nav: Nav::Grants,
        title: &format!("Revoke the grant of {} to {}?", g.user_name, g.grant.client_id),
        consequences: html! {
            p { "This will end the grant of " strong { (g.user_name) } " to integration " strong { code { (g.grant.client_id) } }
                " (scope " code { (g.grant.scope) } ", approved " (g.grant.created_at.iso8601()) "): its access and refresh tokens stop working at once, and the application must ask "
                (g.user_name) " again." }
        },
        action: "/admin/grants/revoke",
        fields: &[("grant", id)],
        button: "Revoke the grant",
        back: "/admin/grants",
    })
}

/// Asks before revoking every live grant of `user`: how many, to which integrations.
async fn confirm_revoke_user(ctx: &Ctx, user: &str) -> Response {
    let i = match ctx.admin().user_impact(user).await {
        Ok(i) => i,
        Err(e) => return show(ctx, Some(Err(e.into())), &GrantsQuery::default()).await,
    };
    let name = i.user.name.as_str();
    let apps: Vec<&str> = i.grants.iter().map(|g| g.grant.client_id.as_str()).collect();
    ctx.confirm(Confirm {
        nav: Nav::Grants,
        title: &format!("Revoke every grant of {name}?"),
        consequences: html! {
            p { "This will end " strong { (count(i.grants.len() as u64, "live grant", "live grants")) } " of " (name)
                @if !apps.is_empty() { " (to " (apps.join(", ")) ")" }
                ": their tokens stop working at once. " (name) " stays enabled and may approve applications again." }
        },
        action: "/admin/grants/revoke",
        fields: &[("user", name)],
        button: &format!("Revoke every grant of {name}"),
        back: "/admin/grants",
    })
}

/// The form of `POST /admin/grants/revoke` (a description).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct ConsoleGrantForm {
    /// The anti-forgery token (equal to the cookie's).
    csrf: String,
    /// The grant's id.
    grant: Option<String>,
    /// Or a user's name: every live grant of theirs.
    user: Option<String>,
}

/// Revoke a grant, or every grant of a user: their tokens stop working at once.
#[utoipa::path(
    post,
    path = "/admin/grants/revoke",
    tag = "admin console",
    operation_id = "console_grant_revoke",
    request_body(content = ConsoleGrantForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Revoked; the list again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn revoke(Posted(ctx, form): Posted) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Grants);
    }
    let (id, user) = (form.get("grant"), form.get("user"));
    let outcome = if user.is_empty() {
        ctx.admin().revoke_grant(id).await.map(|()| "Grant revoked: its tokens no longer work.".to_owned())
    } else {
        ctx.admin()
            .revoke_user_grants(user)
            .await
            .map(|n| format!("{} of {user} revoked: their tokens no longer work.", count(n, "live grant", "live grants")))
    };
    show(&ctx, Some(outcome.map_err(ConsoleError::from)), &GrantsQuery::default()).await
}
