//! Integrations (Master Admins only): the list with each one's grant count,
//! create, edit (name, maximum scope, who may use it, grant types, token
//! lifetimes, the retry window, disabled), delete after a confirmation page
//! that says how many live grants it ends.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use strongroom_core::integration::{AllowedUsers, GrantTypes, Integration, TokenOverrides};

use super::{Confirm, Ctx, Form, Nav, PageAnswers, PostRefusals, Posted, count, csrf_field, query, yes_no};
use crate::state::HttpState;
use strongroom_app::admin::AdminError;
use strongroom_app::admin::IntegrationSpec;
use strongroom_app::service::console::ConsoleError;

const TITLE: &str = "Integrations";

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct IntegrationsQuery {
    /// The client id of the integration to edit.
    edit: Option<String>,
}

/// Names for ids: users and groups.
struct Names {
    users: HashMap<String, String>,
    groups: HashMap<String, String>,
}

fn allowed(i: &Integration, n: &Names) -> (bool, String, String) {
    let users = match &i.allowed_users {
        AllowedUsers::Everyone => {
            return (true, String::new(), names_of(&i.allowed_groups.iter().map(|g| g.as_str()).collect::<Vec<_>>(), &n.groups));
        }
        AllowedUsers::Only(ids) => names_of(&ids.iter().map(|u| u.as_str()).collect::<Vec<_>>(), &n.users),
    };
    (false, users, names_of(&i.allowed_groups.iter().map(|g| g.as_str()).collect::<Vec<_>>(), &n.groups))
}

fn names_of(ids: &[&str], names: &HashMap<String, String>) -> String {
    ids.iter().map(|id| names.get(*id).cloned().unwrap_or_else(|| (*id).to_owned())).collect::<Vec<_>>().join(", ")
}

async fn body(ctx: &Ctx, edit: Option<&str>) -> Result<Markup, ConsoleError> {
    let admin = ctx.admin();
    let list = admin.list_integrations().await?;
    let grants = admin.list_grants(false).await?;
    let names = Names { users: admin.user_names().await?, groups: admin.group_names().await? };
    let count = |cid: &str| grants.iter().filter(|g| g.grant.client_id == cid).count();
    let editing = match edit {
        Some(cid) => Some(list.iter().find(|i| i.client_id == cid).ok_or_else(|| ConsoleError::NotFound(format!("integration {cid}")))?),
        None => None,
    };
    let csrf = &ctx.csrf;
    Ok(html! {
        table {
            caption.muted { (list.len()) " integrations" }
            thead { tr { th scope="col" { "Client ID" } th scope="col" { "Name" } th scope="col" { "Maximum scope" }
                th scope="col" { "Who may use it" } th scope="col" { "Live grants" } th scope="col" { "Disabled" } th scope="col" { "Actions" } } }
            tbody {
                @for i in &list {
                    @let (everyone, users, groups) = allowed(i, &names);
                    tr {
                        td { code { (i.client_id) } }
                        td { (i.name) }
                        td { code { (i.max_scope) } }
                        td {
                            @if everyone { "everyone" } @else {
                                @if !users.is_empty() { "users: " (users) }
                                @if !users.is_empty() && !groups.is_empty() { "; " }
                                @if !groups.is_empty() { "groups: " (groups) }
                                @if users.is_empty() && groups.is_empty() { span.muted { "nobody" } }
                            }
                        }
                        td { (count(&i.client_id)) }
                        td { (yes_no(i.disabled)) }
                        td {
                            a href=(format!("/admin/integrations?{}", serde_urlencoded::to_string([("edit", &i.client_id)]).unwrap_or_default())) {
                                "Edit" span.sr { " " (i.client_id) } }
                            " "
                            a href=(format!("/admin/integrations/delete?{}", query(&[("client_id", &i.client_id)])))
                                aria-label=(format!("Delete {}", i.client_id)) { "Delete" }
                        }
                    }
                }
            }
        }
        @if let Some(i) = editing {
            @let (everyone, users, groups) = allowed(i, &names);
            h2 #edit { "Edit " code { (i.client_id) } }
            form method="post" action="/admin/integrations/update" {
                (csrf_field(csrf))
                input type="hidden" name="client_id" value=(i.client_id);
                (fields("edit", &i.name, &i.max_scope.to_string(), everyone, &users, &groups))
                (settings("edit", i.grant_types, &i.overrides))
                div.field { input type="checkbox" id="edit_disabled" name="disabled" value="1" checked[i.disabled];
                    label.inline for="edit_disabled" { "Disabled (its tokens stop working; nobody can get new ones)" } }
                button type="submit" id="save_integration" { "Save" }
            }
        }
        h2 { "Create an integration" }
        form method="post" action="/admin/integrations/create" {
            (csrf_field(csrf))
            div.field { label for="new_client_id" { "Client ID" }
                input type="text" id="new_client_id" name="client_id" required maxlength="128" size="40"; }
            (fields("new", "", "", false, "", ""))
            (settings("new", GrantTypes::default(), &TokenOverrides::default()))
            button type="submit" id="create_integration" { "Create" }
        }
    })
}

