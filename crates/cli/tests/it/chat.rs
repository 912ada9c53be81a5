//! `claij chat` (turns from a pipe) and `claij ask --standard`, against a mock OpenRouter reached
//! through a configuration file.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::openrouter::{self, CHAT};
use super::{Files, Run, claij_env};

const KEY: &str = "sk-or-v1-chat-secret-0123456789";
fn reply(content: &Value) -> ResponseTemplate {
    openrouter::reply(&content.to_string())
}

fn run(server: &MockServer, args: &[&str], stdin: &str, files: &[(&str, &str)]) -> (Run, Files) {
    let config = super::openrouter::config(server);
    let mut all = vec![("config.toml", config.as_str())];
    all.extend_from_slice(files);
    let f = Files::new(&all);
    let config_path = f.path("config.toml");
    let run = claij_env(
        args,
        stdin,
        &[
            ("CLAIJ_CONFIG", Some(config_path.as_str())),
            ("OPENROUTER_API_KEY", Some(KEY)),
        ],
    );
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
    (run, f)
}

#[tokio::test]
async fn chat_turns_carry_memory_and_show_state_summary_and_tokens() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&json!({"answer": "Noted.", "state": "answered", "summary": "The user's favourite colour is blue."})))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "Blue.", "state": "answered", "summary": "Said the colour is blue."}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let stdin = "Remember: my favourite colour is blue.\n\nWhat's my favourite colour?\n/memory\n/quit\nnever sent\n";
    let (run, _f) = run(&server, &["chat", "--llm", "gemini-flash"], stdin, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "Noted.\nBlue.\n");
    assert!(run.stderr.contains("state: answered"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("remembered: The user's favourite colour is blue."),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("[turn 1 · 1 attempt, "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("[turn 2 · 1 attempt, "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("  1. The user's favourite colour is blue."),
        "{}",
        run.stderr
    );
    // The second turn reminded the model of the first (the memory interceptor is on by default).
    let requests = server.received_requests().await.unwrap();
    assert_eq!(
        requests.len(),
        2,
        "the empty line and the line after /quit are not turns"
    );
    let second = String::from_utf8_lossy(&requests[1].body);
    assert!(second.contains("favourite colour is blue"), "{second}");
}

#[tokio::test]
async fn chat_goes_on_after_a_turn_without_a_valid_reply() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&json!({"answer": 7})))
        .up_to_n_times(2)
        .expect(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "Fine.", "state": "answered", "summary": "Greeted."}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let (run, f) = run(
        &server,
        &["chat", "--llm", "gemini-flash", "--max-retries", "1"],
        "Hello\nHello again\n",
        &[],
    );
    let _ = f;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("(no valid reply after 2 attempts; ask again or rephrase)"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "Fine.\n");
}

/// A provider's refusal ends the turn in the one line `claij ask` says (sent once, whatever the
/// retries); the chat goes on with the next line, and exits 1 when the last turn was refused, as
/// `ask` does.
#[tokio::test]
async fn a_refusal_ends_the_turn_in_one_line_and_the_chat_goes_on() {
    let server = MockServer::start().await;
    let mut refused = openrouter::completion("");
    refused["choices"][0]["message"]["content"] = Value::Null;
    refused["choices"][0]["message"]["refusal"] = "I'm sorry, I cannot help with that.".into();
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_json(&refused))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "Fine.", "state": "answered", "summary": "Greeted."}),
        ))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_json(&refused))
        .expect(1)
        .mount(&server)
        .await;
    let args = ["chat", "--llm", "gemini-flash", "--max-retries", "3"];
    let (run, _f) = run(&server, &args, "Help me\nHello\nHelp me again\n", &[]);
    assert_eq!(run.code, 1, "the last turn was refused: {}", run.stderr);
    assert_eq!(run.stdout, "Fine.\n");
    let refusals: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.contains("refused"))
        .collect();
    assert_eq!(refusals.len(), 2, "{}", run.stderr);
    for line in refusals {
        assert!(
            line.starts_with("error: ")
                && line.ends_with("refused: I'm sorry, I cannot help with that."),
            "{line}"
        );
    }
    // Each refused turn was sent once (the mocks expect one request each).
}

