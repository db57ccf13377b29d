//! Operator commands that need no server and no store: `config check`,
//! `completions`, `man`.

use anyhow::{Context as _, Result, bail};
use clap::CommandFactory as _;
use serde_json::json;
use std::io::Write as _;
use std::path::Path;

use strongroom_server::config::{Config, Tls};
use strongroom_server::keys;
use strongroom_server::service::keyring::settings::PinSource;

/// `strongroom config check`: the effective settings, secrets masked, after
/// the same validation `serve` does (plus the master key and TLS files).
pub(crate) fn config_check(config: &Config, log: &crate::LogSettings, json_out: bool) -> Result<()> {
    let master_key = keys::describe_source(&config.data_dir, std::env::var(keys::MASTER_KEY_ENV).ok()).context("master key")?;
    let tls = match &config.tls {
        Tls::Off => "off (plain HTTP: behind a TLS-terminating proxy only)".to_owned(),
        Tls::SelfSigned => format!("self-signed, kept in {}", config.data_dir.join("tls").display()),
        Tls::Files { cert, key } => {
            for f in [cert, key] {
                std::fs::File::open(f).with_context(|| format!("TLS file {}", f.display()))?;
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
    // The PIN's source only: the PIN itself is never read here.
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
    let log_format = if log.json { "json" } else { "text" };
    let value = json!({
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
        "log": {"filter": log.filter, "filter_from": log.filter_from, "format": log_format},
    });
    let mut out = std::io::stdout().lock();
    if json_out {
        writeln!(out, "{value}")?;
        return Ok(());
    }
    let mut rows: Vec<(String, String)> = vec![
        ("data_dir", config.data_dir.display().to_string()),
        ("listen", config.listen.to_string()),
        ("public_url", config.public_url.clone()),
        ("database_url", db),
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
    let from = if log.filter_from == "default" { "the default".to_owned() } else { format!("from {}", log.filter_from) };
    rows.push(("log.filter".to_owned(), format!("{} ({from})", log.filter)));
    rows.push(("log.format".to_owned(), log_format.to_owned()));
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in rows {
        writeln!(out, "{k:width$}  {v}")?;
    }
    writeln!(out, "configuration OK")?;
    Ok(())
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

/// `strongroom man`: the man page on standard output, or with `--out-dir`
/// one page per command (`strongroom.1`, `strongroom-admin.1`, …).
pub(crate) fn man(out_dir: Option<&Path>) -> Result<()> {
    let cmd = crate::Cli::command();
    match out_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(cmd, dir).with_context(|| format!("writing man pages into {}", dir.display()))?;
            Ok(())
        }
        None => {
            let mut buf = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut buf)?;
            if buf.is_empty() {
                bail!("the man page came out empty");
            }
            std::io::stdout().lock().write_all(&buf)?;
            Ok(())
        }
    }
}
