//! Counting failures and locking out: wrong passwords and wrong user codes,
//! per user and per client address.
//!
//! The counters live in the database so every replica sees the same numbers;
//! this module only says how a counter moves.

use crate::time::UnixTime;

/// The key prefix of a user's password failures; the rest is the lower-cased
/// user name. The store joins on it to read a user's lockout with its context.
pub const USER_PASSWORD_PREFIX: &str = "pw:user:";

/// The throttle key of user `name`'s password failures.
pub fn user_password_key(name: &str) -> String {
    format!("{USER_PASSWORD_PREFIX}{}", name.to_lowercase())
}

/// A fixed-window failure counter with a lockout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Failures allowed within `window_secs`; the next one locks.
    pub limit: u32,
    pub window_secs: i64,
    pub lockout_secs: i64,
}

impl Rule {
    /// Per user: 5 wrong passwords in 15 minutes lock the account for 15 minutes.
    pub const USER_PASSWORD: Rule = Rule { limit: 5, window_secs: 900, lockout_secs: 900 };
    /// Per client address: 20 wrong passwords in 15 minutes.
    pub const ADDRESS_PASSWORD: Rule = Rule { limit: 20, window_secs: 900, lockout_secs: 900 };
    /// Per signed-in user: 5 wrong user codes in 10 minutes (RFC 8628 §5.1).
    pub const USER_CODE_GUESS: Rule = Rule { limit: 5, window_secs: 600, lockout_secs: 600 };
    /// Per client address: 10 wrong user codes in 10 minutes.
    pub const ADDRESS_CODE_GUESS: Rule = Rule { limit: 10, window_secs: 600, lockout_secs: 600 };
    /// Per client address: 60 device authorizations started in 10 minutes
    /// (each creates rows; the endpoint needs no credentials).
    pub const ADDRESS_DEVICE_STARTS: Rule = Rule { limit: 60, window_secs: 600, lockout_secs: 0 };
}

/// One counter's stored state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counter {
    pub failures: u32,
    pub window_start: UnixTime,
    pub locked_until: Option<UnixTime>,
}

impl Counter {
    pub fn is_locked(&self, now: UnixTime) -> bool {
        self.locked_until.is_some_and(|t| now < t)
    }

    /// The counter after one more failure at `now`.
    pub fn after_failure(self, rule: Rule, now: UnixTime) -> Counter {
        let fresh = now.millis_since(self.window_start) >= rule.window_secs.saturating_mul(1000) || self.failures == 0;
        let (failures, window_start) = if fresh { (1, now) } else { (self.failures.saturating_add(1), self.window_start) };
        let locked_until =
            if failures > rule.limit { Some(now.plus_secs(rule.lockout_secs)) } else { self.locked_until.filter(|t| now < *t) };
        Counter { failures, window_start, locked_until }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_after_the_limit_and_unlocks_after_the_lockout() {
        let rule = Rule { limit: 3, window_secs: 60, lockout_secs: 120 };
        let t0 = UnixTime::from_secs(1000);
        let mut c = Counter::default();
        for i in 0..3 {
            c = c.after_failure(rule, t0.plus_secs(i));
            assert!(!c.is_locked(t0.plus_secs(i)), "failure {i} must not lock yet");
        }
        c = c.after_failure(rule, t0.plus_secs(3));
        assert!(c.is_locked(t0.plus_secs(3)));
        assert!(c.is_locked(t0.plus_secs(122)));
        assert!(!c.is_locked(t0.plus_secs(123)));
    }

    #[test]
    fn the_window_resets_the_count() {
        let rule = Rule { limit: 2, window_secs: 60, lockout_secs: 120 };
        let t0 = UnixTime::from_secs(1000);
        let c = Counter::default().after_failure(rule, t0).after_failure(rule, t0.plus_secs(1));
        let c = c.after_failure(rule, t0.plus_secs(61));
        assert_eq!(c.failures, 1);
        assert!(!c.is_locked(t0.plus_secs(61)));
    }
}
