//! TLS to PostgreSQL with rustls, and the connection-string settings
//! tokio-postgres does not read itself.
//!
//! `sslmode` follows libpq: `disable` (plain), `prefer` (the default: TLS
//! when the server offers it, unverified), `require` (TLS, unverified; with
//! an `sslrootcert` it verifies the chain, as libpq does), `verify-ca` (the
//! chain up to a trusted root) and `verify-full` (the chain and the host
//! name). `sslrootcert=FILE` names the PEM roots; without it (or with
//! `sslrootcert=system`) the web PKI roots are trusted. Both settings are
//! taken out of the URL or key=value string here; the rest goes to
//! `tokio_postgres::Config` unchanged (multi-host lists,
//! `target_session_attrs`, timeouts, …).

use std::str::FromStr as _;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use rustls::{CertificateError, ClientConfig, RootCertStore};
use strongroom_proto::tls::Verifier;
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::{StoreError, StoreResult};

/// What `sslmode` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    fn parse(s: &str) -> StoreResult<Mode> {
        Ok(match s {
            "disable" => Mode::Disable,
            "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            other => {
                return Err(StoreError::other(format!(
                    "database url: sslmode {other:?} is not one of disable, prefer, require, verify-ca, verify-full"
                )));
            }
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Disable => "disable",
            Mode::Prefer => "prefer",
            Mode::Require => "require",
            Mode::VerifyCa => "verify-ca",
            Mode::VerifyFull => "verify-full",
        }
    }
}

/// How the server's certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    /// Encrypt, trust any certificate (libpq's `prefer` and `require`).
    Nothing,
    /// The chain up to a trusted root, whatever the name.
    Chain,
    /// The chain and the host name.
    Full,
}

/// A parsed connection string: the driver's configuration and the TLS
/// connector it connects with (tokio-postgres-rustls over a rustls
/// configuration of ours, so the checks below plug in).
pub(crate) struct Connect {
    pub(crate) config: tokio_postgres::Config,
    pub(crate) tls: MakeRustlsConnect,
    pub(crate) mode: Mode,
    check: Check,
    /// `pool_max_size`: connections per replica, when the string sets it.
    pub(crate) pool_max_size: Option<usize>,
}

impl std::fmt::Debug for Connect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The configuration's Debug hides the password.
        f.debug_struct("Connect")
            .field("config", &self.config)
            .field("mode", &self.mode)
            .field("check", &self.check)
            .finish_non_exhaustive()
    }
}

/// Parses a `postgres://` URL or a `key=value` string.
pub(crate) fn parse(url: &str) -> StoreResult<Connect> {
    let (rest, settings) = take_settings(url)?;
    let mut config = tokio_postgres::Config::from_str(&rest).map_err(|e| StoreError::other(format!("database url: {e}")))?;
    let mode = settings.mode.map(|m| Mode::parse(&m)).transpose()?.unwrap_or(Mode::Prefer);
    config.ssl_mode(match mode {
        Mode::Disable => SslMode::Disable,
        Mode::Prefer => SslMode::Prefer,
        Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
    });
    let check = match mode {
        Mode::VerifyFull => Check::Full,
        Mode::VerifyCa => Check::Chain,
        Mode::Require if settings.root_cert.is_some() => Check::Chain,
        Mode::Disable | Mode::Prefer | Mode::Require => Check::Nothing,
    };
    let tls = MakeRustlsConnect::new(tls_config(check, settings.root_cert.as_deref())?);
    let pool_max_size = settings
        .pool_max_size
        .map(|n| match n.parse::<usize>() {
            Ok(n @ 1..=1000) => Ok(n),
            _ => Err(StoreError::other(format!("database url: pool_max_size {n:?} is not a number from 1 to 1000"))),
        })
        .transpose()?;
    Ok(Connect { config, tls, mode, check, pool_max_size })
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Settings {
    mode: Option<String>,
    root_cert: Option<String>,
    pool_max_size: Option<String>,
}

impl Settings {
    /// Keeps `key`'s value if it is one of ours; `false` for any other key.
    fn take(&mut self, key: &str, value: String) -> bool {
        match key {
            "sslmode" => self.mode = Some(value),
            "sslrootcert" => self.root_cert = Some(value),
            "pool_max_size" => self.pool_max_size = Some(value),
            _ => return false,
        }
        true
    }
}

/// Splits `sslmode`, `sslrootcert` and `pool_max_size` (ours, not the
/// driver's) off a URL or key=value string.
fn take_settings(url: &str) -> StoreResult<(String, Settings)> {
    let mut s = Settings::default();
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((base, query)) = url.split_once('?') else {
            return Ok((url.to_owned(), s));
        };
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if !s.take(&percent_decode(k)?, percent_decode(v)?) {
                kept.push(pair);
            }
        }
        let rest = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
        return Ok((rest, s));
    }
    let mut kept = Vec::new();
    for (k, v) in key_values(url)? {
        if !s.take(&k, v.clone()) {
            kept.push(format!("{k}='{}'", v.replace('\\', "\\\\").replace('\'', "\\'")));
        }
    }
    Ok((kept.join(" "), s))
}

