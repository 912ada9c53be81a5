//! Every parser: in range gives the value, anything else the error naming the range.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

#[track_caller]
fn check<T: std::fmt::Debug + PartialEq>(
    parse: fn(&str) -> Result<T, ParseError>,
    cases: &[(&str, Result<T, &str>)],
) {
    for (text, expected) in cases {
        let got = parse(text).map_err(|e| e.to_string());
        match expected {
            Ok(value) => assert_eq!(got.as_ref(), Ok(value), "{text:?}"),
            Err(message) => assert_eq!(got, Err((*message).to_owned()), "{text:?}"),
        }
    }
}

#[cfg(feature = "mcp")]
#[test]
fn seconds_are_finite_positive_and_at_most_a_day() {
    use std::time::Duration;
    let range = "expected seconds, above 0 and at most 86400 (a day)";
    check(
        seconds,
        &[
            ("30", Ok(Duration::from_secs(30))),
            ("0.25", Ok(Duration::from_millis(250))),
            ("86400", Ok(Duration::from_secs(86_400))),
            ("1e308", Err(range)),
            ("-1", Err(range)),
            ("0", Err(range)),
            ("1e-320", Err(range)),
            ("NaN", Err(range)),
            ("inf", Err(range)),
            ("-inf", Err(range)),
            ("86400.001", Err(range)),
            ("ten", Err(range)),
            ("", Err(range)),
        ],
    );
}

#[test]
fn whole_numbers_are_within_their_ranges() {
    check(
        retries,
        &[
            ("0", Ok(0)),
            ("100", Ok(100)),
            ("101", Err("expected a whole number from 0 to 100")),
            ("-1", Err("expected a whole number from 0 to 100")),
            ("1.5", Err("expected a whole number from 0 to 100")),
            (
                "99999999999999999999999",
                Err("expected a whole number from 0 to 100"),
            ),
        ],
    );
    check(
        tokens,
        &[
            ("1", Ok(1)),
            ("0", Err("expected a whole number from 1 to 10000000")),
            (
                "4294967296",
                Err("expected a whole number from 1 to 10000000"),
            ),
        ],
    );
    check(
        threads,
        &[
            ("4", Ok(NonZeroUsize::new(4).unwrap())),
            ("0", Err("expected a whole number from 1 to 1024")),
            ("1025", Err("expected a whole number from 1 to 1024")),
        ],
    );
    check(
        reply_bytes,
        &[
            ("1024", Ok(1024)),
            (
                "1023",
                Err("expected a whole number from 1024 to 1073741824"),
            ),
        ],
    );
}

#[test]
fn temperatures_are_finite_from_0_to_2() {
    let range = "expected a number from 0 to 2";
    check(
        temperature,
        &[
            ("0", Ok(0.0)),
            ("0.7", Ok(0.7)),
            ("2", Ok(2.0)),
            ("2.5", Err(range)),
            ("-0.1", Err(range)),
            ("NaN", Err(range)),
            ("inf", Err(range)),
            ("1e308", Err(range)),
        ],
    );
}

#[cfg(feature = "mcp")]
#[test]
fn run_bounds_are_within_their_ranges() {
    check(
        transitions,
        &[
            ("1000000", Ok(1_000_000)),
            ("0", Err("expected a whole number from 1 to 1000000")),
        ],
    );
    let repeats = "expected a whole number from 0 to 1000000, or off";
    check(
        repeated_calls,
        &[
            ("0", Ok(0)),
            (" 1 ", Ok(1)),
            ("1000000", Ok(1_000_000)),
            ("off", Ok(usize::MAX)),
            ("1000001", Err(repeats)),
            ("-1", Err(repeats)),
            ("OFF", Err(repeats)),
            ("", Err(repeats)),
        ],
    );
    check(
        message_bytes,
        &[
            ("67108864", Ok(64 << 20)),
            (
                "1023",
                Err("expected a whole number from 1024 to 1073741824"),
            ),
            (
                "1073741825",
                Err("expected a whole number from 1024 to 1073741824"),
            ),
        ],
    );
}

#[test]
fn conversation_bounds_are_within_their_ranges() {
    check(
        result_budget,
        &[
            ("0", Ok(0)),
            ("1000000", Ok(1_000_000)),
            ("1000001", Err("expected a whole number from 0 to 1000000")),
        ],
    );
    check(
        history_messages,
        &[
            ("0", Ok(0)),
            ("100000", Ok(100_000)),
            ("-3", Err("expected a whole number from 0 to 100000")),
        ],
    );
    check(
        history_tokens,
        &[
            ("4000", Ok(4000)),
            (
                "10000001",
                Err("expected a whole number from 0 to 10000000"),
            ),
        ],
    );
}

#[test]
fn agent_budgets_are_within_their_ranges() {
    check(
        steps,
        &[
            ("1", Ok(1)),
            ("1000", Ok(1000)),
            ("0", Err("expected a whole number from 1 to 1000")),
        ],
    );
    let range = "expected US dollars, above 0 and at most 1000000";
    check(
        dollars,
        &[
            ("0.25", Ok(0.25)),
            ("1000000", Ok(1_000_000.0)),
            ("0", Err(range)),
            ("-1", Err(range)),
            ("NaN", Err(range)),
            ("inf", Err(range)),
            ("1000000.5", Err(range)),
            ("five", Err(range)),
        ],
    );
}
