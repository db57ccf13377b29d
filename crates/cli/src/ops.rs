//! Operator commands: `config check`, `config example`, `health`, `completions`, `man`.

use anyhow::{Context as _, Result, bail};
use clap::CommandFactory as _;
use serde_json::json;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use strongroom_app::OsRandom;
use strongroom_keyring::KeyRing;
use strongroom_keyring::keys;
use strongroom_keyring::settings::PinSource;
use strongroom_server::config::{Config, Kind, SETTINGS, Tls};
use strongroom_store::Probe;

/// How long `config check --online` waits for the database.
const ONLINE_TIMEOUT: Duration = Duration::from_secs(15);

/// `strongroom config check`: the effective settings, secrets masked, after
/// the validation `serve` does, then what `serve` checks at start (the
/// master key, the TLS files, every configured vault key, the log settings;
/// the database too with `online`). Every problem is listed; any makes the
/// command fail.
pub(crate) async fn config_check(
    config: &Config,
    file: Option<&Path>,
    log: Result<crate::LogSettings>,
    json_out: bool,
    online: bool,
) -> Result<()> {
    let mut problems: Vec<String> = Vec::new();
    // What the file held (it parsed: `config` was made from it).
    let (file_text, sections) = match file {
        Some(path) => {
            let sections = strongroom_server::config::file_sections(path)?;
            let what = if sections.is_empty() { "nothing set (all defaults)".to_owned() } else { sections.join(", ") };
            (format!("{}: read {what}", path.display()), sections)
        }
        None => ("none (the defaults, STRONGROOM_* variables and flags)".to_owned(), Vec::new()),
    };
    let sections_text = sections_summary(config);
    let master_key = match keys::describe_source(&config.data_dir, std::env::var(keys::MASTER_KEY_ENV).ok()) {
        Ok(d) => d,
        Err(e) => {
            problems.push(format!("master key: {e}"));
            "not usable (see the problems)".to_owned()
        }
    };
    let tls = match &config.tls {
        Tls::Off => "off (plain HTTP: behind a TLS-terminating proxy only)".to_owned(),
        Tls::SelfSigned => {
            let (cert, key) = strongroom_server::tls::self_signed_paths(&config.data_dir);
            if cert.exists() && key.exists() {
                if let Err(e) = strongroom_server::tls::load(&cert, &key) {
                    problems.push(format!("TLS: the self-signed certificate in {}: {e}", config.data_dir.join("tls").display()));
                }
                format!("self-signed, kept in {}", config.data_dir.join("tls").display())
            } else {
                format!("self-signed, made at first start in {}", config.data_dir.join("tls").display())
            }
        }
        Tls::Files { cert, key } => {
            // Read and parsed as start-up (and SIGHUP) does: a chain and a key that go together.
            if let Err(e) = strongroom_server::tls::load(cert, key) {
                problems.push(format!("TLS: {e}"));
            }
            format!("cert {} key {}", cert.display(), key.display())
        }
    };
    let t = &config.tokens;
    let proxies: Vec<String> = config.trusted_proxies.iter().map(ToString::to_string).collect();
    let metrics = match config.metrics_listen {
        Some(a) => format!("http://{a}/metrics (its own listener)"),
        None => "/metrics on the main listener".to_owned(),
    };
    // What the driver makes of the string, as the store reads it: never the
    // string itself, which may hold a password.
    let db = strongroom_store::describe_database(&config.database_url).context("database_url")?;
    let keys = &config.keys;
    // Every configured key, tried as start-up tries it (a throwaway key
    // wrapped and unwrapped); the master key is not needed for that.
    let ring = KeyRing::without_master_key(keys, &OsRandom);
    for (name, outcome) in ring.check_each(&OsRandom).await {
        if let Err(e) = outcome {
            problems.push(format!("vault key {name} cannot be used, so serve would not start: {e}"));
        }
    }
    let log = match log {
        Ok(l) => {
            if let Err(e) = l.env_filter() {
                problems.push(format!("{e:#}"));
            }
            Some(l)
        }
        Err(e) => {
            problems.push(format!("{e:#}"));
            None
        }
    };
    let online_text = if online { Some(probe_database(&config.database_url, &db, &mut problems).await) } else { None };
    // The PIN's source only: the PIN itself is never read into the output.
    let pin_source = |pin: &PinSource| match pin {
        PinSource::File(path) => ("pin_file", path.display().to_string()),
        PinSource::Env(var) => ("pin_env", var.clone()),
    };
    let pkcs11_json: Vec<serde_json::Value> = keys
        .pkcs11
        .iter()
        .map(|k| {
            let (pin_key, pin_value) = pin_source(&k.pin);
            json!({"name": k.name, "library": k.library.display().to_string(), "token_label": k.token_label,
                   "key_label": k.key_label, pin_key: pin_value})
        })
        .collect();
    let log_format = log.as_ref().map_or("?", |l| if l.json { "json" } else { "text" });
    if json_out {
        let value = json!({
            "file": file.map(|p| p.display().to_string()),
            "sections_read": sections,
            "data_dir": config.data_dir.display().to_string(),
            "listen": config.listen.to_string(),
            "public_url": config.public_url,
            "database_url": db,
            "tls": tls,
            "max_body_bytes": config.max_body_bytes,
            "request_timeout_secs": config.request_timeout_secs,
            "trusted_proxies": proxies,
            "tokens": {"access_validity": t.access_validity, "grant_validity": t.grant_validity, "refreshable": t.refreshable,
                       "device_code_validity": t.device_code_validity, "poll_interval": t.poll_interval, "retry_window": t.retry_window},
            "metrics": metrics,
            "master_key": master_key,
            "keys": {"default": keys.default, "pkcs11": pkcs11_json},
            "events": sections_text.events,
            "jwt": sections_text.jwt,
            "certificate": sections_text.certificate,
            "key_generation": sections_text.key_generation,
            "ldap": sections_text.ldap,
            "oidc": sections_text.oidc,
            "log": log.as_ref().map(|l| json!({"filter": l.filter, "filter_from": l.filter_from, "format": log_format})),
            "online": online_text,
            "problems": problems,
            "ok": problems.is_empty(),
        });
        writeln!(std::io::stdout().lock(), "{value}")?;
    } else {
        let mut rows: Vec<(String, String)> = vec![
            ("file", file_text),
            ("data_dir", config.data_dir.display().to_string()),
            ("listen", config.listen.to_string()),
            ("public_url", config.public_url.clone()),
            ("database_url", db.clone()),
            ("tls", tls),
            ("max_body_bytes", config.max_body_bytes.to_string()),
            ("request_timeout_secs", config.request_timeout_secs.to_string()),
            ("trusted_proxies", if proxies.is_empty() { "none".to_owned() } else { proxies.join(", ") }),
            ("tokens.access_validity", format!("{} s", t.access_validity)),
            ("tokens.grant_validity", format!("{} s", t.grant_validity)),
            ("tokens.refreshable", t.refreshable.to_string()),
            ("tokens.device_code_validity", format!("{} s", t.device_code_validity)),
            ("tokens.poll_interval", format!("{} s", t.poll_interval)),
            ("tokens.retry_window", format!("{} s", t.retry_window)),
            ("metrics", metrics),
            ("master_key", master_key),
            ("keys.default", keys.default.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        for k in &keys.pkcs11 {
            let pin = match &k.pin {
                PinSource::File(path) => format!("from file {}", path.display()),
                PinSource::Env(var) => format!("from ${var}"),
            };
            rows.push((
                format!("keys.{}", k.name),
                format!("library {}, token {:?}, key {:?}, PIN {pin} (not shown)", k.library.display(), k.token_label, k.key_label),
            ));
        }
        for (k, v) in [
            ("events", sections_text.events),
            ("jwt", sections_text.jwt),
            ("certificate", sections_text.certificate),
            ("key_generation", sections_text.key_generation),
            ("ldap", sections_text.ldap),
            ("oidc", sections_text.oidc),
        ] {
            rows.push((k.to_owned(), v));
        }
        if let Some(l) = &log {
            let from = if l.filter_from == "default" { "the default".to_owned() } else { format!("from {}", l.filter_from) };
            rows.push(("log.filter".to_owned(), format!("{} ({from})", l.filter)));
            rows.push(("log.format".to_owned(), log_format.to_owned()));
        }
        if let Some(o) = &online_text {
            rows.push(("online".to_owned(), o.clone()));
        }
        let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        let mut out = std::io::stdout().lock();
        for (k, v) in rows {
            writeln!(out, "{k:width$}  {v}")?;
        }
        if problems.is_empty() {
            writeln!(out, "configuration OK")?;
        }
        out.flush()?;
    }
    match problems.len() {
        0 => Ok(()),
        1 => bail!("{}", problems[0]),
        n => bail!("{n} problems:\n  {}", problems.join("\n  ")),
    }
}

/// One line each for the tables `config check` has no rows of their own
/// for: what they make the server do (never a secret: where a password
/// comes from, a file or a variable's name).
struct Sections {
    events: String,
    jwt: String,
    certificate: String,
    key_generation: String,
    ldap: String,
    oidc: String,
}

fn sections_summary(config: &Config) -> Sections {
    let ca = |f: &Option<std::path::PathBuf>, none: &str| f.as_ref().map_or_else(|| none.to_owned(), |p| format!("CAs {}", p.display()));
    let secret = |file: &Option<std::path::PathBuf>, var: &Option<String>| match (file, var) {
        (Some(f), _) => format!("from file {} (not shown)", f.display()),
        (None, Some(v)) => format!("from ${v} (not shown)"),
        (None, None) => "none".to_owned(),
    };
    let events = match &config.events_retention {
        Some(r) => format!("archived after {} days to {}", r.days, r.archive_dir.display()),
        None => "kept forever (no retention_days)".to_owned(),
    };
    let j = &config.jwt;
    let jwt = format!(
        "issuers' keys kept {} s, fetched again at most every {} s, fetch timeout {} s, {}",
        j.key_cache_secs,
        j.refetch_min_secs,
        j.fetch_timeout_secs,
        ca(&j.ca_file, "the public roots")
    );
    let certificate = match &config.certificate {
        Some(c) => format!(
            "grant listener {}, mappings' CAs read every {} s, {} CRL file(s), {}",
            c.listen,
            c.reload_secs,
            c.crl_files.len(),
            c.proxy_header.as_ref().map_or_else(|| "no proxy header".to_owned(), |h| format!("proxy header {h}"))
        ),
        None => "off (no listen: no certificate grant)".to_owned(),
    };
    let k = &config.key_generation;
    let key_generation = format!(
        "server-made RSA keys: {} at once, {} in progress per caller, {} waiting (past them 429)",
        k.concurrency, k.per_identity, k.waiting
    );
    let ldap = match &config.ldap {
        Some(l) => format!(
            "{} at {}{}, bind {:?} with password {}, people under {:?}, timeout {} s, {}",
            l.prefix(),
            l.url,
            if l.starttls { " (StartTLS)" } else { "" },
            l.bind_dn,
            secret(&l.bind_password_file, &l.bind_password_env),
            l.user_base,
            l.timeout.as_secs(),
            ca(&l.ca_file, "the web PKI roots")
        ),
        None => "off (no url: no directory sign-in)".to_owned(),
    };
    let oidc = match &config.oidc {
        Some(o) => format!(
            "{} at {}, client {:?} with secret {}, scopes {:?}, sessions {} s, {}",
            o.prefix(),
            o.issuer,
            o.client_id,
            secret(&o.client_secret_file, &o.client_secret_env),
            o.scopes,
            o.session_secs,
            ca(&o.ca_file, "the public roots")
        ),
        None => "off (no issuer: no OpenID Connect sign-in)".to_owned(),
    };
    Sections { events, jwt, certificate, key_generation, ldap, oidc }
}

/// `config check --online`: what the database holds, changing nothing.
async fn probe_database(url: &str, db: &str, problems: &mut Vec<String>) -> String {
    let want = strongroom_store::schema_version();
    match tokio::time::timeout(ONLINE_TIMEOUT, strongroom_store::probe(url)).await {
        Err(_) => {
            problems.push(format!("database: {db} did not answer within {} s", ONLINE_TIMEOUT.as_secs()));
            "no answer".to_owned()
        }
        Ok(Err(e)) => {
            problems.push(format!("database: {e}"));
            "not reachable".to_owned()
        }
        Ok(Ok(Probe::Absent)) => "reachable; no store there yet (serve or admin init creates it)".to_owned(),
        Ok(Ok(Probe::Present { version })) => match version {
            Some(v) if v == want => format!("reachable; store at schema {v}, this binary's"),
            Some(v) if v < want => format!("reachable; store at schema {v}: serve migrates it to {want}"),
            Some(v) => {
                problems.push(format!("database: the store is at schema {v}, newer than this binary's {want}: use a newer strongroom"));
                format!("reachable; store at schema {v}, NEWER than this binary's {want}")
            }
            None => "reachable; store without migrations (serve applies them)".to_owned(),
        },
    }
}

/// `strongroom config example`: a commented `strongroom.toml` made from
/// the settings table, `set` (`KEY=VALUE`) written in force.
pub(crate) fn config_example(set: &[String]) -> Result<()> {
    let pairs = set
        .iter()
        .map(|kv| kv.split_once('=').map(|(k, v)| (k.trim().to_owned(), v.to_owned())))
        .collect::<Option<Vec<_>>>()
        .context("--set takes KEY=VALUE (a TOML key such as tokens.access_validity)")?;
    let text = strongroom_server::config::example(env!("CARGO_PKG_VERSION"), &pairs)?;
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

/// `strongroom health`: `GET /health/ready` on the configured listener.
pub(crate) async fn health(config: &Config, timeout: u64) -> Result<()> {
    let scheme = if config.tls == Tls::Off { "http" } else { "https" };
    let ip = config.listen.ip();
    let host = match ip {
        std::net::IpAddr::V4(v4) if v4.is_unspecified() => "127.0.0.1".to_owned(),
        std::net::IpAddr::V6(v6) if v6.is_unspecified() => "[::1]".to_owned(),
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        std::net::IpAddr::V4(v4) => v4.to_string(),
    };
    let url = format!("{scheme}://{host}:{}/health/ready", config.listen.port());
    // The probe names nothing secret and reads only a status: the server's
    // certificate (self-signed, or issued for a public name) is not checked.
    let http = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .timeout(Duration::from_secs(timeout.max(1)))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("strongroom-health/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("HTTP client")?;
    let answer = match http.get(&url).send().await {
        Ok(r) => r,
        Err(e) => {
            let mut cause = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                cause = s.to_string();
                src = s.source();
            }
            bail!("not ready: {url}: {}", if e.is_timeout() { format!("no answer within {timeout} s") } else { cause });
        }
    };
    let status = answer.status();
    let body = answer.text().await.unwrap_or_default();
    if status == reqwest::StatusCode::OK {
        writeln!(std::io::stdout().lock(), "ready: {url}")?;
        Ok(())
    } else {
        bail!("not ready: {url} answered HTTP {} {}", status.as_u16(), body.trim())
    }
}

/// `strongroom completions SHELL`: a completion script on standard output.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut cmd = crate::Cli::command();
    // Into a buffer first: clap_complete panics on a failed write (a closed pipe).
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "strongroom", &mut buf);
    std::io::stdout().lock().write_all(&buf)?;
    Ok(())
}

/// `strongroom man`: strongroom(1) on standard output (with `config`:
/// strongroom.toml(5)), or with `--out-dir` every page: one per command
/// (`strongroom.1`, `strongroom-admin.1`, …) and `strongroom.toml.5`.
pub(crate) fn man(out_dir: Option<&Path>, config: bool) -> Result<()> {
    match out_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(crate::Cli::command(), dir).with_context(|| format!("writing man pages into {}", dir.display()))?;
            // The main page again, with its ENVIRONMENT, FILES and EXIT STATUS.
            std::fs::write(dir.join("strongroom.1"), main_page()?).with_context(|| format!("writing {}", dir.display()))?;
            std::fs::write(dir.join("strongroom.toml.5"), config_page()).with_context(|| format!("writing {}", dir.display()))?;
            Ok(())
        }
        None => {
            let page = if config { config_page().into_bytes() } else { main_page()? };
            if page.is_empty() {
                bail!("the man page came out empty");
            }
            std::io::stdout().lock().write_all(&page)?;
            Ok(())
        }
    }
}

