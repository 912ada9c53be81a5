//! Unit tests of the OpenAI-format translations: error classification, response and chunk reading.

use std::time::Duration;

use serde_json::{Value, json};

use super::translate::{self, Shape};
use crate::{
    ChatRequest, Error, ErrorContext, FinishReason, Message, OutputMode, StreamEvent, Usage,
};

fn ctx() -> ErrorContext {
    ErrorContext::new("openai").with_request_id("req_1")
}

fn shape() -> Shape<'static> {
    Shape {
        provider: "openai",
        default_model: None,
        max_completion_tokens: true,
        openrouter: false,
        max_stops: Some(4),
        headers: Vec::new(),
        drop_temperature: false,
    }
}

/// The error variant's name, for compact tables.
fn kind(error: &Error) -> &'static str {
    match error {
        Error::Authentication { .. } => "Authentication",
        Error::RateLimited { .. } => "RateLimited",
        Error::ContextLengthExceeded { .. } => "ContextLengthExceeded",
        Error::ModelNotFound { .. } => "ModelNotFound",
        Error::Refused { .. } => "Refused",
        Error::Overloaded { .. } => "Overloaded",
        Error::Server { .. } => "Server",
        Error::BadRequest { .. } => "BadRequest",
        Error::Timeout { .. } => "Timeout",
        Error::Network { .. } => "Network",
        Error::Cancelled { .. } => "Cancelled",
        Error::MalformedResponse { .. } => "MalformedResponse",
        Error::Other { .. } => "Other",
        Error::QuotaExhausted { .. } => "QuotaExhausted",
        Error::BodyTooLarge { .. } => "BodyTooLarge",
        Error::ToolArguments { .. } => "ToolArguments",
    }
}

#[track_caller]
fn check_classify(status: u16, body: &str, expected: &str) {
    let error = translate::classify(status, None, body.as_bytes(), ctx().with_status(status));
    assert_eq!(kind(&error), expected, "{status} {body}: {error}");
    assert_eq!(error.context().status, Some(status));
    assert_eq!(error.context().request_id.as_deref(), Some("req_1"));
}

fn openai_error(message: &str, kind: &str, code: Value) -> String {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
}

#[test]
fn error_classes() {
    let e = |code: &str| openai_error("m", "invalid_request_error", json!(code));
    check_classify(401, &e("invalid_api_key"), "Authentication");
    check_classify(403, &e("unsupported_country"), "Authentication");
    check_classify(
        402,
        r#"{"error": {"code": 402, "message": "Insufficient credits"}}"#,
        "QuotaExhausted",
    );
    check_classify(404, &e("model_not_found"), "ModelNotFound");
    check_classify(
        429,
        &openai_error("slow down", "requests", json!("rate_limit_exceeded")),
        "RateLimited",
    );
    check_classify(400, &e("context_length_exceeded"), "ContextLengthExceeded");
    check_classify(
        400,
        r#"{"object": "error", "message": "This model's maximum context length is 8192 tokens.", "type": "BadRequestError", "code": 400}"#,
        "ContextLengthExceeded",
    );
    check_classify(
        400,
        r#"{"error": {"code": 400, "message": "the request exceeds the available context size", "type": "exceed_context_size_error"}}"#,
        "ContextLengthExceeded",
    );
    check_classify(400, &e("invalid_value"), "BadRequest");
    check_classify(
        400,
        r#"{"error": {"message": "gpt-9 is not a valid model ID", "code": 400}}"#,
        "ModelNotFound",
    );
    check_classify(400, &e("content_policy_violation"), "Refused");
    check_classify(
        422,
        r#"{"detail": [{"loc": ["body", "messages"], "msg": "field required"}]}"#,
        "BadRequest",
    );
    check_classify(
        500,
        &openai_error("oops", "server_error", Value::Null),
        "Server",
    );
    check_classify(502, "<html><body>Bad gateway</body></html>", "Server");
    check_classify(
        503,
        &openai_error("busy", "server_error", Value::Null),
        "Overloaded",
    );
    check_classify(
        529,
        r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
        "Overloaded",
    );
    check_classify(
        500,
        r#"{"error": {"message": "The engine is currently overloaded"}}"#,
        "Overloaded",
    );
    check_classify(404, "<html>Not Found</html>", "MalformedResponse");
    check_classify(404, "", "MalformedResponse");
    check_classify(302, "", "MalformedResponse");
}

