//! `strongroom`: the server, its administration, and the client verbs.
//!
//! The one binary. `anyhow` lives here only; the libraries return typed errors.
//! `serve` and the command line are here (its settings layered by the
//! server's `config::SETTINGS`); `admin …` is `admin`, one handler per
//! command group (tables, or JSON with `--json`), and `backup` (`admin
//! backup`, `admin restore`); `config check`, `config example`, `health`, `completions` and
//! `man` are `ops`; the client verbs
//! (`login`, `logout`, `status`, `vault …`) are `client`, which owns the exit
//! codes.
#![forbid(unsafe_code)]

mod admin;
mod backup;
mod client;
mod ops;

use anyhow::{Context as _, Result};
use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;

use strongroom_server::config::{Kind, RawConfig, SETTINGS};

/// A self-hosted token authority and secret vault.
#[derive(Debug, Parser)]
#[command(name = "strongroom", version, about, long_about = None, after_help = client::EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server.
    ///
    /// With no options: data in ./strongroom-data (created on first start),
    /// HTTPS on 127.0.0.1:8443 with a self-signed certificate made on first start.
    /// SIGHUP reloads the TLS certificate and key; SIGTERM or Ctrl-C stops it.
    Serve(ConfigArgs),
    /// Administer users, API integrations, grants and the event log, directly
    /// on the store (also while the server runs), or with --server URL over
    /// the API (the token of `strongroom login`, or --token-file).
    ///
    /// Every command but `init`, `restore` and `migrate-store` works on a store
    /// that exists already: one `strongroom serve` or `admin init` made. On a
    /// data directory without one it stops, naming where it looked, and
    /// creates nothing.
    Admin {
        #[command(flatten)]
        config: ConfigArgs,
        /// Print JSON (one document) instead of tables, for scripts.
        #[arg(long, global = true)]
        json: bool,
        #[command(flatten)]
        remote: admin::RemoteArgs,
        #[command(subcommand)]
        command: admin::AdminCommand,
    },
    /// Check a configuration and print the effective settings (secrets masked).
    ///
    /// Example: strongroom config check --config /etc/strongroom/strongroom.toml
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Probe the configured listener's GET /health/ready: exit 0 when the server is ready.
    ///
    /// For container health checks and scripts. TLS certificates are not
    /// checked (the probe sends nothing secret).
    ///
    /// Example: strongroom health --config /etc/strongroom/strongroom.toml
    Health {
        #[command(flatten)]
        config: ConfigArgs,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 5, value_name = "SECONDS")]
        timeout: u64,
    },
    /// Print a shell completion script.
    ///
    /// Example: strongroom completions bash > /etc/bash_completion.d/strongroom
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write every page into a directory.
    ///
    /// With --out-dir: strongroom.1, one page per command (strongroom-admin.1,
    /// …) and strongroom.toml.5, the configuration file.
    ///
    /// Example: strongroom man | man -l -
    Man {
        /// Write strongroom.1, strongroom-admin.1, ..., strongroom.toml.5 into this directory.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
        /// Print strongroom.toml(5), the configuration file's page, instead of strongroom(1).
        #[arg(long, conflicts_with = "out_dir")]
        config: bool,
    },
    /// Log in through the device flow: approve in a browser, tokens are cached.
    ///
    /// Example: strongroom login --server https://localhost:8443 --client-id my-app \
    ///   --ca strongroom-data/tls/cert.pem --scope 'restricted:manage'
    #[command(after_help = client::EXIT_CODES)]
    Login {
        #[command(flatten)]
        target: client::Target,
        /// The scope to ask for.
        #[arg(long, default_value = "restricted:manage")]
        scope: String,
        /// Only print the link and code, do not open a browser.
        #[arg(long)]
        no_browser: bool,
    },
    /// Revoke the grant on the server and delete the cached tokens.
    #[command(after_help = client::EXIT_CODES)]
    Logout {
        #[command(flatten)]
        target: client::Target,
    },
    /// Who you are logged in as, the scope and when things expire (never the token).
    #[command(after_help = client::EXIT_CODES)]
    Status {
        #[command(flatten)]
        target: client::Target,
    },
    /// Vault entries: add, retrieve, associate, dissociate, lookup, owners.
    ///
    /// Example: strongroom vault associate 12 Purpose --string "Access to endpoint"
    #[command(after_help = client::EXIT_CODES)]
    Vault {
        #[command(flatten)]
        target: client::Target,
        #[command(subcommand)]
        command: client::VaultCommand,
    },
    /// Credential objects: read one back with Read on it, store one, list a folder's.
    ///
    /// Example: printf '%s' "$PW" | strongroom credential set '\VED\Policy\Team A\db' --value Username=svc --stdin Password
    #[command(after_help = client::EXIT_CODES)]
    Credential {
        #[command(flatten)]
        target: client::Target,
        #[command(subcommand)]
        command: client::CredentialCommand,
    },
    /// Print the OpenAPI 3.1 description of the HTTP interface (what
    /// `GET /openapi.json` serves; the repository's openapi.json).
    Openapi,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Validate the configuration (file, STRONGROOM_* variables, flags) and
    /// check what `serve` checks at start: the master key, the TLS files,
    /// every configured vault key (PKCS#11 modules, tokens, key labels,
    /// PINs), the log settings; with --online the database too. Prints the
    /// effective settings, then every problem; exits non-zero if there is one.
    Check {
        #[command(flatten)]
        config: ConfigArgs,
        /// Print JSON instead of a list.
        #[arg(long)]
        json: bool,
        /// Also connect to the database and say what is there (nothing is changed).
        #[arg(long)]
        online: bool,
    },
    /// Print a strongroom.toml made from the settings table: every setting
    /// commented out, with what it does, its default, its variable and its
    /// flag (the Debian package's /etc/strongroom/strongroom.toml is one).
    ///
    /// Example: strongroom config example --set data_dir=/var/lib/strongroom > strongroom.toml
    Example {
        /// Write this setting in force (its TOML key, e.g. tokens.access_validity=600); repeatable.
        #[arg(long, value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
}

