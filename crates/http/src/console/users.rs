//! Users and groups (Master Admins only): users (disabled, Master Admin,
//! locked), create, disable and enable, a new password, unlock, end their
//! console sessions, Master Admin on and off, delete; groups with their
//! members, create and delete a group, add and remove members.
//!
//! Every act that ends something (disable, delete, a new password, ending
//! sessions, demoting, removing a member, deleting a group) is a link to a
//! confirmation page (`GET` on the act's path) that says what it will end,
//! read from the store; only its button posts. Nobody may disable, delete
//! or demote themselves (`AdminError::OwnAccount`, refused by the act).

use axum::extract::State;
use axum::response::Response;
use maud::{Markup, html};

use strongroom_core::secret::Secret;

use axum::extract::Query;
use serde::Deserialize;

use super::{Confirm, Ctx, Nav, PageAnswers, PostRefusals, Posted, count, csrf_field, query, yes_no};
use crate::state::HttpState;
use strongroom_app::service::console::ConsoleError;

const TITLE: &str = "Users and groups";

async fn body(ctx: &Ctx) -> Result<Markup, ConsoleError> {
    let admin = ctx.admin();
    let users = admin.list_users().await?;
    let locks: std::collections::HashMap<String, strongroom_core::time::UnixTime> = admin.locks().await?.into_iter().collect();
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
                th scope="col" { "Created" } th scope="col" { "Last sign-in" } th scope="col" { "Actions" } } }
            tbody {
                @for u in users.iter().filter(|u| !u.id.is_machine()) {
                    @let me = u.id == ctx.standing.user.id;
                    @let q = query(&[("name", &u.name)]);
                    tr {
                        th scope="row" { (u.name) @if me { " " span.muted { "(you)" } } }
                        td { (yes_no(u.master_admin)) }
                        td { (yes_no(u.disabled))
                            @if let Some(t) = locks.get(&u.name.to_lowercase()) { br; span { "locked until " (t.iso8601()) } } }
                        td { (u.created_at.iso8601()) }
                        td { @if let Some(t) = u.signed_in_at { (t.iso8601()) } @else { span.muted { "—" } } }
                        td {
                            @if u.disabled {
                                form method="post" action="/admin/users/disable" {
                                    (csrf_field(csrf))
                                    input type="hidden" name="name" value=(u.name);
                                    input type="hidden" name="action" value="enable";
                                    button.secondary type="submit" aria-label=(format!("Enable {}", u.name)) { "Enable" }
                                }
                            } @else if !me {
                                a href=(format!("/admin/users/disable?{}", query(&[("name", &u.name), ("action", "disable")])))
                                    aria-label=(format!("Disable {}", u.name)) { "Disable" } " "
                            }
                            a href=(format!("/admin/users/password?{q}")) aria-label=(format!("Set a new password for {}", u.name)) { "New password" } " "
                            @if locks.contains_key(&u.name.to_lowercase()) {
                                form method="post" action="/admin/users/unlock" {
                                    (csrf_field(csrf))
                                    input type="hidden" name="name" value=(u.name);
                                    button.secondary type="submit" aria-label=(format!("Unlock {}", u.name)) { "Unlock" }
                                }
                            }
                            a href=(format!("/admin/users/disable?{}", query(&[("name", &u.name), ("action", "end_sessions")])))
                                aria-label=(format!("End the console sessions of {}", u.name)) { "End sessions" } " "
                            @if !u.master_admin {
                                a href=(format!("/admin/users/master?{}", query(&[("name", &u.name), ("on", "1")])))
                                    aria-label=(format!("Make {} a Master Admin", u.name)) { "Make Master Admin" } " "
                            } @else if !me {
                                a href=(format!("/admin/users/master?{}", query(&[("name", &u.name), ("on", "0")])))
                                    aria-label=(format!("Take the Master Admin role from {}", u.name)) { "Remove Master Admin" } " "
                            }
                            @if !me {
                                a href=(format!("/admin/users/delete?{q}")) aria-label=(format!("Delete {}", u.name)) { "Delete" }
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
            thead { tr { th scope="col" { "Group" } th scope="col" { "Members" } th scope="col" { "Action" } } }
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
                                        a href=(format!("/admin/groups/members?{}", query(&[("group", &g.group.name), ("user", &m.name), ("action", "remove")])))
                                            aria-label=(format!("Remove {} from {}", m.name, g.group.name)) { "Remove" }
                                    }
                                }
                            }
                        }
                        td { a href=(format!("/admin/groups/delete?{}", query(&[("name", &g.group.name)])))
                            aria-label=(format!("Delete group {}", g.group.name)) { "Delete" } }
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
        ("disable", "disable") => admin
            .set_user_disabled(name, true)
            .await
            .map(|n| format!("User {name} disabled; {} ended.", count(n, "live grant", "live grants"))),
        ("disable", "enable") => admin.set_user_disabled(name, false).await.map(|_| format!("User {name} enabled.")),
        ("disable", "end_sessions") => admin.end_console_sessions(name).await.map(|()| format!("Every console session of {name} ended.")),
        ("password", _) => {
            let password = Secret::new(form.get("password").to_owned());
            let keep = form.ticked("keep_grants");
            admin.set_password(name, &password, keep).await.map(|n| {
                format!("New password set for {name}; {} and every console session of theirs ended.", count(n, "live grant", "live grants"))
            })
        }
        ("unlock", _) => admin.unlock(name).await.map(|n| format!("{name} unlocked ({} cleared).", count(n, "counter", "counters"))),
        ("master", _) => {
            let on = form.get("on") == "1";
            admin.set_master_admin(name, on).await.map(|changed| match (on, changed) {
                (true, true) => format!("{name} is now a Master Admin."),
                (false, true) => format!("{name} is no longer a Master Admin."),
                (true, false) => format!("{name} was already a Master Admin."),
                (false, false) => format!("{name} was not a Master Admin."),
            })
        }
        ("delete_user", _) => admin.delete_user(name).await.map(|d| {
            format!(
                "User {name} deleted; {}, {} and {} removed.",
                count(d.grants_ended, "live grant ended", "live grants ended"),
                count(d.codes_dropped, "device code", "device codes"),
                count(d.rights_removed, "right", "rights")
            )
        }),
        ("create_group", _) => admin.create_group(name).await.map(|g| format!("Group {} created.", g.name)),
        ("delete_group", _) => {
            admin.delete_group(name).await.map(|n| format!("Group {name} deleted; {} removed.", count(n, "folder right", "folder rights")))
        }
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

/// What a user's or group's confirmation page names.
#[derive(Deserialize, utoipa::IntoParams, Default)]
#[into_params(parameter_in = Query)]
pub(crate) struct UserQuery {
    /// The user's (or group's) name.
    name: Option<String>,
    /// `disable` or `end_sessions` (`/admin/users/disable`); `remove` (`/admin/groups/members`).
    action: Option<String>,
    /// `1`: make a Master Admin; `0`: no longer (`/admin/users/master`).
    on: Option<String>,
    /// The group (`/admin/groups/members`).
    group: Option<String>,
    /// The member (`/admin/groups/members`).
    user: Option<String>,
}

/// `a, b, c`, or `none`.
fn listed(names: &[String]) -> String {
    if names.is_empty() { "none".to_owned() } else { names.join(", ") }
}

/// The confirmation pages (and the new-password form): what the act will end, read from the store.
async fn ask(ctx: &Ctx, what: &str, q: &UserQuery) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Users);
    }
    let admin = ctx.admin();
    let name = q.name.as_deref().unwrap_or("").trim();
    let back = "/admin/users";
    let fail = |e: strongroom_app::admin::AdminError| show_err(ctx, ConsoleError::from(e));
    match (what, q.action.as_deref().unwrap_or("")) {
        ("group_members", _) => {
            let (g, u) = (q.group.as_deref().unwrap_or("").trim(), q.user.as_deref().unwrap_or("").trim());
            let impact = match admin.group_impact(g).await {
                Ok(i) => i,
                Err(e) => return fail(e).await,
            };
            let title = format!("Remove {u} from {g}?");
            ctx.confirm(Confirm {
                nav: Nav::Users,
                title: &title,
                consequences: html! {
                    p { "This will end " strong { (u) } "'s membership of " strong { (g) } ": from their next request they lose the rights "
                        (g) " holds (on " (count(impact.folders.len() as u64, "folder", "folders")) ": " (listed(&impact.folders)) ") and its places on integrations ("
                        (listed(&impact.integrations)) "), grants they already hold included." }
                },
                action: "/admin/groups/members",
                fields: &[("group", g), ("user", u), ("action", "remove")],
                button: &format!("Remove {u} from {g}"),
                back,
            })
        }
        ("group_delete", _) => {
            let impact = match admin.group_impact(name).await {
                Ok(i) => i,
                Err(e) => return fail(e).await,
            };
            let title = format!("Delete group {name}?");
            ctx.confirm(Confirm {
                nav: Nav::Users,
                title: &title,
                consequences: html! {
                    p { "This will end group " strong { (name) } " at once: its " (count(impact.members.len() as u64, "member", "members")) " ("
                        (listed(&impact.members)) ") lose its rights on " (count(impact.folders.len() as u64, "folder", "folders")) " ("
                        (listed(&impact.folders)) ") and its places on integrations (" (listed(&impact.integrations)) ")." }
                },
                action: "/admin/groups/delete",
                fields: &[("name", name)],
                button: &format!("Delete group {name}"),
                back,
            })
        }
        _ => {
            let i = match admin.user_impact(name).await {
                Ok(i) => i,
                Err(e) => return fail(e).await,
            };
            let name = i.user.name.as_str();
            // Asked about themselves: say so now rather than on the post (which the act refuses anyway).
            let demote = what == "master" && q.on.as_deref() != Some("1");
            let own = match (what, q.action.as_deref().unwrap_or("")) {
                ("disable", "disable") => Some("disable"),
                ("delete", _) => Some("delete"),
                ("master", _) if demote => Some("take the Master Admin role from"),
                _ => None,
            };
            if let (Some(verb), true) = (own, i.user.id == ctx.standing.user.id) {
                return show_err(ctx, strongroom_app::admin::own_account(verb, name).into()).await;
            }
            let grants = count(i.grants.len() as u64, "live grant", "live grants");
            let apps: Vec<String> = i.grants.iter().map(|g| g.grant.client_id.clone()).collect();
            let grants_of = html! { strong { (grants) } " of " (name) @if !apps.is_empty() { " (to " (apps.join(", ")) ")" } };
            match (what, q.action.as_deref().unwrap_or("")) {
                ("disable", "end_sessions") => ctx.confirm(Confirm {
                    nav: Nav::Users,
                    title: &format!("End the console sessions of {name}?"),
                    consequences: html! { p { "This will end " strong { "every console session" } " of " (name) ", on every replica: they must sign in again. Their grants stay." } },
                    action: "/admin/users/disable",
                    fields: &[("name", name), ("action", "end_sessions")],
                    button: &format!("End the sessions of {name}"),
                    back,
                }),
                ("disable", action) if action != "disable" => {
                    show_err(ctx, ConsoleError::Invalid("Only disabling a user and ending their sessions ask first.".into())).await
                }
                ("disable", _) => ctx.confirm(Confirm {
                    nav: Nav::Users,
                    title: &format!("Disable {name}?"),
                    consequences: html! {
                        p { "This will end " (grants_of) " for good (enabling " (name) " again revives none), deny the device codes they approved and nobody exchanged, and end every console session of theirs." }
                    },
                    action: "/admin/users/disable",
                    fields: &[("name", name), ("action", "disable")],
                    button: &format!("Disable {name}"),
                    back,
                }),
                ("delete", _) => ctx.confirm(Confirm {
                    nav: Nav::Users,
                    title: &format!("Delete {name}?"),
                    consequences: html! {
                        p { "This will end " (grants_of) ", drop the device codes they approved and nobody exchanged, and remove "
                            (count(i.rights, "grant of rights", "grants of rights")) " on folders, their membership of "
                            (count(i.groups.len() as u64, "group", "groups")) " (" (listed(&i.groups)) ") and their place on "
                            (count(i.integrations.len() as u64, "integration", "integrations")) " (" (listed(&i.integrations)) "). Their past events stay in the log." }
                    },
                    action: "/admin/users/delete",
                    fields: &[("name", name)],
                    button: &format!("Delete {name}"),
                    back,
                }),
                ("master", _) if q.on.as_deref() == Some("1") => ctx.confirm(Confirm {
                    nav: Nav::Users,
                    title: &format!("Make {name} a Master Admin?"),
                    consequences: html! { p { (name) " will hold " strong { "every right on every folder" } " and may administer everything here, from their next request." } },
                    action: "/admin/users/master",
                    fields: &[("name", name), ("on", "1")],
                    button: &format!("Make {name} a Master Admin"),
                    back,
                }),
                ("master", _) => ctx.confirm(Confirm {
                    nav: Nav::Users,
                    title: &format!("Remove the Master Admin role from {name}?"),
                    consequences: html! {
                        p { "This will end " strong { "the Master Admin role" } " of " (name) ": from their next request they hold only the "
                            (count(i.rights, "grant of rights", "grants of rights")) " given to them by name and those of their groups ("
                            (listed(&i.groups)) "), and may no longer administer users, integrations, grants or keys here. Their "
                            (grants) " stay, limited to what they now hold." }
                    },
                    action: "/admin/users/master",
                    fields: &[("name", name), ("on", "0")],
                    button: &format!("Remove the role from {name}"),
                    back,
                }),
                _ => {
                    let body = html! {
                        div #consequences role="note" {
                            p { "A new password ends " (grants_of) " and every console session of theirs, unless you keep the grants (only when the old password was not compromised)." }
                        }
                        form method="post" action="/admin/users/password" {
                            (csrf_field(&ctx.csrf))
                            input type="hidden" name="name" value=(name);
                            div.field { label for="reset_password" { "New password" }
                                input type="password" id="reset_password" name="password" required maxlength="1024" autocomplete="new-password"; }
                            div.field { input type="checkbox" id="keep_grants" name="keep_grants" value="1";
                                label.inline for="keep_grants" { "Keep their grants working" } }
                            button.danger type="submit" id="confirm" { "Set the password of " (name) }
                            " " a href=(back) id="cancel" { "Cancel" }
                        }
                    };
                    ctx.page(Nav::Users, &format!("New password for {name}"), body)
                }
            }
        }
    }
}

