//! Configuration: a TOML file, then environment variables, then command-line
//! flags, each overriding the one before. Read once at start-up into a
//! validated [`Config`] that is passed down; nothing reads configuration
//! globally.

use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use strongroom_app::keygen::KeyGenLimits;
use strongroom_core::integration::TokenSettings;

use strongroom_http::client_addr::Network;
pub use strongroom_idp::jwks::JwtSettings;
use strongroom_keyring::settings::{KeysConfig, RawKeys};

mod example;
pub use example::example;

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
    #[serde(default)]
    pub events: RawEvents,
    /// `[jwt]`: how the JWT grant fetches and keeps issuers' keys.
    #[serde(default)]
    pub jwt: RawJwt,
    /// `[certificate]`: the certificate grant's listener.
    #[serde(default)]
    pub certificate: RawCertificate,
    /// `[key_generation]`: the bounds on the keys the server makes for certificate requests.
    #[serde(default)]
    pub key_generation: RawKeyGeneration,
    /// `[ldap]`: an LDAP or Active Directory identity provider.
    #[serde(default)]
    pub ldap: RawLdap,
    /// `[oidc]`: an OpenID Connect provider for the approval page.
    #[serde(default)]
    pub oidc: RawOidc,
}

/// `[jwt]`: fetching and caching JWT issuers' keys.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawJwt {
    pub key_cache_secs: Option<i64>,
    pub refetch_min_secs: Option<i64>,
    pub fetch_timeout_secs: Option<i64>,
    /// Extra CA certificates (PEM) trusted for key sources, besides the public roots.
    pub ca_file: Option<PathBuf>,
}

/// `[certificate]`: the certificate grant.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCertificate {
    /// A TLS listener of its own that asks for client certificates; unset: no certificate grant.
    pub listen: Option<String>,
    /// CRL files (PEM or DER) checked for every client certificate.
    pub crl_files: Option<Vec<PathBuf>>,
    /// A header a trusted proxy puts the client certificate in (PEM, URL-encoded).
    pub proxy_header: Option<String>,
    /// How often the listener reads the certificate mappings' CAs again.
    pub reload_secs: Option<i64>,
}

/// `[key_generation]`: the RSA keys the server makes for central certificate requests
/// (`strongroom_app::keygen`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKeyGeneration {
    pub concurrency: Option<i64>,
    pub per_identity: Option<i64>,
    pub waiting: Option<i64>,
}

impl RawKeyGeneration {
    fn validate(&self) -> Result<KeyGenLimits, ConfigError> {
        let d = KeyGenLimits::for_this_machine();
        let count = |name: &'static str, v: Option<i64>, default: usize, range: std::ops::RangeInclusive<i64>| match v {
            None => Ok(default),
            Some(v) if range.contains(&v) => Ok(usize::try_from(v).unwrap_or(default)),
            Some(v) => Err(ConfigError::Invalid { name, message: format!("{v} is out of range: {} to {}", range.start(), range.end()) }),
        };
        Ok(KeyGenLimits {
            concurrency: count("key_generation.concurrency", self.concurrency, d.concurrency, 1..=256)?,
            per_identity: count("key_generation.per_identity", self.per_identity, d.per_identity, 1..=1024)?,
            waiting: count("key_generation.waiting", self.waiting, d.waiting, 0..=4096)?,
        })
    }
}

/// The certificate grant's listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateSettings {
    pub listen: SocketAddr,
    pub crl_files: Vec<PathBuf>,
    pub proxy_header: Option<String>,
    /// Seconds between two reads of the certificate mappings' CAs by the listener.
    pub reload_secs: i64,
}

/// `[oidc]`: "Sign in with …" on the approval page. Unset `issuer`: none.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOidc {
    pub issuer: Option<String>,
    pub client_id: Option<String>,
    pub client_secret_file: Option<PathBuf>,
    pub client_secret_env: Option<String>,
    pub name: Option<String>,
    pub name_claim: Option<String>,
    pub groups_claim: Option<String>,
    pub scopes: Option<String>,
    pub timeout_secs: Option<u64>,
    /// Extra CA certificates (PEM) trusted for the provider, besides the public roots.
    pub ca_file: Option<PathBuf>,
    /// How long after a sign-in through the provider its grants may be refreshed.
    pub session_secs: Option<i64>,
}

/// The variable the OIDC client secret is read from when neither
/// `oidc.client_secret_file` nor `oidc.client_secret_env` is set.
pub const OIDC_SECRET_ENV: &str = "STRONGROOM_OIDC_CLIENT_SECRET";

impl RawOidc {
    fn validate(self) -> Result<Option<strongroom_idp::oidc::OidcConfig>, ConfigError> {
        let Some(issuer) = self.issuer.filter(|u| !u.trim().is_empty()) else { return Ok(None) };
        let bad = |name: &'static str, message: String| ConfigError::Invalid { name, message };
        let issuer = issuer.trim().trim_end_matches('/').to_owned();
        if !(issuer.starts_with("https://") || strongroom_idp::jwks::is_loopback_http(&issuer)) {
            return Err(bad("oidc.issuer", format!("{issuer:?}: an https:// URL (http:// only on a loopback address)")));
        }
        let client_id =
            self.client_id.filter(|s| !s.is_empty()).ok_or_else(|| bad("oidc.client_id", "is required with oidc.issuer".into()))?;
        let name = self.name.unwrap_or_else(|| "sso".to_owned());
        if name.is_empty() || name.len() > 32 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(bad("oidc.name", format!("{name:?}: 1 to 32 letters, digits, - or _")));
        }
        let timeout_secs = self.timeout_secs.unwrap_or(5);
        if !(1..=60).contains(&timeout_secs) {
            return Err(bad("oidc.timeout_secs", "1 to 60".into()));
        }
        let session_secs = self.session_secs.unwrap_or(strongroom_idp::oidc::SESSION_SECS);
        if !(300..=2_592_000).contains(&session_secs) {
            return Err(bad("oidc.session_secs", "300 to 2592000 (30 days)".into()));
        }
        let client_secret_env = match (&self.client_secret_file, self.client_secret_env) {
            (Some(_), _) => None,
            (None, e) => Some(e.unwrap_or_else(|| OIDC_SECRET_ENV.to_owned())),
        };
        Ok(Some(strongroom_idp::oidc::OidcConfig {
            issuer,
            client_id,
            client_secret_file: self.client_secret_file,
            client_secret_env,
            name,
            name_claim: self.name_claim.unwrap_or_else(|| "preferred_username".to_owned()),
            groups_claim: self.groups_claim.unwrap_or_else(|| "groups".to_owned()),
            scopes: self.scopes.unwrap_or_else(|| "openid profile".to_owned()),
            timeout: std::time::Duration::from_secs(timeout_secs),
            ca_file: self.ca_file,
            session_secs,
        }))
    }
}