fn fields(prefix: &str, name: &str, scope: &str, everyone: bool, users: &str, groups: &str) -> Markup {
    let id = |f: &str| format!("{prefix}_{f}");
    html! {
        div.field { label for=(id("name")) { "Name" } input type="text" id=(id("name")) name="name" value=(name) maxlength="200" size="40"; }
        div.field { label for=(id("scope")) { "Maximum scope" } input type="text" id=(id("scope")) name="scope" value=(scope) required maxlength="1000" size="40"
            aria-describedby=(id("scope_help")); span.muted id=(id("scope_help")) { " e.g. " code { "restricted:manage;configuration" } } }
        div.field { input type="checkbox" id=(id("everyone")) name="everyone" value="1" checked[everyone];
            label.inline for=(id("everyone")) { "Every user may use it" } }
        div.field { label for=(id("users")) { "Allowed users (names, comma-separated)" } input type="text" id=(id("users")) name="users" value=(users) size="40"; }
        div.field { label for=(id("groups")) { "Allowed groups (names, comma-separated)" } input type="text" id=(id("groups")) name="groups" value=(groups) size="40"; }
    }
}

/// The token lifetimes' fields: (form name, label).
const LIFETIMES: [(&str, &str); 5] = [
    ("access_validity", "Access-token lifetime"),
    ("grant_validity", "Grant lifetime (how long it may be refreshed)"),
    ("device_code_validity", "Device-code lifetime"),
    ("poll_interval", "Minimum time between polls"),
    ("retry_window", "Retry window (a just-rotated refresh token may come back for a lost answer; 0: strict)"),
];

fn lifetime(o: &TokenOverrides, name: &str) -> Option<i64> {
    match name {
        "access_validity" => o.access_validity,
        "grant_validity" => o.grant_validity,
        "device_code_validity" => o.device_code_validity,
        "poll_interval" => o.poll_interval,
        _ => o.retry_window,
    }
}

/// Grant types, token lifetimes and the retry window.
fn settings(prefix: &str, types: GrantTypes, o: &TokenOverrides) -> Markup {
    let id = |f: &str| format!("{prefix}_{f}");
    html! {
        fieldset {
            legend { "Grant types" }
            div.field { input type="checkbox" id=(id("device")) name="device" value="1" checked[types.device];
                label.inline for=(id("device")) { "Device authorization (a person approves in a browser)" } }
            div.field { input type="checkbox" id=(id("password_grant")) name="password_grant" value="1" checked[types.password];
                label.inline for=(id("password_grant")) { "Password grant (Authorize/OAuth)" } }
        }
        fieldset {
            legend { "Token lifetimes, in seconds (empty: as it is, or the server's default)" }
            @for (name, label) in LIFETIMES {
                div.field { label for=(id(name)) { (label) }
                    input type="number" min="0" id=(id(name)) name=(name) value=[lifetime(o, name)] size="12"; }
            }
            div.field { label for=(id("refreshable")) { "Refresh tokens" }
                select id=(id("refreshable")) name="refreshable" {
                    option value="" selected[o.refreshable.is_none()] { "as it is (or the server's default)" }
                    option value="yes" selected[o.refreshable == Some(true)] { "issued" }
                    option value="no" selected[o.refreshable == Some(false)] { "not issued" }
                }
            }
        }
    }
}