/// Where the configuration comes from: the TOML file (`--config FILE` or
/// `STRONGROOM_CONFIG`), the `STRONGROOM_*` variables and the flags, each
/// overriding the one before. The flags are those rows of
/// [`strongroom_server::config::SETTINGS`] that have one: a new setting is
/// added there, not here.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConfigArgs {
    pub(crate) config: Option<PathBuf>,
    /// (TOML key, text) of every setting flag given.
    flags: Vec<(&'static str, String)>,
}

impl FromArgMatches for ConfigArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut args = ConfigArgs::default();
        args.update_from_arg_matches(m)?;
        Ok(args)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        if let Some(p) = m.get_one::<PathBuf>("config") {
            self.config = Some(p.clone());
        }
        for s in SETTINGS.iter().filter(|s| s.flag.is_some()) {
            let given =
                if s.kind == Kind::Bool { m.get_flag(s.key).then(|| "true".to_owned()) } else { m.get_one::<String>(s.key).cloned() };
            if let Some(v) = given {
                self.flags.retain(|(k, _)| *k != s.key);
                self.flags.push((s.key, v));
            }
        }
        Ok(())
    }
}

impl Args for ConfigArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let mut cmd = cmd.arg(
            Arg::new("config")
                .long("config")
                .env("STRONGROOM_CONFIG")
                .global(true)
                .value_name("FILE")
                .value_parser(clap::value_parser!(PathBuf))
                .help("TOML configuration file (see strongroom.toml(5): `strongroom man --config`)."),
        );
        for s in SETTINGS {
            let Some(flag) = s.flag else { continue };
            let help = match s.env {
                Some(var) => format!("{} [env: {var}] [default: {}]", s.help, s.default),
                None => s.help.to_owned(),
            };
            let arg = Arg::new(s.key).long(flag.long).global(flag.global).help(help);
            cmd = cmd.arg(if s.kind == Kind::Bool { arg.action(ArgAction::SetTrue) } else { arg.value_name(flag.value_name) });
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl ConfigArgs {
    fn load(&self) -> Result<strongroom_server::Config> {
        self.load_with(|k| std::env::var(k).ok())
    }

    /// [`ConfigArgs::load`] with the environment as a lookup function.
    fn load_with(&self, env: impl Fn(&str) -> Option<String>) -> Result<strongroom_server::Config> {
        Ok(RawConfig::layered(self.config.as_deref(), env, &self.flags)?.validate()?)
    }

    /// Where `key`'s value came from, for messages: its flag, its variable,
    /// the file, or the default.
    pub(crate) fn source_of(&self, key: &str) -> String {
        let setting = strongroom_server::config::setting_named(key);
        if let Some(f) = setting.and_then(|s| s.flag).filter(|_| self.flags.iter().any(|(k, _)| *k == key)) {
            return format!("--{}", f.long);
        }
        if let Some(var) = setting.and_then(|s| s.env).filter(|v| std::env::var_os(v).is_some()) {
            return var.to_owned();
        }
        if let Some(file) = &self.config
            && RawConfig::layered(Some(file), |_| None, &[]).is_ok_and(|raw| match key {
                "data_dir" => raw.data_dir.is_some(),
                "database_url" => raw.database_url.is_some(),
                _ => false,
            })
        {
            return format!("{key} in {}", file.display());
        }
        "the default".to_owned()
    }
}

/// The log settings: where the filter comes from, and the format. Read from
/// the environment only (`STRONGROOM_LOG`, else `RUST_LOG`, else the
/// command's default; `STRONGROOM_LOG_FORMAT=text` or `json`; an empty
/// variable is unset), by `serve`, `admin` and `config check` alike.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LogSettings {
    filter: String,
    /// `STRONGROOM_LOG`, `RUST_LOG` or `default`.
    filter_from: &'static str,
    json: bool,
}

