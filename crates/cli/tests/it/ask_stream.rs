//! `claij ask --stream` and `claij chat` streaming, against a mock OpenRouter answering with
//! server-sent events (the OpenAI wire): the partial values come before the final one (into a pipe,
//! as JSON lines only), `--json` and `--no-stream` print what they printed before.

use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::openrouter::{CHAT, config};
use super::{Files, Run, claij_env};

const KEY: &str = "sk-or-v1-stream-secret-0123456789";
const REPLY: &str = r#"{"answer": "Paris, on the Seine", "state": "answered"}"#;

/// An event stream carrying `content` in pieces of `size` bytes (at character boundaries), then
/// the finish reason, the usage and `[DONE]`.
fn events(content: &str, size: usize) -> ResponseTemplate {
    let mut body = String::new();
    let chars: Vec<char> = content.chars().collect();
    for piece in chars.chunks(size) {
        let piece: String = piece.iter().collect();
        let chunk = json!({"id": "c1", "model": "google/gemini-2.5-flash", "choices": [
            {"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    let done = json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                      "usage": {"prompt_tokens": 12, "completion_tokens": 9}});
    body.push_str(&format!("data: {done}\n\ndata: [DONE]\n\n"));
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

async fn server(expected: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(events(REPLY, 6))
        .expect(expected)
        .mount(&server)
        .await;
    server
}

fn run(server: &MockServer, args: &[&str], stdin: &str) -> Run {
    let files = Files::new(&[("config.toml", &config(server))]);
    let config = files.path("config.toml");
    let mut all = args.to_vec();
    all.extend_from_slice(&["--llm", "gemini-flash"]);
    let run = claij_env(
        &all,
        stdin,
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some(KEY)),
        ],
    );
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
    run
}

/// Off a terminal, `--stream` writes JSON lines and nothing else on stdout: `{"partial": VALUE}` per
/// partial value, then `{"value": VALUE}`, the final one, as the last line.
#[tokio::test]
async fn ask_stream_prints_partial_lines_then_the_final_value_as_json_lines() {
    let server = server(1).await;
    let run = run(&server, &["ask", "Where is the Louvre?", "--stream"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line: {line:?}: {e}\n{}", run.stdout))
        })
        .collect();
    let (last, partials) = lines.split_last().unwrap();
    assert_eq!(
        last,
        &json!({"value": {"answer": "Paris, on the Seine", "state": "answered"}}),
        "{}",
        run.stdout
    );
    let answers: Vec<String> = partials
        .iter()
        .map(|line| {
            let keys: Vec<&String> = line.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["partial"], "{line}");
            line["partial"]["answer"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert!(answers.len() >= 3, "{answers:?}");
    // Each partial answer continues the one before, up to the whole answer.
    for pair in answers.windows(2) {
        assert!(pair[1].starts_with(&pair[0]), "{answers:?}");
    }
    assert_ne!(answers[0], "Paris, on the Seine", "{answers:?}");
    assert_eq!(answers.last().unwrap(), "Paris, on the Seine");
    assert!(run.stderr.contains("attempt 1: valid"), "{}", run.stderr);
}

#[tokio::test]
async fn json_and_no_stream_print_only_the_final_value() {
    let server = MockServer::start().await;
    // Without --stream (off a terminal), or with --json, the request does not stream.
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(super::openrouter::reply(REPLY))
        .expect(2)
        .mount(&server)
        .await;
    let plain = run(&server, &["ask", "Where is the Louvre?"], "");
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert_eq!(
        serde_json::from_str::<Value>(&plain.stdout).unwrap()["answer"],
        "Paris, on the Seine"
    );
    // --stream beside --json would show nothing: refused, not ignored.
    let both = run(
        &server,
        &["ask", "Where is the Louvre?", "--stream", "--json"],
        "",
    );
    assert_eq!(both.code, 2, "{}", both.stderr);
    assert!(
        both.stderr
            .starts_with("error: --stream shows partial values, and --json prints"),
        "{}",
        both.stderr
    );
    let report = run(&server, &["ask", "Where is the Louvre?", "--json"], "");
    assert_eq!(report.code, 0, "{}", report.stderr);
    let report: Value = serde_json::from_str(&report.stdout).unwrap();
    assert_eq!(report["value"]["answer"], "Paris, on the Seine");
    for request in server.received_requests().await.unwrap() {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        assert_ne!(body["stream"], true, "{body}");
    }
}

#[tokio::test]
async fn chat_streams_the_answer_once() {
    let server = server(1).await;
    let run = run(
        &server,
        &["chat", "--stream", "--interceptors", "tools"],
        "Where is the Louvre?\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The answer written as it grew, not again after it.
    assert_eq!(run.stdout, "Paris, on the Seine\n");
    assert!(run.stderr.contains("state: answered"), "{}", run.stderr);
}

/// On a terminal, `ask` streams by default: one line redrawn in place (`\r`, clear the line), then
/// cleared for the final value.
#[tokio::test]
async fn ask_on_a_terminal_redraws_one_line() {
    let server = server(1).await;
    let files = Files::new(&[("config.toml", &config(&server))]);
    let config = files.path("config.toml");
    let env = [
        ("CLAIJ_CONFIG", config.as_str()),
        ("OPENROUTER_API_KEY", KEY),
    ];
    let args = ["ask", "Where is the Louvre?", "--llm", "gemini-flash"];
    let (shown, code) = super::chat::claij_on_a_terminal(&args, &env);
    assert_eq!(code, 0, "{shown}");
    let redraws: Vec<&str> = shown.split("\r\x1b[2K").collect();
    // Before the first redraw nothing; then partial values, the last redraw clearing the line
    // before the final value.
    assert!(redraws.len() >= 4, "{shown:?}");
    assert_eq!(redraws[0], "", "{shown:?}");
    let drawn = &redraws[1..redraws.len() - 1];
    assert!(drawn.iter().all(|line| !line.contains('\n')), "{shown:?}");
    assert!(drawn.contains(&"{\"answer\":\"Paris\"}"), "{shown:?}");
    assert!(
        redraws
            .last()
            .unwrap()
            .starts_with("{\n  \"answer\": \"Paris, on the Seine\","),
        "{shown:?}"
    );
    assert!(!shown.contains(KEY));
}

/// A streamed refusal (`delta.refusal`) ends the reply at once: one request, one line with the
/// provider's message, exit 1 as a reply that never validated.
#[tokio::test]
async fn a_streamed_refusal_is_sent_once_and_said_in_one_line() {
    let server = MockServer::start().await;
    let mut body = String::new();
    for delta in [
        json!({"role": "assistant", "content": null, "refusal": ""}),
        json!({"refusal": "I'm sorry, I cannot help with that."}),
    ] {
        let chunk = json!({"id": "c1", "model": "google/gemini-2.5-flash", "choices": [
            {"index": 0, "delta": delta, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .expect(1)
        .mount(&server)
        .await;
    let run = run(
        &server,
        &[
            "ask",
            "Where is the Louvre?",
            "--stream",
            "--max-retries",
            "3",
        ],
        "",
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("refused: I'm sorry, I cannot help with that."),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}
