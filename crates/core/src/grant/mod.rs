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
use crate::token::{Locator, Presented, TokenHash, TokenKey, TokenKind, new_slot};

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
    /// What the grant's tokens carry to find it ([`Locator`]): chosen at
    /// birth, never changed.
    pub slot: i64,
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
    /// Access tokens of earlier pairs that still work until they expire,
    /// newest first, at most [`OLDER_ACCESS_KEPT`].
    pub older_access: Vec<OlderAccess>,
    /// Grows with every change of `pair` or `revoked_at`; every such write is
    /// conditional on the version it read, so no change is ever based on a
    /// stale read.
    pub version: i64,
    /// The client address of the last token issue (the first exchange or
    /// the last refresh), if known: "from where" on the person's page.
    pub last_addr: Option<String>,
}

/// Access tokens of earlier pairs a grant keeps working besides its newest
/// one. A client that refreshes more often than its access tokens expire
/// loses the oldest of them early; it uses the newest anyway.
pub const OLDER_ACCESS_KEPT: usize = 4;

/// An access token of an earlier pair, which works until `expires`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OlderAccess {
    pub generation: u32,
    pub hash: TokenHash,
    pub issued_at: UnixTime,
    pub expires: UnixTime,
}

/// The grant's newest token pair. Its refresh token is the only one of the
/// grant that works: at every moment a grant has at most one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pair {
    /// The pair's number: the first pair of a grant is 0, every new pair the
    /// next. Tokens carry it in their [`Locator`].
    pub generation: u32,
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
        Pair {
            generation: tokens.at.generation,
            refresh: tokens.refresh_hash(),
            access: Some(tokens.access_hash),
            used: false,
            rotated_from: None,
        }
    }

    /// The pair that replaces this one when `presented` is rotated at `now`.
    pub fn rotated(presented: TokenHash, tokens: &IssuedTokens) -> Pair {
        Pair {
            generation: tokens.at.generation,
            refresh: tokens.refresh_hash(),
            access: Some(tokens.access_hash),
            used: false,
            rotated_from: Some((presented, tokens.issued_at)),
        }
    }

    /// The pair that replaces this unused one on a retry: the same origin
    /// (so the retry window does not move), new tokens.
    pub fn retried(&self, tokens: &IssuedTokens) -> Pair {
        Pair {
            generation: tokens.at.generation,
            refresh: tokens.refresh_hash(),
            access: Some(tokens.access_hash),
            used: false,
            rotated_from: self.rotated_from,
        }
    }
}

/// The part of a grant a new pair changes, written in one conditional write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairState {
    pub pair: Pair,
    pub older_access: Vec<OlderAccess>,
    /// When the pair's access token was issued.
    pub access_issued_at: UnixTime,
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
            slot: new_slot(rng),
            pair: Pair::default(),
            older_access: Vec::new(),
            version: 0,
            last_addr: None,
        }
    }

    pub fn is_live(&self, now: UnixTime) -> bool {
        self.revoked_at.is_none() && now < self.refresh_until
    }

    /// Where the grant's next pair goes: its slot and the next generation.
    /// A grant's first pair is 0.
    pub fn next_locator(&self) -> Locator {
        let generation = if self.pair.access.is_none() { 0 } else { self.pair.generation.wrapping_add(1) };
        Locator { slot: self.slot, generation }
    }

    /// When the newest access token expires: never after the grant.
    pub fn access_expires(&self) -> UnixTime {
        self.access_issued_at.plus_secs(self.access_validity).min(self.refresh_until)
    }

    /// When the access token with hash `hash`, of pair `generation`, was
    /// issued and when it expires, if it is one the grant keeps: the newest
    /// pair's or an earlier one's.
    pub fn access_token(&self, hash: TokenHash, generation: u32) -> Option<(UnixTime, UnixTime)> {
        if self.pair.access == Some(hash) && self.pair.generation == generation {
            return Some((self.access_issued_at, self.access_expires()));
        }
        self.older_access.iter().find(|o| o.generation == generation && o.hash == hash).map(|o| (o.issued_at, o.expires))
    }

    /// The earlier access tokens still working at `now`, `extra` first.
    fn kept_access(&self, extra: Option<OlderAccess>, now: UnixTime) -> Vec<OlderAccess> {
        extra.into_iter().chain(self.older_access.iter().copied()).filter(|o| now < o.expires).take(OLDER_ACCESS_KEPT).collect()
    }

    /// The grant after `presented` (its working refresh token) is rotated
    /// into `tokens`: the access token of the pair that ends keeps working
    /// until it expires.
    pub fn after_rotation(&self, presented: TokenHash, tokens: &IssuedTokens) -> PairState {
        let ending = self.pair.access.map(|hash| OlderAccess {
            generation: self.pair.generation,
            hash,
            issued_at: self.access_issued_at,
            expires: self.access_expires(),
        });
        PairState {
            pair: Pair::rotated(presented, tokens),
            older_access: self.kept_access(ending, tokens.issued_at),
            access_issued_at: tokens.issued_at,
        }
    }

    /// The grant after its unused newest pair is replaced by `tokens` (a
    /// retry of a lost answer): that pair's tokens stop working at once.
    pub fn after_retry(&self, tokens: &IssuedTokens) -> PairState {
        PairState {
            pair: self.pair.retried(tokens),
            older_access: self.kept_access(None, tokens.issued_at),
            access_issued_at: tokens.issued_at,
        }
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
    /// Where both tokens say they belong.
    pub at: Locator,
    pub access: Secret,
    pub access_hash: TokenHash,
    /// An access token never outlives its grant.
    pub access_expires: UnixTime,
    /// `None` when the grant is not refreshable.
    pub refresh: Option<(Secret, TokenHash)>,
    pub issued_at: UnixTime,
}