impl LogSettings {
    fn from_env(default: &str, env: impl Fn(&str) -> Option<String>) -> Result<LogSettings> {
        // An empty variable counts as unset.
        let env = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let (filter, filter_from) = match (env("STRONGROOM_LOG"), env("RUST_LOG")) {
            (Some(f), _) => (f, "STRONGROOM_LOG"),
            (None, Some(f)) => (f, "RUST_LOG"),
            (None, None) => (default.to_owned(), "default"),
        };
        let json = match env("STRONGROOM_LOG_FORMAT") {
            None => false,
            Some(f) if f.trim().eq_ignore_ascii_case("json") => true,
            Some(f) if f.trim().eq_ignore_ascii_case("text") => false,
            Some(f) => anyhow::bail!("STRONGROOM_LOG_FORMAT: {f:?} is not a log format: accepted: text or json (unset or empty: text)"),
        };
        Ok(LogSettings { filter, filter_from, json })
    }

    fn env_filter(&self) -> Result<tracing_subscriber::EnvFilter> {
        tracing_subscriber::EnvFilter::try_new(&self.filter)
            .with_context(|| format!("{}: bad log filter {:?}", self.filter_from, self.filter))
    }
}

fn init_logging(default: &str) -> Result<()> {
    let settings = LogSettings::from_env(default, |k| std::env::var(k).ok())?;
    let filter = settings.env_filter()?;
    let json = settings.json;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    let result = if json { builder.json().try_init() } else { builder.try_init() };
    result.map_err(|e| anyhow::anyhow!("logging: {e}"))
}

