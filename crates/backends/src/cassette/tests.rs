//! Unit tests of the request hash, the error mirror, and that no secret reaches a cassette.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;

use super::entry::{RecordedError, canonical, hash_canonical};
use super::*;
use crate::Message;

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
    let context = ErrorContext::new("openrouter")
        .with_status(429)
        .with_request_id("req-1");
    let plain = ErrorContext::new("local");
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

/// Echoes the last message as its answer and its request id, or fails with it when it says `fail`.
struct Echo;

impl Backend for Echo {
    fn provider(&self) -> &str {
        "echo"
    }

    fn capabilities(&self, _model: &str) -> Capabilities {
        Capabilities::prompted()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, Error>> {
        let last = request
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let answer = if last.starts_with("fail") {
            Err(Error::Authentication {
                context: ErrorContext::new("echo").with_status(401),
                message: last,
            })
        } else {
            Ok(ChatResponse::text(last.clone()).request_id(last))
        };
        Box::pin(std::future::ready(answer))
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    /// Every form of secret, in a prompt, an answer, a request id or an error, stays out of the file.
    #[test]
    fn no_form_of_secret_reaches_a_cassette(
        secret in "[A-Za-z0-9]{16,40}",
        other in proptest::prelude::any::<String>(),
    ) {
        let dir = std::env::temp_dir().join(format!("claij-cassette-prop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cassette.jsonl");
        let _ = std::fs::remove_file(&path);
        let recorder = Recorder::new(Echo, &path).unwrap();
        for form in claij_test_support::secrets::secret_forms(&secret) {
            for message in [format!("{other} {form} {other}"), format!("fail {form}")] {
                let request = ChatRequest::new("m")
                    .system(form.clone())
                    .message(Message::user(message));
                let _ = futures_executor::block_on(recorder.complete(&request));
            }
        }
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        proptest::prop_assert_eq!(text.lines().count(), 2 * claij_test_support::secrets::secret_forms(&secret).len());
        proptest::prop_assert!(!text.contains(&secret) || other.contains(&secret), "{text}");
    }
}
