//! Tests: the OpenAI-format adapters (OpenAI, OpenRouter, compatible servers) against wiremock: request
//! bodies snapshotted and validated against the OpenAI spec, the spec's example responses parsed,
//! structured output in both modes, errors, usage and cost, streaming.

#![cfg(all(feature = "openai", feature = "openrouter"))]

use std::sync::OnceLock;

use claij_backends::http::{HttpBackend, HttpConfig, RetryPolicy};
use claij_backends::openai::{
    CompatibleAdapter, OpenAi, OpenAiAdapter, OpenAiCompatible, OpenRouter, OpenRouterAdapter,
};
use claij_backends::{
    Adapter, ApiKey, Backend, ChatRequest, ErrorContext, FinishReason, Message, OutputMode,
    SchemaDialect, StreamEvent,
};
use claij_validation::Validator;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::http::{CHAT, KEY, completion, kind, sse_body};

/// `CreateChatCompletionRequest` from the OpenAI spec (`fixtures/providers`), compiled once; a
/// missing spec fails every test that needs it with its path.
fn request_schema() -> &'static Validator {
    static VALIDATOR: OnceLock<Result<Validator, String>> = OnceLock::new();
    crate::fixtures::loaded(VALIDATOR.get_or_init(|| {
        let spec =
            crate::fixtures::try_json("fixtures/providers/openai-chat-completions.schema.json")?;
        let wrapper = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": "#/$defs/CreateChatCompletionRequest",
            "$defs": spec["$defs"],
        });
        Ok(Validator::new(&wrapper).unwrap())
    }))
}

#[track_caller]
pub(crate) fn assert_valid_request(name: &str, body: &Value) {
    if let Err(violations) = request_schema().validate(body) {
        let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
        panic!(
            "{name}: not a valid CreateChatCompletionRequest:\n{}\n{body:#}",
            list.join("\n")
        );
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "description": "The answer"},
            "state": {"type": "string", "enum": ["done", "more"]},
            "confidence": {"type": ["number", "null"]}
        },
        "required": ["answer", "state", "confidence"],
        "additionalProperties": false
    })
}

/// The requests every adapter is checked with: (name, request, streamed).
fn cases() -> Vec<(&'static str, ChatRequest, bool)> {
    let ask = |model: &str| ChatRequest::new(model).message(Message::user("What is 2+2?"));
    let mut tool = ask("m-tool").structured("response", schema(), true);
    if let Some(s) = tool.structured_output.as_mut() {
        s.mode = OutputMode::Tool;
    }
    vec![
        ("prompted", ask("m-prompted"), false),
        (
            "native",
            ask("m-native").structured("response", schema(), true),
            false,
        ),
        ("tool", tool, false),
        (
            "system",
            ask("m-system")
                .system("You answer in JSON.")
                .message(Message::assistant("{\"answer\": \"4\"}"))
                .message(Message::user("And 3+3?")),
            false,
        ),
        (
            "sampling",
            ask("m-sampling")
                .temperature(0.2)
                .max_tokens(256)
                .seed(42)
                .stop("\n\n")
                .stop("END"),
            false,
        ),
        (
            "stream",
            ask("m-stream").structured("response", schema(), false),
            true,
        ),
        ("default_model", ask(""), false),
    ]
}

/// Sends `request` through `backend` to `server` and returns the body the server got.
async fn sent_body<A: Adapter>(
    server: &MockServer,
    backend: &HttpBackend<A>,
    request: &ChatRequest,
    stream: bool,
) -> (Value, wiremock::Request) {
    let response = if stream {
        ResponseTemplate::new(200).set_body_raw(sse_body(&["{}"]), "text/event-stream")
    } else {
        ResponseTemplate::new(200).set_body_json(completion("{}"))
    };
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(response)
        .expect(1)
        .mount(server)
        .await;
    if stream {
        let events: Vec<_> = backend.stream(request).collect().await;
        assert!(events.iter().all(Result::is_ok), "{events:?}");
    } else {
        backend.complete(request).await.unwrap();
    }
    let received = server.received_requests().await.unwrap().remove(0);
    let body = serde_json::from_slice(&received.body).unwrap();
    (body, received)
}