async fn show_err(ctx: &Ctx, e: ConsoleError) -> Response {
    show(ctx, Some(Err(e))).await
}

/// The form of the user and group posts (a description).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct ConsoleUserActForm {
    /// The anti-forgery token (equal to the cookie's).
    csrf: String,
    /// The user's (or group's) name.
    name: String,
    /// A new password (`/admin/users/password`).
    password: Option<String>,
    /// `1`: keep the user's grants with the new password.
    keep_grants: Option<String>,
    /// `1`: make a Master Admin; `0`: no longer (`/admin/users/master`).
    on: Option<String>,
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

/// Disable (ending their grants) or enable a user, or end their console
/// sessions. Refused (403) for the signed-in person themselves.
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

/// Asks before disabling a user or ending their console sessions: what it will end.
#[utoipa::path(
    get,
    path = "/admin/users/disable",
    tag = "admin console",
    operation_id = "console_user_disable_confirm",
    params(UserQuery),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_disable(Query(q): Query<UserQuery>, ctx: Ctx) -> Response {
    ask(&ctx, "disable", &q).await
}

/// The new-password form for a user, saying what it ends.
#[utoipa::path(
    get,
    path = "/admin/users/password",
    tag = "admin console",
    operation_id = "console_user_password_form",
    params(UserQuery),
    responses(PageAnswers)
)]
pub(crate) async fn password_form(Query(q): Query<UserQuery>, ctx: Ctx) -> Response {
    ask(&ctx, "password", &q).await
}

