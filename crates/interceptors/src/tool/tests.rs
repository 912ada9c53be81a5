//! Unit tests of the executor: the argument check with repair, each limit by name, the origin.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use claij_backends::ToolCall;
use serde_json::{Value, json};

use super::{Executor, Limits, Tool, ToolError, shares, tool_fn};
use crate::context::ToolOrigin;

fn add(runs: &Arc<AtomicUsize>) -> Arc<dyn Tool> {
    let runs = Arc::clone(runs);
    Arc::new(tool_fn(
        "add",
        "Adds.",
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
               "required": ["a", "b"]}),
        move |args| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move {
                Ok(json!(
                    args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap()
                ))
            }
        },
    ))
}

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall::new("c", name, arguments)
}

#[tokio::test]
async fn max_calls_is_per_reply_and_named() {
    let runs = Arc::new(AtomicUsize::new(0));
    let executor = Executor::new([add(&runs)]).with_limits(Limits {
        max_calls: 2,
        ..Limits::default()
    });
    let calls = [
        call("add", json!({"a": 1, "b": 1})),
        call("add", json!({"a": 2, "b": 2})),
        call("add", json!({"a": 3, "b": 3})),
    ];
    let ran = executor.run_calls(&calls).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(ran[2].output, Err(ToolError::MaxCalls { max_calls: 2 }));
    assert!(ran[2].output.as_ref().unwrap_err().is_limit());
    // The next reply has its own two.
    let again = executor.run(&calls[..2]).await;
    assert!(again.iter().all(|r| r.output.is_ok()));
}

#[tokio::test]
async fn raw_arguments_are_repaired_then_checked() {
    let runs = Arc::new(AtomicUsize::new(0));
    let executor = Executor::new([add(&runs)]);
    let ran = executor
        .run(&[
            call("add", json!("{a: 1, 'b': 2,}")),
            call("add", json!("{\"a\": 1, \"b\":")),
            call("add", json!("{\"a\": \"x\", \"b\": 2}")),
            call("sub", json!({})),
        ])
        .await;
    assert_eq!(ran[0].output, Ok(json!(3)));
    assert_eq!(ran[0].args, json!({"a": 1, "b": 2}));
    assert_eq!(
        ran[1].output,
        Err("invalid arguments, not run: the arguments were cut off before their end".to_owned())
    );
    assert_eq!(
        ran[2].output,
        Err("invalid arguments, not run: /a: expected integer, got string".to_owned())
    );
    assert_eq!(
        ran[3].output,
        Err("unknown tool `sub`; the tools are: add".to_owned())
    );
    assert_eq!(ran[0].origin, ToolOrigin::Rust);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_slow_call_times_out_naming_the_limit_and_a_panic_is_a_result() {
    let slow: Arc<dyn Tool> = Arc::new(tool_fn("slow", "", json!({}), |_| async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(json!("late"))
    }));
    let boom: Arc<dyn Tool> = Arc::new(tool_fn("boom", "", json!({}), |_| async {
        panic!("kaboom")
    }));
    let executor = Executor::new([slow, boom]).with_limits(Limits {
        timeout: Some(Duration::from_secs(2)),
        ..Limits::default()
    });
    let ran = executor
        .run(&[call("slow", json!({})), call("boom", json!({}))])
        .await;
    assert_eq!(
        ran[0].output,
        Err("timed out after 2s (timeout)".to_owned())
    );
    assert_eq!(ran[1].output, Err("the tool panicked: kaboom".to_owned()));
}

#[test]
fn the_budget_is_shared_by_a_replys_results() {
    let executor = Executor::new([]).with_limits(Limits {
        result_chars: 10,
        ..Limits::default()
    });
    let shown = executor.budget(
        &["abc".to_owned(), "x".repeat(20), "y".repeat(20)],
        |keep, total| format!("[{keep}/{total}]"),
    );
    assert_eq!(shown, ["abc", "xxx[3/20]", "yyyy[4/20]"]);
    assert_eq!(shares(&[3, 20, 20], 10), [3, 3, 4]);
}
