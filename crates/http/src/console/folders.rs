//! Folders and permissions: the folder tree; for a folder, each user's and
//! group's explicit rights there, and the effective rights of a chosen user
//! with where each comes from (the folder it was granted on, to them or to
//! a group of theirs); grant and revoke.
//!
//! A Master Admin also creates, renames and deletes folders; a deletion
//! (always with everything below it, as `admin folders delete --recursive`)
//! first shows a confirmation page listing the folders, entries and rights
//! it ends, and revoking someone's rights on a folder asks first too.
//!
//! A Master Admin sees every folder and changes anything. Anyone else sees
//! the folders they hold a right on (and those below them), and may change
//! the permissions only where they hold ManagePermissions (once `Rights`
//! has it: `service::console::manage_flag`); the post checks it again.

use axum::extract::Query;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use strongroom_core::vault::{FolderPath, Rights};

use super::{Confirm, Ctx, Nav, PageAnswers, PostRefusals, Posted, count, csrf_field, query};
use strongroom_app::service::console::{ConsoleError, right_flags};

const TITLE: &str = "Folders and permissions";

#[derive(Deserialize, utoipa::IntoParams, Default)]
#[into_params(parameter_in = Query)]
pub(crate) struct FoldersQuery {
    /// The folder to show, `\VED\Policy\…`.
    folder: Option<String>,
    /// A user whose effective rights on the folder to show.
    user: Option<String>,
}

fn link(folder: &FolderPath) -> String {
    format!("/admin/folders?{}", serde_urlencoded::to_string([("folder", folder.as_str())]).unwrap_or_default())
}

fn parent_key(f: &FolderPath) -> Option<String> {
    let l = f.lineage();
    (l.len() >= 2).then(|| l[l.len() - 2].key().to_owned())
}

/// The tree of `folders` below `parent` (`None`: those whose parent is not shown).
fn tree(folders: &[FolderPath], parent: Option<&str>, selected: Option<&FolderPath>) -> Markup {
    let children: Vec<&FolderPath> = folders
        .iter()
        .filter(|f| match (parent, parent_key(f)) {
            (Some(p), Some(k)) => k == p,
            (None, k) => k.is_none_or(|k| !folders.iter().any(|o| o.key() == k)),
            (Some(_), None) => false,
        })
        .collect();
    html! {
        @if !children.is_empty() {
            ul.tree {
                @for f in children {
                    li {
                        a href=(link(f)) aria-current=[(selected == Some(f)).then_some("page")] {
                            (f.lineage().last().map_or(f.as_str(), |l| l.as_str().rsplit('\\').next().unwrap_or(l.as_str())))
                        }
                        (tree(folders, Some(f.key()), selected))
                    }
                }
            }
        }
    }
}

fn rights_boxes(prefix: &str, held: Rights) -> Markup {
    html! {
        @for (name, r) in right_flags() {
            span { input type="checkbox" id=(format!("{prefix}_{name}")) name="rights" value=(name) checked[held.contains(r) && r != Rights::NONE];
                label.inline for=(format!("{prefix}_{name}")) { (name) } " " }
        }
    }
}

