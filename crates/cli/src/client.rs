//! The client verbs: `login`, `logout`, `status`, `vault …`.
//!
//! Where to connect comes from flags, else `STRONGROOM_*` variables, else the
//! profile the last `login` saved. Output is for people by default and JSON
//! with `--json`. Exit codes are listed in `--help` and in [`exit_code`].

use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use strongroom_app::SystemClock;
use strongroom_client::cache::{TokenCache, config_dir, write_private};
use strongroom_client::credentials::{self, Credentials};
use strongroom_client::device::{DeviceLogin, TokioSleeper};
use strongroom_client::source::TokenSource;
use strongroom_client::tls::Trust;
use strongroom_client::vault::{AssociationValue as Value, Vault};
use strongroom_client::{ClientError, Server};
use strongroom_proto::time::{Clock as _, UnixTime, parse_date};

pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  other error
  2  bad command line
  3  not logged in, or the grant ended or was revoked: run `strongroom login`
  4  the server cannot be reached, its answer was cut off, or it speaks
     another protocol (an http:// URL for a TLS port, or https:// for plain HTTP)
  5  TLS failed (use --ca or --pin for a self-signed server)
  6  the server failed or answered something unexpected
  7  the vault refused the call (the message gives the Result code)
  8  the local token cache or profile is unusable (the message says why)
  9  the login was denied, expired or cancelled
 10  the server refused the request (scope, client id, ...)
With `admin --server`, 7 is also an administrative call the server refused
(the message gives its Result code or HTTP status), and 2 a command that
works only on the store.";

/// Where to connect.
#[derive(Debug, Args, Clone)]
pub(crate) struct Target {
    /// Server base URL, e.g. https://vault.example.com:8443.
    #[arg(long, env = "STRONGROOM_SERVER", global = true)]
    server: Option<String>,
    /// The API integration's Client ID.
    #[arg(long, env = "STRONGROOM_CLIENT_ID", global = true)]
    client_id: Option<String>,
    /// Trust the CA certificate(s) in this PEM file (e.g. the server's self-signed cert.pem).
    #[arg(long, env = "STRONGROOM_CA", global = true, conflicts_with = "pin")]
    ca: Option<PathBuf>,
    /// Trust exactly the server certificate with this SHA-256 fingerprint.
    #[arg(long, env = "STRONGROOM_PIN", global = true)]
    pin: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum VaultCommand {
    /// Store a secret: the data comes from --data, --file or standard input.
    Add {
        /// Owner folder, e.g. '\VED\Policy\Team A'.
        #[arg(long)]
        owner: String,
        #[arg(long = "type", default_value_t = 32)]
        vault_type: i32,
        #[arg(long, default_value = "Software:Default")]
        keyname: String,
        /// The secret as text.
        #[arg(long, conflicts_with = "file")]
        data: Option<String>,
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Read a secret (Master Admin): raw bytes to --out, else text to standard output.
    Retrieve {
        id: i64,
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Attach a named value: one of --string, --int, --date (YYYY-MM-DDTHH:MM:SS.fffffffZ).
    Associate {
        id: i64,
        name: String,
        #[command(flatten)]
        value: ValueArgs,
    },
    /// Remove associations: all, one name's, or one name's given value.
    Dissociate {
        id: i64,
        name: Option<String>,
        #[command(flatten)]
        value: ValueArgs,
    },
    /// Find entries by association name, and value if given.
    Lookup {
        name: String,
        #[command(flatten)]
        value: ValueArgs,
    },
    /// One association's value, or all of them without a name.
    Get { id: i64, name: Option<String> },
    /// List entries you may read.
    List,
    /// Owners of an entry (Master Admin); --add or --remove an owner.
    Owners {
        id: i64,
        #[arg(long, conflicts_with = "remove")]
        add: Option<String>,
        #[arg(long)]
        remove: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum CredentialCommand {
    /// Read a credential (Read on it is enough): every value, or --value NAME's alone.
    Get {
        /// The credential's DN, e.g. '\VED\Policy\Team A\db'.
        dn: String,
        /// Print only this value (e.g. Password), as it is.
        #[arg(long)]
        value: Option<String>,
    },
    /// Store a credential: update it, or create it when there is none.
    ///
    /// Values come from --value NAME=TEXT, and one from standard input with
    /// --stdin NAME (so a password need not be on the command line). The
    /// class is --class; else an existing credential keeps its own, and a new
    /// one is UsernamePassword with a Username, else Password.
    Set {
        dn: String,
        /// UsernamePassword, Password, Generic or Certificate.
        #[arg(long)]
        class: Option<String>,
        /// NAME=TEXT (repeat), e.g. --value Username=svc.
        #[arg(long = "value", value_name = "NAME=TEXT")]
        values: Vec<String>,
        /// Read the value NAME from standard input (one line, or all of it).
        #[arg(long = "stdin", value_name = "NAME")]
        stdin: Option<String>,
    },
    /// The credentials in a folder you may see.
    List {
        folder: String,
        #[arg(long)]
        recursive: bool,
    },
}

#[derive(Debug, Args, Clone)]
pub(crate) struct ValueArgs {
    #[arg(long, conflicts_with_all = ["int", "date"])]
    string: Option<String>,
    #[arg(long, conflicts_with = "date", allow_hyphen_values = true)]
    int: Option<i64>,
    #[arg(long)]
    date: Option<String>,
}

impl ValueArgs {
    fn value(&self) -> Result<Option<Value>, Failure> {
        if let Some(s) = &self.string {
            return Ok(Some(Value::String(s.clone().into())));
        }
        if let Some(i) = self.int {
            return Ok(Some(Value::Int(i)));
        }
        match &self.date {
            Some(d) => parse_date(d)
                .map(|t| Some(Value::Date(t)))
                .ok_or_else(|| Failure::usage("--date must be YYYY-MM-DDTHH:MM:SS[.fffffff]Z (UTC)")),
            None => Ok(None),
        }
    }
}

/// The profile `login` saves: where to connect next time, and who logged
/// in. Not secret.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Profile {
    server: String,
    client_id: String,
    /// A CA file is kept as an absolute path.
    #[serde(default)]
    trust: Trust,
    /// The identity of the last login and its user name, as the server's
    /// `Authorize/Verify` said (servers before the name was added say none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    user: Option<LoggedIn>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct LoggedIn {
    identity: String,
    name: String,
}

/// `local:{…} (alice)`, or the identity alone when the name is unknown.
fn who(identity: &str, name: Option<&str>) -> String {
    match name {
        Some(n) => format!("{identity} ({n})"),
        None => identity.to_owned(),
    }
}

/// A failure with its exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
    /// Standard output was closed by its reader (`… | head`): not a failure
    /// of the command, which exits quietly with 0.
    pub(crate) broken_pipe: bool,
}

impl Failure {
    pub(crate) fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure { code, message: message.into(), broken_pipe: false }
    }

    fn usage(m: &str) -> Failure {
        Failure::new(2, m)
    }
}

/// Whether `e` or one of its causes is a write to a closed pipe.
fn is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) {
            return true;
        }
        cause = c.source();
    }
    false
}

