//! Refresh with strict rotation, reuse detection, and a retry window for
//! answers that were lost.
//!
//! Every refresh spends the presented refresh token and issues a new pair;
//! the grant records which pair is the newest ([`Pair`]). A spent token is
//! recognised until the grant's `refresh_until`; presenting it again means
//! two parties hold the grant, so the whole grant is revoked
//! (RFC 9700 §4.14.2).
//!
//! One exception keeps a lost answer from ending the grant: within the retry
//! window after a rotation, the token that was just rotated may be presented
//! again as long as the pair its rotation produced was never used (neither
//! its refresh token presented nor its access token used). It gets a new
//! pair, and the unused pair it replaces stops working. Either way a grant
//! has at most one working refresh token at every moment.
//!
//! ```text
//!  presented token is…                  decision
//!  the grant's working refresh token  → Rotate
//!  the one just rotated, pair unused,
//!    within the window                → Retry
//!  any other token of the grant       → Reuse (revoke the grant)
//!  not a token of the grant           → Reject (nothing changes)
//! ```
//!
//! "A token of the grant": one whose [`Locator`] names the grant's slot and
//! an earlier generation. The locator's tag is a MAC under the server key,
//! so only a token the server issued for that grant and generation carries
//! it, whatever the depth: a spent token is recognised at any age, with no
//! tombstone kept. (A token without a locator is no grant's: it is never
//! looked up, see `TokenKey::presented`.)
//!
//! [`Locator`]: crate::token::Locator

use crate::grant::{Grant, IssueRefused, Pair, Standing, may_receive};
use crate::time::UnixTime;
use crate::token::{Presented, TokenHash};