/// `[ldap]`: people sign in with their directory password; their directory
/// groups join the rights model. Unset `url`: no directory.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLdap {
    pub url: Option<String>,
    pub starttls: Option<bool>,
    pub ca_file: Option<PathBuf>,
    pub profile: Option<String>,
    pub name: Option<String>,
    pub bind_dn: Option<String>,
    pub bind_password_file: Option<PathBuf>,
    pub bind_password_env: Option<String>,
    pub user_base: Option<String>,
    pub user_filter: Option<String>,
    pub login_attribute: Option<String>,
    pub id_attribute: Option<String>,
    pub name_attribute: Option<String>,
    pub full_name_attribute: Option<String>,
    pub mail_attribute: Option<String>,
    pub group_base: Option<String>,
    pub group_filter: Option<String>,
    pub disabled_filter: Option<String>,
    pub timeout_secs: Option<u64>,
}

/// The variable the directory's service-account password is read from when
/// neither `ldap.bind_password_file` nor `ldap.bind_password_env` is set.
pub const LDAP_PASSWORD_ENV: &str = "STRONGROOM_LDAP_BIND_PASSWORD";

impl RawLdap {
    fn validate(self) -> Result<Option<strongroom_idp::directory::LdapConfig>, ConfigError> {
        use strongroom_idp::directory::{LdapConfig, Profile};
        let Some(url) = self.url.filter(|u| !u.trim().is_empty()) else { return Ok(None) };
        let bad = |name: &'static str, message: String| ConfigError::Invalid { name, message };
        let url = url.trim().to_owned();
        let starttls = self.starttls.unwrap_or(false);
        if !(url.starts_with("ldaps://") || (url.starts_with("ldap://") && starttls)) {
            return Err(bad(
                "ldap.url",
                format!("{url:?}: passwords go to the directory only over TLS: use ldaps://HOST, or ldap://HOST with ldap.starttls = true"),
            ));
        }
        let profile = match self.profile.as_deref().map(str::trim).map(str::to_ascii_lowercase).as_deref() {
            None | Some("ldap") => Profile::Ldap,
            Some("ad") => Profile::Ad,
            Some(other) => return Err(bad("ldap.profile", format!("{other:?}: ldap or ad"))),
        };
        let name = self.name.unwrap_or_else(|| "dir".to_owned());
        if name.is_empty() || name.len() > 32 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(bad("ldap.name", format!("{name:?}: 1 to 32 letters, digits, - or _")));
        }
        let required = |v: Option<String>, n: &'static str| {
            v.filter(|s| !s.trim().is_empty()).ok_or_else(|| bad(n, "is required with ldap.url".into()))
        };
        let d = LdapConfig::defaults(profile);
        let timeout_secs = self.timeout_secs.unwrap_or(5);
        if !(1..=60).contains(&timeout_secs) {
            return Err(bad("ldap.timeout_secs", "1 to 60".into()));
        }
        let bind_password_env = match (&self.bind_password_file, self.bind_password_env) {
            (Some(_), _) => None,
            (None, e) => Some(e.unwrap_or_else(|| LDAP_PASSWORD_ENV.to_owned())),
        };
        Ok(Some(LdapConfig {
            url,
            starttls,
            ca_file: self.ca_file,
            profile,
            name,
            bind_dn: required(self.bind_dn, "ldap.bind_dn")?,
            bind_password_file: self.bind_password_file,
            bind_password_env,
            user_base: required(self.user_base, "ldap.user_base")?,
            user_filter: self.user_filter.unwrap_or_else(|| d.user_filter.to_owned()),
            login_attribute: self.login_attribute.unwrap_or_else(|| d.login_attribute.to_owned()),
            id_attribute: self.id_attribute.unwrap_or_else(|| d.id_attribute.to_owned()),
            name_attribute: self.name_attribute.unwrap_or_else(|| d.name_attribute.to_owned()),
            full_name_attribute: self.full_name_attribute.unwrap_or_else(|| d.full_name_attribute.to_owned()),
            mail_attribute: self.mail_attribute.unwrap_or_else(|| "mail".to_owned()),
            group_base: self.group_base.filter(|s| !s.trim().is_empty()),
            group_filter: self.group_filter.unwrap_or_else(|| d.group_filter.to_owned()),
            disabled_filter: match self.disabled_filter {
                Some(f) if f.trim().is_empty() => None,
                Some(f) => Some(f),
                None => d.disabled_filter.map(str::to_owned),
            },
            timeout: std::time::Duration::from_secs(timeout_secs),
        }))
    }
}

