//! End-to-end tests of the `claij` binary: exit codes, stdout, stderr.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::io::Write as _;
use std::process::{Command, Stdio};

use claij_test_support::harness::{Files, Run, assert_one_line_error};

mod ask;
mod ask_agent;
mod ask_budget;
mod ask_metrics;
mod ask_stream;
mod ask_wiremock;
mod chat;
mod compaction;
mod config;
mod conformance_login;
mod consensus;
mod elicitation;
mod eval;
mod flags;
mod fsm;
mod fsm_services;
mod limits;
mod llama_server;
mod local_model;
mod logging;
mod mcp;
mod mcp_content;
mod mcp_logging;
mod mcp_login;
mod mcp_offer;
mod memory;
mod models;
mod openai_compatible;
mod openrouter;
mod otel;
mod proposals;
mod recall;
mod restate;
mod schema_cost;
mod server;
mod session;

fn claij(args: &[&str], stdin: &str) -> Run {
    claij_env(args, stdin, &[])
}

/// Runs `claij` with environment changes: `(name, Some(value))` sets, `(name, None)` removes
/// ([`claij_test_support::harness::run`]: no developer's configuration or data unless named).
fn claij_env(args: &[&str], stdin: &str, env: &[(&str, Option<&str>)]) -> Run {
    claij_test_support::harness::run(env!("CARGO_BIN_EXE_claij"), args, stdin, env)
}

/// Whether util-linux `script`, which gives a test a pseudo-terminal, runs here. Without it the test
/// `test` is skipped, saying so on stderr, except under `CI=true`, where it fails: a skipped test
/// there would hide a failure.
fn script_or_skip(test: &str) -> bool {
    let runs = Command::new("script")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if runs {
        return true;
    }
    assert!(
        !claij_test_support::is_ci(|name| std::env::var_os(name)),
        "{test}: CI is set and util-linux `script` (the test's pseudo-terminal) is not on PATH: \
         install util-linux"
    );
    #[allow(clippy::print_stderr, reason = "a skipped test says so")]
    {
        eprintln!("{test}: skipped: no `script` (util-linux) for a pseudo-terminal");
    }
    false
}

const BASE: &str = r#"{"type": "object", "required": ["answer", "state"],
  "properties": {"answer": {"type": "string"}, "state": {"type": "string"}, "n": {"type": "integer"}}}"#;

/// The live suites and the MCP conformance client left the shipped binary for the `claij-suite`
/// harness (crates/suite): no `suite` or `mcp conformance` command, hidden or not.
#[test]
fn the_binary_has_no_suite_command() {
    let run = claij(&["suite", "list"], "");
    assert_one_line_error(&run, 2, "unrecognized subcommand 'suite'");
    let help = claij(&["--help"], "");
    assert!(!help.stdout.contains("suite"), "{}", help.stdout);
    let conformance = claij(&["mcp", "conformance", "http://127.0.0.1:1"], "");
    assert_one_line_error(&conformance, 2, "unrecognized subcommand 'conformance'");
}