fn config(server: &MockServer) -> HttpConfig {
    HttpConfig::new(format!("{}/v1", server.uri())).with_retry(RetryPolicy::none())
}

/// The body each case sends, snapshotted and validated against the spec; `headers` checks the rest.
async fn check_bodies<A: Adapter>(
    adapter: &str,
    make: impl Fn(&MockServer) -> HttpBackend<A>,
    headers: impl Fn(&wiremock::Request),
) {
    for (case, request, stream) in cases() {
        let server = MockServer::start().await;
        let backend = make(&server);
        if case == "default_model" && adapter != "openrouter" {
            let error = backend.complete(&request).await.unwrap_err();
            assert_eq!(kind(&error), "BadRequest", "{adapter}: {error}");
            continue;
        }
        let (body, received) = sent_body(&server, &backend, &request, stream).await;
        let name = format!("{adapter}_{case}");
        assert_valid_request(&name, &body);
        headers(&received);
        insta::assert_json_snapshot!(name, body);
    }
}

fn header<'r>(request: &'r wiremock::Request, name: &str) -> Option<&'r str> {
    request.headers.get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn openai_request_bodies() {
    let bearer = format!("Bearer {KEY}");
    check_bodies(
        "openai",
        |server| OpenAi::new(ApiKey::new(KEY)).with_config(config(server)),
        |request| {
            assert_eq!(header(request, "authorization"), Some(bearer.as_str()));
            assert_eq!(header(request, "content-type"), Some("application/json"));
            assert!(header(request, "user-agent").is_some_and(|ua| ua.starts_with("claij/")));
        },
    )
    .await;
}

#[tokio::test]
async fn openrouter_request_bodies() {
    check_bodies(
        "openrouter",
        |server| {
            OpenRouter::new(ApiKey::new(KEY))
                .with_config(config(server))
                .with_referer("https://example.com/app")
                .with_title("claij tests")
        },
        |request| {
            assert_eq!(
                header(request, "http-referer"),
                Some("https://example.com/app")
            );
            assert_eq!(header(request, "x-title"), Some("claij tests"));
        },
    )
    .await;
}

#[tokio::test]
async fn compatible_request_bodies() {
    check_bodies(
        "compatible",
        |server| OpenAiCompatible::new(format!("{}/v1", server.uri())).with_config(config(server)),
        |request| assert_eq!(header(request, "authorization"), None, "no key, no header"),
    )
    .await;
}

#[tokio::test]
async fn compatible_servers_take_an_optional_key() {
    let server = MockServer::start().await;
    let backend = OpenAiCompatible::new("unused")
        .with_config(config(&server))
        .with_key(ApiKey::new("local-key-123"))
        .with_provider("vllm");
    let (_, received) = sent_body(&server, &backend, &cases()[0].1, false).await;
    assert_eq!(
        header(&received, "authorization"),
        Some("Bearer local-key-123")
    );
    assert_eq!(backend.provider(), "vllm");
}

