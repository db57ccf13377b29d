//! `strongroom admin users ...`

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use strongroom_app::admin::Admin;
use strongroom_client::admin::{AdminApi, BROWSE_MAX, identity_type, local_name};
use strongroom_core::time::UnixTime;
use strongroom_proto::SecretString;

use super::remote::not_over_api;
use super::{Rendered, Target, count, read_password, time};

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
    /// End every admin console session of a user, on every replica: each copy
    /// of their session cookie stops working at its next request. (Signing
    /// out, a new password and disabling the user do this too.)
    EndSessions { name: String },
    /// Delete a user: every grant of theirs ends at once (each revocation is
    /// an event), device codes they approved and nobody exchanged are
    /// dropped, their rights and their places on integrations' user lists go.
    /// Their past events stay in the log.
    Delete { name: String },
    /// Make a user a Master Admin (every right everywhere, and the admin
    /// console), or with --off no longer one. Their next request sees it.
    ///
    /// Example: strongroom admin users master-admin alice --off
    MasterAdmin {
        name: String,
        /// Take the role away instead.
        #[arg(long)]
        off: bool,
    },
}

/// One user as a listing shows it: what the API tells (`Identity/Browse`:
/// the name and identity), and on the store the rest.
pub(crate) struct UserRow {
    name: String,
    identity: String,
    details: Option<UserDetails>,
}

struct UserDetails {
    created_at: UnixTime,
    disabled: bool,
    master_admin: bool,
    locked_until: Option<UnixTime>,
}

/// The listing: NAME, IDENTITY, and where known CREATED and FLAGS.
fn listing(users: &[UserRow]) -> Rendered {
    let full = users.iter().all(|u| u.details.is_some());
    let rows: Vec<Vec<String>> = users
        .iter()
        .map(|u| {
            let mut row = vec![u.name.clone(), u.identity.clone()];
            if let Some(d) = u.details.as_ref().filter(|_| full) {
                let mut flags: Vec<String> = [(d.disabled, "disabled"), (d.master_admin, "master-admin")]
                    .iter()
                    .filter(|(on, _)| *on)
                    .map(|(_, f)| (*f).to_owned())
                    .collect();
                if let Some(until) = d.locked_until {
                    flags.push(format!("locked until {}", time(until)));
                }
                row.extend([time(d.created_at), flags.join(",")]);
            }
            row
        })
        .collect();
    let list: Vec<_> = users
        .iter()
        .map(|u| {
            let mut j = json!({"name": u.name, "identity": u.identity});
            if let Some(d) = &u.details {
                j["disabled"] = json!(d.disabled);
                j["master_admin"] = json!(d.master_admin);
                j["created_at"] = json!(time(d.created_at));
                j["locked_until"] = json!(d.locked_until.map(time));
            }
            j
        })
        .collect();
    let headers: &[&str] = if full { &["NAME", "IDENTITY", "CREATED", "FLAGS"] } else { &["NAME", "IDENTITY"] };
    Rendered::table(headers, &rows, "no users", json!(list))
}

fn created(name: &str, identity: &str, master_admin: Option<bool>) -> Rendered {
    let mut j = json!({"name": name, "identity": identity});
    if let Some(m) = master_admin {
        j["master_admin"] = json!(m);
    }
    Rendered::done(format!("created user {name} ({identity})"), j)
}

fn password_changed(name: &str, ended: Option<u64>) -> Rendered {
    match ended {
        Some(ended) => Rendered::done(
            format!("password changed for {name}; {} revoked", count(ended, "grant", "grants")),
            json!({"name": name, "password_changed": true, "grants_revoked": ended}),
        ),
        None => Rendered::done(
            format!("password changed for {name}; every grant of theirs ended"),
            json!({"name": name, "password_changed": true}),
        ),
    }
}

/// (grants ended, codes dropped, rights removed): not told over the API.
fn deleted(name: &str, counts: Option<(u64, u64, u64)>) -> Rendered {
    match counts {
        Some((grants_ended, codes_dropped, rights_removed)) => Rendered::done(
            format!(
                "deleted user {name}: {} ended, {} dropped, {} removed",
                count(grants_ended, "grant", "grants"),
                count(codes_dropped, "approved device code", "approved device codes"),
                count(rights_removed, "folder right", "folder rights")
            ),
            json!({"name": name, "deleted": true, "grants_ended": grants_ended, "codes_dropped": codes_dropped,
                   "rights_removed": rights_removed}),
        ),
        None => Rendered::done(format!("deleted user {name}"), json!({"name": name, "deleted": true})),
    }
}

