//! What the application tells whoever counts its work (the HTTP edge's
//! Prometheus metrics), once the store has committed it.

use std::fmt;

/// The grant types counted apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrantType {
    Password,
    Device,
    Jwt,
    Certificate,
}

impl GrantType {
    /// Its label in metrics.
    pub fn label(self) -> &'static str {
        match self {
            GrantType::Password => "password",
            GrantType::Device => "device",
            GrantType::Jwt => "jwt",
            GrantType::Certificate => "certificate",
        }
    }
}

/// What became of a request for a server-made RSA key ([`crate::keygen`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyGenOutcome {
    /// Made and handed to its request.
    Generated,
    /// Made after its request was gone (the client left, or the request timed out).
    Orphaned,
    /// Its request was gone before its turn: nothing was made.
    Abandoned,
    /// Refused: the identity had as many in progress as it may.
    RefusedIdentity,
    /// Refused: as many were waiting as may.
    RefusedBusy,
}

impl KeyGenOutcome {
    /// Its label in metrics.
    pub fn label(self) -> &'static str {
        match self {
            KeyGenOutcome::Generated => "generated",
            KeyGenOutcome::Orphaned => "orphaned",
            KeyGenOutcome::Abandoned => "abandoned",
            KeyGenOutcome::RefusedIdentity => "refused_identity",
            KeyGenOutcome::RefusedBusy => "refused_busy",
        }
    }
}

/// Told of each outcome as it is committed; every method does nothing
/// unless implemented.
pub trait Observer: Send + Sync + fmt::Debug {
    /// A pair of tokens was issued (a new grant's first pair).
    fn token_issued(&self) {}
    /// A new grant of `kind` (its first pair is counted by [`Observer::token_issued`]).
    fn grant_issued(&self, _kind: GrantType) {}
    fn grant_refused(&self, _kind: GrantType) {}
    /// A fetch of a JWT issuer's keys, and whether it worked.
    fn key_fetch(&self, _ok: bool) {}
    fn token_refreshed(&self) {}
    fn grant_revoked(&self) {}
    /// A rotated refresh token came back: its grant was revoked.
    fn refresh_reuse(&self) {}
    /// Guessing counters that locked.
    fn lockouts(&self, _n: usize) {}
    /// A request for a server-made RSA key, and what became of it.
    fn key_generation(&self, _outcome: KeyGenOutcome) {}
}