/// The exit code for a client error.
pub(crate) fn exit_code(e: &ClientError) -> u8 {
    match e {
        ClientError::LoginRequired(_) | ClientError::Unauthorized => 3,
        ClientError::Unreachable(_) | ClientError::WrongProtocol(_) => 4,
        ClientError::Tls(_) => 5,
        ClientError::ServerError { .. } | ClientError::BadResponse(_) => 6,
        ClientError::Vault { .. } | ClientError::Refused { .. } => 7,
        ClientError::Cache { .. } | ClientError::Config(_) => 8,
        ClientError::AccessDenied | ClientError::LoginExpired | ClientError::Cancelled => 9,
        ClientError::Auth { .. } | ClientError::Forbidden(_) => 10,
        _ => 1,
    }
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        Failure::new(exit_code(&e), e.to_string())
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        let broken_pipe = e.chain().any(is_broken_pipe);
        // An `admin --server` call's failure keeps the client's exit code;
        // a command the API cannot run is a usage error (2).
        let code = match crate::admin::remote::client_error(&e) {
            Some(c) => exit_code(c),
            None if e.chain().any(|c| c.is::<crate::admin::remote::Unavailable>()) => 2,
            None => 1,
        };
        Failure { broken_pipe, ..Failure::new(code, chain_text(&e)) }
    }
}