/// What one store read brings back for a presented refresh token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefreshContext {
    pub presented: Presented,
    pub grant: Grant,
    pub standing: Standing,
    /// The integration's retry window, when it overrides the server's.
    pub retry_window: Option<i64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refresh {
    /// Spend the working token and issue a new pair.
    Rotate,
    /// Replace the grant's unused newest pair: the answer that carried it
    /// was lost.
    Retry,
    /// A spent token came back: revoke the grant.
    Reuse,
    /// Refused; nothing changes. The token is not burned.
    Reject(RefreshRejected),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RefreshRejected {
    #[error("the refresh token belongs to another client")]
    WrongClient,
    #[error("the grant has been revoked")]
    Revoked,
    #[error("the grant has expired")]
    Expired,
    #[error("the grant is not refreshable")]
    NotRefreshable,
    /// The token names the grant but is none it issued (a forged random
    /// part, or a generation not issued yet): answered like an unknown token.
    #[error("not a token of the grant")]
    Unknown,
    #[error("{0}")]
    Refused(IssueRefused),
}

impl RefreshContext {
    /// What a refresh with this token by `client_id` does at `now`, with a
    /// retry window of `window_secs` (0: strict, a spent token always revokes).
    pub fn decide(&self, client_id: &str, now: UnixTime, window_secs: i64) -> Refresh {
        let g = &self.grant;
        if g.client_id != client_id {
            return Refresh::Reject(RefreshRejected::WrongClient);
        }
        if g.revoked_at.is_some() {
            return Refresh::Reject(RefreshRejected::Revoked);
        }
        if now >= g.refresh_until {
            return Refresh::Reject(RefreshRejected::Expired);
        }
        if !g.refreshable {
            return Refresh::Reject(RefreshRejected::NotRefreshable);
        }
        let p = self.presented;
        let decision = if g.pair.refresh == Some(p.hash) {
            Refresh::Rotate
        } else if retry_allowed(&g.pair, p.hash, now, window_secs) {
            Refresh::Retry
        } else if p.at.generation < g.pair.generation {
            // A spent token of the grant, at any depth: whatever the standing.
            return Refresh::Reuse;
        } else {
            return Refresh::Reject(RefreshRejected::Unknown);
        };
        match may_receive(&self.standing, &g.scope) {
            Ok(()) => decision,
            Err(why) => Refresh::Reject(RefreshRejected::Refused(why)),
        }
    }
}

/// Whether `presented` is the token whose rotation produced `pair`, the pair
/// was never used, and the rotation is less than `window_secs` old.
pub fn retry_allowed(pair: &Pair, presented: TokenHash, now: UnixTime, window_secs: i64) -> bool {
    match pair.rotated_from {
        Some((from, at)) => from == presented && !pair.used && now < at.plus_secs(window_secs),
        None => false,
    }
}

/// The window in force: the integration's, else the server's.
pub fn window(ctx_override: Option<i64>, server_default: i64) -> i64 {
    ctx_override.unwrap_or(server_default).max(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grant::testing::{TestRng, standing};
    use crate::identity::UserId;
    use crate::integration::TokenSettings;
    use crate::scope::Scope;
    use crate::time::Clock as _;
    use crate::time::ManualClock;
    use crate::token::Locator;

    const A: TokenHash = TokenHash([1; 32]);
    const B: TokenHash = TokenHash([2; 32]);
    const C: TokenHash = TokenHash([3; 32]);

    /// A token whose locator names `generation` of the grant.
    fn located(hash: TokenHash, generation: u32) -> Presented {
        Presented { hash, at: Locator { slot: 1, generation } }
    }

    /// A grant whose token `A` (of generation 0) was rotated at `at` into
    /// the pair (generation 1) with refresh token `B`.
    fn rotated_at(at: UnixTime) -> RefreshContext {
        let rng = TestRng::new();
        let mut g = Grant::new(&rng, "app", UserId::generate(&rng), Scope::parse("restricted").unwrap(), at, TokenSettings::default());
        g.pair = Pair { generation: 1, refresh: Some(B), access: Some(C), used: false, rotated_from: Some((A, at)) };
        RefreshContext { presented: located(A, 0), grant: g, standing: standing(), retry_window: None }
    }

    #[test]
    fn located_tokens_are_reuse_at_any_depth_and_unknown_otherwise() {
        let clock = ManualClock::new(UnixTime::from_secs(5000));
        let mut ctx = rotated_at(clock.now());
        ctx.grant.pair.generation = 10_000;
        for generation in [0, 1, 9_990, 9_999] {
            ctx.presented = located(TokenHash([9; 32]), generation);
            assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Reuse, "generation {generation}");
        }
        for generation in [10_000, 10_001, u32::MAX] {
            ctx.presented = located(TokenHash([9; 32]), generation);
            assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Reject(RefreshRejected::Unknown), "generation {generation}");
        }
        ctx.presented = located(B, 10_000);
        assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Rotate);
        ctx.presented = located(A, 9_999);
        assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Retry);
    }

    #[test]
    fn the_working_token_rotates_and_others_are_reuse() {
        let clock = ManualClock::new(UnixTime::from_secs(5000));
        let mut ctx = rotated_at(clock.now());
        ctx.presented = located(B, 1);
        assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Rotate);
        assert_eq!(ctx.decide("other", clock.now(), 30), Refresh::Reject(RefreshRejected::WrongClient));
        ctx.presented = located(C, 0); // a spent token of the grant, never the rotated one
        assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Reuse);
    }

    #[test]
    fn a_just_rotated_token_retries_inside_the_window_only() {
        let clock = ManualClock::new(UnixTime::from_secs(5000));
        let ctx = rotated_at(clock.now());
        assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Retry);
        clock.advance_millis(29_999);
        assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Retry);
        clock.advance_millis(1);
        assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Reuse, "the window is over");
    }

    #[test]
    fn a_used_successor_makes_the_retry_a_reuse() {
        let clock = ManualClock::new(UnixTime::from_secs(5000));
        let mut ctx = rotated_at(clock.now());
        ctx.grant.pair.used = true;
        clock.advance_secs(1);
        assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Reuse);
    }

    #[test]
    fn window_zero_is_strict() {
        let clock = ManualClock::new(UnixTime::from_secs(5000));
        let ctx = rotated_at(clock.now());
        assert_eq!(ctx.decide("app", clock.now(), 0), Refresh::Reuse);
        assert_eq!(window(Some(0), 30), 0);
        assert_eq!(window(None, 30), 30);
        assert_eq!(window(Some(-5), 30), 0);
    }

    #[test]
    fn a_birth_pair_has_no_retry_by_refresh_token() {
        let clock = ManualClock::new(UnixTime::from_secs(5000));
        let mut ctx = rotated_at(clock.now());
        ctx.grant.pair.rotated_from = None;
        assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Reuse);
    }

    #[test]
    fn refusals_do_not_burn_and_come_before_reuse_only_for_the_grant() {
        let clock = ManualClock::new(UnixTime::from_secs(5000));
        let mut ctx = rotated_at(clock.now());
        ctx.standing.user_disabled = true;
        assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Reject(RefreshRejected::Refused(IssueRefused::UserDisabled)));
        ctx.presented = located(B, 1);
        assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Reject(RefreshRejected::Refused(IssueRefused::UserDisabled)));
        // A spent token still revokes, whatever the user's standing.
        ctx.presented = located(C, 0);
        assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Reuse);
        let end = ctx.grant.refresh_until;
        assert_eq!(ctx.decide("app", end, 30), Refresh::Reject(RefreshRejected::Expired));
        assert_eq!(ctx.decide("app", end.plus_millis(-1), 30), Refresh::Reuse, "reuse is detected until the very end");
        ctx.grant.revoked_at = Some(clock.now());
        assert_eq!(ctx.decide("app", clock.now(), 30), Refresh::Reject(RefreshRejected::Revoked));
    }
}
