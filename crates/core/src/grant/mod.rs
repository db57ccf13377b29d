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
    /// The newest token pair and how it came to be.
    pub pair: Pair,
    /// Grows with every change of `pair` or `revoked_at`; every such write is
    /// conditional on the version it read, so no change is ever based on a
    /// stale read.
    pub version: i64,
}

/// The grant's newest token pair. Its refresh token is the only one of the
/// grant that works: at every moment a grant has at most one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pair {
    /// The working refresh token (`None` when the grant is not refreshable).
    pub refresh: Option<TokenHash>,
    /// The newest access token (older ones work until they expire).
    pub access: Option<TokenHash>,
    /// Whether the client has shown it holds this pair: its refresh token was
    /// presented or its access token used. Only an unused pair may be replaced
    /// by a retry.
    pub used: bool,
    /// The refresh token whose presentation produced this pair, and when:
    /// `None` for the pair a grant was born with.
    pub rotated_from: Option<(TokenHash, UnixTime)>,
}

impl Pair {
    /// The pair a grant is born with.
    pub fn first(tokens: &IssuedTokens) -> Pair {
        Pair { refresh: tokens.refresh_hash(), access: Some(tokens.access_hash), used: false, rotated_from: None }
    }

    /// The pair that replaces this one when `presented` is rotated at `now`.
    pub fn rotated(presented: TokenHash, tokens: &IssuedTokens) -> Pair {
        Pair {
            refresh: tokens.refresh_hash(),
            access: Some(tokens.access_hash),
            used: false,
            rotated_from: Some((presented, tokens.issued_at)),
        }
    }

    /// The pair that replaces this unused one on a retry: the same origin
    /// (so the retry window does not move), new tokens.
    pub fn retried(&self, tokens: &IssuedTokens) -> Pair {
        Pair { refresh: tokens.refresh_hash(), access: Some(tokens.access_hash), used: false, rotated_from: self.rotated_from }
    }
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
            pair: Pair::default(),
            version: 0,
        }
    }

    pub fn is_live(&self, now: UnixTime) -> bool {
        self.revoked_at.is_none() && now < self.refresh_until
    }
}

/// Whether, at one moment, a user may receive tokens through an integration:
/// what a context read brings back for [`may_receive`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Standing {
    /// False when the integration does not exist (any more).
    pub integration_found: bool,
    pub integration_disabled: bool,
    pub max_scope: Scope,
    /// False when the user does not exist (any more).
    pub user_found: bool,
    pub user_disabled: bool,
    /// The integration admits this user (everyone, or the user is listed).
    pub user_allowed: bool,
}

/// Why a user may not receive tokens now. Nothing is burned by a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IssueRefused {
    #[error("the API integration is disabled or gone")]
    IntegrationDisabled,
    #[error("the user no longer exists")]
    UserGone,
    #[error("the user's account is disabled")]
    UserDisabled,
    #[error("the user is not allowed to use this API integration")]
    UserNotAllowed,
    #[error("the scope exceeds the scope of the API integration")]
    ScopeTooWide,
}

/// Checked at every issue, refresh and retry, and at every use of an access
/// token: a user disabled, removed from the integration, or a scope no
/// longer within the integration's maximum, gets nothing, and a grant in
/// that state is not honoured. A password lockout is not part of it: it
/// limits guessing, and a refresh or a token's use involves no password
/// (SECURITY.md).
pub fn may_receive(s: &Standing, scope: &Scope) -> Result<(), IssueRefused> {
    if !s.integration_found || s.integration_disabled {
        Err(IssueRefused::IntegrationDisabled)
    } else if !s.user_found {
        Err(IssueRefused::UserGone)
    } else if s.user_disabled {
        Err(IssueRefused::UserDisabled)
    } else if !s.user_allowed {
        Err(IssueRefused::UserNotAllowed)
    } else if !scope.is_subset_of(&s.max_scope) {
        Err(IssueRefused::ScopeTooWide)
    } else {
        Ok(())
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

/// What the store knows about a presented access token: one indexed read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessContext {
    pub grant: Grant,
    /// The hash the token was found under.
    pub token_hash: TokenHash,
    pub token_issued_at: UnixTime,
    pub token_expires: UnixTime,
    pub user_name: String,
    pub master_admin: bool,
    /// The user's standing on the grant's integration now: read with the
    /// token, so a change of the integration or the user counts at once.
    pub standing: Standing,
}

/// Why a bearer token is refused. All of them are a 401 on the wire; the
/// variants exist for the server log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AccessRefused {
    #[error("token expired")]
    Expired,
    #[error("grant revoked")]
    Revoked,
    /// The grant no longer stands: the user or the integration changed
    /// since it was issued (see [`may_receive`]).
    #[error("{0}")]
    NoLongerAllowed(IssueRefused),
}