/// Text for roff: backslashes and dashes escaped, no line starting with a
/// control character.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    escaped
        .lines()
        .map(|l| if l.starts_with('.') || l.starts_with('\'') { format!("\\&{l}") } else { l.to_owned() })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A `.TP` paragraph: `tag` in bold, then `body`.
fn item(tag: &str, body: &str) -> String {
    format!(".TP\n\\fB{}\\fR\n{}\n", roff(tag), roff(body))
}

/// Variables that no setting of the file has.
const OTHER_VARIABLES: &[(&str, &str)] = &[
    ("STRONGROOM_CONFIG", "The TOML configuration file, as --config."),
    (
        "STRONGROOM_MASTER_KEY",
        "The master key, 64 hexadecimal characters; without it, <data_dir>/master.key (created 0600 at the first start). \
         Replicas share one.",
    ),
    ("STRONGROOM_LOG, RUST_LOG", "The log filter (tracing's EnvFilter syntax); default info for serve, warn for admin."),
    ("STRONGROOM_LOG_FORMAT", "text (the default) or json."),
    ("SOFTHSM2_CONF", "For SoftHSM2 keys: the softhsm2.conf naming the token directory (read by SoftHSM2 itself)."),
    (
        "STRONGROOM_SERVER, STRONGROOM_CLIENT_ID, STRONGROOM_CA, STRONGROOM_PIN",
        "The client verbs' --server, --client-id, --ca and --pin, and admin's (STRONGROOM_SERVER set: admin runs over the API).",
    ),
    ("STRONGROOM_TOKEN_FILE", "admin --server's --token-file: a file (mode 0600) holding an access token."),
    (
        "STRONGROOM_CONFIG_DIR",
        "Where the client keeps profile.json and tokens/ (else $XDG_CONFIG_HOME/strongroom, else ~/.config/strongroom).",
    ),
];

