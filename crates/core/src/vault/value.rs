//! Association values: a string, an int64 or a date, and the date format
//! `YYYY-MM-DDTHH:MM:SS.fffffffZ` (UTC, up to seven fraction digits, stored
//! to 100 ns).

use std::fmt;

use crate::time::{civil_from_secs, days_from_civil, days_in_month};

/// Longest `Name`, in characters.
pub const MAX_NAME_CHARS: usize = 256;
/// Longest `StringValue`, in bytes.
pub const MAX_STRING_BYTES: usize = 64 * 1024;

/// One association value. `Debug` hides string values: they may be secret.
#[derive(Clone, PartialEq, Eq)]
pub enum Value {
    String(String),
    Int(i64),
    /// 100-nanosecond ticks since the Unix epoch.
    Date(i64),
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::String(_) => f.write_str("String(<redacted>)"),
            Value::Int(_) => f.write_str("Int(<redacted>)"),
            Value::Date(_) => f.write_str("Date(<redacted>)"),
        }
    }
}

/// The stored type of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    String,
    Int,
    Date,
}

impl ValueType {
    /// As stored and as shown in `TypedNameValues[].Type`.
    pub fn as_str(self) -> &'static str {
        match self {
            ValueType::String => "string",
            ValueType::Int => "int",
            ValueType::Date => "datetime",
        }
    }

    pub fn parse(s: &str) -> Option<ValueType> {
        [ValueType::String, ValueType::Int, ValueType::Date].into_iter().find(|t| t.as_str() == s)
    }
}

impl Value {
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::String(_) => ValueType::String,
            Value::Int(_) => ValueType::Int,
            Value::Date(_) => ValueType::Date,
        }
    }

    /// The bytes that are encrypted and hashed: type-tagged, so a string
    /// "5" and an int 5 never collide.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Value::String(s) => s.as_bytes().to_vec(),
            Value::Int(i) | Value::Date(i) => i.to_be_bytes().to_vec(),
        }
    }

    pub fn from_bytes(t: ValueType, b: &[u8]) -> Option<Value> {
        match t {
            ValueType::String => String::from_utf8(b.to_vec()).ok().map(Value::String),
            ValueType::Int => <[u8; 8]>::try_from(b).ok().map(|a| Value::Int(i64::from_be_bytes(a))),
            ValueType::Date => <[u8; 8]>::try_from(b).ok().map(|a| Value::Date(i64::from_be_bytes(a))),
        }
    }

    /// As the wire shows it: the string, the decimal integer, or the date
    /// with seven fraction digits.
    pub fn display(&self) -> String {
        match self {
            Value::String(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            Value::Date(t) => format_date(*t),
        }
    }
}

/// Ticks (100 ns) per second.
const TICKS: i64 = 10_000_000;

/// Parses `YYYY-MM-DDTHH:MM:SS[.f{1,7}]Z` for years 0001 to 9999.
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
    Some((days * 86_400 + h * 3600 + mi * 60 + sec) * TICKS + ticks_frac)
}

/// Formats ticks as `YYYY-MM-DDTHH:MM:SS.fffffffZ`.
pub fn format_date(ticks: i64) -> String {
    let secs = ticks.div_euclid(TICKS);
    let frac = ticks.rem_euclid(TICKS);
    let (y, mo, d, h, mi, s) = civil_from_secs(secs);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{frac:07}Z")
}

/// Checks a `Name`.
pub fn valid_name(name: &str) -> bool {
    !name.trim().is_empty() && name.chars().count() <= MAX_NAME_CHARS && !name.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dates_parse_and_format() {
        let t = parse_date("2024-01-02T03:04:05.0000000Z").unwrap();
        assert_eq!(format_date(t), "2024-01-02T03:04:05.0000000Z");
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

    #[test]
    fn values_round_trip_through_bytes_and_hide_in_debug() {
        for v in [Value::String("s3cret".into()), Value::Int(-5), Value::Date(123)] {
            assert_eq!(Value::from_bytes(v.value_type(), &v.to_bytes()), Some(v.clone()));
            assert!(!format!("{v:?}").contains("s3cret"));
        }
        assert_eq!(Value::Int(i64::MAX).display(), "9223372036854775807");
    }

    proptest! {
        #[test]
        fn formatted_dates_parse_back(ticks in -621_355_968_000_000_000i64..2_534_023_007_999_999_999) {
            prop_assert_eq!(parse_date(&format_date(ticks)), Some(ticks));
        }

        #[test]
        fn date_parser_never_panics(s in ".{0,40}") {
            let _ = parse_date(&s);
        }
    }
}
