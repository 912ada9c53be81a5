//! Tests of the error messages: a wrapped error is said once, by the chain.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::error::Error as _;

use super::{Error, ErrorChain, ErrorKind, Exhausted};
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

/// One backend error of each way a call fails, for the forwarding checks.
fn backend_errors() -> Vec<claij_backends::Error> {
    use claij_backends::{Error as B, ErrorContext};
    let c = || ErrorContext::new("openai").with_status(500);
    let m = String::new;
    vec![
        B::Timeout {
            context: c(),
            after: std::time::Duration::from_secs(1),
        },
        B::Network {
            context: c(),
            message: m(),
        },
        B::RateLimited {
            context: c(),
            retry_after: Some(std::time::Duration::from_secs(2)),
            message: m(),
        },
        B::Overloaded {
            context: c(),
            retry_after: None,
            message: m(),
        },
        B::Authentication {
            context: c(),
            message: m(),
        },
        B::QuotaExhausted {
            context: c(),
            message: m(),
        },
        B::Cancelled { context: c() },
        B::Refused {
            context: c().with_status(200),
            message: "finish reason SAFETY".into(),
        },
        B::Server {
            context: c(),
            message: m(),
        },
        B::Server {
            context: c().with_status(501),
            message: m(),
        },
        B::BadRequest {
            context: c().with_status(400),
            message: m(),
        },
        B::other("scripted", "reset"),
    ]
}

/// The predicates in a row: `[timeout, connect, rate limited, auth, quota, cancelled, refusal,
/// retryable, invalid reply, budget]`.
fn row(e: &Error) -> [bool; 10] {
    [
        e.is_timeout(),
        e.is_connect(),
        e.is_rate_limited(),
        e.is_auth(),
        e.is_quota_exhausted(),
        e.is_cancelled(),
        e.is_refusal(),
        e.is_retryable(),
        e.is_invalid_reply(),
        e.is_budget(),
    ]
}

/// What each variant answers besides its backend's: `(kind, invalid reply, budget)`. No wildcard,
/// so a new variant does not compile here until it is classified (and sampled below).
fn expected(e: &Error) -> (ErrorKind, bool, bool) {
    match e {
        Error::Hook { .. } => (ErrorKind::Hook, false, false),
        Error::Schema { .. } => (ErrorKind::Schema, false, false),
        Error::Validator { .. } => (ErrorKind::Validator, false, false),
        Error::Backend { .. } => (ErrorKind::Backend, false, false),
        Error::RetriesExhausted(_) => (ErrorKind::RetriesExhausted, true, false),
        Error::BudgetExceeded { .. } => (ErrorKind::BudgetExceeded, false, true),
        Error::Unpriced { .. } => (ErrorKind::Unpriced, false, false),
        Error::Typed { .. } => (ErrorKind::Typed, false, false),
    }
}

#[test]
fn every_variant_is_classified_and_only_a_backend_error_answers_for_the_call() {
    let invalid = || claij_schema::Error::UnknownExtension {
        extension: "x".into(),
    };
    let samples = vec![
        Error::Hook {
            interceptor: "memory".into(),
            stage: Stage::PrePrompt,
            source: "down".into(),
        },
        Error::Schema {
            interceptor: None,
            source: Box::new(invalid()),
        },
        Error::Validator {
            source: Box::new(claij_validation::Error::Schema(invalid())),
        },
        Error::Backend {
            attempts: Vec::new(),
            source: Box::new(claij_backends::Error::other("p", "m")),
        },
        Error::RetriesExhausted(Box::new(Exhausted {
            attempts: Vec::new(),
        })),
        Error::BudgetExceeded {
            budget: crate::BudgetKind::Steps,
            limit: 1.0,
            used: 1.0,
            estimate: None,
            attempts: Vec::new(),
        },
        Error::Unpriced {
            provider: "p".into(),
            model: "m".into(),
        },
        Error::Typed {
            type_name: "T",
            message: String::new(),
            value: serde_json::Value::Null,
        },
    ];
    let kinds: std::collections::HashSet<ErrorKind> = samples.iter().map(Error::kind).collect();
    assert_eq!(kinds.len(), 8, "a variant without a sample");
    for e in &samples {
        let (kind, invalid_reply, budget) = expected(e);
        assert_eq!(e.kind(), kind, "{e}");
        // None of these is a backend failure (the scripted `other` answers no call predicate).
        let mut want = [false; 10];
        want[8] = invalid_reply;
        want[9] = budget;
        assert_eq!(row(e), want, "{e}");
        assert_eq!((e.retry_after(), e.status()), (None, None), "{e}");
    }
}

#[test]
fn a_backend_error_answers_for_the_call_as_the_backend_says() {
    for b in backend_errors() {
        let want = [
            b.is_timeout(),
            b.is_connect(),
            b.is_rate_limited(),
            b.is_auth(),
            b.is_quota_exhausted(),
            b.is_cancelled(),
            b.is_refusal(),
            b.is_retryable(),
            false,
            false,
        ];
        let (retry_after, status) = (b.retry_after(), b.status());
        let e = Error::Backend {
            attempts: Vec::new(),
            source: Box::new(b),
        };
        assert_eq!(row(&e), want, "{e:?}");
        assert_eq!((e.retry_after(), e.status()), (retry_after, status));
    }
    // The table above is not vacuous: each call predicate is true for some backend error.
    let rows: Vec<[bool; 10]> = backend_errors()
        .into_iter()
        .map(|b| {
            row(&Error::Backend {
                attempts: Vec::new(),
                source: Box::new(b),
            })
        })
        .collect();
    for i in 0..8 {
        assert!(rows.iter().any(|r| r[i]), "predicate {i} never true");
        assert!(rows.iter().any(|r| !r[i]), "predicate {i} never false");
    }
}
