//! The Gemini adapter through the public API: request bodies (snapshots, checked against the older
//! OpenAPI document), the shared example responses, error bodies, streamed chunks and a local server.

#![cfg(feature = "gemini")]

use std::time::Duration;

use claij_backends::gemini::{Gemini, GeminiAdapter, SchemaField};
use claij_backends::http::{HttpConfig, RetryPolicy};
use claij_backends::{
    Adapter, ApiKey, Backend, ChatRequest, Error, ErrorContext, FinishReason, Message, OutputMode,
    StreamEvent, StructuredOutput, Usage,
};
use futures_util::StreamExt as _;
use serde_json::{Map, Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

// The helpers live with the Anthropic tests; without them (no `anthropic` feature) they load here.
#[cfg(feature = "anthropic")]
use crate::anthropic::support;
#[cfg(not(feature = "anthropic"))]
#[path = "anthropic/support.rs"]
mod support;

use support::{Logs, kind, sse_blocks};

fn context() -> ErrorContext {
    ErrorContext::new("gemini")
}

/// A schema as claij-schema's Gemini dialect leaves it: lowercase types, `nullable`, `propertyOrdering`.
fn openapi_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "description": "The reply to the user."},
            "state": {"type": "string", "enum": ["done", "ask"]},
            "note": {"type": "string", "nullable": true}
        },
        "required": ["answer", "state"],
        "propertyOrdering": ["answer", "state", "note"]
    })
}

/// The same schema as JSON Schema, for `responseJsonSchema`.
fn json_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "description": "The reply to the user."},
            "state": {"const": "done"},
            "note": {"type": ["string", "null"]}
        },
        "required": ["answer", "state"],
        "additionalProperties": false
    })
}

fn base() -> ChatRequest {
    ChatRequest::new("gemini-2.5-flash")
        .system("Answer as JSON.")
        .message(Message::user("What is 2+2?"))
}

fn with_output(request: ChatRequest, mode: OutputMode, schema: Value) -> ChatRequest {
    let mut request = request;
    request.structured_output = Some(StructuredOutput {
        name: "answer".into(),
        schema: schema.into(),
        strict: true,
        mode,
    });
    request
}

/// The request cases: name, adapter, request, streamed.
fn cases() -> Vec<(&'static str, GeminiAdapter, ChatRequest, bool)> {
    let plain = GeminiAdapter::default();
    let json = GeminiAdapter::default().with_schema_field(SchemaField::ResponseJsonSchema);
    let conversation = ChatRequest::new("gemini-2.5-pro")
        .system("You are terse.")
        .message(Message::user("Count to three."))
        .message(Message::assistant("1, 2, 3"))
        .message(Message::user("And back?"));
    let sampling = conversation
        .clone()
        .temperature(0.2)
        .max_tokens(512)
        .stop("\n\nEND");
    vec![
        ("prompted", plain, base(), false),
        ("prompted_stream", plain, base(), true),
        ("prompted_sampling", plain, sampling.clone(), false),
        ("prompted_seed", plain, sampling.seed(7), false),
        (
            "native",
            plain,
            with_output(base(), OutputMode::Native, openapi_schema()),
            false,
        ),
        (
            "native_json_schema",
            json,
            with_output(base(), OutputMode::Native, json_schema()),
            false,
        ),
        (
            "tool",
            plain,
            with_output(base(), OutputMode::Tool, openapi_schema()),
            false,
        ),
        (
            "tool_json_schema",
            json,
            with_output(base(), OutputMode::Tool, json_schema()),
            false,
        ),
    ]
}

#[test]
fn request_bodies() {
    for (name, adapter, request, stream) in cases() {
        let wire = adapter.transform_request(&request, stream).unwrap();
        let method = if stream {
            "streamGenerateContent?alt=sse"
        } else {
            "generateContent"
        };
        assert_eq!(
            wire.path,
            format!("/models/{}:{method}", request.model),
            "{name}"
        );
        assert!(wire.headers.is_empty(), "{name}");
        insta::assert_json_snapshot!(format!("request_{name}"), wire.json().unwrap());
    }
}

/// Type names in either case, as the API takes them (claij-schema writes lowercase).
fn any_case_types(defs: &mut Map<String, Value>) {
    let names = &mut defs["Schema"]["properties"]["type"]["enum"];
    let lower: Vec<Value> = names
        .as_array()
        .unwrap()
        .iter()
        .map(|n| json!(n.as_str().unwrap().to_ascii_lowercase()))
        .collect();
    names.as_array_mut().unwrap().extend(lower);
}

