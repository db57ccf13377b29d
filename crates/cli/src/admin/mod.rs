//! `strongroom admin ...`: one handler per command group (`users`,
//! `groups`, `integrations`, `grants`, `events`, `folders`, `rights`, `keys`,
//! `jwt-issuers`, `mappings`, and the
//! store's own: `init`, `backup`, `restore`, `migrate-store`). Each returns
//! what it has to say as a [`Rendered`]: its text for people and its JSON
//! for scripts; [`run`] prints one of them.
//!
//! One command tree, two places to run it ([`Target`]): on the store
//! (`Admin`, the default), or over the API with `--server` (`remote`: the
//! product's own calls through `strongroom_client::admin`). Each handler
//! gathers the facts from its target and renders them once, so a command
//! prints the same either way, as far as the API tells the same facts.
//!
//! Only `init` (and `restore` and `migrate-store`, which fill a new store)
//! creates a store: every other command opens one that exists
//! ([`open`]) and stops, naming where it looked, when there is none.

mod certs;
mod events;
mod folders;
mod grants;
mod groups;
mod integrations;
mod keys;
mod machines;
pub(crate) mod remote;
mod rights;
mod store;
mod users;

use anyhow::{Context as _, Result, bail};
use clap::Subcommand;
use std::io::Write as _;
use std::io::{BufRead as _, IsTerminal as _};
use std::sync::Arc;

use strongroom_app::admin::Admin;
use strongroom_app::{OsRandom, SystemClock};
use strongroom_core::secret::Secret;
use strongroom_core::time::{Clock as _, UnixTime};
use strongroom_keyring::KeyRing;
use strongroom_keyring::keys as master_key;
use strongroom_store::StoreError;

pub(crate) use certs::{CA_IS_A_TRUST_FILE, CaCommand, CertificatesCommand, FieldsCommand, PolicyCommand};
pub(crate) use events::EventsCommand;
pub(crate) use folders::FoldersCommand;
pub(crate) use grants::GrantsCommand;
pub(crate) use groups::GroupsCommand;
pub(crate) use integrations::IntegrationsCommand;
pub(crate) use keys::KeysCommand;
pub(crate) use machines::{JwtIssuersCommand, MappingsCommand};
pub(crate) use remote::RemoteArgs;
pub(crate) use rights::RightsCommand;
pub(crate) use users::UsersCommand;

use crate::ConfigArgs;

#[derive(Debug, Subcommand)]
pub(crate) enum AdminCommand {
    /// Create a new store: the data directory (0700), the master key (0600,
    /// unless STRONGROOM_MASTER_KEY gives it) and the database with its
    /// tables. On a store that exists it changes nothing and says so.
    ///
    /// `serve` does the same at its first start; the TLS certificate is made by `serve`.
    ///
    /// Example: strongroom admin --data-dir /var/lib/strongroom init
    Init,
    /// Snapshot the SQLite store into FILE while the server runs (with FILE.json: the event-chain head).
    ///
    /// Example: strongroom admin backup /backups/strongroom-$(date +%F).db
    Backup {
        file: std::path::PathBuf,
        /// Replace FILE (and FILE.json) if they exist; the new snapshot is
        /// written beside them and moved over them once complete.
        #[arg(long)]
        force: bool,
    },
    /// Restore a snapshot into an empty data directory, then verify the event chain.
    ///
    /// Example: strongroom admin --data-dir /var/lib/strongroom restore /backups/strongroom-2026-11-23.db
    Restore { file: std::path::PathBuf },
    /// Migrate the store to this binary's schema, after a backup (SQLite:
    /// into DATA_DIR/backups/; PostgreSQL: back it up with pg_dump first and
    /// give --no-backup). The other admin commands refuse a store at an older
    /// schema; `serve` migrates at start, saying from which schema to which.
    ///
    /// Example: strongroom admin --data-dir /var/lib/strongroom upgrade
    Upgrade {
        /// Migrate without making a backup first.
        #[arg(long)]
        no_backup: bool,
    },
    /// Local users (identities shown as local:{uuid}).
    #[command(subcommand)]
    Users(UsersCommand),
    /// Local groups: their members hold the rights granted to the group and
    /// its places on integrations, while they are members.
    #[command(subcommand)]
    Groups(GroupsCommand),
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
    /// Trusted JWT issuers for the JWT grant (Authorize/Jwt).
    #[command(subcommand)]
    JwtIssuers(JwtIssuersCommand),
    /// Mappings of JWT claims or client certificates to machine identities
    /// (jwt+MAPPING:SUBJECT, cert+MAPPING:NAME), which rights can be granted to like users.
    #[command(subcommand)]
    Mappings(MappingsCommand),
    /// Issuing CAs (\\VED\\Policy\\CA Templates\\NAME): their keys and certificates.
    #[command(subcommand)]
    Ca(CaCommand),
    /// Certificate policies of folders (the CA, key, domains, subject), inherited down the tree.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Custom fields of certificate objects (the product's metadata items): defined here, set by
    /// clients (Certificates/Request's CustomFields, vcert --field, Metadata/Set).
    #[command(subcommand)]
    Fields(FieldsCommand),
    /// Certificate requests waiting for approval (Manual Approval): list, approve, reject.
    #[command(subcommand)]
    Certificates(CertificatesCommand),
    /// Copy a whole store into an empty one of either backend (stop the servers first).
    ///
    /// Copies users, integrations, grants, tokens, device codes, folders, rights,
    /// data keys, vault entries and the event log with its chain, then checks row
    /// counts and the chain on the target. Refuses a target that holds anything,
    /// and a source that servers are using: a SQLite file a `serve` holds, or a
    /// PostgreSQL database with Strongroom connections open. A SQLite source is
    /// read from one snapshot (`VACUUM INTO`).
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

/// What a command has to say: text for people (a sentence, or aligned
/// tables) and one JSON document for scripts. A command that did its part
/// but not all of it (`keys move` leaving entries behind) says so in
/// `failure`: it is printed first, then the command exits non-zero.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    pub(crate) text: String,
    pub(crate) json: serde_json::Value,
    pub(crate) failure: Option<String>,
}

