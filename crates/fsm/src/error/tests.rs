//! Tests of the errors' messages: each cause said once along the chain.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::error::Error as _;
use std::path::PathBuf;

use claij_interceptors::ErrorChain;

use super::Error;

/// `error`'s own message, and the whole chain; its source never repeated in its own message.
#[track_caller]
fn check(error: &Error, message: &str, chain: &str) {
    assert_eq!(error.to_string(), message);
    assert_eq!(ErrorChain(error).to_string(), chain);
    if let Some(source) = error.source() {
        assert!(!message.contains(&source.to_string()), "{message}");
    }
}

#[test]
fn wrapped_errors_are_said_once_along_the_chain() {
    let backend = claij_interceptors::Error::Backend {
        attempts: Vec::new(),
        source: Box::new(claij_backends::Error::other("scripted", "connection reset")),
    };
    check(
        &Error::Llm {
            state: "ask".into(),
            source: Box::new(backend),
        },
        "state `ask`",
        "state `ask`: attempt 0: scripted: connection reset",
    );
    check(
        &Error::Journal {
            path: PathBuf::from("run.jsonl"),
            source: std::io::Error::other("disk full"),
        },
        "journal run.jsonl",
        "journal run.jsonl: disk full",
    );
    let parse = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
    let said = parse.to_string();
    check(
        &Error::Parse(parse),
        "cannot read the FSM definition",
        &format!("cannot read the FSM definition: {said}"),
    );
}
