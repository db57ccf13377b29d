//! Start-up and shutdown of `strongroom serve`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum_server::tls_rustls::RustlsConfig;

use strongroom_core::random::Random;
use strongroom_core::time::Clock;
use strongroom_store::{Store, StoreError};

use crate::config::{Config, JwtSettings, Tls};
use crate::tls;

pub use crate::error::ServeError;
pub use crate::listener::{Running, TlsFiles, reload_tls, spawn};
use strongroom_app::hashing::HashPool;
use strongroom_app::service::machine::MachineState;
use strongroom_app::{App, OsRandom, SystemClock};
use strongroom_http::Limits;
use strongroom_http::metrics::{Metrics, Observer};
use strongroom_http::state::HttpState;
use strongroom_idp::jwks::KeyCache;
use strongroom_keyring::KeyRing;
use strongroom_keyring::keys::{self, KeyError, KeySource, Keys};

/// Passwords checked at once: each argon2id run holds 19 MiB and a core.
const CONCURRENT_HASHES: usize = 2;

/// Builds the shared state from its parts.
pub fn state(store: Arc<dyn Store>, clock: Arc<dyn Clock>, rng: Arc<dyn Random>, keys: Keys, config: &Config) -> HttpState {
    let metrics = Arc::new(Metrics::new());
    store.observe(Arc::new(Observer(metrics.clone())));
    let keyring = KeyRing::open(&keys, &config.keys, &*rng);
    let key_cache = KeyCache::new(&config.jwt).unwrap_or_else(|e| {
        // `run` checks this before it builds the state: only a caller that skipped it lands here.
        tracing::error!(error = %e, "[jwt] settings: the key fetcher uses the public roots only");
        KeyCache::new(&JwtSettings { ca_file: None, ..config.jwt.clone() }).unwrap_or_else(|_| fallback_key_cache())
    });
    let crls = config.certificate.as_ref().map(|c| strongroom_idp::certificate::load_crls(&c.crl_files)).transpose().unwrap_or_else(|e| {
        tracing::error!(error = %e, "[certificate] crl_files");
        None
    });
    let machine = MachineState {
        keys: Arc::new(key_cache),
        crls: Arc::new(crls.unwrap_or_default()),
        proxy_header: config.certificate.as_ref().and_then(|c| c.proxy_header.clone()),
    };
    let app = App {
        machine,
        observer: metrics.clone(),
        signed_crls: Arc::default(),
        keygen: strongroom_app::keygen::KeyGenerator::new(config.key_generation, metrics.clone()),
        store,
        clock,
        rng,
        keyring,
        keys: Arc::new(keys),
        tokens: config.tokens,
        public_url: config.public_url.clone(),
        hashing: HashPool::new(CONCURRENT_HASHES, 64),
        directory: config.ldap.clone().map(|c| Arc::new(strongroom_idp::directory::Directory::new(c))),
        oidc: config.oidc.clone().and_then(|c| match strongroom_idp::oidc::Oidc::new(c, &config.jwt) {
            Ok(o) => Some(Arc::new(o)),
            Err(e) => {
                // `run` checks this before it builds the state: only a caller that skipped it lands here.
                tracing::error!(error = %e, "[oidc] settings: no OpenID Connect sign-in");
                None
            }
        }),
    };
    HttpState {
        app,
        metrics,
        secure_cookies: config.tls != Tls::Off || config.public_url.starts_with("https://"),
        tls_here: config.tls != Tls::Off,
        trusted_proxies: config.trusted_proxies.clone(),
    }
}

/// A key cache with the defaults (an HTTP client without extra roots
/// cannot fail to build unless TLS itself cannot start).
#[allow(clippy::expect_used)]
fn fallback_key_cache() -> KeyCache {
    KeyCache::new(&JwtSettings::default()).expect("an HTTP client with the default settings")
}

pub fn limits(config: &Config) -> Limits {
    Limits {
        max_body_bytes: config.max_body_bytes,
        request_timeout: Duration::from_secs(config.request_timeout_secs),
        metrics_here: config.metrics_listen.is_none(),
    }
}

/// Answers SIGHUP by reloading the TLS certificate and key, logging what
/// happened either way, until the task is aborted.
#[cfg(unix)]
async fn reload_on_hangup(mut hangup: tokio::signal::unix::Signal, tls: Option<(RustlsConfig, TlsFiles)>) {
    while hangup.recv().await.is_some() {
        match &tls {
            None => tracing::info!("SIGHUP: TLS is off (--insecure-http): nothing to reload"),
            Some((running, files)) => match reload_tls(running, files) {
                Ok(sha256) => tracing::info!(cert = %files.cert.display(), %sha256, "SIGHUP: TLS certificate reloaded"),
                Err(e) => tracing::error!(
                    cert = %files.cert.display(),
                    error = %e,
                    "SIGHUP: the TLS certificate was not reloaded; the one in use stays"
                ),
            },
        }
    }
}

