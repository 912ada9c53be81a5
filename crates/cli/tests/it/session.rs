//! `claij ask --session FILE` (and `claij chat --session FILE`) across runs, against a mock
//! OpenRouter (the OpenAI wire): what each interceptor keeps for the next turn (memory, tool and
//! MCP results, the `eval` result) is printed by the run that made it, saved under the
//! interceptor's name and reaches the next run's request (tool results cut to
//! `--tool-results-budget`); the file is version 3, versions 1 and 2 are read and rewritten as one,
//! a newer one is refused before any request; the project is kept; the deltas that shaped the
//! requests are audited once per change.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use super::openrouter::{CHAT, config, reply};
use super::{Files, Run, assert_one_line_error, claij, claij_env};

const KEY: &str = "sk-or-v1-session-secret-0123456789";

/// `claij ask PROMPT --llm gemini-flash ARGS` against the mock configured in `files`.
fn ask(files: &Files, prompt: &str, args: &[&str]) -> Run {
    let config = files.path("config.toml");
    let mut all = vec!["ask", prompt, "--llm", "gemini-flash"];
    all.extend_from_slice(args);
    let run = claij_env(
        &all,
        "",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some(KEY)),
        ],
    );
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
    run
}

/// Answers first with a call of `now`, then with the answer.
async fn clock_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "Let me look at the clock.", "state": "waiting_for_tools",
                    "tools": [{"name": "now", "args": {}}]})
            .to_string(),
        ))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "It is past two.", "state": "answered"}).to_string(),
        ))
        .expect(1)
        .mount(&server)
        .await;
    server
}

pub(super) fn read(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// How a turn is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Command {
    /// `claij ask PROMPT`.
    Ask,
    /// `claij chat`, the prompt on stdin.
    Chat,
}

/// Two turns on one session file, each in a process of its own: the mock replies `first`, then
/// `second`. `config` is added to the configuration. The two runs (each checked to exit 0), the
/// file after the first, and the mock's requests.
pub(super) async fn two_runs(
    command: Command,
    first: &Value,
    second: &Value,
    args: &[&str],
    config_extra: &str,
) -> (Run, Run, Value, Vec<Request>) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&first.to_string()))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&second.to_string()))
        .expect(1)
        .mount(&server)
        .await;
    let files = Files::new(&[(
        "config.toml",
        &format!("{}\n{config_extra}", config(&server)),
    )]);
    let session = files.path("s.json");
    let turn = |prompt: &str| {
        let mut all = match command {
            Command::Ask => vec!["ask", prompt],
            Command::Chat => vec!["chat"],
        };
        all.extend_from_slice(&["--llm", "gemini-flash", "--session", &session]);
        all.extend_from_slice(args);
        let stdin = match command {
            Command::Ask => String::new(),
            Command::Chat => format!("{prompt}\n"),
        };
        let config = files.path("config.toml");
        let run = claij_env(
            &all,
            &stdin,
            &[
                ("CLAIJ_CONFIG", Some(config.as_str())),
                ("OPENROUTER_API_KEY", Some(KEY)),
            ],
        );
        assert_eq!(run.code, 0, "{command:?} {prompt}: {}", run.stderr);
        assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
        run
    };
    let one = turn("Turn one.");
    let saved = read(&session);
    let two = turn("Turn two.");
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    (one, two, saved, requests)
}

/// The system prompt of a request.
pub(super) fn system_of(request: &Request) -> String {
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    body["messages"][0]["content"].as_str().unwrap().to_owned()
}

