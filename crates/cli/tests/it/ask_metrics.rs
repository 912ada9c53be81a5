//! `claij ask --metrics` and `chat`'s `/metrics`: the metrics interceptor's table on stderr after the
//! answer, stdout unchanged, against a mock OpenRouter.

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::openrouter::{CHAT, completion, config, reply};
use super::{BASE, Files, Run, claij_env};

const KEY: &str = "sk-or-v1-metrics-secret-0123456789";

/// A reply without `state` (a violation of `required`), then one in a code fence with a trailing
/// comma (extracted, repaired).
async fn retried_then_repaired() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(r#"{"answer": "Paris"}"#))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            "```json\n{\"answer\": \"Paris\", \"state\": \"done\",}\n```",
        ))
        .mount(&server)
        .await;
    server
}

fn run(server: &MockServer, args: &[&str], stdin: &str) -> Run {
    let f = Files::new(&[("config.toml", &config(server)), ("schema.json", BASE)]);
    let config = f.path("config.toml");
    let schema = f.path("schema.json");
    let mut all: Vec<&str> = args.to_vec();
    if args[0] == "ask" {
        all.extend(["--schema", &schema]);
    }
    let run = claij_env(
        &all,
        stdin,
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some(KEY)),
            ("RUST_LOG", None),
        ],
    );
    assert!(!run.stderr.contains(KEY), "{}", run.stderr);
    run
}

/// The table's row `name` (its first line starting so), without the indent.
fn row<'a>(stderr: &'a str, name: &str) -> &'a str {
    let prefix = format!("  {name:<14}");
    stderr
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no row {name}: {stderr}"))
}

#[tokio::test]
async fn the_table_counts_the_retry_and_the_fixes_by_kind_and_stdout_is_the_answer() {
    let server = retried_then_repaired().await;
    let run = run(&server, &["ask", "Capital?", "--metrics", "-q"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "{\n  \"answer\": \"Paris\",\n  \"state\": \"done\"\n}\n"
    );
    assert_eq!(
        run.stderr.matches("\nmetrics\n").count(),
        1,
        "{}",
        run.stderr
    );
    assert_eq!(row(&run.stderr, "calls"), "1 (1 valid, 0 failed)");
    assert_eq!(row(&run.stderr, "first try"), "0 of 1 valid (0%)");
    assert_eq!(row(&run.stderr, "attempts"), "2 (1 retry)");
    assert_eq!(row(&run.stderr, "fixes"), "extracted 1, trailing_comma 1");
    assert_eq!(row(&run.stderr, "violations"), "required 1");
    // The shared example completion: 19 prompt and 10 completion tokens a reply.
    assert!(
        row(&run.stderr, "tokens").starts_with("38 in, 20 out"),
        "{}",
        run.stderr
    );
    assert!(
        row(&run.stderr, "  request").starts_with("     2"),
        "{}",
        run.stderr
    );
    // After the answer's own report.
    let report = run.stderr.find("attempt 2: valid").unwrap();
    assert!(
        report < run.stderr.find("\nmetrics\n").unwrap(),
        "{}",
        run.stderr
    );
}

/// An agent run (`--max-steps`) of two steps, each valid at once (a native call of `now`, then the
/// answer): two model calls, both valid on the first try, no retry (it was "first try 0 of 1
/// valid", "attempts 2 (1 retry)").
#[tokio::test]
async fn each_step_of_an_agent_run_is_a_model_call_valid_on_its_first_try() {
    let server = MockServer::start().await;
    let mut calls_now = completion("");
    calls_now["choices"][0]["message"] = serde_json::json!({"role": "assistant", "content": null,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "now", "arguments": "{}"}}]});
    calls_now["choices"][0]["finish_reason"] = serde_json::json!("tool_calls");
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_json(calls_now))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(r#"{"answer": "It is noon.", "state": "done"}"#))
        .expect(1)
        .mount(&server)
        .await;
    let args = [
        "ask",
        "Time?",
        "--metrics",
        "-q",
        "--max-steps",
        "3",
        "--interceptors",
        "tools",
    ];
    let run = run(&server, &args, "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(row(&run.stderr, "calls"), "2 (2 valid, 0 failed)");
    assert_eq!(row(&run.stderr, "first try"), "2 of 2 valid (100%)");
    assert_eq!(row(&run.stderr, "attempts"), "2 (0 retries)");
}

#[tokio::test]
async fn without_the_flag_no_table_and_the_interceptor_named_twice_counts_once() {
    let server = retried_then_repaired().await;
    let plain = run(&server, &["ask", "Capital?", "-q"], "");
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert!(!plain.stderr.contains("metrics"), "{}", plain.stderr);

    let server = retried_then_repaired().await;
    let both = run(
        &server,
        &[
            "ask",
            "Capital?",
            "-q",
            "--metrics",
            "--interceptors",
            "metrics,metrics",
        ],
        "",
    );
    assert_eq!(both.code, 0, "{}", both.stderr);
    assert_eq!(
        both.stderr.matches("\nmetrics\n").count(),
        1,
        "{}",
        both.stderr
    );
    assert_eq!(row(&both.stderr, "calls"), "1 (1 valid, 0 failed)");
    assert_eq!(row(&both.stderr, "attempts"), "2 (1 retry)");
}

#[tokio::test]
async fn a_call_out_of_retries_is_counted_as_failed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(r#"{"answer": "Paris"}"#))
        .expect(2)
        .mount(&server)
        .await;
    let run = run(
        &server,
        &["ask", "Capital?", "-q", "--max-retries", "1", "--metrics"],
        "",
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_eq!(row(&run.stderr, "calls"), "1 (0 valid, 1 failed)");
    assert_eq!(row(&run.stderr, "attempts"), "2 (1 retry)");
    assert_eq!(row(&run.stderr, "violations"), "required 2");
    assert_eq!(row(&run.stderr, "errors"), "retries_exhausted 1");
}

#[tokio::test]
async fn chat_shows_the_table_on_slash_metrics() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            r#"{"answer": "Hi.", "state": "answered", "summary": "Greeted."}"#,
        ))
        .expect(2)
        .mount(&server)
        .await;
    let stdin = "Hello\n/metrics\nAgain\n/metrics\n/quit\n";
    let run = run(&server, &["chat", "-q", "--llm", "gemini-flash"], stdin);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "Hi.\nHi.\n");
    let calls: Vec<&str> = run
        .stderr
        .lines()
        .filter_map(|line| line.strip_prefix("  calls         "))
        .collect();
    assert_eq!(
        calls,
        ["1 (1 valid, 0 failed)", "2 (2 valid, 0 failed)"],
        "{}",
        run.stderr
    );
    assert_eq!(row(&run.stderr, "first try"), "1 of 1 valid (100%)");
}

#[tokio::test]
async fn chat_with_the_flag_shows_the_table_at_the_end() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            r#"{"answer": "Hi.", "state": "answered", "summary": "Greeted."}"#,
        ))
        .expect(1)
        .mount(&server)
        .await;
    let args = ["chat", "-q", "--llm", "gemini-flash", "--metrics"];
    let run = run(&server, &args, "Hello\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "Hi.\n");
    let table = run
        .stderr
        .find("metrics\n")
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert!(
        run.stderr.find("[turn 1").unwrap() < table,
        "{}",
        run.stderr
    );
    assert_eq!(row(&run.stderr, "calls"), "1 (1 valid, 0 failed)");
}