impl AccessContext {
    /// Whether this use is the first of the grant's newest pair, which must
    /// be recorded (an unused pair may be replaced by a retry; a used one not).
    pub fn first_use_of_pair(&self) -> bool {
        !self.grant.pair.used && self.grant.pair.access == Some(self.token_hash)
    }

    /// Whether the token may be used at `now`.
    pub fn check(&self, now: UnixTime) -> Result<(), AccessRefused> {
        if self.grant.revoked_at.is_some() {
            Err(AccessRefused::Revoked)
        } else if now >= self.token_expires || now >= self.grant.refresh_until {
            Err(AccessRefused::Expired)
        } else {
            may_receive(&self.standing, &self.grant.scope).map_err(AccessRefused::NoLongerAllowed)
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use crate::grant::Standing;
    use crate::random::Random;
    use crate::scope::Scope;
    use std::sync::Mutex;

    /// A user in good standing on an integration allowing `restricted:manage`.
    pub(crate) fn standing() -> Standing {
        Standing {
            integration_found: true,
            integration_disabled: false,
            max_scope: Scope::parse("restricted:manage").unwrap(),
            user_found: true,
            user_disabled: false,
            user_allowed: true,
        }
    }

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
    use super::testing::{TestRng, standing};
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
            token_hash: TokenHash([1; 32]),
            token_issued_at: now,
            token_expires: now.plus_secs(60),
            user_name: "u".into(),
            master_admin: false,
            standing: standing(),
        };
        assert_eq!(ctx.check(now), Ok(()));
        assert!(!ctx.first_use_of_pair());
        ctx.grant.pair.access = Some(TokenHash([1; 32]));
        assert!(ctx.first_use_of_pair());
        ctx.grant.pair.used = true;
        assert!(!ctx.first_use_of_pair());
        assert_eq!(ctx.check(now.plus_secs(60)), Err(AccessRefused::Expired));
        let mut live = ctx.clone();
        live.grant.pair.used = false;
        live.standing.user_disabled = true;
        assert_eq!(live.check(now), Err(AccessRefused::NoLongerAllowed(IssueRefused::UserDisabled)));
        live.standing.user_disabled = false;
        live.standing.user_allowed = false;
        assert_eq!(live.check(now), Err(AccessRefused::NoLongerAllowed(IssueRefused::UserNotAllowed)), "taken off the allow-list");
        live.standing.user_allowed = true;
        live.standing.max_scope = Scope::default();
        assert_eq!(live.check(now), Err(AccessRefused::NoLongerAllowed(IssueRefused::ScopeTooWide)), "maximum scope reduced");
        live.standing = standing();
        live.standing.integration_disabled = true;
        assert_eq!(live.check(now), Err(AccessRefused::NoLongerAllowed(IssueRefused::IntegrationDisabled)));
        ctx.standing.user_disabled = true;
        ctx.grant.revoked_at = Some(now);
        assert_eq!(ctx.check(now), Err(AccessRefused::Revoked));
    }

    #[test]
    fn who_may_receive_tokens() {
        let scope = Scope::parse("restricted").unwrap();
        assert_eq!(may_receive(&standing(), &scope), Ok(()));
        let refused = |f: fn(&mut Standing)| {
            let mut s = standing();
            f(&mut s);
            may_receive(&s, &scope).unwrap_err()
        };
        assert_eq!(refused(|s| s.integration_found = false), IssueRefused::IntegrationDisabled);
        assert_eq!(refused(|s| s.integration_disabled = true), IssueRefused::IntegrationDisabled);
        assert_eq!(refused(|s| s.user_found = false), IssueRefused::UserGone);
        assert_eq!(refused(|s| s.user_disabled = true), IssueRefused::UserDisabled);
        assert_eq!(refused(|s| s.user_allowed = false), IssueRefused::UserNotAllowed);
        assert_eq!(refused(|s| s.max_scope = Scope::parse("certificate").unwrap()), IssueRefused::ScopeTooWide);
    }
}