const FILES: &[(&str, &str)] = &[
    ("<data_dir>/strongroom.db, strongroom.db-wal, strongroom.db-shm", "The SQLite store (mode 0600), unless database_url names another."),
    ("<data_dir>/strongroom.db-serve.lock", "Locked by the serve process that serves the SQLite store, holding its process id."),
    ("<data_dir>/master.key", "The master key (mode 0600; a key open to others stops serve and admin). Back it up."),
    ("<data_dir>/tls/cert.pem, <data_dir>/tls/key.pem", "The self-signed certificate serve makes when tls_cert and tls_key are not set."),
    ("/etc/strongroom/strongroom.toml", "The configuration of the packaged service (strongroom.toml(5))."),
    ("/etc/strongroom/env", "Variables of the packaged service (STRONGROOM_MASTER_KEY, SOFTHSM2_CONF, ...), mode 0600."),
    ("~/.config/strongroom/profile.json, tokens/*.json", "The client's profile and its token cache (mode 0600)."),
];

/// strongroom(1): clap's page, with ENVIRONMENT, FILES and EXIT STATUS.
fn main_page() -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(crate::Cli::command()).render(&mut buf)?;
    let mut extra = String::from(".SH ENVIRONMENT\nSettings of the configuration file (strongroom.toml(5)) have variables too:\n");
    for s in SETTINGS {
        if let Some(var) = s.env {
            extra.push_str(&item(var, &format!("{} (the file's {}; default: {})", s.help, s.key, s.default)));
        }
    }
    for (var, what) in OTHER_VARIABLES {
        extra.push_str(&item(var, what));
    }
    extra.push_str(".SH FILES\n");
    for (file, what) in FILES {
        extra.push_str(&item(file, what));
    }
    extra.push_str(".SH EXIT STATUS\n");
    for line in crate::client::EXIT_CODES.lines().skip(1) {
        let line = line.trim();
        if let Some((code, what)) = line.split_once(char::is_whitespace) {
            extra.push_str(&item(code, what.trim()));
        } else if let Some(last) = extra.strip_suffix('\n') {
            // A continued line of the code before.
            extra = format!("{last} {}\n", roff(line));
        }
    }
    extra.push_str(".SH SEE ALSO\nstrongroom.toml(5), strongroom\\-admin(1), strongroom\\-serve(1)\n");
    buf.extend_from_slice(extra.as_bytes());
    Ok(buf)
}

