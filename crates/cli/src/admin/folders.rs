//! `strongroom admin folders ...`

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use strongroom_app::admin::Admin;
use strongroom_client::ClientError;
use strongroom_client::admin::AdminApi;

use super::{Rendered, Target, count};

#[derive(Debug, Subcommand)]
pub(crate) enum FoldersCommand {
    /// Create a folder (and the folders above it).
    ///
    /// Example: strongroom admin folders create '\VED\Policy\Team A'
    Create { path: String },
    /// List folders.
    List,
    /// Delete a folder that is empty: no folder below it, no entry owned by
    /// it. Rights granted on it go with it.
    ///
    /// With --recursive, also every folder below it; those folders are
    /// removed from the owners of entries, and an entry left without any
    /// owner is kept as an orphan, never deleted (an event says so):
    /// `SecretStore/OrphanLookup` finds it, and a Master Admin gives it an
    /// owner again (`OwnerAdd`) or deletes it.
    ///
    /// Example: strongroom admin folders delete '\VED\Policy\Old team' --recursive
    Delete {
        path: String,
        /// Delete the folders below it too (entries left without an owner are kept as orphans).
        #[arg(long)]
        recursive: bool,
    },
}

/// What a folder's deletion took with it (the store's answer; the API's `Config/Delete` tells none of it).
struct FolderDeletion {
    folders: u64,
    owners_removed: u64,
    entries_orphaned: Vec<i64>,
    rights_removed: u64,
}

fn folder_deleted(folder: &str, d: Option<FolderDeletion>) -> Rendered {
    let Some(d) = d else {
        return Rendered::done(format!("deleted folder {folder}"), json!({"folder": folder, "deleted": true}));
    };
    let below = d.folders.saturating_sub(1);
    let mut text = format!("deleted folder {folder}");
    if below > 0 {
        text.push_str(&format!(" and {} below it", count(below, "folder", "folders")));
    }
    let ids: Vec<String> = d.entries_orphaned.iter().map(ToString::to_string).collect();
    let mut parts = Vec::new();
    if d.owners_removed > 0 {
        parts.push(format!("{} removed from entries' owners", count(d.owners_removed, "owner link", "owner links")));
    }
    if !ids.is_empty() {
        parts.push(format!("{} deleted (VaultID {}: no owner left)", count(ids.len() as u64, "entry", "entries"), ids.join(", ")));
    }
    if d.rights_removed > 0 {
        parts.push(format!("{} removed with it", count(d.rights_removed, "grant of rights", "grants of rights")));
    }
    if !parts.is_empty() {
        text.push_str(&format!(": {}", parts.join(", ")));
    }
    Rendered::done(
        text,
        json!({"folder": folder, "deleted": true, "folders": d.folders, "owners_removed": d.owners_removed,
               "entries_orphaned": d.entries_orphaned, "rights_removed": d.rights_removed}),
    )
}

/// The listing of `folders list`.
fn folder_listing(folders: &[String]) -> Rendered {
    let rows: Vec<Vec<String>> = folders.iter().map(|f| vec![f.clone()]).collect();
    let list: Vec<_> = folders.iter().map(|f| json!({"folder": f})).collect();
    Rendered::table(&["FOLDER"], &rows, "no folders", json!(list))
}

pub(crate) async fn run(target: &Target, command: FoldersCommand) -> Result<Rendered> {
    match target {
        Target::Store(admin) => run_store(admin, command).await,
        Target::Server(api) => run_api(api, command).await,
    }
}

async fn run_api(api: &AdminApi, command: FoldersCommand) -> Result<Rendered> {
    Ok(match command {
        FoldersCommand::Create { path } => {
            let path = path.trim_end_matches('\\').to_owned();
            // The folders above it first, as on the store (each one that exists is left as it is).
            let parts: Vec<&str> = path.split('\\').collect();
            for k in 4..parts.len() {
                let above = parts[..k].join("\\");
                match api.create_object(&above, "Policy").await {
                    Ok(_) => {}
                    Err(ClientError::Refused { code: Some(OBJECT_EXISTS), .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            let f = api.create_object(&path, "Policy").await?;
            Rendered::done(format!("created folder {}", f.dn), json!({"folder": f.dn}))
        }
        FoldersCommand::List => {
            // The two roots are always there (the store lists them too); the rest is below \VED\Policy.
            let mut folders = vec!["\\VED".to_owned(), "\\VED\\Policy".to_owned()];
            for o in api.find_objects_of_class("\\VED\\Policy", "Policy").await? {
                if !folders.iter().any(|f| f.eq_ignore_ascii_case(&o.dn)) {
                    folders.push(o.dn);
                }
            }
            folders.sort_by_key(|f| f.to_lowercase());
            folder_listing(&folders)
        }
        FoldersCommand::Delete { path, recursive } => {
            api.delete_object(&path, recursive).await?;
            folder_deleted(path.trim_end_matches('\\'), None)
        }
    })
}

/// `Config/Create`'s `Result` for an object that exists.
const OBJECT_EXISTS: i32 = 401;

async fn run_store(admin: &Admin, command: FoldersCommand) -> Result<Rendered> {
    Ok(match command {
        FoldersCommand::Create { path } => {
            let f = admin.create_folder(&path).await?;
            Rendered::done(format!("created folder {f}"), json!({"folder": f.to_string()}))
        }
        FoldersCommand::List => {
            let folders: Vec<String> = admin.folders().await?.iter().map(ToString::to_string).collect();
            folder_listing(&folders)
        }
        FoldersCommand::Delete { path, recursive } => {
            let d = admin.delete_folder(&path, recursive).await?;
            let deleted: Vec<i64> = d.entries_orphaned.iter().map(|v| v.0).collect();
            folder_deleted(
                &d.folder.to_string(),
                Some(FolderDeletion {
                    folders: d.folders,
                    owners_removed: d.owners_removed,
                    entries_orphaned: deleted,
                    rights_removed: d.rights_removed,
                }),
            )
        }
    })
}
