//! Log lines on stderr: `-v`, `-q`, `RUST_LOG`, `--log-format json`, against a mock OpenRouter that
//! answers once with an invalid reply (retried) and then with a fenced reply holding a trailing
//! comma (repaired). stdout stays the answer.

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use super::openrouter::{CHAT, config, reply};
use super::{BASE, Files, Run, assert_one_line_error, claij, claij_env};

const KEY: &str = "sk-or-v1-logging-secret-0123456789";

/// The mock: `{"answer": "Paris"}` first (no `state`), then the answer in a code fence with a trailing comma.
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
        .expect(1)
        .mount(&server)
        .await;
    server
}

/// `claij ask` at the mock with `extra` arguments and environment.
fn ask(server: &MockServer, extra: &[&str], env: &[(&str, Option<&str>)]) -> Run {
    let f = Files::new(&[("config.toml", &config(server)), ("schema.json", BASE)]);
    let config = f.path("config.toml");
    let schema = f.path("schema.json");
    let mut args = vec![
        "ask",
        "Capital of France?",
        "--schema",
        &schema,
        "--max-retries",
        "2",
    ];
    args.extend_from_slice(extra);
    let mut all: Vec<(&str, Option<&str>)> = vec![
        ("CLAIJ_CONFIG", Some(config.as_str())),
        ("OPENROUTER_API_KEY", Some(KEY)),
        ("RUST_LOG", None),
        ("NO_COLOR", None),
    ];
    all.extend_from_slice(env);
    let run = claij_env(&args, "", &all);
    assert!(!run.stdout.contains(KEY), "{}", run.stdout);
    assert!(!run.stderr.contains(KEY), "{}", run.stderr);
    run
}

/// The lines of `stderr` at `level` (as the human format writes it, padded to five).
fn at<'a>(stderr: &'a str, level: &str) -> Vec<&'a str> {
    let prefix = format!("{level:>5} ");
    stderr
        .lines()
        .filter(|line| line.starts_with(&prefix))
        .collect()
}