/// An error and its causes, outermost first, joined by ": ". A cause whose
/// text is already there is left out: library errors say "opening the store:
/// {source}" and also name that source as their cause, which `{e:#}` would
/// print twice.
fn chain_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure { broken_pipe: e.kind() == std::io::ErrorKind::BrokenPipe, ..Failure::new(1, e.to_string()) }
    }
}

fn profile_path() -> Result<PathBuf, Failure> {
    Ok(config_dir()?.join("profile.json"))
}

impl Target {
    fn trust(&self) -> Option<Trust> {
        match (&self.ca, &self.pin) {
            // Absolute, so that the saved profile works from any directory.
            (Some(ca), _) => Some(Trust::CaFile(std::path::absolute(ca).unwrap_or_else(|_| ca.clone()))),
            (None, Some(pin)) => Some(Trust::Pin(pin.clone())),
            (None, None) => None,
        }
    }

    /// Flags and variables first, then the saved profile.
    fn resolve(&self) -> Result<Profile, Failure> {
        let saved: Option<Profile> = match std::fs::read(profile_path()?) {
            Ok(b) => Some(serde_json::from_slice(&b).map_err(|_| Failure::new(8, "the saved profile is corrupt; log in again"))?),
            Err(_) => None,
        };
        let server = self.server.clone().or_else(|| saved.as_ref().map(|p| p.server.clone()));
        let client_id = self.client_id.clone().or_else(|| saved.as_ref().map(|p| p.client_id.clone()));
        match (server, client_id) {
            (Some(server), Some(client_id)) => {
                let same = saved.filter(|p| p.server == server);
                let trust = self.trust().or_else(|| same.as_ref().map(|p| p.trust.clone())).unwrap_or_default();
                let user = same.filter(|p| p.client_id == client_id).and_then(|p| p.user);
                Ok(Profile { server, client_id, trust, user })
            }
            (Some(server), None) => Err(Failure::new(
                2,
                format!("no client id for {server}: name the API integration with --client-id ID (or STRONGROOM_CLIENT_ID)"),
            )),
            (None, Some(_)) => Err(Failure::new(2, "no server: give its URL with --server URL (or STRONGROOM_SERVER)")),
            (None, None) => Err(Failure::new(3, "not logged in: run `strongroom login --server URL --client-id ID`")),
        }
    }
}

/// The token source of `admin --server`: the client id and trust given,
/// else the saved profile's (its trust only for the same server).
pub(crate) fn source_for(
    server: &str,
    client_id: Option<String>,
    ca: Option<PathBuf>,
    pin: Option<String>,
) -> Result<TokenSource, Failure> {
    let target = Target { server: Some(server.to_owned()), client_id, ca, pin, json: false };
    source(&target.resolve()?)
}

/// The TLS trust for `server`: `--ca` or `--pin`, else the saved
/// profile's for the same server, else the web PKI.
pub(crate) fn trust_for(server: &str, ca: Option<PathBuf>, pin: Option<String>) -> Result<Trust, Failure> {
    let target = Target { server: Some(server.to_owned()), client_id: None, ca, pin, json: false };
    if let Some(t) = target.trust() {
        return Ok(t);
    }
    let saved: Option<Profile> = std::fs::read(profile_path()?).ok().and_then(|b| serde_json::from_slice(&b).ok());
    Ok(saved.filter(|p| p.server == server).map(|p| p.trust).unwrap_or_default())
}

fn source(p: &Profile) -> Result<TokenSource, Failure> {
    let server = Server::new(&p.server, &p.trust)?;
    let cache = TokenCache::new(&config_dir()?, server.base(), &p.client_id);
    Ok(TokenSource::new(server, &p.client_id, cache, Arc::new(SystemClock)))
}