/// Ctrl-C or SIGTERM. The handlers are installed now, before the server
/// starts, not when the server first waits on this future: a SIGTERM sent
/// the moment the server says it is serving is kept for the graceful
/// shutdown, not taken by the default action (which ends the process at once).
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let streams = {
        use tokio::signal::unix::{SignalKind, signal};
        signal(SignalKind::interrupt()).and_then(|interrupt| Ok((interrupt, signal(SignalKind::terminate())?)))
    };
    async move {
        #[cfg(unix)]
        match streams {
            Ok((mut interrupt, mut term)) => tokio::select! {
                _ = interrupt.recv() => tracing::info!("received Ctrl-C"),
                _ = term.recv() => tracing::info!("received SIGTERM"),
            },
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for Ctrl-C or SIGTERM");
                std::future::pending::<()>().await;
            }
        }
        #[cfg(not(unix))]
        match tokio::signal::ctrl_c().await {
            Ok(()) => tracing::info!("received Ctrl-C"),
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for Ctrl-C");
                std::future::pending::<()>().await;
            }
        }
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve(args).await.map_err(client::Failure::from),
            Command::Admin { remote, json, command, .. } if remote.server.is_some() => {
                init_logging("warn").map_err(client::Failure::from)?;
                admin::remote::run(&remote, command, json).await
            }
            Command::Admin { config, json, command, remote } => {
                // `--ca` is only ever the --server trust file; `policy set --ca NAME` was once the
                // policy's CA, which is --issuing-ca now: refused rather than quietly ignored.
                if let admin::AdminCommand::Policy(admin::PolicyCommand::Set(_)) = &command
                    && remote.ca_on_command_line()
                {
                    return Err(client::Failure::new(2, admin::CA_IS_A_TRUST_FILE));
                }
                admin_cmd(config, command, json).await.map_err(client::Failure::from)
            }
            Command::Config(ConfigCommand::Check { config, json, online }) => config_check(&config, json, online).await,
            Command::Config(ConfigCommand::Example { set }) => ops::config_example(&set).map_err(client::Failure::from),
            Command::Health { config, timeout } => ops::health(&config.load()?, timeout).await.map_err(client::Failure::from),
            Command::Completions { shell } => ops::completions(shell).map_err(client::Failure::from),
            Command::Man { out_dir, config } => ops::man(out_dir.as_deref(), config).map_err(client::Failure::from),
            Command::Login { target, scope, no_browser } => client::login(&target, &scope, no_browser).await,
            Command::Logout { target } => client::logout(&target).await,
            Command::Status { target } => client::status(&target).await,
            Command::Vault { target, command } => client::vault(&target, command).await,
            Command::Credential { target, command } => client::credential(&target, command).await,
            Command::Openapi => print_openapi().map_err(client::Failure::from),
        }
    });
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // Output cut short by its reader (`… | head`): what it wanted was printed.
        Err(f) if f.broken_pipe => std::process::ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message);
            std::process::ExitCode::from(f.code)
        }
    }
}

fn print_openapi() -> Result<()> {
    use std::io::Write as _;
    let doc = strongroom_http::openapi::document_json()?;
    std::io::stdout().lock().write_all(doc.as_bytes())?;
    Ok(())
}

/// `serve`'s log filter when the environment names none.
const SERVE_LOG_DEFAULT: &str = "info";

async fn serve(args: ConfigArgs) -> Result<()> {
    init_logging(SERVE_LOG_DEFAULT)?;
    let config = args.load()?;
    strongroom_server::serve::run(config, shutdown_signal()).await?;
    Ok(())
}

async fn admin_cmd(config: ConfigArgs, command: admin::AdminCommand, json: bool) -> Result<()> {
    init_logging("warn")?;
    let loaded = config.load()?;
    admin::run(&loaded, &config, command, json).await
}

