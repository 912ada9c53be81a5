//! Unit tests of the Anthropic adapter's pure translations.

use serde_json::json;

use super::*;
use crate::{Message, StructuredOutput};

fn context() -> ErrorContext {
    ErrorContext::new(PROVIDER)
}

#[track_caller]
fn check_version(model: &str, expected: Option<(&str, (u32, u32))>) {
    assert_eq!(claude_version(model), expected, "{model}");
}

#[test]
fn claude_versions_old_and_new_style() {
    check_version("claude-3-5-sonnet-20241022", Some(("sonnet", (3, 5))));
    check_version("claude-3-7-sonnet-latest", Some(("sonnet", (3, 7))));
    check_version("claude-3-opus-20240229", Some(("opus", (3, 0))));
    check_version("claude-sonnet-4-20250514", Some(("sonnet", (4, 0))));
    check_version("claude-sonnet-4-5-20250929", Some(("sonnet", (4, 5))));
    check_version("claude-opus-4-1", Some(("opus", (4, 1))));
    check_version("claude-haiku-4-5", Some(("haiku", (4, 5))));
    check_version("claude-opus-4-6", Some(("opus", (4, 6))));
    check_version("claude-2.1", None);
    check_version("gpt-4o", None);
}

#[track_caller]
fn check_capabilities(model: &str, native: bool, window: Option<u32>) {
    let c = capabilities(model);
    assert_eq!(c.native_json_schema, native, "{model}");
    assert_eq!(
        c.schema_dialect,
        native.then_some(SchemaDialect::Anthropic),
        "{model}"
    );
    assert_eq!(c.context_window, window, "{model}");
    assert!(c.tools && c.streaming, "{model}");
}

#[test]
fn capabilities_by_model() {
    check_capabilities("claude-sonnet-4-5-20250929", true, Some(200_000));
    check_capabilities("claude-opus-4-1-20250805", true, Some(200_000));
    check_capabilities("claude-opus-4-6", true, Some(200_000));
    check_capabilities("claude-haiku-4-5", true, Some(200_000));
    check_capabilities("claude-sonnet-4-20250514", false, Some(200_000));
    check_capabilities("claude-3-5-haiku-latest", false, Some(200_000));
    check_capabilities("claude-2.1", false, Some(200_000));
    check_capabilities("claude-instant-1.2", false, Some(100_000));
    check_capabilities("some-proxy-model", false, None);
}

#[test]
fn system_messages_join_the_system_prompt_and_tool_results_go_as_user() {
    let request = ChatRequest::new("claude-haiku-4-5")
        .system("Rules.")
        .message(Message::user("Q"))
        .message(Message::system("More rules."))
        .message(Message::new(Role::Tool, "42"));
    let body = AnthropicAdapter::default().body(&request, false).unwrap();
    assert_eq!(body.system.as_deref(), Some("Rules.\n\nMore rules."));
    let roles: Vec<&str> = body.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, ["user", "user"]);
}

#[test]
fn thinking_refuses_a_forced_tool_and_a_temperature() {
    let thinking = AnthropicAdapter::default().with_thinking_budget(2048);
    let mut request = ChatRequest::new("claude-sonnet-4-5").message(Message::user("Q"));
    let wire = thinking.transform_request(&request, false).unwrap();
    assert_eq!(
        wire.json().unwrap()["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(
        wire.json().unwrap()["max_tokens"],
        2048 + DEFAULT_MAX_TOKENS
    );

    request.structured_output = Some(StructuredOutput {
        name: "answer".into(),
        schema: json!({"type": "object"}).into(),
        strict: false,
        mode: OutputMode::Tool,
    });
    let e = thinking.transform_request(&request, false).unwrap_err();
    assert!(
        matches!(&e, Error::BadRequest { message, .. } if message.contains("forced tool")),
        "{e}"
    );

    let native = request
        .clone()
        .structured("answer", json!({"type": "object"}), true);
    assert!(thinking.transform_request(&native, false).is_ok());
    let hot = native.clone().temperature(0.5);
    assert!(thinking.transform_request(&hot, false).is_err());
    let short = native.max_tokens(1000);
    assert!(thinking.transform_request(&short, false).is_err());
}

#[test]
fn tool_names_are_checked_before_sending() {
    let mut request = ChatRequest::new("claude-haiku-4-5").message(Message::user("Q"));
    request.structured_output = Some(StructuredOutput {
        name: "has space".into(),
        schema: json!({"type": "object"}).into(),
        strict: false,
        mode: OutputMode::Tool,
    });
    let e = AnthropicAdapter::default()
        .transform_request(&request, false)
        .unwrap_err();
    assert!(matches!(e, Error::BadRequest { .. }), "{e}");
}

#[test]
fn temperatures_go_out_as_short_decimals() {
    assert_eq!(decimal_f64(0.2), 0.2);
    assert_eq!(decimal_f64(1.0), 1.0);
    let request = ChatRequest::new("m")
        .message(Message::user("Q"))
        .temperature(0.7);
    let wire = AnthropicAdapter::default()
        .transform_request(&request, false)
        .unwrap();
    assert_eq!(wire.json().unwrap()["temperature"].to_string(), "0.7");
}

#[track_caller]
fn check_finish(stop_reason: &str, expected: FinishReason) {
    assert_eq!(finish_reason(stop_reason), expected, "{stop_reason}");
}

#[test]
fn stop_reasons() {
    check_finish("end_turn", FinishReason::Stop);
    check_finish("stop_sequence", FinishReason::Stop);
    check_finish("tool_use", FinishReason::ToolCalls);
    check_finish("max_tokens", FinishReason::Length);
    check_finish("model_context_window_exceeded", FinishReason::Length);
    check_finish("pause_turn", FinishReason::Other("pause_turn".into()));
}

#[test]
fn refusal_is_an_error() {
    let body = br#"{"content": [], "stop_reason": "refusal",
        "stop_details": {"type": "refusal", "category": "cyber", "explanation": "not this"}}"#;
    let e = AnthropicAdapter::default()
        .transform_response(body, &context())
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "anthropic: refused: not this (category cyber)"
    );
}