/// `[events]`: how long the event log keeps its events.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEvents {
    /// Events older than this many days are archived to `archive_dir` and
    /// deleted from the store, hourly; unset: kept forever.
    pub retention_days: Option<u32>,
    pub archive_dir: Option<PathBuf>,
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
    /// `[events]`: archive events older than this, if set.
    pub events_retention: Option<Retention>,
    pub jwt: JwtSettings,
    /// `[certificate] listen`: the certificate grant, on a listener of its own.
    pub certificate: Option<CertificateSettings>,
    /// `[key_generation]`: the bounds on the keys made for central certificate requests.
    pub key_generation: KeyGenLimits,
    /// `[ldap]`: the directory people may sign in through, if any.
    pub ldap: Option<strongroom_idp::directory::LdapConfig>,
    /// `[oidc]`: the OpenID Connect provider of the approval page, if any.
    pub oidc: Option<strongroom_idp::oidc::OidcConfig>,
}

/// The event log's retention: events older than `days` days go to a new
/// archive file in `archive_dir` every hour (`strongroom::archive`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    pub days: u32,
    pub archive_dir: PathBuf,
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

/// How a setting's text from the environment or a flag is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Text as given (an address, a URL).
    Text,
    /// A path.
    Path,
    /// Text with the spaces around it ignored (a key name).
    Name,
    /// `true` or `false`.
    Bool,
    /// Whole seconds.
    Seconds,
    /// A whole number.
    Integer,
    /// A comma-separated list (a TOML array in the file).
    List,
}

impl Kind {
    /// What a value of this kind may be, for error messages and the manual.
    pub fn accepted(self) -> &'static str {
        match self {
            Kind::Text | Kind::Name => "text",
            Kind::Path => "a path",
            Kind::Bool => "true or false",
            Kind::Seconds => "whole seconds, e.g. 3600",
            Kind::Integer => "a whole number",
            Kind::List => "a comma-separated list",
        }
    }
}

/// A command-line flag that sets a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag {
    /// Without the leading `--`.
    pub long: &'static str,
    /// Accepted after a subcommand too (`admin users list --data-dir D`).
    pub global: bool,
    /// What `--help` calls its value (`DIR`, `URL`); unused for a switch.
    pub value_name: &'static str,
}

/// One setting: its TOML key, variable, flag, kind, default and meaning.
/// [`SETTINGS`] is the one list that layers the file, the environment and
/// the flags (TOML, then `STRONGROOM_*`, then flags, each overriding the one
/// before) and that the manual (`strongroom man`'s `strongroom.toml(5)`)
/// and `config check` are made from: a new setting is a field of
/// [`RawConfig`] and a row here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The TOML key, dotted for a table (`tokens.access_validity`).
    pub key: &'static str,
    pub env: Option<&'static str>,
    pub flag: Option<Flag>,
    pub kind: Kind,
    /// The default, as people read it.
    pub default: &'static str,
    pub help: &'static str,
}

const fn setting(key: &'static str, env: &'static str, kind: Kind, default: &'static str, help: &'static str) -> Setting {
    Setting { key, env: Some(env), flag: None, kind, default, help }
}

const fn with_flag(s: Setting, long: &'static str, global: bool, value_name: &'static str) -> Setting {
    Setting { flag: Some(Flag { long, global, value_name }), ..s }
}

const fn file_only(key: &'static str, kind: Kind, default: &'static str, help: &'static str) -> Setting {
    Setting { key, env: None, flag: None, kind, default, help }
}

