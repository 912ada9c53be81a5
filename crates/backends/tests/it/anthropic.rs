//! The Anthropic adapter through the public API: request bodies (snapshots, checked against the older
//! OpenAPI document), the shared example responses, error bodies, streamed events and a local server.

#![cfg(feature = "anthropic")]

pub(crate) mod support;

use std::time::Duration;

use claij_backends::anthropic::{Anthropic, AnthropicAdapter};
use claij_backends::http::{HttpConfig, RetryPolicy};
use claij_backends::{
    Adapter, ApiKey, Backend, ChatRequest, Error, ErrorContext, FinishReason, Message, OutputMode,
    StreamEvent, StructuredOutput, Usage,
};
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use support::{Logs, kind, sse_blocks};

fn context() -> ErrorContext {
    ErrorContext::new("anthropic")
}

/// A schema as claij-schema's Anthropic dialect leaves it: closed objects, no numeric bounds.
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "description": "The reply to the user."},
            "state": {"type": "string", "enum": ["done", "ask"]},
            "steps": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["answer", "state"],
        "additionalProperties": false
    })
}

fn base() -> ChatRequest {
    ChatRequest::new("claude-sonnet-4-5")
        .system("Answer as JSON.")
        .message(Message::user("What is 2+2?"))
}

fn with_output(request: ChatRequest, mode: OutputMode, strict: bool) -> ChatRequest {
    let mut request = request;
    request.structured_output = Some(StructuredOutput {
        name: "answer".into(),
        schema: schema().into(),
        strict,
        mode,
    });
    request
}

/// The request cases: name, request, streamed.
fn cases() -> Vec<(&'static str, ChatRequest, bool)> {
    let sampling = ChatRequest::new("claude-haiku-4-5")
        .system("You are terse.")
        .message(Message::user("Count to three."))
        .message(Message::assistant("1, 2, 3"))
        .message(Message::user("And back?"))
        .temperature(0.2)
        .max_tokens(512)
        .seed(7)
        .stop("\n\nEND")
        .stop("STOP");
    vec![
        ("prompted", base(), false),
        ("prompted_sampling", sampling, false),
        ("prompted_stream", base(), true),
        (
            "native",
            with_output(base(), OutputMode::Native, true),
            false,
        ),
        ("tool", with_output(base(), OutputMode::Tool, false), false),
        (
            "tool_strict",
            with_output(base(), OutputMode::Tool, true),
            false,
        ),
        (
            "tool_stream",
            with_output(base(), OutputMode::Tool, false),
            true,
        ),
    ]
}

#[test]
fn request_bodies() {
    let adapter = AnthropicAdapter::default();
    for (name, request, stream) in cases() {
        let wire = adapter.transform_request(&request, stream).unwrap();
        assert_eq!(wire.path, "/messages");
        let headers: Vec<String> = wire
            .headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        assert_eq!(headers, ["anthropic-version: 2023-06-01"], "{name}");
        insta::assert_json_snapshot!(format!("request_{name}"), wire.json().unwrap());
    }
}

pub(crate) fn messages_validator() -> claij_validation::Validator {
    let spec = support::load("anthropic.openapi.json");
    support::validator(&spec, "CreateMessageParams", &support::Options::default())
}

/// Every body whose fields the older spec knows validates against `CreateMessageParams`; the two that
/// use newer fields fail exactly there (the spec predates `output_config` and strict tools).
#[test]
fn request_bodies_against_the_openapi_document() {
    let validator = messages_validator();
    let adapter = AnthropicAdapter::default();
    for (name, request, stream) in cases() {
        let body = adapter
            .transform_request(&request, stream)
            .unwrap()
            .json()
            .unwrap();
        let found = support::violations(&validator, &body);
        let expected: Vec<&str> = match name {
            "native" => vec!["/output_config: property `output_config` is not allowed"],
            "tool_strict" => vec!["/tools/0/strict: property `strict` is not allowed"],
            _ => vec![],
        };
        assert_eq!(found, expected, "{name}: {body:#}");
    }
}