#[test]
fn validate_exit_codes_and_output() {
    let f = Files::new(&[
        ("s.json", BASE),
        ("ok.json", r#"{"answer": "a", "state": "s"}"#),
        ("bad.json", r#"{"answer": 1}"#),
        ("broken.json", "{\"answer\": "),
        ("bad-schema.json", r#"{"type": "strng"}"#),
    ]);
    let s = f.path("s.json");
    let ok = claij(&["validate", "--schema", &s, &f.path("ok.json")], "");
    assert_eq!((ok.code, ok.stdout.as_str()), (0, "valid\n"));
    let bad = claij(&["validate", "--schema", &s, &f.path("bad.json")], "");
    assert_eq!(bad.code, 1);
    insta::assert_snapshot!(bad.stdout, @r"
    (root): missing required property `state`  [/required]
    /answer: expected string, got number  [/properties/answer/type]
    ");
    assert_eq!(bad.stderr, "invalid: 2 violations\n");
    let stdin = claij(
        &["validate", "--schema", &s, "--json"],
        r#"{"answer": "a", "state": 3}"#,
    );
    assert_eq!(stdin.code, 1);
    let report: serde_json::Value = serde_json::from_str(&stdin.stdout).unwrap();
    assert_eq!(report["valid"], false);
    assert_eq!(report["violations"][0]["instance_pointer"], "/state");
    let broken = claij(&["validate", "--schema", &s, &f.path("broken.json")], "");
    assert_one_line_error(
        &broken,
        1,
        "not valid JSON: EOF while parsing a value at line 1 column 11",
    );
    let missing = claij(&["validate", "--schema", &f.path("nope.json"), "-"], "{}");
    assert_one_line_error(&missing, 2, "cannot read");
    let bad_schema = claij(
        &["validate", "--schema", &f.path("bad-schema.json"), "-"],
        "{}",
    );
    assert_one_line_error(&bad_schema, 2, "invalid schema at `/type`");
    let usage = claij(&["validate"], "");
    assert_eq!(usage.code, 2);
}

#[test]
fn repair_recovers_and_reports() {
    let f = Files::new(&[("s.json", BASE)]);
    let messy = "Here you go:\n```json\n{'answer': 'Paris', state: \"done\", 'n': '3',}\n```\nBye";
    let plain = claij(&["repair"], messy);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert_eq!(
        plain.stdout,
        "{\"answer\":\"Paris\",\"state\":\"done\",\"n\":\"3\"}\n"
    );
    let coerced = claij(&["repair", "--schema", &f.path("s.json"), "--json"], messy);
    assert_eq!(coerced.code, 0, "{}", coerced.stderr);
    let out: serde_json::Value = serde_json::from_str(&coerced.stdout).unwrap();
    assert_eq!(
        out["value"],
        serde_json::json!({"answer": "Paris", "state": "done", "n": 3})
    );
    let kinds: Vec<&str> = out["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"string_to_number"), "{kinds:?}");
    assert!(kinds.contains(&"quote_style"), "{kinds:?}");
    let invalid = claij(
        &["repair", "--schema", &f.path("s.json")],
        r#"{"answer": "x"}"#,
    );
    assert_eq!(invalid.code, 1);
    assert!(invalid.stdout.is_empty());
    assert!(
        invalid.stderr.contains("missing required property `state`"),
        "{}",
        invalid.stderr
    );
    let nothing = claij(&["repair"], "I cannot help with that.");
    assert_eq!(nothing.code, 1, "{}", nothing.stdout);
    assert!(
        nothing.stderr.starts_with("no JSON found"),
        "{}",
        nothing.stderr
    );
}

#[test]
fn schema_compose_and_render() {
    let f = Files::new(&[
        ("base.json", BASE),
        (
            "memory.delta.json",
            r#"{"extension_id": "summary-v1", "added_by": "memory", "added_at": "2026-01-01T00:00:00Z",
               "delta": {"properties": {"summary": {"type": "string", "description": "Key facts"}}, "required": ["summary"]}}"#,
        ),
        (
            "tags.json",
            r#"{"properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 10}}}}"#,
        ),
        ("broken.json", r#"{"properties": {"x": {"type": "strin"}}}"#),
    ]);
    let composed = claij(
        &[
            "schema",
            "compose",
            &f.path("base.json"),
            &f.path("memory.delta.json"),
            &f.path("tags.json"),
            "--compact",
        ],
        "",
    );
    assert_eq!(composed.code, 0, "{}", composed.stderr);
    let schema: serde_json::Value = serde_json::from_str(&composed.stdout).unwrap();
    assert_eq!(
        schema["required"],
        serde_json::json!(["answer", "state", "summary"])
    );
    assert!(schema["properties"]["tags"].is_object());
    let rejected = claij(
        &[
            "schema",
            "compose",
            &f.path("base.json"),
            &f.path("broken.json"),
        ],
        "",
    );
    assert_one_line_error(
        &rejected,
        2,
        "extension `broken`: invalid schema at `/properties/x/type`",
    );

    std::fs::write(f.path("composed.json"), &composed.stdout).unwrap();
    let compact = claij(
        &[
            "schema",
            "render",
            "--as",
            "compact",
            &f.path("composed.json"),
        ],
        "",
    );
    assert_eq!(compact.code, 0, "{}", compact.stderr);
    assert!(compact.stdout.contains("summary"), "{}", compact.stdout);
    let strict = claij(
        &[
            "schema",
            "render",
            "--as",
            "openai-strict",
            &f.path("composed.json"),
        ],
        "",
    );
    assert_eq!(strict.code, 0, "{}", strict.stderr);
    let strict_schema: serde_json::Value = serde_json::from_str(&strict.stdout).unwrap();
    assert_eq!(strict_schema["additionalProperties"], false);
    assert!(strict.stderr.contains("maxLength"), "{}", strict.stderr);
    let gemini = claij(
        &[
            "schema",
            "render",
            "--as",
            "gemini",
            &f.path("composed.json"),
        ],
        "",
    );
    assert_eq!(gemini.code, 0, "{}", gemini.stderr);
    let json = claij(
        &["schema", "render", "--as", "json", "-"],
        r#"{ "type" : "string" }"#,
    );
    assert_eq!(json.stdout, "{\"type\":\"string\"}\n");
    let garbage = claij(&["schema", "render", "-"], "{not json");
    assert_one_line_error(&garbage, 2, "stdin: invalid JSON");
}

#[test]
fn repair_survives_invalid_utf8_and_deep_nesting() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_claij"))
        .arg("repair")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"a\": \"caf\xe9\", }")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"a\":\"caf\u{fffd}\"}\n"
    );

    let deep = "[".repeat(100_000);
    let run = claij(&["repair"], &deep);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}