/// Every setting of `strongroom.toml`, in the order the manual lists them.
pub const SETTINGS: &[Setting] = &[
    with_flag(
        setting(
            "data_dir",
            "STRONGROOM_DATA_DIR",
            Kind::Path,
            DEFAULT_DATA_DIR,
            "Data directory: SQLite database, master key, TLS certificate.",
        ),
        "data-dir",
        true,
        "DIR",
    ),
    with_flag(
        setting("listen", "STRONGROOM_LISTEN", Kind::Text, DEFAULT_LISTEN, "Address and port to listen on."),
        "listen",
        false,
        "ADDR:PORT",
    ),
    with_flag(
        setting(
            "public_url",
            "STRONGROOM_PUBLIC_URL",
            Kind::Text,
            "from listen (https://localhost:8443)",
            "Base URL that clients and browsers use to reach the server; set it behind a proxy or load balancer.",
        ),
        "public-url",
        false,
        "URL",
    ),
    with_flag(
        setting(
            "database_url",
            "STRONGROOM_DATABASE_URL",
            Kind::Text,
            "<data_dir>/strongroom.db",
            "SQLite path (sqlite://PATH for a path containing '='), or PostgreSQL: postgres://... or libpq's key=value form.",
        ),
        "database-url",
        true,
        "URL",
    ),
    with_flag(
        setting(
            "insecure_http",
            "STRONGROOM_INSECURE_HTTP",
            Kind::Bool,
            "false",
            "Serve plain HTTP (behind a TLS-terminating proxy, or for tests).",
        ),
        "insecure-http",
        false,
        "",
    ),
    setting(
        "tls_cert",
        "STRONGROOM_TLS_CERT",
        Kind::Path,
        "self-signed in <data_dir>/tls",
        "PEM certificate chain (with tls_key); reloaded on SIGHUP.",
    ),
    setting(
        "tls_key",
        "STRONGROOM_TLS_KEY",
        Kind::Path,
        "self-signed in <data_dir>/tls",
        "PEM private key (with tls_cert); reloaded on SIGHUP.",
    ),
    setting("max_body_bytes", "STRONGROOM_MAX_BODY_BYTES", Kind::Integer, "1048576", "Larger request bodies get 413 (1 KiB to 64 MiB)."),
    setting(
        "request_timeout_secs",
        "STRONGROOM_REQUEST_TIMEOUT_SECS",
        Kind::Seconds,
        "30",
        "Slower requests get 408 with an empty body (1 to 3600).",
    ),
    setting(
        "trusted_proxies",
        "STRONGROOM_TRUSTED_PROXIES",
        Kind::List,
        "none",
        "Load balancers (addresses or CIDR networks) whose X-Forwarded-For gives the client address.",
    ),
    setting("tokens.access_validity", "STRONGROOM_ACCESS_VALIDITY", Kind::Seconds, "3600", "Access-token lifetime."),
    setting(
        "tokens.grant_validity",
        "STRONGROOM_GRANT_VALIDITY",
        Kind::Seconds,
        "7776000 (90 days)",
        "Grant lifetime: refresh_until = issue time + this; at least tokens.access_validity.",
    ),
    setting("tokens.refreshable", "STRONGROOM_REFRESHABLE", Kind::Bool, "true", "Issue refresh tokens."),
    setting("tokens.device_code_validity", "STRONGROOM_DEVICE_CODE_VALIDITY", Kind::Seconds, "300", "Device-code lifetime."),
    setting("tokens.poll_interval", "STRONGROOM_POLL_INTERVAL", Kind::Seconds, "5", "Minimum seconds between polls of a device code."),
    setting(
        "tokens.retry_window",
        "STRONGROOM_RETRY_WINDOW",
        Kind::Seconds,
        "30",
        "Seconds in which a just-rotated refresh token (or a redeemed device code) may come back for a lost answer; 0 is strict.",
    ),
    setting(
        "metrics.listen",
        "STRONGROOM_METRICS_LISTEN",
        Kind::Text,
        "none: /metrics on the main listener",
        "A listener of its own (plain HTTP) for GET /metrics, e.g. 127.0.0.1:9090; then the main listener answers 404 there.",
    ),
    setting(
        "events.retention_days",
        "STRONGROOM_EVENTS_RETENTION_DAYS",
        Kind::Integer,
        "none: events are kept forever",
        "Every hour, archive the events older than this many days to a new file in events.archive_dir and delete them \
         (the log keeps a checkpoint; `admin events verify --archive` checks the files).",
    ),
    setting(
        "events.archive_dir",
        "STRONGROOM_EVENTS_ARCHIVE_DIR",
        Kind::Path,
        "DATA_DIR/archive",
        "Where events.retention_days writes its archives (with several replicas: each replica's own, or a shared one).",
    ),
    setting(
        "keys.default",
        "STRONGROOM_DEFAULT_KEY",
        Kind::Name,
        "Software:Default",
        "The key Crypto/DefaultKey reports and Add without Keyname uses.",
    ),
    setting(
        "jwt.key_cache_secs",
        "STRONGROOM_JWT_KEY_CACHE_SECS",
        Kind::Seconds,
        "300",
        "How long a JWT issuer's fetched keys are used (a key removed from its JWKS works at most this long; 1 to 86400).",
    ),
    setting(
        "jwt.refetch_min_secs",
        "STRONGROOM_JWT_REFETCH_MIN_SECS",
        Kind::Seconds,
        "10",
        "An unknown kid fetches the issuer's keys again at most once in this many seconds (0 to 3600).",
    ),
    setting(
        "jwt.fetch_timeout_secs",
        "STRONGROOM_JWT_FETCH_TIMEOUT_SECS",
        Kind::Seconds,
        "5",
        "The most a fetch of an issuer's keys may take (discovery and JWKS); past it the grant answers invalid_grant (1 to 60).",
    ),
    setting(
        "jwt.ca_file",
        "STRONGROOM_JWT_CA_FILE",
        Kind::Path,
        "none: the public roots",
        "Extra CA certificates (PEM) trusted for JWT key sources (JWKS and discovery over HTTPS).",
    ),
    setting(
        "certificate.listen",
        "STRONGROOM_CERTIFICATE_LISTEN",
        Kind::Text,
        "none: no certificate grant",
        "A TLS listener of its own for POST /vedauth/Authorize/Certificate that asks for client certificates (the main listener never does).",
    ),
    setting(
        "certificate.reload_secs",
        "STRONGROOM_CERTIFICATE_RELOAD_SECS",
        Kind::Seconds,
        "10",
        "How often the certificate listener reads the certificate mappings' CAs again, against which the handshake refuses early an expired, revoked or non-client certificate; a mapping counts at once anyway, since the grant reads the mappings in each request (1 to 3600).",
    ),
    setting(
        "certificate.crl_files",
        "STRONGROOM_CERTIFICATE_CRL_FILES",
        Kind::List,
        "none",
        "CRL files (PEM or DER) every client certificate is checked against.",
    ),
    setting(
        "certificate.proxy_header",
        "STRONGROOM_CERTIFICATE_PROXY_HEADER",
        Kind::Text,
        "none",
        "A header in which a trusted proxy (trusted_proxies) passes the client certificate (PEM, URL-encoded); verified like a TLS one.",
    ),
    setting(
        "key_generation.concurrency",
        "STRONGROOM_KEY_GENERATION_CONCURRENCY",
        Kind::Integer,
        "half the cores, at least 1",
        "RSA keys the server makes at once for central certificate requests (an RSA-4096 key takes a core for seconds); the \
         others wait their turn, which goes round the callers waiting (1 to 256).",
    ),
    setting(
        "key_generation.per_identity",
        "STRONGROOM_KEY_GENERATION_PER_IDENTITY",
        Kind::Integer,
        "2",
        "RSA keys in progress (waiting or being made) for one caller; past it a central request is refused with 429 and \
         Retry-After, before any work (1 to 1024).",
    ),
    setting(
        "key_generation.waiting",
        "STRONGROOM_KEY_GENERATION_WAITING",
        Kind::Integer,
        "32",
        "RSA keys waiting for their turn, for all callers together; past it a central request is refused with 429 and \
         Retry-After (0 to 4096). A request that is gone while it waits makes no key.",
    ),
    setting(
        "ldap.url",
        "STRONGROOM_LDAP_URL",
        Kind::Text,
        "none: no directory",
        "The LDAP or Active Directory server: ldaps://HOST[:636], or ldap://HOST with ldap.starttls.",
    ),
    setting(
        "ldap.starttls",
        "STRONGROOM_LDAP_STARTTLS",
        Kind::Bool,
        "false",
        "StartTLS on an ldap:// URL (required there: passwords travel only over TLS).",
    ),
    setting(
        "ldap.ca_file",
        "STRONGROOM_LDAP_CA_FILE",
        Kind::Path,
        "the web PKI roots",
        "PEM CA certificates the directory's certificate must chain to.",
    ),
    setting(
        "ldap.profile",
        "STRONGROOM_LDAP_PROFILE",
        Kind::Name,
        "ldap",
        "ldap (uid, entryUUID, groupOfNames) or ad (sAMAccountName, objectGUID, memberOf, nested groups in chain).",
    ),
    setting(
        "ldap.name",
        "STRONGROOM_LDAP_NAME",
        Kind::Name,
        "dir",
        "The provider's name: identities LDAP+NAME:{id} or AD+NAME:{id}; people may sign in as NAME\\user.",
    ),
    setting("ldap.bind_dn", "STRONGROOM_LDAP_BIND_DN", Kind::Text, "", "The service account that searches the directory."),
    setting(
        "ldap.bind_password_file",
        "STRONGROOM_LDAP_BIND_PASSWORD_FILE",
        Kind::Path,
        "none",
        "A file (mode 0600) holding the service account's password, read at each bind.",
    ),
    file_only(
        "ldap.bind_password_env",
        Kind::Text,
        "STRONGROOM_LDAP_BIND_PASSWORD",
        "The variable holding the service account's password when there is no file.",
    ),
    setting("ldap.user_base", "STRONGROOM_LDAP_USER_BASE", Kind::Text, "", "Where people are searched (subtree)."),
    file_only(
        "ldap.user_filter",
        Kind::Text,
        "by profile",
        "Which entries are people, ANDed with the login attribute's match (the typed name escaped per RFC 4515).",
    ),
    file_only(
        "ldap.login_attribute",
        Kind::Text,
        "uid / sAMAccountName",
        "The attribute people sign in with (userPrincipalName for user@domain).",
    ),
    file_only(
        "ldap.id_attribute",
        Kind::Text,
        "entryUUID / objectGUID",
        "The stable id of a person: their identity keeps it across renames.",
    ),
    file_only("ldap.name_attribute", Kind::Text, "uid / sAMAccountName", "The name shown for a person."),
    file_only("ldap.full_name_attribute", Kind::Text, "cn / displayName", "The full name shown for a person."),
    file_only("ldap.mail_attribute", Kind::Text, "mail", "The e-mail address of a person."),
    file_only(
        "ldap.group_base",
        Kind::Text,
        "none: memberOf only",
        "Where groups listing a person (member or uniqueMember) are searched, nested groups followed.",
    ),
    file_only("ldap.group_filter", Kind::Text, "by profile", "Which entries are groups."),
    file_only(
        "ldap.disabled_filter",
        Kind::Text,
        "by profile",
        "Entries it matches are disabled or locked in the directory and cannot sign in; empty: none.",
    ),
    setting(
        "ldap.timeout_secs",
        "STRONGROOM_LDAP_TIMEOUT_SECS",
        Kind::Seconds,
        "5",
        "The longest a connection or an operation may take (1 to 60): a directory out of reach is an error by then.",
    ),
    setting(
        "oidc.issuer",
        "STRONGROOM_OIDC_ISSUER",
        Kind::Text,
        "none: no OIDC sign-in",
        "An OpenID provider's issuer URL (discovery at /.well-known/openid-configuration): Sign in with it on the approval page.",
    ),
    setting(
        "oidc.client_id",
        "STRONGROOM_OIDC_CLIENT_ID",
        Kind::Text,
        "",
        "The client id registered at the provider (redirect URI PUBLIC_URL/vedauth/device/oidc/callback).",
    ),
    setting(
        "oidc.client_secret_file",
        "STRONGROOM_OIDC_CLIENT_SECRET_FILE",
        Kind::Path,
        "none",
        "A file (mode 0600) holding the client secret; or oidc.client_secret_env.",
    ),
    file_only(
        "oidc.client_secret_env",
        Kind::Text,
        "STRONGROOM_OIDC_CLIENT_SECRET",
        "The variable holding the client secret when there is no file.",
    ),
    setting(
        "oidc.name",
        "STRONGROOM_OIDC_NAME",
        Kind::Name,
        "sso",
        "The provider's name: identities OIDC+NAME:{uuid of issuer and sub}, and the button's label.",
    ),
    file_only("oidc.name_claim", Kind::Text, "preferred_username", "The id token's claim that names a person (sub when absent)."),
    file_only("oidc.groups_claim", Kind::Text, "groups", "The id token's claim listing a person's groups (groups OIDC+NAME:group)."),
    file_only("oidc.scopes", Kind::Text, "openid profile", "The scopes asked for."),
    setting(
        "oidc.timeout_secs",
        "STRONGROOM_OIDC_TIMEOUT_SECS",
        Kind::Seconds,
        "5",
        "The longest a request to the provider may take (1 to 60).",
    ),
    setting(
        "oidc.ca_file",
        "STRONGROOM_OIDC_CA_FILE",
        Kind::Path,
        "none: the public roots",
        "Extra CA certificates (PEM) trusted for the provider: discovery, its keys (JWKS) and the token endpoint.",
    ),
    setting(
        "oidc.session_secs",
        "STRONGROOM_OIDC_SESSION_SECS",
        Kind::Seconds,
        "43200",
        "A grant approved through the provider is refreshed only this long after the person's last sign-in there (300 to 2592000).",
    ),
    file_only("keys.pkcs11.name", Kind::Name, "", "[[keys.pkcs11]]: the key's name (PKCS11:name)."),
    file_only("keys.pkcs11.library", Kind::Path, "", "[[keys.pkcs11]]: the PKCS#11 module (e.g. /usr/lib/softhsm/libsofthsm2.so)."),
    file_only("keys.pkcs11.token_label", Kind::Text, "", "[[keys.pkcs11]]: the token's label."),
    file_only("keys.pkcs11.key_label", Kind::Text, "the name", "[[keys.pkcs11]]: the key object's CKA_LABEL."),
    file_only("keys.pkcs11.pin_file", Kind::Path, "", "[[keys.pkcs11]]: a file (mode 0600) holding the PIN; or pin_env."),
    file_only("keys.pkcs11.pin_env", Kind::Text, "", "[[keys.pkcs11]]: the variable holding the PIN; or pin_file."),
];

