//! Configuration: a TOML file, then environment variables, then command-line
//! flags, each overriding the one before. Read once at start-up into a
//! validated [`Config`] that is passed down; nothing reads configuration
//! globally.

use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use strongroom_core::integration::TokenSettings;

use crate::http::client_addr::Network;
use crate::service::keyring::settings::{KeysConfig, RawKeys};

/// The file as written by people. Every field is optional.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub data_dir: Option<PathBuf>,
    pub listen: Option<String>,
    pub public_url: Option<String>,
    pub database_url: Option<String>,
    pub insecure_http: Option<bool>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub max_body_bytes: Option<usize>,
    pub request_timeout_secs: Option<u64>,
    /// Proxies (addresses or CIDR networks) whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Option<Vec<String>>,
    #[serde(default)]
    pub tokens: RawTokens,
    /// `[keys]`: the named keys of the vault.
    #[serde(default)]
    pub keys: RawKeys,
    #[serde(default)]
    pub metrics: RawMetrics,
}

/// `[metrics]`: where `GET /metrics` is served.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetrics {
    /// A listener of its own (plain HTTP), e.g. `127.0.0.1:9090`; unset:
    /// `/metrics` on the main listener.
    pub listen: Option<String>,
}

/// `[tokens]`: the server-wide defaults ("remote tree settings"); each API
/// integration may override them.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTokens {
    pub access_validity: Option<i64>,
    pub grant_validity: Option<i64>,
    pub refreshable: Option<bool>,
    pub device_code_validity: Option<i64>,
    pub poll_interval: Option<i64>,
    /// Seconds in which a just-rotated refresh token (or a redeemed device
    /// code) may come back for an answer that was lost; 0 is strict.
    pub retry_window: Option<i64>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("parsing {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{name}: {message}")]
    Invalid { name: &'static str, message: String },
}

/// The validated configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    /// Absolute base URL clients and browsers reach us at, without a
    /// trailing slash; `verification_uri` is built from it.
    pub public_url: String,
    pub database_url: String,
    pub tls: Tls,
    pub max_body_bytes: usize,
    pub request_timeout_secs: u64,
    pub trusted_proxies: Vec<Network>,
    pub tokens: TokenSettings,
    pub keys: KeysConfig,
    /// `[metrics] listen`: `/metrics` on a listener of its own instead of the main one.
    pub metrics_listen: Option<SocketAddr>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tls {
    /// Plain HTTP (`--insecure-http`): behind a TLS-terminating proxy, or in tests.
    Off,
    /// A self-signed certificate kept in the data directory, created on first start.
    SelfSigned,
    /// Certificate chain and key from PEM files.
    Files { cert: PathBuf, key: PathBuf },
}

pub const DEFAULT_DATA_DIR: &str = "strongroom-data";
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8443";

