//! Unit tests of scrubbing, the request hash and the error mirror.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;

use super::entry::{RecordedError, canonical, hash_canonical};
use super::scrub::scrub_value;
use super::*;
use crate::Message;

#[track_caller]
fn check_scrub(text: &str, expected: &str) {
    assert_eq!(scrub_secrets(text), expected, "scrub_secrets({text:?})");
}

#[test]
fn scrubs_keys_by_prefix() {
    check_scrub("key sk-proj-AbC123xyz7890_-q end", "key sk-*** end");
    check_scrub("sk-or-v1-0123456789abcdef0123", "sk-***");
    check_scrub("\"sk-ant-api03-abcdefghijklmnop\"", "\"sk-***\"");
    check_scrub("AIzaSyA-1234567890abcdefghijklmno", "AIza***");
    check_scrub("xai-0123456789abcdef", "xai-***");
    check_scrub("gsk_0123456789abcdef", "gsk_***");
    // Too short, or inside a word: kept.
    check_scrub("sk-learn", "sk-learn");
    check_scrub("task-0123456789abcdef", "task-0123456789abcdef");
    check_scrub("AIzaShort", "AIzaShort");
}

#[test]
fn scrubs_bearer_tokens_and_auth_headers() {
    check_scrub("Authorization: Bearer abc.def", "Authorization: Bearer ***");
    check_scrub(
        "authorization=Basic dXNlcjpwYXNz",
        "authorization=Basic ***",
    );
    check_scrub("bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "bearer ***");
    check_scrub("the bearer of bad news", "the bearer of bad news");
    check_scrub("x-api-key: live-key-123\nnext", "x-api-key: ***\nnext");
    check_scrub(
        r#"{"x-api-key": "abc", "a": 1}"#,
        r#"{"x-api-key": "***", "a": 1}"#,
    );
    check_scrub("X-Goog-Api-Key:secret123", "X-Goog-Api-Key:***");
    check_scrub(
        "Proxy-Authorization: token abc",
        "Proxy-Authorization: token ***",
    );
    check_scrub("api-key = 42", "api-key = ***");
    // Not a header: kept.
    check_scrub("authorizations: many", "authorizations: many");
    check_scrub("my-x-api-key-field", "my-x-api-key-field");
}

#[test]
fn scrubs_query_strings() {
    check_scrub(
        "https://h/v1?key=abc&alt=sse",
        "https://h/v1?key=***&alt=sse",
    );
    check_scrub("/m?alt=sse&key=abc#frag", "/m?alt=sse&key=***#frag");
    check_scrub("?access_token=ya29.a0Af\"", "?access_token=***\"");
    check_scrub("api_key=abc123 in config", "api_key=*** in config");
    // `key=` outside a query string is prose.
    check_scrub("the key=value pair", "the key=value pair");
}

#[test]
fn scrubbing_keeps_unicode_and_plain_text() {
    check_scrub("", "");
    check_scrub("héllo wörld 👍 sk-", "héllo wörld 👍 sk-");
    check_scrub("é sk-0123456789abcdef ü", "é sk-*** ü");
    assert!(matches!(
        scrub_secrets("plain"),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn scrub_value_blanks_auth_members_and_scrubs_strings() {
    let mut value = json!({
        "Authorization": "Bearer x",
        "api_key": "k",
        "nested": [{"text": "use sk-0123456789abcdef"}, 3, null],
        "x-api-key": {"type": "string"},
    });
    scrub_value(&mut value);
    assert_eq!(
        value,
        json!({
            "Authorization": "***",
            "api_key": "***",
            "nested": [{"text": "use sk-***"}, 3, null],
            "x-api-key": {"type": "string"},
        })
    );
}

#[test]
fn canonical_json_sorts_keys() {
    let a = json!({"b": [1, {"y": true, "x": null}], "a": "\"q\""});
    assert_eq!(
        canonical(&a),
        r#"{"a":"\"q\"","b":[1,{"x":null,"y":true}]}"#
    );
    let b: serde_json::Value =
        serde_json::from_str(r#"{ "a" : "\"q\"", "b" : [1, {"x": null, "y": true}] }"#).unwrap();
    assert_eq!(canonical(&a), canonical(&b));
}

#[test]
fn hash_is_stable() {
    // FNV-1a 128 of the empty string is its offset basis.
    assert_eq!(hash_canonical(""), "6c62272e07bb014262b821756295c58d");
    // The published FNV-1a 128 test vector for "a".
    assert_eq!(hash_canonical("a"), "d228cb696f1a8caf78912b704e4a8964");
    let request = ChatRequest::new("google/gemini-2.5-flash")
        .system("Answer in JSON.")
        .message(Message::user("2+2?"))
        .temperature(0.2);
    // Pinned: a change here invalidates every recorded cassette.
    assert_eq!(request_hash(&request), "95833c6ce9f5b18f9f13edc0ec3c2db0");
    let other_model = ChatRequest {
        model: "openai/gpt-5".into(),
        ..request.clone()
    };
    assert_ne!(request_hash(&request), request_hash(&other_model));
    // A key in the prompt does not change the hash: it is scrubbed first.
    let with_key = request
        .clone()
        .message(Message::user("sk-0123456789abcdef"));
    let with_other_key = request.message(Message::user("sk-fedcba9876543210"));
    assert_eq!(request_hash(&with_key), request_hash(&with_other_key));
}

fn every_error() -> Vec<Error> {
    let context = ErrorContext::provider("openrouter")
        .status(429)
        .request_id("req-1");
    let plain = ErrorContext::provider("local");
    vec![
        Error::Authentication {
            context: plain.clone(),
            message: "bad key".into(),
        },
        Error::RateLimited {
            context: context.clone(),
            retry_after: Some(Duration::from_millis(1500)),
            message: "slow down".into(),
        },
        Error::RateLimited {
            context: context.clone(),
            retry_after: None,
            message: "slow".into(),
        },
        Error::ContextLengthExceeded {
            context: plain.clone(),
            message: "too long".into(),
        },
        Error::ModelNotFound {
            context: plain.clone(),
            model: "m".into(),
        },
        Error::Refused {
            context: plain.clone(),
            message: "no".into(),
        },
        Error::Overloaded {
            context: context.clone(),
            retry_after: Some(Duration::new(2, 5)),
            message: "busy".into(),
        },
        Error::Server {
            context: context.clone(),
            message: "boom".into(),
        },
        Error::BadRequest {
            context: plain.clone(),
            message: "bad".into(),
        },
        Error::Timeout {
            context: plain.clone(),
            after: Duration::from_micros(250_001),
        },
        Error::Network {
            context: plain.clone(),
            message: "reset".into(),
        },
        Error::Cancelled {
            context: plain.clone(),
        },
        Error::MalformedResponse {
            context: context.clone(),
            reason: "not json".into(),
            excerpt: "<html>".into(),
        },
        Error::Other {
            context: plain,
            message: "other".into(),
        },
    ]
}

#[test]
fn every_error_round_trips_through_json() {
    for error in every_error() {
        let json = serde_json::to_string(&RecordedError::from(&error)).unwrap();
        let back: RecordedError = serde_json::from_str(&json).unwrap();
        assert_eq!(Error::from(back), error, "{json}");
    }
}

#[test]
fn recorded_errors_name_their_kind() {
    let json = serde_json::to_value(RecordedError::from(&every_error()[1])).unwrap();
    assert_eq!(
        json,
        json!({
            "kind": "rate_limited",
            "context": {"provider": "openrouter", "status": 429, "request_id": "req-1"},
            "retry_after": {"secs": 1, "nanos": 500_000_000},
            "message": "slow down",
        })
    );
}

#[test]
fn malformed_cassettes_say_where() {
    let err = Replayer::from_jsonl("\n{\"not\": \"an entry\"}\n", "inline").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().starts_with("inline:2: "), "{err}");
    let empty = Replayer::from_jsonl("", "inline").unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.provider(), "replay");
}