/// Connections the kernel keeps waiting for `accept` (the standard library
/// asks 128): a burst of clients connecting at once (a replica coming back
/// behind a balancer, the K1 attack) would otherwise see dropped SYNs and
/// second-long connect retries.
const BACKLOG: u32 = 1024;

fn bind(addr: SocketAddr) -> Result<std::net::TcpListener, ServeError> {
    let err = |source| ServeError::Bind { addr, source };
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4() } else { tokio::net::TcpSocket::new_v6() }.map_err(err)?;
    #[cfg(unix)]
    socket.set_reuseaddr(true).map_err(err)?;
    socket.bind(addr).map_err(err)?;
    socket.listen(BACKLOG).map_err(err)?.into_std().map_err(err)
}

/// `strongroom serve`: opens everything the configuration names, serves
/// until `shutdown` completes, then drains requests in flight.
pub async fn run(mut config: Config, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
    // SIGHUP would end the process until it has a handler: take it first.
    #[cfg(unix)]
    let hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    // The listeners before anything is created: a port in use stops the
    // start with nothing made (no data directory, key or certificate).
    let listener = bind(config.listen)?;
    let metrics_listener = config.metrics_listen.map(bind).transpose()?;
    let certificate_listener = config.certificate.as_ref().map(|c| bind(c.listen)).transpose()?;
    // Settings that name files: a bad one stops the start, naming it.
    KeyCache::new(&config.jwt)?;
    if let Some(o) = &config.oidc {
        strongroom_idp::oidc::Oidc::new(o.clone(), &config.jwt).map_err(ServeError::Oidc)?;
    }
    if let Some(c) = &config.certificate {
        strongroom_idp::certificate::load_crls(&c.crl_files)?;
    }
    keys::create_private_dir(&config.data_dir).map_err(|e| KeyError::Io(format!("creating {}: {e}", config.data_dir.display())))?;
    // One server per SQLite store: a second one (another unit, a second
    // shell) is refused while the first runs. PostgreSQL takes several.
    let _serving = match strongroom_store::sqlite_path(&config.database_url)? {
        Some(db) => {
            if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
                keys::create_private_dir(dir).map_err(|e| KeyError::Io(format!("creating {}: {e}", dir.display())))?;
            }
            Some(strongroom_store::sqlite::lock_for_serving(db).map_err(|e| match e {
                StoreError::InUse(m) => ServeError::AlreadyServed(m),
                other => ServeError::Store(other),
            })?)
        }
        None => None,
    };
    // The key first: a master key file open to others stops us before anything is opened.
    let rng: Arc<dyn Random> = Arc::new(OsRandom);
    let (keys, source) = keys::load_or_create(&config.data_dir, std::env::var(keys::MASTER_KEY_ENV).ok(), &*rng)?;
    let store = strongroom_store::open(&config.database_url).await?;
    tracing::info!(store = %store.describe(), "store opened");
    if keys::bind(&*store, &keys, &source, SystemClock.now()).await? {
        tracing::info!("master key recorded by the store: it refuses any other from now on");
    }
    match source {
        KeySource::Env => tracing::info!("master key from {}", keys::MASTER_KEY_ENV),
        KeySource::File(p) => tracing::info!(path = %p, "master key loaded"),
        KeySource::Created(p) => tracing::warn!(path = %p, "master key created: back it up; replicas must share it"),
    }
    let (tls, tls_files) = match &config.tls {
        Tls::Off => {
            tracing::warn!("TLS is off (--insecure-http): serve behind a TLS-terminating proxy only");
            (None, None)
        }
        Tls::Files { cert, key } => (Some(tls::load(cert, key)?), Some(TlsFiles { cert: cert.clone(), key: key.clone() })),
        Tls::SelfSigned => {
            let host = config.public_url.split("://").nth(1).unwrap_or("").split(['/', ':']).next().unwrap_or("").to_owned();
            let (cert, key, created) = tls::ensure_self_signed(&config.data_dir, &[host])?;
            let mut loaded = tls::load(&cert, &key)?;
            loaded.created = created;
            (Some(loaded), Some(TlsFiles { cert, key }))
        }
    };
    if let Some(t) = &tls {
        tracing::info!(cert = %t.cert_path.display(), sha256 = %t.fingerprint, created = t.created, "TLS certificate");
    }
    // `listen` on port 0 takes a port the system picks (tests start servers
    // so, and read it from the "strongroom serving" line); a public URL
    // derived from that address names the port bound.
    if config.listen.port() == 0
        && let Some(derived) = config.public_url.strip_suffix(":0")
    {
        config.public_url = format!("{derived}:{}", listener.local_addr()?.port());
    }
    let state = state(store.clone(), Arc::new(SystemClock), rng, keys, &config);
    // Like the product: a configured key that cannot be loaded stops the start, naming the key.
    state.keyring.check(&*state.rng).await?;
    for (name, location) in state.keyring.configured() {
        tracing::info!(key = %name, location = %location, default = name == state.keyring.default_name(), "vault key ready");
    }
    // Entries under a key no longer configured cannot be read (Result 11);
    // the rest of the vault can, so this warns rather than refusing to start.
    let orphaned = state.keyring.unconfigured(&store.key_names_in_use().await?);
    if !orphaned.is_empty() {
        let named = orphaned
            .iter()
            .map(|(name, n)| format!("{name} ({n} {})", if *n == 1 { "entry" } else { "entries" }))
            .collect::<Vec<_>>()
            .join(", ");
        tracing::warn!(keys = %named, "entries are sealed under keys that are not configured: they cannot be read until those keys are configured again");
    }
    // The metrics listener (plain HTTP, meant for a private address) first.
    let metrics = match metrics_listener {
        Some(l) => {
            let m = spawn(l, strongroom_http::metrics_app(state.clone()), None)?;
            tracing::info!(listen = %m.addr, "metrics served");
            Some(m)
        }
        None => None,
    };
    let certificate = match certificate_listener {
        Some(l) => {
            let (cert, key) = match &config.tls {
                Tls::Files { cert, key } => (cert.clone(), key.clone()),
                Tls::Off | Tls::SelfSigned => {
                    let (c, k, _) = tls::ensure_self_signed(&config.data_dir, &[])?;
                    (c, k)
                }
            };
            let reload = config.certificate.as_ref().map_or(10, |c| c.reload_secs);
            let c = crate::certificate::spawn(l, state.clone(), limits(&config), TlsFiles { cert, key }, reload).await?;
            tracing::info!(listen = %c.addr, "certificate grant served (client certificates asked for here only)");
            Some(c)
        }
        None => None,
    };
    let running = spawn(listener, strongroom_http::app(state.clone(), limits(&config)), tls.map(|t| t.config))?;
    tracing::info!(listen = %running.addr, public_url = %config.public_url, version = env!("CARGO_PKG_VERSION"), "strongroom serving");
    // A store nobody can administer yet (its first start): the next step.
    match store.list_users().await {
        Ok(users) if !users.iter().any(|u| u.master_admin && !u.disabled) => tracing::warn!(
            data_dir = %config.data_dir.display(),
            console = %format!("{}/admin", config.public_url),
            "no Master Admin yet. Next step: strongroom admin users create NAME --master-admin \
             (as the user this server runs as, with its --config or --data-dir), then sign in at {}/admin",
            config.public_url
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "could not list the users"),
    }
    let janitor = tokio::spawn(janitor(state, config.events_retention.clone()));
    #[cfg(unix)]
    let reloader = tokio::spawn(reload_on_hangup(hangup, running.tls.clone().zip(tls_files)));
    #[cfg(not(unix))]
    let _ = tls_files;
    shutdown.await;
    tracing::info!("shutting down: finishing requests in flight");
    janitor.abort();
    #[cfg(unix)]
    reloader.abort();
    if let Some(m) = metrics {
        m.shutdown(Duration::from_secs(1)).await?;
    }
    if let Some(c) = certificate {
        c.shutdown(Duration::from_secs(5)).await?;
    }
    running.shutdown(Duration::from_secs(10)).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Runs [`upkeep`] once a minute, for ever.
