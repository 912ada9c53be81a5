//! The error's kinds, messages and predicates.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::{Error, ErrorKind};

#[test]
fn a_message_comes_first_and_its_source_after() {
    let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
    let e = Error::io("cannot read /x", io);
    assert_eq!(e.kind(), ErrorKind::Io);
    assert_eq!(e.to_string(), "cannot read /x");
    assert_eq!(crate::error_chain(&e), "cannot read /x: denied");
    assert!(!e.is_timeout() && !e.is_retryable() && !e.is_auth());
    let wrapped = e.context("outer");
    assert_eq!(
        crate::error_chain(&wrapped),
        "outer: cannot read /x: denied"
    );
    assert_eq!(wrapped.kind(), ErrorKind::Io);
}

#[test]
fn the_backend_s_predicates_come_through() {
    let backend = claij_backends::Error::Timeout {
        context: claij_backends::ErrorContext::new("openai"),
        after: std::time::Duration::from_secs(1),
    };
    let e = Error::from(backend);
    assert_eq!(e.kind(), ErrorKind::Backend);
    assert!(e.is_timeout());
    assert!(e.is_retryable());
    assert!(e.backend().is_some());
}

#[test]
fn a_missing_key_is_an_auth_error_and_a_bad_alias_a_config_one() {
    assert!(Error::key("OPENAI_API_KEY is not set").is_auth());
    assert!(Error::model("unknown model `x`").is_config());
    assert!(!Error::model("unknown model `x`").is_auth());
}

#[test]
fn a_refusal_comes_through_from_the_backend_and_the_pipeline() {
    let refused = || claij_backends::Error::Refused {
        context: claij_backends::ErrorContext::new("gemini"),
        message: "finish reason SAFETY: Blocked.".into(),
    };
    let direct = Error::from(refused());
    let piped = Error::from(claij_interceptors::Error::Backend {
        attempts: Vec::new(),
        source: Box::new(refused()),
    });
    for e in [direct, piped] {
        assert!(e.is_refusal(), "{e}");
        assert!(!e.is_retryable() && !e.is_invalid_reply(), "{e}");
        assert!(
            crate::error_chain(&e).contains("finish reason SAFETY: Blocked."),
            "{e}"
        );
    }
    let timeout = Error::from(claij_backends::Error::Timeout {
        context: claij_backends::ErrorContext::new("openai"),
        after: std::time::Duration::from_secs(1),
    });
    assert!(!timeout.is_refusal());
}