impl IssuedTokens {
    /// The grant's next pair ([`Grant::next_locator`]), issued at `now`.
    pub fn mint(key: &TokenKey, rng: &dyn Random, grant: &Grant, now: UnixTime) -> IssuedTokens {
        let at = grant.next_locator();
        let access = key.mint_at(rng, TokenKind::Access, at);
        let access_hash = key.hash(TokenKind::Access, access.expose());
        let refresh = grant.refreshable.then(|| {
            let r = key.mint_at(rng, TokenKind::Refresh, at);
            let h = key.hash(TokenKind::Refresh, r.expose());
            (r, h)
        });
        let access_expires = now.plus_secs(grant.access_validity).min(grant.refresh_until);
        IssuedTokens { at, access, access_hash, access_expires, refresh, issued_at: now }
    }

    /// The access token as a client presents it back.
    pub fn access_presented(&self) -> Presented {
        Presented { hash: self.access_hash, at: self.at }
    }

    /// The refresh token, if any, as a client presents it back.
    pub fn refresh_presented(&self) -> Option<Presented> {
        self.refresh_hash().map(|hash| Presented { hash, at: self.at })
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
    /// The context of an access token found through its [`Locator`]: `None`
    /// unless `grant` keeps a working access token of that generation with
    /// hash `presented`.
    pub fn located(
        grant: Grant,
        presented: TokenHash,
        generation: u32,
        user_name: String,
        master_admin: bool,
        standing: Standing,
    ) -> Option<AccessContext> {
        let (token_issued_at, token_expires) = grant.access_token(presented, generation)?;
        Some(AccessContext { grant, token_hash: presented, token_issued_at, token_expires, user_name, master_admin, standing })
    }

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
    fn a_rotation_keeps_earlier_access_tokens_until_they_expire_and_a_retry_ends_the_unused_one() {
        let t0 = UnixTime::from_secs(1000);
        let key = TokenKey::new([3; 32]);
        let rng = TestRng::new();
        let s = TokenSettings { access_validity: 600, ..Default::default() };
        let mut g = grant(t0, s);
        let first = IssuedTokens::mint(&key, &rng, &g, t0);
        assert_eq!(first.at.generation, 0);
        assert_eq!(first.at.slot, g.slot);
        g.pair = Pair::first(&first);
        assert_eq!(g.access_token(first.access_hash, 0), Some((t0, t0.plus_secs(600))));
        assert_eq!(g.access_token(first.access_hash, 1), None, "the generation must match too");
        // Six rotations a minute apart: the newest pair plus the four newest
        // earlier access tokens work; the oldest is gone although not expired.
        let mut issued = vec![first];
        for i in 1..=6 {
            let now = t0.plus_secs(60 * i);
            let presented = g.pair.refresh.unwrap();
            let next = IssuedTokens::mint(&key, &rng, &g, now);
            assert_eq!(next.at.generation, i as u32);
            let state = g.after_rotation(presented, &next);
            assert_eq!(next.at.slot, g.slot, "a grant's tokens all carry its slot");
            (g.pair, g.older_access, g.access_issued_at) = (state.pair, state.older_access, state.access_issued_at);
            issued.push(next);
        }
        let works: Vec<bool> = issued.iter().map(|t| g.access_token(t.access_hash, t.at.generation).is_some()).collect();
        assert_eq!(works, [false, false, true, true, true, true, true]);
        assert_eq!(g.older_access.len(), OLDER_ACCESS_KEPT);
        // Much later, the earlier ones have expired: a rotation drops them.
        let late = t0.plus_secs(5000);
        let next = IssuedTokens::mint(&key, &rng, &g, late);
        assert!(g.after_rotation(g.pair.refresh.unwrap(), &next).older_access.len() <= 1, "only the pair that just ended");
        // A retry replaces the unused newest pair: its access token stops at once.
        let newest = issued.last().unwrap();
        let retry = IssuedTokens::mint(&key, &rng, &g, t0.plus_secs(361));
        let state = g.after_retry(&retry);
        assert_eq!(state.pair.rotated_from, g.pair.rotated_from, "the retry window does not move");
        assert!(!state.older_access.iter().any(|o| o.hash == newest.access_hash));
        assert_eq!(state.pair.generation, 7);
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