#[test]
fn error_messages_say_what_the_provider_said() {
    let body = openai_error(
        "Incorrect API key provided.",
        "invalid_request_error",
        json!("invalid_api_key"),
    );
    let error = translate::classify(401, None, body.as_bytes(), ctx().with_status(401));
    assert_eq!(
        error.to_string(),
        "openai (HTTP 401, request req_1): authentication failed: Incorrect API key provided."
    );
    let limited = translate::classify(
        429,
        Some(Duration::from_secs(2)),
        b"{}",
        ctx().with_status(429),
    );
    assert_eq!(limited.retry_after(), Some(Duration::from_secs(2)));
    let html = translate::classify(
        502,
        None,
        b"<html><h1>502 Bad Gateway</h1></html>",
        ctx().with_status(502),
    );
    assert!(
        html.to_string()
            .contains("not JSON: \"<html><h1>502 Bad Gateway</h1></html>\""),
        "{html}"
    );
    let empty = translate::classify(500, None, b"", ctx().with_status(500));
    assert!(
        empty
            .to_string()
            .ends_with("the error response has an empty body"),
        "{empty}"
    );
    let upstream = r#"{"error": {"code": 400, "message": "Provider returned error", "metadata": {"raw": "schema too deep"}}}"#;
    let wrapped = translate::classify(400, None, upstream.as_bytes(), ctx().with_status(400));
    assert!(
        wrapped
            .to_string()
            .ends_with("Provider returned error (schema too deep)"),
        "{wrapped}"
    );
}

fn completion(message: Value, finish: &str) -> Vec<u8> {
    json!({
        "id": "chatcmpl-1",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                  "prompt_tokens_details": {"cached_tokens": 4},
                  "completion_tokens_details": {"reasoning_tokens": 2},
                  "cost": 0.00125}
    })
    .to_string()
    .into_bytes()
}

#[test]
fn responses() {
    let body = completion(
        json!({"role": "assistant", "content": "{\"a\":1}", "refusal": null}),
        "stop",
    );
    let r = translate::response(&body, &ctx()).unwrap();
    assert_eq!(r.content, "{\"a\":1}");
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 10,
            output_tokens: 5,
            cached_tokens: 4,
            reasoning_tokens: 2,
            cost_usd: Some(0.00125),
            ..Usage::default()
        }
    );
    assert_eq!(r.request_id.as_deref(), Some("req_1"), "the header id wins");
    assert_eq!(r.model.as_deref(), Some("gpt-4o-mini"));
    let without_header = translate::response(&body, &ErrorContext::new("openrouter")).unwrap();
    assert_eq!(without_header.request_id.as_deref(), Some("chatcmpl-1"));

    let tool = completion(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "answer", "arguments": "{\"a\":2}"}}]}),
        "tool_calls",
    );
    let r = translate::response(&tool, &ctx()).unwrap();
    assert_eq!(r.content, "{\"a\":2}");
    assert_eq!(r.finish_reason, FinishReason::ToolCalls);

    let parts = completion(
        json!({"content": [{"type": "text", "text": "ab"}, {"type": "text", "text": "c"}]}),
        "length",
    );
    let r = translate::response(&parts, &ctx()).unwrap();
    assert_eq!(
        (r.content.as_str(), r.finish_reason),
        ("abc", FinishReason::Length)
    );

    let other = completion(json!({"content": "x"}), "weird");
    assert_eq!(
        translate::response(&other, &ctx()).unwrap().finish_reason,
        FinishReason::Other("weird".into())
    );
}

#[test]
fn refusals_and_filters() {
    let refused = completion(
        json!({"content": null, "refusal": "I can't help with that."}),
        "stop",
    );
    let e = translate::response(&refused, &ctx()).unwrap_err();
    assert_eq!(kind(&e), "Refused");
    assert!(
        e.to_string().ends_with("refused: I can't help with that."),
        "{e}"
    );
    let filtered = completion(json!({"content": null}), "content_filter");
    assert_eq!(
        kind(&translate::response(&filtered, &ctx()).unwrap_err()),
        "Refused"
    );
    let partial = completion(json!({"content": "half an ans"}), "content_filter");
    assert_eq!(
        translate::response(&partial, &ctx()).unwrap().finish_reason,
        FinishReason::ContentFilter
    );
}