/// What a configuration file holds, as `config check` reports it: the
/// top level (`"top level"`, when it sets a key there) and each table it
/// has (`[tokens]`, `[[keys.pkcs11]] (2)`), in the settings table's order.
/// An unreadable or unparsable file is the error `serve` would give.
pub fn file_sections(path: &Path) -> Result<Vec<String>, ConfigError> {
    let table = RawConfig::file_table(path)?;
    let mut out = Vec::new();
    if table.values().any(|v| !v.is_table()) {
        out.push("top level".to_owned());
    }
    let mut seen: Vec<&str> = Vec::new();
    for s in SETTINGS {
        let Some((t, _)) = s.key.split_once('.') else { continue };
        if seen.contains(&t) {
            continue;
        }
        seen.push(t);
        match table.get(t) {
            Some(toml::Value::Table(inner)) => {
                if inner.values().any(|v| !v.is_table() && !v.is_array()) || inner.is_empty() || t != "keys" {
                    out.push(format!("[{t}]"));
                }
                if t == "keys"
                    && let Some(toml::Value::Array(keys)) = inner.get("pkcs11")
                {
                    out.push(format!("[[keys.pkcs11]] ({})", keys.len()));
                }
            }
            Some(_) => out.push(format!("[{t}]")),
            None => {}
        }
    }
    Ok(out)
}