/// `%XX` → byte, as URLs carry them (and as the driver reads its own
/// parameters: a `%` not followed by two hexadecimal digits stays as it is).
fn percent_decode(s: &str) -> StoreResult<String> {
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(std::borrow::Cow::into_owned)
        .map_err(|_| StoreError::other("database url: a percent-encoded value is not UTF-8"))
}

/// The pairs of a libpq `key=value` string (values bare or in single
/// quotes, backslash escapes).
fn key_values(s: &str) -> StoreResult<Vec<(String, String)>> {
    let bad = |what: &str| StoreError::other(format!("database url: {what}"));
    let mut out = Vec::new();
    let mut it = s.chars().peekable();
    loop {
        while it.next_if(|c| c.is_whitespace()).is_some() {}
        if it.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(c) = it.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while it.next_if(|c| c.is_whitespace()).is_some() {}
        if it.next() != Some('=') {
            return Err(bad(&format!("expected = after {key:?}")));
        }
        while it.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if it.next_if_eq(&'\'').is_some() {
            loop {
                match it.next() {
                    None => return Err(bad("unterminated quoted value")),
                    Some('\'') => break,
                    Some('\\') => value.push(it.next().ok_or_else(|| bad("unterminated quoted value"))?),
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = it.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.push(it.next().ok_or_else(|| bad("a trailing backslash"))?);
                } else {
                    value.push(c);
                }
            }
        }
        out.push((key, value));
    }
}

/// The rustls configuration for `check`: rustls's own verifier for
/// `verify-full`; for `verify-ca` the same, with a name mismatch forgiven
/// (the chain was verified before the name); for `prefer` and `require`
/// any certificate (encryption against a passive listener, no
/// authentication of the server, as libpq does).
fn tls_config(check: Check, root_cert: Option<&str>) -> StoreResult<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::other(format!("database TLS: {e}")))?;
    let verifier: Arc<dyn ServerCertVerifier> = match check {
        Check::Nothing => Verifier::new("any certificate", provider, |_, _, _, _, _| Ok(ServerCertVerified::assertion())),
        Check::Chain | Check::Full => {
            let roots = Arc::new(roots(root_cert)?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| StoreError::other(format!("database TLS roots: {e}")))?;
            if check == Check::Full {
                webpki
            } else {
                Verifier::new("the chain, any name", provider, move |end_entity, intermediates, name, ocsp, now| {
                    match webpki.verify_server_cert(end_entity, intermediates, name, ocsp, now) {
                        Err(rustls::Error::InvalidCertificate(
                            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
                        )) => Ok(ServerCertVerified::assertion()),
                        other => other,
                    }
                })
            }
        }
    };
    Ok(builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth())
}