fn print(json_out: bool, human: &str, value: serde_json::Value) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    if json_out {
        writeln!(out, "{value}")?;
    } else if !human.is_empty() {
        writeln!(out, "{human}")?;
    }
    Ok(())
}

fn when(secs: i64) -> String {
    UnixTime::from_secs(secs).iso8601()
}

/// Opens `url` in a browser when there is a desktop to show it on.
fn open_browser(url: &str) -> bool {
    let has_display = std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    if !has_display && !cfg!(target_os = "macos") {
        return false;
    }
    std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}

pub(crate) async fn login(target: &Target, scope: &str, no_browser: bool) -> Result<(), Failure> {
    let profile = match (&target.server, &target.client_id) {
        (Some(server), Some(client_id)) => {
            Profile { server: server.clone(), client_id: client_id.clone(), trust: target.trust().unwrap_or_default(), user: None }
        }
        _ => target.resolve()?,
    };
    let src = source(&profile)?;
    let login = DeviceLogin::start(src.server(), &profile.client_id, scope, SystemClock.now()).await?;
    {
        let mut err = std::io::stderr().lock();
        writeln!(err, "To sign in, open {}", login.verification_uri_complete())?;
        writeln!(err, "and check that the page shows the code {}", login.user_code())?;
        if !no_browser && open_browser(login.verification_uri_complete()) {
            writeln!(err, "(opened in your browser)")?;
        }
        writeln!(err, "Waiting for approval… (Ctrl-C to cancel)")?;
    }
    let cancel = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let tokens = login.wait(&SystemClock, &TokioSleeper, cancel).await?;
    src.save_login(tokens.clone()).await?;
    // The user name behind the identity: Verify says it (a server that
    // does not, or a failure here, leaves the identity alone shown).
    let name = match src.verify().await {
        Ok(v) => v["username"].as_str().filter(|_| v["identity"] == tokens.identity.as_str()).map(str::to_owned),
        Err(_) => None,
    };
    let mut profile = profile;
    profile.user = name.clone().map(|name| LoggedIn { identity: tokens.identity.clone(), name });
    let dir = config_dir()?;
    std::fs::create_dir_all(&dir)?;
    let bytes = serde_json::to_vec_pretty(&profile).map_err(|e| Failure::new(1, e.to_string()))?;
    let tmp = dir.join("profile.json.tmp");
    write_private(&tmp, &bytes)?;
    std::fs::rename(&tmp, dir.join("profile.json"))?;
    print(
        target.json,
        &format!(
            "Logged in to {} as {} with scope {}; the grant lasts until {}.",
            profile.server,
            who(&tokens.identity, name.as_deref()),
            tokens.scope,
            when(tokens.refresh_until)
        ),
        json!({"server": profile.server, "client_id": profile.client_id, "identity": tokens.identity, "user": name,
               "scope": tokens.scope, "expires": tokens.expires, "refresh_until": tokens.refresh_until}),
    )
}

pub(crate) async fn logout(target: &Target) -> Result<(), Failure> {
    let profile = target.resolve()?;
    let revoked = source(&profile)?.logout().await?;
    print(
        target.json,
        if revoked {
            "Logged out: the grant is revoked and the cached tokens deleted."
        } else {
            "Logged out: the cached tokens are deleted."
        },
        json!({"revoked": revoked}),
    )
}

pub(crate) async fn status(target: &Target) -> Result<(), Failure> {
    let profile = target.resolve()?;
    let src = source(&profile)?;
    let Some(t) = src.current().await? else {
        return Err(ClientError::LoginRequired("no cached tokens".into()).into());
    };
    let now = SystemClock.now();
    if t.grant_ended(now) {
        return Err(ClientError::LoginRequired("the grant has ended".into()).into());
    }
    let name = profile.user.as_ref().filter(|u| u.identity == t.identity).map(|u| u.name.clone());
    print(
        target.json,
        &format!(
            "Server:   {}\nClient:   {}\nIdentity: {}\nScope:    {}\nAccess token expires: {}{}\nGrant ends:           {}",
            profile.server,
            profile.client_id,
            who(&t.identity, name.as_deref()),
            t.scope,
            when(t.expires),
            if t.needs_refresh(now) { " (will be refreshed on next use)" } else { "" },
            when(t.refresh_until)
        ),
        json!({"server": profile.server, "client_id": profile.client_id, "identity": t.identity, "user": name, "scope": t.scope,
               "expires": t.expires, "refresh_until": t.refresh_until, "cache": src.cache().path()}),
    )
}

