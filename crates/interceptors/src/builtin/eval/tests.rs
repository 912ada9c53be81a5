//! Unit tests of the `eval` interceptor: values as JSON, errors classified, output captured and cut.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::{Value, json};

use super::sandbox::evaluate;
use super::{Eval, EvalError, Limits, cut};

fn small_limits() -> Limits {
    Limits {
        max_output: 40,
        max_code_len: 200,
        wall_clock: Duration::from_secs(5),
        ..Limits::default()
    }
}

#[track_caller]
fn check(code: &str, expected: Result<Value, &str>) {
    let result = evaluate(code, &small_limits());
    let found = result.outcome.map_err(|e| e.to_string());
    match expected {
        Ok(value) => assert_eq!(found, Ok(value), "{code}"),
        Err(prefix) => {
            let message = found.expect_err(code);
            assert!(message.starts_with(prefix), "{code}: {message}");
        }
    }
}

#[test]
fn values_as_json() {
    check("", Ok(Value::Null));
    check("()", Ok(Value::Null));
    check("1 + 2 * 3", Ok(json!(7)));
    check("7 / 2", Ok(json!(3)));
    check("7.0 / 2.0", Ok(json!(3.5)));
    check("-9223372036854775807 - 1", Ok(json!(i64::MIN)));
    check("true && !false", Ok(json!(true)));
    check("'x'", Ok(json!("x")));
    check(r#""a" + 1"#, Ok(json!("a1")));
    check("let x = 2; `x=${x}`", Ok(json!("x=2")));
    check(
        "[1, [2.5, ()], #{b: 1, a: \"s\"}]",
        Ok(json!([1, [2.5, null], {"a": "s", "b": 1}])),
    );
    check("0.0 / 0.0", Ok(json!("NaN")));
    check("fn double(n) { n * 2 } double(21)", Ok(json!(42)));
    check(
        "let a = []; for i in 0..5 { a.push(i * i) } a",
        Ok(json!([0, 1, 4, 9, 16])),
    );
    check("Fn(\"double\")", Ok(json!("Fn(double)")));
}

#[test]
fn errors_classified() {
    check("let x = ;", Err("syntax error: "));
    check("import \"std/fs\" as fs;", Err("syntax error: "));
    check(
        "open(\"/etc/passwd\")",
        Err("runtime error: Function not found: open"),
    );
    check("1 / 0", Err("runtime error: "));
    check("throw \"no\"", Err("runtime error: "));
    check(
        &"x".repeat(201),
        Err("limit exceeded: the code has 201 characters, more than 200"),
    );
    check(
        "loop {}",
        Err("limit exceeded: more than 1000000 operations"),
    );
    check(
        "fn f(n) { f(n + 1) } f(0)",
        Err("limit exceeded: function calls nested deeper than 32"),
    );
    check(
        &format!("{}1{}", "(".repeat(70), ")".repeat(70)),
        Err("limit exceeded: expressions nested deeper than 64"),
    );
    check(
        "let s = \"ab\"; loop { s += s }",
        Err("limit exceeded: Length of string too large"),
    );
    check(
        "let a = []; loop { a.push(1) }",
        Err("limit exceeded: Size of array/BLOB too large (line 1, position 22); strings may"),
    );
}

/// Only the wall clock can end `loop {}` without an operation limit, so a `Timeout` shows it did; the
/// loop runs on its own thread so that a clock that never fires fails the test (after a minute, a
/// hang guard, not a speed claim) instead of hanging it.
#[test]
fn wall_clock_stops_a_loop_without_an_operation_limit() {
    let limits = Limits {
        max_operations: 0,
        wall_clock: Duration::from_millis(100),
        ..Limits::default()
    };
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(evaluate("loop {}", &limits).outcome));
    let outcome = result
        .recv_timeout(Duration::from_secs(60))
        .expect("the wall clock never stopped the loop");
    assert_eq!(
        outcome,
        Err(EvalError::Timeout {
            after: Duration::from_millis(100)
        })
    );
}

#[test]
fn output_captured_and_cut() {
    let result = evaluate(
        "print(\"one\"); debug(2); print(\"three\")",
        &small_limits(),
    );
    assert_eq!(result.output, "one\ndebug (line 1, position 15): 2\nthree");
    let result = evaluate("for i in 0..100 { print(`line ${i}`) }", &small_limits());
    assert_eq!(
        result.output,
        "line 0\nline 1\nline 2\nline 3\nline 4\nline … (output cut)"
    );
    assert_eq!(
        result.output.chars().count(),
        40 + "… (output cut)".chars().count()
    );
}

#[test]
fn results_cut_in_the_prompt() {
    assert_eq!(cut("abcdef", 3), "abc… (3 more characters)");
    let result = Eval::with_limits(Limits {
        max_output: 5,
        ..Limits::default()
    })
    .run_blocking("\"abcdefgh\"");
    assert_eq!(
        super::result_section(&result, 5),
        "Result of the `eval` code of your previous reply:\nok: \"abcd… (5 more characters)"
    );
}
