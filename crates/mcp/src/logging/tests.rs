//! Log levels read and written by name; log messages shown on one line.

#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::{LogLevel, LogMessage};
use crate::Error;

#[track_caller]
fn check(input: &str, expected: Option<LogLevel>) {
    match (input.parse::<LogLevel>(), expected) {
        (Ok(level), Some(expected)) => assert_eq!(level, expected, "{input}"),
        (Err(Error::UnknownLogLevel { given }), None) => assert_eq!(given, input),
        (other, _) => panic!("{input}: {other:?}"),
    }
}

#[test]
fn levels_parse_by_wire_name_in_any_case() {
    check("debug", Some(LogLevel::Debug));
    check("WARNING", Some(LogLevel::Warning));
    check("Emergency", Some(LogLevel::Emergency));
    check("warn", None);
    check("", None);
}

#[test]
fn every_level_round_trips_and_orders_by_severity() {
    for level in LogLevel::ALL {
        assert_eq!(level.to_string().parse::<LogLevel>().unwrap(), level);
    }
    assert!(LogLevel::ALL.windows(2).all(|pair| pair[0] < pair[1]));
}

#[test]
fn an_unknown_level_says_which_ones_there_are() {
    let err = "loud".parse::<LogLevel>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown MCP log level `loud`: expected one of debug, info, notice, warning, error, critical, alert, emergency"
    );
    assert_eq!(err.server(), None);
}

#[test]
fn a_message_is_one_line_naming_the_server() {
    let text = LogMessage::new("everything", LogLevel::Error, json!("disk full"));
    assert_eq!(text.to_string(), "everything: error: disk full");
    let data = LogMessage::new("git", LogLevel::Info, json!({"files": 3})).with_logger("index");
    assert_eq!(data.to_string(), r#"git: info: [index] {"files":3}"#);
}
