//! `claij suite` (hidden), which `cargo xtask integration` drives: the suites against a mock
//! OpenRouter (through `CLAIJ_CONFIG`), one JSON record per test on stdout.

use std::path::Path;

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::openrouter::{CHAT, reply};
use super::{Files, Run, assert_one_line_error, claij, claij_env};

const KEY: &str = "sk-or-v1-suite-secret-0123456789";
/// Serves `replies` in order, each once.
async fn mock(replies: &[&str]) -> MockServer {
    let server = MockServer::start().await;
    for content in replies {
        Mock::given(method("POST"))
            .and(path(CHAT))
            .respond_with(reply(content))
            .up_to_n_times(1)
            .expect(1)
            .mount(&server)
            .await;
    }
    server
}

/// `claij suite run --llm gemini-flash --suite SUITE` against `server`.
fn run_suite(server: &MockServer, suite: &str) -> (Run, Vec<Value>) {
    run_suite_with(server, suite, "")
}

/// [`run_suite`] with `extra` appended to the configuration file.
fn run_suite_with(server: &MockServer, suite: &str, extra: &str) -> (Run, Vec<Value>) {
    let config = format!("{}{extra}", super::openrouter::config(server));
    let files = Files::new(&[("config.toml", &config)]);
    let config = files.path("config.toml");
    let run = claij_env(
        &[
            "suite",
            "run",
            "--llm",
            "gemini-flash",
            "--suite",
            suite,
            "--json-lines",
        ],
        "",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some(KEY)),
        ],
    );
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
    let records = run
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (run, records)
}

#[track_caller]
fn check_record(record: &Value, expected: Value) {
    let expected = expected.as_object().unwrap();
    for (key, value) in expected {
        assert_eq!(&record[key], value, "`{key}` in {record}");
    }
    let keys: Vec<&str> = record
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        [
            "attempts",
            "cost",
            "detail",
            "elapsed_ms",
            "mode",
            "model",
            "passed",
            "retries",
            "suite",
            "test",
            "tokens_in",
            "tokens_out",
            "valid_first_try"
        ]
    );
}

#[tokio::test]
async fn the_retry_budget_comes_from_the_configuration_defaults() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply("no JSON at all"))
        .mount(&server)
        .await;
    let (run, records) = run_suite_with(&server, "retry", "[defaults]\nmax_retries = 0\n");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(records.len(), 3);
    for record in &records {
        check_record(
            record,
            serde_json::json!({"passed": false, "attempts": 1, "retries": 0}),
        );
    }
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn retry_counts_the_retries_of_a_strict_schema() {
    let valid = r#"{"answer": "apple", "letters": ["a", "p", "p", "l", "e"], "length": 5, "state": "done"}"#;
    let server = mock(&[
        r#"{"answer": "Apple", "letters": ["a", "p", "p", "l", "e"], "length": 5, "state": "done"}"#,
        valid,
        valid,
        valid,
    ])
    .await;
    let (run, records) = run_suite(&server, "retry");
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Once per way of delivering the schema: native, then a forced tool, then the prompt.
    assert_eq!(records.len(), 3);
    check_record(
        &records[0],
        serde_json::json!({
            "model": "gemini-flash", "suite": "retry", "test": "strict-word/native", "mode": "native",
            "passed": true, "valid_first_try": false, "attempts": 2, "retries": 1, "tokens_in": 38,
            "tokens_out": 20, "detail": "valid after 1 retries; word \"apple\", letters spell \"apple\""
        }),
    );
    for (record, mode) in records[1..].iter().zip(["tool", "prompted"]) {
        check_record(
            record,
            serde_json::json!({"test": format!("strict-word/{mode}"), "mode": mode, "passed": true,
                "valid_first_try": true, "attempts": 1, "retries": 0}),
        );
    }
    let requests = server.received_requests().await.unwrap();
    let bodies: Vec<Value> = requests
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert!(
        bodies[0].get("response_format").is_some(),
        "native: {}",
        bodies[0]
    );
    assert!(bodies[2].get("tools").is_some(), "tool: {}", bodies[2]);
    assert!(
        bodies[3].get("tools").is_none() && bodies[3].get("response_format").is_none(),
        "prompted: {}",
        bodies[3]
    );
}

