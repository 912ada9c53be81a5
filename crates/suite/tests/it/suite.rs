//! `claij-suite`, which `cargo xtask integration` drives: the suites against a mock OpenRouter
//! (through `CLAIJ_CONFIG`), one JSON record per test on stdout.

use std::path::Path;

use serde_json::Value;
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::openrouter::{CHAT, reply};
use super::{Files, Run, assert_one_line_error, claij_suite, claij_suite_env};

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

/// `claij-suite run --llm gemini-flash --suite SUITE` against `server`.
fn run_suite(server: &MockServer, suite: &str) -> (Run, Vec<Value>) {
    run_suite_with(server, suite, "")
}

/// [`run_suite`] with `extra` appended to the configuration file.
fn run_suite_with(server: &MockServer, suite: &str, extra: &str) -> (Run, Vec<Value>) {
    run_suite_args(server, suite, extra, &[])
}

/// [`run_suite_with`] with more arguments.
fn run_suite_args(
    server: &MockServer,
    suite: &str,
    extra: &str,
    more: &[&str],
) -> (Run, Vec<Value>) {
    let config = format!("{}{extra}", super::openrouter::config(server));
    let files = Files::new(&[("config.toml", &config)]);
    let config = files.path("config.toml");
    let mut args = vec![
        "run",
        "--llm",
        "gemini-flash",
        "--suite",
        suite,
        "--json-lines",
    ];
    args.extend_from_slice(more);
    let run = claij_suite_env(
        &args,
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
    // `schema_tokens` when a request carried a schema (a state machine's requests are not seen).
    let keys: Vec<&str> = record
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .filter(|key| *key != "schema_tokens")
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
async fn the_retry_budget_is_the_designs_one_retry_unless_a_flag_says_otherwise() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply("no JSON at all"))
        .mount(&server)
        .await;
    // The configuration's [defaults] do not change what the suites measure.
    let (run, records) = run_suite_with(&server, "retry", "[defaults]\nmax_retries = 3\n");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(records.len(), 3);
    for record in &records {
        check_record(
            record,
            serde_json::json!({"passed": false, "attempts": 2, "retries": 1}),
        );
    }
    assert_eq!(server.received_requests().await.unwrap().len(), 6);
    let (run, records) = run_suite_args(&server, "retry", "", &["--max-retries", "0"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    for record in &records {
        check_record(
            record,
            serde_json::json!({"passed": false, "attempts": 1, "retries": 0}),
        );
    }
    assert_eq!(server.received_requests().await.unwrap().len(), 9);
}

#[test]
fn a_test_has_30_seconds_unless_a_flag_says_otherwise() {
    let help = claij_suite(&["run", "--help"], "");
    assert_eq!(help.code, 0, "{}", help.stderr);
    let timeout = help
        .stdout
        .split("--timeout <SECS>")
        .nth(1)
        .and_then(|rest| rest.split("\n  -").next())
        .unwrap_or_default();
    assert!(timeout.contains("[default: 30]"), "{}", help.stdout);
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
            "tokens_out": 20, "detail": "valid after 1 retry; word \"apple\", letters spell \"apple\""
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
    // Each record says the o200k_base tokens of the schema its requests showed the model: the
    // prompted one, those of the schema section that ends the system prompt sent.
    let system = bodies[3]["messages"][0]["content"].as_str().unwrap();
    let (_, section) = system.rsplit_once("No prose, no code fences.\n\n").unwrap();
    let o200k = claij::tokens::Tokenizer::O200kBase.open().unwrap();
    assert_eq!(records[2]["schema_tokens"], o200k.count(section).unwrap());
    for record in &records {
        assert!(record["schema_tokens"].as_u64().unwrap() > 10, "{record}");
    }
}

/// The facts the memory and history suites tell and later ask for (crates/suite/src/memory.rs).
const FACTS: [&str; 1] = ["47"];

/// A model that knows only what it is sent: its answer names every fact the request holds outside
/// the user's own message (`I don't know.` when none), and where the schema asks for a `summary`
/// it repeats the user's message (or, `forgetful`, says nothing of it).
struct OnlyWhatItIsSent {
    forgetful: bool,
}

impl wiremock::Respond for OnlyWhatItIsSent {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let messages = body["messages"].as_array().unwrap();
        let (user, before) = messages.split_last().unwrap();
        let user = user["content"].as_str().unwrap();
        let seen: String = before
            .iter()
            .map(|m| m["content"].as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n");
        let known: Vec<&str> = FACTS
            .iter()
            .copied()
            .filter(|fact| seen.contains(fact))
            .collect();
        let answer = if known.is_empty() {
            "I don't know.".to_owned()
        } else {
            format!("It is {}.", known.join(" and "))
        };
        let mut reply = serde_json::json!({"answer": answer, "state": "answered"});
        if body["response_format"].to_string().contains("\"summary\"") {
            reply["summary"] = if self.forgetful {
                "The user said something.".into()
            } else {
                format!("The user said: {user}").into()
            };
        }
        super::openrouter::reply(&reply.to_string())
    }
}

/// Serves every request with [`OnlyWhatItIsSent`].
async fn only_what_it_is_sent(forgetful: bool) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(OnlyWhatItIsSent { forgetful })
        .mount(&server)
        .await;
    server
}

/// The requests' bodies, in the order they were sent.
async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

/// The messages of `body` other than the system prompt, as (role, content).
fn conversation(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The system prompt of `body`.
fn system(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn memory_sends_no_earlier_turn_and_the_fact_comes_through_the_summary() {
    let server = only_what_it_is_sent(false).await;
    let (run, records) = run_suite(&server, "memory");
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    assert_eq!(records.len(), 2);
    check_record(
        &records[0],
        serde_json::json!({"suite": "memory", "test": "recall-next-turn", "passed": true,
            "valid_first_try": true, "attempts": 2, "retries": 0}),
    );
    check_record(
        &records[1],
        serde_json::json!({"suite": "memory", "test": "recall-after-distractions", "passed": true,
            "attempts": 6}),
    );
    let detail = records[0]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(
            "turn 2 asks for \"47\": no earlier turn in the request: true; in the memory section: true; in the answer: true"
        ),
        "{detail}"
    );
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 8);
    // Two conversations: 2 turns, then 6.
    for turns in [&bodies[..2], &bodies[2..]] {
        let mut said: Vec<String> = Vec::new();
        for body in turns {
            // Only this turn's message: no earlier turn is sent.
            let messages = conversation(body);
            assert_eq!(messages.len(), 1, "{body}");
            assert_eq!(messages[0].0, "user");
            // Earlier turns' words reach the model only inside the memory's summaries.
            let system = system(body);
            for earlier in &said {
                assert_eq!(
                    system.matches(earlier.as_str()).count(),
                    system
                        .matches(&format!("- The user said: {earlier}"))
                        .count(),
                    "{system}"
                );
            }
            said.push(messages[0].1.clone());
        }
    }
    assert!(
        system(&bodies[1]).contains("- The user said: Note: my locker number is 47."),
        "{}",
        bodies[1]
    );
}

#[tokio::test]
async fn memory_fails_when_the_summaries_keep_nothing_of_the_fact() {
    let server = only_what_it_is_sent(true).await;
    let (run, records) = run_suite(&server, "memory");
    assert_eq!(run.code, 1, "{}\n{}", run.stderr, run.stdout);
    for record in &records {
        check_record(
            record,
            serde_json::json!({"passed": false, "valid_first_try": true}),
        );
        let detail = record["detail"].as_str().unwrap();
        assert!(
            detail.contains("no earlier turn in the request: true; in the memory section: false; in the answer: false (\"I don't know.\")"),
            "{detail}"
        );
    }
}

#[tokio::test]
async fn history_sends_the_earlier_turn_and_no_summary() {
    let server = only_what_it_is_sent(false).await;
    let (run, records) = run_suite(&server, "history");
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    check_record(
        &records[0],
        serde_json::json!({"suite": "history", "test": "recall-next-turn", "passed": true,
            "valid_first_try": true, "attempts": 2, "retries": 0,
            "detail": "turn 2 asks for \"47\": no memory in the request: true; in the history sent: true; in the answer: true (\"It is 47.\")"}),
    );
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let second = conversation(&bodies[1]);
    assert_eq!(second.len(), 3, "{}", bodies[1]);
    assert_eq!(
        second[0],
        (
            "user".to_owned(),
            "Note: my locker number is 47.".to_owned()
        )
    );
    assert_eq!(second[1].0, "assistant");
    // No memory: no summary asked for, none recalled.
    for body in &bodies {
        assert!(!body.to_string().contains("summary"), "{body}");
        assert!(!system(body).contains("Previous context"), "{body}");
    }
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
fn list_names_every_suite() {
    let list = claij_suite(&["list"], "");
    assert_eq!(list.code, 0, "{}", list.stderr);
    // xtask/src/integration/plan.rs keeps the same table for its estimates.
    assert_eq!(
        list.stdout,
        "memory recall-next-turn\nmemory recall-after-distractions\nhistory recall-next-turn\ntools report-nonce\nmcp read-token-file\nmcp mcp-calls-token-file\nretry strict-word/native\nretry strict-word/tool\nretry strict-word/prompted\nfsm code-review\ncitations cite-note\ncombined memory-tools-citations\neval compute-sum\n"
    );
}

#[test]
fn bad_arguments_are_one_line() {
    let unknown = claij_suite(&["run", "--llm", "nope", "--suite", "retry"], "");
    assert_one_line_error(&unknown, 2, "unknown model `nope`");
    let suite = claij_suite(&["run", "--llm", "local", "--suite", "speed"], "");
    assert_one_line_error(&suite, 2, "invalid value 'speed' for '--suite <SUITE>'");
    let no_key = claij_suite_env(
        &["run", "--llm", "gemini-flash", "--suite", "retry"],
        "",
        &[("OPENROUTER_API_KEY", None), ("CLAIJ_CONFIG", None)],
    );
    assert_one_line_error(&no_key, 2, "OPENROUTER_API_KEY");
    // A number out of its range names the flag and the range (as claij's own flags do).
    let timeout = claij_suite(&["run", "--llm", "x", "--timeout=1e308"], "");
    assert_one_line_error(
        &timeout,
        2,
        "invalid value '1e308' for '--timeout <SECS>': expected seconds, above 0 and at most 86400 (a day)",
    );
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
            !claij_test_support::is_ci(|name| std::env::var_os(name)),
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
    // The interceptor's requests offer `mcp_calls`; the FSM's do not.
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_string_contains("mcp_calls"))
        .respond_with(McpCalls)
        .expect(2)
        .mount(&server)
        .await;
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
    check_record(
        &records[1],
        serde_json::json!({"suite": "mcp", "test": "mcp-calls-token-file", "passed": true,
            "attempts": 2, "retries": 0}),
    );
    let detail = records[1]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(
            "calls [\"fs.read_text_file\"]; token read: true; token in the answer: true;"
        ),
        "{detail}"
    );
}