/// The reproduction of issue 15: the first run calls `now`, the second run's request shows its
/// result (before, the session kept only `turn` and `memory`, and the result was lost).
#[tokio::test]
async fn a_tool_result_reaches_the_next_run() {
    let server = clock_server().await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let session = files.path("s.json");
    let first = ask(
        &files,
        "What time is it?",
        &["--interceptors", "tools", "--memory", &session],
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    // The run says what it ran, one line on stderr.
    let line = first
        .stderr
        .lines()
        .find(|l| l.starts_with("tool now {}: ok: \"20"))
        .unwrap_or_else(|| panic!("a line for the call: {}", first.stderr));
    let time = line
        .trim_start_matches("tool now {}: ok: ")
        .trim_matches('"');
    let saved = read(&session);
    assert_eq!(saved["version"], 3, "{saved}");
    assert_eq!(saved["turn"], 1, "{saved}");
    let tools = &saved["interceptors"]["tools"];
    assert_eq!(tools["version"], 1, "{saved}");
    assert_eq!(tools["state"][0]["name"], "now", "{saved}");
    assert_eq!(tools["state"][0]["output"]["Ok"], time, "{saved}");

    let second = ask(
        &files,
        "So what time is it?",
        &["--interceptors", "tools", "--session", &session, "--json"],
    );
    assert_eq!(second.code, 0, "{}", second.stderr);
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let body = String::from_utf8_lossy(&requests[1].body);
    assert!(
        body.contains("Results of the tool calls of your previous reply"),
        "{body}"
    );
    assert!(
        body.contains(&format!("1. now {{}}\\n   ok: \\\"{time}\\\"")),
        "{body}"
    );
    // The first turn is in the second's history: the question, and the answer as its JSON.
    let sent: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let messages = sent["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"], "{sent}");
    assert_eq!(messages[1]["content"], "What time is it?");
    assert!(
        messages[2]["content"]
            .as_str()
            .unwrap()
            .contains("Let me look at the clock."),
        "{sent}"
    );
    // The second turn called nothing: nothing ran, nothing is left for the model.
    let report: Value = serde_json::from_str(&second.stdout).unwrap();
    assert_eq!(report["tool_results"], json!([]), "{report}");
    let saved = read(&session);
    assert_eq!(saved["turn"], 2, "{saved}");
    assert!(saved.get("interceptors").is_none(), "{saved}");
    assert_eq!(
        saved["history"]["messages"].as_array().unwrap().len(),
        4,
        "{saved}"
    );
}