/// The setting a TOML key names.
pub fn setting_named(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}

/// Reads `text` as a value of `kind` for the TOML table; `from` names where
/// it came from (a variable or a flag) in the error.
fn value_of(kind: Kind, text: &str, from: &'static str) -> Result<toml::Value, ConfigError> {
    let bad = || ConfigError::Invalid { name: from, message: format!("cannot read {text:?}: accepted: {}", kind.accepted()) };
    Ok(match kind {
        Kind::Text | Kind::Path => toml::Value::String(text.to_owned()),
        Kind::Name => toml::Value::String(text.trim().to_owned()),
        Kind::Bool => toml::Value::Boolean(text.trim().parse().map_err(|_| bad())?),
        // Negative numbers are read, and refused by validation with the setting's bounds.
        Kind::Seconds | Kind::Integer => toml::Value::Integer(text.trim().parse().map_err(|_| bad())?),
        Kind::List => toml::Value::Array(
            text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| toml::Value::String(s.to_owned())).collect(),
        ),
    })
}

/// Sets the dotted `key` in `table`, making the tables on the way.
fn set_dotted(table: &mut toml::Table, key: &str, value: toml::Value) {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().unwrap_or(key);
    let mut t = table;
    for p in parts {
        let entry = t.entry(p.to_owned()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        match entry {
            toml::Value::Table(inner) => t = inner,
            _ => return,
        }
    }
    t.insert(last.to_owned(), value);
}

impl RawConfig {
    fn file_table(path: &Path) -> Result<toml::Table, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
        toml::from_str(&text).map_err(|e| ConfigError::Parse { path: path.to_owned(), message: e.to_string() })
    }

    fn from_table(table: toml::Table, path: Option<&Path>) -> Result<RawConfig, ConfigError> {
        toml::Value::Table(table).try_into().map_err(|e: toml::de::Error| ConfigError::Parse {
            path: path.map_or_else(|| PathBuf::from("the configuration"), Path::to_owned),
            message: e.to_string(),
        })
    }

    /// The three layers in one place: the TOML `file` (if any), then the
    /// `STRONGROOM_*` variables `env` finds (a lookup function, so tests need
    /// not touch the process environment), then `flags` ((TOML key, text)
    /// pairs from the command line), each overriding the one before, every
    /// variable and flag read by its [`SETTINGS`] row.
    pub fn layered(
        file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
        flags: &[(&'static str, String)],
    ) -> Result<RawConfig, ConfigError> {
        let table = match file {
            Some(p) => Self::file_table(p)?,
            None => toml::Table::new(),
        };
        Self::layer(table, file, env, flags)
    }

    fn layer(
        mut table: toml::Table,
        file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
        flags: &[(&'static str, String)],
    ) -> Result<RawConfig, ConfigError> {
        for s in SETTINGS {
            if let Some(var) = s.env
                && let Some(text) = env(var)
            {
                set_dotted(&mut table, s.key, value_of(s.kind, &text, var)?);
            }
        }
        for (key, text) in flags {
            let s = setting_named(key).ok_or_else(|| ConfigError::Invalid { name: "flags", message: format!("no setting {key}") })?;
            let name = s.flag.map_or(s.key, |f| f.long);
            set_dotted(&mut table, s.key, value_of(s.kind, text, name)?);
        }
        Self::from_table(table, file)
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
        // An unknown scheme (`mysql://`, the typo `postgress://`) is refused
        // here, by `serve` and `config check` alike, rather than read as a
        // SQLite path.
        strongroom_store::sqlite_path(&database_url).map_err(|e| ConfigError::Invalid { name: "database_url", message: e.to_string() })?;
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
        strongroom_core::integration::check_tokens(&tokens).map_err(|e| ConfigError::Invalid { name: e.name, message: e.message })?;
        if tokens.grant_validity < tokens.access_validity {
            return Err(ConfigError::Invalid {
                name: "tokens.grant_validity",
                message: format!(
                    "{} s is shorter than tokens.access_validity ({} s): an access token never outlives its grant, so every \
                     access token would end with its grant; make grant_validity at least access_validity",
                    tokens.grant_validity, tokens.access_validity
                ),
            });
        }
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
        if let Some(m) = metrics_listen
            && same_listener(m, listen)
        {
            return Err(ConfigError::Invalid {
                name: "metrics.listen",
                message: format!(
                    "{m} is the main listener's address ({listen}): give metrics an address of their own (e.g. 127.0.0.1:9090), \
                     or leave metrics.listen unset to serve /metrics on the main listener"
                ),
            });
        }
        let events_retention = match self.events.retention_days {
            None => None,
            Some(0) => {
                return Err(ConfigError::Invalid {
                    name: "events.retention_days",
                    message: "0 would archive every event at once: give at least 1 day, or leave it unset to keep every event".into(),
                });
            }
            Some(days) => Some(Retention { days, archive_dir: self.events.archive_dir.unwrap_or_else(|| data_dir.join("archive")) }),
        };
        let d = JwtSettings::default();
        let bounded = |name: &'static str, v: Option<i64>, default: i64, range: std::ops::RangeInclusive<i64>| match v {
            None => Ok(default),
            Some(v) if range.contains(&v) => Ok(v),
            Some(v) => {
                Err(ConfigError::Invalid { name, message: format!("{v} is out of range: {} to {} seconds", range.start(), range.end()) })
            }
        };
        let jwt = JwtSettings {
            key_cache_secs: bounded("jwt.key_cache_secs", self.jwt.key_cache_secs, d.key_cache_secs, 1..=86_400)?,
            refetch_min_secs: bounded("jwt.refetch_min_secs", self.jwt.refetch_min_secs, d.refetch_min_secs, 0..=3600)?,
            fetch_timeout_secs: bounded("jwt.fetch_timeout_secs", self.jwt.fetch_timeout_secs, d.fetch_timeout_secs, 1..=60)?,
            ca_file: self.jwt.ca_file,
        };
        let certificate = match self.certificate.listen.filter(|l| !l.trim().is_empty()) {
            None => None,
            Some(l) => {
                let addr: SocketAddr = l
                    .trim()
                    .parse()
                    .map_err(|_| ConfigError::Invalid { name: "certificate.listen", message: format!("{l:?} is not an address:port") })?;
                if same_listener(addr, listen) {
                    return Err(ConfigError::Invalid {
                        name: "certificate.listen",
                        message: format!("{addr} is the main listener's address: the certificate grant needs a listener of its own"),
                    });
                }
                Some(CertificateSettings {
                    listen: addr,
                    crl_files: self.certificate.crl_files.unwrap_or_default(),
                    proxy_header: self.certificate.proxy_header.filter(|h| !h.trim().is_empty()),
                    reload_secs: bounded("certificate.reload_secs", self.certificate.reload_secs, 10, 1..=3600)?,
                })
            }
        };
        let ldap = self.ldap.validate()?;
        let oidc = self.oidc.validate()?;
        let key_generation = self.key_generation.validate()?;
        Ok(Config {
            jwt,
            certificate,
            key_generation,
            oidc,
            keys,
            metrics_listen,
            events_retention,
            ldap,
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

/// Whether two listeners would take the same port: the same port on the
/// same address, or on any address when one of them is unspecified
/// (`0.0.0.0`, `::`).
/// Whether two listen addresses would be the same socket. Port 0 is a port
/// the system picks for each listener: never the same.
fn same_listener(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() != 0 && a.port() == b.port() && (a.ip() == b.ip() || a.ip().is_unspecified() || b.ip().is_unspecified())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file's text, the environment and flags, layered.
    fn layered(text: &str, env: impl Fn(&str) -> Option<String>, flags: &[(&'static str, String)]) -> Result<RawConfig, ConfigError> {
        RawConfig::layer(toml::from_str(text).unwrap(), None, env, flags)
    }

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
    }

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
        let env = env_of(&[("STRONGROOM_INSECURE_HTTP", "true"), ("STRONGROOM_POLL_INTERVAL", "2")]);
        let c = layered("listen = \"0.0.0.0:9000\"\n[tokens]\naccess_validity = 60\n", env, &[]).unwrap().validate().unwrap();
        assert_eq!(c.public_url, "http://localhost:9000");
        assert_eq!(c.tokens.access_validity, 60);
        assert_eq!(c.tokens.poll_interval, 2);
        // One key in both the file and the environment: the environment wins,
        // for a top-level key and a [tokens] key alike.
        let env = env_of(&[
            ("STRONGROOM_LISTEN", "127.0.0.1:9001"),
            ("STRONGROOM_ACCESS_VALIDITY", "120"),
            ("STRONGROOM_INSECURE_HTTP", "false"),
        ]);
        let file = "listen = \"0.0.0.0:9000\"\ninsecure_http = true\n[tokens]\naccess_validity = 60\npoll_interval = 7\n";
        let c = layered(file, env, &[]).unwrap().validate().unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:9001");
        assert_eq!(c.tokens.access_validity, 120);
        assert_eq!(c.tls, Tls::SelfSigned, "STRONGROOM_INSECURE_HTTP=false overrides insecure_http = true");
        assert_eq!(c.tokens.poll_interval, 7, "a key the environment leaves alone keeps the file's value");
        // A flag wins over both.
        let flags = [("listen", "127.0.0.1:9002".to_owned()), ("insecure_http", "true".to_owned())];
        let c = layered(file, env_of(&[("STRONGROOM_LISTEN", "127.0.0.1:9001")]), &flags).unwrap().validate().unwrap();
        assert_eq!((c.listen.to_string(), c.tls), ("127.0.0.1:9002".to_owned(), Tls::Off));
        let c = layered("", env_of(&[("STRONGROOM_TRUSTED_PROXIES", "10.0.0.0/8, ::1")]), &[]).unwrap();
        assert_eq!(c.validate().unwrap().trusted_proxies.len(), 2);
        let c = layered("", env_of(&[("STRONGROOM_DEFAULT_KEY", " software:default ")]), &[]).unwrap();
        assert_eq!(c.keys.default.as_deref(), Some("software:default"));
        let c = RawConfig { trusted_proxies: Some(vec!["10.0.0.0/99".into()]), ..Default::default() };
        assert!(c.validate().unwrap_err().to_string().starts_with("trusted_proxies"));
        assert!(toml::from_str::<RawConfig>("lisen = \"x\"").is_err(), "unknown keys are refused");
        let raw = RawConfig { listen: Some("nope".into()), ..Default::default() };
        assert!(raw.validate().unwrap_err().to_string().starts_with("listen"));
    }

    #[test]
    fn unreadable_variables_say_what_is_accepted() {
        for (var, value, accepted) in [
            ("STRONGROOM_POLL_INTERVAL", "fast", "accepted: whole seconds"),
            ("STRONGROOM_ACCESS_VALIDITY", "1h", "accepted: whole seconds"),
            ("STRONGROOM_REFRESHABLE", "yes", "accepted: true or false"),
            ("STRONGROOM_INSECURE_HTTP", "1", "accepted: true or false"),
            ("STRONGROOM_MAX_BODY_BYTES", "1M", "accepted: a whole number"),
        ] {
            let err = layered("", |k: &str| (k == var).then(|| value.to_owned()), &[]).unwrap_err().to_string();
            assert!(err.starts_with(var) && err.contains(&format!("{value:?}")) && err.contains(accepted), "{var}: {err}");
        }
    }

    #[test]
    fn every_setting_is_a_key_of_the_file_and_has_a_distinct_variable() {
        let mut table = toml::Table::new();
        for s in SETTINGS.iter().filter(|s| !s.key.starts_with("keys.pkcs11.")) {
            let v = match s.kind {
                Kind::Bool => toml::Value::Boolean(true),
                Kind::Seconds | Kind::Integer => toml::Value::Integer(2048),
                Kind::List => toml::Value::Array(vec![]),
                _ => toml::Value::String("x".into()),
            };
            set_dotted(&mut table, s.key, v);
        }
        // deny_unknown_fields: a row naming no field of RawConfig fails here.
        RawConfig::from_table(table, None).unwrap();
        let vars: Vec<&str> = SETTINGS.iter().filter_map(|s| s.env).collect();
        let distinct: std::collections::BTreeSet<&&str> = vars.iter().collect();
        assert_eq!(distinct.len(), vars.len());
        assert!(vars.iter().all(|v| v.starts_with("STRONGROOM_")));
    }

    #[test]
    fn start_up_refuses_what_would_go_wrong_later() {
        // An unknown scheme is not a SQLite path.
        for url in ["mysql://x@127.0.0.1/db", "postgress://postgres@127.0.0.1/strongroom", "file:///var/lib/x.db"] {
            let raw = RawConfig { database_url: Some(url.into()), ..Default::default() };
            let err = raw.validate().unwrap_err().to_string();
            assert!(err.starts_with("database_url") && err.contains("unknown"), "{url}: {err}");
        }
        for url in ["postgres://u@h/db", "sqlite:///tmp/x.db", "relative/x.db", "host=db dbname=x"] {
            assert!(RawConfig { database_url: Some(url.into()), ..Default::default() }.validate().is_ok(), "{url}");
        }
        // Metrics on the main listener's port.
        for (main, metrics) in [("127.0.0.1:8443", "127.0.0.1:8443"), ("0.0.0.0:8443", "127.0.0.1:8443"), ("127.0.0.1:8443", "[::]:8443")] {
            let raw = RawConfig { listen: Some(main.into()), metrics: RawMetrics { listen: Some(metrics.into()) }, ..Default::default() };
            let err = raw.validate().unwrap_err().to_string();
            assert!(err.starts_with("metrics.listen") && err.contains("main listener"), "{main} {metrics}: {err}");
        }
        let raw = RawConfig { metrics: RawMetrics { listen: Some("127.0.0.1:9090".into()) }, ..Default::default() };
        assert!(raw.validate().is_ok());
        // A grant shorter than its access tokens.
        let raw = layered("[tokens]\naccess_validity = 7200\ngrant_validity = 3600\n", |_| None, &[]).unwrap();
        let err = raw.validate().unwrap_err().to_string();
        assert!(err.starts_with("tokens.grant_validity") && err.contains("access_validity"), "{err}");
    }
}