pub(crate) fn request_validator() -> claij_validation::Validator {
    let spec = support::load("gemini-v1beta.openapi.json");
    let options = support::Options {
        // The request envelope is closed, as the API is (it rejects unknown names); `Schema` stays open:
        // its content is the caller's, compiled by claij-schema to a dialect newer than this document.
        close_objects_except: Some(&["Schema"]),
        patch: Some(any_case_types),
    };
    support::validator(&spec, "GenerateContentRequest", &options)
}

/// Every body whose fields the older spec knows validates against `GenerateContentRequest`; those
/// using newer fields (`seed`, `responseJsonSchema`, `parametersJsonSchema`) fail exactly there.
#[test]
fn request_bodies_against_the_openapi_document() {
    let validator = request_validator();
    for (name, adapter, request, stream) in cases() {
        let body = adapter
            .transform_request(&request, stream)
            .unwrap()
            .json()
            .unwrap();
        let found = support::violations(&validator, &body);
        let expected: Vec<&str> = match name {
            "prompted_seed" => vec!["/generationConfig/seed: property `seed` is not allowed"],
            "native_json_schema" => vec![
                "/generationConfig/responseJsonSchema: property `responseJsonSchema` is not allowed",
            ],
            "tool_json_schema" => vec![
                "/tools/0/functionDeclarations/0/parametersJsonSchema: property `parametersJsonSchema` is not allowed",
            ],
            _ => vec![],
        };
        assert_eq!(found, expected, "{name}: {body:#}");
    }
}

#[test]
fn the_spec_check_catches_a_bad_body() {
    let validator = request_validator();
    let mut body = GeminiAdapter::default()
        .transform_request(
            &with_output(base(), OutputMode::Tool, openapi_schema()),
            false,
        )
        .unwrap()
        .json()
        .unwrap();
    body["toolConfig"]["functionCallingConfig"]["mode"] = json!("FORCED");
    body["system_instruction"] = json!({"parts": []});
    let found = support::violations(&validator, &body);
    assert_eq!(found.len(), 2, "{found:?}");
}

#[test]
fn every_example_response_parses() {
    let adapter = GeminiAdapter::default();
    let mut seen = Vec::new();
    for (name, example) in support::examples("gemini-") {
        let body = example["body"].to_string();
        let r = adapter
            .transform_response(body.as_bytes(), &context())
            .unwrap();
        let (content, usage, model) = match name.as_str() {
            "gemini-1.json" => (
                "Elegant, dynamic.\n\nWhat can I help you with next?\n",
                (405, 14),
                "gemini-2.0-flash",
            ),
            "gemini-2.json" => (
                "Chemical Laboratory Technician,  Chemistry Technician,  Lab Assistant\n",
                (113, 12),
                "gemini-1.5-flash",
            ),
            other => panic!("no expectation for example {other}"),
        };
        assert_eq!(r.content, content, "{name}");
        assert_eq!(
            (r.usage.input_tokens, r.usage.output_tokens),
            usage,
            "{name}"
        );
        assert_eq!(r.model.as_deref(), Some(model), "{name}");
        assert_eq!(r.finish_reason, FinishReason::Stop, "{name}");
        seen.push(name);
    }
    seen.sort();
    assert_eq!(seen, ["gemini-1.json", "gemini-2.json"]);
}

fn status_body(code: u16, status: &str, message: &str, details: Value) -> String {
    json!({"error": {"code": code, "message": message, "status": status, "details": details}})
        .to_string()
}

#[track_caller]
fn check_error(status: u16, body: &str, expected: &str) -> Error {
    let e = GeminiAdapter::default().classify_error(status, None, body.as_bytes(), context());
    assert_eq!(kind(&e), expected, "{status} {body}: {e}");
    assert_eq!(e.context().status, Some(status));
    e
}