#[test]
fn the_spec_check_catches_a_bad_body() {
    let validator = messages_validator();
    let mut body = AnthropicAdapter::default()
        .transform_request(&base(), false)
        .unwrap()
        .json()
        .unwrap();
    body["messages"][0]["role"] = json!("system");
    body.as_object_mut().unwrap().remove("max_tokens");
    let found = support::violations(&validator, &body);
    assert_eq!(found.len(), 2, "{found:?}");
}

/// What each example of `fixtures/providers/examples` says, and that there is an expectation for every one of them.
#[test]
fn every_example_response_parses() {
    let adapter = AnthropicAdapter::default();
    let mut seen = Vec::new();
    for (name, example) in support::examples("anthropic-") {
        let mut body = example["body"].clone();
        if body.is_array() {
            // A fragment: the `content` of a tool-use message.
            body = json!({"id": "msg_fragment", "type": "message", "role": "assistant",
                "content": body, "stop_reason": "tool_use", "model": "claude-sonnet-4-5",
                "usage": {"input_tokens": 1, "output_tokens": 1}});
        }
        let r = adapter
            .transform_response(body.to_string().as_bytes(), &context())
            .unwrap();
        let stop = FinishReason::Stop;
        let (content, usage, model, finish) = match name.as_str() {
            "anthropic-1.json" => (
                "Hi! My name is Claude.",
                (2095 + 2051 + 2051, 503, 2051),
                "claude-opus-4-6",
                stop,
            ),
            "anthropic-2.json" => (
                "Hi! My name is Claude.",
                (2095, 503, 0),
                "claude-3-5-sonnet-20240620",
                stop,
            ),
            "anthropic-3.json" => (
                r#"{"ticker":"^GSPC"}"#,
                (1, 1, 0),
                "claude-sonnet-4-5",
                FinishReason::ToolCalls,
            ),
            other => panic!("no expectation for example {other}"),
        };
        assert_eq!(r.content, content, "{name}");
        assert_eq!(
            (
                r.usage.input_tokens,
                r.usage.output_tokens,
                r.usage.cached_tokens
            ),
            usage,
            "{name}"
        );
        assert_eq!(r.model.as_deref(), Some(model), "{name}");
        assert_eq!(r.finish_reason, finish, "{name}");
        assert!(
            r.request_id.as_deref().unwrap().starts_with("msg_"),
            "{name}"
        );
        seen.push(name);
    }
    seen.sort();
    assert_eq!(
        seen,
        ["anthropic-1.json", "anthropic-2.json", "anthropic-3.json"]
    );
}

fn error_body(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}

#[track_caller]
fn check_error(status: u16, body: &str, expected: &str) {
    let e = AnthropicAdapter::default().classify_error(
        status,
        Some(Duration::from_secs(7)),
        body.as_bytes(),
        context().with_status(status),
    );
    assert_eq!(kind(&e), expected, "{status} {body}: {e}");
    assert_eq!(e.context().status, Some(status));
    assert_eq!(e.context().provider, "anthropic");
    if matches!(expected, "RateLimited" | "Overloaded") {
        assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
    }
}

