//! Points in time and the clock trait: [`strongroom_proto::time`], re-exported
//! so `strongroom_core::time::…` paths keep working. They live in `proto`
//! because the client library needs them and depends on `proto` only.

pub use strongroom_proto::time::*;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