/// `--tool-results-budget` cuts what the next turn shows, and says how much was left out; `--json`
/// reports the call whole.
#[tokio::test]
async fn the_next_turn_shows_results_cut_to_the_budget() {
    let server = clock_server().await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let session = files.path("s.json");
    let first = ask(
        &files,
        "What time is it?",
        &["--interceptors", "tools", "--session", &session, "--json"],
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    let report: Value = serde_json::from_str(&first.stdout).unwrap();
    let ran = report["tool_results"].as_array().unwrap();
    assert_eq!(ran.len(), 1, "{report}");
    assert_eq!(
        (&ran[0]["name"], &ran[0]["args"], &ran[0]["origin"]),
        (&json!("now"), &json!({}), &json!({"kind": "rust"})),
        "{report}"
    );
    let time = ran[0]["output"].as_str().unwrap();
    assert!(first.stderr.is_empty(), "--json: {}", first.stderr);

    let second = ask(
        &files,
        "So?",
        &[
            "--interceptors",
            "tools",
            "--session",
            &session,
            "--tool-results-budget",
            "10",
        ],
    );
    assert_eq!(second.code, 0, "{}", second.stderr);
    let requests = server.received_requests().await.unwrap();
    let body = String::from_utf8_lossy(&requests[1].body);
    // `{}` keeps its 2 characters, the output the other 8, and the cut is said.
    let kept: String = format!("\"{time}\"").chars().take(8).collect();
    let shown = format!("ok: {}… ({} more characters)", kept, time.len() + 2 - 8);
    assert!(
        body.contains(&shown.replace('"', "\\\"")),
        "{shown} in {body}"
    );
    assert!(!body.contains(time), "{body}");
}

/// A version 1 file (no `version`) is read and written back as version 3, its keys kept, its memory
/// the memory interceptor's state.
#[tokio::test]
async fn a_version_1_file_is_migrated() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "Tea.", "state": "answered", "summary": "asked again"}).to_string(),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let files = Files::new(&[
        ("config.toml", &config(&server)),
        (
            "v1.json",
            r#"{"turn": 4, "memory": {"summaries": ["likes tea"]}, "owner": "ada"}"#,
        ),
    ]);
    let session = files.path("v1.json");
    let run = ask(
        &files,
        "What do I like?",
        &["--interceptors", "memory", "--session", &session],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = server.received_requests().await.unwrap();
    let body = String::from_utf8_lossy(&requests[0].body);
    assert!(body.contains("likes tea"), "the v1 memory is used: {body}");
    let mut saved = read(&session);
    // The deltas that shaped the request, audited (their times are the run's).
    let applied = saved.as_object_mut().unwrap().remove("applied").unwrap();
    let ids: Vec<&str> = applied["active"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["extension_id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"summary-v1"), "{applied}");
    assert_eq!(
        saved,
        json!({"version": 3, "turn": 5, "owner": "ada",
               "interceptors": {"memory": {"version": 1, "state": {"summaries": ["likes tea", "asked again"]}}},
               "history": {"messages": [
                   {"role": "user", "content": "What do I like?"},
                   {"role": "assistant", "content": r#"{"answer":"Tea.","state":"answered","summary":"asked again"}"#}]}})
    );
}

/// A newer version, or a version that is no number, is refused before any request, the file kept.
#[tokio::test]
async fn a_newer_version_is_refused_before_any_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&server)
        .await;
    let newer = r#"{"version": 4, "turn": 1, "memory": {"summaries": []}, "history": []}"#;
    let newer_eval = r#"{"version": 3, "turn": 1, "interceptors": {"eval": {"version": 2, "state": {"code": "1"}}}}"#;
    let files = Files::new(&[
        ("config.toml", &config(&server)),
        ("v4.json", newer),
        ("eval.json", newer_eval),
        ("bad.json", r#"{"version": "two", "turn": 1}"#),
    ]);
    let run = ask(&files, "Hi", &["--session", &files.path("v4.json")]);
    assert_one_line_error(
        &run,
        2,
        "v4.json: session file version 4 is newer than this claij reads (up to 3)",
    );
    assert_eq!(
        std::fs::read_to_string(files.path("v4.json")).unwrap(),
        newer
    );
    // An interceptor's state in a newer format than this claij reads is refused too, by name.
    let run = ask(
        &files,
        "Hi",
        &[
            "--interceptors",
            "eval",
            "--session",
            &files.path("eval.json"),
        ],
    );
    assert_one_line_error(
        &run,
        2,
        "eval.json: `interceptors.eval`: saved in version 2 of its format, newer than this claij \
         reads (up to 1): use a newer claij, or start a new session",
    );
    assert_eq!(
        std::fs::read_to_string(files.path("eval.json")).unwrap(),
        newer_eval
    );
    let run = ask(&files, "Hi", &["--session", &files.path("bad.json")]);
    assert_one_line_error(
        &run,
        2,
        "bad.json: session file `version` must be a whole number from 1, found \"two\"",
    );
}

/// The project of a conversation is saved, and a later run without `--project` keeps it.
#[tokio::test]
async fn the_project_is_kept() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "Hello.", "state": "answered"}).to_string(),
        ))
        .expect(2)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let session = files.path("s.json");
    let first = ask(&files, "Hi", &["--session", &session, "--project", "atlas"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(read(&session)["project"], "atlas");
    let second = ask(&files, "Hi again", &["--session", &session]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    let saved = read(&session);
    assert_eq!(
        (&saved["project"], &saved["turn"]),
        (&json!("atlas"), &json!(2))
    );
}

/// The history of a session file is sent before the turn; `--history-messages 0` sends and keeps
/// none.
#[tokio::test]
async fn the_history_is_sent_within_its_bounds() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "Blue.", "state": "answered"}).to_string(),
        ))
        .expect(2)
        .mount(&server)
        .await;
    let earlier = json!({"version": 2, "turn": 1, "history": {"messages": [
        {"role": "user", "content": "My colour is blue."},
        {"role": "assistant", "content": "{\"answer\":\"Noted.\",\"state\":\"answered\"}"}]}});
    let files = Files::new(&[
        ("config.toml", &config(&server)),
        ("a.json", &earlier.to_string()),
        ("b.json", &earlier.to_string()),
    ]);
    let roles = |i: usize, requests: &[wiremock::Request]| -> Vec<String> {
        let body: Value = serde_json::from_slice(&requests[i].body).unwrap();
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap().to_owned())
            .filter(|role| role != "system")
            .collect()
    };
    let run = ask(&files, "My colour?", &["--session", &files.path("a.json")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = ask(
        &files,
        "My colour?",
        &[
            "--session",
            &files.path("b.json"),
            "--history-messages",
            "0",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = server.received_requests().await.unwrap();
    assert_eq!(roles(0, &requests), ["user", "assistant", "user"]);
    assert_eq!(roles(1, &requests), ["user"]);
    assert_eq!(
        read(&files.path("a.json"))["history"]["messages"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert!(read(&files.path("b.json")).get("history").is_none());
}

/// The MCP interceptor's results too: printed by the run that made the call (`mcp` lines), kept in
/// the session, shown on the next run (the real `mcp-server-time`).
#[tokio::test]
async fn an_mcp_result_reaches_the_next_run() {
    let Some(dir) = super::mcp::servers("an_mcp_result_reaches_the_next_run") else {
        return;
    };
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "Let me look.", "state": "waiting_for_tools", "mcp_calls": [
                {"service": "time", "tool": "get_current_time", "args": {"timezone": "UTC"}}]})
            .to_string(),
        ))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "Noon-ish.", "state": "answered"}).to_string(),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let time = dir.join("venv/bin/mcp-server-time");
    let files = Files::new(&[(
        "config.toml",
        &format!(
            "{}\n[mcpServers.time]\ncommand = {:?}\nargs = [\"--local-timezone\", \"UTC\"]\n",
            config(&server),
            time.to_string_lossy()
        ),
    )]);
    let session = files.path("s.json");
    let args = ["--interceptors", "mcp", "--session", session.as_str()];
    let first = ask(&files, "What time is it?", &args);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first.stderr.lines().any(|l| l
            .starts_with("mcp time.get_current_time {\"timezone\":\"UTC\"}: ok: ")
            && l.contains("\"timezone\":\"UTC\"")),
        "{}",
        first.stderr
    );
    assert_eq!(
        read(&session)["interceptors"]["mcp"]["state"][0]["origin"],
        json!({"kind": "mcp", "server": "time"})
    );
    let second = ask(&files, "So?", &args);
    assert_eq!(second.code, 0, "{}", second.stderr);
    let requests = server.received_requests().await.unwrap();
    let body = String::from_utf8_lossy(&requests[1].body);
    assert!(
        body.contains(
            "in call order:\\n1. time.get_current_time {\\\"timezone\\\":\\\"UTC\\\"}\\n   ok: "
        ),
        "{body}"
    );
}