#[test]
fn error_bodies_are_classified() {
    let too_long = "prompt is too long: 250000 tokens > 200000 maximum";
    let limit = "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, \
                 decrease input length or `max_tokens` and try again";
    let cases = [
        (
            401,
            error_body("authentication_error", "invalid x-api-key"),
            "Authentication",
        ),
        (
            403,
            error_body("permission_error", "not allowed"),
            "Authentication",
        ),
        (
            404,
            error_body("not_found_error", "model: claude-nope"),
            "ModelNotFound",
        ),
        (
            429,
            error_body("rate_limit_error", "slow down"),
            "RateLimited",
        ),
        (
            529,
            error_body("overloaded_error", "Overloaded"),
            "Overloaded",
        ),
        (
            500,
            error_body("api_error", "Internal server error"),
            "Server",
        ),
        (
            400,
            error_body("invalid_request_error", too_long),
            "ContextLengthExceeded",
        ),
        (
            400,
            error_body("invalid_request_error", limit),
            "ContextLengthExceeded",
        ),
        (
            400,
            error_body("invalid_request_error", "max_tokens: Field required"),
            "BadRequest",
        ),
        (
            413,
            error_body("request_too_large", "Request exceeds the maximum size"),
            "BadRequest",
        ),
        (529, "<html>overloaded</html>".into(), "Overloaded"),
        (
            502,
            "<html><body>Bad gateway</body></html>".into(),
            "Server",
        ),
        (401, String::new(), "Authentication"),
        (404, "not json".into(), "ModelNotFound"),
        (429, "{}".into(), "RateLimited"),
        (400, String::new(), "BadRequest"),
        (422, "[1, 2]".into(), "BadRequest"),
    ];
    for (status, body, expected) in cases {
        check_error(status, &body, expected);
    }
}

#[test]
fn error_messages_say_where() {
    let body = r#"{"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"},
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}"#;
    let e = AnthropicAdapter::default().classify_error(429, None, body.as_bytes(), context());
    assert_eq!(
        e.to_string(),
        "anthropic (HTTP 429, request req_011CSHoEeqs5C35K2UUqR7Fy): rate limited: slow down"
    );
    let html = AnthropicAdapter::default().classify_error(
        502,
        None,
        b"<html><body>Bad gateway</body></html>",
        context().with_request_id("req_1"),
    );
    assert_eq!(
        html.to_string(),
        "anthropic (HTTP 502, request req_1): server error: <html><body>Bad gateway</body></html>"
    );
}

fn stream_events(text: &str) -> Result<Vec<StreamEvent>, Error> {
    let adapter = AnthropicAdapter::default();
    let mut out = Vec::new();
    for (event, data) in sse_blocks(text) {
        out.extend(adapter.stream_event(event.as_deref(), &data, &context())?);
    }
    Ok(out)
}

/// The text stream of Anthropic's streaming guide, cache counts added.
pub(crate) const TEXT_STREAM: &str = r#"event: message_start
data: {"type": "message_start", "message": {"id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5-20250929", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "cache_read_input_tokens": 10, "output_tokens": 1}}}

event: content_block_start
data: {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "{\"answer\": \"4\","}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " \"state\": \"done\"}"}}

event: content_block_stop
data: {"type": "content_block_stop", "index": 0}

event: message_delta
data: {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"input_tokens": 25, "cache_read_input_tokens": 10, "output_tokens": 15}}

event: message_stop
data: {"type": "message_stop"}

"#;

#[test]
fn a_text_stream() {
    let usage = |output| Usage {
        input_tokens: 35,
        output_tokens: output,
        cached_tokens: 10,
        ..Usage::default()
    };
    assert_eq!(
        stream_events(TEXT_STREAM).unwrap(),
        [
            StreamEvent::ResponseId("msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY".into()),
            StreamEvent::Model("claude-sonnet-4-5-20250929".into()),
            StreamEvent::Usage(usage(1)),
            StreamEvent::Text(r#"{"answer": "4","#.into()),
            StreamEvent::Text(r#" "state": "done"}"#.into()),
            StreamEvent::Usage(usage(15)),
            StreamEvent::Finish(FinishReason::Stop),
        ]
    );
}

/// The tool call's input is the answer, and the text Claude writes before the call is not.
#[test]
fn a_tool_stream_streams_the_input_as_the_answer() {
    let stream = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-haiku-4-5","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2},"content":[],"stop_reason":null}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I'll answer with the tool."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"answer","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"answer\": \"4\", "}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"state\": \"done\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}
"#;
    let events = stream_events(stream).unwrap();
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finish(FinishReason::ToolCalls))
    );
    let mut assembler = claij_backends::Assembler::default();
    for event in events {
        assembler.push(event);
    }
    let response = assembler.finish();
    assert_eq!(response.content, r#"{"answer": "4", "state": "done"}"#);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    // A call without input answers `{}`.
    let empty = r#"event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"answer","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}
"#;
    let mut assembler = claij_backends::Assembler::default();
    for event in stream_events(empty).unwrap() {
        assembler.push(event);
    }
    assert_eq!(assembler.finish().content, "{}");
}