async fn config_check(args: &ConfigArgs, json: bool, online: bool) -> Result<(), client::Failure> {
    let config = args.load()?;
    // What `serve` would log with.
    let log = LogSettings::from_env(SERVE_LOG_DEFAULT, |k| std::env::var(k).ok());
    ops::config_check(&config, args.config.as_deref(), log, json, online).await.map_err(client::Failure::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve_args(args: &[&str]) -> ConfigArgs {
        match Cli::try_parse_from([&["strongroom", "serve"], args].concat()).unwrap().command {
            Command::Serve(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn flags_override_the_environment_which_overrides_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("strongroom.toml");
        std::fs::write(&file, "listen = \"127.0.0.1:9000\"\npublic_url = \"https://file.example\"\ndatabase_url = \"/file/db\"\n").unwrap();
        let file = file.to_str().unwrap();
        let env = |k: &str| match k {
            "STRONGROOM_LISTEN" => Some("127.0.0.1:9100".to_owned()),
            "STRONGROOM_PUBLIC_URL" => Some("https://env.example".to_owned()),
            "STRONGROOM_DATA_DIR" => Some("/env/data".to_owned()),
            _ => None,
        };
        // Each key set in the file, the environment and a flag: the flag wins.
        let c = serve_args(&[
            "--config",
            file,
            "--listen",
            "127.0.0.1:9200",
            "--public-url",
            "https://flag.example",
            "--data-dir",
            "/flag/data",
        ])
        .load_with(env)
        .unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:9200");
        assert_eq!(c.public_url, "https://flag.example");
        assert_eq!(c.data_dir, std::path::PathBuf::from("/flag/data"));
        assert_eq!(c.database_url, "/file/db", "a key only the file sets is kept");
        // Without the flags, the environment wins over the file.
        let c = serve_args(&["--config", file]).load_with(env).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:9100");
        assert_eq!(c.public_url, "https://env.example");
        assert_eq!(c.data_dir, std::path::PathBuf::from("/env/data"));
        // And without either, the file is read.
        let c = serve_args(&["--config", file]).load_with(|_| None).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:9000");
        assert_eq!(c.public_url, "https://file.example");
        // --insecure-http over STRONGROOM_INSECURE_HTTP=false.
        let off = |k: &str| (k == "STRONGROOM_INSECURE_HTTP").then(|| "false".to_owned());
        assert_eq!(serve_args(&["--insecure-http"]).load_with(off).unwrap().tls, strongroom_server::config::Tls::Off);
        assert_eq!(serve_args(&[]).load_with(off).unwrap().tls, strongroom_server::config::Tls::SelfSigned);
    }

    #[test]
    fn every_flag_of_the_settings_table_is_on_serve_and_admin() {
        for s in SETTINGS.iter().filter(|s| s.flag.is_some()) {
            let long = format!("--{}", s.flag.unwrap().long);
            let mut args = vec!["strongroom", "serve", long.as_str()];
            if s.kind != Kind::Bool {
                args.push("x");
            }
            let parsed = Cli::try_parse_from(&args).unwrap();
            let Command::Serve(a) = parsed.command else { unreachable!() };
            assert_eq!(a.flags.len(), 1, "{long}");
        }
        // Global ones after an admin subcommand too.
        let parsed =
            Cli::try_parse_from(["strongroom", "admin", "users", "list", "--data-dir", "/d", "--database-url", "/d/x.db"]).unwrap();
        let Command::Admin { config, .. } = parsed.command else { unreachable!() };
        let c = config.load_with(|_| None).unwrap();
        assert_eq!((c.data_dir, c.database_url), (PathBuf::from("/d"), "/d/x.db".to_owned()));
    }

    #[test]
    fn the_command_line_has_no_clashing_options() {
        // `admin --server`'s options beside the settings' flags and the rest.
        <Cli as clap::CommandFactory>::command().debug_assert();
        let parsed =
            Cli::try_parse_from(["strongroom", "admin", "groups", "list", "--server", "https://h:8443", "--token-file", "/t"]).unwrap();
        let Command::Admin { remote, .. } = parsed.command else { unreachable!() };
        assert_eq!(remote.server.as_deref(), Some("https://h:8443"));
        // A command's positional CLIENT_ID and the global --client-id are two
        // arguments (the book's `integrations create ci-app` over the API).
        for args in [
            &["strongroom", "admin", "integrations", "create", "ci-app", "--scope", "restricted:manage", "--server", "https://h"][..],
            &["strongroom", "admin", "--server", "https://h", "--client-id", "strongroom-admin", "integrations", "delete", "ci-app"],
            &["strongroom", "admin", "integrations", "update", "ci-app", "--client-id", "strongroom-admin", "--server", "https://h"],
        ] {
            let parsed = Cli::try_parse_from(args).unwrap();
            let Command::Admin { remote, command, .. } = parsed.command else { unreachable!() };
            let shown = format!("{command:?}");
            assert!(shown.contains("\"ci-app\""), "{args:?}: {shown}");
            let wanted = args.contains(&"--client-id").then_some("strongroom-admin");
            assert_eq!(remote.client_id.as_deref(), wanted, "{args:?}");
        }
    }

    #[test]
    fn an_unknown_log_format_is_refused() {
        let env = |v: &'static str| move |k: &str| (k == "STRONGROOM_LOG_FORMAT").then(|| v.to_owned());
        assert!(LogSettings::from_env("info", env("json")).unwrap().json);
        assert!(!LogSettings::from_env("info", env("TEXT")).unwrap().json);
        assert!(!LogSettings::from_env("info", env("")).unwrap().json);
        let err = LogSettings::from_env("info", env("jsn")).unwrap_err().to_string();
        assert!(err.contains("STRONGROOM_LOG_FORMAT") && err.contains("text or json"), "{err}");
    }
}
