//! Refresh with strict rotation and reuse detection.
//!
//! Every refresh spends the presented refresh token and issues a new pair.
//! A spent token is kept as a tombstone until the grant's `refresh_until`;
//! presenting it again means two parties hold the grant, so the whole grant
//! is revoked (RFC 9700 §4.14.2).

use crate::grant::Grant;
use crate::time::UnixTime;

/// A stored refresh token (its hash is the key it was found under).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefreshToken {
    pub issued_at: UnixTime,
    pub spent_at: Option<UnixTime>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refresh {
    /// Spend this token and issue a new pair (one conditional write).
    Rotate,
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
}

/// Decides what a refresh with `token` of `grant` by `client_id` does at `now`.
pub fn decide(token: &RefreshToken, grant: &Grant, client_id: &str, now: UnixTime) -> Refresh {
    if grant.client_id != client_id {
        Refresh::Reject(RefreshRejected::WrongClient)
    } else if grant.revoked_at.is_some() {
        Refresh::Reject(RefreshRejected::Revoked)
    } else if now >= grant.refresh_until {
        Refresh::Reject(RefreshRejected::Expired)
    } else if token.spent_at.is_some() {
        Refresh::Reuse
    } else if !grant.refreshable {
        Refresh::Reject(RefreshRejected::NotRefreshable)
    } else {
        Refresh::Rotate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grant::testing::TestRng;
    use crate::identity::UserId;
    use crate::integration::TokenSettings;
    use crate::scope::Scope;

    #[test]
    fn the_decision_table() {
        let rng = TestRng::new();
        let now = UnixTime::from_secs(5000);
        let mut g = Grant::new(&rng, "app", UserId::generate(&rng), Scope::parse("restricted").unwrap(), now, TokenSettings::default());
        let live = RefreshToken { issued_at: now, spent_at: None };
        let spent = RefreshToken { issued_at: now, spent_at: Some(now) };
        assert_eq!(decide(&live, &g, "app", now), Refresh::Rotate);
        assert_eq!(decide(&spent, &g, "app", now), Refresh::Reuse);
        assert_eq!(decide(&spent, &g, "other", now), Refresh::Reject(RefreshRejected::WrongClient));
        assert_eq!(decide(&live, &g, "app", g.refresh_until), Refresh::Reject(RefreshRejected::Expired));
        // A reuse is detected until the very end of the grant.
        assert_eq!(decide(&spent, &g, "app", g.refresh_until.plus_millis(-1)), Refresh::Reuse);
        g.revoked_at = Some(now);
        assert_eq!(decide(&live, &g, "app", now), Refresh::Reject(RefreshRejected::Revoked));
    }
}
