//! Tests: OpenAI-compatible servers' structured-output dialects (request bodies snapshotted) and
//! [`StructuredFallback`] against wiremock: a rejected `json_schema` falls back once, is remembered,
//! and is not retried.

#![cfg(feature = "openai")]

use std::sync::{Arc, Mutex};

use claij_backends::openai::{
    CompatibleAdapter, FallbackMemory, OpenAiCompatible, Remembered, StructuredDialect,
    StructuredFallback, memory_key,
};
use claij_backends::{Adapter, Backend, ChatRequest, Error, Message, OutputMode};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockBuilder, MockServer, ResponseTemplate};

use super::http::{CHAT, completion, fast_config, kind};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": false
    })
}

fn native_request() -> ChatRequest {
    ChatRequest::new("smol")
        .system("Answer briefly.")
        .message(Message::user("What is 2+2?"))
        .structured("response", schema(), true)
}

/// What llama-cpp-python 0.3.36's server answers to `response_format.type = "json_schema"`.
fn llama_cpp_python_rejection() -> ResponseTemplate {
    ResponseTemplate::new(500).set_body_json(json!({"error": {
        "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"/venv/lib/python3.11/site-packages/llama_cpp/server/app.py\", line 376, in create_chat_completion\n    POST /v1/chat/completions",
        "type": "internal_server_error", "param": null, "code": null
    }}))
}

/// A server that knows neither `json_schema` nor `json_object` (the message names neither form
/// it accepts).
fn generic_rejection() -> ResponseTemplate {
    ResponseTemplate::new(500).set_body_json(json!({"error": {
        "message": "response_format is not supported by this server",
        "type": "internal_server_error"
    }}))
}

/// A completion answering through a tool call.
fn tool_completion(arguments: &str) -> Value {
    json!({
        "id": "chatcmpl-tool", "object": "chat.completion", "created": 1, "model": "smol",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "response", "arguments": arguments}}]}}]
    })
}

fn compatible(server: &MockServer) -> OpenAiCompatible {
    OpenAiCompatible::new(format!("{}/v1", server.uri()))
        .with_config(fast_config(&server.uri()))
        .with_provider("llama.cpp")
}

fn json_schema_requests() -> MockBuilder {
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(
            json!({"response_format": {"type": "json_schema"}}),
        ))
}

fn tool_requests() -> MockBuilder {
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(
            json!({"tool_choice": {"type": "function"}}),
        ))
}

#[track_caller]
fn check_body(dialect: StructuredDialect, mode: OutputMode) -> Value {
    let mut request = native_request();
    if let Some(structured) = &mut request.structured_output {
        structured.mode = mode;
    }
    let adapter = CompatibleAdapter::default().with_structured_output(dialect);
    adapter
        .transform_request(&request, false)
        .unwrap()
        .json()
        .unwrap()
}

#[test]
fn dialect_request_bodies() {
    for dialect in StructuredDialect::ALL {
        let body = check_body(dialect, OutputMode::Native);
        insta::assert_json_snapshot!(format!("dialect_native_{dialect}"), body);
    }
    // A tool request is the same in every dialect.
    let tool = check_body(StructuredDialect::JsonSchema, OutputMode::Tool);
    for dialect in StructuredDialect::ALL {
        assert_eq!(check_body(dialect, OutputMode::Tool), tool, "{dialect}");
    }
}

#[test]
fn dialects_set_capabilities() {
    let check = |dialect: StructuredDialect, native: bool, tools: bool| {
        let caps = CompatibleAdapter::default()
            .with_structured_output(dialect)
            .capabilities("m");
        assert_eq!(
            (caps.native_json_schema, caps.tools),
            (native, tools),
            "{dialect}"
        );
    };
    check(StructuredDialect::JsonSchema, true, true);
    check(StructuredDialect::JsonObjectSchema, true, true);
    check(StructuredDialect::OllamaFormat, true, true);
    check(StructuredDialect::Tools, false, true);
    check(StructuredDialect::Prompted, false, false);
    for dialect in StructuredDialect::ALL {
        assert_eq!(
            dialect.to_string().parse::<StructuredDialect>(),
            Ok(dialect)
        );
    }
}

#[test]
fn memory_keys_drop_credentials_and_queries() {
    let check = |url: &str, key: &str| assert_eq!(memory_key(url), key, "{url}");
    check("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1");
    check("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1");
    check(
        "https://user:secret@host.example/v1?key=k#x",
        "https://host.example/v1",
    );
    check("http://host:11434", "http://host:11434");
}

#[tokio::test]
async fn a_rejected_500_is_not_retried() {
    let server = MockServer::start().await;
    json_schema_requests()
        .respond_with(generic_rejection())
        .expect(1)
        .mount(&server)
        .await;
    let error = compatible(&server)
        .complete(&native_request())
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "BadRequest", "{error}");
    assert!(error.to_string().contains("response_format"), "{error}");
}