/// The values `credential set` stores: `--value NAME=TEXT`s, then `--stdin NAME`.
fn credential_values(values: Vec<String>, stdin: Option<String>) -> Result<Vec<strongroom_proto::credentials::NameTypeValue>, Failure> {
    let mut out = Vec::new();
    for v in values {
        let Some((name, text)) = v.split_once('=') else {
            return Err(Failure::usage("--value takes NAME=TEXT"));
        };
        out.push(credentials::value(name, text.to_owned()));
    }
    if let Some(name) = stdin {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)?;
        let text = text.strip_suffix('\n').map(|t| t.strip_suffix('\r').unwrap_or(t)).unwrap_or(&text).to_owned();
        out.push(credentials::value(&name, text));
    }
    if out.is_empty() {
        return Err(Failure::usage("give the values with --value NAME=TEXT or --stdin NAME"));
    }
    Ok(out)
}

pub(crate) async fn credential(target: &Target, cmd: CredentialCommand) -> Result<(), Failure> {
    let profile = target.resolve()?;
    let src = source(&profile)?;
    let c = Credentials::new(&src);
    let j = target.json;
    match cmd {
        CredentialCommand::Get { dn, value: Some(name) } => {
            let r = c.retrieve(&dn).await?;
            let Some(v) = r.values.iter().find(|v| v.name.eq_ignore_ascii_case(&name)) else {
                return Err(Failure::new(7, format!("the credential has no value named {name:?}")));
            };
            print(j, v.value.expose(), json!({"Name": v.name, "Type": v.value_type, "Value": v.value.expose()}))
        }
        CredentialCommand::Get { dn, value: None } => {
            let r = c.retrieve(&dn).await?;
            let human = std::iter::once(format!("{} ({})", dn, r.classname))
                .chain(r.values.iter().map(|v| format!("{}\t{}", v.name, v.value.expose())))
                .collect::<Vec<_>>()
                .join("\n");
            let values: Vec<_> =
                r.values.iter().map(|v| json!({"Name": v.name, "Type": v.value_type, "Value": v.value.expose()})).collect();
            print(
                j,
                &human,
                json!({"CredentialPath": dn, "Classname": r.classname, "FriendlyName": r.friendly_name, "Description": r.description,
                    "Expiration": r.expiration, "Values": values}),
            )
        }
        CredentialCommand::Set { dn, class, values, stdin } => {
            let values = credential_values(values, stdin)?;
            let guess = if values.iter().any(|v| v.name.eq_ignore_ascii_case("Username")) { "UsernamePassword" } else { "Password" };
            let created = c.set(&dn, class.as_deref(), guess, values).await?;
            let what = if created { "created" } else { "updated" };
            print(j, &format!("{what} {dn}"), json!({"CredentialPath": dn, "created": created}))
        }
        CredentialCommand::List { folder, recursive } => {
            let found = c.enumerate(&folder, recursive).await?;
            let human = found.iter().map(|i| format!("{}\t{}", i.full_name, i.class_name)).collect::<Vec<_>>().join("\n");
            let list: Vec<_> = found.iter().map(|i| json!({"FullName": i.full_name, "ClassName": i.class_name})).collect();
            print(j, &human, json!({"CredentialInfos": list}))
        }
    }
}

