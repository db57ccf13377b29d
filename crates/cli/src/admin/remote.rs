//! `strongroom admin --server URL …`: the same commands over the API, with
//! the product's own calls (`strongroom_client::admin`), so that an
//! operator needs no database credentials or master key.
//!
//! The token is a login's (`strongroom login`, its cache refreshing by
//! itself) or one access token in a file (`--token-file`, which must be
//! private: 0600). Commands the API has no call for (keys, machines,
//! `init`, `backup`, …) stay on the store and say so, with exit status 2.

use clap::Args;
use std::path::PathBuf;

use strongroom_client::admin::{AdminApi, Bearer};
use strongroom_client::{ClientError, Server};
use strongroom_proto::SecretString;

use super::{AdminCommand, EventsCommand, Output, UsersCommand};
use crate::client::{self, Failure};

/// Where `admin` runs: on the store (no `--server`), or over the API.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct RemoteArgs {
    /// Run the command over the API of this server (https://host:port) instead of on
    /// the store: with the token of `strongroom login` (or --token-file).
    #[arg(long, env = "STRONGROOM_SERVER", global = true, value_name = "URL")]
    pub(crate) server: Option<String>,
    /// With --server: the API integration whose login's token is used (default: the last login's).
    /// (Its own id: a command's positional `CLIENT_ID`, as `integrations
    /// create`'s, would otherwise share clap's id `client_id` with it and
    /// fill this option instead.)
    #[arg(id = "remote_client_id", long = "client-id", env = "STRONGROOM_CLIENT_ID", global = true, value_name = "ID")]
    pub(crate) client_id: Option<String>,
    /// With --server: trust the CA certificate(s) in this PEM file for the connection (the
    /// server's TLS certificate: `serve`'s own is strongroom-data/tls/cert.pem). Only ever a
    /// trust file: a certificate policy's CA is `policy set --issuing-ca`.
    #[arg(long, env = "STRONGROOM_CA", global = true, conflicts_with = "pin", value_name = "FILE")]
    ca: Option<PathBuf>,
    /// With --server: trust exactly the server certificate with this SHA-256 fingerprint.
    #[arg(long, env = "STRONGROOM_PIN", global = true, value_name = "SHA256")]
    pin: Option<String>,
    /// With --server: an access token in this file (mode 0600), instead of a login's.
    #[arg(long, env = "STRONGROOM_TOKEN_FILE", global = true, value_name = "FILE")]
    token_file: Option<PathBuf>,
}

impl RemoteArgs {
    /// Whether `--ca` was typed on the command line (not only set by STRONGROOM_CA, which the
    /// client verbs share): on the store it is `policy set`'s old spelling of --issuing-ca.
    pub(crate) fn ca_on_command_line(&self) -> bool {
        self.ca.is_some() && std::env::args().any(|a| a == "--ca" || a.starts_with("--ca="))
    }

    /// The API client: a login's token source, or the token file's token.
    pub(crate) fn connect(&self) -> Result<AdminApi, Failure> {
        let server = self.server.as_deref().ok_or_else(|| Failure::new(2, "--server is required"))?;
        match &self.token_file {
            None => Ok(AdminApi::new(Bearer::Source(Box::new(client::source_for(
                server,
                self.client_id.clone(),
                self.ca.clone(),
                self.pin.clone(),
            )?)))),
            Some(file) => {
                let token = read_token_file(file)?;
                let trust = client::trust_for(server, self.ca.clone(), self.pin.clone())?;
                Ok(AdminApi::new(Bearer::Token(Server::new(server, &trust)?, token)))
            }
        }
    }
}

