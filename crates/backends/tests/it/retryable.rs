//! One definition of retryable (`Error::is_retryable`), the one the HTTP retry loop follows: every
//! documented error of every provider (OpenAI, OpenRouter, Anthropic, Gemini, an OpenAI-compatible
//! server), whether its status line says it, a 200 body carries it, or a stream's event does, is
//! classified once, and the loop retries exactly the ones the predicate calls retryable.
//!
//! The errors are data, `fixtures/providers/errors.json` (its `_provenance` names the documentation
//! each comes from): OpenAI's `{"error": {message, type, param, code}}`, OpenRouter's
//! `{"error": {code, message, metadata}}` (also inside a 200 body and a stream's chunk), Anthropic's
//! `{"type": "error", "error": {type, message}}` (also as an `event: error` of a stream), Gemini's
//! `google.rpc.Status` `{"error": {code, message, status, details}}`, llama.cpp's and vLLM's.

use std::time::Duration;

use claij_backends::http::{HttpConfig, RetryPolicy};
use claij_backends::{
    Anthropic, ApiKey, Backend, ChatRequest, Error, Gemini, Message, OpenAi, OpenAiCompatible,
    OpenRouter, StreamEvent,
};
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::fixtures;

const KEY: &str = "sk-test-retryable-0123456789";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Provider {
    OpenAi,
    OpenRouter,
    Anthropic,
    Gemini,
    Compatible,
}

const ALL: [Provider; 5] = [
    Provider::OpenAi,
    Provider::OpenRouter,
    Provider::Anthropic,
    Provider::Gemini,
    Provider::Compatible,
];

/// Up to three requests, a millisecond or two apart.
fn retrying() -> RetryPolicy {
    RetryPolicy::default()
        .with_max_requests(3)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(5))
        .with_jitter(0.0)
}

impl Provider {
    fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::OpenRouter => "openrouter",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Compatible => "openai-compatible",
        }
    }

    fn named(name: &str) -> Self {
        ALL.into_iter()
            .find(|p| p.name() == name)
            .unwrap_or_else(|| panic!("{ERRORS}: unknown provider {name}"))
    }

    fn backend(self, server: &MockServer, retry: RetryPolicy) -> Box<dyn Backend> {
        let config = HttpConfig::new(server.uri()).with_retry(retry);
        let key = ApiKey::new(KEY);
        match self {
            Provider::OpenAi => Box::new(OpenAi::new(key).with_config(config)),
            Provider::OpenRouter => Box::new(OpenRouter::new(key).with_config(config)),
            Provider::Anthropic => Box::new(Anthropic::new(key).with_config(config)),
            Provider::Gemini => Box::new(Gemini::new(key).with_config(config)),
            Provider::Compatible => {
                Box::new(OpenAiCompatible::new(server.uri()).with_config(config))
            }
        }
    }

    fn model(self) -> &'static str {
        match self {
            Provider::OpenAi => "gpt-4o-mini",
            Provider::OpenRouter => "openai/gpt-4o-mini",
            Provider::Anthropic => "claude-sonnet-4-5",
            Provider::Gemini => "gemini-2.5-flash",
            Provider::Compatible => "qwen2.5-0.5b-instruct",
        }
    }

    fn request(self) -> ChatRequest {
        ChatRequest::new(self.model()).message(Message::user("What is 2+2?"))
    }

    fn endpoint(self, stream: bool) -> String {
        match (self, stream) {
            (Provider::Anthropic, _) => "/messages".to_owned(),
            (Provider::Gemini, false) => format!("/models/{}:generateContent", self.model()),
            (Provider::Gemini, true) => format!("/models/{}:streamGenerateContent", self.model()),
            _ => "/chat/completions".to_owned(),
        }
    }

    /// A documented success body (`fixtures/providers/examples`).
    fn ok_body(self) -> Value {
        let name = match self {
            Provider::Anthropic => "anthropic-2",
            Provider::Gemini => "gemini-1",
            _ => "openai-1",
        };
        fixtures::json(&format!("fixtures/providers/examples/{name}.json"))["body"].clone()
    }

    /// A stream answering `{"a": 1}`, in the provider's events.
    fn ok_stream(self) -> String {
        match self {
            Provider::Anthropic => [
                anthropic_start("msg_ok"),
                event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "{\"a\": 1}"}}),
                ),
                event(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                ),
                event(
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 5}}),
                ),
                event("message_stop", json!({"type": "message_stop"})),
            ]
            .concat(),
            Provider::Gemini => data(json!({
                "candidates": [{"content": {"parts": [{"text": "{\"a\": 1}"}], "role": "model"}, "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 5, "totalTokenCount": 14},
                "responseId": "resp_ok"
            })),
            _ => [
                data(chunk("chatcmpl-ok", json!({"role": "assistant", "content": ""}), None)),
                data(chunk("chatcmpl-ok", json!({"content": "{\"a\": 1}"}), None)),
                data(chunk("chatcmpl-ok", json!({}), Some("stop"))),
                "data: [DONE]\n\n".to_owned(),
            ]
            .concat(),
        }
    }

    /// The start of a stream that has sent no content yet (an id, a role, usage).
    fn stream_start(self) -> String {
        match self {
            Provider::Anthropic => {
                anthropic_start("msg_failed") + &event("ping", json!({"type": "ping"}))
            }
            Provider::Gemini => String::new(),
            _ => data(chunk(
                "chatcmpl-failed",
                json!({"role": "assistant", "content": ""}),
                None,
            )),
        }
    }

    /// A stream that has sent some text (content a caller has seen).
    fn stream_with_text(self) -> String {
        match self {
            Provider::Anthropic => [
                anthropic_start("msg_failed"),
                event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "{\"a\""}}),
                ),
            ]
            .concat(),
            Provider::Gemini => data(json!({
                "candidates": [{"content": {"parts": [{"text": "{\"a\""}], "role": "model"}}]
            })),
            _ => data(chunk("chatcmpl-failed", json!({"content": "{\"a\""}), None)),
        }
    }
}

