//! Every numeric flag's parser of the CLI's own (the model knobs' are the library's,
//! [`claij::options::parse`]): in range gives the value, anything else the error naming the range.

use super::*;

#[track_caller]
fn check<T: std::fmt::Debug + PartialEq, E: std::fmt::Display>(
    parse: fn(&str) -> Result<T, E>,
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

#[test]
fn whole_numbers_are_within_their_ranges() {
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

#[test]
fn a_question_has_more_than_whitespace() {
    let empty = "the question is empty: ask something";
    check(
        question,
        &[
            ("Capital of France?", Ok("Capital of France?".to_owned())),
            (" ok ", Ok(" ok ".to_owned())),
            ("", Err(empty)),
            ("   ", Err(empty)),
            ("\n\t ", Err(empty)),
        ],
    );
}
