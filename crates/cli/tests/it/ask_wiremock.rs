//! `claij ask` against a mock OpenRouter: the binary runs as a subprocess, the mock's address reaches
//! it through a configuration file (`CLAIJ_CONFIG`, `providers.openrouter.base_url`), and the replies
//! are the shared OpenAI-format example response with the content replaced.

use serde_json::Value;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::openrouter::{CHAT, config, reply};
use super::{BASE, Files, Run, assert_one_line_error, claij_env};

/// The key the mock expects; it must never be printed.
const KEY: &str = "sk-or-v1-wiremock-secret-0123456789";
/// The configuration pointing OpenRouter at the mock, and the response schema.
fn files(server: &MockServer) -> Files {
    Files::new(&[("config.toml", &config(server)), ("schema.json", BASE)])
}

/// `claij ask` with the key set and the default model (gemini-flash, through the configuration).
fn ask(files: &Files, extra: &[&str]) -> Run {
    let config = files.path("config.toml");
    let schema = files.path("schema.json");
    let mut args = vec!["ask", "What is the capital of France?", "--schema", &schema];
    args.extend_from_slice(extra);
    claij_env(
        &args,
        "",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some(KEY)),
        ],
    )
}

#[track_caller]
fn assert_no_key(run: &Run) {
    assert!(!run.stdout.contains(KEY), "{}", run.stdout);
    assert!(!run.stderr.contains(KEY), "{}", run.stderr);
}

const VALID: &str = r#"{"answer": "Paris", "state": "done"}"#;

#[tokio::test]
async fn a_valid_reply() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(reply(VALID))
        .expect(1)
        .mount(&server)
        .await;
    let f = files(&server);
    let run = ask(&f, &["--llm", "gemini-flash"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let value: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"answer": "Paris", "state": "done"})
    );
    assert!(run.stderr.contains("attempt 1: valid"), "{}", run.stderr);
    let requests = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(body["model"], "google/gemini-2.5-flash");
    assert_no_key(&run);
}

#[tokio::test]
async fn invalid_then_valid() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(r#"{"answer": 42}"#))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(VALID))
        .expect(1)
        .mount(&server)
        .await;
    let f = files(&server);
    // No --llm: OpenRouter's key is set, so the default remote model, at the configured base URL.
    let run = ask(&f, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let value: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(value["answer"], "Paris");
    assert!(
        run.stderr.contains("attempt 1: invalid ("),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("attempt 2: valid"), "{}", run.stderr);
    assert!(run.stderr.contains("2 attempts"), "{}", run.stderr);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
    // The retry told the model what was wrong.
    let retry =
        String::from_utf8_lossy(&server.received_requests().await.unwrap()[1].body).into_owned();
    assert!(retry.contains("state"), "{retry}");
    assert_no_key(&run);
}

#[tokio::test]
async fn a_fenced_reply_is_repaired() {
    let server = MockServer::start().await;
    let fenced = format!("Here it is:\n```json\n{VALID}\n```\n");
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&fenced))
        .expect(1)
        .mount(&server)
        .await;
    let f = files(&server);
    let run = ask(
        &f,
        &["--llm", "openrouter:google/gemini-2.5-flash", "--json"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["value"]["answer"], "Paris");
    assert_eq!(report["attempts"].as_array().unwrap().len(), 1);
    assert_eq!(report["attempts"][0]["verdict"], "valid");
    assert_no_key(&run);
}