fn roots(root_cert: Option<&str>) -> StoreResult<RootCertStore> {
    match root_cert {
        None | Some("system") => Ok(RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() }),
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| StoreError::other(format!("database TLS: reading sslrootcert {path}: {e}")))?;
            if certs.is_empty() {
                return Err(StoreError::other(format!("database TLS: sslrootcert {path} holds no certificate")));
            }
            let mut store = RootCertStore::empty();
            for c in certs {
                store.add(c).map_err(|e| StoreError::other(format!("database TLS: sslrootcert {path}: {e}")))?;
            }
            Ok(store)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_settings_are_taken_out_and_the_rest_kept() {
        let (rest, s) = take_settings(
            "postgres://u:p@h1:5432,h2:5433/db?sslmode=verify-full&target_session_attrs=read-write&sslrootcert=%2Fetc%2Fca.pem&pool_max_size=12",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u:p@h1:5432,h2:5433/db?target_session_attrs=read-write");
        assert_eq!(
            s,
            Settings { mode: Some("verify-full".into()), root_cert: Some("/etc/ca.pem".into()), pool_max_size: Some("12".into()) }
        );
        let (rest, s) = take_settings("postgres://h/db?sslmode=require").unwrap();
        assert_eq!((rest.as_str(), s.mode.as_deref()), ("postgres://h/db", Some("require")));
        assert_eq!(take_settings("postgres://h/db").unwrap().0, "postgres://h/db");
    }

    #[test]
    fn key_value_settings_are_taken_out_and_the_rest_kept() {
        let (rest, s) =
            take_settings("host=a,b port=1,2 sslmode = verify-ca sslrootcert='/x y/ca.pem' password='it\\'s' dbname=d").unwrap();
        assert_eq!(s, Settings { mode: Some("verify-ca".into()), root_cert: Some("/x y/ca.pem".into()), pool_max_size: None });
        assert_eq!(rest, "host='a,b' port='1,2' password='it\\'s' dbname='d'");
        let c = tokio_postgres::Config::from_str(&rest).unwrap();
        assert_eq!(c.get_password(), Some(&b"it's"[..]));
        assert_eq!(c.get_ports(), &[1, 2]);
        assert!(take_settings("host").is_err());
        assert!(take_settings("host='a").is_err());
    }

    #[test]
    fn modes_map_to_the_driver_and_a_check() {
        let c = parse("postgres://h/db?sslmode=verify-full").unwrap();
        assert_eq!((c.mode, c.check, c.config.get_ssl_mode()), (Mode::VerifyFull, Check::Full, SslMode::Require));
        let c = parse("postgres://h/db?sslmode=verify-ca").unwrap();
        assert_eq!((c.check, c.config.get_ssl_mode()), (Check::Chain, SslMode::Require));
        let c = parse("postgres://h/db?sslmode=require").unwrap();
        assert_eq!((c.check, c.config.get_ssl_mode()), (Check::Nothing, SslMode::Require));
        let c = parse("host=h sslmode=disable").unwrap();
        assert_eq!(c.config.get_ssl_mode(), SslMode::Disable);
        let c = parse("postgres://h/db").unwrap();
        assert_eq!((c.mode, c.config.get_ssl_mode()), (Mode::Prefer, SslMode::Prefer));
        let err = parse("postgres://h/db?sslmode=sometimes").unwrap_err().to_string();
        assert!(err.contains("verify-full"), "{err}");
        let err = parse("postgres://h/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem").unwrap_err().to_string();
        assert!(err.contains("/nonexistent/ca.pem"), "{err}");
    }

    #[test]
    fn the_pool_size_is_a_bounded_number() {
        assert_eq!(parse("postgres://h/db").unwrap().pool_max_size, None);
        assert_eq!(parse("postgres://h/db?pool_max_size=16").unwrap().pool_max_size, Some(16));
        assert_eq!(parse("host=h pool_max_size=3").unwrap().pool_max_size, Some(3));
        for bad in ["0", "1001", "-1", "many", ""] {
            let err = parse(&format!("postgres://h/db?pool_max_size={bad}")).unwrap_err().to_string();
            assert!(err.contains("pool_max_size"), "{bad}: {err}");
        }
    }
}