#[test]
fn error_bodies_are_classified() {
    let key_invalid = json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]);
    let too_many =
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).";
    let cases = [
        (
            400,
            status_body(
                400,
                "INVALID_ARGUMENT",
                "API key not valid. Please pass a valid API key.",
                key_invalid,
            ),
            "Authentication",
        ),
        (
            401,
            status_body(
                401,
                "UNAUTHENTICATED",
                "Request had invalid authentication credentials.",
                json!([]),
            ),
            "Authentication",
        ),
        (
            403,
            status_body(
                403,
                "PERMISSION_DENIED",
                "Method doesn't allow unregistered callers.",
                json!([]),
            ),
            "Authentication",
        ),
        (
            404,
            status_body(
                404,
                "NOT_FOUND",
                "models/gemini-9 is not found for API version v1beta, or is not supported for generateContent.",
                json!([]),
            ),
            "ModelNotFound",
        ),
        (
            429,
            status_body(
                429,
                "RESOURCE_EXHAUSTED",
                "Resource has been exhausted (e.g. check quota).",
                json!([]),
            ),
            "RateLimited",
        ),
        (
            503,
            status_body(
                503,
                "UNAVAILABLE",
                "The model is overloaded. Please try again later.",
                json!([]),
            ),
            "Overloaded",
        ),
        (
            500,
            status_body(
                500,
                "INTERNAL",
                "An internal error has occurred.",
                json!([]),
            ),
            "Server",
        ),
        (
            504,
            status_body(
                504,
                "DEADLINE_EXCEEDED",
                "Deadline expired before operation could complete.",
                json!([]),
            ),
            "Server",
        ),
        (
            400,
            status_body(400, "INVALID_ARGUMENT", too_many, json!([])),
            "ContextLengthExceeded",
        ),
        (
            400,
            status_body(
                400,
                "INVALID_ARGUMENT",
                "Invalid JSON payload received. Unknown name \"foo\": Cannot find field.",
                json!([]),
            ),
            "BadRequest",
        ),
        (
            400,
            status_body(
                400,
                "FAILED_PRECONDITION",
                "User location is not supported for the API use.",
                json!([]),
            ),
            "BadRequest",
        ),
        (
            502,
            "<html><body>502 Bad Gateway</body></html>".into(),
            "Server",
        ),
        (503, String::new(), "Overloaded"),
        (404, "Not Found".into(), "ModelNotFound"),
        (429, "[]".into(), "RateLimited"),
        (400, "{\"error\": 3}".into(), "BadRequest"),
    ];
    for (status, body, expected) in cases {
        check_error(status, &body, expected);
    }
    let wrapped = format!(
        "[{}]",
        status_body(429, "RESOURCE_EXHAUSTED", "quota", json!([]))
    );
    let e = check_error(429, &wrapped, "RateLimited");
    assert_eq!(e.to_string(), "gemini (HTTP 429): rate limited: quota");
}

/// Gemini's 429 as sent for an exceeded quota: the message, a `QuotaFailure` naming the quota and a
/// `RetryInfo` delay.
fn quota_body(quota_id: &str, limit: u32, delay: &str) -> String {
    let message = format!(
        "You exceeded your current quota, please check your plan and billing details. For more \
         information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n\
         * Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, \
         limit: {limit}, model: gemini-2.5-flash\nPlease retry in {delay}."
    );
    let details = json!([
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
            "quotaId": quota_id,
            "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
            "quotaValue": limit.to_string()}]},
        {"@type": "type.googleapis.com/google.rpc.Help", "links": [{"description": "Learn more",
            "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
    ]);
    status_body(429, "RESOURCE_EXHAUSTED", &message, details)
}

#[test]
fn a_daily_or_zero_quota_is_exhausted_and_a_per_minute_one_is_a_rate_limit() {
    let per_minute = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier";
    let per_day = "GenerateRequestsPerDayPerProjectPerModel-FreeTier";
    let e = check_error(429, &quota_body(per_minute, 10, "34.4s"), "RateLimited");
    assert_eq!(e.retry_after(), Some(Duration::from_millis(34_400)));
    assert!(e.is_retryable());
    for body in [
        quota_body(per_day, 250, "13s"),
        quota_body(per_minute, 0, "13s"),
    ] {
        let e = check_error(429, &body, "QuotaExhausted");
        assert!(!e.is_retryable(), "{e}");
        assert!(e.to_string().contains("quota exhausted"), "{e}");
    }
}

#[test]
fn retry_info_stands_in_for_retry_after() {
    let details = json!([
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}
    ]);
    let body = status_body(429, "RESOURCE_EXHAUSTED", "quota", details);
    let adapter = GeminiAdapter::default();
    let e = adapter.classify_error(429, None, body.as_bytes(), context());
    assert_eq!(e.retry_after(), Some(Duration::from_secs(37)));
    let header = Some(Duration::from_secs(2));
    let e = adapter.classify_error(429, header, body.as_bytes(), context());
    assert_eq!(e.retry_after(), header);
}

fn stream_events(text: &str) -> Result<Vec<StreamEvent>, Error> {
    let adapter = GeminiAdapter::default();
    let mut out = Vec::new();
    for (event, data) in sse_blocks(text) {
        out.extend(adapter.stream_event(event.as_deref(), &data, &context())?);
    }
    Ok(out)
}

/// A `streamGenerateContent?alt=sse` response: every chunk a whole `GenerateContentResponse`.
pub(crate) const TEXT_STREAM: &str = r#"data: {"candidates": [{"content": {"parts": [{"text": "{\"answer\": "}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 8,"totalTokenCount": 8},"modelVersion": "gemini-2.5-flash","responseId": "r-1"}