pub(crate) async fn vault(target: &Target, cmd: VaultCommand) -> Result<(), Failure> {
    let profile = target.resolve()?;
    let src = source(&profile)?;
    let v = Vault::new(&src);
    let j = target.json;
    match cmd {
        VaultCommand::Add { owner, vault_type, keyname, data, file } => {
            let bytes = match (data, file) {
                (Some(d), _) => d.into_bytes(),
                (None, Some(f)) => std::fs::read(f)?,
                (None, None) => {
                    let mut b = Vec::new();
                    std::io::Read::read_to_end(&mut std::io::stdin(), &mut b)?;
                    b
                }
            };
            let id = v.add(&owner, vault_type, &keyname, &bytes).await?;
            print(j, &format!("VaultID {id}"), json!({"VaultID": id}))
        }
        VaultCommand::Retrieve { id, out } => {
            let (data, vault_type) = v.retrieve(id).await?;
            if let Some(path) = out {
                write_private(&path, &data)?;
                return print(
                    j,
                    &format!("wrote {} bytes to {}", data.len(), path.display()),
                    json!({"VaultType": vault_type, "bytes": data.len()}),
                );
            }
            use base64::Engine as _;
            let b64 = base64::engine::general_purpose::STANDARD.encode(&data);
            let text = String::from_utf8(data).unwrap_or_else(|_| b64.clone());
            print(j, &text, json!({"VaultType": vault_type, "Base64Data": b64}))
        }
        VaultCommand::Associate { id, name, value } => {
            let val = value.value()?.ok_or_else(|| Failure::usage("give one of --string, --int, --date"))?;
            v.associate(id, &name, &val).await?;
            print(j, "associated", json!({"Result": 0}))
        }
        VaultCommand::Dissociate { id, name, value } => {
            let val = value.value()?;
            v.dissociate(id, name.as_deref(), val.as_ref()).await?;
            print(j, "dissociated", json!({"Result": 0}))
        }
        VaultCommand::Lookup { name, value } => {
            let ids = v.lookup_by_association(&name, value.value()?.as_ref()).await?;
            print(j, &ids.iter().map(i64::to_string).collect::<Vec<_>>().join("\n"), json!({"VaultIDs": ids}))
        }
        VaultCommand::Get { id, name: Some(name) } => {
            let value = v.lookup_association(id, &name).await?;
            print(j, &value, json!({"Name": name, "Value": value}))
        }
        VaultCommand::Get { id, name: None } => {
            let all = v.all_associations(id).await?;
            let human = all.iter().map(|(n, t, val)| format!("{n}\t{t}\t{val}")).collect::<Vec<_>>().join("\n");
            let list: Vec<_> = all.iter().map(|(n, t, val)| json!({"Name": n, "Type": t, "Value": val})).collect();
            print(j, &human, json!({"TypedNameValues": list}))
        }
        VaultCommand::List => {
            let ids = v.lookup().await?;
            print(j, &ids.iter().map(i64::to_string).collect::<Vec<_>>().join("\n"), json!({"VaultIDs": ids}))
        }
        VaultCommand::Owners { id, add, remove } => {
            if let Some(o) = add {
                v.owner_add(id, &o).await?;
            }
            if let Some(o) = remove {
                v.owner_delete(&o, Some(id)).await?;
                return print(j, "owner removed", json!({"Result": 0}));
            }
            let owners = v.owners(id).await?;
            print(j, &owners.join("\n"), json!({"Owners": owners}))
        }
    }
}

#[cfg(test)]
mod failure_tests {
    use super::*;

    #[derive(Debug)]
    struct Broken;
    impl std::fmt::Display for Broken {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("event 1: hash does not match")
        }
    }
    impl std::error::Error for Broken {}

    /// Like a `thiserror` variant `#[error("…: {0}")] Chain(#[from] Broken)`.
    #[derive(Debug)]
    struct Outer(Broken);
    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "the event log is broken: {}", self.0)
        }
    }
    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_the_message_already_shows_is_said_once() {
        let e = anyhow::Error::from(Outer(Broken)).context("restore failed");
        assert_eq!(Failure::from(e).message, "restore failed: the event log is broken: event 1: hash does not match");
        let plain = anyhow::Error::from(Broken).context("verifying");
        assert_eq!(Failure::from(plain).message, "verifying: event 1: hash does not match");
    }
}
