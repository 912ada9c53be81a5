//! Refusals through HTTP, every provider, complete and streamed: each provider's documented reasons
//! for not answering (Gemini's non-content finish reasons and prompt block reasons, OpenAI's
//! `refusal` and `content_filter`, Anthropic's `stop_reason: "refusal"`) end the call with
//! [`Error::Refused`] carrying the provider's message, after one request although the retry policy
//! would send three.
//!
//! The bodies follow the providers' wire formats: Gemini's `Candidate.finishReason`,
//! `finishMessage` and `PromptFeedback.blockReason`/`blockReasonMessage` (the v1beta OpenAPI
//! document, with the newer reasons `IMAGE_SAFETY` and `MODEL_ARMOR` of Google's API reference),
//! OpenAI's `ChatCompletionResponseMessage.refusal` and `finish_reason` (the chat completions
//! schema), Anthropic's `stop_reason` and `stop_details` (the Messages API).

#![cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]

use std::time::Duration;

use claij_backends::anthropic::Anthropic;
use claij_backends::gemini::Gemini;
use claij_backends::http::{HttpConfig, RetryPolicy};
use claij_backends::openai::OpenAi;
use claij_backends::{ApiKey, Backend, ChatRequest, Error, Message};
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A policy that would send a retryable failure three times.
fn config(server: &MockServer, base: &str) -> HttpConfig {
    let retry = RetryPolicy::default()
        .with_max_requests(3)
        .with_backoff(Duration::from_millis(5), Duration::from_millis(20))
        .with_jitter(0.0);
    HttpConfig::new(format!("{}{base}", server.uri())).with_retry(retry)
}

fn request(model: &str) -> ChatRequest {
    ChatRequest::new(model).message(Message::user("Tell me something you will not."))
}

/// Which provider, which path it answers on, and the body it answers.
enum Provider {
    OpenAi,
    Anthropic,
    Gemini,
}

impl Provider {
    fn path(&self, streamed: bool) -> &'static str {
        match (self, streamed) {
            (Provider::OpenAi, _) => "/v1/chat/completions",
            (Provider::Anthropic, _) => "/v1/messages",
            (Provider::Gemini, false) => "/v1beta/models/gemini-2.5-flash:generateContent",
            (Provider::Gemini, true) => "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        }
    }

    /// The call's error: the reply must fail, through `complete` or through `stream`.
    async fn call(&self, server: &MockServer, streamed: bool) -> Error {
        match self {
            Provider::OpenAi => {
                let backend =
                    OpenAi::new(ApiKey::new("sk-test")).with_config(config(server, "/v1"));
                run(&backend, &request("gpt-4o"), streamed).await
            }
            Provider::Anthropic => {
                let backend =
                    Anthropic::new(ApiKey::new("sk-ant-test")).with_config(config(server, "/v1"));
                run(&backend, &request("claude-sonnet-4-5"), streamed).await
            }
            Provider::Gemini => {
                let backend =
                    Gemini::new(ApiKey::new("AIza-test")).with_config(config(server, "/v1beta"));
                run(&backend, &request("gemini-2.5-flash"), streamed).await
            }
        }
    }
}

async fn run(backend: &dyn Backend, request: &ChatRequest, streamed: bool) -> Error {
    if !streamed {
        return backend.complete(request).await.unwrap_err();
    }
    let mut stream = backend.stream(request);
    while let Some(event) = stream.next().await {
        if let Err(e) = event {
            return e;
        }
    }
    panic!("the stream ended without an error");
}