/// Each example body of the spec, through each adapter's `transform_response`.
#[test]
fn spec_example_responses_parse() {
    let mut seen = 0;
    let files = crate::fixtures::files("fixtures/providers/examples", "openai-");
    let adapters: [&dyn Adapter; 3] = [
        &OpenAiAdapter::default(),
        &OpenRouterAdapter::default(),
        &CompatibleAdapter::default(),
    ];
    for file in &files {
        let example = crate::fixtures::json(file);
        let body = serde_json::to_vec(&example["body"]).unwrap();
        for adapter in adapters {
            let context = ErrorContext::new(adapter.provider()).with_status(200);
            let response = adapter
                .transform_response(&body, &context)
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            let expected = &example["body"]["choices"][0]["message"];
            let text = expected["content"]
                .as_str()
                .or(expected["tool_calls"][0]["function"]["arguments"].as_str())
                .unwrap();
            assert_eq!(response.content, text, "{file}");
            assert_eq!(
                response.usage.input_tokens,
                example["body"]["usage"]["prompt_tokens"].as_u64().unwrap()
            );
            assert_eq!(response.model.as_deref(), example["body"]["model"].as_str());
            assert_eq!(
                response.request_id.as_deref(),
                example["body"]["id"].as_str()
            );
        }
        seen += 1;
    }
    assert!(
        seen >= 3,
        "found {seen} OpenAI examples in {}",
        crate::fixtures::path("fixtures/providers/examples").display()
    );
}

#[tokio::test]
async fn tool_mode_answers_come_from_the_call() {
    let server = MockServer::start().await;
    let body = json!({
        "id": "chatcmpl-t", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "response", "arguments": "{\"answer\":\"4\",\"state\":\"done\",\"confidence\":null}"}}]}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59}
    });
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .expect(1)
        .mount(&server)
        .await;
    let backend = OpenAi::new(ApiKey::new(KEY)).with_config(config(&server));
    let request = cases().remove(2).1;
    let response = backend.complete(&request).await.unwrap();
    let answer: Value = serde_json::from_str(&response.content).unwrap();
    assert_eq!(answer["answer"], "4");
    assert_eq!(response.finish_reason, FinishReason::Stop);
}

#[tokio::test]
async fn openrouter_reports_cost() {
    let server = MockServer::start().await;
    let mut body = completion("{\"answer\": \"4\"}");
    body["id"] = json!("gen-123");
    body["usage"] = json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                           "prompt_tokens_details": {"cached_tokens": 64},
                           "completion_tokens_details": {"reasoning_tokens": 8},
                           "cost": 0.000_42});
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .expect(1)
        .mount(&server)
        .await;
    let backend = OpenRouter::new(ApiKey::new(KEY)).with_config(config(&server));
    let response = backend.complete(&cases().remove(1).1).await.unwrap();
    let usage = response.usage;
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.cached_tokens,
            usage.reasoning_tokens
        ),
        (100, 20, 64, 8)
    );
    assert_eq!(usage.cost_usd, Some(0.000_42));
    assert_eq!(response.request_id.as_deref(), Some("gen-123"));
}