#[tokio::test]
async fn ask_standard_keeps_the_raw_value_off_a_terminal_and_checks_citations() {
    let server = MockServer::start().await;
    let cited = json!({
        "answer": "We land in Lisbon on 3 May.",
        "state": "answered",
        "metadata": {"hasSources": true, "sourceTypes": ["notes"],
                     "citations": [{"noteId": "note-1", "noteTitle": "trip.txt", "excerpt": "Lisbon on 3 May"}]}
    });
    // A first reply citing a note that was never supplied is sent back.
    let unknown = json!({
        "answer": "Lisbon.", "state": "answered",
        "metadata": {"hasSources": true, "citations": [{"noteId": "note-9", "noteTitle": "?"}]}
    });
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&unknown))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&cited))
        .expect(1)
        .mount(&server)
        .await;
    let notes_dir = Files::new(&[("trip.txt", "We land in Lisbon on 3 May.")]);
    let note = notes_dir.path("trip.txt");
    let (run, _f) = run(
        &server,
        &[
            "ask",
            "When do we land?",
            "--llm",
            "gemini-flash",
            "--standard",
            "--note",
            &note,
        ],
        "",
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Not a terminal: the raw value, as with --json.
    let value: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(value["metadata"]["citations"][0]["noteId"], "note-1");
    assert!(run.stderr.contains("attempt 2: valid"), "{}", run.stderr);
    let requests = server.received_requests().await.unwrap();
    let first = String::from_utf8_lossy(&requests[0].body);
    assert!(
        first.contains("note-1") && first.contains("We land in Lisbon on 3 May."),
        "{first}"
    );
    let retry = String::from_utf8_lossy(&requests[1].body);
    assert!(
        retry.contains("note-9"),
        "the retry prompt names the unknown note: {retry}"
    );
}

#[tokio::test]
async fn chat_with_tools_shows_the_previous_turns_results() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&json!({
            "answer": "Let me draw.", "state": "waiting_for_tools", "summary": "Drew a number.",
            "tools": [{"name": "random_int", "args": {"min": 7, "max": 7}}, {"name": "now", "args": {}}]
        })))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "It was 7.", "state": "answered", "summary": "Reported 7."}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let (run, _f) = run(
        &server,
        &[
            "chat",
            "--llm",
            "gemini-flash",
            "--interceptors",
            "memory,tools",
        ],
        "Draw a number between 7 and 7.\nWhich number was it?\n",
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "Let me draw.\nIt was 7.\n");
    let requests = server.received_requests().await.unwrap();
    let first = String::from_utf8_lossy(&requests[0].body);
    assert!(
        first.contains("random_int") && first.contains("now"),
        "the tools are offered: {first}"
    );
    let second = String::from_utf8_lossy(&requests[1].body);
    assert!(
        second.contains("ok: 7"),
        "the result is shown on the next turn: {second}"
    );
}

/// Runs `claij ARGS` with its stdout on a pseudo-terminal (python3's `pty`), everything it showed
/// and its exit code.
pub(crate) fn claij_on_a_terminal(args: &[&str], env: &[(&str, &str)]) -> (String, i32) {
    const DRIVER: &str = r#"
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
chunks = []
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    chunks.append(data)
_, status = os.waitpid(pid, 0)
sys.stdout.write(b"".join(chunks).decode("utf-8", "replace"))
sys.stdout.write("\nEXIT %d\n" % os.waitstatus_to_exitcode(status))
"#;
    let mut command = std::process::Command::new("python3");
    command
        .args(["-c", DRIVER, env!("CARGO_BIN_EXE_claij")])
        .args(args)
        .env(
            "XDG_DATA_HOME",
            std::env::temp_dir().join("claij-tests-no-data"),
        );
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout).replace("\r\n", "\n");
    let (text, code) = text.rsplit_once("\nEXIT ").unwrap();
    (text.to_owned(), code.trim().parse().unwrap())
}