impl RawConfig {
    /// Reads a TOML file.
    pub fn from_file(path: &Path) -> Result<RawConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
        toml::from_str(&text).map_err(|e| ConfigError::Parse { path: path.to_owned(), message: e.to_string() })
    }

    /// Applies `STRONGROOM_*` variables from `env` (a lookup function, so
    /// tests need not touch the process environment).
    pub fn with_env(mut self, env: impl Fn(&str) -> Option<String>) -> Result<RawConfig, ConfigError> {
        fn parse<T: std::str::FromStr>(name: &'static str, v: String) -> Result<T, ConfigError> {
            v.trim().parse().map_err(|_| ConfigError::Invalid { name, message: format!("cannot read {v:?}") })
        }
        if let Some(v) = env("STRONGROOM_DATA_DIR") {
            self.data_dir = Some(v.into());
        }
        if let Some(v) = env("STRONGROOM_LISTEN") {
            self.listen = Some(v);
        }
        if let Some(v) = env("STRONGROOM_PUBLIC_URL") {
            self.public_url = Some(v);
        }
        if let Some(v) = env("STRONGROOM_DATABASE_URL") {
            self.database_url = Some(v);
        }
        if let Some(v) = env("STRONGROOM_INSECURE_HTTP") {
            self.insecure_http = Some(parse("STRONGROOM_INSECURE_HTTP", v)?);
        }
        if let Some(v) = env("STRONGROOM_TLS_CERT") {
            self.tls_cert = Some(v.into());
        }
        if let Some(v) = env("STRONGROOM_TLS_KEY") {
            self.tls_key = Some(v.into());
        }
        if let Some(v) = env("STRONGROOM_TRUSTED_PROXIES") {
            self.trusted_proxies = Some(v.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect());
        }
        if let Some(v) = env("STRONGROOM_DEFAULT_KEY") {
            self.keys.default = Some(v.trim().to_owned());
        }
        if let Some(v) = env("STRONGROOM_METRICS_LISTEN") {
            self.metrics.listen = Some(v);
        }
        let t = &mut self.tokens;
        if let Some(v) = env("STRONGROOM_ACCESS_VALIDITY") {
            t.access_validity = Some(parse("STRONGROOM_ACCESS_VALIDITY", v)?);
        }
        if let Some(v) = env("STRONGROOM_GRANT_VALIDITY") {
            t.grant_validity = Some(parse("STRONGROOM_GRANT_VALIDITY", v)?);
        }
        if let Some(v) = env("STRONGROOM_REFRESHABLE") {
            t.refreshable = Some(parse("STRONGROOM_REFRESHABLE", v)?);
        }
        if let Some(v) = env("STRONGROOM_DEVICE_CODE_VALIDITY") {
            t.device_code_validity = Some(parse("STRONGROOM_DEVICE_CODE_VALIDITY", v)?);
        }
        if let Some(v) = env("STRONGROOM_POLL_INTERVAL") {
            t.poll_interval = Some(parse("STRONGROOM_POLL_INTERVAL", v)?);
        }
        if let Some(v) = env("STRONGROOM_RETRY_WINDOW") {
            t.retry_window = Some(parse("STRONGROOM_RETRY_WINDOW", v)?);
        }
        Ok(self)
    }

    /// Checks every value and fills in the defaults.
    pub fn validate(self) -> Result<Config, ConfigError> {
        let data_dir = self.data_dir.unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        let listen_text = self.listen.unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
        let listen: SocketAddr = listen_text
            .parse()
            .map_err(|_| ConfigError::Invalid { name: "listen", message: format!("{listen_text:?} is not an address:port") })?;
        let tls = match (self.insecure_http.unwrap_or(false), self.tls_cert, self.tls_key) {
            (true, _, _) => Tls::Off,
            (false, Some(cert), Some(key)) => Tls::Files { cert, key },
            (false, None, None) => Tls::SelfSigned,
            _ => {
                return Err(ConfigError::Invalid { name: "tls_cert", message: "tls_cert and tls_key go together".into() });
            }
        };
        let public_url = match self.public_url {
            Some(u) => {
                let u = u.trim_end_matches('/').to_owned();
                if !(u.starts_with("https://") || u.starts_with("http://")) || u.len() < 10 {
                    return Err(ConfigError::Invalid { name: "public_url", message: "must be an absolute http(s) URL".into() });
                }
                u
            }
            None => {
                let scheme = if tls == Tls::Off { "http" } else { "https" };
                let host = if listen.ip().is_unspecified() || listen.ip().is_loopback() {
                    "localhost".to_owned()
                } else if listen.is_ipv6() {
                    format!("[{}]", listen.ip())
                } else {
                    listen.ip().to_string()
                };
                format!("{scheme}://{host}:{}", listen.port())
            }
        };
        let database_url = self.database_url.unwrap_or_else(|| data_dir.join("strongroom.db").to_string_lossy().into_owned());
        let d = TokenSettings::default();
        let t = self.tokens;
        let tokens = TokenSettings {
            access_validity: t.access_validity.unwrap_or(d.access_validity),
            grant_validity: t.grant_validity.unwrap_or(d.grant_validity),
            refreshable: t.refreshable.unwrap_or(d.refreshable),
            device_code_validity: t.device_code_validity.unwrap_or(d.device_code_validity),
            poll_interval: t.poll_interval.unwrap_or(d.poll_interval),
            retry_window: t.retry_window.unwrap_or(d.retry_window),
        };
        check_tokens(&tokens)?;
        let max_body_bytes = self.max_body_bytes.unwrap_or(1 << 20);
        if !(1024..=64 << 20).contains(&max_body_bytes) {
            return Err(ConfigError::Invalid { name: "max_body_bytes", message: "must be between 1 KiB and 64 MiB".into() });
        }
        let mut trusted_proxies = Vec::new();
        for p in self.trusted_proxies.unwrap_or_default() {
            trusted_proxies.push(Network::parse(&p).ok_or_else(|| ConfigError::Invalid {
                name: "trusted_proxies",
                message: format!("{p:?} is not an address or CIDR network"),
            })?);
        }
        let keys = self.keys.validate().map_err(|(name, message)| ConfigError::Invalid { name, message })?;
        let metrics_listen = match self.metrics.listen.filter(|l| !l.trim().is_empty()) {
            Some(l) => Some(
                l.trim()
                    .parse()
                    .map_err(|_| ConfigError::Invalid { name: "metrics.listen", message: format!("{l:?} is not an address:port") })?,
            ),
            None => None,
        };
        Ok(Config {
            keys,
            metrics_listen,
            trusted_proxies,
            data_dir,
            listen,
            public_url,
            database_url,
            tls,
            max_body_bytes,
            request_timeout_secs: self.request_timeout_secs.unwrap_or(30).clamp(1, 3600),
            tokens,
        })
    }
}