fn anthropic_start(id: &str) -> String {
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 9, "output_tokens": 1}}}),
    )
}

fn event(name: &str, value: Value) -> String {
    format!("event: {name}\ndata: {value}\n\n")
}

fn data(value: Value) -> String {
    format!("data: {value}\n\n")
}

fn chunk(id: &str, delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": id, "object": "chat.completion.chunk", "created": 1_741_569_952, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    })
}

/// One documented error (`fixtures/providers/errors.json`): how it arrives, how it is classified,
/// whether it is retryable.
#[derive(serde::Deserialize)]
struct Case {
    provider: String,
    what: String,
    status: u16,
    body: Value,
    /// The `ErrorKind` variant, as `Debug` names it.
    kind: String,
    retryable: bool,
}

const ERRORS: &str = "fixtures/providers/errors.json";

fn cases() -> Vec<Case> {
    serde_json::from_value(fixtures::json(ERRORS)["responses"].clone()).unwrap()
}

/// The provider's stream error event of `errors.json` (`error`: retryable, `permanent`: not).
fn stream_error(provider: Provider, which: &str) -> String {
    let all = fixtures::json(ERRORS);
    let one = &all["stream_errors"][provider.name()][which];
    match one["event"].as_str() {
        Some(name) => event(name, one["data"].clone()),
        None => data(one["data"].clone()),
    }
}

async fn mount(server: &MockServer, route: &str, response: ResponseTemplate, times: Option<u64>) {
    let mock = Mock::given(method("POST"))
        .and(path(route))
        .respond_with(response);
    let mock = match times {
        Some(n) => mock.up_to_n_times(n),
        None => mock,
    };
    mock.mount(server).await;
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.unwrap_or_default().len()
}

