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
    /// List users, with the guessing locks in force (`locked until …`).
    List,
    /// Disable a user: every grant they hold is revoked at once, for good
    /// (enabling them again revives none).
    Disable { name: String },
    /// Enable a disabled user.
    Enable { name: String },
    /// Set a user's password (read like `create`). Every grant the user holds
    /// is revoked with it, unless --keep-grants.
    SetPassword {
        name: String,
        /// Keep the user's grants working (only when the old password was not compromised).
        #[arg(long)]
        keep_grants: bool,
    },
    /// Clear the guessing locks and counts against a user name (wrong passwords from
    /// any address, wrong user codes), so they can sign in again at once.
    Unlock { name: String },
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
            let locks: std::collections::HashMap<String, _> = admin.locks().await?.into_iter().collect();
            let locked = |u: &strongroom_core::identity::User| locks.get(&u.name.to_lowercase()).copied();
            let rows: Vec<Vec<String>> = users
                .iter()
                .map(|u| {
                    let mut flags: Vec<String> = [(u.disabled, "disabled"), (u.master_admin, "master-admin")]
                        .iter()
                        .filter(|(on, _)| *on)
                        .map(|(_, f)| (*f).to_owned())
                        .collect();
                    if let Some(until) = locked(u) {
                        flags.push(format!("locked until {}", time(until)));
                    }
                    vec![u.name.clone(), u.id.identity(), time(u.created_at), flags.join(",")]
                })
                .collect();
            let list: Vec<_> = users
                .iter()
                .map(|u| {
                    json!({"name": u.name, "identity": u.id.identity(), "disabled": u.disabled, "master_admin": u.master_admin,
                           "created_at": time(u.created_at), "locked_until": locked(u).map(time)})
                })
                .collect();
            Rendered::table(&["NAME", "IDENTITY", "CREATED", "FLAGS"], &rows, json!(list))
        }
        UsersCommand::Disable { name } => {
            let ended = admin.set_user_disabled(&name, true).await?;
            Rendered::done(
                format!("disabled user {name}; {} revoked", count(ended, "grant", "grants")),
                json!({"name": name, "disabled": true, "grants_revoked": ended}),
            )
        }
        UsersCommand::Enable { name } => {
            admin.set_user_disabled(&name, false).await?;
            Rendered::done(format!("enabled user {name}"), json!({"name": name, "disabled": false}))
        }
        UsersCommand::SetPassword { name, keep_grants } => {
            let password = read_password("New password: ")?;
            let ended = admin.set_password(&name, &password, keep_grants).await?;
            Rendered::done(
                format!("password changed for {name}; {} revoked", count(ended, "grant", "grants")),
                json!({"name": name, "password_changed": true, "grants_revoked": ended}),
            )
        }
        UsersCommand::Unlock { name } => {
            let cleared = admin.unlock(&name).await?;
            Rendered::done(
                format!("unlocked {name} ({} cleared)", count(cleared, "counter", "counters")),
                json!({"name": name, "counters_cleared": cleared}),
            )
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