#[tokio::test]
async fn all_invalid_exits_1() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(r#"{"answer": "Paris"}"#))
        .expect(2)
        .mount(&server)
        .await;
    let f = files(&server);
    let run = ask(&f, &["--max-retries", "1"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        run.stderr.contains("no valid reply after 2 attempts"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("missing required property `state`"),
        "{}",
        run.stderr
    );
    assert_no_key(&run);
}

#[tokio::test]
async fn max_retries_from_the_configuration() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply("no JSON here"))
        .expect(1)
        .mount(&server)
        .await;
    let f = files(&server);
    let config = format!(
        "[providers.openrouter]\nbase_url = \"{}/api/v1\"\nmodel_list = \"off\"\n[defaults]\nmax_retries = 0\nllm = \"gemini-flash\"\n",
        server.uri()
    );
    std::fs::write(f.path("config.toml"), config).unwrap();
    let run = ask(&f, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("no valid reply after 1 attempt"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn http_401_is_one_line_without_the_key() {
    let server = MockServer::start().await;
    let body = serde_json::json!({"error": {"message": "No auth credentials found", "code": 401}});
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(401).set_body_json(body))
        .expect(1)
        .mount(&server)
        .await;
    let f = files(&server);
    let run = ask(&f, &["--llm", "gemini-flash"]);
    assert_one_line_error(&run, 2, "401");
    assert_eq!(
        run.stderr.matches("HTTP 401").count(),
        1,
        "the provider's error is said once: {}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_no_key(&run);
}

/// A reply cut at `max_tokens` (`finish_reason: "length"`) is named on its attempt line and in the
/// final error, and the retry asks for a shorter reply.
#[tokio::test]
async fn a_reply_cut_at_max_tokens_is_named() {
    let server = MockServer::start().await;
    let mut cut = super::openrouter::completion(r#"{"answer": "Paris, the capital of"#);
    cut["choices"][0]["finish_reason"] = "length".into();
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_json(cut))
        .expect(2)
        .mount(&server)
        .await;
    let f = files(&server);
    let run = ask(&f, &["--max-retries", "1", "--max-tokens", "64"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    for n in [1, 2] {
        let line = run
            .stderr
            .lines()
            .find(|l| l.starts_with(&format!("attempt {n}: ")))
            .unwrap_or_else(|| panic!("no line for attempt {n}: {}", run.stderr));
        assert!(
            line.ends_with("; the reply was cut at max_tokens (64): --max-tokens raises it"),
            "{line}"
        );
    }
    assert!(
        run.stderr.contains(
            "no valid reply after 2 attempts (the reply was cut at max_tokens (64): --max-tokens \
             raises it); the last one's violations:"
        ),
        "{}",
        run.stderr
    );
    let requests = server.received_requests().await.unwrap();
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(first["max_tokens"], 64);
    let retry: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let retry = retry["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(retry.contains("keep it shorter"), "{retry}");
    assert_no_key(&run);
}

/// An exhausted quota (OpenAI's 429 `insufficient_quota`) is sent once and said as a quota, not as
/// an authentication failure.
#[tokio::test]
async fn an_exhausted_quota_is_asked_once_and_says_quota() {
    let server = MockServer::start().await;
    let body = serde_json::json!({"error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}});
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(429).set_body_json(body))
        .expect(1)
        .mount(&server)
        .await;
    let f = files(&server);
    let run = ask(&f, &["--llm", "gemini-flash"]);
    assert_one_line_error(&run, 2, "quota exhausted: You exceeded your current quota");
    assert!(!run.stderr.contains("authentication"), "{}", run.stderr);
    assert_no_key(&run);
}

/// A failure retried by the HTTP layer says how many requests it took, however the line numbers
/// the pipeline's attempts.
#[tokio::test]
async fn a_retried_failure_says_how_many_http_requests_were_made() {
    let server = MockServer::start().await;
    let body = serde_json::json!({"error": {"message": "Rate limit exceeded", "code": 429}});
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_json(body),
        )
        .expect(8)
        .mount(&server)
        .await;
    let f = files(&server);
    let run = ask(&f, &["--llm", "gemini-flash"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    // Each retry is a warning line, saying which request of how many and the status; the error
    // is the last line.
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 4, "{}", run.stderr);
    for (n, line) in lines[..3].iter().enumerate() {
        assert!(
            line.starts_with(" WARN claij_backends::http::retry: retrying after a failed request"),
            "{line}"
        );
        let facts = format!("request={} of=4 status=429", n + 1);
        assert!(line.contains(&facts), "{facts}: {line}");
    }
    assert!(
        lines[3].starts_with("error: ")
            && lines[3].contains("(HTTP 429, after 4 HTTP requests): rate limited"),
        "{}",
        run.stderr
    );
    // Without the warnings, the error alone.
    let quiet = ask(&f, &["--llm", "gemini-flash", "-q"]);
    assert_one_line_error(&quiet, 2, "(HTTP 429, after 4 HTTP requests): rate limited");
}

/// `max_body_bytes` and `retry_budget_secs` from the configuration reach the HTTP layer.
#[tokio::test]
async fn body_and_retry_limits_from_the_configuration() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&format!(
            r#"{{"answer": "{}", "state": "done"}}"#,
            "Paris ".repeat(400)
        )))
        .expect(1)
        .mount(&server)
        .await;
    let limits = "max_body_bytes = 1024\nretry_budget_secs = 5\n";
    let f = Files::new(&[
        ("config.toml", &format!("{}{limits}", config(&server))),
        ("schema.json", BASE),
    ]);
    let run = ask(&f, &["--llm", "gemini-flash"]);
    assert_one_line_error(
        &run,
        2,
        "response body too large: over the max_body_bytes limit of 1024 bytes",
    );
    server.verify().await;

    server.reset().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "60"))
        .expect(1)
        .mount(&server)
        .await;
    let run = ask(&f, &["--llm", "gemini-flash"]);
    assert_one_line_error(
        &run,
        2,
        "the server asks to wait 60.0 s, more than the retry budget of 5.0 s",
    );
}

/// `--max-reply-bytes` (else `[defaults] max_reply_bytes`) bounds the reply searched for JSON: a
/// longer one is an invalid attempt whose retry says its size and the limit.
#[tokio::test]
async fn a_reply_over_max_reply_bytes_is_refused_and_the_retry_says_so() {
    let server = MockServer::start().await;
    let long = format!(
        r#"{{"answer": "{}", "state": "done"}}"#,
        "Paris ".repeat(400)
    );
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(&long))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(VALID))
        .expect(1)
        .mount(&server)
        .await;
    let f = files(&server);
    let run = ask(&f, &["--llm", "gemini-flash", "--max-reply-bytes", "1024"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("over the limit of 1024 bytes (max_reply_bytes)"),
        "{}",
        run.stderr
    );
    let retry =
        String::from_utf8_lossy(&server.received_requests().await.unwrap()[1].body).into_owned();
    assert!(retry.contains("over the limit of 1024 bytes"), "{retry}");

    // The same limit from the configuration; out of range there or on the flag is a usage error.
    let config = format!("{}[defaults]\nmax_reply_bytes = 100\n", config(&server));
    let bad = Files::new(&[("config.toml", &config), ("schema.json", BASE)]);
    let run = ask(&bad, &["--llm", "gemini-flash"]);
    assert_one_line_error(
        &run,
        2,
        "defaults.max_reply_bytes: expected a whole number of bytes from 1024 to 1073741824",
    );
    let run = ask(&f, &["--llm", "gemini-flash", "--max-reply-bytes", "1e9"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--max-reply-bytes"), "{}", run.stderr);
}

/// `claij ask` on the base schema (no `--schema`), with the key set and the mock's configuration.
fn ask_on_the_base_schema(files: &Files, extra: &[&str]) -> Run {
    let config = files.path("config.toml");
    let mut args = vec!["ask", "What is the capital of France?"];
    args.extend_from_slice(extra);
    claij_env(
        &args,
        "",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some(KEY)),
        ],
    )
}

/// Without a state machine `state` is one of the declared states: the schema sent says so, and a
/// reply naming anything else (`France`, as a small model wrote) is retried.
#[tokio::test]
async fn without_a_schema_state_is_one_of_the_declared_states() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(r#"{"answer": "Paris", "state": "France"}"#))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(r#"{"answer": "Paris", "state": "answered"}"#))
        .expect(1)
        .mount(&server)
        .await;
    let f = Files::new(&[("config.toml", &config(&server))]);
    let run = ask_on_the_base_schema(&f, &["--llm", "gemini-flash", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["value"]["state"], "answered");
    assert_eq!(report["attempts"][0]["verdict"], "invalid", "{report}");
    assert_eq!(
        report["attempts"][0]["violations"][0]["instance_pointer"],
        "/state"
    );
    let requests = server.received_requests().await.unwrap();
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let sent = first.to_string();
    assert!(
        sent.contains(r#"["answered","needs_clarification","cannot_answer"]"#),
        "{sent}"
    );
    let retry = String::from_utf8_lossy(&requests[1].body).into_owned();
    assert!(retry.contains("France"), "{retry}");
    assert_no_key(&run);
    // With a schema of one's own, `state` is what that schema says.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(r#"{"answer": "Paris", "state": "France"}"#))
        .expect(1)
        .mount(&server)
        .await;
    let run = ask(&files(&server), &["--llm", "gemini-flash"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// What the model is told on the base schema, prompted, without and with memory: the example
/// reply, then the schema with `state`'s declared states.
#[tokio::test]
async fn the_prompt_on_the_base_schema() {
    for (name, extra) in [
        ("base_prompt", &[][..]),
        ("memory_prompt", &["--interceptors", "memory"][..]),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(CHAT))
            .respond_with(reply(
                r#"{"answer": "Paris", "state": "answered", "summary": "Asked for a capital."}"#,
            ))
            .expect(1)
            .mount(&server)
            .await;
        let f = Files::new(&[("config.toml", &config(&server))]);
        let mut args = vec!["--llm", "gemini-flash", "--mode", "prompted"];
        args.extend_from_slice(extra);
        let run = ask_on_the_base_schema(&f, &args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let requests = server.received_requests().await.unwrap();
        let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
        let system = body["messages"][0]["content"].as_str().unwrap().to_owned();
        assert_eq!(body["messages"][0]["role"], "system");
        insta::assert_snapshot!(name, system);
    }
}

/// `--example never` leaves the example out; `always` shows it to hosted structured output too.
#[tokio::test]
async fn example_flag() {
    for (when, native, shown) in [
        ("never", false, false),
        ("auto", true, false),
        ("always", true, true),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(CHAT))
            .respond_with(reply(r#"{"answer": "Paris", "state": "answered"}"#))
            .expect(1)
            .mount(&server)
            .await;
        let f = Files::new(&[("config.toml", &config(&server))]);
        let mode = if native { "native" } else { "prompted" };
        let run = ask_on_the_base_schema(
            &f,
            &["--llm", "gemini-flash", "--mode", mode, "--example", when],
        );
        assert_eq!(run.code, 0, "{when}: {}", run.stderr);
        let requests = server.received_requests().await.unwrap();
        let body = String::from_utf8_lossy(&requests[0].body).into_owned();
        assert_eq!(
            body.contains("The form of a valid reply"),
            shown,
            "{when}: {body}"
        );
    }
}

/// A reply the token limit cut that still validates (a list cut short, then closed by repair) is
/// an answer, exit 0, but the user is told: a warning line on stderr naming the limit and its flag,
/// `truncated` in the `--json` report. Without `--max-tokens` the provider's own limit cut it.
#[tokio::test]
async fn a_valid_reply_cut_at_the_token_limit_is_flagged() {
    let server = MockServer::start().await;
    let mut cut = super::openrouter::completion(r#"{"answer": "Paris", "state": "done"}"#);
    cut["choices"][0]["finish_reason"] = "length".into();
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_json(cut))
        .expect(3)
        .mount(&server)
        .await;
    let f = files(&server);
    let run = ask(&f, &["--max-tokens", "64"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        serde_json::from_str::<Value>(&run.stdout).unwrap()["answer"],
        "Paris"
    );
    assert!(
        run.stderr.lines().any(|l| l
            == "warning: the reply was cut at max_tokens (64): --max-tokens raises it; the value \
                is valid but may be incomplete"),
        "{}",
        run.stderr
    );

    let report = ask(&f, &["--max-tokens", "64", "--json"]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    assert!(report.stderr.is_empty(), "{}", report.stderr);
    let report: Value = serde_json::from_str(&report.stdout).unwrap();
    assert_eq!(report["truncated"], true, "{report}");
    assert_eq!(report["attempts"][0]["finish_reason"], "length", "{report}");

    let hosted = ask(&f, &[]);
    assert_eq!(hosted.code, 0, "{}", hosted.stderr);
    assert!(
        hosted.stderr.contains(
            "the reply was cut at the provider's output token limit: --max-tokens sets one"
        ),
        "{}",
        hosted.stderr
    );
    assert_no_key(&hosted);
}

/// A reply that ended on its own is not flagged: `truncated` is false, no warning.
#[tokio::test]
async fn a_whole_reply_is_not_flagged() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(VALID))
        .expect(2)
        .mount(&server)
        .await;
    let f = files(&server);
    let run = ask(&f, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    let report = ask(&f, &["--json"]);
    let report: Value = serde_json::from_str(&report.stdout).unwrap();
    assert_eq!(report["truncated"], false, "{report}");
}

/// An empty question, or one of whitespace only, is refused before anything is asked: a model
/// call on nothing would cost a turn and answer nothing.
#[tokio::test]
async fn an_empty_question_is_refused() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(VALID))
        .expect(0)
        .mount(&server)
        .await;
    let f = files(&server);
    let config = f.path("config.toml");
    for question in ["", "   ", "\n\t"] {
        let run = claij_env(
            &["ask", question, "--llm", "gemini-flash"],
            "",
            &[
                ("CLAIJ_CONFIG", Some(config.as_str())),
                ("OPENROUTER_API_KEY", Some(KEY)),
            ],
        );
        assert_one_line_error(&run, 2, "the question is empty: ask something");
        assert!(run.stdout.is_empty(), "{}", run.stdout);
    }
}

/// A refusal (OpenAI's `message.refusal`, which OpenRouter passes on) is the model's answer: sent
/// once whatever `--max-retries`, said in one line with the provider's message, exit 1 as a reply
/// that never validated.
#[tokio::test]
async fn a_refusal_is_sent_once_and_said_in_one_line() {
    let server = MockServer::start().await;
    let mut body = super::openrouter::completion("");
    body["choices"][0]["message"]["content"] = Value::Null;
    body["choices"][0]["message"]["refusal"] = "I'm sorry, I cannot help with that.".into();
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .expect(1)
        .mount(&server)
        .await;
    let f = files(&server);
    let run = ask(&f, &["--llm", "gemini-flash", "--max-retries", "3"]);
    assert_one_line_error(&run, 1, "refused: I'm sorry, I cannot help with that.");
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_no_key(&run);
}
