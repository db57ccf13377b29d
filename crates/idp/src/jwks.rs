//! JWT issuers' keys: fetched over HTTPS (rustls, the public roots and
//! `[jwt] ca_file`) or read from a file, and kept for `[jwt]
//! key_cache_secs` (300 s by default).
//!
//! - A key removed from an issuer's JWKS keeps working at most
//!   `key_cache_secs` after the fetch that last saw it: keys older than that
//!   are never used; they are fetched again first.
//! - A `kid` none of the cached keys has fetches the keys again, at most
//!   once per `refetch_min_secs` (10 s) per issuer, so a stream of made-up
//!   kids cannot turn the server into a load generator against the issuer.
//!   Rotation (a new key published before tokens use it, or even after) is
//!   picked up so, without a restart.
//! - One fetch (discovery and JWKS together) may take `fetch_timeout_secs`
//!   (5 s); a source that is unreachable, hangs, or answers something that is
//!   not a key set fails the fetch, and the grant answers `invalid_grant`
//!   within that bound. A failed fetch is not repeated for
//!   `refetch_min_secs`: requests meanwhile are refused at once.
//! - Requests for one issuer wait for one fetch rather than each making
//!   their own (a lock per issuer).
//!
//! Nothing here caches tokens, users or mappings: those are read from the
//! store on every request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strongroom_core::machine::{Jwk, JwtIssuer, KeySource};
use strongroom_core::time::UnixTime;

/// The JWT grant's key handling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtSettings {
    /// How long fetched keys are used before they are fetched again.
    pub key_cache_secs: i64,
    /// The shortest time between two fetches of one issuer's keys for an unknown `kid`.
    pub refetch_min_secs: i64,
    /// The most one fetch (discovery and JWKS together) may take.
    pub fetch_timeout_secs: i64,
    pub ca_file: Option<std::path::PathBuf>,
}

impl Default for JwtSettings {
    fn default() -> Self {
        JwtSettings { key_cache_secs: 300, refetch_min_secs: 10, fetch_timeout_secs: 5, ca_file: None }
    }
}

/// The largest key document read (JWKS or discovery).
const MAX_DOCUMENT: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error("reading the CA file {path}: {message}")]
    CaFile { path: String, message: String },
    #[error("building the HTTP client: {0}")]
    Client(String),
}

/// Why the keys could not be had now (logged; the client sees one sentence).
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("fetching the keys took longer than {0} s")]
    Timeout(i64),
    #[error("{0}")]
    Failed(String),
    #[error("a fetch failed less than {0} s ago; not trying again yet")]
    Backoff(i64),
}

#[derive(Debug, Default)]
struct Entry {
    source: Option<KeySource>,
    keys: Vec<Jwk>,
    /// When the keys were fetched (None: never).
    fetched_at: Option<UnixTime>,
    /// When the last fetch failed.
    failed_at: Option<UnixTime>,
}

/// The keys of every issuer, each behind its own lock.
#[derive(Debug)]
pub struct KeyCache {
    http: reqwest::Client,
    settings: JwtSettings,
    /// Whether `http://` URLs on a loopback host are fetched (the OpenID
    /// provider's cache only: `oidc.issuer` allows them, as on a test bench).
    loopback_http: bool,
    entries: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Entry>>>>,
}

/// Whether `url` is `http://` on a loopback host (`127.0.0.1`,
/// `localhost`, `[::1]`): the one plain-HTTP case `oidc.issuer` accepts.
pub fn is_loopback_http(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else { return false };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return false;
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    matches!(host.to_ascii_lowercase().as_str(), "127.0.0.1" | "localhost" | "::1")
}

/// A client that trusts the public roots and the PEM CAs of `ca_file`;
/// `https://` only, or with `loopback_http` also `http://` on a loopback
/// host (redirects, at most `max_redirects`, included), every request
/// within `timeout`.
pub fn http_client(
    ca_file: Option<&std::path::Path>,
    timeout: Duration,
    loopback_http: bool,
    max_redirects: usize,
) -> Result<reqwest::Client, KeysError> {
    let redirects = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > max_redirects {
            attempt.error("too many redirects")
        } else if attempt.url().scheme() == "https" || (loopback_http && is_loopback_http(attempt.url().as_str())) {
            attempt.follow()
        } else {
            attempt.error("a redirect to plain HTTP")
        }
    });
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .https_only(!loopback_http)
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(redirects)
        .user_agent(concat!("strongroom/", env!("CARGO_PKG_VERSION")));
    if let Some(path) = ca_file {
        let shown = path.display().to_string();
        let pem = std::fs::read(path).map_err(|e| KeysError::CaFile { path: shown.clone(), message: e.to_string() })?;
        let certs =
            reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| KeysError::CaFile { path: shown.clone(), message: e.to_string() })?;
        if certs.is_empty() {
            return Err(KeysError::CaFile { path: shown, message: "no certificate in it".into() });
        }
        for c in certs {
            builder = builder.add_root_certificate(c);
        }
    }
    builder.build().map_err(|e| KeysError::Client(e.to_string()))
}

