//! Grants: what a user allowed an integration to do, and the tokens that
//! carry it.
//!
//! A grant is born from an approved device code (or a password grant),
//! lives until `refresh_until`, and dies early when revoked: by the client
//! (`Revoke/Token`), by an administrator, or by reuse of a spent refresh token.
//! Its scope never changes.

pub mod device;
pub mod refresh;

use std::fmt;

use crate::identity::{UserId, uuid_v4};
use crate::integration::TokenSettings;
use crate::random::Random;
use crate::scope::Scope;
use crate::secret::Secret;
use crate::time::UnixTime;
use crate::token::{TokenHash, TokenKey, TokenKind, mint_token};

/// A grant's id: a random UUID. Not a secret; it names the grant in events
/// and admin listings.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct GrantId(String);

impl GrantId {
    pub fn generate(rng: &dyn Random) -> Self {
        GrantId(uuid_v4(rng))
    }
    pub fn from_stored(s: String) -> Self {
        GrantId(s)
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for GrantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GrantId({})", self.0)
    }
}

impl fmt::Display for GrantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub id: GrantId,
    pub client_id: String,
    pub user_id: UserId,
    pub scope: Scope,
    pub created_at: UnixTime,
    /// After this the refresh token no longer works and no access token is valid.
    pub refresh_until: UnixTime,
    pub refreshable: bool,
    /// When the newest access token was issued.
    pub access_issued_at: UnixTime,
    /// The lifetime of access tokens issued under this grant, in seconds.
    pub access_validity: i64,
    pub revoked_at: Option<UnixTime>,
}

impl Grant {
    /// A new grant for `user` on `client_id`, starting `now`.
    pub fn new(rng: &dyn Random, client_id: &str, user_id: UserId, scope: Scope, now: UnixTime, settings: TokenSettings) -> Grant {
        Grant {
            id: GrantId::generate(rng),
            client_id: client_id.to_owned(),
            user_id,
            scope,
            created_at: now,
            refresh_until: now.plus_secs(settings.grant_validity),
            refreshable: settings.refreshable,
            access_issued_at: now,
            access_validity: settings.access_validity,
            revoked_at: None,
        }
    }

    pub fn is_live(&self, now: UnixTime) -> bool {
        self.revoked_at.is_none() && now < self.refresh_until
    }
}

/// A freshly minted token pair: the values go to the client once, the hashes
/// go to the store.
#[derive(Debug)]
pub struct IssuedTokens {
    pub access: Secret,
    pub access_hash: TokenHash,
    /// An access token never outlives its grant.
    pub access_expires: UnixTime,
    /// `None` when the grant is not refreshable.
    pub refresh: Option<(Secret, TokenHash)>,
    pub issued_at: UnixTime,
}

impl IssuedTokens {
    pub fn mint(key: &TokenKey, rng: &dyn Random, grant: &Grant, now: UnixTime) -> IssuedTokens {
        let access = mint_token(rng);
        let access_hash = key.hash(TokenKind::Access, access.expose());
        let refresh = grant.refreshable.then(|| {
            let r = mint_token(rng);
            let h = key.hash(TokenKind::Refresh, r.expose());
            (r, h)
        });
        let access_expires = now.plus_secs(grant.access_validity).min(grant.refresh_until);
        IssuedTokens { access, access_hash, access_expires, refresh, issued_at: now }
    }

    pub fn refresh_hash(&self) -> Option<TokenHash> {
        self.refresh.as_ref().map(|(_, h)| *h)
    }
}

/// What the store knows about a presented access token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessContext {
    pub grant: Grant,
    pub token_issued_at: UnixTime,
    pub token_expires: UnixTime,
    pub user_name: String,
    pub user_disabled: bool,
    pub integration_disabled: bool,
}

/// Why a bearer token is refused. All of them are a 401 on the wire; the
/// variants exist for the server log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AccessRefused {
    #[error("token expired")]
    Expired,
    #[error("grant revoked")]
    Revoked,
    #[error("user disabled")]
    UserDisabled,
    #[error("integration disabled")]
    IntegrationDisabled,
}

impl AccessContext {
    /// Whether the token may be used at `now`.
    pub fn check(&self, now: UnixTime) -> Result<(), AccessRefused> {
        if self.grant.revoked_at.is_some() {
            Err(AccessRefused::Revoked)
        } else if now >= self.token_expires || now >= self.grant.refresh_until {
            Err(AccessRefused::Expired)
        } else if self.user_disabled {
            Err(AccessRefused::UserDisabled)
        } else if self.integration_disabled {
            Err(AccessRefused::IntegrationDisabled)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use crate::random::Random;
    use std::sync::Mutex;

    /// Deterministic randomness for unit tests.
    #[derive(Debug)]
    pub(crate) struct TestRng(pub(crate) Mutex<u64>);
    impl TestRng {
        pub(crate) fn new() -> Self {
            TestRng(Mutex::new(0x2545_f491_4f6c_dd1d))
        }
    }
    impl Random for TestRng {
        fn fill(&self, dest: &mut [u8]) {
            let mut s = self.0.lock().unwrap();
            for b in dest {
                *s ^= *s << 13;
                *s ^= *s >> 7;
                *s ^= *s << 17;
                *b = (*s >> 32) as u8;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::TestRng;
    use super::*;

    fn grant(now: UnixTime, settings: TokenSettings) -> Grant {
        let rng = TestRng::new();
        Grant::new(&rng, "app", UserId::generate(&rng), Scope::parse("restricted").unwrap(), now, settings)
    }

    #[test]
    fn access_tokens_never_outlive_the_grant() {
        let now = UnixTime::from_secs(1000);
        let s = TokenSettings { access_validity: 3600, grant_validity: 100, ..Default::default() };
        let g = grant(now, s);
        let t = IssuedTokens::mint(&TokenKey::new([3; 32]), &TestRng::new(), &g, now);
        assert_eq!(t.access_expires, now.plus_secs(100));
        assert!(t.refresh.is_some());
    }

    #[test]
    fn no_refresh_token_when_not_refreshable() {
        let now = UnixTime::from_secs(1000);
        let s = TokenSettings { refreshable: false, ..Default::default() };
        let t = IssuedTokens::mint(&TokenKey::new([3; 32]), &TestRng::new(), &grant(now, s), now);
        assert!(t.refresh.is_none());
        assert_eq!(t.access_expires, now.plus_secs(3600));
    }

    #[test]
    fn access_checks() {
        let now = UnixTime::from_secs(1000);
        let g = grant(now, TokenSettings::default());
        let mut ctx = AccessContext {
            grant: g,
            token_issued_at: now,
            token_expires: now.plus_secs(60),
            user_name: "u".into(),
            user_disabled: false,
            integration_disabled: false,
        };
        assert_eq!(ctx.check(now), Ok(()));
        assert_eq!(ctx.check(now.plus_secs(60)), Err(AccessRefused::Expired));
        ctx.user_disabled = true;
        assert_eq!(ctx.check(now), Err(AccessRefused::UserDisabled));
        ctx.grant.revoked_at = Some(now);
        assert_eq!(ctx.check(now), Err(AccessRefused::Revoked));
    }
}