#[test]
fn malformed_and_in_body_errors() {
    let check = |body: &str, expected: &str| {
        let e = translate::response(body.as_bytes(), &ctx()).unwrap_err();
        assert_eq!(kind(&e), expected, "{body}: {e}");
        e
    };
    let e = check(r#"{"id": "x", "choices": [{"mess"#, "MalformedResponse");
    assert!(
        e.to_string()
            .contains(r#"body starts "{\"id\": \"x\", \"choices\": [{\"mess""#),
        "{e}"
    );
    check(
        "<!DOCTYPE html><html>maintenance</html>",
        "MalformedResponse",
    );
    check(r#"{"id": "x", "choices": []}"#, "MalformedResponse");
    check(r#"[1, 2]"#, "MalformedResponse");
    let e = check(
        r#"{"error": {"code": 429, "message": "upstream rate limited"}}"#,
        "RateLimited",
    );
    assert_eq!(e.context().status, Some(429));
    check(
        r#"{"choices": [{"finish_reason": "error", "error": {"code": 502, "message": "upstream died"}}]}"#,
        "Server",
    );
}

#[test]
fn stream_chunks() {
    let check = |data: &str, expected: Vec<StreamEvent>| {
        assert_eq!(
            translate::stream_event(data, &ctx()).unwrap(),
            expected,
            "{data}"
        );
    };
    check(
        r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}"#,
        vec![],
    );
    check(
        r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"{\"a\""},"finish_reason":null}]}"#,
        vec![StreamEvent::Text("{\"a\"".into())],
    );
    check(
        r#"{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}"#,
        vec![StreamEvent::ToolInput(":1}".into())],
    );
    check(
        r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
        vec![
            StreamEvent::Model("m".into()),
            StreamEvent::ResponseId("c1".into()),
            StreamEvent::Finish(FinishReason::Length),
        ],
    );
    check(
        r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"cost":0.5}}"#,
        vec![StreamEvent::Usage(Usage {
            input_tokens: 3,
            output_tokens: 4,
            cost_usd: Some(0.5),
            ..Usage::default()
        })],
    );
    let e =
        translate::stream_event(r#"{"error":{"code":503,"message":"busy"}}"#, &ctx()).unwrap_err();
    assert_eq!(kind(&e), "Overloaded");
    let e = translate::stream_event("{not json", &ctx()).unwrap_err();
    assert_eq!(kind(&e), "MalformedResponse");
    let e =
        translate::stream_event(r#"{"choices":[{"delta":{"refusal":"no"}}]}"#, &ctx()).unwrap_err();
    assert_eq!(kind(&e), "Refused");
}

#[test]
fn requests_refuse_what_cannot_be_sent() {
    let check = |request: ChatRequest, message: &str| {
        let e = translate::request(shape(), &request, false).unwrap_err();
        assert_eq!(kind(&e), "BadRequest");
        assert!(e.to_string().contains(message), "{e}");
    };
    check(
        ChatRequest::new("").message(Message::user("hi")),
        "no model",
    );
    check(ChatRequest::new("m"), "no messages");
    let mut many = ChatRequest::new("m").message(Message::user("hi"));
    for s in ["a", "b", "c", "d", "e"] {
        many = many.stop(s);
    }
    check(many, "at most 4 stop sequences");
    check(
        ChatRequest::new("m")
            .message(Message::user("hi"))
            .temperature(f32::NAN),
        "finite",
    );
}

#[test]
fn request_details() {
    let mut request = ChatRequest::new("m")
        .message(Message::user("hi"))
        .temperature(0.2)
        .structured("my schema!", json!({"type": "object"}), true);
    if let Some(s) = request.structured_output.as_mut() {
        s.mode = OutputMode::Tool;
    }
    request.messages.push(Message::new(crate::Role::Tool, "42"));
    let wire = translate::request(shape(), &request, false).unwrap();
    assert_eq!(wire.json().unwrap()["temperature"], json!(0.2));
    assert_eq!(
        wire.json().unwrap()["tools"][0]["function"]["name"],
        "my_schema_"
    );
    assert_eq!(
        wire.json().unwrap()["tool_choice"]["function"]["name"],
        "my_schema_"
    );
    assert_eq!(
        wire.json().unwrap()["messages"][1]["role"],
        "user",
        "tool results go back as user text"
    );
    let long = "x".repeat(100);
    let named = ChatRequest::new("m")
        .message(Message::user("hi"))
        .structured(long, json!({}), false);
    let wire = translate::request(shape(), &named, false).unwrap();
    assert_eq!(
        wire.json().unwrap()["response_format"]["json_schema"]["name"]
            .as_str()
            .map(str::len),
        Some(64)
    );
}

#[test]
fn exhausted_quota_is_not_retried() {
    let e = translate::classify(
        429,
        None,
        br#"{"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}"#,
        ctx().with_status(429),
    );
    assert!(matches!(e, Error::QuotaExhausted { .. }), "{e:?}");
    assert!(!e.is_retryable());
}
