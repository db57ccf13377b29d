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

/// Connection parameters whose value is a secret: the password and the
/// passphrase of the client certificate's key.
const SECRET_PARAMETERS: [&str; 2] = ["password", "sslpassword"];

/// What every secret is shown as.
const MASK: &str = "****";

fn is_secret_parameter(key: &str) -> bool {
    let key = percent_decode(key.trim());
    SECRET_PARAMETERS.iter().any(|s| key.eq_ignore_ascii_case(s))
}

/// `%XX` decoded (libpq decodes a URL's parameter names before it reads
/// them, so `pass%77ord` is `password`); anything else is kept as it is.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A database URL or libpq `key=value` connection string with every secret
/// replaced by `****`: a URL's userinfo password and every `password` or
/// `sslpassword` parameter, wherever it stands, in any case, percent-encoded
/// or not. Anything else (a SQLite path) is shown as it is.
pub(crate) fn mask_database_url(url: &str) -> String {
    match url.find("://") {
        Some(scheme_end) => mask_url(url, scheme_end + 3),
        None if url.contains('=') => mask_keywords(url),
        None => url.to_owned(),
    }
}

/// `scheme://[user[:password]@]host…[/db][?k=v&…]`. libpq ends the userinfo
/// at the first `@` before any `/` (a `?` does not end it); this takes the
/// last such `@`, so a password holding an unencoded `@` is hidden whole.
fn mask_url(url: &str, rest_start: usize) -> String {
    let rest = &url[rest_start..];
    let netloc_end = rest.find('/').unwrap_or(rest.len());
    let mut out = url[..rest_start].to_owned();
    let after_userinfo = match rest[..netloc_end].rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            match userinfo.find(':') {
                Some(colon) => {
                    out.push_str(&userinfo[..=colon]);
                    out.push_str(MASK);
                }
                None => out.push_str(userinfo),
            }
            out.push('@');
            at + 1
        }
        None => 0,
    };
    let tail = &rest[after_userinfo..];
    let Some(q) = tail.find('?') else {
        out.push_str(tail);
        return out;
    };
    out.push_str(&tail[..=q]);
    // A part without `=` right after a secret is the rest of that secret
    // (an unencoded `&` in it): hidden too.
    let mut in_secret = false;
    let params: Vec<String> = tail[q + 1..]
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if is_secret_parameter(k) => {
                in_secret = true;
                format!("{k}={MASK}")
            }
            None if in_secret => MASK.to_owned(),
            _ => {
                in_secret = false;
                p.to_owned()
            }
        })
        .collect();
    out.push_str(&params.join("&"));
    out
}