/// The TOML form of a key: `[tokens] access_validity`, `[[keys.pkcs11]] name`.
fn toml_form(key: &str) -> String {
    if let Some(rest) = key.strip_prefix("keys.pkcs11.") {
        return format!("[[keys.pkcs11]] {rest}");
    }
    match key.split_once('.') {
        Some((table, k)) => format!("[{table}] {k}"),
        None => key.to_owned(),
    }
}

/// The book's generated settings page (`book/src/reference/settings.md`),
/// made from the settings table as the manual page is; a test keeps the
/// committed page equal to it (and writes it with `STRONGROOM_BLESS=1`).
#[cfg(test)]
fn settings_markdown() -> String {
    let cell = |t: &str| t.replace('|', "\\|");
    let mut p = String::from(
        "# Settings (generated)\n\n\
         <!-- Generated from `config::SETTINGS` by `crates/cli/src/ops.rs` (`settings_markdown`); a test keeps it\n\
         current. Regenerate: STRONGROOM_BLESS=1 cargo test -p strongroom --bin strongroom settings_page -->\n\n\
         Every setting of `strongroom.toml`, its environment variable and flag, its kind and default, as the server\n\
         reads them. The variables override the file and the flags override both; unknown keys are refused;\n\
         `strongroom config check` prints the effective settings. [Configuration](configuration.md) explains them.\n\n\
         | key | variable | flag | value | default | meaning |\n|---|---|---|---|---|---|\n",
    );
    for s in SETTINGS {
        let value = if s.kind == Kind::Name { "text" } else { s.kind.accepted() };
        p.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            toml_form(s.key),
            s.env.map_or_else(String::new, |v| format!("`{v}`")),
            s.flag.map_or_else(String::new, |f| format!("`--{}`", f.long)),
            cell(value),
            if s.default.is_empty() { String::new() } else { format!("`{}`", cell(s.default)) },
            cell(s.help)
        ));
    }
    p
}