/// A body as the provider sends it: JSON, or server-sent events from `chunks`.
fn respond(provider: &Provider, streamed: bool, chunks: &[Value]) -> ResponseTemplate {
    if !streamed {
        return ResponseTemplate::new(200).set_body_json(&chunks[0]);
    }
    let mut body = String::new();
    for chunk in chunks {
        if let Provider::Anthropic = provider {
            body.push_str(&format!("event: {}\n", chunk["type"].as_str().unwrap()));
        }
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    if let Provider::OpenAi = provider {
        body.push_str("data: [DONE]\n\n");
    }
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

/// One call answered with `chunks`: a refusal naming `message`, after exactly one request.
#[track_caller]
fn check(provider: Provider, streamed: bool, chunks: Vec<Value>, message: &str) {
    let message = message.to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(provider.path(streamed)))
            .respond_with(respond(&provider, streamed, &chunks))
            .mount(&server)
            .await;
        let error = provider.call(&server, streamed).await;
        let what = format!("streamed {streamed}: {error}");
        assert!(error.is_refusal(), "{what}");
        assert!(
            error.to_string().contains(&message),
            "{what} lacks {message:?}"
        );
        assert_eq!(server.received_requests().await.unwrap().len(), 1, "{what}");
        assert!(!error.is_retryable(), "{what}");
    });
}

/// A Gemini candidate the model withheld: no content, the reason and its message.
fn withheld(reason: &str) -> Value {
    json!({"candidates": [{"finishReason": reason, "index": 0,
        "finishMessage": format!("Withheld for {reason}.")}],
        "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9},
        "modelVersion": "gemini-2.5-flash", "responseId": "r-1"})
}

#[test]
fn gemini_withheld_candidates_are_refusals_sent_once() {
    for reason in [
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "MODEL_ARMOR",
    ] {
        for streamed in [false, true] {
            let message = format!("finish reason {reason}: Withheld for {reason}.");
            check(Provider::Gemini, streamed, vec![withheld(reason)], &message);
        }
    }
}

#[test]
fn gemini_blocked_prompts_are_refusals_sent_once() {
    for reason in [
        "SAFETY",
        "OTHER",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "IMAGE_SAFETY",
    ] {
        let body = json!({"promptFeedback": {"blockReason": reason,
            "blockReasonMessage": "The prompt was blocked."},
            "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}});
        for streamed in [false, true] {
            let message = format!("prompt blocked: {reason}: The prompt was blocked.");
            check(Provider::Gemini, streamed, vec![body.clone()], &message);
        }
    }
}

fn openai_message(message: Value, finish: &str) -> Value {
    json!({"id": "chatcmpl-r", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": finish, "logprobs": null, "message": message}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 0, "total_tokens": 9}})
}

fn openai_chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "chatcmpl-r", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

#[test]
fn openai_refusals_and_content_filters_are_sent_once() {
    let refusal = "I'm sorry, I can't help with that.";
    check(
        Provider::OpenAi,
        false,
        vec![openai_message(
            json!({"role": "assistant", "content": null, "refusal": refusal}),
            "stop",
        )],
        refusal,
    );
    check(
        Provider::OpenAi,
        true,
        vec![
            openai_chunk(
                json!({"role": "assistant", "content": null, "refusal": ""}),
                Value::Null,
            ),
            openai_chunk(json!({"refusal": refusal}), Value::Null),
            openai_chunk(json!({}), json!("stop")),
        ],
        refusal,
    );
    let filtered = "the provider's content filter stopped the answer";
    check(
        Provider::OpenAi,
        false,
        vec![openai_message(
            json!({"role": "assistant", "content": null, "refusal": null}),
            "content_filter",
        )],
        filtered,
    );
    check(
        Provider::OpenAi,
        true,
        vec![
            openai_chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            openai_chunk(json!({}), json!("content_filter")),
        ],
        filtered,
    );
}

#[test]
fn anthropic_refusals_are_sent_once() {
    let explanation = "This request asks for help with malware.";
    let details = json!({"type": "refusal", "category": "cyber", "explanation": explanation});
    let message = format!("{explanation} (category cyber)");
    check(
        Provider::Anthropic,
        false,
        vec![
            json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [], "stop_reason": "refusal", "stop_sequence": null, "stop_details": details,
            "usage": {"input_tokens": 9, "output_tokens": 0}}),
        ],
        &message,
    );
    check(
        Provider::Anthropic,
        true,
        vec![
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
                "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 9, "output_tokens": 1}}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "refusal",
                "stop_sequence": null, "stop_details": details}, "usage": {"output_tokens": 1}}),
            json!({"type": "message_stop"}),
        ],
        &message,
    );
}