impl Rendered {
    /// The outcome of a command that changed something.
    pub(crate) fn done(text: impl Into<String>, json: serde_json::Value) -> Rendered {
        Rendered { text: text.into(), json, failure: None }
    }

    /// A listing: a table with a header, or when empty a line saying so
    /// (`none`: "no users"), and its JSON (an array of objects).
    pub(crate) fn table(headers: &[&str], rows: &[Vec<String>], none: &str, json: serde_json::Value) -> Rendered {
        let text = if rows.is_empty() { format!("{none}\n") } else { render_table(headers, rows) };
        Rendered { text, json, failure: None }
    }
}

/// Where admin commands print: aligned tables and sentences for people,
/// one JSON document for scripts (`--json`).
#[derive(Debug)]
pub(crate) struct Output {
    pub(crate) json: bool,
}

impl Output {
    pub(crate) fn print(&self, r: &Rendered) -> Result<()> {
        let mut out = std::io::stdout().lock();
        if self.json {
            writeln!(out, "{}", r.json)?;
        } else if !r.text.is_empty() {
            out.write_all(r.text.as_bytes())?;
            if !r.text.ends_with('\n') {
                writeln!(out)?;
            }
        }
        out.flush()?;
        Ok(())
    }
}

/// Where a command runs: on the store, or over a server's API.
pub(crate) enum Target {
    Store(Admin),
    Server(strongroom_client::admin::AdminApi),
}

pub(crate) async fn run(config: &strongroom_server::Config, args: &ConfigArgs, command: AdminCommand, json: bool) -> Result<()> {
    let out = Output { json };
    let rendered = match command {
        // The commands that make or fill a store, or touch none.
        AdminCommand::Init => store::init(config).await?,
        AdminCommand::Backup { file, force } => crate::backup::backup(config, &file, force)?,
        AdminCommand::Restore { file } => crate::backup::restore(config, &file).await?,
        AdminCommand::Upgrade { no_backup } => store::upgrade(config, args, no_backup).await?,
        AdminCommand::MigrateStore { from, to } => store::migrate_store(&from, &to, json).await?,
        AdminCommand::Keys(KeysCommand::Create { name }) => keys::create(config, &name).await?,
        // Everything else: on the store that exists.
        AdminCommand::Events(EventsCommand::List(list)) if list.follow => {
            let target = Target::Store(open(config, args).await?);
            return events::follow(&target, list, json).await;
        }
        command => {
            let target = Target::Store(open(config, args).await?);
            dispatch(&target, Some(config), command).await?
        }
    };
    out.print(&rendered)?;
    match rendered.failure {
        Some(f) => bail!("{f}"),
        None => Ok(()),
    }
}

/// Runs a command of one group on `target` (`config`: the store's, when on the store).
pub(crate) async fn dispatch(target: &Target, config: Option<&strongroom_server::Config>, command: AdminCommand) -> Result<Rendered> {
    let admin = match target {
        Target::Store(admin) => Some(admin),
        Target::Server(_) => None,
    };
    Ok(match (command, admin) {
        (AdminCommand::Users(c), _) => users::run(target, c).await?,
        (AdminCommand::Groups(c), _) => groups::run(target, c).await?,
        (AdminCommand::Integrations(c), _) => integrations::run(target, config, c).await?,
        (AdminCommand::Grants(c), _) => grants::run(target, c).await?,
        (AdminCommand::Events(c), _) => events::run(target, c).await?,
        (AdminCommand::Folders(c), _) => folders::run(target, c).await?,
        (AdminCommand::Rights(c), _) => rights::run(target, c).await?,
        (AdminCommand::Keys(c), Some(admin)) => keys::run(admin, c).await?,
        (AdminCommand::JwtIssuers(c), Some(admin)) => machines::issuers(admin, c).await?,
        (AdminCommand::Mappings(c), Some(admin)) => machines::mappings(admin, c).await?,
        (AdminCommand::Ca(c), Some(admin)) => certs::ca(admin, c).await?,
        (AdminCommand::Policy(c), Some(admin)) => certs::policy(admin, c).await?,
        (AdminCommand::Fields(c), Some(admin)) => certs::fields(admin, c).await?,
        (AdminCommand::Certificates(c), Some(admin)) => {
            let url = config.map(|c| c.public_url.as_str()).unwrap_or_default();
            certs::certificates(admin, url, c).await?
        }
        (AdminCommand::Certificates(_), None) => return Err(remote::not_over_api("certificates")),
        (AdminCommand::Keys(_), None) => return Err(remote::not_over_api("keys")),
        (AdminCommand::Ca(_), None) => return Err(remote::not_over_api("ca")),
        (AdminCommand::Policy(_), None) => return Err(remote::not_over_api("policy")),
        (AdminCommand::Fields(_), None) => return Err(remote::not_over_api("fields")),
        (AdminCommand::JwtIssuers(_), None) => return Err(remote::not_over_api("jwt-issuers")),
        (AdminCommand::Mappings(_), None) => return Err(remote::not_over_api("mappings")),
        (
            AdminCommand::Init
            | AdminCommand::Backup { .. }
            | AdminCommand::Restore { .. }
            | AdminCommand::Upgrade { .. }
            | AdminCommand::MigrateStore { .. },
            _,
        ) => Rendered::default(),
    })
}

