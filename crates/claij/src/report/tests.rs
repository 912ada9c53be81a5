//! Unit tests of the report's lines: costs, rates, cached tokens, tool and `eval` lines, budgets.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use claij_backends::Usage;
use claij_interceptors::{ToolOrigin, ToolResult};
use serde_json::json;

use super::{Over, Report, attempt_stats, dollars, rate, tool_line};

#[test]
fn dollars_are_short() {
    let cases = [
        (0.0, "$0"),
        (0.5, "$0.5"),
        (0.000123, "$0.000123"),
        (1.25, "$1.25"),
        (0.0000002, "$2.0e-7"),
    ];
    for (cost, expected) in cases {
        assert_eq!(dollars(cost), expected, "{cost}");
    }
}

#[track_caller]
fn check_stats(latency_ms: u64, input: u64, output: u64, expected: &str) {
    let usage = Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    };
    let latency = Duration::from_millis(latency_ms);
    assert_eq!(attempt_stats(latency, usage), expected);
}

#[test]
fn attempt_and_total_lines_show_cached_tokens() {
    let usage = Usage {
        input_tokens: 412,
        output_tokens: 87,
        cached_tokens: 300,
        ..Usage::default()
    };
    let latency = Duration::from_millis(2310);
    assert_eq!(
        attempt_stats(latency, usage),
        "in 2.31s, 412+87 tokens (300 cached), 38 tok/s"
    );
    let report = Report::new(&[], usage, latency);
    assert_eq!(
        report.lines(),
        ["0 attempts, 412+87 tokens (300 cached), 2.31s, cost unknown"]
    );
    // The JSON report's usage says it too, per attempt and in all.
    assert_eq!(report.to_json(None)["usage"]["cached_tokens"], 300);
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
fn rates() {
    assert_eq!(
        rate(87, Duration::from_millis(2310)).as_deref(),
        Some("38 tok/s")
    );
    assert_eq!(
        rate(9, Duration::from_secs(2)).as_deref(),
        Some("4.5 tok/s")
    );
    assert_eq!(rate(0, Duration::from_secs(2)), None);
    assert_eq!(rate(5, Duration::from_millis(50)), None);
}

#[test]
fn tool_result_lines_are_one_line_and_cut() {
    let result = |name: &str, output: Result<serde_json::Value, String>, origin| ToolResult {
        name: name.into(),
        args: json!({"a": 1}),
        output,
        origin,
    };
    assert_eq!(
        tool_line(&result("add", Ok(json!(2)), ToolOrigin::Rust)),
        "tool add {\"a\":1}: ok: 2"
    );
    let mcp = ToolOrigin::Mcp {
        server: "fs".into(),
    };
    assert_eq!(
        tool_line(&result("fs.read", Err("no\nsuch file".into()), mcp.clone())),
        "mcp fs.read {\"a\":1}: error: no such file"
    );
    let long = tool_line(&result("fs.read", Ok("x".repeat(500).into()), mcp));
    assert_eq!(long.chars().count(), 200, "{long}");
    assert!(long.ends_with("xx…"), "{long}");
}

#[cfg(feature = "eval")]
#[test]
fn eval_lines_are_one_line_and_cut() {
    use super::eval_line;
    use claij_interceptors::builtin::eval::Eval;
    let eval = Eval::new();
    assert_eq!(
        eval_line(&eval.run_blocking("6 * 7")),
        "eval \"6 * 7\": ok: 42"
    );
    assert_eq!(
        eval_line(&eval.run_blocking("print(\"hi\");\nprint(\"there\"); 1")),
        "eval \"print(\\\"hi\\\");\\nprint(\\\"there\\\"); 1\": ok: 1, printed: \"hi\\nthere\""
    );
    let failed = eval_line(&eval.run_blocking("let x = ;"));
    assert!(
        failed.starts_with("eval \"let x = ;\": error: syntax error: "),
        "{failed}"
    );
    let long = eval_line(&eval.run_blocking(&format!("\"{}\"", "x".repeat(500))));
    assert_eq!(long.chars().count(), 200, "{long}");
    assert!(long.ends_with("xx…"), "{long}");
}

#[test]
fn a_budget_says_which_bound_and_the_call_it_did_not_make() {
    let steps = Over {
        budget: "max_steps".into(),
        limit: 3.0,
        used: 3.0,
        estimate: None,
    };
    assert_eq!(
        steps.to_string(),
        "no answer within the agent run's max_steps budget (3 of 3 used)"
    );
    assert_eq!(
        steps.to_json(),
        json!({"budget": "max_steps", "limit": 3.0, "used": 3.0})
    );
    let cost = Over {
        budget: "max_cost_usd".into(),
        limit: 0.0001,
        used: 0.00004,
        estimate: Some(0.0001),
    };
    assert_eq!(
        cost.to_string(),
        "no answer within the agent run's max_cost_usd budget ($0.00004 of $0.0001 used; the next call, estimated at $0.0001, would cross it)"
    );
    assert_eq!(cost.to_json()["next_call_estimate"], 0.0001);
}

#[test]
fn what_is_remembered_is_numbered() {
    let mut memory = claij_interceptors::MemoryState::default();
    assert_eq!(super::remembered(&memory), "(nothing remembered yet)");
    memory.summaries = vec!["Asked for Paris.".into(), "Likes maps.".into()];
    memory.insights = Some("A geographer.".into());
    assert_eq!(
        super::remembered(&memory),
        "remembered:\n  1. Asked for Paris.\n  2. Likes maps.\n  insights: A geographer."
    );
}

#[test]
fn what_recall_recalled_is_listed_with_its_session() {
    use claij_interceptors::builtin::recall::{Hit, RecallSession, Recalled, Record};
    use std::time::{Duration, SystemTime};
    let mut ctx = claij_interceptors::Context::default();
    assert_eq!(super::recalled(&ctx), None);
    ctx.insert(RecallSession {
        session_id: "s1".into(),
    });
    assert_eq!(
        super::recalled(&ctx).unwrap(),
        "recall memory, session s1 (`claij memory list --session s1` lists it):\n  (nothing recalled for the last turn)"
    );
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(7200);
    let record = Record {
        id: "m".into(),
        session: "s1".into(),
        text: "The cat is Miso.".into(),
        embedding: vec![],
        created_at: SystemTime::UNIX_EPOCH,
    };
    ctx.insert(Recalled {
        input: "cat?".into(),
        hits: vec![Hit {
            record,
            similarity: 0.8,
        }],
        at: Some(now),
    });
    assert_eq!(
        super::recalled(&ctx).unwrap(),
        "recall memory, session s1 (`claij memory list --session s1` lists it):\n  1. (2 hours ago, similarity 0.80) The cat is Miso."
    );
}

/// A chat turn for people: the answer on stdout (not again after the same streamed text), the
/// state, the summary, the calls and the total on stderr.
#[cfg(feature = "eval")]
#[test]
fn a_chat_turn_shows_the_answer_once_and_its_lines() {
    use claij_interceptors::Answer;

    use super::chat_turn;
    let answer = |value: serde_json::Value| Answer {
        value,
        attempts: Vec::new(),
        usage: Usage::default(),
        skipped: Vec::new(),
    };
    let told = answer(json!({"answer": "Paris", "state": "done", "summary": "Asked for Paris."}));
    let turn = chat_turn(&told, "", &[], None, 3, Duration::from_millis(1500));
    assert_eq!(turn.out, "Paris\n");
    assert_eq!(
        turn.err[..2],
        ["  state: done", "  remembered: Asked for Paris."]
    );
    assert!(turn.err[2].starts_with("  [turn 3 · "), "{:?}", turn.err);
    assert_eq!(turn.err.len(), 3);
    // Streamed as it is: the line is ended, the answer not written again.
    assert_eq!(
        chat_turn(&told, "Paris", &[], None, 3, Duration::ZERO).out,
        "\n"
    );
    // Streamed otherwise, or no `answer`: written (the value whole when it has no text).
    assert_eq!(
        chat_turn(&told, "Par", &[], None, 3, Duration::ZERO).out,
        "\nParis\n"
    );
    let bare = answer(json!({"n": 1}));
    let turn = chat_turn(&bare, "", &[], None, 1, Duration::ZERO);
    assert_eq!(turn.out, "{\n  \"n\": 1\n}\n");
    assert_eq!(turn.err.len(), 1);
}
