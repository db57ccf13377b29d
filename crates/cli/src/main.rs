//! `strongroom`: the server, its administration, and the client verbs.
//!
//! The one binary. `anyhow` lives here only; the libraries return typed errors.
//! `serve` and the command line are here; `admin …` is `admin` (tables, or
//! JSON with `--json`) and `backup` (`admin backup`, `admin restore`);
//! `config check`, `completions` and `man` are `ops`; the client verbs
//! (`login`, `logout`, `status`, `vault …`) are `client`, which owns the exit
//! codes.
#![forbid(unsafe_code)]

mod admin;
mod backup;
mod client;
mod ops;

use anyhow::{Context as _, Result};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

use strongroom_server::config::RawConfig;

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
    Serve(ConfigArgs),
    /// Administer users, API integrations, grants and the event log, directly
    /// on the store (also while the server runs).
    Admin {
        #[command(flatten)]
        config: ConfigArgs,
        /// Print JSON (one document) instead of tables, for scripts.
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        command: admin::AdminCommand,
    },
    /// Check a configuration and print the effective settings (secrets masked).
    ///
    /// Example: strongroom config check --config /etc/strongroom/strongroom.toml
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Print a shell completion script.
    ///
    /// Example: strongroom completions bash > /etc/bash_completion.d/strongroom
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write one page per command into a directory.
    ///
    /// Example: strongroom man | man -l -
    Man {
        /// Write strongroom.1, strongroom-admin.1, ... into this directory.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
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
    /// Print the OpenAPI 3.1 description of the HTTP interface (what
    /// `GET /openapi.json` serves; the repository's openapi.json).
    Openapi,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Validate the configuration (file, STRONGROOM_* variables, flags) and print the effective settings.
    Check {
        #[command(flatten)]
        config: ConfigArgs,
        /// Print JSON instead of a list.
        #[arg(long)]
        json: bool,
    },
}

/// Where the configuration comes from. Flags override environment variables
/// (`STRONGROOM_*`), which override the file.
#[derive(Debug, Args)]
struct ConfigArgs {
    /// TOML configuration file.
    #[arg(long, env = "STRONGROOM_CONFIG", global = true)]
    config: Option<PathBuf>,
    /// Data directory: SQLite database, master key, TLS certificate.
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// Address and port to listen on.
    #[arg(long)]
    listen: Option<String>,
    /// Base URL that clients and browsers use to reach the server.
    #[arg(long)]
    public_url: Option<String>,
    /// SQLite path or postgres:// URL (default: <data-dir>/strongroom.db).
    #[arg(long, global = true)]
    database_url: Option<String>,
    /// Serve plain HTTP (behind a TLS-terminating proxy, or for tests).
    #[arg(long)]
    insecure_http: bool,
}

impl ConfigArgs {
    fn load(&self) -> Result<strongroom_server::Config> {
        self.load_with(|k| std::env::var(k).ok())
    }

    /// [`ConfigArgs::load`] with the environment as a lookup function.
    fn load_with(&self, env: impl Fn(&str) -> Option<String>) -> Result<strongroom_server::Config> {
        let raw = match &self.config {
            Some(p) => RawConfig::from_file(p)?,
            None => RawConfig::default(),
        };
        let mut raw = raw.with_env(env)?;
        if let Some(d) = &self.data_dir {
            raw.data_dir = Some(d.clone());
        }
        if let Some(l) = &self.listen {
            raw.listen = Some(l.clone());
        }
        if let Some(u) = &self.public_url {
            raw.public_url = Some(u.clone());
        }
        if let Some(u) = &self.database_url {
            raw.database_url = Some(u.clone());
        }
        if self.insecure_http {
            raw.insecure_http = Some(true);
        }
        Ok(raw.validate()?)
    }
}

/// The log settings: where the filter comes from, and the format. Read from
/// the environment only (`STRONGROOM_LOG`, else `RUST_LOG`, else the
/// command's default; `STRONGROOM_LOG_FORMAT=json`; an empty variable is
/// unset), by `serve`, `admin` and `config check` alike.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LogSettings {
    filter: String,
    /// `STRONGROOM_LOG`, `RUST_LOG` or `default`.
    filter_from: &'static str,
    json: bool,
}

impl LogSettings {
    fn from_env(default: &str, env: impl Fn(&str) -> Option<String>) -> LogSettings {
        // An empty variable counts as unset.
        let env = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let (filter, filter_from) = match (env("STRONGROOM_LOG"), env("RUST_LOG")) {
            (Some(f), _) => (f, "STRONGROOM_LOG"),
            (None, Some(f)) => (f, "RUST_LOG"),
            (None, None) => (default.to_owned(), "default"),
        };
        let json = env("STRONGROOM_LOG_FORMAT").is_some_and(|f| f.eq_ignore_ascii_case("json"));
        LogSettings { filter, filter_from, json }
    }

    fn env_filter(&self) -> Result<tracing_subscriber::EnvFilter> {
        tracing_subscriber::EnvFilter::try_new(&self.filter)
            .with_context(|| format!("{}: bad log filter {:?}", self.filter_from, self.filter))
    }
}

fn init_logging(default: &str) -> Result<()> {
    let settings = LogSettings::from_env(default, |k| std::env::var(k).ok());
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

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("received Ctrl-C"),
        () = term => tracing::info!("received SIGTERM"),
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
            Command::Admin { config, json, command } => admin_cmd(config, command, json).await.map_err(client::Failure::from),
            Command::Config(ConfigCommand::Check { config, json }) => config
                .load()
                .and_then(|c| {
                    // What `serve` would log with.
                    let log = LogSettings::from_env(SERVE_LOG_DEFAULT, |k| std::env::var(k).ok());
                    log.env_filter()?;
                    ops::config_check(&c, &log, json)
                })
                .map_err(client::Failure::from),
            Command::Completions { shell } => ops::completions(shell).map_err(client::Failure::from),
            Command::Man { out_dir } => ops::man(out_dir.as_deref()).map_err(client::Failure::from),
            Command::Login { target, scope, no_browser } => client::login(&target, &scope, no_browser).await,
            Command::Logout { target } => client::logout(&target).await,
            Command::Status { target } => client::status(&target).await,
            Command::Vault { target, command } => client::vault(&target, command).await,
            Command::Openapi => print_openapi().map_err(client::Failure::from),
        }
    });
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message);
            std::process::ExitCode::from(f.code)
        }
    }
}

fn print_openapi() -> Result<()> {
    use std::io::Write as _;
    let doc = strongroom_server::http::openapi::document_json()?;
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
    let config = config.load()?;
    admin::run(&config, command, json).await
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
}