#[track_caller]
fn assert_answer(run: &Run) {
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout, "{\n  \"answer\": \"Paris\",\n  \"state\": \"done\"\n}\n",
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn the_default_shows_the_retry_and_the_repair_a_line_each_and_nothing_below_warn() {
    let server = retried_then_repaired().await;
    let run = ask(&server, &[], &[]);
    assert_answer(&run);
    let warnings = at(&run.stderr, "WARN");
    let retry: Vec<&&str> = warnings
        .iter()
        .filter(|l| l.contains("reply failed validation; retrying"))
        .collect();
    assert_eq!(retry.len(), 1, "{}", run.stderr);
    assert!(
        retry[0].starts_with(" WARN claij_interceptors::pipeline: "),
        "{}",
        retry[0]
    );
    for field in ["attempt=1", "of=3", "why=violations", "n_violations=1"] {
        assert!(retry[0].contains(field), "{field}: {}", retry[0]);
    }
    let repair: Vec<&&str> = warnings
        .iter()
        .filter(|l| l.contains("reply repaired"))
        .collect();
    assert_eq!(repair.len(), 1, "{}", run.stderr);
    assert!(
        repair[0].contains("attempt=2 fixes=extracted:1,trailing_comma:1"),
        "{}",
        repair[0]
    );
    for level in ["INFO", "DEBUG", "TRACE"] {
        assert!(at(&run.stderr, level).is_empty(), "{}", run.stderr);
    }
}

#[tokio::test]
async fn quiet_hides_the_warnings_and_verbose_shows_debug_lines() {
    let server = retried_then_repaired().await;
    let quiet = ask(&server, &["-q"], &[]);
    assert_answer(&quiet);
    assert!(at(&quiet.stderr, "WARN").is_empty(), "{}", quiet.stderr);
    // The command's own report is still there.
    assert!(
        quiet.stderr.contains("attempt 2: valid"),
        "{}",
        quiet.stderr
    );

    let server = retried_then_repaired().await;
    let verbose = ask(&server, &["-v"], &[]);
    assert_answer(&verbose);
    let debug = at(&verbose.stderr, "DEBUG");
    assert!(
        debug.iter().any(|l| l.contains("llm reply")),
        "{}",
        verbose.stderr
    );
    assert!(
        debug
            .iter()
            .any(|l| l.starts_with("DEBUG claij_backends::")),
        "{}",
        verbose.stderr
    );
    assert!(
        !at(&verbose.stderr, "WARN").is_empty(),
        "{}",
        verbose.stderr
    );
    assert!(
        at(&verbose.stderr, "TRACE").is_empty(),
        "{}",
        verbose.stderr
    );
}

#[tokio::test]
async fn rust_log_overrides_the_flags() {
    let server = retried_then_repaired().await;
    let errors_only = ask(&server, &["-v"], &[("RUST_LOG", Some("error"))]);
    assert_answer(&errors_only);
    assert!(
        at(&errors_only.stderr, "WARN").is_empty() && at(&errors_only.stderr, "DEBUG").is_empty(),
        "{}",
        errors_only.stderr
    );

    let server = retried_then_repaired().await;
    let one_crate = ask(
        &server,
        &["-q"],
        &[("RUST_LOG", Some("warn,claij_interceptors=debug"))],
    );
    assert_answer(&one_crate);
    let debug = at(&one_crate.stderr, "DEBUG");
    assert!(!debug.is_empty(), "{}", one_crate.stderr);
    assert!(
        debug
            .iter()
            .all(|l| l.starts_with("DEBUG claij_interceptors::")),
        "{}",
        one_crate.stderr
    );
    assert!(
        !at(&one_crate.stderr, "WARN").is_empty(),
        "{}",
        one_crate.stderr
    );
}

#[tokio::test]
async fn json_logs_are_an_object_per_line_and_stdout_is_the_report() {
    let server = retried_then_repaired().await;
    let run = ask(&server, &["--json", "--log-format", "json"], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["value"]["answer"], "Paris");
    assert_eq!(report["attempts"].as_array().unwrap().len(), 2);
    let lines: Vec<Value> = run
        .stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    assert!(!lines.is_empty(), "{}", run.stderr);
    for line in &lines {
        assert!(line["level"].is_string(), "{line}");
        assert!(line["target"].is_string(), "{line}");
        assert!(line["fields"]["message"].is_string(), "{line}");
    }
    let repaired = lines
        .iter()
        .find(|l| l["fields"]["message"] == "reply repaired")
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert_eq!(repaired["level"], "WARN");
    assert_eq!(repaired["target"], "claij_interceptors::pipeline");
    assert_eq!(repaired["fields"]["fixes"], "extracted:1,trailing_comma:1");
    assert_eq!(repaired["fields"]["attempt"], 2);
    let retry = lines
        .iter()
        .find(|l| l["fields"]["message"] == "reply failed validation; retrying")
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert_eq!(retry["fields"]["attempt"], 1);
    assert_eq!(retry["fields"]["of"], 3);
    assert_eq!(retry["fields"]["n_violations"], 1);
}

#[test]
fn log_flags_are_global_and_checked() {
    // After the subcommand as before it.
    let before = claij(&["-q", "validate", "--help"], "");
    assert_eq!(before.code, 0, "{}", before.stderr);
    let unknown = claij(&["validate", "--log-format", "xml", "-"], "{}");
    assert_one_line_error(
        &unknown,
        2,
        "invalid value 'xml' for '--log-format <FORMAT>'",
    );
    let both = claij(&["validate", "-q", "-v", "-"], "{}");
    assert_one_line_error(&both, 2, "cannot be used with");
    let bad = claij_env(
        &["schema", "render", "-"],
        r#"{"type": "string"}"#,
        &[("RUST_LOG", Some("claij=loud"))],
    );
    assert_one_line_error(&bad, 2, "RUST_LOG: ");
}

#[tokio::test]
async fn a_dialect_loss_is_an_info_line_naming_the_keyword_and_the_provider() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(r#"{"answer": "Paris", "state": "done"}"#))
        .expect(2)
        .mount(&server)
        .await;
    // OpenAI's strict dialect (OpenRouter's) has no `minLength`; a `description` is no loss.
    let schema = r#"{"type": "object", "required": ["answer", "state"], "properties": {
        "answer": {"type": "string", "minLength": 2, "description": "the answer"},
        "state": {"type": "string"}}}"#;
    let f = Files::new(&[("config.toml", &config(&server)), ("schema.json", schema)]);
    let config = f.path("config.toml");
    let schema = f.path("schema.json");
    let args = [
        "ask",
        "Capital?",
        "--schema",
        &schema,
        "--llm",
        "gemini-flash",
    ];
    let env = |rust_log| {
        [
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("OPENROUTER_API_KEY", Some(KEY)),
            ("RUST_LOG", rust_log),
        ]
    };
    let info = claij_env(&args, "", &env(Some("warn,claij_interceptors=info")));
    assert_eq!(info.code, 0, "{}", info.stderr);
    let lines = at(&info.stderr, "INFO");
    let loss: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("schema keywords the provider does not enforce"))
        .collect();
    assert_eq!(loss.len(), 1, "{}", info.stderr);
    for fact in [
        "provider=openrouter",
        "model=google/gemini-2.5-flash",
        "dialect=OpenAiStrict",
        "dropped=minLength at /properties/answer",
    ] {
        assert!(loss[0].contains(fact), "{fact}: {}", loss[0]);
    }
    assert!(!loss[0].contains("description"), "{}", loss[0]);
    // Not at the default level: the validator still checks the keyword.
    let default = claij_env(&args, "", &env(None));
    assert_eq!(default.code, 0, "{}", default.stderr);
    assert!(
        !default.stderr.contains("does not enforce"),
        "{}",
        default.stderr
    );
}

#[tokio::test]
async fn json_cut_out_of_a_fence_is_an_info_line_not_a_warning() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(
            "Here:\n```json\n{\"answer\": \"Paris\", \"state\": \"done\"}\n```",
        ))
        .expect(2)
        .mount(&server)
        .await;
    let default = ask(&server, &[], &[]);
    assert_answer(&default);
    assert!(at(&default.stderr, "WARN").is_empty(), "{}", default.stderr);
    let info = ask(
        &server,
        &[],
        &[("RUST_LOG", Some("claij_interceptors=info"))],
    );
    assert_answer(&info);
    let lines = at(&info.stderr, "INFO");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("reply extracted attempt=1 fixes=extracted:1")),
        "{}",
        info.stderr
    );
}
