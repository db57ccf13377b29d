//! `strongroom admin ...`

use anyhow::{Context as _, Result, bail};
use clap::{Args, Subcommand};
use std::io::{BufRead as _, IsTerminal as _};
use std::sync::Arc;

use strongroom_core::integration::{AllowedUsers, TokenOverrides};
use strongroom_core::secret::Secret;
use strongroom_core::time::UnixTime;
use strongroom_core::vault::Rights;
use strongroom_server::admin::{Admin, IntegrationSpec};
use strongroom_server::keys;
use strongroom_server::service::keyring::KeyRing;
use strongroom_server::state::{OsRandom, SystemClock};
use strongroom_store::EventFilter;

#[derive(Debug, Subcommand)]
pub(crate) enum AdminCommand {
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
    /// List data keys; the newest seals new data.
    List,
    /// Create a new data key and re-encrypt every stored value with it.
    Rotate,
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
    /// List users.
    List,
    /// Disable a user: their grants stop working at once.
    Disable { name: String },
    /// Enable a disabled user.
    Enable { name: String },
    /// Set a user's password (read like `create`).
    SetPassword { name: String },
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
    Revoke { id: String },
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

pub(crate) async fn run(config: &strongroom_server::Config, command: AdminCommand) -> Result<()> {
    keys::create_private_dir(&config.data_dir).with_context(|| format!("creating {}", config.data_dir.display()))?;
    let (keys, _) =
        keys::load_or_create(&config.data_dir, std::env::var(keys::MASTER_KEY_ENV).ok(), &OsRandom).context("loading the master key")?;
    let store = strongroom_store::open(&config.database_url).await.context("opening the store")?;
    let admin = Admin { store, clock: Arc::new(SystemClock), rng: Arc::new(OsRandom), keyring: KeyRing::new(&keys) };
    let mut out = std::io::stdout().lock();
    use std::io::Write as _;
    match command {
        AdminCommand::Users(UsersCommand::Create { name, master_admin }) => {
            let password = read_password("Password: ")?;
            let user = admin.create_user(&name, &password, master_admin).await?;
            writeln!(out, "created user {} ({})", user.name, user.id.identity())?;
        }
        AdminCommand::Users(UsersCommand::List) => {
            for u in admin.list_users().await? {
                let flags = [(u.disabled, "disabled"), (u.master_admin, "master-admin")]
                    .iter()
                    .filter(|(on, _)| *on)
                    .map(|(_, f)| *f)
                    .collect::<Vec<_>>()
                    .join(",");
                writeln!(out, "{}\t{}\t{}", u.name, u.id.identity(), flags)?;
            }
        }
        AdminCommand::Users(UsersCommand::Disable { name }) => {
            admin.set_user_disabled(&name, true).await?;
            writeln!(out, "disabled user {name}")?;
        }
        AdminCommand::Users(UsersCommand::Enable { name }) => {
            admin.set_user_disabled(&name, false).await?;
            writeln!(out, "enabled user {name}")?;
        }
        AdminCommand::Users(UsersCommand::SetPassword { name }) => {
            let password = read_password("New password: ")?;
            admin.set_password(&name, &password).await?;
            writeln!(out, "password changed for {name}")?;
        }
        AdminCommand::Integrations(IntegrationsCommand::Create { client_id, args }) => {
            let i = admin.create_integration(&client_id, args.spec(None)).await?;
            writeln!(out, "created integration {} ({}) with scope {}", i.client_id, i.name, i.max_scope)?;
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
            writeln!(out, "updated integration {} ({})", i.client_id, i.name)?;
        }
        AdminCommand::Integrations(IntegrationsCommand::List) => {
            let names = admin.user_names().await?;
            for i in admin.list_integrations().await? {
                let users = match &i.allowed_users {
                    AllowedUsers::Everyone => "everyone".to_owned(),
                    AllowedUsers::Only(ids) if ids.is_empty() => "nobody".to_owned(),
                    AllowedUsers::Only(ids) => {
                        ids.iter().map(|id| names.get(id.as_str()).cloned().unwrap_or_else(|| id.to_string())).collect::<Vec<_>>().join(",")
                    }
                };
                let s = i.settings(config.tokens);
                writeln!(
                    out,
                    "{}\t{}\tscope={}\tusers={}\tdevice={}\tpassword={}\taccess={}s\tgrant={}s\trefreshable={}{}",
                    i.client_id,
                    i.name,
                    i.max_scope,
                    users,
                    i.grant_types.device,
                    i.grant_types.password,
                    s.access_validity,
                    s.grant_validity,
                    s.refreshable,
                    if i.disabled { "\tDISABLED" } else { "" }
                )?;
            }
        }
        AdminCommand::Grants(GrantsCommand::List { all }) => {
            for g in admin.list_grants(all).await? {
                let state = match g.grant.revoked_at {
                    Some(t) => format!("revoked {}", time(t)),
                    None => format!("until {}", time(g.grant.refresh_until)),
                };
                writeln!(out, "{}\t{}\t{}\t{}\t{}", g.grant.id, g.grant.client_id, g.user_name, g.grant.scope, state)?;
            }
        }
        AdminCommand::Grants(GrantsCommand::Revoke { id }) => {
            admin.revoke_grant(&id).await?;
            writeln!(out, "revoked grant {id}")?;
        }
        AdminCommand::Events(EventsCommand::List { kind, after, limit }) => {
            let filter = EventFilter { kind, after_seq: after, limit: limit.clamp(1, 10_000), ..Default::default() };
            for e in admin.events(filter).await? {
                let ev = &e.event;
                writeln!(
                    out,
                    "{}\t{}\t{}\tidentity={}\tclient={}\tobject={}\tsource={}\t{}",
                    e.seq,
                    time(ev.at),
                    ev.kind,
                    ev.identity,
                    ev.client_id,
                    ev.object,
                    ev.source,
                    ev.detail
                )?;
            }
        }
        AdminCommand::Folders(FoldersCommand::Create { path }) => {
            let f = admin.create_folder(&path).await?;
            writeln!(out, "created folder {f}")?;
        }
        AdminCommand::Folders(FoldersCommand::List) => {
            for f in admin.folders().await? {
                writeln!(out, "{f}")?;
            }
        }
        AdminCommand::Rights(RightsCommand::Grant { folder, user, rights }) => {
            let r = Rights::parse(&rights)
                .filter(|r| *r != Rights::NONE)
                .context("rights are a comma-separated list of view, read, write, create, delete")?;
            admin.set_rights(&folder, &user, r).await?;
            writeln!(out, "{user} has {r} on {folder}")?;
        }
        AdminCommand::Rights(RightsCommand::Revoke { folder, user }) => {
            admin.set_rights(&folder, &user, Rights::NONE).await?;
            writeln!(out, "removed {user}'s rights on {folder}")?;
        }
        AdminCommand::Rights(RightsCommand::Show { folder, user }) => {
            let (r, master) = admin.effective_rights(&folder, &user).await?;
            writeln!(out, "{user} on {folder}: {r}{}", if master { " (Master Admin)" } else { "" })?;
        }
        AdminCommand::Rights(RightsCommand::List) => {
            for (f, u, r) in admin.all_rights().await? {
                writeln!(out, "{f}\t{u}\t{r}")?;
            }
        }
        AdminCommand::Keys(KeysCommand::List) => {
            for (id, created) in admin.data_keys().await? {
                writeln!(out, "{id}\t{}", time(created))?;
            }
        }
        AdminCommand::Keys(KeysCommand::Rotate) => {
            let (id, n) = admin.rotate_keys().await?;
            writeln!(out, "data key {id} is current; re-encrypted {n} values")?;
        }
        AdminCommand::Events(EventsCommand::Verify) => match admin.verify_events().await {
            Ok(n) => writeln!(out, "event log intact: {n} events")?,
            Err(e) => bail!("{e}"),
        },
    }
    Ok(())
}