#[tokio::test]
async fn provider_errors_through_http() {
    let cases = [
        (
            404,
            json!({"error": {"message": "The model `gpt-9` does not exist", "type": "invalid_request_error", "code": "model_not_found"}}),
            "ModelNotFound",
        ),
        (
            400,
            json!({"error": {"message": "This model's maximum context length is 128000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}),
            "ContextLengthExceeded",
        ),
        (
            400,
            json!({"error": {"message": "Invalid schema for response_format 'response'", "type": "invalid_request_error", "code": null}}),
            "BadRequest",
        ),
        (
            429,
            json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}),
            "RateLimited",
        ),
        (
            503,
            json!({"error": {"message": "The server is overloaded", "type": "server_error"}}),
            "Overloaded",
        ),
    ];
    for (status, body, expected) in cases {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(CHAT))
            .respond_with(
                ResponseTemplate::new(status)
                    .insert_header("retry-after", "7")
                    .insert_header("x-request-id", "req_e")
                    .set_body_json(body),
            )
            .expect(1)
            .mount(&server)
            .await;
        let backend = OpenAi::new(ApiKey::new(KEY)).with_config(config(&server));
        let request = ChatRequest::new("gpt-9").message(Message::user("hi"));
        let error = backend.complete(&request).await.unwrap_err();
        assert_eq!(kind(&error), expected, "{status}: {error}");
        assert_eq!(error.context().request_id.as_deref(), Some("req_e"));
        match expected {
            "ModelNotFound" => assert!(
                error.to_string().contains("model `gpt-9` not found"),
                "{error}"
            ),
            "RateLimited" | "Overloaded" => {
                assert_eq!(error.retry_after(), Some(std::time::Duration::from_secs(7)));
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn refusals_through_http() {
    let server = MockServer::start().await;
    let body = json!({"id": "chatcmpl-r", "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": null, "refusal": "I can't help with that."}}]});
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .expect(1)
        .mount(&server)
        .await;
    let backend = OpenAi::new(ApiKey::new(KEY)).with_config(config(&server));
    let error = backend.complete(&cases().remove(1).1).await.unwrap_err();
    assert_eq!(kind(&error), "Refused");
}

/// Streamed, the call's arguments are the answer too, not the text beside them.
#[tokio::test]
async fn streamed_tool_calls_are_the_answer() {
    let server = MockServer::start().await;
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let mut body = String::new();
    body.push_str(&chunk(
        json!({"role": "assistant", "content": "I'll answer with the tool."}),
        Value::Null,
    ));
    body.push_str(&chunk(json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "response", "arguments": ""}}]}), Value::Null));
    body.push_str(&chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"answer\":"}}]}),
        Value::Null,
    ));
    body.push_str(&chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"4\"}"}}]}),
        Value::Null,
    ));
    body.push_str(&chunk(json!({}), json!("stop")));
    body.push_str("data: [DONE]\n\n");
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .expect(1)
        .mount(&server)
        .await;
    let backend = OpenAi::new(ApiKey::new(KEY)).with_config(config(&server));
    let request = cases().remove(2).1;
    let events: Vec<StreamEvent> = backend.stream(&request).map(Result::unwrap).collect().await;
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finish(FinishReason::Stop))
    );
    let mut assembler = claij_backends::Assembler::default();
    for event in events {
        assembler.push(event);
    }
    assert_eq!(assembler.finish().content, "{\"answer\":\"4\"}");
    let sent: Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
    assert_valid_request("openai_tool_stream", &sent);
}

#[test]
fn capabilities() {
    let openai = OpenAiAdapter::default();
    for model in [
        "gpt-4o-mini",
        "gpt-4.1",
        "gpt-5.1",
        "o3-mini",
        "openai/gpt-4o",
    ] {
        let c = openai.capabilities(model);
        assert_eq!(
            c.schema_dialect,
            Some(SchemaDialect::OpenAiStrict),
            "{model}"
        );
        assert!(c.native_json_schema && c.tools && c.streaming, "{model}");
    }
    for model in [
        "gpt-3.5-turbo",
        "gpt-4",
        "gpt-4-turbo",
        "gpt-4-0613",
        "o1-mini",
    ] {
        let c = openai.capabilities(model);
        assert!(
            !c.native_json_schema && c.schema_dialect.is_none(),
            "{model}"
        );
    }
    // Strict function calling on every model with function calling.
    for model in [
        "gpt-4o-mini",
        "gpt-3.5-turbo",
        "gpt-4",
        "gpt-4-turbo",
        "gpt-5",
    ] {
        let c = openai.capabilities(model);
        assert!(c.tools, "{model}");
        assert_eq!(c.strict_tools, Some(SchemaDialect::OpenAiStrict), "{model}");
    }
    // No function calling at all.
    for model in [
        "o1-mini",
        "o1-preview",
        "openai/o1-mini",
        "chatgpt-4o-latest",
        "gpt-4-0314",
    ] {
        let c = openai.capabilities(model);
        assert!(!c.tools && c.strict_tools.is_none(), "{model}");
    }
    let router = OpenRouterAdapter::default().capabilities("google/gemini-2.5-flash");
    assert_eq!(router.schema_dialect, Some(SchemaDialect::OpenAiStrict));
    assert_eq!(router.strict_tools, Some(SchemaDialect::OpenAiStrict));
    // OpenAI's models through OpenRouter: as OpenAI serves them.
    let router = OpenRouterAdapter::default();
    let o1_mini = router.capabilities("openai/o1-mini");
    assert!(!o1_mini.tools && !o1_mini.native_json_schema, "{o1_mini:?}");
    let turbo = router.capabilities("openai/gpt-4-turbo");
    assert!(!turbo.native_json_schema, "{turbo:?}");
    assert_eq!(turbo.strict_tools, Some(SchemaDialect::OpenAiStrict));
    let gpt5 = router.capabilities("openai/gpt-5");
    assert_eq!(gpt5.schema_dialect, Some(SchemaDialect::OpenAiStrict));
    assert!(gpt5.streaming);
    let local = CompatibleAdapter::default().capabilities("qwen3");
    assert_eq!(local.schema_dialect, Some(SchemaDialect::JsonSchema));
    assert!(local.tools && local.streaming);
    assert_eq!(local.strict_tools, None);
    let plain = CompatibleAdapter::default()
        .with_capabilities(claij_backends::Capabilities::prompted())
        .capabilities("old");
    assert!(!plain.native_json_schema);
}