data: {"candidates": [{"content": {"parts": [{"text": "\"4\", \"state\": \"done\"}"}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 8,"candidatesTokenCount": 12,"thoughtsTokenCount": 30,"totalTokenCount": 50},"modelVersion": "gemini-2.5-flash","responseId": "r-1"}

"#;

#[test]
fn a_text_stream() {
    let events = stream_events(TEXT_STREAM).unwrap();
    let usage = |output, reasoning| Usage {
        input_tokens: 8,
        output_tokens: output,
        reasoning_tokens: reasoning,
        ..Usage::default()
    };
    let id = || StreamEvent::ResponseId("r-1".into());
    let model = || StreamEvent::Model("gemini-2.5-flash".into());
    assert_eq!(
        events,
        [
            id(),
            model(),
            StreamEvent::Text(r#"{"answer": "#.into()),
            StreamEvent::Usage(usage(0, 0)),
            id(),
            model(),
            StreamEvent::Text(r#""4", "state": "done"}"#.into()),
            StreamEvent::Usage(usage(42, 30)),
            StreamEvent::Finish(FinishReason::Stop),
        ]
    );
}

#[test]
fn a_function_call_stream() {
    let stream = r#"data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "answer", "args": {"answer": "4", "state": "done"}}}],"role": "model"},"finishReason": "STOP"}]}

"#;
    // The call is named (a native call too), its arguments the answer; Gemini's `STOP` beside a
    // call says the model stopped to call it.
    let mut assembler = claij_backends::Assembler::default();
    for event in stream_events(stream).unwrap() {
        assembler.push(event);
    }
    let response = assembler.finish();
    assert_eq!(response.content, r#"{"answer":"4","state":"done"}"#);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.tool_calls[0].name, "answer");
    // Text in an earlier chunk is not part of the answer.
    let stream = r#"data: {"candidates": [{"content": {"parts": [{"text": "Calling the function."}],"role": "model"}}]}

data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "answer", "args": {"answer": "4"}}}],"role": "model"},"finishReason": "STOP"}]}

"#;
    let mut assembler = claij_backends::Assembler::default();
    for event in stream_events(stream).unwrap() {
        assembler.push(event);
    }
    assert_eq!(assembler.finish().content, r#"{"answer":"4"}"#);
}

#[test]
fn stream_blocks_and_errors() {
    let safety = "data: {\"candidates\": [{\"finishReason\": \"SAFETY\", \"safetyRatings\": [{\"category\": \"HARM_CATEGORY_HARASSMENT\", \"probability\": \"HIGH\"}]}]}\n\n";
    let e = stream_events(safety).unwrap_err();
    assert_eq!(
        e.to_string(),
        "gemini: refused: finish reason SAFETY (HARM_CATEGORY_HARASSMENT)"
    );

    let prompt = "data: {\"promptFeedback\": {\"blockReason\": \"SAFETY\"}, \"usageMetadata\": {\"promptTokenCount\": 3}}\n\n";
    assert_eq!(kind(&stream_events(prompt).unwrap_err()), "Refused");

    let error = "data: {\"error\": {\"code\": 503, \"message\": \"The model is overloaded.\", \"status\": \"UNAVAILABLE\"}}\n\n";
    let e = stream_events(error).unwrap_err();
    assert_eq!(kind(&e), "Overloaded");
    assert!(e.is_retryable());

    assert_eq!(
        kind(&stream_events("data: {\"candidates\": [\n\n").unwrap_err()),
        "MalformedResponse"
    );
    assert_eq!(
        stream_events("data: {\"candidates\": [{\"content\": {\"parts\": []}, \"finishReason\": \"MAX_TOKENS\"}]}\n\n")
            .unwrap(),
        [StreamEvent::Finish(FinishReason::Length)]
    );
}

// End to end: the `Gemini` backend against a local server.

const KEY: &str = "AIzaSyTest-0123456789abcdefghijklmnopq";

fn backend(server: &MockServer) -> Gemini {
    let retry = RetryPolicy::default()
        .with_max_requests(3)
        .with_backoff(Duration::from_millis(5), Duration::from_millis(20))
        .with_jitter(0.0);
    Gemini::new(ApiKey::new(KEY))
        .with_config(HttpConfig::new(format!("{}/v1beta", server.uri())).with_retry(retry))
}

fn endpoint(method_name: &str) -> wiremock::MockBuilder {
    Mock::given(method("POST"))
        .and(path(format!(
            "/v1beta/models/gemini-2.5-flash:{method_name}"
        )))
        .and(header("x-goog-api-key", KEY))
}