/// The spec of a create or edit form.
fn spec(form: &Form) -> Result<IntegrationSpec, AdminError> {
    let name = form.get("name");
    let seconds = |f: &str| -> Result<Option<i64>, AdminError> {
        match form.get(f) {
            "" => Ok(None),
            v => v.parse::<i64>().ok().filter(|n| *n >= 0).map(Some).ok_or_else(|| {
                let label = LIFETIMES.iter().find(|(n, _)| *n == f).map_or(f, |(_, l)| l);
                AdminError::Invalid(format!("{label}: a number of seconds, 0 or more."))
            }),
        }
    };
    Ok(IntegrationSpec {
        name: (!name.is_empty()).then(|| name.to_owned()),
        scope: Some(form.get("scope").to_owned()),
        allow_all_users: form.ticked("everyone"),
        allow_users: (!form.ticked("everyone")).then(|| form.list("users")),
        allow_groups: Some(form.list("groups")),
        device: Some(form.ticked("device")),
        password: Some(form.ticked("password_grant")),
        overrides: TokenOverrides {
            access_validity: seconds("access_validity")?,
            grant_validity: seconds("grant_validity")?,
            refreshable: match form.get("refreshable") {
                "yes" => Some(true),
                "no" => Some(false),
                _ => None,
            },
            device_code_validity: seconds("device_code_validity")?,
            poll_interval: seconds("poll_interval")?,
            retry_window: seconds("retry_window")?,
        },
        ..Default::default()
    })
}

async fn show(ctx: &Ctx, outcome: Option<Result<String, ConsoleError>>, edit: Option<&str>) -> Response {
    match (body(ctx, edit).await, outcome) {
        (Ok(page), None) => ctx.page(Nav::Integrations, TITLE, page),
        (Ok(page), Some(o)) => ctx.after(o, Nav::Integrations, TITLE, page),
        (Err(e), _) => ctx.problem(e, Nav::Integrations, TITLE, html! {}),
    }
}

/// The integrations.
#[utoipa::path(
    get,
    path = "/admin/integrations",
    tag = "admin console",
    operation_id = "console_integrations",
    params(IntegrationsQuery),
    responses(PageAnswers)
)]
pub(crate) async fn page(Query(q): Query<IntegrationsQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Integrations);
    }
    show(&ctx, None, q.edit.as_deref()).await
}

/// The form of the integration posts (a description).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct ConsoleIntegrationForm {
    /// The anti-forgery token (equal to the cookie's).
    csrf: String,
    client_id: String,
    name: Option<String>,
    /// The maximum scope, e.g. `restricted:manage;configuration`.
    scope: Option<String>,
    /// `1`: every user may use it.
    everyone: Option<String>,
    /// User names, comma-separated.
    users: Option<String>,
    /// Group names, comma-separated.
    groups: Option<String>,
    /// `1`: disabled (edit only).
    disabled: Option<String>,
    /// `1`: device authorization allowed.
    device: Option<String>,
    /// `1`: the password grant allowed.
    password_grant: Option<String>,
    /// Seconds (empty: as it is, or the server's default); likewise
    /// `grant_validity`, `device_code_validity`, `poll_interval`, `retry_window`.
    access_validity: Option<String>,
    /// `yes`, `no`, or empty (as it is).
    refreshable: Option<String>,
}

