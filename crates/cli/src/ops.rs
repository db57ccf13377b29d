//! Operator commands that need no server and no store: `config check`,
//! `completions`, `man`.

use anyhow::{Context as _, Result, bail};
use clap::CommandFactory as _;
use serde_json::json;
use std::io::Write as _;
use std::path::Path;

use strongroom_server::config::{Config, Tls};
use strongroom_server::keys;

/// A database URL with its password replaced by `****` (`user:PASSWORD@`
/// and `password=` parameters); a SQLite path is shown as it is.
pub(crate) fn mask_database_url(url: &str) -> String {
    let mut out = url.to_owned();
    if let Some(scheme_end) = out.find("://") {
        let rest_start = scheme_end + 3;
        let authority_end = out[rest_start..].find(['/', '?']).map_or(out.len(), |i| rest_start + i);
        if let Some(at) = out[rest_start..authority_end].rfind('@').map(|i| rest_start + i)
            && let Some(colon) = out[rest_start..at].find(':').map(|i| rest_start + i)
        {
            out.replace_range(colon + 1..at, "****");
        }
    }
    let lower = out.to_ascii_lowercase();
    if let Some(i) = lower.find("password=") {
        let start = i + "password=".len();
        let end = out[start..].find(['&', ' ']).map_or(out.len(), |j| start + j);
        out.replace_range(start..end, "****");
    }
    out
}

/// `strongroom config check`: the effective settings, secrets masked, after
/// the same validation `serve` does (plus the master key and TLS files).
pub(crate) fn config_check(config: &Config, json_out: bool) -> Result<()> {
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
    let db = mask_database_url(&config.database_url);
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
    });
    let mut out = std::io::stdout().lock();
    if json_out {
        writeln!(out, "{value}")?;
        return Ok(());
    }
    let rows: Vec<(&str, String)> = vec![
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
    ];
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_passwords_are_masked() {
        assert_eq!(mask_database_url("postgres://sr:s3cr%40t@db.internal:5432/sr"), "postgres://sr:****@db.internal:5432/sr");
        assert_eq!(
            mask_database_url("postgresql://sr@db/sr?sslmode=disable&password=hunter2"),
            "postgresql://sr@db/sr?sslmode=disable&password=****"
        );
        assert_eq!(mask_database_url("postgres://sr@db/sr"), "postgres://sr@db/sr");
        assert_eq!(mask_database_url("/var/lib/strongroom/strongroom.db"), "/var/lib/strongroom/strongroom.db");
        assert_eq!(mask_database_url("postgres://a:b:c@h/d"), "postgres://a:****@h/d");
    }
}