#[test]
fn tool_use_input_is_the_answer_even_after_text() {
    let body = br#"{"id": "msg_1", "content": [
        {"type": "thinking", "thinking": "hm", "signature": "x"},
        {"type": "text", "text": "Here you go."},
        {"type": "tool_use", "id": "toolu_1", "name": "answer", "input": {"b": 1, "a": [true]}}
    ], "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}"#;
    let r = AnthropicAdapter::default()
        .transform_response(body, &context())
        .unwrap();
    assert_eq!(r.content, r#"{"b":1,"a":[true]}"#);
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);
    assert_eq!(r.request_id.as_deref(), Some("msg_1"));
}

#[test]
fn header_request_id_wins_over_the_message_id() {
    let body = br#"{"id": "msg_1", "content": [{"type": "text", "text": "hi"}]}"#;
    let r = AnthropicAdapter::default()
        .transform_response(body, &context().with_request_id("req_9"))
        .unwrap();
    assert_eq!(r.request_id.as_deref(), Some("req_9"));
    assert_eq!(r.finish_reason, FinishReason::Stop);
}

#[test]
fn malformed_bodies() {
    for body in [
        &b""[..],
        b"<html>502</html>",
        b"{\"content\": 3}",
        b"{\"content\": [{\"type\"",
    ] {
        let e = AnthropicAdapter::default()
            .transform_response(body, &context())
            .unwrap_err();
        assert!(matches!(e, Error::MalformedResponse { .. }), "{e}");
    }
}

#[test]
fn null_cache_counts_are_zero() {
    let body = br#"{"content": [], "usage": {"input_tokens": 3, "output_tokens": 4,
        "cache_creation_input_tokens": null, "cache_read_input_tokens": null}}"#;
    let r = AnthropicAdapter::default()
        .transform_response(body, &context())
        .unwrap();
    assert_eq!(
        (
            r.usage.input_tokens,
            r.usage.output_tokens,
            r.usage.cached_tokens
        ),
        (3, 4, 0)
    );
}

#[test]
fn requests_anthropic_would_reject_fail_before_sending() {
    let adapter = AnthropicAdapter::default();
    let only_system = ChatRequest::new("claude-haiku-4-5").message(Message::system("Rules."));
    let nan = ChatRequest::new("claude-haiku-4-5")
        .message(Message::user("Q"))
        .temperature(f32::NAN);
    for request in [ChatRequest::new("claude-haiku-4-5"), only_system, nan] {
        let e = adapter.transform_request(&request, false).unwrap_err();
        assert!(matches!(e, Error::BadRequest { .. }), "{e}");
    }
}

#[test]
fn an_error_body_with_status_200_is_still_an_error() {
    let body =
        br#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#;
    let e = AnthropicAdapter::default()
        .transform_response(body, &context().with_status(200))
        .unwrap_err();
    assert!(matches!(e, Error::Overloaded { .. }), "{e}");
    let empty_input = br#"{"content": [{"type": "tool_use", "id": "t", "name": "answer"}]}"#;
    let r = AnthropicAdapter::default()
        .transform_response(empty_input, &context())
        .unwrap();
    assert_eq!(r.content, "{}");
}
