//! Points in time and the clock trait.
//!
//! Time is Unix milliseconds in a newtype. The wire speaks Unix seconds,
//! ISO 8601 and the .NET `/Date(ms)/` form; the conversions live here so both
//! server and tests agree on them.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// A point in time, in milliseconds since the Unix epoch (UTC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixTime(i64);

impl UnixTime {
    pub const EPOCH: UnixTime = UnixTime(0);

    pub const fn from_millis(ms: i64) -> Self {
        UnixTime(ms)
    }

    pub const fn from_secs(secs: i64) -> Self {
        UnixTime(secs.saturating_mul(1000))
    }

    pub const fn millis(self) -> i64 {
        self.0
    }

    /// Whole seconds, rounded down (towards the past).
    pub const fn secs(self) -> i64 {
        self.0.div_euclid(1000)
    }

    pub const fn plus_secs(self, secs: i64) -> Self {
        UnixTime(self.0.saturating_add(secs.saturating_mul(1000)))
    }

    pub const fn plus_millis(self, ms: i64) -> Self {
        UnixTime(self.0.saturating_add(ms))
    }

    /// Milliseconds from `earlier` to `self` (negative if `earlier` is later).
    pub const fn millis_since(self, earlier: UnixTime) -> i64 {
        self.0.saturating_sub(earlier.0)
    }

    /// Seconds from `self` until `later`, rounded up (299.998 s left is
    /// "300", as a client reading `expires_in` expects), never negative.
    pub const fn secs_until(self, later: UnixTime) -> i64 {
        let d = later.0.saturating_sub(self.0);
        if d <= 0 { 0 } else { d.saturating_add(999) / 1000 }
    }

    /// `2020-11-09T21:07:25Z`: whole seconds, UTC, as the product's Verify shows.
    pub fn iso8601(self) -> String {
        let (y, mo, d, h, mi, s) = civil_from_secs(self.secs());
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
    }

    /// The .NET JavaScriptSerializer form `/Date(1604956045163)/`.
    pub fn dotnet_date(self) -> String {
        format!("/Date({})/", self.0)
    }
}

impl fmt::Display for UnixTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.iso8601())
    }
}

/// Where "now" comes from. The server's one implementation reads the system
/// clock; tests use [`ManualClock`].
pub trait Clock: Send + Sync + fmt::Debug {
    fn now(&self) -> UnixTime;
}

/// A clock that only moves when told to. Cloning shares the same time.
#[derive(Clone, Debug)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    pub fn new(start: UnixTime) -> Self {
        ManualClock(Arc::new(AtomicI64::new(start.millis())))
    }

    pub fn advance_secs(&self, secs: i64) {
        self.0.fetch_add(secs.saturating_mul(1000), Ordering::SeqCst);
    }

    pub fn advance_millis(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    pub fn set(&self, t: UnixTime) {
        self.0.store(t.millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> UnixTime {
        UnixTime(self.0.load(Ordering::SeqCst))
    }
}

/// Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's algorithm).
pub const fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`]: (year, month, day).
pub const fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// (year, month, day, hour, minute, second) of a Unix time in seconds.
pub const fn civil_from_secs(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    (y, m, d, (rem / 3600) as u32, ((rem % 3600) / 60) as u32, (rem % 60) as u32)
}

/// Days in a month of a proleptic Gregorian year.
pub const fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn iso8601_matches_the_product_example() {
        assert_eq!(UnixTime::from_secs(1_604_956_045).iso8601(), "2020-11-09T21:07:25Z");
        assert_eq!(UnixTime::from_millis(1_604_956_045_163).dotnet_date(), "/Date(1604956045163)/");
        assert_eq!(UnixTime::EPOCH.iso8601(), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn negative_times_round_towards_the_past() {
        assert_eq!(UnixTime::from_millis(-1).secs(), -1);
        assert_eq!(UnixTime::from_secs(-1).iso8601(), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn secs_until_rounds_up_and_never_goes_negative() {
        let t = UnixTime::from_millis(1_000_002);
        assert_eq!(t.secs_until(UnixTime::from_millis(1_300_000)), 300);
        assert_eq!(t.secs_until(UnixTime::from_millis(1_000_003)), 1);
        assert_eq!(t.secs_until(t), 0);
        assert_eq!(t.secs_until(UnixTime::EPOCH), 0);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(UnixTime::from_secs(100));
        assert_eq!(c.now().secs(), 100);
        c.advance_secs(5);
        c.advance_millis(1500);
        assert_eq!(c.now().millis(), 106_500);
    }

    proptest! {
        #[test]
        fn civil_round_trips(days in -1_000_000i64..3_000_000) {
            let (y, m, d) = civil_from_days(days);
            prop_assert!((1..=12).contains(&m));
            prop_assert!(d >= 1 && d <= days_in_month(y, m));
            prop_assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