#[tokio::test]
async fn json_schema_rejected_falls_back_to_tools_once_per_process() {
    let server = MockServer::start().await;
    json_schema_requests()
        .respond_with(generic_rejection())
        .expect(1)
        .mount(&server)
        .await;
    tool_requests()
        .respond_with(
            ResponseTemplate::new(200).set_body_json(tool_completion(r#"{"answer":"4"}"#)),
        )
        .expect(2)
        .mount(&server)
        .await;
    let learned = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&learned);
    let memory = Arc::new(FallbackMemory::new().with_listener(move |provider, entry| {
        seen.lock()
            .unwrap()
            .push(format!("{provider} {} {}", entry.model, entry.dialect));
    }));
    let backend = StructuredFallback::new(compatible(&server), Arc::clone(&memory));
    assert!(backend.capabilities("smol").native_json_schema);
    for _ in 0..2 {
        let response = backend.complete(&native_request()).await.unwrap();
        assert_eq!(response.content, r#"{"answer":"4"}"#);
    }
    assert_eq!(*learned.lock().unwrap(), ["llama.cpp smol tools"]);
    assert!(!backend.capabilities("smol").native_json_schema);
    assert!(backend.capabilities("smol").tools);
    assert_eq!(
        memory.entries(),
        [Remembered {
            base_url: format!("{}/v1", server.uri()),
            model: "smol".to_owned(),
            dialect: StructuredDialect::Tools,
        }]
    );
    // A second backend sharing the memory (a second `claij ask` of one process) asks tools directly.
    let again = StructuredFallback::new(compatible(&server), memory);
    assert!(!again.capabilities("smol").native_json_schema);
}

#[tokio::test]
async fn llama_cpp_python_gets_json_object_with_schema() {
    let server = MockServer::start().await;
    json_schema_requests()
        .respond_with(llama_cpp_python_rejection())
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(
            json!({"response_format": {"type": "json_object", "schema": schema()}}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(r#"{"answer":"4"}"#)))
        .expect(2)
        .mount(&server)
        .await;
    let memory = Arc::new(FallbackMemory::new());
    let backend = StructuredFallback::new(compatible(&server), Arc::clone(&memory));
    // Explicitly native: the json_object dialect is still native, so it is allowed.
    backend.set_mode_fallback(false);
    for _ in 0..2 {
        let response = backend.complete(&native_request()).await.unwrap();
        assert_eq!(response.content, r#"{"answer":"4"}"#);
    }
    assert_eq!(
        memory.get(&format!("{}/v1", server.uri()), "smol"),
        Some(StructuredDialect::JsonObjectSchema)
    );
    assert!(backend.capabilities("smol").native_json_schema);
}

#[tokio::test]
async fn explicit_native_does_not_fall_back_to_tools() {
    let server = MockServer::start().await;
    json_schema_requests()
        .respond_with(generic_rejection())
        .expect(1)
        .mount(&server)
        .await;
    tool_requests()
        .respond_with(ResponseTemplate::new(200).set_body_json(tool_completion("{}")))
        .expect(0)
        .mount(&server)
        .await;
    let memory = Arc::new(FallbackMemory::new());
    let backend = StructuredFallback::new(compatible(&server), Arc::clone(&memory));
    backend.set_mode_fallback(false);
    let error = backend.complete(&native_request()).await.unwrap_err();
    assert!(matches!(error, Error::BadRequest { .. }), "{error}");
    assert!(memory.entries().is_empty());
}

#[tokio::test]
async fn no_tools_falls_back_to_the_prompt() {
    let server = MockServer::start().await;
    json_schema_requests()
        .respond_with(generic_rejection())
        .expect(1)
        .mount(&server)
        .await;
    tool_requests()
        .respond_with(ResponseTemplate::new(400).set_body_json(
            json!({"error": {"message": "tool_choice is not supported", "type": "invalid_request_error"}}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let prompted = Arc::new(Mutex::new(None::<Value>));
    let captured = Arc::clone(&prompted);
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(move |request: &wiremock::Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            let plain = body.get("response_format").is_none() && body.get("tools").is_none();
            if plain {
                *captured.lock().unwrap() = Some(body);
            }
            plain
        })
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(r#"{"answer":"4"}"#)))
        .expect(1)
        .mount(&server)
        .await;
    let memory = Arc::new(FallbackMemory::new());
    let backend = StructuredFallback::new(compatible(&server), Arc::clone(&memory));
    let response = backend.complete(&native_request()).await.unwrap();
    assert_eq!(response.content, r#"{"answer":"4"}"#);
    let capabilities = backend.capabilities("smol");
    assert!(!capabilities.native_json_schema && !capabilities.tools);
    let body = prompted.lock().unwrap().clone().unwrap();
    insta::assert_json_snapshot!("fallback_prompted_body", body);
}

#[tokio::test]
async fn other_failures_are_not_fallen_back_from() {
    let server = MockServer::start().await;
    json_schema_requests()
        .respond_with(ResponseTemplate::new(401).set_body_json(
            json!({"error": {"message": "bad key", "type": "invalid_request_error"}}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    tool_requests()
        .respond_with(ResponseTemplate::new(200).set_body_json(tool_completion("{}")))
        .expect(0)
        .mount(&server)
        .await;
    let memory = Arc::new(FallbackMemory::new());
    let backend = StructuredFallback::new(compatible(&server), Arc::clone(&memory));
    let error = backend.complete(&native_request()).await.unwrap_err();
    assert_eq!(kind(&error), "Authentication", "{error}");
    assert!(memory.entries().is_empty());
}

#[tokio::test]
async fn remembered_entries_seed_a_new_process() {
    let server = MockServer::start().await;
    json_schema_requests()
        .respond_with(generic_rejection())
        .expect(0)
        .mount(&server)
        .await;
    tool_requests()
        .respond_with(
            ResponseTemplate::new(200).set_body_json(tool_completion(r#"{"answer":"4"}"#)),
        )
        .expect(1)
        .mount(&server)
        .await;
    let memory = Arc::new(FallbackMemory::new().with_entries([Remembered {
        base_url: format!("{}/v1/", server.uri()),
        model: "smol".to_owned(),
        dialect: StructuredDialect::Tools,
    }]));
    let backend = StructuredFallback::new(compatible(&server), memory);
    // Even a native request (a retry of a call that began before the memory knew) goes as a tool.
    let response = backend.complete(&native_request()).await.unwrap();
    assert_eq!(response.content, r#"{"answer":"4"}"#);
}