#[tokio::test]
async fn memory_needs_summaries_and_the_colour() {
    let server = mock(&[
        r#"{"answer": "Noted.", "state": "chat", "summary": "The user's favourite colour is blue."}"#,
        r#"{"answer": "Your favourite colour is blue.", "state": "chat", "summary": "Recalled the colour."}"#,
    ])
    .await;
    let (run, records) = run_suite(&server, "memory");
    assert_eq!(run.code, 0, "{}", run.stderr);
    check_record(
        &records[0],
        serde_json::json!({"suite": "memory", "test": "recall-colour", "passed": true,
            "valid_first_try": true, "attempts": 2, "retries": 0}),
    );
    // Turn 2 reminded the model of turn 1's summary.
    let second = &server.received_requests().await.unwrap()[1];
    let body = String::from_utf8_lossy(&second.body);
    assert!(body.contains("favourite colour is blue"), "{body}");
}

#[tokio::test]
async fn a_wrong_answer_fails_the_test_and_exits_1() {
    let server = mock(&[
        r#"{"answer": "Noted.", "state": "chat", "summary": "The user likes a colour."}"#,
        r#"{"answer": "I don't know.", "state": "chat", "summary": "Asked about a colour."}"#,
    ])
    .await;
    let (run, records) = run_suite(&server, "memory");
    assert_eq!(run.code, 1, "{}", run.stderr);
    check_record(
        &records[0],
        serde_json::json!({"passed": false, "valid_first_try": true,
            "detail": "summaries present: true; turn 2 answer mentions blue: false; answer: \"I don't know.\""}),
    );
}

#[tokio::test]
async fn citations_must_cite_the_note() {
    let server = mock(&[
        r#"{"answer": "It is heliotrope-42.", "state": "done", "metadata": {"hasSources": true, "citations": [{"noteId": "note-17", "noteTitle": "Office wifi"}]}}"#,
    ])
    .await;
    let (run, records) = run_suite(&server, "citations");
    assert_eq!(run.code, 0, "{}", run.stderr);
    check_record(
        &records[0],
        serde_json::json!({"suite": "citations", "test": "cite-note", "passed": true, "attempts": 1}),
    );
}

#[test]
fn list_names_every_suite_and_the_command_is_hidden() {
    let list = claij(&["suite", "list"], "");
    assert_eq!(list.code, 0, "{}", list.stderr);
    // xtask/src/integration/plan.rs keeps the same table for its estimates.
    assert_eq!(
        list.stdout,
        "memory recall-colour\ntools report-nonce\nmcp read-token-file\nretry strict-word/native\nretry strict-word/tool\nretry strict-word/prompted\nfsm code-review\ncitations cite-note\n"
    );
    let help = claij(&["--help"], "");
    assert!(!help.stdout.contains("suite"), "{}", help.stdout);
}

#[test]
fn bad_arguments_are_one_line() {
    let unknown = claij(&["suite", "run", "--llm", "nope", "--suite", "retry"], "");
    assert_one_line_error(&unknown, 2, "unknown model `nope`");
    let suite = claij(&["suite", "run", "--llm", "local", "--suite", "speed"], "");
    assert_one_line_error(&suite, 2, "invalid value 'speed' for '--suite <SUITE>'");
    let no_key = claij_env(
        &["suite", "run", "--llm", "gemini-flash", "--suite", "retry"],
        "",
        &[("OPENROUTER_API_KEY", None), ("CLAIJ_CONFIG", None)],
    );
    assert_one_line_error(&no_key, 2, "OPENROUTER_API_KEY");
}

/// Answers turn 2 of the tools suite with whatever the tool returned, read from the request: the
/// nonce is random, so only a result that reached the prompt can be reported.
struct EchoNonce;

impl wiremock::Respond for EchoNonce {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body = String::from_utf8_lossy(&request.body);
        let marker = r#"ok: \""#;
        let nonce: String = body
            .find(marker)
            .map(|at| body[at + marker.len()..].chars().take(12).collect())
            .unwrap_or_default();
        reply(&format!(
            r#"{{"answer": "The tool returned {nonce}.", "state": "done"}}"#
        ))
    }
}

