//! Limits on guessing: wrong passwords and wrong user codes.
//!
//! Every attempt takes a slot in each counter that limits it *before* the
//! work it limits (the password hash, the code comparison), in one
//! conditional write. A slot is a failure until the attempt says otherwise:
//! a failed attempt keeps it, and the counter locks once it holds `limit`
//! failures; a successful one gives it back. So parallel guesses cannot
//! outrun the count (at most `limit` attempts per window are ever checked,
//! however many arrive at once), and a lock set while a check was running
//! refuses that check's right answer too.
//!
//! The counters live in the database so every replica sees the same
//! numbers; this module only says how a counter moves. Which counters an
//! attempt takes is [`password_slots`] and [`code_slots`]: the scheme and its
//! reasons are in the book's `security/limits.md`.
//!
//! A lock limits guessing from where it was earned; it is not a state of the
//! account. Grants that exist keep working (a refresh involves no password),
//! and sign-ins from an address that has signed in as the user before are
//! not stopped by guesses from other addresses.

use crate::time::UnixTime;

/// A fixed-window counter with a lockout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Attempts allowed within `window_secs`; the failure that fills the
    /// last slot locks the counter.
    pub limit: u32,
    pub window_secs: i64,
    pub lockout_secs: i64,
}

impl Rule {
    /// Per user name and client address: 5 wrong passwords in 15 minutes
    /// lock that name from that address for 15 minutes.
    pub const PAIR_PASSWORD: Rule = Rule { limit: 5, window_secs: 900, lockout_secs: 900 };
    /// Per user name from addresses that never signed in as it: 10 wrong
    /// passwords in 15 minutes lock the name, for such addresses only, for
    /// 15 minutes (the slower back-off against guesses from many addresses).
    pub const ACCOUNT_PASSWORD: Rule = Rule { limit: 10, window_secs: 900, lockout_secs: 900 };
    /// Per client address, all names: 20 wrong passwords in 15 minutes.
    pub const ADDRESS_PASSWORD: Rule = Rule { limit: 20, window_secs: 900, lockout_secs: 900 };
    /// Per signed-in user: 5 wrong user codes in 10 minutes (RFC 8628 §5.1).
    pub const USER_CODE_GUESS: Rule = Rule { limit: 5, window_secs: 600, lockout_secs: 600 };
    /// Per client address: 10 wrong user codes in 10 minutes.
    pub const ADDRESS_CODE_GUESS: Rule = Rule { limit: 10, window_secs: 600, lockout_secs: 600 };
    /// Per client address: 60 device authorizations started in 10 minutes
    /// (each creates rows; the endpoint needs no credentials).
    pub const ADDRESS_DEVICE_STARTS: Rule = Rule { limit: 60, window_secs: 600, lockout_secs: 0 };
    /// Per identity: 120 events written through `POST /vedsdk/Log` a minute
    /// (each is a row of the chained log, kept until it is archived).
    pub const IDENTITY_CLIENT_EVENTS: Rule = Rule { limit: 120, window_secs: 60, lockout_secs: 0 };
}

/// Days an address stays known to a user name after its last sign-in there.
pub const ORIGIN_RETENTION_DAYS: i64 = 90;

/// One counter an attempt takes a slot in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The counter's key.
    pub key: String,
    /// The user name (lower-cased) the counter limits guesses against, if
    /// any: what `admin users list` shows as locked and `admin users unlock`
    /// clears.
    pub subject: Option<String>,
    pub rule: Rule,
    /// Whether a success resets the counter rather than only giving its own
    /// slot back: true for counters of one name at one address (the person
    /// there knows the password), false for counters others share.
    pub reset_on_success: bool,
}

