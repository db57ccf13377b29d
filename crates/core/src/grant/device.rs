//! The device authorization grant (RFC 8628) as a state machine.
//!
//! ```text
//!            approve            redeem (one conditional write)
//! Pending ─────────────▶ Approved ─────────────▶ Redeemed
//!    │        deny
//!    └─────────────────▶ Denied
//! every state ── now >= expires_at ──▶ (expired: refused, row purged later)
//! ```
//! A poll of a pending code faster than its interval answers `slow_down`
//! and adds five seconds to that code's interval (RFC 8628 §3.5). The state
//! lives in the database, so switching replicas does not dodge it.

use crate::grant::{Grant, Standing};
use crate::identity::UserId;
use crate::integration::TokenOverrides;
use crate::scope::Scope;
use crate::time::UnixTime;
use crate::token::TokenHash;

/// How much earlier than `interval` a poll may arrive and still count as on
/// time: a client that sleeps exactly `interval` between requests sees its
/// requests arrive with jitter.
pub const POLL_SLACK_MS: i64 = 1000;
/// Seconds added to a code's interval on each `slow_down` (RFC 8628 §3.5).
pub const SLOW_DOWN_STEP: i64 = 5;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceState {
    Pending,
    Approved { user_id: UserId },
    Denied { user_id: UserId },
    Redeemed { user_id: UserId },
}

impl DeviceState {
    pub fn name(&self) -> &'static str {
        match self {
            DeviceState::Pending => "pending",
            DeviceState::Approved { .. } => "approved",
            DeviceState::Denied { .. } => "denied",
            DeviceState::Redeemed { .. } => "redeemed",
        }
    }

    pub fn user(&self) -> Option<&UserId> {
        match self {
            DeviceState::Pending => None,
            DeviceState::Approved { user_id } | DeviceState::Denied { user_id } | DeviceState::Redeemed { user_id } => Some(user_id),
        }
    }
}

/// A device authorization as stored. `version` increases with every write,
/// and every write is conditional on the version it read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceAuthorization {
    pub code_hash: TokenHash,
    pub user_code_hash: TokenHash,
    pub client_id: String,
    pub scope: Scope,
    pub state: DeviceState,
    pub created_at: UnixTime,
    pub expires_at: UnixTime,
    pub interval_secs: i64,
    pub last_poll_at: Option<UnixTime>,
    pub version: i64,
}

/// What one store read brings back for a presented device code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceContext {
    pub device: DeviceAuthorization,
    /// Whether the integration exists and accepts the device flow.
    pub device_flow_enabled: bool,
    /// The integration's token settings, for a new grant.
    pub overrides: TokenOverrides,
    /// The standing of the user who decided the code (if one did) on its
    /// integration.
    pub standing: Standing,
    /// The grant the code was redeemed into, once it was.
    pub grant: Option<Grant>,
}

impl DeviceContext {
    /// Whether a redeemed code presented again by `client_id` may give its
    /// grant a new pair: the answer to the exchange was lost. Only within
    /// `window_secs` of the exchange, and only while the grant is live, was
    /// never refreshed and its pair never used. The earlier pair stops working.
    pub fn may_reissue(&self, client_id: &str, now: UnixTime, window_secs: i64) -> bool {
        let Some(g) = &self.grant else { return false };
        self.device.client_id == client_id
            && g.client_id == client_id
            && g.is_live(now)
            && g.pair.rotated_from.is_none()
            && !g.pair.used
            && now < g.created_at.plus_secs(window_secs)
    }
}

/// The answer to one poll of the token endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Approved: issue tokens, if the conditional redeem write wins.
    Issue {
        user_id: UserId,
    },
    /// Still pending; record this poll.
    Pending {
        record: PollRecord,
    },
    /// Polled too fast; record this poll and the longer interval.
    SlowDown {
        record: PollRecord,
    },
    Denied,
    Expired,
    /// Already exchanged once.
    Redeemed,
    /// The code belongs to another client. Nothing changes.
    WrongClient,
}

/// What a poll writes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PollRecord {
    pub last_poll_at: UnixTime,
    pub interval_secs: i64,
}

/// The answer to a user's decision on the approval page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decide {
    /// Write the decision (conditional on the version).
    Record,
    Expired,
    AlreadyDecided,
}

impl DeviceAuthorization {
    pub fn poll(&self, client_id: &str, now: UnixTime) -> Poll {
        // The client check comes first and changes nothing, so a code cannot
        // be burned or slowed down by presenting it as another client.
        if self.client_id != client_id {
            return Poll::WrongClient;
        }
        if now >= self.expires_at {
            return Poll::Expired;
        }
        match &self.state {
            DeviceState::Approved { user_id } => Poll::Issue { user_id: user_id.clone() },
            DeviceState::Denied { .. } => Poll::Denied,
            DeviceState::Redeemed { .. } => Poll::Redeemed,
            DeviceState::Pending => {
                let too_fast =
                    self.last_poll_at.is_some_and(|last| now.millis_since(last) < self.interval_secs.saturating_mul(1000) - POLL_SLACK_MS);
                if too_fast {
                    let interval_secs = self.interval_secs.saturating_add(SLOW_DOWN_STEP);
                    Poll::SlowDown { record: PollRecord { last_poll_at: now, interval_secs } }
                } else {
                    Poll::Pending { record: PollRecord { last_poll_at: now, interval_secs: self.interval_secs } }
                }
            }
        }
    }