/// The MCP interceptor's turns: a call of the filesystem server's read tool in `mcp_calls`, then
/// the file's token, only if the call's result reached the prompt.
struct McpCalls;

impl wiremock::Respond for McpCalls {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body = String::from_utf8_lossy(&request.body);
        let path = asked_path(&body).unwrap_or_default();
        let token = std::fs::read_to_string(&path)
            .map(|text| text.trim().to_owned())
            .unwrap_or_default();
        if !token.is_empty() && body.contains(token.as_str()) {
            return reply(
                &serde_json::json!({"answer": format!("It says {token}."), "state": "done"})
                    .to_string(),
            );
        }
        reply(
            &serde_json::json!({"answer": "Reading it.", "state": "reading", "mcp_calls": [
                {"service": "fs", "tool": "read_text_file", "args": {"path": path}}
            ]})
            .to_string(),
        )
    }
}

/// Turn 2 of the combined suite: the colour, the nonce and the password, each only if it reached
/// the prompt (the nonce from the tool's result, the colour from the memory summary, the password
/// from the notes).
struct EchoEverything;

impl wiremock::Respond for EchoEverything {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body = String::from_utf8_lossy(&request.body);
        let marker = r#"ok: \""#;
        let nonce: String = body
            .find(marker)
            .map(|at| body[at + marker.len()..].chars().take(12).collect())
            .unwrap_or_default();
        let colour = if body.contains("colour is blue") {
            "blue"
        } else {
            "unknown"
        };
        let password = if body.contains("heliotrope-42") {
            "heliotrope-42"
        } else {
            "unknown"
        };
        reply(&serde_json::json!({
            "answer": format!("Your colour is {colour}, the code {nonce}, the password {password}."),
            "state": "done",
            "summary": "Answered all three.",
            "metadata": {"hasSources": true, "citations": [{"noteId": "note-17", "noteTitle": "Office wifi"}]}
        }).to_string())
    }
}