/// The access token in `file`: its first line, the file private to its owner.
fn read_token_file(file: &std::path::Path) -> Result<SecretString, Failure> {
    strongroom_keyring::keys::check_private(file).map_err(|e| Failure::new(8, format!("--token-file: {e}")))?;
    let text = std::fs::read_to_string(file).map_err(|e| Failure::new(8, format!("--token-file {}: {e}", file.display())))?;
    let token = text.lines().next().unwrap_or("").trim();
    if token.is_empty() {
        return Err(Failure::new(8, format!("--token-file {}: no token in it", file.display())));
    }
    Ok(SecretString(token.to_owned()))
}

/// The refusal of a command that works only on the store.
pub(crate) fn direct_only(what: &str) -> Failure {
    let from_env = std::env::var_os("STRONGROOM_SERVER").is_some();
    Failure::new(
        2,
        format!(
            "`admin {what}` works only on the store (directly: for bootstrap and recovery), not over the API; run it \
             without --server{} where the data directory (or database URL and master key) is",
            if from_env { " (unset STRONGROOM_SERVER)" } else { "" }
        ),
    )
}

/// The name of a command the API cannot run, or `None` when it can.
fn store_only(command: &AdminCommand) -> Option<&'static str> {
    Some(match command {
        AdminCommand::Init => "init",
        AdminCommand::Backup { .. } => "backup",
        AdminCommand::Restore { .. } => "restore",
        AdminCommand::Upgrade { .. } => "upgrade",
        AdminCommand::MigrateStore { .. } => "migrate-store",
        AdminCommand::Keys(_) => "keys",
        AdminCommand::JwtIssuers(_) => "jwt-issuers",
        AdminCommand::Mappings(_) => "mappings",
        AdminCommand::Events(EventsCommand::Verify(_)) => "events verify",
        AdminCommand::Events(EventsCommand::Archive(_)) => "events archive",
        AdminCommand::Users(UsersCommand::Disable { .. }) => "users disable",
        AdminCommand::Users(UsersCommand::Enable { .. }) => "users enable",
        AdminCommand::Users(UsersCommand::Unlock { .. }) => "users unlock",
        _ => return None,
    })
}

/// Runs `command` over the API of `--server`.
pub(crate) async fn run(remote: &RemoteArgs, command: AdminCommand, json: bool) -> Result<(), Failure> {
    if let Some(what) = store_only(&command) {
        return Err(direct_only(what));
    }
    // Refused before connecting (nothing to connect for), so no trust file is read: `policy
    // set --ca NAME`, the old spelling of --issuing-ca, gets this answer too.
    if let AdminCommand::Ca(_) | AdminCommand::Policy(_) | AdminCommand::Certificates(_) = &command {
        let what = match command {
            AdminCommand::Ca(_) => "ca",
            AdminCommand::Policy(_) => "policy",
            _ => "certificates",
        };
        return Err(Failure::from(not_over_api(what)));
    }
    let api = remote.connect()?;
    let out = Output { json };
    let target = super::Target::Server(api);
    let rendered = match command {
        AdminCommand::Events(EventsCommand::List(list)) if list.follow => {
            return super::events::follow(&target, list, json).await.map_err(Failure::from);
        }
        command => super::dispatch(&target, None, command).await.map_err(Failure::from)?,
    };
    out.print(&rendered)?;
    match rendered.failure {
        Some(f) => Err(Failure::new(1, f)),
        None => Ok(()),
    }
}

/// A command the API has no call for yet (the server side is not there):
/// exit status 2, as a command that works only on the store.
pub(crate) fn not_over_api(what: &str) -> anyhow::Error {
    anyhow::Error::new(Unavailable(what.to_owned()))
}

/// See [`not_over_api`].
#[derive(Debug)]
pub(crate) struct Unavailable(pub(crate) String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`admin {}` is not available over the API; run it on the store, without --server", self.0)
    }
}

impl std::error::Error for Unavailable {}

/// Whether `e` is a [`ClientError`] (for the exit code).
pub(crate) fn client_error(e: &anyhow::Error) -> Option<&ClientError> {
    e.chain().find_map(|c| c.downcast_ref::<ClientError>())
}
