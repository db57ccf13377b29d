//! Points in time, the clock trait, and the wire's date forms.
//!
//! Time is Unix milliseconds in a newtype. The wire speaks Unix seconds,
//! ISO 8601, the .NET `/Date(ms)/` form and the vault's 7-digit
//! `YYYY-MM-DDTHH:MM:SS.fffffffZ` dates; the conversions live here so server,
//! client and tests agree on them. (`strongroom_core::time` re-exports all
//! of this.)

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

/// Ticks (100 ns) per second: the resolution of vault dates.
pub const TICKS_PER_SEC: i64 = 10_000_000;

/// Parses a vault date, `YYYY-MM-DDTHH:MM:SS[.f{1,7}]Z` for years 0001 to
/// 9999, into 100-nanosecond ticks since the Unix epoch.
pub fn parse_date(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || *b.last()? != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) { part.parse().ok() } else { None }
    };
    if b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d, h, mi, sec) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    let mo_u = u32::try_from(mo).ok()?;
    if !(1..=9999).contains(&y) || !(1..=12).contains(&mo) || d < 1 || d > i64::from(days_in_month(y, mo_u)) {
        return None;
    }
    if h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let frac = &s[19..s.len() - 1];
    let ticks_frac = if frac.is_empty() {
        0
    } else {
        let digits = frac.strip_prefix('.')?;
        if digits.is_empty() || digits.len() > 7 || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        digits.parse::<i64>().ok()? * 10i64.pow(7 - digits.len() as u32)
    };
    let days = days_from_civil(y, mo_u, u32::try_from(d).ok()?);
    Some((days * 86_400 + h * 3600 + mi * 60 + sec) * TICKS_PER_SEC + ticks_frac)
}

/// Formats ticks as a vault date, `YYYY-MM-DDTHH:MM:SS.fffffffZ`.
pub fn format_date(ticks: i64) -> String {
    let secs = ticks.div_euclid(TICKS_PER_SEC);
    let frac = ticks.rem_euclid(TICKS_PER_SEC);
    let (y, mo, d, h, mi, s) = civil_from_secs(secs);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{frac:07}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn dates_parse_and_format() {
        let t = parse_date("2024-01-02T03:04:05.0000000Z").unwrap();
        assert_eq!(format_date(t), "2024-01-02T03:04:05.0000000Z");
        assert_eq!(t, UnixTime::from_secs(1_704_164_645).millis() * 10_000);
        let t = parse_date("2024-01-02T03:04:05.12Z").unwrap();
        assert_eq!(format_date(t), "2024-01-02T03:04:05.1200000Z");
        assert_eq!(parse_date("2024-01-02T03:04:05Z"), parse_date("2024-01-02T03:04:05.0000000Z"));
        assert_eq!(format_date(parse_date("0001-01-01T00:00:00Z").unwrap()), "0001-01-01T00:00:00.0000000Z");
        assert_eq!(format_date(parse_date("9999-12-31T23:59:59.9999999Z").unwrap()), "9999-12-31T23:59:59.9999999Z");
        for bad in [
            "2024-02-30T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:60Z",
            "2024-01-01 00:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00+01:00",
            "2024-01-01T00:00:00.12345678Z",
            "2024-01-01T00:00:00.Z",
            "0000-01-01T00:00:00Z",
            "+024-01-01T00:00:00Z",
            "2024-1-01T00:00:00Z",
            "",
            "2024-01-01T00:00:00ZZ",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
        assert!(parse_date("2024-02-29T00:00:00Z").is_some());
    }
}