#[test]
fn the_spec_check_rejects_what_openai_would() {
    let invalid = [
        json!({"model": "m", "messages": []}),
        json!({"model": "m", "messages": [{"role": "tool", "content": "42"}]}),
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
               "response_format": {"type": "json_schema"}}),
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
               "stop": ["a", "b", "c", "d", "e"]}),
    ];
    for body in invalid {
        assert!(request_schema().validate(&body).is_err(), "{body}");
    }
}

/// Tool mode as the pipeline sends it: strict tools in the strict dialect (optional properties
/// required and nullable, objects closed, dropped keywords reported) on every OpenAI model with
/// function calling, with or without native structured output.
#[test]
fn tool_mode_bodies_are_strict_compatible() {
    let adapter = OpenAiAdapter::default();
    for model in ["gpt-4-turbo", "gpt-4o"] {
        let (request, losses) = super::models::tool_request(adapter.capabilities(model), model);
        let body = adapter
            .transform_request(&request, false)
            .unwrap()
            .json()
            .unwrap();
        assert_valid_request(model, &body);
        let function = &body["tools"][0]["function"];
        assert_eq!(function["strict"], true, "{model}");
        let parameters = &function["parameters"];
        assert_eq!(parameters["additionalProperties"], false, "{model}");
        assert_eq!(
            parameters["required"],
            json!(["answer", "state", "note"]),
            "{model}"
        );
        assert_eq!(
            parameters["properties"]["note"]["type"],
            json!(["string", "null"])
        );
        let keywords: Vec<&str> = losses.iter().map(|l| l.keyword.as_str()).collect();
        assert!(keywords.contains(&"minLength"), "{model}: {keywords:?}");
        insta::assert_json_snapshot!(format!("openai_tool_{model}"), body);
    }
}

/// Without strict tools (a compatible server by default) the schema goes as written, not strict.
#[test]
fn tools_without_strict_support_are_sent_non_strict() {
    let adapter = CompatibleAdapter::default();
    let (request, losses) = super::models::tool_request(adapter.capabilities("qwen3"), "qwen3");
    let body = adapter
        .transform_request(&request, false)
        .unwrap()
        .json()
        .unwrap();
    assert_valid_request("compatible", &body);
    assert_eq!(body["tools"][0]["function"]["strict"], false);
    assert_eq!(
        body["tools"][0]["function"]["parameters"],
        super::models::loose_schema()
    );
    assert!(losses.is_empty(), "{losses:?}");
}

