//! Tests: OpenRouter's model list (`GET /api/v1/models`, the documented body in
//! `fixtures/providers/examples/openrouter-models.json`) served by wiremock, fetched through the
//! backend's client and limits, decides each listed model's native output, strict tools, tools and
//! temperature; the requests sent follow it.

#![cfg(feature = "openrouter")]

use std::sync::Arc;

use claij_backends::http::{HttpConfig, RetryPolicy};
use claij_backends::openai::{ModelCatalog, OpenRouter};
use claij_backends::{ApiKey, Backend, ChatRequest, Message, OutputMode, SchemaDialect};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::http::{KEY, completion, kind};

/// The documented-shape body of the models endpoint.
fn models_body() -> Value {
    super::fixtures::json("fixtures/providers/examples/openrouter-models.json")["body"].take()
}

fn backend(server: &MockServer) -> OpenRouter {
    OpenRouter::new(ApiKey::new(KEY)).with_config(
        HttpConfig::new(format!("{}/api/v1", server.uri())).with_retry(RetryPolicy::none()),
    )
}

/// Mounts the model list, once, for a caller with the key.
async fn serve_models(server: &MockServer) {
    Mock::given(method("GET"))
        .and(path("/api/v1/models"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(models_body()))
        .expect(1)
        .mount(server)
        .await;
}

/// The backend with the catalog it fetched from `server`.
async fn with_catalog(server: &MockServer) -> OpenRouter {
    serve_models(server).await;
    let plain = backend(server);
    let body = plain.fetch_catalog().await.unwrap();
    let catalog = ModelCatalog::from_json(&body).unwrap();
    assert_eq!(catalog.len(), 4);
    backend(server).with_catalog(Arc::new(catalog))
}

#[tokio::test]
async fn the_model_list_decides_native_strict_and_tools() {
    let server = MockServer::start().await;
    let backend = with_catalog(&server).await;
    // Structured outputs and tools: native, strict tools.
    let flash = backend.capabilities("google/gemini-2.5-flash");
    assert_eq!(flash.schema_dialect, Some(SchemaDialect::OpenAiStrict));
    assert_eq!(flash.strict_tools, Some(SchemaDialect::OpenAiStrict));
    assert!(!flash.rejects_temperature);
    assert_eq!(flash.context_window, Some(1_048_576));
    // Tools and JSON mode only: no native schema, tools non-strict (the guess said both strict).
    let qwen = backend.capabilities("qwen/qwen-2.5-7b-instruct");
    assert!(
        !qwen.native_json_schema && qwen.schema_dialect.is_none(),
        "{qwen:?}"
    );
    assert!(qwen.tools && qwen.strict_tools.is_none(), "{qwen:?}");
    let target = qwen.schema_target(OutputMode::Tool);
    assert_eq!(
        (target.dialect, target.strict),
        (SchemaDialect::JsonSchema, false)
    );
    assert_eq!(
        qwen.context_window,
        Some(32_768),
        "the top provider's window"
    );
    // A reasoning model: native and tools, no temperature.
    let o3 = backend.capabilities("openai/o3-mini");
    assert!(
        o3.native_json_schema && o3.tools && o3.rejects_temperature,
        "{o3:?}"
    );
    // Neither: the schema goes in the prompt, and tool mode is not offered.
    let plain = backend.capabilities("acme/no-tools-chat");
    assert!(!plain.native_json_schema && !plain.tools, "{plain:?}");
    // A variant of a listed model is that model; an unlisted one keeps the guess.
    let free = backend.capabilities("qwen/qwen-2.5-7b-instruct:free");
    assert!(free.tools && free.strict_tools.is_none(), "{free:?}");
    let guessed = backend.capabilities("mistralai/mistral-large");
    assert_eq!(guessed.strict_tools, Some(SchemaDialect::OpenAiStrict));
    // Without the list, every non-OpenAI model was guessed native and strict.
    let unlisted = self::backend(&server).capabilities("acme/no-tools-chat");
    assert!(unlisted.native_json_schema && unlisted.tools);
}

/// The requests sent follow the list: a tool-mode request for qwen carries a non-strict tool, and
/// the temperature goes to the model that takes one and not to the one that does not.
#[tokio::test]
async fn requests_follow_the_model_list() {
    let server = MockServer::start().await;
    let backend = with_catalog(&server).await;
    Mock::given(method("POST"))
        .and(path("/api/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion("{}")))
        .mount(&server)
        .await;
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}},
                        "required": ["a"], "additionalProperties": false});
    for (model, temperature_sent) in [
        ("qwen/qwen-2.5-7b-instruct", true),
        ("openai/o3-mini", false),
        ("acme/no-tools-chat", true),
    ] {
        let capabilities = backend.capabilities(model);
        let mut request = ChatRequest::new(model)
            .message(Message::user("hi"))
            .temperature(0.3);
        if capabilities.tools {
            let target = capabilities.schema_target(OutputMode::Tool);
            request = request.structured("answer", schema.clone(), target.strict);
            if let Some(structured) = request.structured_output.as_mut() {
                structured.mode = OutputMode::Tool;
            }
        }
        backend.complete(&request).await.unwrap();
        let sent = server.received_requests().await.unwrap();
        let body: Value = serde_json::from_slice(&sent.last().unwrap().body).unwrap();
        assert_eq!(body["model"], model);
        assert_eq!(
            body.get("temperature").is_some(),
            temperature_sent,
            "{model}: {body}"
        );
        match model {
            "qwen/qwen-2.5-7b-instruct" => {
                assert_eq!(body["tools"][0]["function"]["strict"], false, "{body}")
            }
            "openai/o3-mini" => {
                assert_eq!(body["tools"][0]["function"]["strict"], true, "{body}")
            }
            _ => assert!(body.get("tools").is_none(), "{body}"),
        }
    }
}

/// The list is read under the backend's limits, and its failures are typed errors.
#[tokio::test]
async fn fetching_the_list_fails_typed() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/models"))
        .respond_with(ResponseTemplate::new(200).set_body_json(models_body()))
        .mount(&server)
        .await;
    let small = OpenRouter::new(ApiKey::new(KEY)).with_config(
        HttpConfig::new(format!("{}/api/v1", server.uri()))
            .with_retry(RetryPolicy::none())
            .with_max_body_bytes(100),
    );
    let error = small.fetch_catalog().await.unwrap_err();
    assert_eq!(kind(&error), "BodyTooLarge", "{error}");

    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/api/v1/models"))
        .respond_with(
            ResponseTemplate::new(401).set_body_json(
                json!({"error": {"code": 401, "message": "No auth credentials found"}}),
            ),
        )
        .mount(&server)
        .await;
    let error = backend(&server).fetch_catalog().await.unwrap_err();
    assert_eq!(kind(&error), "Authentication", "{error}");
    assert!(!error.to_string().contains(KEY));
    // A body that is not the list is the parser's error, not a panic.
    assert!(ModelCatalog::from_json(b"{\"data\": [{\"id\": 1}]").is_err());
    assert!(ModelCatalog::from_json(b"<html>").is_err());
}

/// From synchronous code inside a runtime (as `claij` opens a backend): on a thread of its own.
#[tokio::test]
async fn the_list_is_fetched_from_synchronous_code() {
    let server = MockServer::start().await;
    serve_models(&server).await;
    let body = backend(&server).get_blocking("/models").unwrap();
    let catalog = ModelCatalog::from_json(&body).unwrap();
    assert!(catalog.supported_parameters("openai/o3-mini").is_some());
}