/// Set a user's password: their grants end (unless `keep_grants`), and their console sessions.
#[utoipa::path(
    post,
    path = "/admin/users/password",
    tag = "admin console",
    operation_id = "console_user_password",
    request_body(content = ConsoleUserActForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Set; the page again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn set_password(State(app): State<HttpState>, posted: Posted) -> Response {
    act(app, posted, "password").await
}

/// Clear the guessing locks and counts against a user.
#[utoipa::path(
    post,
    path = "/admin/users/unlock",
    tag = "admin console",
    operation_id = "console_user_unlock",
    request_body(content = ConsoleUserActForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Unlocked; the page again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn unlock(State(app): State<HttpState>, posted: Posted) -> Response {
    act(app, posted, "unlock").await
}

/// Asks before making a user a Master Admin or taking the role away.
#[utoipa::path(
    get,
    path = "/admin/users/master",
    tag = "admin console",
    operation_id = "console_user_master_confirm",
    params(UserQuery),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_master(Query(q): Query<UserQuery>, ctx: Ctx) -> Response {
    ask(&ctx, "master", &q).await
}

/// Make a user a Master Admin (`on=1`) or no longer (`on=0`). Refused (403)
/// when the signed-in person would demote themselves.
#[utoipa::path(
    post,
    path = "/admin/users/master",
    tag = "admin console",
    operation_id = "console_user_master",
    request_body(content = ConsoleUserActForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Done; the page again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn master(State(app): State<HttpState>, posted: Posted) -> Response {
    act(app, posted, "master").await
}

/// Asks before deleting a user: the grants, rights, groups and integrations it ends.
#[utoipa::path(
    get,
    path = "/admin/users/delete",
    tag = "admin console",
    operation_id = "console_user_delete_confirm",
    params(UserQuery),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_delete(Query(q): Query<UserQuery>, ctx: Ctx) -> Response {
    ask(&ctx, "delete", &q).await
}

/// Delete a user. Refused (403) for the signed-in person themselves.
#[utoipa::path(
    post,
    path = "/admin/users/delete",
    tag = "admin console",
    operation_id = "console_user_delete",
    request_body(content = ConsoleUserActForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Deleted; the page again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn delete_user(State(app): State<HttpState>, posted: Posted) -> Response {
    act(app, posted, "delete_user").await
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

/// Asks before deleting a group: the members, rights and integrations it ends.
#[utoipa::path(
    get,
    path = "/admin/groups/delete",
    tag = "admin console",
    operation_id = "console_group_delete_confirm",
    params(UserQuery),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_delete_group(Query(q): Query<UserQuery>, ctx: Ctx) -> Response {
    ask(&ctx, "group_delete", &q).await
}

/// Delete a group: its members lose its rights and places at once.
#[utoipa::path(
    post,
    path = "/admin/groups/delete",
    tag = "admin console",
    operation_id = "console_group_delete",
    request_body(content = ConsoleUserActForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Deleted; the page again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn delete_group(State(app): State<HttpState>, posted: Posted) -> Response {
    act(app, posted, "delete_group").await
}

/// Asks before removing a member from a group: what they lose.
#[utoipa::path(
    get,
    path = "/admin/groups/members",
    tag = "admin console",
    operation_id = "console_group_member_remove_confirm",
    params(UserQuery),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_remove_member(Query(q): Query<UserQuery>, ctx: Ctx) -> Response {
    ask(&ctx, "group_members", &q).await
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
