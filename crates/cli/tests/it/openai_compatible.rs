//! `claij ask` against a provider of the configuration's own (`kind = "openai-compatible"`), mocked:
//! no key needed, the configured structured-output dialect on the wire, and a rejected
//! `json_schema` falling back once and remembered across runs in the claij cache.

use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockBuilder, MockServer, ResponseTemplate};

use super::openrouter::reply;
use super::{BASE, Files, Run, claij_env};

/// The chat completions path under the configured base URL.
const CHAT: &str = "/v1/chat/completions";
const VALID: &str = r#"{"answer": "4", "state": "done"}"#;

/// A configuration with `mylocal` at `server`, plus `extra` lines in its entry.
fn config(server: &MockServer, extra: &str) -> String {
    format!(
        "[providers.mylocal]\nkind = \"openai-compatible\"\nbase_url = \"{}/v1\"\n{extra}",
        server.uri()
    )
}

/// `claij ask --llm mylocal:smol` with the files' configuration and schema, the claij cache in the
/// files' directory, and no provider key in the environment.
fn ask(files: &Files, extra: &[&str]) -> Run {
    let config = files.path("config.toml");
    let schema = files.path("schema.json");
    let cache = files.path("cache");
    let mut args = vec![
        "ask",
        "What is 2+2?",
        "--schema",
        &schema,
        "--llm",
        "mylocal:smol",
    ];
    args.extend_from_slice(extra);
    claij_env(
        &args,
        "",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("XDG_CACHE_HOME", Some(cache.as_str())),
            ("OPENROUTER_API_KEY", None),
            ("OPENAI_API_KEY", None),
        ],
    )
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

/// A 200 answering through a call of the forced tool.
fn tool_reply(arguments: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-tool", "object": "chat.completion", "created": 1, "model": "smol",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "response", "arguments": arguments}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    }))
}

/// A server that does not take `response_format` (its 500 names it, as llama-cpp-python's does).
fn rejection() -> ResponseTemplate {
    ResponseTemplate::new(500).set_body_json(json!({"error": {
        "message": "response_format is not supported", "type": "internal_server_error"}}))
}

#[track_caller]
fn assert_valid(run: &Run) {
    assert_eq!(run.code, 0, "{}", run.stderr);
    let value: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(value, json!({"answer": "4", "state": "done"}));
}

#[tokio::test]
async fn a_keyless_server_of_your_own() {
    let server = MockServer::start().await;
    json_schema_requests()
        .and(body_partial_json(json!({"model": "smol"})))
        .respond_with(reply(VALID))
        .expect(1)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &config(&server, "")), ("schema.json", BASE)]);
    let run = ask(&files, &[]);
    assert_valid(&run);
    let received = server.received_requests().await.unwrap();
    assert!(
        received[0].headers.get("authorization").is_none(),
        "{:?}",
        received[0].headers
    );
}

#[tokio::test]
async fn the_key_is_sent_when_its_variable_is_set() {
    let server = MockServer::start().await;
    json_schema_requests()
        .and(wiremock::matchers::header(
            "authorization",
            "Bearer local-key",
        ))
        .respond_with(reply(VALID))
        .expect(1)
        .mount(&server)
        .await;
    let text = config(&server, "api_key_env = \"CLAIJ_TEST_LOCAL_KEY\"\n");
    let files = Files::new(&[("config.toml", &text), ("schema.json", BASE)]);
    let run = claij_env(
        &[
            "ask",
            "What is 2+2?",
            "--schema",
            &files.path("schema.json"),
            "--llm",
            "mylocal:smol",
        ],
        "",
        &[
            ("CLAIJ_CONFIG", Some(files.path("config.toml").as_str())),
            ("XDG_CACHE_HOME", Some(files.path("cache").as_str())),
            ("CLAIJ_TEST_LOCAL_KEY", Some("local-key")),
        ],
    );
    assert_valid(&run);
    assert!(!run.stderr.contains("local-key"), "{}", run.stderr);
}

#[tokio::test]
async fn a_rejected_json_schema_falls_back_once_and_is_remembered_across_runs() {
    let server = MockServer::start().await;
    json_schema_requests()
        .respond_with(rejection())
        .expect(1)
        .mount(&server)
        .await;
    tool_requests()
        .respond_with(tool_reply(VALID))
        .expect(2)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &config(&server, "")), ("schema.json", BASE)]);
    let first = ask(&files, &[]);
    assert_valid(&first);
    let cache = files.path("cache/claij/structured-output.json");
    assert!(
        first.stderr.contains(&format!(
            "mylocal rejected native structured output (json_schema) for smol: using tools from \
             now on (remembered in {cache}; set structured_output in [providers.mylocal] to choose)"
        )),
        "{}",
        first.stderr
    );
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    assert_eq!(
        saved,
        json!({"version": 1, "servers": [{"base_url": format!("{}/v1", server.uri()),
                                          "model": "smol", "structured_output": "tools"}]})
    );
    // A second process reads the lesson: straight to the tool, and nothing more to say.
    let second = ask(&files, &[]);
    assert_valid(&second);
    assert!(!second.stderr.contains("rejected"), "{}", second.stderr);
}

#[tokio::test]
async fn explicit_native_mode_does_not_fall_back_to_a_tool() {
    let server = MockServer::start().await;
    json_schema_requests()
        .respond_with(rejection())
        .expect(1)
        .mount(&server)
        .await;
    tool_requests()
        .respond_with(tool_reply(VALID))
        .expect(0)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &config(&server, "")), ("schema.json", BASE)]);
    let run = ask(&files, &["--mode", "native"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stderr
            .contains("mylocal (HTTP 500): bad request: response_format is not supported"),
        "{}",
        run.stderr
    );
    assert!(!std::path::Path::new(&files.path("cache/claij/structured-output.json")).exists());
}

#[tokio::test]
async fn the_configured_dialect_goes_on_the_wire() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(
            json!({"response_format": {"type": "json_object"}}),
        ))
        .respond_with(reply(VALID))
        .expect(1)
        .mount(&server)
        .await;
    let text = config(&server, "structured_output = \"json_object_schema\"\n");
    let files = Files::new(&[("config.toml", &text), ("schema.json", BASE)]);
    assert_valid(&ask(&files, &[]));
    let received = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&received[0].body).unwrap();
    assert_eq!(
        body["response_format"]["schema"]["required"],
        json!(["answer", "state"])
    );
}

#[tokio::test]
async fn structured_output_tools_makes_auto_mode_force_a_tool() {
    let server = MockServer::start().await;
    tool_requests()
        .respond_with(tool_reply(VALID))
        .expect(1)
        .mount(&server)
        .await;
    let text = config(&server, "structured_output = \"tools\"\n");
    let files = Files::new(&[("config.toml", &text), ("schema.json", BASE)]);
    assert_valid(&ask(&files, &[]));
}

/// Arguments of the forced tool that are not JSON (single quotes, a trailing comma: what some models
/// write in non-strict tool calls) are repaired like any reply, on the first attempt, not refused.
#[tokio::test]
async fn malformed_arguments_of_the_forced_tool_are_repaired() {
    let server = MockServer::start().await;
    tool_requests()
        .respond_with(tool_reply("{'answer': '4', 'state': 'done',}"))
        .expect(1)
        .mount(&server)
        .await;
    let text = config(&server, "structured_output = \"tools\"\n");
    let files = Files::new(&[("config.toml", &text), ("schema.json", BASE)]);
    let run = ask(&files, &[]);
    assert_valid(&run);
    assert!(run.stderr.contains("attempt 1: valid"), "{}", run.stderr);
}