/// strongroom.toml(5), made from the settings table: every key, its
/// variable, its flag and its default.
fn config_page() -> String {
    let mut p = format!(
        ".TH STRONGROOM.TOML 5 \"\" \"strongroom {}\" \"File formats\"\n\
         .SH NAME\nstrongroom.toml \\- configuration of the strongroom server\n\
         .SH SYNOPSIS\n\\fBstrongroom serve \\-\\-config\\fR \\fIFILE\\fR (or \\fBSTRONGROOM_CONFIG\\fR=\\fIFILE\\fR)\n\
         .SH DESCRIPTION\n{}\n",
        env!("CARGO_PKG_VERSION"),
        roff(
            "A TOML file. Every key is optional. The environment variables override the file, and the flags override \
             both. An empty file, or none, gives the defaults: data in ./strongroom-data, HTTPS on 127.0.0.1:8443 with a \
             self-signed certificate. Unknown keys are refused. strongroom config check --config FILE checks a file \
             as serve would, and prints the effective settings."
        )
    );
    p.push_str(".SH SETTINGS\n");
    for s in SETTINGS {
        let mut how = Vec::new();
        if let Some(var) = s.env {
            how.push(format!("variable {var}"));
        }
        if let Some(f) = s.flag {
            how.push(format!("flag --{}", f.long));
        }
        let default = if s.default.is_empty() { String::new() } else { format!("Default: {}. ", s.default) };
        let value = if s.kind == Kind::Name { "text".to_owned() } else { s.kind.accepted().to_owned() };
        let tag = if how.is_empty() { toml_form(s.key) } else { format!("{} ({})", toml_form(s.key), how.join(", ")) };
        p.push_str(&item(&tag, &format!("{} {default}Value: {value}.", s.help)));
    }
    p.push_str(".SH ENVIRONMENT\n");
    p.push_str(&roff("Each variable above overrides its key, whatever the file says; a variable set to nothing is an empty value."));
    p.push('\n');
    for (var, what) in OTHER_VARIABLES.iter().take(5) {
        p.push_str(&item(var, what));
    }
    p.push_str(".SH FILES\n");
    for (file, what) in FILES.iter().take(6) {
        p.push_str(&item(file, what));
    }
    p.push_str(".SH EXAMPLE\n.nf\n");
    p.push_str(&roff(
        "data_dir = \"/var/lib/strongroom\"\nlisten = \"0.0.0.0:8443\"\npublic_url = \"https://vault.example.com:8443\"\n\
         [tokens]\naccess_validity = 600\n[metrics]\nlisten = \"127.0.0.1:9090\"\n",
    ));
    p.push_str("\n.fi\n.SH SEE ALSO\nstrongroom(1), strongroom\\-config\\-check(1)\n");
    p
}