/// The counters a password attempt for user name `name_key` (lower-cased)
/// from `addr` takes. `known_origin`: `addr` has signed in as this name
/// before, so the name's counter for unknown addresses does not apply.
pub fn password_slots(name_key: &str, addr: &str, known_origin: bool) -> Vec<Slot> {
    let subject = Some(name_key.to_owned());
    // The address first: it never holds a space, so the key is unambiguous
    // whatever the name holds.
    let mut slots = vec![
        Slot { key: format!("pw:pair:{addr} {name_key}"), subject: subject.clone(), rule: Rule::PAIR_PASSWORD, reset_on_success: true },
        Slot { key: format!("pw:addr:{addr}"), subject: None, rule: Rule::ADDRESS_PASSWORD, reset_on_success: false },
    ];
    if !known_origin {
        slots.push(Slot { key: format!("pw:acct:{name_key}"), subject, rule: Rule::ACCOUNT_PASSWORD, reset_on_success: false });
    }
    slots
}

/// The counters a user-code attempt by signed-in user `user_id` (whose name
/// is `name_key`) from `addr` takes.
pub fn code_slots(user_id: &str, name_key: &str, addr: &str) -> Vec<Slot> {
    vec![
        Slot {
            key: format!("code:user:{user_id}"),
            subject: Some(name_key.to_owned()),
            rule: Rule::USER_CODE_GUESS,
            reset_on_success: false,
        },
        Slot { key: format!("code:addr:{addr}"), subject: None, rule: Rule::ADDRESS_CODE_GUESS, reset_on_success: false },
    ]
}

/// Whether an attempt may go ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// It took a slot in every counter.
    Admitted,
    /// A counter is locked.
    Locked,
    /// A counter's slots are all taken by attempts still being checked:
    /// nothing is locked, the attempt may be tried again in a moment.
    Busy,
}