async fn act(_app: HttpState, Posted(ctx, form): Posted, what: &str) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Integrations);
    }
    let admin = ctx.admin();
    let cid = form.get("client_id");
    let (outcome, edit) = match what {
        "create" => match spec(&form) {
            Ok(s) => (admin.create_integration(cid, s).await.map(|i| format!("Integration {} created.", i.client_id)), None),
            Err(e) => (Err(e), None),
        },
        "update" => {
            let r = match spec(&form) {
                Ok(mut s) => {
                    s.disabled = Some(form.ticked("disabled"));
                    admin.update_integration(cid, s).await.map(|i| format!("Integration {} saved.", i.client_id))
                }
                Err(e) => Err(e),
            };
            let edit = r.is_err().then_some(cid);
            (r, edit)
        }
        _ => (
            admin.delete_integration(cid).await.map(|d| format!("Integration {cid} deleted; {} of its grants ended.", d.grants_ended)),
            None,
        ),
    };
    let edit = edit.filter(|_| !matches!(outcome, Err(strongroom_app::admin::AdminError::NotFound(_))));
    show(&ctx, Some(outcome.map_err(ConsoleError::from)), edit).await
}

/// Create an integration.
#[utoipa::path(
    post,
    path = "/admin/integrations/create",
    tag = "admin console",
    operation_id = "console_integration_create",
    request_body(content = ConsoleIntegrationForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Created; the list again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn create(State(app): State<HttpState>, posted: Posted) -> Response {
    act(app, posted, "create").await
}

/// Change an integration's name, maximum scope, allowed users and groups, or disable it.
#[utoipa::path(
    post,
    path = "/admin/integrations/update",
    tag = "admin console",
    operation_id = "console_integration_update",
    request_body(content = ConsoleIntegrationForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Saved; the list again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn update(State(app): State<HttpState>, posted: Posted) -> Response {
    act(app, posted, "update").await
}

/// Asks before deleting an integration: how many live grants (of whom) it ends.
#[utoipa::path(
    get,
    path = "/admin/integrations/delete",
    tag = "admin console",
    operation_id = "console_integration_delete_confirm",
    params(("client_id" = String, Query, description = "The integration's client id.")),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_delete(Query(q): Query<std::collections::HashMap<String, String>>, ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Integrations);
    }
    let cid = q.get("client_id").map_or("", |c| c.trim());
    let admin = ctx.admin();
    let read = async {
        let i = admin.list_integrations().await?.into_iter().find(|i| i.client_id == cid);
        let grants: Vec<_> = admin.list_grants(false).await?.into_iter().filter(|g| g.grant.client_id == cid).collect();
        Ok::<_, AdminError>((i, grants))
    };
    let (i, grants) = match read.await {
        Ok((Some(i), g)) => (i, g),
        Ok((None, _)) => return show(&ctx, Some(Err(ConsoleError::NotFound(format!("integration {cid}")))), None).await,
        Err(e) => return show(&ctx, Some(Err(e.into())), None).await,
    };
    let mut users: Vec<&str> = grants.iter().map(|g| g.user_name.as_str()).collect();
    users.sort_unstable();
    users.dedup();
    ctx.confirm(Confirm {
        nav: Nav::Integrations,
        title: &format!("Delete integration {cid}?"),
        consequences: html! {
            p { "This will end " strong { (count(grants.len() as u64, "live grant", "live grants")) } " of integration " strong { code { (cid) } } " (" (i.name) ")"
                @if !users.is_empty() { ", held by " (users.join(", ")) }
                ": their tokens stop working at once. Its device codes not yet exchanged are dropped, and the application can get no token until it is created again. Its past events stay in the log." }
        },
        action: "/admin/integrations/delete",
        fields: &[("client_id", cid)],
        button: &format!("Delete {cid}"),
        back: "/admin/integrations",
    })
}

/// Delete an integration: its grants end.
#[utoipa::path(
    post,
    path = "/admin/integrations/delete",
    tag = "admin console",
    operation_id = "console_integration_delete",
    request_body(content = ConsoleIntegrationForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Deleted; the list again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn delete(State(app): State<HttpState>, posted: Posted) -> Response {
    act(app, posted, "delete").await
}