async fn body(ctx: &Ctx, q: &FoldersQuery) -> Result<Markup, ConsoleError> {
    let admin = ctx.admin();
    let s = &ctx.standing;
    let visible: Vec<FolderPath> = admin.folders().await?.into_iter().filter(|f| s.may_see(f)).collect();
    let selected = match q.folder.as_deref().filter(|f| !f.trim().is_empty()) {
        None => None,
        Some(p) => {
            let f = FolderPath::parse(p).map_err(|e| ConsoleError::Invalid(e.to_string()))?;
            match visible.iter().find(|v| v.key() == f.key()) {
                Some(v) => Some(v.clone()),
                None if s.master_admin() => return Err(ConsoleError::NotFound(format!("folder {f}"))),
                None => return Err(ConsoleError::Forbidden),
            }
        }
    };
    let explicit: Vec<(String, Rights, bool)> = match &selected {
        Some(f) => admin.all_rights().await?.into_iter().filter(|(p, ..)| p.key() == f.key()).map(|(_, n, r, g)| (n, r, g)).collect(),
        None => Vec::new(),
    };
    let explained = match (&selected, q.user.as_deref().map(str::trim).filter(|u| !u.is_empty())) {
        (Some(f), Some(u)) => match admin.explain_rights(f.as_str(), u).await {
            Ok(x) => Some(Ok(x)),
            Err(strongroom_app::admin::AdminError::Store(e)) => return Err(e.into()),
            Err(e) => Some(Err(ConsoleError::from(e).to_string())),
        },
        _ => None,
    };
    let csrf = &ctx.csrf;
    Ok(html! {
        @if visible.is_empty() { p { "There are no folders you may see." } }
        nav aria-label="Folder tree" { (tree(&visible, None, selected.as_ref())) }
        @if s.master_admin() && selected.is_none() {
            h2 { "Create a folder" }
            form method="post" action="/admin/folders/create" {
                (csrf_field(csrf))
                div.field { label for="new_folder" { "Path" }
                    input type="text" id="new_folder" name="folder" required maxlength="1024" size="50" value="\\VED\\Policy\\"
                        aria-describedby="new_folder_help";
                    span.muted id="new_folder_help" { " the folders above it are made too" } }
                button type="submit" id="create_folder" { "Create folder" }
            }
        }
        @if let Some(f) = &selected {
            @let manage = s.may_manage(f);
            h2 #folder { "Folder " code { (f.as_str()) } }
            @if s.master_admin() && f.lineage().len() > 2 {
                @let leaf = f.as_str().rsplit('\\').next().unwrap_or("");
                form method="post" action="/admin/folders/create" {
                    (csrf_field(csrf))
                    label for="sub_folder" { "New folder below it" } " "
                    input type="hidden" name="parent" value=(f.as_str());
                    input type="text" id="sub_folder" name="name" required maxlength="200";
                    " " button type="submit" id="create_subfolder" { "Create" }
                }
                form method="post" action="/admin/folders/rename" {
                    (csrf_field(csrf))
                    input type="hidden" name="folder" value=(f.as_str());
                    label for="rename_to" { "Rename to" } " "
                    input type="text" id="rename_to" name="name" required maxlength="200" value=(leaf);
                    " " button type="submit" id="rename_folder" { "Rename" }
                }
                p { a.danger href=(format!("/admin/folders/delete?{}", query(&[("folder", f.as_str())]))) id="delete_folder" { "Delete this folder…" } }
            }
            @if !manage { p.muted { "You may see this folder's permissions; you may not change them." } }
            table {
                caption { "Rights granted on this folder" }
                thead { tr { th scope="col" { "Granted to" } th scope="col" { "Kind" } th scope="col" { "Rights" }
                    @if manage { th scope="col" { "Action" } } } }
                tbody {
                    @if explicit.is_empty() { tr { td colspan="4" { span.muted { "Nothing is granted here." } } } }
                    @for (name, rights, group) in &explicit {
                        tr {
                            th scope="row" { (name) }
                            td { @if *group { "group" } @else { "user" } }
                            td { (rights) }
                            @if manage {
                                td {
                                    a href=(format!("/admin/folders/rights?{}", query(&[("folder", f.as_str()), ("kind", if *group { "group" } else { "user" }), ("name", name)])))
                                        aria-label=(format!("Revoke every right of {name} here")) { "Revoke" }
                                }
                            }
                        }
                    }
                }
            }
            @if manage {
                h2 { "Grant rights here" }
                form method="post" action="/admin/folders/rights" {
                    (csrf_field(csrf))
                    input type="hidden" name="folder" value=(f.as_str());
                    div.field { label for="grant_kind" { "To a" }
                        select id="grant_kind" name="kind" { option value="user" { "user" } option value="group" { "group" } } }
                    div.field { label for="grant_name" { "Name" } input type="text" id="grant_name" name="name" required maxlength="300"; }
                    fieldset { legend { "Rights (replacing what is granted to them here; none revokes)" } (rights_boxes("grant", Rights::NONE)) }
                    button type="submit" id="grant_rights" { "Set rights" }
                }
            }
            h2 #effective { "Effective rights of a user" }
            form method="get" action="/admin/folders" {
                input type="hidden" name="folder" value=(f.as_str());
                label for="effective_user" { "User name" }
                input type="text" id="effective_user" name="user" value=(q.user.as_deref().unwrap_or("")) maxlength="300";
                " " button type="submit" id="show_effective" { "Show" }
            }
            @match &explained {
                None => {}
                Some(Err(e)) => { p.error role="alert" { (e) } }
                Some(Ok(x)) => {
                    table {
                        caption { "What " (x.user) " may do on " code { (x.folder.as_str()) } }
                        thead { tr { th scope="col" { "Right" } th scope="col" { "Held" } th scope="col" { "From where" } } }
                        tbody {
                            @for (name, r) in right_flags() {
                                tr {
                                    th scope="row" { (name) }
                                    td { @if x.effective.contains(r) { "yes" } @else { "no" } }
                                    td {
                                        @if x.master_admin { "Master Admin (every right everywhere)" }
                                        @for (on, group, _) in x.sources.iter().filter(|(_, _, g)| g.contains(r)) {
                                            div {
                                                "granted on " code { (on.as_str()) }
                                                @if on == &x.folder { " (this folder)" } @else { " (inherited)" }
                                                @match group { Some(g) => { " to group " strong { (g) } } None => { " to the user" } }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    })
}

async fn show(ctx: &Ctx, outcome: Option<Result<String, ConsoleError>>, q: &FoldersQuery) -> Response {
    match (body(ctx, q).await, outcome) {
        (Ok(page), None) => ctx.page(Nav::Folders, TITLE, page),
        (Ok(page), Some(o)) => ctx.after(o, Nav::Folders, TITLE, page),
        (Err(e), _) => ctx.problem(e, Nav::Folders, TITLE, html! { p { a href="/admin/folders" { "Back to the folder tree" } } }),
    }
}

/// The folder tree, and a folder's permissions.
#[utoipa::path(
    get,
    path = "/admin/folders",
    tag = "admin console",
    operation_id = "console_folders",
    params(FoldersQuery),
    responses(PageAnswers)
)]
pub(crate) async fn page(Query(q): Query<FoldersQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.has_any() {
        return ctx.forbidden(Nav::Folders);
    }
    show(&ctx, None, &q).await
}

/// The form of `POST /admin/folders/rights` (a description).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct ConsoleRightsForm {
    /// The anti-forgery token (equal to the cookie's).
    csrf: String,
    /// `\VED\Policy\…`.
    folder: String,
    /// `user` or `group`.
    kind: String,
    /// The user's or group's name.
    name: String,
    /// One field per right held (`read`, `write`, …); none revokes every right there.
    rights: Option<String>,
}

/// Set (grant, change, revoke) a user's or group's rights on a folder.
#[utoipa::path(
    post,
    path = "/admin/folders/rights",
    tag = "admin console",
    operation_id = "console_folder_rights",
    request_body(content = ConsoleRightsForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Set; the folder's page again.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn set_rights(Posted(ctx, form): Posted) -> Response {
    let folder = match FolderPath::parse(form.get("folder")) {
        Ok(f) => f,
        Err(e) => return show(&ctx, Some(Err(ConsoleError::Invalid(e.to_string()))), &FoldersQuery::default()).await,
    };
    // Checked on the server whatever the page showed: a Master Admin, or ManagePermissions there.
    if !ctx.standing.may_manage(&folder) {
        return ctx.forbidden(Nav::Folders);
    }
    let q = FoldersQuery { folder: Some(folder.as_str().to_owned()), user: None };
    let Some(rights) = Rights::parse(&form.all("rights").join(",")) else {
        return show(&ctx, Some(Err(ConsoleError::Invalid("Unknown right.".into()))), &q).await;
    };
    let admin = ctx.admin();
    let name = form.get("name");
    let outcome = match form.get("kind") {
        "group" => admin.set_group_rights(folder.as_str(), name, rights).await,
        "user" => admin.set_rights(folder.as_str(), name, rights).await,
        _ => Err(strongroom_app::admin::AdminError::Invalid("Choose a user or a group.".into())),
    }
    .map(|()| format!("Rights of {name} on {folder} set to {rights}."));
    // Re-checked at the write: ManagePermissions (or Master Admin) lost since the check above.
    if matches!(outcome, Err(strongroom_app::admin::AdminError::Forbidden(_))) {
        return ctx.forbidden(Nav::Folders);
    }
    show(&ctx, Some(outcome.map_err(ConsoleError::from)), &q).await
}

/// What a folder confirmation page names.
#[derive(Deserialize, utoipa::IntoParams, Default)]
#[into_params(parameter_in = Query)]
pub(crate) struct FolderActQuery {
    /// The folder, `\VED\Policy\…`.
    folder: Option<String>,
    /// `user` or `group` (revoking rights).
    kind: Option<String>,
    /// The user's or group's name (revoking rights).
    name: Option<String>,
}

/// The form of the folder posts (a description).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) struct ConsoleFolderForm {
    /// The anti-forgery token (equal to the cookie's).
    csrf: String,
    /// The folder (create: its whole path, unless `parent` and `name` give it).
    folder: Option<String>,
    /// The parent of a new folder (create).
    parent: Option<String>,
    /// A new folder's name below `parent`, or the new name (rename).
    name: Option<String>,
}

fn folder_of(q: &FoldersQuery, f: &FolderPath) -> FoldersQuery {
    FoldersQuery { folder: Some(f.as_str().to_owned()), user: q.user.clone() }
}

/// Create a folder (and the folders above it). Master Admins only.
#[utoipa::path(
    post,
    path = "/admin/folders/create",
    tag = "admin console",
    operation_id = "console_folder_create",
    request_body(content = ConsoleFolderForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Created; its page.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn create(Posted(ctx, form): Posted) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Folders);
    }
    let path = match form.get("parent") {
        "" => form.get("folder").to_owned(),
        parent => format!("{parent}\\{}", form.get("name")),
    };
    match ctx.admin().create_folder(&path).await {
        Ok(f) => show(&ctx, Some(Ok(format!("Folder {f} created."))), &folder_of(&FoldersQuery::default(), &f)).await,
        Err(e) => show(&ctx, Some(Err(e.into())), &FoldersQuery::default()).await,
    }
}

/// Rename a folder (within its parent), everything below it with it. Master Admins only.
#[utoipa::path(
    post,
    path = "/admin/folders/rename",
    tag = "admin console",
    operation_id = "console_folder_rename",
    request_body(content = ConsoleFolderForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Renamed; its page.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn rename(Posted(ctx, form): Posted) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Folders);
    }
    let back = FoldersQuery { folder: Some(form.get("folder").to_owned()), user: None };
    let from = match FolderPath::parse(form.get("folder")) {
        Ok(f) if f.lineage().len() > 2 => f,
        Ok(_) => return show(&ctx, Some(Err(ConsoleError::Invalid("\\VED and \\VED\\Policy are not renamed.".into()))), &back).await,
        Err(e) => return show(&ctx, Some(Err(ConsoleError::Invalid(e.to_string()))), &FoldersQuery::default()).await,
    };
    let name = form.get("name");
    if name.contains('\\') {
        return show(
            &ctx,
            Some(Err(ConsoleError::Invalid("A folder's name has no backslash: it is renamed within its parent.".into()))),
            &back,
        )
        .await;
    }
    let parent = from.lineage().iter().rev().nth(1).map(|p| p.as_str().to_owned()).unwrap_or_default();
    let to = match FolderPath::parse(&format!("{parent}\\{name}")) {
        Ok(t) => t,
        Err(e) => return show(&ctx, Some(Err(ConsoleError::Invalid(e.to_string()))), &back).await,
    };
    match ctx.admin().rename_folder(&from, &to).await {
        Ok(n) => {
            let moved = count(n, "folder", "folders");
            show(&ctx, Some(Ok(format!("Folder {from} renamed to {to} ({moved} moved)."))), &folder_of(&FoldersQuery::default(), &to)).await
        }
        Err(e) => show(&ctx, Some(Err(e.into())), &back).await,
    }
}

/// Asks before deleting a folder: the folders below it, the entries it
/// leaves without an owner and the rights that go with it.
#[utoipa::path(
    get,
    path = "/admin/folders/delete",
    tag = "admin console",
    operation_id = "console_folder_delete_confirm",
    params(FolderActQuery),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_delete(Query(q): Query<FolderActQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Folders);
    }
    let path = q.folder.as_deref().unwrap_or("");
    let i = match ctx.admin().folder_impact(path).await {
        Ok(i) => i,
        Err(e) => return show(&ctx, Some(Err(e.into())), &FoldersQuery::default()).await,
    };
    let f = i.folder.as_str();
    let back = link(&i.folder);
    ctx.confirm(Confirm {
        nav: Nav::Folders,
        title: &format!("Delete folder {f}?"),
        consequences: html! {
            p { "This will end folder " strong { code { (f) } } " and everything below it:" }
            ul {
                li { strong { (count(i.below.len() as u64, "folder below it", "folders below it")) }
                    @if !i.below.is_empty() { ": " @for (n, b) in i.below.iter().enumerate() { @if n > 0 { ", " } code { (b.as_str()) } } } }
                li { strong { (count(i.entries.len() as u64, "vault entry", "vault entries")) } " lose this folder as an owner; "
                    strong { (count(i.orphaned.len() as u64, "entry is", "entries are")) } " then left without any owner"
                    @if !i.orphaned.is_empty() { " (vault ids " (i.orphaned.iter().map(|v| v.0.to_string()).collect::<Vec<_>>().join(", ")) ")" }
                    ": kept as orphans, which only a Master Admin can reach (SecretStore/OrphanLookup)." }
                li { strong { (count(i.rights, "grant of rights", "grants of rights")) } " on these folders go with them." }
            }
        },
        action: "/admin/folders/delete",
        fields: &[("folder", f)],
        button: &format!("Delete {f} and everything below it"),
        back: &back,
    })
}

