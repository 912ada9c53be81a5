//! Tests of the errors' messages: each cause said once along the chain.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::error::Error as _;
use std::path::PathBuf;

use claij_interceptors::ErrorChain;

use super::{Error, ErrorKind};

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

/// The predicates in a row: `[timeout, connect, rate limited, auth, quota, cancelled, retryable,
/// invalid reply, budget, limit, journal]`.
fn row(e: &Error) -> [bool; 11] {
    [
        e.is_timeout(),
        e.is_connect(),
        e.is_rate_limited(),
        e.is_auth(),
        e.is_quota_exhausted(),
        e.is_cancelled(),
        e.is_retryable(),
        e.is_invalid_reply(),
        e.is_budget(),
        e.is_limit(),
        e.is_journal(),
    ]
}

/// What each variant answers by itself: `(kind, invalid reply, limit, journal)`; an `Llm` answers
/// from its pipeline's error (checked below). No wildcard, so a new variant does not compile here
/// until it is classified (and sampled in the test).
fn expected(e: &Error) -> (ErrorKind, bool, bool, bool) {
    use ErrorKind as K;
    match e {
        Error::Parse(_) => (K::Parse, false, false, false),
        Error::Definition(_) => (K::Definition, false, false, false),
        Error::InvalidEvent { .. } => (K::InvalidEvent, true, false, false),
        Error::Llm { .. } => (K::Llm, false, false, false),
        Error::Action { .. } => (K::Action, false, false, false),
        Error::Unregistered { .. } => (K::Unregistered, false, false, false),
        Error::TooManyTransitions { .. } => (K::TooManyTransitions, false, true, false),
        Error::RepeatedCall { .. } => (K::RepeatedCall, false, true, false),
        Error::NotWaiting { .. } => (K::NotWaiting, false, false, false),
        Error::Journal { .. } => (K::Journal, false, false, true),
        Error::JournalLocked { .. } => (K::JournalLocked, false, false, true),
        Error::JournalExists { .. } => (K::JournalExists, false, false, true),
        Error::StepFailed { .. } => (K::StepFailed, false, false, false),
        Error::Unsupported { .. } => (K::Unsupported, false, false, false),
        Error::CorruptJournal { .. } => (K::CorruptJournal, false, false, true),
    }
}

#[test]
fn every_variant_is_classified() {
    let s = || "s".to_owned();
    let path = || PathBuf::from("run.jsonl");
    let json = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
    let samples = vec![
        Error::Parse(json),
        Error::Definition(crate::DefinitionError {
            fsm: s(),
            problems: Vec::new(),
        }),
        Error::InvalidEvent {
            state: s(),
            violations: Vec::new(),
        },
        Error::Llm {
            state: s(),
            source: Box::new(claij_interceptors::Error::Unpriced {
                provider: s(),
                model: s(),
            }),
        },
        Error::Action {
            state: s(),
            action: s(),
            message: s(),
        },
        Error::Unregistered {
            state: s(),
            kind: "service",
            name: s(),
        },
        Error::TooManyTransitions {
            state: s(),
            limit: 1,
            recorded: 1,
        },
        Error::RepeatedCall {
            state: s(),
            call: s(),
            repeats: 1,
            limit: 1,
        },
        Error::NotWaiting { state: s() },
        Error::Journal {
            path: path(),
            source: std::io::Error::other("disk"),
        },
        Error::JournalLocked { path: path() },
        Error::JournalExists { path: path() },
        Error::StepFailed {
            state: s(),
            message: s(),
        },
        Error::Unsupported {
            state: s(),
            reason: s(),
        },
        Error::CorruptJournal {
            path: path(),
            line: 1,
            message: s(),
        },
    ];
    let kinds: std::collections::HashSet<ErrorKind> = samples.iter().map(Error::kind).collect();
    assert_eq!(kinds.len(), 15, "a variant without a sample");
    for e in &samples {
        let (kind, invalid, limit, journal) = expected(e);
        assert_eq!(e.kind(), kind, "{e}");
        let mut want = [false; 11];
        want[7] = invalid;
        want[9] = limit;
        want[10] = journal;
        assert_eq!(row(e), want, "{e}");
        assert!(e.backend().is_none() && e.retry_after().is_none(), "{e}");
    }
}

/// Two layers: a backend error, in the pipeline's, in an `llm` state's, answers every model-call
/// predicate as the backend does; and the pipeline's own failures (no valid reply, a budget)
/// come through too.
#[test]
fn an_llm_error_answers_as_its_pipeline_and_backend_do() {
    use claij_backends::{Error as B, ErrorContext};
    let c = || ErrorContext::new("openai").with_status(503);
    let m = String::new;
    let backends = vec![
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
            retry_after: Some(std::time::Duration::from_secs(3)),
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
        B::Server {
            context: c(),
            message: m(),
        },
        B::Server {
            context: c().with_status(501),
            message: m(),
        },
        B::BadRequest {
            context: c(),
            message: m(),
        },
    ];
    let llm = |source| Error::Llm {
        state: "ask".into(),
        source: Box::new(source),
    };
    for b in backends {
        let want = [
            b.is_timeout(),
            b.is_connect(),
            b.is_rate_limited(),
            b.is_auth(),
            b.is_quota_exhausted(),
            b.is_cancelled(),
            b.is_retryable(),
            false,
            false,
            false,
            false,
        ];
        let retry_after = b.retry_after();
        let kind = b.kind();
        let e = llm(claij_interceptors::Error::Backend {
            attempts: Vec::new(),
            source: Box::new(b),
        });
        assert_eq!(row(&e), want, "{e:?}");
        assert_eq!(e.retry_after(), retry_after);
        assert_eq!(e.backend().map(B::kind), Some(kind));
    }
    let exhausted = llm(claij_interceptors::Error::RetriesExhausted(Box::new(
        claij_interceptors::Exhausted {
            attempts: Vec::new(),
        },
    )));
    assert!(exhausted.is_invalid_reply() && !exhausted.is_retryable());
    let over = llm(claij_interceptors::Error::BudgetExceeded {
        budget: claij_interceptors::BudgetKind::Tokens,
        limit: 1.0,
        used: 2.0,
        estimate: None,
        attempts: Vec::new(),
    });
    assert!(over.is_budget() && !over.is_invalid_reply());
}