#[test]
fn thinking_deltas_are_not_text_and_max_tokens_is_length() {
    let stream = r#"event: content_block_start
data: {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me add."}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "{\"answer\""}}

event: message_delta
data: {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 100}}
"#;
    let events = stream_events(stream).unwrap();
    assert_eq!(events[0], StreamEvent::Text(r#"{"answer""#.into()));
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finish(FinishReason::Length))
    );
    assert_eq!(events.len(), 3);
}

#[test]
fn stream_errors_and_refusals() {
    let overloaded = "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
    let e = stream_events(overloaded).unwrap_err();
    assert_eq!(kind(&e), "Overloaded");
    assert!(e.is_retryable());

    let refusal = "event: message_delta\ndata: {\"type\": \"message_delta\", \"delta\": {\"stop_reason\": \"refusal\"}, \"usage\": {\"output_tokens\": 3}}\n\n";
    assert_eq!(kind(&stream_events(refusal).unwrap_err()), "Refused");

    let garbage =
        "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"delta\": \n\n";
    assert_eq!(
        kind(&stream_events(garbage).unwrap_err()),
        "MalformedResponse"
    );

    let unknown = "event: future_event\ndata: {\"type\": \"future_event\", \"x\": 1}\n\n";
    assert_eq!(stream_events(unknown).unwrap(), []);
}

// End to end: the `Anthropic` backend against a local server.

const KEY: &str = "sk-ant-test-0123456789abcdef";

fn backend(server: &MockServer) -> Anthropic {
    let retry = RetryPolicy::default()
        .with_max_requests(3)
        .with_backoff(Duration::from_millis(5), Duration::from_millis(20))
        .with_jitter(0.0);
    Anthropic::new(ApiKey::new(KEY))
        .with_config(HttpConfig::new(format!("{}/v1", server.uri())).with_retry(retry))
}

fn messages_endpoint() -> wiremock::MockBuilder {
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
}

/// The one request the server got: its body, after checking the key went only in its header.
async fn received_body(server: &MockServer, logs: &Logs) -> Value {
    let requests = server.received_requests().await.unwrap();
    let request = requests.last().unwrap();
    assert!(!request.url.as_str().contains(KEY));
    assert_eq!(request.url.query(), None);
    assert_eq!(
        request.headers.get("content-type").unwrap(),
        "application/json"
    );
    let logged = logs.text();
    assert!(logged.contains("anthropic"), "nothing captured: {logged}");
    assert!(!logged.contains(KEY), "{logged}");
    serde_json::from_slice(&request.body).unwrap()
}

#[tokio::test]
async fn tool_mode_over_http() {
    let (logs, _guard) = support::Logs::capture();
    let server = MockServer::start().await;
    let reply = json!({"id": "msg_01", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929", "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_01", "name": "answer",
                     "input": {"answer": "4", "state": "done"}}],
        "usage": {"input_tokens": 120, "output_tokens": 30, "cache_read_input_tokens": 100}});
    messages_endpoint()
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("request-id", "req_011CV")
                .set_body_json(reply),
        )
        .expect(1)
        .mount(&server)
        .await;
    let request = with_output(base(), OutputMode::Tool, true);
    let response = backend(&server).complete(&request).await.unwrap();
    assert_eq!(response.content, r#"{"answer":"4","state":"done"}"#);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.request_id.as_deref(), Some("req_011CV"));
    assert_eq!(
        response.model.as_deref(),
        Some("claude-sonnet-4-5-20250929")
    );
    assert_eq!(
        (response.usage.input_tokens, response.usage.cached_tokens),
        (220, 100)
    );
    let body = received_body(&server, &logs).await;
    insta::assert_json_snapshot!("http_tool_request", body);
}