/// o1-mini and o1-preview take no `system` (or `developer`) message: the instructions open the
/// first user message, marked off; o1, o3, o4-mini and GPT-5 take a `developer` message.
#[test]
fn instructions_go_where_the_model_takes_them() {
    let request = |model: &str| {
        ChatRequest::new(model)
            .system("Answer in JSON.")
            .message(Message::user("What is 2+2?"))
            .message(Message::assistant("{\"answer\": \"4\"}"))
            .message(Message::user("And 3+3?"))
    };
    let openai = OpenAiAdapter::default();
    for (name, model) in [("openai_o1_mini", "o1-mini"), ("openai_developer", "gpt-5")] {
        let body = openai
            .transform_request(&request(model), false)
            .unwrap()
            .json()
            .unwrap();
        assert_valid_request(name, &body);
        insta::assert_json_snapshot!(name, body);
    }
    let roles = |adapter: &dyn Adapter, model: &str| -> Vec<String> {
        let body = adapter
            .transform_request(&request(model), false)
            .unwrap()
            .json()
            .unwrap();
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap().to_owned())
            .collect()
    };
    let router = OpenRouterAdapter::default();
    assert_eq!(
        roles(&router, "openai/o1-mini"),
        ["user", "assistant", "user"]
    );
    assert_eq!(
        roles(&router, "openai/o3"),
        ["developer", "user", "assistant", "user"]
    );
    assert_eq!(
        roles(&router, "google/gemini-2.5-flash"),
        ["system", "user", "assistant", "user"]
    );
    assert_eq!(
        roles(&CompatibleAdapter::default(), "o1-preview"),
        ["user", "assistant", "user"]
    );
    // System messages in the conversation go the same way; a conversation opening with the model
    // gets the instructions as a user message of their own.
    let mut odd = ChatRequest::new("o1-mini")
        .system("Be brief.")
        .message(Message::assistant("Hello."))
        .message(Message::system("Use metric units."));
    let body = openai
        .transform_request(&odd, false)
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "<instructions>\nBe brief.\n</instructions>"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "<instructions>\nUse metric units.\n</instructions>"}
        ])
    );
    odd.model = "o4-mini".into();
    let body = openai
        .transform_request(&odd, false)
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(body["messages"][0]["role"], "developer");
    assert_eq!(body["messages"][2]["role"], "developer");
}

/// The documented function-calling response (`examples/openai-2.json`) with its message replaced.
fn documented_tool_reply(message: Value) -> Vec<u8> {
    let example = crate::fixtures::json("fixtures/providers/examples/openai-2.json");
    let mut body = example["body"].clone();
    body["choices"][0]["message"] = message;
    serde_json::to_vec(&body).unwrap()
}

#[track_caller]
fn check_tool_reply(message: Value, expected: &str) {
    let body = documented_tool_reply(message.clone());
    let context = ErrorContext::new("openai").with_status(200);
    let r = OpenAiAdapter::default()
        .transform_response(&body, &context)
        .unwrap();
    assert_eq!(r.content, expected, "{message}");
    assert_eq!(r.finish_reason, FinishReason::ToolCalls, "{message}");
}

#[test]
fn a_tool_call_is_the_answer_even_beside_text() {
    let call =
        |function: Value| json!([{"id": "call_1", "type": "function", "function": function}]);
    // Text and the forced call together (Claude through OpenRouter explains itself first).
    check_tool_reply(
        json!({"role": "assistant", "content": "I'll answer with the tool.",
               "tool_calls": call(json!({"name": "response", "arguments": "{\"answer\":\"4\"}"}))}),
        "{\"answer\":\"4\"}",
    );
    // Content as parts beside the call.
    check_tool_reply(
        json!({"role": "assistant", "content": [{"type": "text", "text": "Sure."}],
               "tool_calls": call(json!({"name": "response", "arguments": "{\"a\":1}"}))}),
        "{\"a\":1}",
    );
    // No `arguments` at all (OpenRouter relaying a Claude call without input), empty, blank, null.
    check_tool_reply(
        json!({"role": "assistant", "content": "", "tool_calls": call(json!({"name": "response"}))}),
        "{}",
    );
    check_tool_reply(
        json!({"role": "assistant", "content": null,
               "tool_calls": call(json!({"name": "response", "arguments": ""}))}),
        "{}",
    );
    check_tool_reply(
        json!({"role": "assistant", "tool_calls": call(json!({"name": "response", "arguments": "  "}))}),
        "{}",
    );
    check_tool_reply(
        json!({"role": "assistant", "tool_calls": call(json!({"name": "response", "arguments": null}))}),
        "{}",
    );
    // Some compatible servers send the arguments as an object.
    check_tool_reply(
        json!({"role": "assistant",
               "tool_calls": call(json!({"name": "response", "arguments": {"answer": "4"}}))}),
        "{\"answer\":\"4\"}",
    );
    // An empty list of calls: the text is the answer.
    check_tool_reply(
        json!({"role": "assistant", "content": "{\"b\":2}", "tool_calls": []}),
        "{\"b\":2}",
    );
}