/// A run leaves the session file and nothing else: the lock file it held (`FILE.lock`) is removed
/// as it ends, whether the turn was answered (exit 0), got no valid reply (exit 1) or failed (exit 2).
#[tokio::test]
async fn no_lock_file_is_left_behind() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "Noted.", "state": "answered"}).to_string(),
        ))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply("no JSON here"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(400).set_body_string("bad request"))
        .expect(1)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let session = files.path("chat.json");
    let left = || {
        let mut names: Vec<String> = std::fs::read_dir(files.path(""))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    for (args, code) in [
        (&["--session", session.as_str()][..], 0),
        (
            &["--session", session.as_str(), "--max-retries", "0"][..],
            1,
        ),
        (&["--session", session.as_str()][..], 2),
    ] {
        let run = ask(&files, "Remember: blue.", args);
        assert_eq!(run.code, code, "{}", run.stderr);
        assert_eq!(left(), ["chat.json", "config.toml"], "after exit {code}");
    }
}

/// The `[mcpServers.time]` table of the real `mcp-server-time` in `dir`.
fn time_server(dir: &std::path::Path) -> String {
    format!(
        "[mcpServers.time]\ncommand = {:?}\nargs = [\"--local-timezone\", \"UTC\"]\n",
        dir.join("venv/bin/mcp-server-time").to_string_lossy()
    )
}

/// The memory's summary reaches the next run, whose request sends no earlier turn
/// (`--history-messages 0`): only the memory interceptor's saved state can carry it.
async fn check_memory(command: Command) {
    let (one, _, saved, requests) = two_runs(
        command,
        &json!({"answer": "Noted.", "state": "answered", "summary": "The user's favourite colour is teal-zq."}),
        &json!({"answer": "Teal.", "state": "answered", "summary": "Asked for the colour."}),
        &["--interceptors", "memory", "--history-messages", "0"],
        "",
    )
    .await;
    let shown = match command {
        Command::Ask => &one.stdout,
        Command::Chat => &one.stderr,
    };
    assert!(
        shown.contains("The user's favourite colour is teal-zq."),
        "{shown}"
    );
    assert_eq!(
        saved["interceptors"]["memory"],
        json!({"version": 1, "state": {"summaries": ["The user's favourite colour is teal-zq."]}}),
        "{saved}"
    );
    let second = String::from_utf8_lossy(&requests[1].body);
    assert!(!second.contains("Turn one."), "no history: {second}");
    assert!(
        system_of(&requests[1]).contains("- The user's favourite colour is teal-zq."),
        "{second}"
    );
}

#[tokio::test]
async fn ask_memory_reaches_the_next_run() {
    check_memory(Command::Ask).await;
}

#[tokio::test]
async fn chat_memory_reaches_the_next_run() {
    check_memory(Command::Chat).await;
}

/// A tool's result is printed by the run that called it, saved as the tools interceptor's state
/// and shown in the next run's request (no history sent).
async fn check_tools(command: Command) {
    let (one, _, saved, requests) = two_runs(
        command,
        &json!({"answer": "Let me draw.", "state": "waiting_for_tools",
                "tools": [{"name": "random_int", "args": {"min": 7, "max": 7}}]}),
        &json!({"answer": "It was 7.", "state": "answered"}),
        &["--interceptors", "tools", "--history-messages", "0"],
        "",
    )
    .await;
    assert!(
        one.stderr
            .lines()
            .any(|l| l.trim_start().starts_with("tool random_int ") && l.ends_with(": ok: 7")),
        "{}",
        one.stderr
    );
    let state = &saved["interceptors"]["tools"];
    assert_eq!(state["version"], 1, "{saved}");
    assert_eq!(state["state"][0]["output"], json!({"Ok": 7}), "{saved}");
    let system = system_of(&requests[1]);
    assert!(
        system.contains(
            "Results of the tool calls of your previous reply, in call order:\n1. random_int"
        ),
        "{system}"
    );
    assert!(system.contains("   ok: 7"), "{system}");
}

