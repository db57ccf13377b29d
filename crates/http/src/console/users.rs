//! Users and groups (Master Admins only): users (disabled, Master Admin),
//! create, disable and enable; groups with their members, create a group,
//! add and remove members.

use axum::extract::State;
use axum::response::Response;
use maud::{Markup, html};

use strongroom_core::secret::Secret;

use super::{Ctx, Nav, PageAnswers, PostRefusals, Posted, csrf_field, yes_no};
use crate::state::HttpState;
use strongroom_app::service::console::ConsoleError;

const TITLE: &str = "Users and groups";

async fn body(ctx: &Ctx) -> Result<Markup, ConsoleError> {
    let admin = ctx.admin();
    let users = admin.list_users().await?;
    let groups = admin.list_groups().await?;
    let mut members = Vec::with_capacity(groups.len());
    for g in &groups {
        members.push(admin.members(&g.group.name).await?);
    }
    let csrf = &ctx.csrf;
    Ok(html! {
        h2 #users { "Users" }
        table {
            thead { tr { th scope="col" { "Name" } th scope="col" { "Master Admin" } th scope="col" { "Disabled" }
                th scope="col" { "Created" } th scope="col" { "Last sign-in" } th scope="col" { "Action" } } }
            tbody {
                @for u in users.iter().filter(|u| !u.id.is_machine()) {
                    tr {
                        th scope="row" { (u.name) }
                        td { (yes_no(u.master_admin)) }
                        td { (yes_no(u.disabled)) }
                        td { (u.created_at.iso8601()) }
                        td { @if let Some(t) = u.signed_in_at { (t.iso8601()) } @else { span.muted { "—" } } }
                        td {
                            form method="post" action="/admin/users/disable" {
                                (csrf_field(csrf))
                                input type="hidden" name="name" value=(u.name);
                                @if u.disabled {
                                    input type="hidden" name="action" value="enable";
                                    button.secondary type="submit" aria-label=(format!("Enable {}", u.name)) { "Enable" }
                                } @else {
                                    input type="hidden" name="action" value="disable";
                                    button.danger type="submit" aria-label=(format!("Disable {}", u.name)) { "Disable" }
                                }
                            }
                            form method="post" action="/admin/users/disable" {
                                (csrf_field(csrf))
                                input type="hidden" name="name" value=(u.name);
                                input type="hidden" name="action" value="end_sessions";
                                button.secondary type="submit" aria-label=(format!("End the console sessions of {}", u.name)) { "End sessions" }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Create a user" }
        form method="post" action="/admin/users/create" {
            (csrf_field(csrf))
            div.field { label for="new_user" { "User name" } input type="text" id="new_user" name="name" required maxlength="64" autocomplete="off"; }
            div.field { label for="new_password" { "Password" } input type="password" id="new_password" name="password" required maxlength="1024" autocomplete="new-password"; }
            div.field { input type="checkbox" id="new_master_admin" name="master_admin" value="1";
                label.inline for="new_master_admin" { "Master Admin (every right everywhere, and this console)" } }
            button type="submit" id="create_user" { "Create user" }
        }
        h2 #groups { "Groups" }
        table {
            thead { tr { th scope="col" { "Group" } th scope="col" { "Members" } } }
            tbody {
                @for (g, ms) in groups.iter().zip(&members) {
                    tr {
                        th scope="row" { (g.group.name) }
                        td {
                            @if ms.is_empty() { span.muted { "no members" } }
                            ul {
                                @for m in ms {
                                    li {
                                        (m.name) " "
                                        form method="post" action="/admin/groups/members" {
                                            (csrf_field(csrf))
                                            input type="hidden" name="group" value=(g.group.name);
                                            input type="hidden" name="user" value=(m.name);
                                            input type="hidden" name="action" value="remove";
                                            button.secondary type="submit" aria-label=(format!("Remove {} from {}", m.name, g.group.name)) { "Remove" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Add a member" }
        form method="post" action="/admin/groups/members" {
            (csrf_field(csrf))
            input type="hidden" name="action" value="add";
            div.field { label for="member_group" { "Group" }
                select id="member_group" name="group" required {
                    @for g in &groups { option value=(g.group.name) { (g.group.name) } }
                }
            }
            div.field { label for="member_user" { "User name" } input type="text" id="member_user" name="user" required maxlength="300"; }
            button type="submit" id="add_member" { "Add member" }
        }
        h2 { "Create a group" }
        form method="post" action="/admin/groups/create" {
            (csrf_field(csrf))
            div.field { label for="new_group" { "Group name" } input type="text" id="new_group" name="name" required maxlength="300"; }
            button type="submit" id="create_group" { "Create group" }
        }
    })
}

async fn show(ctx: &Ctx, outcome: Option<Result<String, ConsoleError>>) -> Response {
    match (body(ctx).await, outcome) {
        (Ok(page), None) => ctx.page(Nav::Users, TITLE, page),
        (Ok(page), Some(o)) => ctx.after(o, Nav::Users, TITLE, page),
        (Err(e), _) => ctx.problem(e, Nav::Users, TITLE, html! {}),
    }
}

/// Users and groups.
#[utoipa::path(get, path = "/admin/users", tag = "admin console", operation_id = "console_users", responses(PageAnswers))]
pub(crate) async fn page(ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Users);
    }
    show(&ctx, None).await
}

/// The form of the user and group posts (a description).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct ConsoleUserForm {
    /// The anti-forgery token (equal to the cookie's).
    csrf: String,
    /// A user's or a group's name.
    name: Option<String>,
    /// A new user's password.
    password: Option<String>,
    /// `1`: the new user is a Master Admin.
    master_admin: Option<String>,
    /// `disable`/`enable`/`end_sessions` (users), `add`/`remove` (members).
    action: Option<String>,
    /// The group (members).
    group: Option<String>,
    /// The user's name (members).
    user: Option<String>,
}

async fn act(_app: HttpState, Posted(ctx, form): Posted, what: &'static str) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Users);
    }
    let admin = ctx.admin();
    let name = form.get("name");
    let outcome = match (what, form.get("action")) {
        ("create_user", _) => {
            let password = Secret::new(form.get("password").to_owned());
            admin.create_user(name, &password, form.ticked("master_admin")).await.map(|u| format!("User {} created.", u.name))
        }
        ("disable", "disable") => {
            admin.set_user_disabled(name, true).await.map(|n| format!("User {name} disabled; {n} of their grants ended."))
        }
        ("disable", "enable") => admin.set_user_disabled(name, false).await.map(|_| format!("User {name} enabled.")),
        ("disable", "end_sessions") => admin.end_console_sessions(name).await.map(|()| format!("Every console session of {name} ended.")),
        ("create_group", _) => admin.create_group(name).await.map(|g| format!("Group {} created.", g.name)),
        ("members", "add") => {
            let (g, u) = (form.get("group"), form.get("user"));
            admin.add_member(g, u).await.map(|added| if added { format!("{u} added to {g}.") } else { format!("{u} was already in {g}.") })
        }
        ("members", "remove") => {
            let (g, u) = (form.get("group"), form.get("user"));
            admin.remove_member(g, u).await.map(|gone| if gone { format!("{u} removed from {g}.") } else { format!("{u} was not in {g}.") })
        }
        _ => Err(strongroom_app::admin::AdminError::Invalid("Unknown action.".into())),
    };
    show(&ctx, Some(outcome.map_err(ConsoleError::from))).await
}

/// Create a user.
#[utoipa::path(
    post,
    path = "/admin/users/create",
    tag = "admin console",
    operation_id = "console_user_create",
    request_body(content = ConsoleUserForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Created; the page again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn create_user(State(app): State<HttpState>, posted: Posted) -> Response {
    act(app, posted, "create_user").await
}

/// Disable (ending their grants) or enable a user, or end their console sessions.
#[utoipa::path(
    post,
    path = "/admin/users/disable",
    tag = "admin console",
    operation_id = "console_user_disable",
    request_body(content = ConsoleUserForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Done; the page again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn disable_user(State(app): State<HttpState>, posted: Posted) -> Response {
    act(app, posted, "disable").await
}

/// Create a group.
#[utoipa::path(
    post,
    path = "/admin/groups/create",
    tag = "admin console",
    operation_id = "console_group_create",
    request_body(content = ConsoleUserForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Created; the page again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn create_group(State(app): State<HttpState>, posted: Posted) -> Response {
    act(app, posted, "create_group").await
}

/// Add a user to a group, or remove them.
#[utoipa::path(
    post,
    path = "/admin/groups/members",
    tag = "admin console",
    operation_id = "console_group_members",
    request_body(content = ConsoleUserForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Done; the page again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn members(State(app): State<HttpState>, posted: Posted) -> Response {
    act(app, posted, "members").await
}