impl KeyCache {
    pub fn new(settings: &JwtSettings) -> Result<KeyCache, KeysError> {
        KeyCache::build(settings, false)
    }

    /// The OpenID provider's own cache: as [`KeyCache::new`], and `http://`
    /// URLs on a loopback host are fetched too (never any other plain-HTTP
    /// URL, a redirect's included).
    pub fn with_loopback_http(settings: &JwtSettings) -> Result<KeyCache, KeysError> {
        KeyCache::build(settings, true)
    }

    fn build(settings: &JwtSettings, loopback_http: bool) -> Result<KeyCache, KeysError> {
        let timeout = Duration::from_secs(u64::try_from(settings.fetch_timeout_secs).unwrap_or(5));
        let http = http_client(settings.ca_file.as_deref(), timeout, loopback_http, 3)?;
        Ok(KeyCache { http, settings: settings.clone(), loopback_http, entries: Mutex::new(HashMap::new()) })
    }

    pub fn settings(&self) -> &JwtSettings {
        &self.settings
    }

    fn entry(&self, issuer: &str) -> Arc<tokio::sync::Mutex<Entry>> {
        let mut map = match self.entries.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        map.entry(issuer.to_owned()).or_default().clone()
    }

    /// The keys to check a token of `issuer` with `kid` at `now`: the cached
    /// ones while fresh, else (or for an unknown `kid`, rate-limited)
    /// fetched again. `fetched` is told whether each fetch worked.
    pub async fn keys(&self, issuer: &JwtIssuer, kid: Option<&str>, now: UnixTime, fetched: impl Fn(bool)) -> Result<Vec<Jwk>, FetchError> {
        let entry = self.entry(&issuer.name);
        let mut e = entry.lock().await;
        if e.source.as_ref() != Some(&issuer.keys) {
            // The issuer's key source changed (or is new): nothing cached counts.
            *e = Entry { source: Some(issuer.keys.clone()), ..Entry::default() };
        }
        let age = |t: Option<UnixTime>| t.map(|t| now.millis_since(t) / 1000);
        let fresh = age(e.fetched_at).is_some_and(|a| a < self.settings.key_cache_secs);
        let unknown_kid = kid.is_some_and(|k| !e.keys.iter().any(|j| j.kid.as_deref() == Some(k)));
        let may_refetch = age(e.fetched_at).is_none_or(|a| a >= self.settings.refetch_min_secs);
        if fresh && !(unknown_kid && may_refetch) {
            return Ok(e.keys.clone());
        }
        if let Some(a) = age(e.failed_at)
            && a < self.settings.refetch_min_secs
        {
            if fresh {
                return Ok(e.keys.clone());
            }
            return Err(FetchError::Backoff(self.settings.refetch_min_secs));
        }
        let limit = self.settings.fetch_timeout_secs;
        let result = match tokio::time::timeout(Duration::from_secs(u64::try_from(limit).unwrap_or(5)), self.fetch(&issuer.keys)).await {
            Ok(r) => r,
            Err(_) => Err(FetchError::Timeout(limit)),
        };
        fetched(result.is_ok());
        match result {
            Ok(keys) => {
                tracing::info!(issuer = %issuer.name, keys = keys.len(), "JWT issuer keys fetched");
                e.keys = keys;
                e.fetched_at = Some(now);
                e.failed_at = None;
                Ok(e.keys.clone())
            }
            Err(err) => {
                tracing::warn!(issuer = %issuer.name, error = %err, "fetching a JWT issuer's keys failed");
                e.failed_at = Some(now);
                // Keys still within their bound stay usable (an unknown kid stays unknown).
                if fresh { Ok(e.keys.clone()) } else { Err(err) }
            }
        }
    }