pub(crate) async fn run(target: &Target, command: UsersCommand) -> Result<Rendered> {
    match target {
        Target::Store(admin) => run_store(admin, command).await,
        Target::Server(api) => run_api(api, command).await,
    }
}

async fn run_api(api: &AdminApi, command: UsersCommand) -> Result<Rendered> {
    Ok(match command {
        UsersCommand::List => {
            let users = api.browse("", BROWSE_MAX, identity_type::USER).await?;
            let rows: Vec<UserRow> =
                users.into_iter().map(|u| UserRow { name: u.name, identity: u.prefixed_universal, details: None }).collect();
            listing(&rows)
        }
        UsersCommand::Create { master_admin: true, .. } => {
            return Err(not_over_api("users create --master-admin (the role is given on the store)"));
        }
        UsersCommand::Create { name, master_admin: false } => {
            let password = read_password("Password: ")?;
            api.create_object(&format!("\\VED\\Identity\\{name}"), "User").await?;
            let user = api.set_password(&local_name(&name), SecretString(password.expose().to_owned())).await?;
            created(&user.name, &user.prefixed_universal, None)
        }
        UsersCommand::Delete { name } => {
            api.delete_object(&format!("\\VED\\Identity\\{name}"), false).await?;
            deleted(&name, None)
        }
        UsersCommand::SetPassword { keep_grants: true, .. } => {
            return Err(not_over_api("users set-password --keep-grants (Identity/SetPassword ends every grant of the user)"));
        }
        UsersCommand::SetPassword { name, keep_grants: false } => {
            let password = read_password("New password: ")?;
            api.set_password(&local_name(&name), SecretString(password.expose().to_owned())).await?;
            password_changed(&name, None)
        }
        UsersCommand::Disable { .. } => return Err(not_over_api("users disable")),
        UsersCommand::Enable { .. } => return Err(not_over_api("users enable")),
        UsersCommand::Unlock { .. } => return Err(not_over_api("users unlock")),
        UsersCommand::EndSessions { .. } => return Err(not_over_api("users end-sessions")),
        UsersCommand::MasterAdmin { .. } => return Err(not_over_api("users master-admin (the role is given on the store)")),
    })
}

async fn run_store(admin: &Admin, command: UsersCommand) -> Result<Rendered> {
    Ok(match command {
        UsersCommand::Create { name, master_admin } => {
            let password = read_password("Password: ")?;
            let user = admin.create_user(&name, &password, master_admin).await?;
            created(&user.name, &user.id.identity(), Some(user.master_admin))
        }
        UsersCommand::List => {
            let users = admin.list_users().await?;
            let locks: std::collections::HashMap<String, _> = admin.locks().await?.into_iter().collect();
            let rows: Vec<UserRow> = users
                .iter()
                .map(|u| UserRow {
                    name: u.name.clone(),
                    identity: u.id.identity(),
                    details: Some(UserDetails {
                        created_at: u.created_at,
                        disabled: u.disabled,
                        master_admin: u.master_admin,
                        locked_until: locks.get(&u.name.to_lowercase()).copied(),
                    }),
                })
                .collect();
            listing(&rows)
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
            password_changed(&name, Some(ended))
        }
        UsersCommand::Unlock { name } => {
            let cleared = admin.unlock(&name).await?;
            Rendered::done(
                format!("unlocked {name} ({} cleared)", count(cleared, "counter", "counters")),
                json!({"name": name, "counters_cleared": cleared}),
            )
        }
        UsersCommand::EndSessions { name } => {
            admin.end_console_sessions(&name).await?;
            Rendered::done(format!("ended every console session of {name}"), json!({"name": name, "console_sessions_ended": true}))
        }
        UsersCommand::Delete { name } => {
            let d = admin.delete_user(&name).await?;
            deleted(&name, Some((d.grants_ended, d.codes_dropped, d.rights_removed)))
        }
        UsersCommand::MasterAdmin { name, off } => {
            let changed = admin.set_master_admin(&name, !off).await?;
            let text = match (off, changed) {
                (false, true) => format!("{name} is now a Master Admin"),
                (true, true) => format!("{name} is no longer a Master Admin"),
                (false, false) => format!("{name} was already a Master Admin; nothing changed"),
                (true, false) => format!("{name} was not a Master Admin; nothing changed"),
            };
            Rendered::done(text, json!({"name": name, "master_admin": !off, "changed": changed}))
        }
    })
}
