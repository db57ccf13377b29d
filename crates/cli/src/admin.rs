//! `strongroom admin ...`

use anyhow::{Context as _, Result, bail};
use clap::{Args, Subcommand};
use serde_json::json;
use std::io::Write as _;
use std::io::{BufRead as _, IsTerminal as _};
use std::sync::Arc;

use strongroom_core::integration::{AllowedUsers, TokenOverrides};
use strongroom_core::secret::Secret;
use strongroom_core::time::{Clock as _, UnixTime};
use strongroom_core::vault::Rights;
use strongroom_server::admin::{Admin, IntegrationSpec};
use strongroom_server::keys;
use strongroom_server::service::keyring::KeyRing;
use strongroom_server::state::{OsRandom, SystemClock};
use strongroom_store::EventFilter;

#[derive(Debug, Subcommand)]
pub(crate) enum AdminCommand {
    /// Snapshot the SQLite store into FILE while the server runs (with FILE.json: the event-chain head).
    ///
    /// Example: strongroom admin backup /backups/strongroom-$(date +%F).db
    Backup { file: std::path::PathBuf },
    /// Restore a snapshot into an empty data directory, then verify the event chain.
    ///
    /// Example: strongroom admin --data-dir /var/lib/strongroom restore /backups/strongroom-2026-11-23.db
    Restore { file: std::path::PathBuf },
    /// Local users (identities shown as local:{uuid}).
    #[command(subcommand)]
    Users(UsersCommand),
    /// API integrations: the client applications allowed to get tokens.
    #[command(subcommand)]
    Integrations(IntegrationsCommand),
    /// Grants (what a user allowed an integration to do).
    #[command(subcommand)]
    Grants(GrantsCommand),
    /// The event log.
    #[command(subcommand)]
    Events(EventsCommand),
    /// Folders of the owner tree (\\VED\\Policy\\...), which own vault entries.
    #[command(subcommand)]
    Folders(FoldersCommand),
    /// Rights of users on folders, inherited by everything below.
    #[command(subcommand)]
    Rights(RightsCommand),
    /// The vault's data keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Copy a whole store into an empty one of either backend (stop the servers first).
    ///
    /// Copies users, integrations, grants, tokens, device codes, folders, rights,
    /// data keys, vault entries and the event log with its chain, then checks row
    /// counts and the chain on the target. Refuses a target that holds anything.
    ///
    /// Example: strongroom admin migrate-store --from strongroom-data/strongroom.db \
    ///   --to postgres://strongroom@db.internal/strongroom
    MigrateStore {
        /// The store to copy: a SQLite path (or sqlite://PATH) or postgres://…
        #[arg(long)]
        from: String,
        /// The empty store to fill (created and migrated if need be).
        #[arg(long)]
        to: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum FoldersCommand {
    /// Create a folder (and the folders above it).
    ///
    /// Example: strongroom admin folders create '\VED\Policy\Team A'
    Create { path: String },
    /// List folders.
    List,
}

#[derive(Debug, Subcommand)]
pub(crate) enum RightsCommand {
    /// Grant rights on a folder, replacing what the user had there.
    ///
    /// Example: strongroom admin rights grant '\VED\Policy\Team A' alice --rights read,write
    Grant {
        folder: String,
        user: String,
        /// Comma-separated: view, read, write, create, delete.
        #[arg(long)]
        rights: String,
    },
    /// Remove a user's rights on a folder.
    Revoke { folder: String, user: String },
    /// A user's effective rights on a folder, inherited ones included.
    Show { folder: String, user: String },
    /// Every grant of rights.
    List,
}

#[derive(Debug, Subcommand)]
pub(crate) enum KeysCommand {
    /// List the named keys (`Driver:Name`) and their data keys; the newest data key of each seals new data.
    List,
    /// Create a named key where its driver keeps keys: `PKCS11:NAME` makes an AES-256 key in the
    /// token configured by `[[keys.pkcs11]]` (the `Software` driver has only `Software:Default`).
    Create { name: String },
    /// Create a new data key and re-encrypt with it every value under the named key (every named key if none given).
    Rotate { name: Option<String> },
    /// Move every entry under one named key to another: its data and associations are re-encrypted
    /// under the other key's current data key, one entry per write (progress on stderr). Servers may
    /// keep running. Entries that do not decrypt stay where they are and are counted.
    ///
    /// Example: strongroom admin keys move --from Software:Default --to PKCS11:vault
    Move {
        /// The named key the entries are under now.
        #[arg(long)]
        from: String,
        /// The named key to put them under (configured, and usable now).
        #[arg(long)]
        to: String,
    },
}

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
}

#[derive(Debug, Args)]
pub(crate) struct IntegrationArgs {
    /// Display name shown on the approval page.
    #[arg(long)]
    name: Option<String>,
    /// Maximum scope, e.g. "restricted:manage;certificate:manage".
    #[arg(long)]
    scope: Option<String>,
    /// A user allowed to get grants (repeat for several; replaces the list).
    #[arg(long = "allow-user", value_name = "NAME")]
    allow_users: Vec<String>,
    /// Allow every user.
    #[arg(long, conflicts_with = "allow_users")]
    allow_all_users: bool,
    /// Allow nobody (clears the list).
    #[arg(long, conflicts_with_all = ["allow_users", "allow_all_users"])]
    allow_no_users: bool,
    /// Browser-based device authorization (default: on).
    #[arg(long, value_name = "BOOL")]
    device: Option<bool>,
    /// The password grant, Authorize/OAuth (default: off).
    #[arg(long, value_name = "BOOL")]
    password_grant: Option<bool>,
    /// Access-token lifetime in seconds (overrides the server default).
    #[arg(long, value_name = "SECONDS")]
    access_validity: Option<i64>,
    /// Grant lifetime (refresh_until) in seconds.
    #[arg(long, value_name = "SECONDS")]
    grant_validity: Option<i64>,
    /// Whether refresh tokens are issued.
    #[arg(long, value_name = "BOOL")]
    refreshable: Option<bool>,
    /// Device-code lifetime in seconds.
    #[arg(long, value_name = "SECONDS")]
    device_code_validity: Option<i64>,
    /// Minimum seconds between polls.
    #[arg(long, value_name = "SECONDS")]
    poll_interval: Option<i64>,
    /// Seconds in which a just-rotated refresh token may come back for a lost answer (0: strict).
    #[arg(long, value_name = "SECONDS")]
    retry_window: Option<i64>,
}

impl IntegrationArgs {
    fn spec(self, disabled: Option<bool>) -> IntegrationSpec {
        IntegrationSpec {
            name: self.name,
            scope: self.scope,
            allow_users: if self.allow_no_users {
                Some(Vec::new())
            } else if self.allow_users.is_empty() {
                None
            } else {
                Some(self.allow_users)
            },
            allow_all_users: self.allow_all_users,
            device: self.device,
            password: self.password_grant,
            disabled,
            overrides: TokenOverrides {
                access_validity: self.access_validity,
                grant_validity: self.grant_validity,
                refreshable: self.refreshable,
                device_code_validity: self.device_code_validity,
                poll_interval: self.poll_interval,
                retry_window: self.retry_window,
            },
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum IntegrationsCommand {
    /// Register an API integration.
    ///
    /// Example: strongroom admin integrations create my-app --name "My App" \
    ///   --scope "restricted:manage" --allow-user alice
    Create {
        client_id: String,
        #[command(flatten)]
        args: IntegrationArgs,
    },
    /// Change an API integration; options not given stay as they are.
    Update {
        client_id: String,
        #[command(flatten)]
        args: IntegrationArgs,
        /// Disable the integration: its tokens stop working at once.
        #[arg(long, conflicts_with = "enable")]
        disable: bool,
        #[arg(long)]
        enable: bool,
    },
    /// List API integrations.
    List,
}

#[derive(Debug, Subcommand)]
pub(crate) enum GrantsCommand {
    /// List live grants (with --all, also revoked and expired ones).
    List {
        #[arg(long)]
        all: bool,
    },
    /// Revoke a grant: its access and refresh tokens stop working.
    ///
    /// Example: strongroom admin grants revoke --user alice   (every grant alice holds)
    Revoke {
        /// The grant's id (from `grants list`).
        #[arg(required_unless_present = "user", conflicts_with = "user")]
        id: Option<String>,
        /// Revoke every grant this user holds instead.
        #[arg(long)]
        user: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum EventsCommand {
    /// List events, oldest first.
    List {
        /// Only this kind, e.g. token.issued.
        #[arg(long)]
        kind: Option<String>,
        /// Only events after this sequence number.
        #[arg(long)]
        after: Option<i64>,
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// Check the hash chain of the whole log.
    Verify,
}

fn read_password(prompt: &str) -> Result<Secret> {
    let stdin = std::io::stdin();
    let line = if stdin.is_terminal() {
        rpassword::prompt_password(prompt).context("reading the password")?
    } else {
        let mut line = String::new();
        stdin.lock().read_line(&mut line).context("reading the password from standard input")?;
        line.trim_end_matches(['\n', '\r']).to_owned()
    };
    Ok(Secret::new(line))
}

fn time(t: UnixTime) -> String {
    t.iso8601()
}

pub(crate) async fn run(config: &strongroom_server::Config, command: AdminCommand, json_out: bool) -> Result<()> {
    let mut out = Output { json: json_out };
    // Backups, restores and store migrations touch no key: they must not create one.
    match command {
        AdminCommand::Backup { file } => return crate::backup::backup(config, &file, &mut out),
        AdminCommand::Restore { file } => return crate::backup::restore(config, &file, &mut out).await,
        // Copies tables as they are: needs no master key and no data directory.
        AdminCommand::MigrateStore { from, to } => return migrate_store(&from, &to, &mut out).await,
        _ => {}
    }
    keys::create_private_dir(&config.data_dir).with_context(|| format!("creating {}", config.data_dir.display()))?;
    let (keys, source) =
        keys::load_or_create(&config.data_dir, std::env::var(keys::MASTER_KEY_ENV).ok(), &OsRandom).context("loading the master key")?;
    let store = strongroom_store::open(&config.database_url).await.context("opening the store")?;
    // Like `serve`: a key other than the store's would write hashes and seals no server can use.
    keys::bind(&*store, &keys, &source, SystemClock.now()).await.context("master key")?;
    let admin =
        Admin { store, clock: Arc::new(SystemClock), rng: Arc::new(OsRandom), keyring: KeyRing::open(&keys, &config.keys, &OsRandom) };
    match command {
        AdminCommand::Backup { .. } | AdminCommand::Restore { .. } | AdminCommand::MigrateStore { .. } => {}
        AdminCommand::Users(UsersCommand::Create { name, master_admin }) => {
            let password = read_password("Password: ")?;
            let user = admin.create_user(&name, &password, master_admin).await?;
            out.done(
                &format!("created user {} ({})", user.name, user.id.identity()),
                json!({"name": user.name, "identity": user.id.identity(), "master_admin": user.master_admin}),
            )?;
        }
        AdminCommand::Users(UsersCommand::List) => {
            let users = admin.list_users().await?;
            let locks: std::collections::HashMap<String, _> = admin.locks().await?.into_iter().collect();
            let locked = |u: &strongroom_core::identity::User| locks.get(&u.name.to_lowercase()).copied();
            let rows = users
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
            out.table(&["NAME", "IDENTITY", "CREATED", "FLAGS"], rows, json!(list))?;
        }
        AdminCommand::Users(UsersCommand::Disable { name }) => {
            let ended = admin.set_user_disabled(&name, true).await?;
            out.done(
                &format!("disabled user {name}; {ended} grant(s) revoked"),
                json!({"name": name, "disabled": true, "grants_revoked": ended}),
            )?;
        }
        AdminCommand::Users(UsersCommand::Enable { name }) => {
            admin.set_user_disabled(&name, false).await?;
            out.done(&format!("enabled user {name}"), json!({"name": name, "disabled": false}))?;
        }
        AdminCommand::Users(UsersCommand::SetPassword { name, keep_grants }) => {
            let password = read_password("New password: ")?;
            let ended = admin.set_password(&name, &password, keep_grants).await?;
            out.done(
                &format!("password changed for {name}; {ended} grant(s) revoked"),
                json!({"name": name, "password_changed": true, "grants_revoked": ended}),
            )?;
        }
        AdminCommand::Users(UsersCommand::Unlock { name }) => {
            let cleared = admin.unlock(&name).await?;
            out.done(&format!("unlocked {name} ({cleared} counter(s) cleared)"), json!({"name": name, "counters_cleared": cleared}))?;
        }
        AdminCommand::Integrations(IntegrationsCommand::Create { client_id, args }) => {
            let i = admin.create_integration(&client_id, args.spec(None)).await?;
            out.done(
                &format!("created integration {} ({}) with scope {}", i.client_id, i.name, i.max_scope),
                json!({"client_id": i.client_id, "name": i.name, "scope": i.max_scope.to_string()}),
            )?;
        }
        AdminCommand::Integrations(IntegrationsCommand::Update { client_id, args, disable, enable }) => {
            let disabled = if disable {
                Some(true)
            } else if enable {
                Some(false)
            } else {
                None
            };
            let i = admin.update_integration(&client_id, args.spec(disabled)).await?;
            out.done(
                &format!("updated integration {} ({})", i.client_id, i.name),
                json!({"client_id": i.client_id, "name": i.name, "scope": i.max_scope.to_string(), "disabled": i.disabled}),
            )?;
        }
        AdminCommand::Integrations(IntegrationsCommand::List) => {
            let names = admin.user_names().await?;
            let mut rows = Vec::new();
            let mut list = Vec::new();
            for i in admin.list_integrations().await? {
                let users: Vec<String> = match &i.allowed_users {
                    AllowedUsers::Everyone => vec!["*".to_owned()],
                    AllowedUsers::Only(ids) => {
                        ids.iter().map(|id| names.get(id.as_str()).cloned().unwrap_or_else(|| id.to_string())).collect()
                    }
                };
                let shown = match users.as_slice() {
                    [all] if all == "*" => "everyone".to_owned(),
                    [] => "nobody".to_owned(),
                    u => u.join(","),
                };
                let s = i.settings(config.tokens);
                rows.push(vec![
                    i.client_id.clone(),
                    i.name.clone(),
                    i.max_scope.to_string(),
                    shown,
                    yes(i.grant_types.device),
                    yes(i.grant_types.password),
                    format!("{}s", s.access_validity),
                    format!("{}s", s.grant_validity),
                    yes(s.refreshable),
                    if i.disabled { "DISABLED".to_owned() } else { "enabled".to_owned() },
                ]);
                list.push(json!({
                    "client_id": i.client_id, "name": i.name, "scope": i.max_scope.to_string(),
                    "allowed_users": if matches!(i.allowed_users, AllowedUsers::Everyone) { json!("everyone") } else { json!(users) },
                    "device": i.grant_types.device, "password_grant": i.grant_types.password,
                    "access_validity": s.access_validity, "grant_validity": s.grant_validity, "refreshable": s.refreshable,
                    "device_code_validity": s.device_code_validity, "poll_interval": s.poll_interval, "retry_window": s.retry_window,
                    "disabled": i.disabled,
                }));
            }
            out.table(
                &["CLIENT ID", "NAME", "SCOPE", "USERS", "DEVICE", "PASSWORD", "ACCESS", "GRANT", "REFRESH", "STATE"],
                rows,
                json!(list),
            )?;
        }
        AdminCommand::Grants(GrantsCommand::List { all }) => {
            let grants = admin.list_grants(all).await?;
            let state = |g: &strongroom_store::GrantSummary| match g.grant.revoked_at {
                Some(t) => format!("revoked {}", time(t)),
                None => format!("until {}", time(g.grant.refresh_until)),
            };
            let rows = grants
                .iter()
                .map(|g| vec![g.grant.id.to_string(), g.grant.client_id.clone(), g.user_name.clone(), g.grant.scope.to_string(), state(g)])
                .collect();
            let list: Vec<_> = grants
                .iter()
                .map(|g| {
                    json!({"id": g.grant.id.to_string(), "client_id": g.grant.client_id, "user": g.user_name,
                           "scope": g.grant.scope.to_string(), "created_at": time(g.grant.created_at),
                           "refresh_until": time(g.grant.refresh_until), "revoked_at": g.grant.revoked_at.map(time)})
                })
                .collect();
            out.table(&["GRANT", "CLIENT ID", "USER", "SCOPE", "STATE"], rows, json!(list))?;
        }
        AdminCommand::Grants(GrantsCommand::Revoke { id: Some(id), .. }) => {
            admin.revoke_grant(&id).await?;
            out.done(&format!("revoked grant {id}"), json!({"id": id, "revoked": true}))?;
        }
        AdminCommand::Grants(GrantsCommand::Revoke { id: None, user }) => {
            let user = user.unwrap_or_default();
            let ended = admin.revoke_user_grants(&user).await?;
            out.done(&format!("revoked {ended} grant(s) of {user}"), json!({"user": user, "grants_revoked": ended}))?;
        }
        AdminCommand::Events(EventsCommand::List { kind, after, limit }) => {
            let filter = EventFilter { kind, after_seq: after, limit: limit.clamp(1, 10_000), ..Default::default() };
            let events = admin.events(filter).await?;
            let rows = events
                .iter()
                .map(|e| {
                    let ev = &e.event;
                    vec![
                        e.seq.to_string(),
                        time(ev.at),
                        ev.kind.to_string(),
                        ev.identity.clone(),
                        ev.client_id.clone(),
                        ev.object.clone(),
                        ev.source.clone(),
                        ev.request_id.clone(),
                        ev.detail.clone(),
                    ]
                })
                .collect();
            let list: Vec<_> = events
                .iter()
                .map(|e| {
                    let ev = &e.event;
                    json!({"seq": e.seq, "at": time(ev.at), "kind": ev.kind.as_str(), "identity": ev.identity, "client_id": ev.client_id,
                           "object": ev.object, "source": ev.source, "request_id": ev.request_id, "detail": ev.detail,
                           "hash": hex(&e.hash)})
                })
                .collect();
            out.table(&["SEQ", "AT", "KIND", "IDENTITY", "CLIENT", "OBJECT", "SOURCE", "REQUEST", "DETAIL"], rows, json!(list))?;
        }
        AdminCommand::Folders(FoldersCommand::Create { path }) => {
            let f = admin.create_folder(&path).await?;
            out.done(&format!("created folder {f}"), json!({"folder": f.to_string()}))?;
        }
        AdminCommand::Folders(FoldersCommand::List) => {
            let folders = admin.folders().await?;
            let rows = folders.iter().map(|f| vec![f.to_string()]).collect();
            let list: Vec<_> = folders.iter().map(ToString::to_string).collect();
            out.table(&["FOLDER"], rows, json!(list))?;
        }
        AdminCommand::Rights(RightsCommand::Grant { folder, user, rights }) => {
            let r = Rights::parse(&rights)
                .filter(|r| *r != Rights::NONE)
                .context("rights are a comma-separated list of view, read, write, create, delete")?;
            admin.set_rights(&folder, &user, r).await?;
            out.done(&format!("{user} has {r} on {folder}"), json!({"folder": folder, "user": user, "rights": r.to_string()}))?;
        }
        AdminCommand::Rights(RightsCommand::Revoke { folder, user }) => {
            admin.set_rights(&folder, &user, Rights::NONE).await?;
            out.done(&format!("removed {user}'s rights on {folder}"), json!({"folder": folder, "user": user, "rights": ""}))?;
        }
        AdminCommand::Rights(RightsCommand::Show { folder, user }) => {
            let (r, master) = admin.effective_rights(&folder, &user).await?;
            out.done(
                &format!("{user} on {folder}: {r}{}", if master { " (Master Admin)" } else { "" }),
                json!({"folder": folder, "user": user, "rights": r.to_string(), "master_admin": master}),
            )?;
        }
        AdminCommand::Rights(RightsCommand::List) => {
            let all = admin.all_rights().await?;
            let rows = all.iter().map(|(f, u, r)| vec![f.to_string(), u.clone(), r.to_string()]).collect();
            let list: Vec<_> = all.iter().map(|(f, u, r)| json!({"folder": f.to_string(), "user": u, "rights": r.to_string()})).collect();
            out.table(&["FOLDER", "USER", "RIGHTS"], rows, json!(list))?;
        }
        AdminCommand::Keys(KeysCommand::List) => {
            let named = admin.named_keys().await?;
            let rows = named
                .iter()
                .map(|k| {
                    let flags = [(k.default, "default"), (k.entries > 0, "in use"), (k.location.is_none(), "NOT CONFIGURED")]
                        .iter()
                        .filter(|(on, _)| *on)
                        .map(|(_, f)| *f)
                        .collect::<Vec<_>>()
                        .join(", ");
                    let ids = k.data_keys.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
                    vec![
                        k.name.clone(),
                        flags,
                        k.entries.to_string(),
                        if ids.is_empty() { "none".to_owned() } else { ids },
                        k.location.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            let data = admin.data_keys().await?;
            let list: Vec<_> = named
                .iter()
                .map(
                    |k| json!({"name": k.name, "default": k.default, "in_use": k.entries > 0, "entries": k.entries, "location": k.location, "data_keys": k.data_keys}),
                )
                .collect();
            let data_list: Vec<_> =
                data.iter().map(|(id, name, created)| json!({"id": id, "key_name": name, "created_at": time(*created)})).collect();
            out.table(&["NAME", "FLAGS", "ENTRIES", "DATA KEYS", "LOCATION"], rows, json!({"named_keys": list, "data_keys": data_list}))?;
            if !out.json && !data.is_empty() {
                writeln!(std::io::stdout())?;
                let rows = data.iter().map(|(id, name, created)| vec![id.to_string(), name.clone(), time(*created)]).collect();
                out.table(&["DATA KEY", "NAMED KEY", "CREATED"], rows, serde_json::Value::Null)?;
            }
        }
        AdminCommand::Keys(KeysCommand::Create { name }) => {
            let name = admin.create_key(&name).await?;
            out.done(&format!("created {name}"), json!({"created": name}))?;
        }
        AdminCommand::Keys(KeysCommand::Rotate { name }) => {
            let rotated = admin.rotate_keys(name.as_deref(), &mut |name, n| eprintln!("{name}: re-encrypted {n} values so far")).await?;
            let human: Vec<String> =
                rotated.iter().map(|(name, id, n)| format!("{name}: data key {id} is current; re-encrypted {n} values")).collect();
            let results: Vec<_> =
                rotated.iter().map(|(name, id, n)| json!({"key_name": name, "current_key": id, "reencrypted": n})).collect();
            out.done(&human.join("\n"), json!(results))?;
        }
        AdminCommand::Keys(KeysCommand::Move { from, to }) => {
            let shown = |n: &str| admin.keyring.resolve(n).unwrap_or(n).to_owned();
            let (from, to) = (shown(&from), shown(&to));
            let entries = |n: u64| format!("{n} {}", if n == 1 { "entry" } else { "entries" });
            let mut progress = |n: u64| eprintln!("{from} -> {to}: moved {} so far", entries(n));
            let m = admin.move_key(&from, &to, &mut progress).await?;
            let (from, to) = (&m.from, &m.to);
            let mut human = format!("moved {} from {from} to {to} (data key {})", entries(m.moved), m.data_key);
            if m.unreadable > 0 {
                human.push_str(&format!("; {} do not decrypt and stay under {from}", entries(m.unreadable)));
            }
            if m.changed > 0 {
                human.push_str(&format!("; {} changed meanwhile: run it again", entries(m.changed)));
            }
            let value =
                json!({"from": from, "to": to, "data_key": m.data_key, "moved": m.moved, "unreadable": m.unreadable, "changed": m.changed});
            out.done(&human, value)?;
            if m.unreadable > 0 || m.changed > 0 {
                bail!("not every entry under {from} was moved");
            }
        }
        AdminCommand::Events(EventsCommand::Verify) => match admin.verify_events().await {
            Ok(n) => out.done(&format!("event log intact: {n} events"), json!({"intact": true, "events": n}))?,
            Err(e) => bail!("{e}"),
        },
    }
    Ok(())
}

fn yes(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where admin commands print: aligned tables and sentences for people,
/// one JSON document for scripts (`--json`).
#[derive(Debug)]
pub(crate) struct Output {
    pub(crate) json: bool,
}

impl Output {
    /// The outcome of a command that changed something.
    pub(crate) fn done(&mut self, human: &str, value: serde_json::Value) -> Result<()> {
        let mut out = std::io::stdout().lock();
        if self.json {
            writeln!(out, "{value}")?
        } else {
            writeln!(out, "{human}")?
        }
        Ok(())
    }

    /// A listing: a table with a header (nothing at all when empty), or a JSON array.
    pub(crate) fn table(&mut self, headers: &[&str], rows: Vec<Vec<String>>, value: serde_json::Value) -> Result<()> {
        let mut out = std::io::stdout().lock();
        if self.json {
            writeln!(out, "{value}")?;
        } else if !rows.is_empty() {
            out.write_all(render_table(headers, &rows).as_bytes())?;
        }
        Ok(())
    }
}

/// Columns padded to their widest cell, two spaces apart; the last column unpadded.
fn render_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let cells: Vec<&str> = cells.collect();
        for (k, cell) in cells.iter().enumerate() {
            if k + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&" ".repeat(widths[k] - cell.chars().count() + 2));
            }
        }
        let trimmed = text.trim_end().len();
        text.truncate(trimmed);
        text.push('\n');
    };
    line(&mut headers.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    text
}

/// `admin migrate-store`. Copies tables as they are (tokens stay keyed
/// hashes, values stay sealed): no master key is needed, and the target
/// needs the source's. Progress per table (on standard error with `--json`),
/// then the verified totals.
async fn migrate_store(from: &str, to: &str, out: &mut Output) -> Result<()> {
    let json = out.json;
    let done = strongroom_server::admin::migrate::migrate_store(from, to, |table, rows| {
        if json {
            eprintln!("copied {table}: {rows} rows");
        } else {
            let _ = writeln!(std::io::stdout(), "copied {table}: {rows} rows");
        }
    })
    .await
    .context("migrate-store")?;
    let total: u64 = done.tables.iter().map(|(_, n)| n).sum();
    let tables: serde_json::Map<String, serde_json::Value> = done.tables.iter().map(|(t, n)| (t.to_string(), json!(n))).collect();
    out.done(
        &format!("verified: {total} rows in {} tables, event log intact: {} events", done.tables.len(), done.events),
        json!({"verified": true, "rows": total, "tables": tables, "events": done.events}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_their_columns() {
        let rows = vec![
            vec!["alice".to_owned(), "local:{1}".to_owned(), "".to_owned()],
            vec!["b".to_owned(), "x".to_owned(), "disabled".to_owned()],
        ];
        assert_eq!(
            render_table(&["NAME", "IDENTITY", "FLAGS"], &rows),
            "NAME   IDENTITY   FLAGS\nalice  local:{1}\nb      x          disabled\n"
        );
    }
}
