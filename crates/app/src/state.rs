//! What every act of the application can reach: the store, the clock, the
//! random source, the keys and the settings. Built once at start-up.

use std::sync::Arc;

use strongroom_core::integration::TokenSettings;
use strongroom_core::random::Random;
use strongroom_core::time::{Clock, UnixTime};
use strongroom_keyring::KeyRing;
use strongroom_keyring::keys::Keys;
use strongroom_store::Store;

use crate::Observer;
use crate::hashing::HashPool;
use crate::service::machine::MachineState;

/// The application's shared state.
#[derive(Clone, Debug)]
pub struct App {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub rng: Arc<dyn Random>,
    pub keys: Arc<Keys>,
    pub tokens: TokenSettings,
    /// Absolute base URL, no trailing slash.
    pub public_url: String,
    /// Where passwords are checked (a few dedicated threads).
    pub hashing: HashPool,
    /// The vault's data keys.
    pub keyring: KeyRing,
    /// The JWT and certificate grants' keys and settings.
    pub machine: MachineState,
    /// The LDAP or Active Directory provider (`[ldap]`), if any.
    pub directory: Option<Arc<strongroom_idp::directory::Directory>>,
    /// The OpenID Connect provider (`[oidc]`), if any.
    pub oidc: Option<Arc<strongroom_idp::oidc::Oidc>>,
    /// Told what was issued, refused and revoked.
    pub observer: Arc<dyn Observer>,
    /// The CAs' CRLs signed so far (`/crl/{name}`).
    pub signed_crls: Arc<crate::service::certificates::CrlCache>,
    /// Makes the keys of central certificate requests, within bounds.
    pub keygen: crate::keygen::KeyGenerator,
}

impl App {
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