async fn janitor(app: HttpState, retention: Option<crate::config::Retention>) {
    let mut tick = tokio::time::interval(Duration::from_secs(60));
    for round in 0u64.. {
        tick.tick().await;
        upkeep(&app, round, retention.as_ref()).await;
    }
}

/// The janitor's work of minute `round`: JWT replay records of expired
/// tokens every minute (so a record is kept until its token expires, and
/// about a minute more); ended device codes, grants and tokens every ten
/// minutes, an hour after they ended; revocations of certificates that
/// expired more than `REVOCATION_KEEP_DAYS` (30) days ago every ten minutes
/// (they left the CRL a day after the expiry); with a retention setting, the events
/// older than it archived every hour (and at start). Every replica runs it:
/// each deletion is one statement that another replica's run makes a no-op.
pub async fn upkeep(app: &HttpState, round: u64, retention: Option<&crate::config::Retention>) {
    match app.store.purge_replays(app.now()).await {
        Ok(n) if n > 0 => tracing::info!(rows = n, "purged the replay records of expired JWTs"),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "purging JWT replay records failed"),
    }
    if round.is_multiple_of(10) {
        match app.store.purge(app.now().plus_secs(-3600)).await {
            Ok(n) if n > 0 => tracing::info!(rows = n, "purged ended grants and codes"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "purge failed"),
        }
        let cut = strongroom_app::service::certificates::revocation_purge_cut(app.now().secs());
        match app.store.purge_revocations(cut).await {
            Ok(n) if n > 0 => tracing::info!(rows = n, "purged the revocations of certificates long expired"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "purging certificate revocations failed"),
        }
    }
    if let Some(r) = retention.filter(|_| round.is_multiple_of(60)) {
        match strongroom_app::archive::archive_older_than(&*app.store, r.days, &r.archive_dir, app.now()).await {
            Ok(Some(a)) => {
                tracing::info!(events = a.events, last = a.last.seq, file = %a.path.display(), "archived events past their retention")
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "archiving events past their retention failed"),
        }
    }
}