#[tokio::test]
async fn overloaded_then_answered() {
    let (logs, _guard) = support::Logs::capture();
    let server = MockServer::start().await;
    messages_endpoint()
        .respond_with(
            ResponseTemplate::new(529)
                .set_body_string(error_body("overloaded_error", "Overloaded")),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    let reply = json!({"id": "msg_02", "content": [{"type": "text", "text": "{\"answer\": \"4\"}"}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 6}});
    messages_endpoint()
        .respond_with(ResponseTemplate::new(200).set_body_json(reply))
        .expect(1)
        .mount(&server)
        .await;
    let request = with_output(base(), OutputMode::Native, true);
    let response = backend(&server).complete(&request).await.unwrap();
    assert_eq!(response.content, r#"{"answer": "4"}"#);
    assert_eq!(response.request_id.as_deref(), Some("msg_02"));
    let body = received_body(&server, &logs).await;
    assert_eq!(body["output_config"]["format"]["type"], "json_schema");
}

#[tokio::test]
async fn a_rejected_key_is_never_repeated() {
    let (logs, _guard) = support::Logs::capture();
    let server = MockServer::start().await;
    let echo = error_body("authentication_error", &format!("invalid x-api-key: {KEY}"));
    messages_endpoint()
        .respond_with(
            ResponseTemplate::new(401)
                .insert_header("request-id", "req_bad")
                .set_body_string(echo),
        )
        .expect(1)
        .mount(&server)
        .await;
    let e = backend(&server).complete(&base()).await.unwrap_err();
    assert_eq!(kind(&e), "Authentication");
    assert_eq!(
        e.to_string(),
        "anthropic (HTTP 401, request req_bad): authentication failed: invalid x-api-key: ***"
    );
    assert!(!format!("{e:?}").contains(KEY));
    received_body(&server, &logs).await;
}

#[tokio::test]
async fn a_streamed_answer() {
    let (logs, _guard) = support::Logs::capture();
    let server = MockServer::start().await;
    messages_endpoint()
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(TEXT_STREAM),
        )
        .expect(1)
        .mount(&server)
        .await;
    let backend = backend(&server);
    let request = base();
    let events: Vec<StreamEvent> = backend.stream(&request).map(Result::unwrap).collect().await;
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, r#"{"answer": "4", "state": "done"}"#);
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finish(FinishReason::Stop))
    );
    let body = received_body(&server, &logs).await;
    assert_eq!(body["stream"], true);
}

/// Tool mode as the pipeline sends it: `strict` (with the schema in the Anthropic dialect) only to
/// models with structured outputs; older models get the schema as written and no `strict` field,
/// which they reject.
#[test]
fn tool_mode_bodies_by_model() {
    let adapter = AnthropicAdapter::default();
    for (model, strict) in [
        ("claude-sonnet-4-5", true),
        ("claude-3-5-sonnet-20241022", false),
    ] {
        let (request, losses) =
            super::models::tool_request(claij_backends::anthropic::capabilities(model), model);
        let body = adapter
            .transform_request(&request, false)
            .unwrap()
            .json()
            .unwrap();
        let tool = &body["tools"][0];
        assert_eq!(tool.get("strict").is_some(), strict, "{model}: {tool}");
        assert_eq!(
            tool["input_schema"]["additionalProperties"] == false,
            strict,
            "{model}"
        );
        assert_eq!(losses.is_empty(), !strict, "{model}: {losses:?}");
        if !strict {
            // Every field of this body is one the (older) OpenAPI document knows.
            let found = support::violations(&messages_validator(), &body);
            assert!(found.is_empty(), "{model}: {found:?}");
        }
        insta::assert_json_snapshot!(format!("anthropic_tool_{model}"), body);
    }
    // A strict request built by hand for an older model loses the field too.
    let old = with_output(
        ChatRequest::new("claude-3-5-sonnet-20241022").message(Message::user("Hi")),
        OutputMode::Tool,
        true,
    );
    let body = adapter
        .transform_request(&old, false)
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(body["tools"][0].get("strict"), None, "{body}");
}
