//! Unit tests of the fallback's pure parts: which error bodies are rejections, the rewritten
//! requests, and what the memory reports as news.

use serde_json::json;

use super::super::dialect::{self, StructuredDialect};
use super::{FallbackMemory, as_prompted, as_tool};
use crate::{ChatRequest, Message, OutputMode};

#[track_caller]
fn check_rejection(status: u16, body: &str, expected: bool) {
    assert_eq!(
        dialect::is_structured_rejection(status, body.as_bytes()),
        expected,
        "{status} {body}"
    );
}

#[test]
fn rejections_name_the_structured_output_field() {
    let llama = r#"{"error":{"message":"1 validation error:\n  {'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}","type":"internal_server_error"}}"#;
    check_rejection(500, llama, true);
    check_rejection(
        400,
        r#"{"error":{"message":"Unknown field json_schema"}}"#,
        true,
    );
    check_rejection(
        422,
        r#"{"detail":[{"loc":["body","response_format"]}]}"#,
        true,
    );
    check_rejection(500, r#"{"error":{"message":"out of memory"}}"#, false);
    check_rejection(
        503,
        r#"{"error":{"message":"response_format busy"}}"#,
        false,
    );
    check_rejection(429, r#"{"error":{"message":"response_format"}}"#, false);
    check_rejection(500, "", false);
    check_rejection(500, "\u{fffd}\u{0}RESPONSE_FORMAT", true);
}

#[test]
fn apply_leaves_bodies_without_a_json_schema_alone() {
    for dialect in StructuredDialect::ALL {
        for body in [
            json!({"model": "m"}),
            json!({"response_format": {"type": "json_object"}}),
            json!("not an object"),
        ] {
            let mut changed = body.clone();
            dialect::apply(&mut changed, dialect);
            assert_eq!(changed, body, "{dialect}");
        }
    }
}

fn request() -> ChatRequest {
    ChatRequest::new("m")
        .message(Message::user("q"))
        .structured("response", json!({"type": "object"}), true)
}

#[test]
fn rewritten_requests() {
    let tool = as_tool(&request());
    assert_eq!(tool.structured_output.unwrap().mode, OutputMode::Tool);
    let prompted = as_prompted(&request().system("Be brief."));
    assert!(prompted.structured_output.is_none());
    assert_eq!(
        prompted.system.as_deref(),
        Some(
            "Be brief.\n\nReply with only a JSON value, no prose and no code fence, valid against \
             this JSON Schema:\n{\"type\":\"object\"}"
        )
    );
    assert_eq!(prompted.messages, request().messages);
    // Without a schema there is nothing to move.
    let plain = ChatRequest::new("m").message(Message::user("q"));
    assert_eq!(as_prompted(&plain), plain);
}

#[test]
fn the_memory_reports_news_once() {
    let memory = FallbackMemory::new();
    let url = "http://u:p@h/v1/";
    assert!(memory.remember(url, "m", StructuredDialect::Tools));
    assert!(!memory.remember("http://h/v1", "m", StructuredDialect::Tools));
    assert!(memory.remember("http://h/v1", "m", StructuredDialect::Prompted));
    assert_eq!(
        memory.get("http://h/v1?x=1", "m"),
        Some(StructuredDialect::Prompted)
    );
    assert_eq!(memory.get("http://h/v1", "other"), None);
    assert_eq!(memory.entries().len(), 1);
    assert!(!format!("{memory:?}").contains("u:p"));
}

proptest::proptest! {
    /// A memory key never keeps a query, a fragment or user info, and keying a key changes nothing.
    #[test]
    fn memory_keys_are_clean_and_idempotent(url in "\\PC{0,80}") {
        let key = super::memory_key(&url);
        proptest::prop_assert!(!key.contains(['?', '#']), "{key}");
        let authority = key.split_once("://").map_or(key.as_str(), |(_, rest)| rest);
        let authority = authority.split('/').next().unwrap_or_default();
        proptest::prop_assert!(!authority.contains('@'), "{key}");
        proptest::prop_assert_eq!(super::memory_key(&key), key);
    }
}
