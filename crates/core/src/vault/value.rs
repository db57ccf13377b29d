//! Association values: a string, an int64 or a date, and the date format
//! `YYYY-MM-DDTHH:MM:SS.fffffffZ` (UTC, up to seven fraction digits, stored
//! to 100 ns).

use std::fmt;

/// The date format lives in `proto` (the client needs it); re-exported here.
pub use strongroom_proto::time::{format_date, parse_date};

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

/// Checks a `Name`.
pub fn valid_name(name: &str) -> bool {
    !name.trim().is_empty() && name.chars().count() <= MAX_NAME_CHARS && !name.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
