//! Tests of the error messages: a wrapped error is said once, by the chain.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::error::Error as _;

use super::{Error, ErrorChain};
use crate::interceptor::Stage;

/// `error`'s own message and the whole chain; its source never repeated in its own message.
#[track_caller]
fn check(error: &Error, message: &str, chain: &str) {
    assert_eq!(error.to_string(), message);
    assert_eq!(ErrorChain(error).to_string(), chain);
    let source = error.source().expect("a wrapping variant").to_string();
    assert!(!message.contains(&source), "{message}");
}

#[test]
fn wrapping_variants_leave_their_source_to_the_chain() {
    let invalid = || claij_schema::Error::InvalidSchema {
        extension: Some("memory-v1".into()),
        pointer: "/properties/x".into(),
        message: "bad type".into(),
    };
    let said = invalid().to_string();
    check(
        &Error::Hook {
            interceptor: "memory".into(),
            stage: Stage::PostResponse,
            source: "store down".into(),
        },
        "interceptor `memory` failed in post_response",
        "interceptor `memory` failed in post_response: store down",
    );
    check(
        &Error::Schema {
            interceptor: Some("memory".into()),
            source: Box::new(invalid()),
        },
        "interceptor `memory`: schema rejected",
        &format!("interceptor `memory`: schema rejected: {said}"),
    );
    // Its own variant, not an `InvalidSchema` at pointer "" carrying the text.
    check(
        &Error::Validator {
            source: Box::new(claij_validation::Error::Schema(invalid())),
        },
        "cannot build the validator of the composed schema",
        &format!("cannot build the validator of the composed schema: {said}"),
    );
    check(
        &Error::Backend {
            attempts: Vec::new(),
            source: Box::new(claij_backends::Error::other("scripted", "reset")),
        },
        "attempt 0",
        "attempt 0: scripted: reset",
    );
}
