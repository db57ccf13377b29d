//! Integrations (Master Admins only): the list with each one's grant count,
//! create, edit (name, maximum scope, who may use it, disabled), delete.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use strongroom_core::integration::{AllowedUsers, Integration};

use super::{Ctx, Form, Nav, PageAnswers, PostRefusals, Posted, csrf_field, yes_no};
use crate::state::HttpState;
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
                            form method="post" action="/admin/integrations/delete" {
                                (csrf_field(csrf))
                                input type="hidden" name="client_id" value=(i.client_id);
                                button.danger type="submit" aria-label=(format!("Delete {}", i.client_id)) { "Delete" }
                            }
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

/// The spec of a create or edit form.
fn spec(form: &Form) -> IntegrationSpec {
    let name = form.get("name");
    IntegrationSpec {
        name: (!name.is_empty()).then(|| name.to_owned()),
        scope: Some(form.get("scope").to_owned()),
        allow_all_users: form.ticked("everyone"),
        allow_users: (!form.ticked("everyone")).then(|| form.list("users")),
        allow_groups: Some(form.list("groups")),
        ..Default::default()
    }
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
}

async fn act(_app: HttpState, Posted(ctx, form): Posted, what: &str) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Integrations);
    }
    let admin = ctx.admin();
    let cid = form.get("client_id");
    let (outcome, edit) = match what {
        "create" => (admin.create_integration(cid, spec(&form)).await.map(|i| format!("Integration {} created.", i.client_id)), None),
        "update" => {
            let mut s = spec(&form);
            s.disabled = Some(form.ticked("disabled"));
            let r = admin.update_integration(cid, s).await.map(|i| format!("Integration {} saved.", i.client_id));
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