/// Opens the store the configuration names, which must exist, with the
/// master key it was first opened with. Creates nothing: a missing store
/// or key is an error that says where it looked and how to look elsewhere.
async fn open(config: &strongroom_server::Config, args: &ConfigArgs) -> Result<Admin> {
    let store = match strongroom_store::open_existing(&config.database_url).await {
        Ok(store) => store,
        Err(StoreError::NoStore(what)) => bail!("{}", no_store(config, args, &what)),
        Err(StoreError::Schema { found, needed }) => bail!("{}", other_schema(found, needed)),
        Err(e) => return Err(e).context("opening the store"),
    };
    let (keys, source) = match master_key::load_existing(&config.data_dir, std::env::var(master_key::MASTER_KEY_ENV).ok()) {
        Ok(k) => k,
        Err(e @ master_key::KeyError::Missing { .. }) => bail!(
            "{e}: the store is there, but not its master key. Give the data directory that holds it ({}; from {}) with \
             --data-dir or --config, or the key in {}",
            shown(&config.data_dir),
            args.source_of("data_dir"),
            master_key::MASTER_KEY_ENV
        ),
        Err(e) => return Err(e).context("loading the master key"),
    };
    // Like `serve`: a key other than the store's would write hashes and seals no server can use.
    master_key::bind(&*store, &keys, &source, SystemClock.now()).await.context("master key")?;
    Ok(Admin {
        store,
        clock: Arc::new(SystemClock),
        rng: Arc::new(OsRandom),
        keyring: KeyRing::open(&keys, &config.keys, &OsRandom),
        actor: Default::default(),
        on_behalf_of: None,
    })
}

/// A path as people should see it: absolute.
pub(crate) fn shown(p: &std::path::Path) -> String {
    std::path::absolute(p).unwrap_or_else(|_| p.to_owned()).display().to_string()
}

/// The error of an `admin` command on a store that is not there.
/// Why the admin commands do not touch a store at another schema, and what to do.
pub(crate) fn other_schema(found: i64, needed: i64) -> String {
    if found < needed {
        format!(
            "the store is at schema {found} and this strongroom ({}) works on schema {needed}: nothing was changed. \
             Upgrade it with `strongroom admin upgrade` (it backs a SQLite store up first), or start the new \
             `strongroom serve`, which upgrades it at start",
            env!("CARGO_PKG_VERSION")
        )
    } else {
        format!(
            "the store is at schema {found}, newer than this strongroom's ({}, schema {needed}): a newer strongroom \
             upgraded it. Use that version; nothing was changed",
            env!("CARGO_PKG_VERSION")
        )
    }
}

pub(crate) fn no_store(config: &strongroom_server::Config, args: &ConfigArgs, what: &str) -> String {
    let db = match strongroom_store::sqlite_path(&config.database_url) {
        Ok(Some(path)) => format!("the database {}", shown(path)),
        _ => "the PostgreSQL database of database_url".to_owned(),
    };
    format!(
        "no Strongroom store here ({what}); nothing was created.\n\
         Looked for {db}, in the data directory {} (data directory from {}, database from {}).\n\
         Point at the server's store with --data-dir DIR or --config FILE (or STRONGROOM_DATA_DIR, \
         STRONGROOM_DATABASE_URL, STRONGROOM_CONFIG), as the server is given them; or create a new store here with \
         `strongroom admin init` (`strongroom serve` creates one at its first start).",
        shown(&config.data_dir),
        args.source_of("data_dir"),
        args.source_of("database_url"),
    )
}

pub(crate) fn read_password(prompt: &str) -> Result<Secret> {
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

pub(crate) fn time(t: UnixTime) -> String {
    t.iso8601()
}

pub(crate) fn yes(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

/// `n thing` or `n things`.
pub(crate) fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(crate) use strongroom_core::hex::encode as hex;

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