#[tokio::test]
async fn ask_tool_results_reach_the_next_run() {
    check_tools(Command::Ask).await;
}

#[tokio::test]
async fn chat_tool_results_reach_the_next_run() {
    check_tools(Command::Chat).await;
}

/// An MCP result (the real `mcp-server-time`) is printed by the run that called it, saved as the
/// mcp interceptor's state and shown in the next run's request.
async fn check_mcp(command: Command, test: &str) {
    let Some(dir) = super::mcp::servers(test) else {
        return;
    };
    let (one, _, saved, requests) = two_runs(
        command,
        &json!({"answer": "Let me look.", "state": "waiting_for_tools", "mcp_calls": [
            {"service": "time", "tool": "get_current_time", "args": {"timezone": "UTC"}}]}),
        &json!({"answer": "Noon-ish.", "state": "answered"}),
        &["--interceptors", "mcp", "--history-messages", "0"],
        &time_server(&dir),
    )
    .await;
    assert!(
        one.stderr.lines().any(|l| l
            .trim_start()
            .starts_with("mcp time.get_current_time {\"timezone\":\"UTC\"}: ok: ")),
        "{}",
        one.stderr
    );
    let state = &saved["interceptors"]["mcp"];
    assert_eq!(state["version"], 1, "{saved}");
    assert_eq!(
        state["state"][0]["origin"],
        json!({"kind": "mcp", "server": "time"}),
        "{saved}"
    );
    let system = system_of(&requests[1]);
    assert!(
        system.contains("in call order:\n1. time.get_current_time {\"timezone\":\"UTC\"}\n   ok: "),
        "{system}"
    );
}

#[tokio::test]
async fn ask_mcp_results_reach_the_next_run() {
    check_mcp(Command::Ask, "ask_mcp_results_reach_the_next_run").await;
}

#[tokio::test]
async fn chat_mcp_results_reach_the_next_run() {
    check_mcp(Command::Chat, "chat_mcp_results_reach_the_next_run").await;
}

/// `claij schema audit FILE` of a conversation: the deltas that shaped its requests, each recorded
/// once though every turn's request carried it (who added it, when), one dropped when a later run
/// goes without its interceptor, and those of the last request.
#[tokio::test]
async fn the_audit_shows_each_applied_delta_once() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "Noted.", "state": "answered", "summary": "Noted."}).to_string(),
        ))
        .expect(4)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let session = files.path("s.json");
    for interceptors in ["memory,eval", "memory,eval", "memory,eval", "memory"] {
        let run = ask(
            &files,
            "Hi",
            &["--interceptors", interceptors, "--session", &session],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let audit = claij(&["schema", "audit", &session], "");
    assert_eq!(audit.code, 0, "{}", audit.stderr);
    let lines: Vec<&str> = audit
        .stdout
        .lines()
        .filter(|l| !l.starts_with("    delta: "))
        .collect();
    let shown: Vec<String> = lines
        .iter()
        .map(|l| match l.split_once("  ") {
            // The time: RFC 3339 in seconds.
            Some((at, rest)) if humantime::parse_rfc3339(at).is_ok() => format!("AT  {rest}"),
            _ => (*l).to_owned(),
        })
        .collect();
    assert_eq!(
        shown,
        [
            "schema deltas applied to the requests:",
            "AT  summary-v1  applied  (added by memory)",
            "AT  eval-v1  applied  (added by eval)",
            "AT  states-v1  applied  (added by states)",
            // Without eval, the states' delta no longer offers `waiting_for_tools`: a change.
            "AT  eval-v1  no longer applied  (added by eval)",
            "AT  states-v1  no longer applied  (added by states)",
            "AT  states-v1  applied  (added by states)",
            "applied to the last request: summary-v1, states-v1",
            &format!("{session}: no schema extension was proposed"),
        ],
        "{}",
        audit.stdout
    );
    let json = claij(&["schema", "audit", &session, "--json"], "");
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["applied"][0]["state"], Value::Null, "{report}");
    assert_eq!(
        report["applied"][0]["audit"].as_array().unwrap().len(),
        6,
        "{report}"
    );
    assert_eq!(report["extensions"]["audit"], json!([]), "{report}");
}