#[tokio::test]
async fn tools_reports_the_nonce_the_tool_returned() {
    let server = mock(&[r#"{"answer": "Calling it.", "state": "calling", "tools": [{"name": "nonce", "args": {}}]}"#]).await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(EchoNonce)
        .expect(1)
        .mount(&server)
        .await;
    let (run, records) = run_suite(&server, "tools");
    assert_eq!(run.code, 0, "{}", run.stderr);
    check_record(
        &records[0],
        serde_json::json!({"suite": "tools", "test": "report-nonce", "passed": true, "attempts": 2}),
    );
    assert!(
        records[0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("tool called: true; nonce reported: true; answer: \"The tool returned "),
        "{}",
        records[0]
    );
}

/// The path the MCP suite asks about, from its prompt.
fn asked_path(body: &str) -> Option<String> {
    let start = body.find("Read the file ")? + "Read the file ".len();
    let end = start + body[start..].find(" with the fs tools")?;
    Some(body[start..end].to_owned())
}

/// Turn 1 of the MCP FSM: read the file the prompt names through the filesystem server.
struct CallReadFile;

impl wiremock::Respond for CallReadFile {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let path = asked_path(&String::from_utf8_lossy(&request.body)).unwrap_or_default();
        let event = serde_json::json!({"id": ["llm", "servicing"], "message": {
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "fs.read_text_file", "arguments": {"path": path}}
        }});
        reply(&event.to_string())
    }
}

/// Turn 2: answers with the file's token only if the server's result carried it into the prompt.
struct AnswerFromResult;

impl wiremock::Respond for AnswerFromResult {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body = String::from_utf8_lossy(&request.body);
        let token = asked_path(&body)
            .and_then(|path| std::fs::read_to_string(path).ok())
            .map(|text| text.trim().to_owned())
            .filter(|token| !token.is_empty() && body.contains(token.as_str()))
            .unwrap_or_else(|| "no result".to_owned());
        let event = serde_json::json!({"id": ["llm", "end"],
            "result": {"content": [{"type": "text", "text": format!("The file says {token}.")}]}});
        reply(&event.to_string())
    }
}

#[tokio::test]
async fn mcp_reads_the_token_through_the_real_filesystem_server() {
    let Some(servers) = std::env::var_os("CLAIJ_MCP_SERVERS")
        .filter(|dir| Path::new(dir).join("servers.json").is_file())
    else {
        assert!(
            !claij_backends::testing::is_ci(|name| std::env::var_os(name)),
            "CI=true and no MCP servers: run `cargo xtask mcp-servers`"
        );
        #[allow(clippy::print_stderr)]
        {
            eprintln!("skipped: no MCP test servers (CLAIJ_MCP_SERVERS)");
        }
        return;
    };
    let _ = servers;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(CallReadFile)
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(AnswerFromResult)
        .expect(1)
        .mount(&server)
        .await;
    let (run, records) = run_suite(&server, "mcp");
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    check_record(
        &records[0],
        serde_json::json!({"suite": "mcp", "test": "read-token-file", "passed": true, "attempts": 2}),
    );
    let detail = records[0]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("token in the answer: true; path start>llm>servicing>llm>end;"),
        "{detail}"
    );
}

#[tokio::test]
async fn fsm_runs_the_code_review_to_a_verdict() {
    let server = mock(&[
        r#"{"id": ["chairman", "correctness-reviewer"], "focus": "bugs"}"#,
        r#"{"id": ["correctness-reviewer", "chairman"], "comments": [{"severity": "major", "comment": "divides by zero on an empty slice"}], "summary": "panics on empty input", "approve": false}"#,
        r#"{"id": ["chairman", "design-reviewer"], "focus": "naming"}"#,
        r#"{"id": ["design-reviewer", "chairman"], "comments": [], "summary": "fine", "approve": true}"#,
        r#"{"id": ["chairman", "end"], "decision": "request-changes", "summary": "guard the empty slice"}"#,
    ])
    .await;
    let (run, records) = run_suite(&server, "fsm");
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    check_record(
        &records[0],
        serde_json::json!({"suite": "fsm", "test": "code-review", "passed": true, "attempts": 5,
            "retries": 0, "valid_first_try": true, "tokens_in": 95, "tokens_out": 50}),
    );
    let detail = records[0]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(
            "finished in end with decision \"request-changes\"; both reviewers heard: true; path start>chairman>correctness-reviewer>chairman>design-reviewer>chairman>end"
        ),
        "{detail}"
    );
}