#[tokio::test]
async fn combined_runs_memory_tools_and_citations_in_one_chain() {
    let server = mock(&[
        r#"{"answer": "Noted; calling it.", "state": "chat", "summary": "The user's favourite colour is blue.", "tools": [{"name": "nonce", "args": {}}], "metadata": {"hasSources": false, "citations": []}}"#,
    ])
    .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(EchoEverything)
        .expect(1)
        .mount(&server)
        .await;
    let (run, records) = run_suite(&server, "combined");
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    check_record(
        &records[0],
        serde_json::json!({"suite": "combined", "test": "memory-tools-citations", "passed": true,
            "attempts": 2, "retries": 0}),
    );
    assert!(
        records[0]["detail"].as_str().unwrap().starts_with(
            "summaries: true; tool called: true; recalls blue: true; nonce reported: true; password: true; cites note-17: true;"
        ),
        "{}",
        records[0]
    );
    // Turn 2 is sent without turn 1: the colour came through the memory summary.
    let bodies = bodies(&server).await;
    assert_eq!(conversation(&bodies[1]).len(), 1, "{}", bodies[1]);
    assert!(
        !bodies[1]
            .to_string()
            .contains("Remember: my favourite colour")
    );
}

/// Turn 2 of the eval suite: the number the sandbox computed, read from the result in the prompt.
struct EchoEval;

