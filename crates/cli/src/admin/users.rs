//! `strongroom admin users ...`

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use strongroom_server::admin::Admin;

use super::{Rendered, count, read_password, time};

#[derive(Debug, Subcommand)]
pub(crate) enum UsersCommand {
    /// Create a user. The password is read from standard input (first line)
    /// or asked for without echo at a terminal.
    ///
    /// Example: printf '%s\n' "$PASSWORD" | strongroom admin users create alice
    Create {
        name: String,
        /// The user is a Master Admin of the vault.
        #[arg(long)]
        master_admin: bool,
    },
    /// List users.
    List,
    /// Disable a user: their grants stop working at once.
    Disable { name: String },
    /// Enable a disabled user.
    Enable { name: String },
    /// Set a user's password (read like `create`).
    SetPassword { name: String },
    /// Delete a user: every grant of theirs ends at once (each revocation is
    /// an event), device codes they approved and nobody exchanged are
    /// dropped, their rights and their places on integrations' user lists go.
    /// Their past events stay in the log.
    Delete { name: String },
}

pub(crate) async fn run(admin: &Admin, command: UsersCommand) -> Result<Rendered> {
    Ok(match command {
        UsersCommand::Create { name, master_admin } => {
            let password = read_password("Password: ")?;
            let user = admin.create_user(&name, &password, master_admin).await?;
            Rendered::done(
                format!("created user {} ({})", user.name, user.id.identity()),
                json!({"name": user.name, "identity": user.id.identity(), "master_admin": user.master_admin}),
            )
        }
        UsersCommand::List => {
            let users = admin.list_users().await?;
            let rows: Vec<Vec<String>> = users
                .iter()
                .map(|u| {
                    let flags = [(u.disabled, "disabled"), (u.master_admin, "master-admin")]
                        .iter()
                        .filter(|(on, _)| *on)
                        .map(|(_, f)| *f)
                        .collect::<Vec<_>>()
                        .join(",");
                    vec![u.name.clone(), u.id.identity(), time(u.created_at), flags]
                })
                .collect();
            let list: Vec<_> = users
                .iter()
                .map(|u| {
                    json!({"name": u.name, "identity": u.id.identity(), "disabled": u.disabled, "master_admin": u.master_admin,
                           "created_at": time(u.created_at)})
                })
                .collect();
            Rendered::table(&["NAME", "IDENTITY", "CREATED", "FLAGS"], &rows, json!(list))
        }
        UsersCommand::Disable { name } => {
            admin.set_user_disabled(&name, true).await?;
            Rendered::done(format!("disabled user {name}"), json!({"name": name, "disabled": true}))
        }
        UsersCommand::Enable { name } => {
            admin.set_user_disabled(&name, false).await?;
            Rendered::done(format!("enabled user {name}"), json!({"name": name, "disabled": false}))
        }
        UsersCommand::SetPassword { name } => {
            let password = read_password("New password: ")?;
            admin.set_password(&name, &password).await?;
            Rendered::done(format!("password changed for {name}"), json!({"name": name, "password_changed": true}))
        }
        UsersCommand::Delete { name } => {
            let d = admin.delete_user(&name).await?;
            Rendered::done(
                format!(
                    "deleted user {name}: {} ended, {} dropped, {} removed",
                    count(d.grants_ended, "grant", "grants"),
                    count(d.codes_dropped, "approved device code", "approved device codes"),
                    count(d.rights_removed, "folder right", "folder rights")
                ),
                json!({"name": name, "deleted": true, "grants_ended": d.grants_ended, "codes_dropped": d.codes_dropped,
                       "rights_removed": d.rights_removed}),
            )
        }
    })
}