#[tokio::test]
async fn ask_standard_on_a_terminal_is_rendered_for_people() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&json!({
            "answer": "We land in Lisbon on 3 May.",
            "state": "answered",
            "metadata": {"hasSources": true, "sourceTypes": ["notes", "external"],
                "citations": [{"noteId": "note-1", "noteTitle": "trip.txt", "excerpt": "Lisbon on 3 May"}],
                "externalSources": [{"title": "Lisbon Airport", "source": "ANA", "url": "https://example.invalid/lis"}]}
        })))
        .expect(2)
        .mount(&server)
        .await;
    let files = Files::new(&[
        ("trip.txt", "We land in Lisbon on 3 May."),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let (note, config) = (files.path("trip.txt"), files.path("config.toml"));
    let env = [
        ("CLAIJ_CONFIG", config.as_str()),
        ("OPENROUTER_API_KEY", KEY),
    ];
    // Not streamed: the mock answers with one JSON body, not events.
    let args = [
        "ask",
        "When do we land?",
        "--llm",
        "gemini-flash",
        "--standard",
        "--note",
        &note,
        "--no-stream",
    ];
    let (shown, code) = claij_on_a_terminal(&args, &env);
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("We land in Lisbon on 3 May."), "{shown}");
    assert!(
        shown.contains("Sources used: 1 note, 1 external source"),
        "{shown}"
    );
    assert!(shown.contains("trip.txt"), "{shown}");
    assert!(shown.contains("https://example.invalid/lis"), "{shown}");
    assert!(
        !shown.contains("\"metadata\""),
        "rendered, not raw JSON: {shown}"
    );
    // --json keeps the raw value, terminal or not.
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let (raw, code) = claij_on_a_terminal(&with_json, &env);
    assert_eq!(code, 0, "{raw}");
    assert!(raw.contains("\"metadata\""), "{raw}");
    assert!(!raw.contains(KEY));
}

/// A reply cut at `max_tokens` is named in the turn's failure line, with the flag that raises the
/// limit; a cut reply that still validates is answered, with a warning.
#[tokio::test]
async fn a_turn_cut_at_max_tokens_says_so() {
    let server = MockServer::start().await;
    let mut cut = openrouter::completion(r#"{"answer": "Blue is a"#);
    cut["choices"][0]["finish_reason"] = "length".into();
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_json(cut))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    let mut valid =
        openrouter::completion(r#"{"answer": "Blue.", "state": "answered", "summary": "Blue."}"#);
    valid["choices"][0]["finish_reason"] = "length".into();
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_json(valid))
        .expect(1)
        .mount(&server)
        .await;
    let (run, _f) = run(
        &server,
        &[
            "chat",
            "--llm",
            "gemini-flash",
            "--max-retries",
            "0",
            "--max-tokens",
            "32",
        ],
        "Colour?\nColour?\n",
        &[],
    );
    assert!(
        run.stderr.contains(
            "(no valid reply after 1 attempt: the reply was cut at max_tokens (32): --max-tokens \
             raises it; ask again or rephrase)"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "Blue.\n", "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "  warning: the reply was cut at max_tokens (32): --max-tokens raises it; the value \
             is valid but may be incomplete"
        ),
        "{}",
        run.stderr
    );
}

/// `/reset` forgets what every interceptor carried (memory and the `eval` result alike): the next
/// turn's request shows neither, and the session file is written so.
#[tokio::test]
async fn reset_forgets_what_each_interceptor_carried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&json!({"answer": "Noted.", "state": "answered",
            "summary": "The user's favourite colour is teal-zq.", "eval": "6 * 7"})))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            &json!({"answer": "I do not know.", "state": "answered", "summary": "Asked."}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &super::openrouter::config(&server))]);
    let session = files.path("s.json");
    let config = files.path("config.toml");
    let run = claij_env(
        &[
            "chat",
            "--llm",
            "gemini-flash",
            "--interceptors",
            "memory,eval",
            "--session",
            &session,
        ],
        "Remember teal.\n/reset\nMy colour?\n",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some(KEY)),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("(memory cleared)"), "{}", run.stderr);
    assert!(
        run.stderr.contains("  eval \"6 * 7\": ok: 42"),
        "{}",
        run.stderr
    );
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let second = String::from_utf8_lossy(&requests[1].body);
    assert!(!second.contains("teal-zq"), "{second}");
    assert!(!second.contains("Result of the `eval` code"), "{second}");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&session).unwrap()).unwrap();
    assert_eq!(saved["turn"], 1, "{saved}");
    assert_eq!(
        saved["interceptors"],
        json!({"memory": {"version": 1, "state": {"summaries": ["Asked."]}}}),
        "{saved}"
    );
}
