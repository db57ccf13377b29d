//! What every request handler can reach: the store, the clock, the random
//! source, the keys and the settings. Built once at start-up.

use std::sync::Arc;

use strongroom_core::integration::TokenSettings;
use strongroom_core::random::Random;
use strongroom_core::time::{Clock, UnixTime};
use strongroom_store::Store;

use crate::hashing::HashPool;
use crate::http::client_addr::Network;
use crate::metrics::Metrics;
use crate::service::machine::MachineState;
use strongroom_keyring::KeyRing;
use strongroom_keyring::keys::Keys;

/// The shared state of the HTTP edge.
#[derive(Clone, Debug)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub rng: Arc<dyn Random>,
    pub keys: Arc<Keys>,
    pub tokens: TokenSettings,
    /// Absolute base URL, no trailing slash.
    pub public_url: String,
    /// Whether browsers reach the page over HTTPS (TLS here, or a
    /// `public_url` behind a TLS-terminating proxy): its cookie is then
    /// `__Host-` and `Secure`, and answers carry HSTS.
    pub secure_cookies: bool,
    /// Whether this process terminates TLS (the scheme requests arrive on).
    pub tls_here: bool,
    /// Where passwords are checked (a few dedicated threads).
    pub hashing: HashPool,
    /// The vault's data keys.
    pub keyring: KeyRing,
    /// Peers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<Network>,
    /// What `GET /metrics` reports.
    pub metrics: Arc<Metrics>,
    /// The JWT and certificate grants' keys and settings.
    pub machine: MachineState,
    /// The LDAP or Active Directory provider (`[ldap]`), if any.
    pub directory: Option<Arc<strongroom_idp::directory::Directory>>,
    /// The OpenID Connect provider (`[oidc]`), if any.
    pub oidc: Option<Arc<strongroom_idp::oidc::Oidc>>,
}

impl AppState {
    pub fn now(&self) -> UnixTime {
        self.clock.now()
    }
}

/// The operating system's CSPRNG. The one place randomness comes from in
/// production.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsRandom;

impl Random for OsRandom {
    #[allow(clippy::panic)]
    fn fill(&self, dest: &mut [u8]) {
        // getrandom only fails if the OS has no entropy source at all; a
        // token server must not run on such a system.
        if let Err(e) = getrandom::getrandom(dest) {
            panic!("the operating system's random source failed: {e}");
        }
    }
}

/// The system clock. The one place wall-clock time is read.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)] // the one place the system clock is read
    fn now(&self) -> UnixTime {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        UnixTime::from_millis(ms)
    }
}