#[cfg(test)]
mod tests {
    /// The book's settings page is the one the settings table makes (as
    /// `openapi.json` is the document the code makes).
    #[test]
    fn settings_page_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book/src/reference/settings.md");
        let made = super::settings_markdown();
        if std::env::var("STRONGROOM_BLESS").as_deref() == Ok("1") {
            std::fs::write(&path, &made).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == made,
            "{} is not the page the settings table makes; regenerate it with\n    \
             STRONGROOM_BLESS=1 cargo test -p strongroom --bin strongroom settings_page",
            path.display()
        );
    }

    use super::*;

    #[test]
    fn the_config_page_names_every_key_and_variable() {
        let page = config_page();
        for s in SETTINGS {
            let key = roff(s.key.rsplit('.').next().unwrap_or(s.key));
            assert!(page.contains(&key), "{} missing", s.key);
            if let Some(var) = s.env {
                assert!(page.contains(var), "{var} missing");
            }
        }
        for section in [".SH SETTINGS", ".SH ENVIRONMENT", ".SH FILES", ".SH EXAMPLE"] {
            assert!(page.contains(section), "{section}");
        }
        assert!(!page.lines().any(|l| l.starts_with("..")), "no line is a stray roff request");
    }

    #[test]
    fn roff_escapes_what_roff_would_read() {
        assert_eq!(roff("\\VED\\Policy"), "\\eVED\\ePolicy");
        assert_eq!(roff("--data-dir"), "\\-\\-data\\-dir");
        assert_eq!(roff(".hidden\nok"), "\\&.hidden\nok");
    }
}