/// The last request the server got: its body, after checking the key went only in its header.
async fn received_body(server: &MockServer, logs: &Logs) -> Value {
    let requests = server.received_requests().await.unwrap();
    let request = requests.last().unwrap();
    assert!(!request.url.as_str().contains(KEY));
    assert!(request.url.query_pairs().all(|(k, _)| k != "key"));
    let logged = logs.text();
    assert!(logged.contains("gemini"), "nothing captured: {logged}");
    assert!(!logged.contains(KEY), "{logged}");
    serde_json::from_slice(&request.body).unwrap()
}

#[tokio::test]
async fn native_mode_over_http() {
    let (logs, _guard) = Logs::capture();
    let server = MockServer::start().await;
    let reply = json!({"candidates": [{"content": {"parts": [{"text": "{\"answer\": \"4\", \"state\": \"done\"}"}],
        "role": "model"}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 9, "thoughtsTokenCount": 20},
        "modelVersion": "gemini-2.5-flash", "responseId": "resp-7"});
    endpoint("generateContent")
        .respond_with(ResponseTemplate::new(200).set_body_json(reply))
        .expect(1)
        .mount(&server)
        .await;
    let request = with_output(base(), OutputMode::Native, openapi_schema());
    let response = backend(&server).complete(&request).await.unwrap();
    assert_eq!(response.content, r#"{"answer": "4", "state": "done"}"#);
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.request_id.as_deref(), Some("resp-7"));
    assert_eq!(
        (
            response.usage.output_tokens,
            response.usage.reasoning_tokens
        ),
        (29, 20)
    );
    let body = received_body(&server, &logs).await;
    insta::assert_json_snapshot!("http_native_request", body);
}

#[tokio::test]
async fn rate_limited_then_answered_after_the_retry_info_delay() {
    let (logs, _guard) = Logs::capture();
    let server = MockServer::start().await;
    let limited = status_body(
        429,
        "RESOURCE_EXHAUSTED",
        "quota",
        json!([
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.01s"}
        ]),
    );
    endpoint("generateContent")
        .respond_with(ResponseTemplate::new(429).set_body_string(limited))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    let call = json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "answer",
        "args": {"answer": "4", "state": "done"}}}]}, "finishReason": "STOP"}]});
    endpoint("generateContent")
        .respond_with(ResponseTemplate::new(200).set_body_json(call))
        .expect(1)
        .mount(&server)
        .await;
    let request = with_output(base(), OutputMode::Tool, openapi_schema());
    let response = backend(&server).complete(&request).await.unwrap();
    assert_eq!(response.content, r#"{"answer":"4","state":"done"}"#);
    let body = received_body(&server, &logs).await;
    assert_eq!(body["toolConfig"]["functionCallingConfig"]["mode"], "ANY");
}

#[tokio::test]
async fn a_rejected_key_is_never_repeated() {
    let (logs, _guard) = Logs::capture();
    let server = MockServer::start().await;
    let echo = status_body(
        400,
        "INVALID_ARGUMENT",
        &format!("API key not valid: {KEY}"),
        json!([
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
        ]),
    );
    endpoint("generateContent")
        .respond_with(ResponseTemplate::new(400).set_body_string(echo))
        .expect(1)
        .mount(&server)
        .await;
    let e = backend(&server).complete(&base()).await.unwrap_err();
    assert_eq!(kind(&e), "Authentication");
    assert_eq!(
        e.to_string(),
        "gemini (HTTP 400): authentication failed: API key not valid: ***"
    );
    assert!(!format!("{e:?}").contains(KEY));
    received_body(&server, &logs).await;
}

#[tokio::test]
async fn a_streamed_answer() {
    let (logs, _guard) = Logs::capture();
    let server = MockServer::start().await;
    endpoint("streamGenerateContent")
        .and(query_param("alt", "sse"))
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
    received_body(&server, &logs).await;
}

#[tokio::test]
async fn an_unknown_model_names_the_model_asked_for() {
    let server = MockServer::start().await;
    let missing = status_body(
        404,
        "NOT_FOUND",
        "models/gemini-9 is not found for API version v1beta, or is not supported for generateContent.",
        json!([]),
    );
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-9:generateContent"))
        .respond_with(ResponseTemplate::new(404).set_body_string(missing))
        .expect(1)
        .mount(&server)
        .await;
    let request = ChatRequest::new("gemini-9").message(Message::user("Hi"));
    let e = backend(&server).complete(&request).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "gemini (HTTP 404): model `gemini-9` not found"
    );
}