/// Delete a folder and everything below it (`admin folders delete --recursive`). Master Admins only.
#[utoipa::path(
    post,
    path = "/admin/folders/delete",
    tag = "admin console",
    operation_id = "console_folder_delete",
    request_body(content = ConsoleFolderForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Deleted; the folder tree.", body = String, content_type = "text/html"), PostRefusals),
)]
pub(crate) async fn delete(Posted(ctx, form): Posted) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Folders);
    }
    let outcome = ctx.admin().delete_folder(form.get("folder"), true).await.map(|d| {
        format!(
            "Folder {} deleted with {}; {} left without an owner, {} removed.",
            d.folder,
            count(d.folders.saturating_sub(1), "folder below it", "folders below it"),
            count(d.entries_orphaned.len() as u64, "entry", "entries"),
            count(d.rights_removed, "grant of rights", "grants of rights")
        )
    });
    show(&ctx, Some(outcome.map_err(ConsoleError::from)), &FoldersQuery::default()).await
}

/// Asks before revoking every right of a user or group on a folder.
#[utoipa::path(
    get,
    path = "/admin/folders/rights",
    tag = "admin console",
    operation_id = "console_folder_rights_revoke_confirm",
    params(FolderActQuery),
    responses(PageAnswers)
)]
pub(crate) async fn confirm_revoke(Query(q): Query<FolderActQuery>, ctx: Ctx) -> Response {
    let folder = match FolderPath::parse(q.folder.as_deref().unwrap_or("")) {
        Ok(f) => f,
        Err(e) => return show(&ctx, Some(Err(ConsoleError::Invalid(e.to_string()))), &FoldersQuery::default()).await,
    };
    if !ctx.standing.may_manage(&folder) {
        return ctx.forbidden(Nav::Folders);
    }
    let (kind, name) = (q.kind.as_deref().unwrap_or("user"), q.name.as_deref().unwrap_or("").trim());
    let held = match ctx.admin().all_rights().await {
        Ok(all) => all.into_iter().find(|(p, n, _, g)| p.key() == folder.key() && n.eq_ignore_ascii_case(name) && *g == (kind == "group")),
        Err(e) => return show(&ctx, Some(Err(e.into())), &FoldersQuery::default()).await,
    };
    let Some((_, name, rights, _)) = held else {
        let q = FoldersQuery { folder: Some(folder.as_str().to_owned()), user: None };
        return show(&ctx, Some(Err(ConsoleError::NotFound(format!("rights of {kind} {name} on {folder}")))), &q).await;
    };
    let f = folder.as_str();
    let back = link(&folder);
    ctx.confirm(Confirm {
        nav: Nav::Folders,
        title: &format!("Revoke the rights of {name} on {f}?"),
        consequences: html! {
            p { "This will end the rights " strong { (rights) } " granted to " (kind) " " strong { (name) } " on " code { (f) }
                " and, through inheritance, on every folder below it, from the next request"
                @if kind == "group" { " of each member" } ". Rights granted elsewhere stay." }
        },
        action: "/admin/folders/rights",
        fields: &[("folder", f), ("kind", kind), ("name", &name)],
        button: &format!("Revoke the rights of {name}"),
        back: &back,
    })
}