/// Each error once: classified as documented, `is_retryable` as expected; and under a retry policy
/// the loop sends the request again exactly when the predicate says so.
#[tokio::test]
async fn every_documented_error_of_every_provider_is_retried_as_is_retryable_says() {
    let cases = cases();
    for provider in ALL {
        let of = |retryable| {
            cases
                .iter()
                .any(|c| c.provider == provider.name() && c.retryable == retryable)
        };
        assert!(
            of(true) && of(false),
            "{provider:?} needs errors of both sorts"
        );
    }
    for case in &cases {
        let provider = Provider::named(&case.provider);
        let what = format!("{provider:?} {}", case.what);
        let route = provider.endpoint(false);
        let error_response = ResponseTemplate::new(case.status).set_body_json(&case.body);

        // Alone: what the error is.
        let server = MockServer::start().await;
        mount(&server, &route, error_response.clone(), None).await;
        let backend = provider.backend(&server, RetryPolicy::none());
        let error = backend
            .complete(&provider.request())
            .await
            .expect_err(&what);
        assert_eq!(format!("{:?}", error.kind()), case.kind, "{what}: {error}");
        assert_eq!(error.is_retryable(), case.retryable, "{what}: {error}");
        assert!(!error.to_string().contains(KEY), "{error}");

        // Then a success: retried when retryable, else returned after one request.
        let server = MockServer::start().await;
        mount(&server, &route, error_response, Some(1)).await;
        let ok = ResponseTemplate::new(200).set_body_json(provider.ok_body());
        mount(&server, &route, ok, None).await;
        let backend = provider.backend(&server, retrying());
        let result = backend.complete(&provider.request()).await;
        let sent = requests(&server).await;
        if case.retryable {
            assert!(result.is_ok(), "{what}: {result:?}");
            assert_eq!(sent, 2, "{what}");
        } else {
            let error = result.expect_err(&what);
            assert_eq!(format!("{:?}", error.kind()), case.kind, "{what}");
            assert_eq!(sent, 1, "{what}: sent again");
        }
    }
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

async fn collect(
    backend: &dyn Backend,
    request: &ChatRequest,
) -> (Vec<StreamEvent>, Option<Error>) {
    let items: Vec<Result<StreamEvent, Error>> = backend.stream(request).collect().await;
    let mut events = Vec::new();
    let mut error = None;
    for item in items {
        match item {
            Ok(event) => events.push(event),
            Err(e) => error = Some(e),
        }
    }
    (events, error)
}

fn text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// An error event before any content (Anthropic's `overloaded_error` after `message_start`, an
/// OpenRouter error chunk, Gemini's `UNAVAILABLE`): the stream is sent again, and the caller sees
/// only the stream that worked, none of the failed one's id or usage.
#[tokio::test]
async fn an_error_event_before_any_content_is_retried_by_the_http_loop() {
    for provider in ALL {
        let route = provider.endpoint(true);
        let failed = provider.stream_start() + &stream_error(provider, "error");

        let server = MockServer::start().await;
        mount(&server, &route, sse(failed.clone()), None).await;
        let backend = provider.backend(&server, RetryPolicy::none());
        let (events, error) = collect(backend.as_ref(), &provider.request()).await;
        let error = error.unwrap_or_else(|| panic!("{provider:?}: no error in {events:?}"));
        assert!(error.is_retryable(), "{provider:?}: {error}");
        assert!(events.is_empty(), "{provider:?}: {events:?}");

        let server = MockServer::start().await;
        mount(&server, &route, sse(failed), Some(1)).await;
        mount(&server, &route, sse(provider.ok_stream()), None).await;
        let backend = provider.backend(&server, retrying());
        let (events, error) = collect(backend.as_ref(), &provider.request()).await;
        assert!(error.is_none(), "{provider:?}: {error:?}");
        assert_eq!(requests(&server).await, 2, "{provider:?}");
        assert_eq!(text(&events), "{\"a\": 1}", "{provider:?}: {events:?}");
        let ids: Vec<&StreamEvent> = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ResponseId(_)))
            .collect();
        assert!(
            ids.iter()
                .all(|e| !matches!(e, StreamEvent::ResponseId(id) if id.contains("failed"))),
            "{provider:?}: the failed stream leaked: {events:?}"
        );
    }
}

/// A non-retryable error event before any content is returned after one request.
#[tokio::test]
async fn a_permanent_error_event_is_not_retried() {
    for provider in ALL {
        let route = provider.endpoint(true);
        let error_event = stream_error(provider, "permanent");
        let server = MockServer::start().await;
        mount(
            &server,
            &route,
            sse(provider.stream_start() + &error_event),
            Some(1),
        )
        .await;
        mount(&server, &route, sse(provider.ok_stream()), None).await;
        let backend = provider.backend(&server, retrying());
        let (_, error) = collect(backend.as_ref(), &provider.request()).await;
        let error = error.unwrap_or_else(|| panic!("{provider:?}: no error"));
        assert!(!error.is_retryable(), "{provider:?}: {error}");
        assert_eq!(requests(&server).await, 1, "{provider:?}");
    }
}

/// After content reached the caller the HTTP layer cannot send the stream again (the caller would
/// see it twice): the stream ends with the error, retryable, for the caller (the pipeline) to act on.
#[tokio::test]
async fn an_error_event_after_content_ends_the_stream_retryable() {
    for provider in ALL {
        let route = provider.endpoint(true);
        let server = MockServer::start().await;
        let body = provider.stream_with_text() + &stream_error(provider, "error");
        mount(&server, &route, sse(body), Some(1)).await;
        mount(&server, &route, sse(provider.ok_stream()), None).await;
        let backend = provider.backend(&server, retrying());
        let (events, error) = collect(backend.as_ref(), &provider.request()).await;
        let error = error.unwrap_or_else(|| panic!("{provider:?}: no error in {events:?}"));
        assert!(error.is_retryable(), "{provider:?}: {error}");
        assert_eq!(text(&events), "{\"a\"", "{provider:?}");
        assert_eq!(requests(&server).await, 1, "{provider:?}");
    }
}
