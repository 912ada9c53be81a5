//! Unit tests of `claij ask`'s pure parts: `--llm`, the model cache, the report's formatting (the
//! session file's are in `session/tests.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::Path;

use super::report;
use claij::model::{self as llm, Llm, Provider};

#[track_caller]
fn check_llm(text: &str, expected: Result<Llm, &str>) {
    match (llm::parse(text), expected) {
        (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
        (Err(got), Err(part)) => assert!(got.contains(part), "{text}: {got}"),
        (got, want) => panic!("{text}: got {got:?}, expected {want:?}"),
    }
}

fn remote(provider: Provider, model: &str) -> Llm {
    Llm::Remote {
        provider,
        model: model.to_owned(),
    }
}

#[test]
fn llm_values() {
    check_llm("local", Ok(Llm::Local));
    check_llm(
        "openrouter:google/gemini-2.5-flash",
        Ok(remote(Provider::OpenRouter, "google/gemini-2.5-flash")),
    );
    check_llm("openai:gpt-5", Ok(remote(Provider::OpenAi, "gpt-5")));
    check_llm(
        "anthropic:claude-sonnet-4-5",
        Ok(remote(Provider::Anthropic, "claude-sonnet-4-5")),
    );
    check_llm(
        "gemini:gemini-2.5-flash",
        Ok(remote(Provider::Gemini, "gemini-2.5-flash")),
    );
    // A model id may itself hold a colon (OpenRouter's `:free` variants).
    check_llm(
        "openrouter:meta-llama/llama-3.3-70b-instruct:free",
        Ok(remote(
            Provider::OpenRouter,
            "meta-llama/llama-3.3-70b-instruct:free",
        )),
    );
    check_llm("gpt-5", Err("expected `local` or PROVIDER:MODEL"));
    check_llm("mistral:large", Err("unknown provider `mistral`"));
    check_llm("openai:", Err("no model after `openai:`"));
    check_llm("Local", Err("expected `local`"));
}

#[track_caller]
fn check_model_dir(vars: &[(&str, &str)], expected: &Path) {
    let var = |name: &str| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(v))
    };
    assert_eq!(llm::model_dir(var), expected, "{vars:?}");
}

#[test]
fn model_dir_follows_xtask() {
    check_model_dir(
        &[
            ("CLAIJ_MODEL_DIR", "/models"),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ],
        Path::new("/models"),
    );
    check_model_dir(
        &[
            ("CLAIJ_MODEL_DIR", ""),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ],
        Path::new("/xdg/claij/models"),
    );
    check_model_dir(
        &[("XDG_CACHE_HOME", "relative"), ("HOME", "/home/u")],
        Path::new("/home/u/.cache/claij/models"),
    );
    check_model_dir(&[], &std::env::temp_dir().join("claij").join("models"));
}

#[test]
fn model_names() {
    let name = |p: &str| llm::model_name(Path::new(p));
    assert_eq!(
        name("/cache/SmolLM2-135M-Instruct.Q4_1.gguf"),
        "SmolLM2-135M-Instruct"
    );
    assert_eq!(name("model.gguf"), "model");
    assert_eq!(name(".gguf"), "local");
}

#[test]
fn dollars() {
    let cases = [
        (0.0, "$0"),
        (0.5, "$0.5"),
        (0.000123, "$0.000123"),
        (1.25, "$1.25"),
        (0.0000002, "$2.0e-7"),
    ];
    for (cost, expected) in cases {
        assert_eq!(report::dollars(cost), expected, "{cost}");
    }
}

#[track_caller]
fn check_stats(latency_ms: u64, input: u64, output: u64, expected: &str) {
    let usage = claij_backends::Usage {
        input_tokens: input,
        output_tokens: output,
        ..claij_backends::Usage::default()
    };
    let latency = std::time::Duration::from_millis(latency_ms);
    assert_eq!(report::attempt_stats(latency, usage), expected);
}

#[test]
fn attempt_and_total_lines_show_cached_tokens() {
    let usage = claij_backends::Usage {
        input_tokens: 412,
        output_tokens: 87,
        cached_tokens: 300,
        ..claij_backends::Usage::default()
    };
    let latency = std::time::Duration::from_millis(2310);
    assert_eq!(
        report::attempt_stats(latency, usage),
        "in 2.31s, 412+87 tokens (300 cached), 38 tok/s"
    );
    let lines = report::attempt_lines(&[], usage, latency);
    assert_eq!(
        lines,
        ["0 attempts, 412+87 tokens (300 cached), 2.31s, cost unknown"]
    );
    // The --json report's usage says it too, per attempt and in all.
    let report = report::to_json(None, &[], usage, latency);
    assert_eq!(report["usage"]["cached_tokens"], 300);
}

#[test]
fn attempt_lines_report_the_generation_rate() {
    check_stats(2310, 412, 87, "in 2.31s, 412+87 tokens, 38 tok/s");
    check_stats(4000, 412, 18, "in 4.00s, 412+18 tokens, 4.5 tok/s");
    // No output, or too quick to be a rate (a mock server): no rate.
    check_stats(2310, 412, 0, "in 2.31s, 412+0 tokens");
    check_stats(5, 12, 3, "in 0.01s, 12+3 tokens");
}

#[test]
fn tool_result_lines_are_one_line_and_cut() {
    use claij_interceptors::{ToolOrigin, ToolResult};
    let result = |name: &str, output: Result<serde_json::Value, String>, origin| ToolResult {
        name: name.into(),
        args: serde_json::json!({"a": 1}),
        output,
        origin,
    };
    assert_eq!(
        report::tool_result_line(&result("add", Ok(serde_json::json!(2)), ToolOrigin::Rust)),
        "tool add {\"a\":1}: ok: 2"
    );
    let mcp = ToolOrigin::Mcp {
        server: "fs".into(),
    };
    assert_eq!(
        report::tool_result_line(&result("fs.read", Err("no\nsuch file".into()), mcp.clone())),
        "mcp fs.read {\"a\":1}: error: no such file"
    );
    let long = report::tool_result_line(&result("fs.read", Ok("x".repeat(500).into()), mcp));
    assert_eq!(long.chars().count(), 200, "{long}");
    assert!(long.ends_with("xx…"), "{long}");
}

#[test]
fn eval_lines_are_one_line_and_cut() {
    use claij_interceptors::builtin::eval::Eval;
    let eval = Eval::new();
    assert_eq!(
        report::eval_line(&eval.run_blocking("6 * 7")),
        "eval \"6 * 7\": ok: 42"
    );
    assert_eq!(
        report::eval_line(&eval.run_blocking("print(\"hi\");\nprint(\"there\"); 1")),
        "eval \"print(\\\"hi\\\");\\nprint(\\\"there\\\"); 1\": ok: 1, printed: \"hi\\nthere\""
    );
    let failed = report::eval_line(&eval.run_blocking("let x = ;"));
    assert!(
        failed.starts_with("eval \"let x = ;\": error: syntax error: "),
        "{failed}"
    );
    let long = report::eval_line(&eval.run_blocking(&format!("\"{}\"", "x".repeat(500))));
    assert_eq!(long.chars().count(), 200, "{long}");
    assert!(long.ends_with("xx…"), "{long}");
}