    async fn fetch(&self, source: &KeySource) -> Result<Vec<Jwk>, FetchError> {
        let doc = match source {
            KeySource::JwksFile(path) => {
                tokio::fs::read(path).await.map_err(|e| FetchError::Failed(format!("reading the key file {path}: {e}")))?
            }
            KeySource::JwksUrl(url) => self.get(url).await?,
            KeySource::Discovery(url) => {
                let discovery = self.get(url).await?;
                let v: serde_json::Value =
                    serde_json::from_slice(&discovery).map_err(|_| FetchError::Failed("the discovery document is not JSON".into()))?;
                let jwks_uri = v
                    .get("jwks_uri")
                    .and_then(serde_json::Value::as_str)
                    .ok_or_else(|| FetchError::Failed("the discovery document has no jwks_uri".into()))?;
                self.get(jwks_uri).await?
            }
        };
        Jwk::parse_set(&doc).map_err(FetchError::Failed)
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, FetchError> {
        if !(url.starts_with("https://") || (self.loopback_http && is_loopback_http(url))) {
            return Err(FetchError::Failed(format!("GET {url}: https:// only")));
        }
        let failed = |e: reqwest::Error| FetchError::Failed(format!("GET {}: {e}", e.url().map_or(url, |u| u.as_str())));
        let mut resp = self.http.get(url).send().await.map_err(failed)?;
        if !resp.status().is_success() {
            return Err(FetchError::Failed(format!("GET {url}: HTTP {}", resp.status().as_u16())));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(failed)? {
            if body.len() + chunk.len() > MAX_DOCUMENT {
                return Err(FetchError::Failed(format!("GET {url}: the document is larger than 1 MiB")));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use strongroom_core::machine::{Algorithm, JwtIssuer};

    fn jwks(kids: &[&str]) -> String {
        let keys: Vec<serde_json::Value> = kids
            .iter()
            .map(|k| serde_json::json!({"kty": "OKP", "crv": "Ed25519", "kid": k, "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}))
            .collect();
        serde_json::json!({ "keys": keys }).to_string()
    }

    /// The cache on a JWKS file, on times the test chooses: no sleeping.
    #[test]
    fn plain_http_is_loopback_only() {
        for ok in ["http://127.0.0.1:8080/jwks", "http://localhost/x", "http://[::1]:9/", "http://LOCALHOST"] {
            assert!(is_loopback_http(ok), "{ok}");
        }
        for no in ["https://127.0.0.1/", "http://10.0.0.1/", "http://localhost.evil.com/", "http://localhost:80@evil.com/", "http://[::2]/"]
        {
            assert!(!is_loopback_http(no), "{no}");
        }
    }

    #[tokio::test]
    async fn keys_are_kept_for_the_bound_and_an_unknown_kid_refetches_at_most_once_per_interval() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("jwks.json");
        std::fs::write(&file, jwks(&["a"])).unwrap();
        let settings = JwtSettings { key_cache_secs: 300, refetch_min_secs: 10, fetch_timeout_secs: 5, ca_file: None };
        let cache = KeyCache::new(&settings).unwrap();
        let issuer = JwtIssuer {
            name: "f".into(),
            issuer: "https://f".into(),
            keys: KeySource::JwksFile(file.display().to_string()),
            audiences: vec!["x".into()],
            algorithms: vec![Algorithm::EdDSA],
            clock_skew: 0,
            max_lifetime: 60,
            created_at: UnixTime::from_secs(0),
        };
        let fetches = AtomicUsize::new(0);
        let count = |ok: bool| {
            assert!(ok);
            fetches.fetch_add(1, Ordering::SeqCst);
        };
        let t0 = UnixTime::from_secs(1_000_000);
        let kids = |keys: Vec<Jwk>| keys.into_iter().filter_map(|k| k.kid).collect::<Vec<_>>();
        assert_eq!(kids(cache.keys(&issuer, Some("a"), t0, count).await.unwrap()), ["a"]);
        // Key "a" withdrawn, "b" published: within the bound, "a" still works and nothing is fetched.
        std::fs::write(&file, jwks(&["b"])).unwrap();
        assert_eq!(kids(cache.keys(&issuer, Some("a"), t0.plus_secs(299), count).await.unwrap()), ["a"]);
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
        // An unknown kid soon after the fetch: no refetch; past refetch_min_secs: one.
        assert_eq!(kids(cache.keys(&issuer, Some("b"), t0.plus_secs(5), count).await.unwrap()), ["a"]);
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
        assert_eq!(kids(cache.keys(&issuer, Some("b"), t0.plus_secs(10), count).await.unwrap()), ["b"]);
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
        // A flood of made-up kids right after: no more fetches.
        for _ in 0..100 {
            cache.keys(&issuer, Some("made-up"), t0.plus_secs(11), count).await.unwrap();
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
        // Past the bound the keys are fetched again, whatever the kid.
        std::fs::write(&file, jwks(&["c"])).unwrap();
        assert_eq!(kids(cache.keys(&issuer, None, t0.plus_secs(310), count).await.unwrap()), ["c"]);
        // A source that fails: refused past the bound (stale keys are never used), and not retried at once.
        std::fs::remove_file(&file).unwrap();
        let failed = |ok: bool| assert!(!ok);
        assert!(cache.keys(&issuer, None, t0.plus_secs(700), failed).await.is_err());
        let never = |_: bool| panic!("no fetch within refetch_min_secs of a failure");
        assert!(matches!(cache.keys(&issuer, None, t0.plus_secs(705), never).await, Err(FetchError::Backoff(10))));
    }
}