/// One counter's stored state. `failures` counts the attempts of the
/// window: failed ones and those still being checked.
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

    fn window_over(&self, rule: Rule, now: UnixTime) -> bool {
        self.failures == 0 || now.millis_since(self.window_start) >= rule.window_secs.saturating_mul(1000)
    }

    /// The counter after an attempt at `now` takes a slot, or why it may
    /// not: locked, or every slot of the window taken ([`Admission::Busy`]:
    /// by attempts still being checked, or failures that will lock when the
    /// last of them is recorded).
    pub fn admit(self, rule: Rule, now: UnixTime) -> Result<Counter, Admission> {
        if self.is_locked(now) {
            return Err(Admission::Locked);
        }
        if self.window_over(rule, now) {
            return Ok(Counter { failures: 1, window_start: now, locked_until: None });
        }
        if self.failures < rule.limit {
            Ok(Counter { failures: self.failures + 1, window_start: self.window_start, locked_until: None })
        } else {
            Err(Admission::Busy)
        }
    }

    /// The counter after an attempt that took a slot failed at `now`: the
    /// slot stays taken, and a counter that holds `limit` attempts locks.
    pub fn failed(self, rule: Rule, now: UnixTime) -> Counter {
        if self.failures >= rule.limit && !self.is_locked(now) && rule.lockout_secs > 0 {
            Counter { locked_until: Some(now.plus_secs(rule.lockout_secs)), ..self }
        } else {
            self
        }
    }

    /// The counter after an attempt that took a slot succeeded: the slot is
    /// given back, or the whole count when `reset`. A lock stays.
    pub fn succeeded(self, reset: bool) -> Counter {
        Counter { failures: if reset { 0 } else { self.failures.saturating_sub(1) }, ..self }
    }

    /// A counter that counts plain events (device authorizations started):
    /// one more at `now`, or `None` past the limit.
    pub fn count(self, rule: Rule, now: UnixTime) -> Option<Counter> {
        if self.window_over(rule, now) {
            return Some(Counter { failures: 1, window_start: now, locked_until: None });
        }
        (self.failures < rule.limit).then(|| Counter { failures: self.failures + 1, ..self })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: Rule = Rule { limit: 3, window_secs: 60, lockout_secs: 120 };

    #[test]
    fn at_most_limit_attempts_are_admitted_at_once() {
        let t0 = UnixTime::from_secs(1000);
        let mut c = Counter::default();
        for _ in 0..3 {
            c = c.admit(RULE, t0).unwrap();
        }
        assert_eq!(c.admit(RULE, t0), Err(Admission::Busy), "a fourth attempt while three are being checked");
        assert!(!c.is_locked(t0), "nothing failed yet");
    }

    #[test]
    fn the_failure_that_fills_the_last_slot_locks_and_no_more_are_checked() {
        let t0 = UnixTime::from_secs(1000);
        let mut c = Counter::default();
        for i in 0..2 {
            c = c.admit(RULE, t0.plus_secs(i)).unwrap().failed(RULE, t0.plus_secs(i));
            assert!(!c.is_locked(t0.plus_secs(i)), "failure {i} must not lock yet");
        }
        c = c.admit(RULE, t0.plus_secs(2)).unwrap().failed(RULE, t0.plus_secs(2));
        assert!(c.is_locked(t0.plus_secs(2)), "three failures of a limit of three lock");
        assert_eq!(c.admit(RULE, t0.plus_secs(3)), Err(Admission::Locked));
        assert!(c.is_locked(t0.plus_secs(121)));
        assert!(!c.is_locked(t0.plus_secs(122)));
        // After the lock the window is over too: a fresh count.
        assert_eq!(c.admit(RULE, t0.plus_secs(122)).unwrap().failures, 1);
    }

    #[test]
    fn a_lock_set_while_a_check_ran_stays_on_success() {
        let t0 = UnixTime::from_secs(1000);
        let mut c = Counter::default();
        for _ in 0..3 {
            c = c.admit(RULE, t0).unwrap();
        }
        // Two of the three fail; the second locks (the count holds three).
        c = c.failed(RULE, t0).failed(RULE, t0);
        assert!(c.is_locked(t0));
        let after = c.succeeded(true);
        assert!(after.is_locked(t0), "the store refuses the right answer of a locked counter");
    }

    #[test]
    fn success_gives_its_slot_back_or_resets() {
        let t0 = UnixTime::from_secs(1000);
        let c = Counter::default().admit(RULE, t0).unwrap().failed(RULE, t0).admit(RULE, t0).unwrap();
        assert_eq!(c.succeeded(false).failures, 1);
        assert_eq!(c.succeeded(true).failures, 0);
    }

    #[test]
    fn the_window_resets_the_count() {
        let t0 = UnixTime::from_secs(1000);
        let c = Counter::default().admit(RULE, t0).unwrap().failed(RULE, t0).admit(RULE, t0).unwrap().failed(RULE, t0);
        let c = c.admit(RULE, t0.plus_secs(61)).unwrap();
        assert_eq!(c.failures, 1);
        assert_eq!(c.window_start, t0.plus_secs(61));
    }

    #[test]
    fn plain_counts_stop_at_the_limit() {
        let t0 = UnixTime::from_secs(1000);
        let mut c = Counter::default();
        for _ in 0..3 {
            c = c.count(RULE, t0).unwrap();
        }
        assert_eq!(c.count(RULE, t0), None);
        assert!(c.count(RULE, t0.plus_secs(60)).is_some());
    }

    #[test]
    fn keys_cannot_collide_whatever_the_name_holds() {
        // Client addresses are IP addresses as text: never a space.
        let names = ["a", "a b", "b", "1 a", "::1 a", "a@b", "pw:pair:x"];
        let addrs = ["10.0.0.1", "::1", "10.0.0.1:a", "fe80::1"];
        let mut seen = std::collections::HashSet::new();
        for n in names {
            for a in addrs {
                for s in password_slots(n, a, false) {
                    seen.insert(s.key);
                }
            }
        }
        // Every (name, address) pair has its own pair key, every address and every name one key each.
        assert_eq!(seen.len(), names.len() * addrs.len() + addrs.len() + names.len());
        assert_eq!(password_slots("x", "::1", true).len(), 2, "a known address skips the account counter");
        assert!(password_slots("x", "::1", false).iter().any(|s| s.rule == Rule::ACCOUNT_PASSWORD));
    }
}