    /// Whether a user may still approve or deny this code at `now`.
    pub fn decide(&self, now: UnixTime) -> Decide {
        if now >= self.expires_at {
            Decide::Expired
        } else if self.state != DeviceState::Pending {
            Decide::AlreadyDecided
        } else {
            Decide::Record
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grant::testing::TestRng;
    use crate::token::{TokenKey, TokenKind};

    fn pending(now: UnixTime) -> DeviceAuthorization {
        let k = TokenKey::new([1; 32]);
        DeviceAuthorization {
            code_hash: k.hash(TokenKind::DeviceCode, "d"),
            user_code_hash: k.hash(TokenKind::UserCode, "u"),
            client_id: "app".into(),
            scope: Scope::parse("restricted").unwrap(),
            state: DeviceState::Pending,
            created_at: now,
            expires_at: now.plus_secs(300),
            interval_secs: 5,
            last_poll_at: None,
            version: 0,
        }
    }

    #[test]
    fn polling_on_time_is_pending_and_too_fast_slows_down() {
        let t0 = UnixTime::from_secs(1_000_000);
        let mut d = pending(t0);
        let Poll::Pending { record } = d.poll("app", t0) else { panic!("first poll is pending") };
        d.last_poll_at = Some(record.last_poll_at);
        // 400 ms early is jitter, not abuse.
        assert!(matches!(d.poll("app", t0.plus_millis(4600)), Poll::Pending { .. }));
        let Poll::SlowDown { record } = d.poll("app", t0.plus_millis(2500)) else { panic!("too fast") };
        assert_eq!(record.interval_secs, 10);
        d.last_poll_at = Some(record.last_poll_at);
        d.interval_secs = record.interval_secs;
        // The longer interval holds for later polls.
        assert!(matches!(d.poll("app", t0.plus_millis(2500 + 6000)), Poll::SlowDown { .. }));
        assert!(matches!(d.poll("app", t0.plus_millis(2500 + 10_000)), Poll::Pending { .. }));
    }

    #[test]
    fn a_redeemed_code_reissues_only_while_its_grant_is_untouched() {
        use crate::grant::Pair;
        use crate::integration::TokenSettings;
        let t0 = UnixTime::from_secs(1_000_000);
        let rng = TestRng::new();
        let user = UserId::generate(&rng);
        let mut d = pending(t0);
        d.state = DeviceState::Redeemed { user_id: user.clone() };
        let mut g = Grant::new(&rng, "app", user, d.scope.clone(), t0, TokenSettings::default());
        g.pair =
            Pair { generation: 0, refresh: Some(TokenHash([1; 32])), access: Some(TokenHash([2; 32])), used: false, rotated_from: None };
        let standing = Standing {
            integration_found: true,
            integration_disabled: false,
            max_scope: d.scope.clone(),
            user_found: true,
            user_disabled: false,
            user_allowed: true,
        };
        let ctx =
            DeviceContext { device: d, device_flow_enabled: true, overrides: TokenOverrides::default(), standing, grant: Some(g.clone()) };
        assert!(ctx.may_reissue("app", t0.plus_secs(29), 30));
        assert!(!ctx.may_reissue("app", t0.plus_secs(30), 30), "after the window");
        assert!(!ctx.may_reissue("app", t0, 0), "window 0 is strict");
        assert!(!ctx.may_reissue("other", t0, 30), "another client");
        let with = |f: fn(&mut Grant)| {
            let mut c = ctx.clone();
            f(c.grant.as_mut().unwrap());
            c.may_reissue("app", t0.plus_secs(1), 30)
        };
        assert!(!with(|g| g.pair.used = true), "the pair was used");
        assert!(!with(|g| g.pair.rotated_from = Some((TokenHash([1; 32]), g.created_at))), "the grant was refreshed");
        assert!(!with(|g| g.revoked_at = Some(g.created_at)), "revoked");
        let mut none = ctx.clone();
        none.grant = None;
        assert!(!none.may_reissue("app", t0, 30));
    }

    #[test]
    fn states_answer_as_specified() {
        let t0 = UnixTime::from_secs(1_000_000);
        let user = UserId::generate(&TestRng::new());
        let mut d = pending(t0);
        assert_eq!(d.poll("other", t0), Poll::WrongClient);
        assert_eq!(d.poll("App", t0), Poll::WrongClient, "client ids are case-sensitive");
        d.state = DeviceState::Approved { user_id: user.clone() };
        assert_eq!(d.poll("app", t0), Poll::Issue { user_id: user.clone() });
        assert_eq!(d.poll("app", t0.plus_secs(300)), Poll::Expired);
        d.state = DeviceState::Denied { user_id: user.clone() };
        assert_eq!(d.poll("app", t0), Poll::Denied);
        d.state = DeviceState::Redeemed { user_id: user };
        assert_eq!(d.poll("app", t0), Poll::Redeemed);
        assert_eq!(d.decide(t0), Decide::AlreadyDecided);
        assert_eq!(pending(t0).decide(t0), Decide::Record);
        assert_eq!(pending(t0).decide(t0.plus_secs(301)), Decide::Expired);
    }
}