/// libpq's `key = value …` form: values bare or in single quotes, `\`
/// escaping the next character in both.
fn mask_keywords(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        // Whitespace, then a key up to `=` or whitespace.
        let start = i;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let key_start = i;
        while i < b.len() && b[i] != b'=' && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &text[key_start..i];
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() || b[i] != b'=' {
            // Not `key=value`: keep it and go on.
            out.push_str(&text[start..i]);
            continue;
        }
        i += 1;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        out.push_str(&text[start..i]);
        let value_start = i;
        if i < b.len() && b[i] == b'\'' {
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
        } else {
            while i < b.len() && !b[i].is_ascii_whitespace() {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = i.min(b.len());
        }
        if is_secret_parameter(key) {
            out.push_str(MASK);
        } else {
            out.push_str(&text[value_start..i]);
        }
    }
    out
}

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
    let db = mask_database_url(&config.database_url);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// (connection string, what `config check` shows, the secrets in it).
    const MASKED: &[(&str, &str, &[&str])] = &[
        // URL userinfo.
        ("postgres://sr:s3cr%40t@db.internal:5432/sr", "postgres://sr:****@db.internal:5432/sr", &["s3cr"]),
        ("postgres://a:b:c@h/d", "postgres://a:****@h/d", &["b:c"]),
        ("postgres://sr:p@ss@db/sr", "postgres://sr:****@db/sr", &["p@ss", "ss@"]),
        ("postgres://sr:p?x=1@db/sr", "postgres://sr:****@db/sr", &["p?x"]),
        (
            "postgresql://sr:pw@h1:5432,h2:5433/sr?target_session_attrs=read-write",
            "postgresql://sr:****@h1:5432,h2:5433/sr?target_session_attrs=read-write",
            &[":pw@"],
        ),
        // Query parameters: every secret one, wherever it stands (the bug:
        // only the first `password=`, here the one inside `sslpassword`, was masked).
        ("postgres://sr@db/sr?sslpassword=a&password=secret", "postgres://sr@db/sr?sslpassword=****&password=****", &["=a", "secret"]),
        (
            "postgres://sr@db/sr?password=secret&sslpassword=keypass",
            "postgres://sr@db/sr?password=****&sslpassword=****",
            &["secret", "keypass"],
        ),
        ("postgresql://sr@db/sr?sslmode=disable&password=hunter2", "postgresql://sr@db/sr?sslmode=disable&password=****", &["hunter2"]),
        ("postgres://sr@db/sr?password=one&password=two", "postgres://sr@db/sr?password=****&password=****", &["one", "two"]),
        ("postgres://sr@db/sr?Password=UP&SSLPASSWORD=KP", "postgres://sr@db/sr?Password=****&SSLPASSWORD=****", &["UP", "KP"]),
        ("postgres://sr@db/sr?pass%77ord=enc&ssl%70assword=enc2", "postgres://sr@db/sr?pass%77ord=****&ssl%70assword=****", &["enc"]),
        ("postgres://sr@db/sr?password=a&b&sslmode=require", "postgres://sr@db/sr?password=****&****&sslmode=require", &["=a", "&b"]),
        (
            "postgres://u:pw@db/sr?sslpassword=kp&sslmode=verify-full",
            "postgres://u:****@db/sr?sslpassword=****&sslmode=verify-full",
            &["pw", "kp"],
        ),
        ("postgresql:///sr?host=/run/postgresql&password=sock", "postgresql:///sr?host=/run/postgresql&password=****", &["sock"]),
        // libpq key=value.
        ("host=db user=sr password=secret dbname=sr", "host=db user=sr password=**** dbname=sr", &["secret"]),
        ("host=db sslpassword=a password=b", "host=db sslpassword=**** password=****", &["=a", "=b"]),
        ("host=db password = 'two words' sslmode=require", "host=db password = **** sslmode=require", &["two", "words"]),
        ("password='it\\'s' sslpassword=x\\ y user=sr", "password=**** sslpassword=**** user=sr", &["it", "x\\", " y "]),
        // Nothing secret: shown as it is.
        ("postgres://sr@db/sr", "postgres://sr@db/sr", &[]),
        ("postgres://sr@db/sr?sslmode=require&passfile=/etc/pgpass", "postgres://sr@db/sr?sslmode=require&passfile=/etc/pgpass", &[]),
        ("host=db user=sr", "host=db user=sr", &[]),
        ("/var/lib/strongroom/strongroom.db", "/var/lib/strongroom/strongroom.db", &[]),
        ("sqlite:///var/lib/strongroom/strongroom.db", "sqlite:///var/lib/strongroom/strongroom.db", &[]),
    ];

    #[test]
    fn every_database_secret_is_masked() {
        for (url, shown, secrets) in MASKED {
            let masked = mask_database_url(url);
            assert_eq!(masked, *shown, "{url}");
            for s in *secrets {
                assert!(!masked.contains(s), "{url}: {s:?} shows in {masked}");
            }
        }
    }

    #[test]
    fn odd_connection_strings_do_not_trip_the_masking() {
        for s in [
            "",
            "=",
            "==",
            "password",
            "password=",
            "password='unterminated",
            "x=\\",
            "k=é\\é v=1",
            "postgres://",
            "postgres://@",
            "postgres://?&&=",
            "a://b?password",
        ] {
            let masked = mask_database_url(s);
            assert!(!masked.contains("unterminated"), "{s} → {masked}");
        }
    }
}
