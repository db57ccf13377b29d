//! Vault entries (Master Admins only): each entry's VaultID, type, the
//! named key and data key it is sealed under, when it was made, its owner
//! folders and its associations' names and types; filtered by owner
//! folder, or only the orphans (entries a deleted folder left without an
//! owner). Never a value: the page is made from
//! `Store::entry_details`, which returns none. Changing an entry (owners,
//! associations, key) stays with the vault API and `admin keys move`.

use axum::extract::Query;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;

use super::{Ctx, Nav, PageAnswers, count};
use strongroom_app::service::console::ConsoleError;

const TITLE: &str = "Vault entries";

/// Entries shown at most.
const SHOWN: usize = 500;

#[derive(Deserialize, utoipa::IntoParams, Default)]
#[into_params(parameter_in = Query)]
pub(crate) struct VaultQuery {
    /// Only entries this folder owns, `\VED\Policy\…`.
    folder: Option<String>,
    /// `1`: only entries without an owner.
    orphans: Option<String>,
}

async fn body(ctx: &Ctx, q: &VaultQuery) -> Result<Markup, ConsoleError> {
    let folder = q.folder.as_deref().map(str::trim).filter(|f| !f.is_empty());
    let orphans = q.orphans.as_deref() == Some("1");
    let (entries, total) = ctx.admin().vault_entries(folder, orphans, SHOWN).await?;
    Ok(html! {
        form method="get" action="/admin/vault" {
            label for="vault_folder" { "Owned by folder" }
            input type="text" id="vault_folder" name="folder" value=(folder.unwrap_or("")) maxlength="1024" size="40";
            " " input type="checkbox" id="vault_orphans" name="orphans" value="1" checked[orphans];
            label.inline for="vault_orphans" { "only entries without an owner" }
            " " button type="submit" id="filter" { "Show" }
        }
        table {
            caption.muted { (count(total as u64, "entry", "entries"))
                @if total > entries.len() { ", the first " (entries.len()) " shown" } "; values are never shown" }
            thead { tr { th scope="col" { "VaultID" } th scope="col" { "Type" } th scope="col" { "Key" } th scope="col" { "Created" }
                th scope="col" { "Owners" } th scope="col" { "Associations" } } }
            tbody {
                @for e in &entries {
                    tr {
                        th scope="row" { (e.vault_id.0) }
                        td { (e.vault_type) }
                        td { code { (e.key_name) } " (data key #" (e.key_id) ")" }
                        td { (e.created_at.iso8601()) }
                        td { @if e.owners.is_empty() { span.muted { "none (an orphan)" } }
                            @for (n, o) in e.owners.iter().enumerate() { @if n > 0 { br; } code { (o.as_str()) } } }
                        td { @if e.associations.is_empty() { span.muted { "none" } }
                            @for (n, (name, kind, key)) in e.associations.iter().enumerate() { @if n > 0 { br; } (name) " (" (kind.as_str()) ", data key #" (key) ")" } }
                    }
                }
            }
        }
    })
}

/// Vault entries: owners, associations, key; never a value.
#[utoipa::path(
    get,
    path = "/admin/vault",
    tag = "admin console",
    operation_id = "console_vault",
    params(VaultQuery),
    responses(PageAnswers)
)]
pub(crate) async fn page(Query(q): Query<VaultQuery>, ctx: Ctx) -> Response {
    if !ctx.standing.master_admin() {
        return ctx.forbidden(Nav::Vault);
    }
    match body(&ctx, &q).await {
        Ok(page) => ctx.page(Nav::Vault, TITLE, page),
        Err(e) => ctx.problem(e, Nav::Vault, TITLE, html! { p { a href="/admin/vault" { "All entries" } } }),
    }
}