#[test]
fn streamed_tool_arguments_as_objects_are_text() {
    let events = OpenAiAdapter::default()
        .stream_event(
            None,
            r#"{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":{"a":1}}}]}}]}"#,
            &ErrorContext::new("openai"),
        )
        .unwrap();
    assert_eq!(events, vec![StreamEvent::ToolInput("{\"a\":1}".into())]);
}

/// OpenAI's o-series reject `parallel_tool_calls` (400 `unsupported_parameter`): tool mode leaves it
/// out for them, through OpenRouter too.
#[test]
fn o_series_tool_requests_leave_out_parallel_tool_calls() {
    let openai = OpenAiAdapter::default();
    let router = OpenRouterAdapter::default();
    let cases: [(&dyn Adapter, &str, bool); 6] = [
        (&openai, "gpt-4o", true),
        (&openai, "gpt-5", true),
        (&openai, "o3-mini", false),
        (&openai, "o4-mini-2025-04-16", false),
        (&router, "openai/o3", false),
        (&router, "anthropic/claude-sonnet-4.5", true),
    ];
    for (adapter, model, parallel) in cases {
        let (request, _) = super::models::tool_request(adapter.capabilities(model), model);
        let body = adapter
            .transform_request(&request, false)
            .unwrap()
            .json()
            .unwrap();
        assert_valid_request(model, &body);
        assert_eq!(
            body.get("parallel_tool_calls").is_some(),
            parallel,
            "{model}: {body}"
        );
    }
}

/// OpenAI's reasoning models answer 400 `unsupported_parameter` to a `temperature`: the request
/// sent over HTTP leaves it out for the o-series and the GPT-5 family, bare and through OpenRouter,
/// and keeps it for every other model.
#[tokio::test]
async fn reasoning_models_are_sent_no_temperature() {
    let cases = [
        ("openai", "o3-mini", false),
        ("openai", "o1", false),
        ("openai", "o4-mini-2025-04-16", false),
        ("openai", "gpt-5-mini", false),
        ("openai", "gpt-5-chat-latest", true),
        ("openai", "gpt-4o", true),
        ("openrouter", "openai/o3", false),
        ("openrouter", "openai/gpt-5.1", false),
        ("openrouter", "anthropic/claude-sonnet-4.5", true),
    ];
    for (provider, model, sent) in cases {
        let server = MockServer::start().await;
        let request = ChatRequest::new(model)
            .message(Message::user("hi"))
            .temperature(0.2);
        let (body, _) = if provider == "openai" {
            let backend = OpenAi::new(ApiKey::new(KEY)).with_config(config(&server));
            sent_body(&server, &backend, &request, false).await
        } else {
            let backend = OpenRouter::new(ApiKey::new(KEY)).with_config(config(&server));
            sent_body(&server, &backend, &request, false).await
        };
        assert_eq!(body.get("temperature").is_some(), sent, "{model}: {body}");
        if sent {
            assert_eq!(body["temperature"], 0.2, "{model}");
        }
    }
}