impl wiremock::Respond for EchoEval {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body = String::from_utf8_lossy(&request.body);
        let number: String = body
            .find("previous reply:\\nok: ")
            .map(|at| {
                body[at + "previous reply:\\nok: ".len()..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect()
            })
            .unwrap_or_default();
        reply(
            &serde_json::json!({"answer": format!("It computed {number}."), "state": "done"})
                .to_string(),
        )
    }
}

#[tokio::test]
async fn eval_computes_in_the_sandbox_and_reports_the_result() {
    let server = mock(&[
        r#"{"answer": "Computing.", "state": "computing", "eval": "let s = 0; for i in 1..=987 { s += i * i; } s"}"#,
    ])
    .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(EchoEval)
        .expect(1)
        .mount(&server)
        .await;
    let (run, records) = run_suite(&server, "eval");
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    check_record(
        &records[0],
        serde_json::json!({"suite": "eval", "test": "compute-sum", "passed": true, "attempts": 2,
            "detail": "turn 1 computed 320988850 (right: true); 320988850 reported: true; answer: \"It computed 320988850.\""}),
    );
}

#[tokio::test]
async fn eval_fails_when_the_code_computes_something_else() {
    let server = mock(&[
        r#"{"answer": "Computing.", "state": "computing", "eval": "let s = 0; for i in 1..=10 { s += i * i; } s"}"#,
        r#"{"answer": "It computed 385.", "state": "done"}"#,
    ])
    .await;
    let (run, records) = run_suite(&server, "eval");
    assert_eq!(run.code, 1, "{}\n{}", run.stderr, run.stdout);
    check_record(
        &records[0],
        serde_json::json!({"passed": false,
            "detail": "turn 1 computed 385 (right: false); 320988850 reported: false; answer: \"It computed 385.\""}),
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