/// Bounds on token lifetimes, shared with `admin integrations` overrides.
pub fn check_tokens(t: &TokenSettings) -> Result<(), ConfigError> {
    let within = |name: &'static str, v: i64, lo: i64, hi: i64| {
        if (lo..=hi).contains(&v) {
            Ok(())
        } else {
            Err(ConfigError::Invalid { name, message: format!("{v} is outside {lo}..={hi} seconds") })
        }
    };
    within("access_validity", t.access_validity, 1, 10 * 365 * 86_400)?;
    within("grant_validity", t.grant_validity, 1, 100 * 365 * 86_400)?;
    within("device_code_validity", t.device_code_validity, 10, 86_400)?;
    within("poll_interval", t.poll_interval, 1, 300)?;
    within("retry_window", t.retry_window, 0, 300)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_work_out_of_the_box() {
        let c = RawConfig::default().validate().unwrap();
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(c.public_url, "https://localhost:8443");
        assert_eq!(c.tls, Tls::SelfSigned);
        assert!(c.database_url.ends_with("strongroom.db"));
        assert_eq!(c.tokens, TokenSettings::default());
    }

    #[test]
    fn env_overrides_file_and_bad_values_are_named() {
        let raw: RawConfig = toml::from_str("listen = \"0.0.0.0:9000\"\n[tokens]\naccess_validity = 60\n").unwrap();
        let env = |k: &str| match k {
            "STRONGROOM_INSECURE_HTTP" => Some("true".to_owned()),
            "STRONGROOM_POLL_INTERVAL" => Some("2".to_owned()),
            _ => None,
        };
        let c = raw.with_env(env).unwrap().validate().unwrap();
        assert_eq!(c.public_url, "http://localhost:9000");
        assert_eq!(c.tokens.access_validity, 60);
        assert_eq!(c.tokens.poll_interval, 2);
        // One key in both the file and the environment: the environment wins,
        // for a top-level key and a [tokens] key alike.
        let env = |k: &str| match k {
            "STRONGROOM_LISTEN" => Some("127.0.0.1:9001".to_owned()),
            "STRONGROOM_ACCESS_VALIDITY" => Some("120".to_owned()),
            "STRONGROOM_INSECURE_HTTP" => Some("false".to_owned()),
            _ => None,
        };
        let raw: RawConfig =
            toml::from_str("listen = \"0.0.0.0:9000\"\ninsecure_http = true\n[tokens]\naccess_validity = 60\npoll_interval = 7\n").unwrap();
        let c = raw.with_env(env).unwrap().validate().unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:9001");
        assert_eq!(c.tokens.access_validity, 120);
        assert_eq!(c.tls, Tls::SelfSigned, "STRONGROOM_INSECURE_HTTP=false overrides insecure_http = true");
        assert_eq!(c.tokens.poll_interval, 7, "a key the environment leaves alone keeps the file's value");
        let c = RawConfig::default().with_env(|k| (k == "STRONGROOM_TRUSTED_PROXIES").then(|| "10.0.0.0/8, ::1".to_owned())).unwrap();
        assert_eq!(c.validate().unwrap().trusted_proxies.len(), 2);
        let c = RawConfig { trusted_proxies: Some(vec!["10.0.0.0/99".into()]), ..Default::default() };
        assert!(c.validate().unwrap_err().to_string().starts_with("trusted_proxies"));
        let bad = RawConfig::default().with_env(|k| (k == "STRONGROOM_POLL_INTERVAL").then(|| "fast".to_owned()));
        assert!(bad.unwrap_err().to_string().contains("STRONGROOM_POLL_INTERVAL"));
        assert!(toml::from_str::<RawConfig>("lisen = \"x\"").is_err(), "unknown keys are refused");
        let raw = RawConfig { listen: Some("nope".into()), ..Default::default() };
        assert!(raw.validate().unwrap_err().to_string().starts_with("listen"));
    }
}
