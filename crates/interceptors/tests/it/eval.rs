//! Tests of the `eval` interceptor: results reach the next turn, the sandbox holds (loops, recursion,
//! huge strings, files), and snapshots of its schema delta and prompt.
#![cfg(feature = "eval")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use claij_backends::{ChatRequest, ChatResponse};
use claij_interceptors::builtin::eval::{Eval, EvalError, EvalResult, Limits, result_section};
use claij_interceptors::{Chain, Config, Context, Pipeline};
use claij_test_support::Scripted;
use serde_json::{Value, json};

fn system(request: &ChatRequest) -> &str {
    request.system.as_deref().unwrap_or_default()
}

fn reply(value: Value) -> ChatResponse {
    ChatResponse::text(value.to_string())
}

fn pipeline(backend: &Scripted, eval: Eval) -> Pipeline {
    Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("test-model"),
        Chain::new().with(eval),
    )
}

/// Runs `code` as the `eval` of a reply through the pipeline and returns what the context holds.
async fn eval_in_pipeline(eval: Eval, code: &str) -> EvalResult {
    let backend =
        Scripted::replies([json!({"answer": "", "state": "s", "eval": code}).to_string()]);
    let mut ctx = Context::default();
    pipeline(&backend, eval).ask(&mut ctx, "go").await.unwrap();
    ctx.remove::<EvalResult>().expect("an eval result")
}

/// Turn 1 computes, turn 2 sees the value (and what was printed) and repeats it; turn 3 sees nothing.
#[tokio::test]
async fn results_reach_the_next_turn_then_clear() {
    let backend = Scripted::from_fn(|request, call| {
        Ok(match call {
            0 => reply(json!({
                "answer": "Computing.", "state": "s",
                "eval": "let n = 0; for i in 1..=100 { n += i } print(`sum ${n}`); n * 2"
            })),
            _ => {
                let seen = system(request).contains("ok: 10100\nprinted:\nsum 5050");
                reply(json!({"answer": if seen { "10100" } else { "?" }, "state": "s"}))
            }
        })
    });
    let pipeline = pipeline(&backend, Eval::new());
    let mut ctx = Context::default();
    pipeline
        .ask(&mut ctx, "Twice the sum of 1..=100?")
        .await
        .unwrap();
    let result = ctx.get::<EvalResult>().unwrap();
    assert_eq!(result.outcome, Ok(json!(10100)));
    assert_eq!(result.output, "sum 5050");

    let second = pipeline.ask(&mut ctx, "So?").await.unwrap();
    assert_eq!(second.value["answer"], "10100");
    assert!(ctx.get::<EvalResult>().is_none(), "no `eval`, no result");
    pipeline.ask(&mut ctx, "And?").await.unwrap();
    let requests = backend.requests();
    assert!(!system(&requests[0]).contains("Result of the `eval`"));
    assert!(!system(&requests[2]).contains("Result of the `eval`"));
}

/// The message names the operation limit, so the wall clock (a minute here, so that a slow machine
/// cannot reach it first) did not stop it.
#[tokio::test]
async fn an_infinite_loop_is_stopped_by_the_operation_limit() {
    let mut limits = Limits::default();
    limits.wall_clock = Duration::from_secs(60);
    let result = eval_in_pipeline(Eval::with_limits(limits), "loop {}").await;
    assert_eq!(
        result.outcome.unwrap_err().to_string(),
        "limit exceeded: more than 1000000 operations (line 1, position 6)"
    );
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_by_the_wall_clock() {
    let mut limits = Limits::default();
    limits.max_operations = 0; // unlimited: only the clock stops it
    limits.wall_clock = Duration::from_millis(300);
    let started = Instant::now();
    let result = eval_in_pipeline(Eval::with_limits(limits), "let x = 0; loop { x += 1 }").await;
    let elapsed = started.elapsed();
    assert_eq!(
        result.outcome,
        Err(EvalError::Timeout {
            after: Duration::from_millis(300)
        })
    );
    // Not before the limit: a lower bound on the clock the deadline is read from, which a loaded
    // machine can only lengthen. How much later is no business of a test.
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
}

#[tokio::test]
async fn files_network_and_processes_are_out_of_reach() {
    let secret = std::env::temp_dir().join(format!("claij-eval-{}.txt", std::process::id()));
    std::fs::write(&secret, "secret").unwrap();
    let path = secret.display().to_string();
    let attempts = [
        format!("import \"{path}\" as f; f::x"),
        "import \"std/fs\" as fs; fs::read(\"/etc/passwd\")".to_owned(),
        format!("open(\"{path}\")"),
        format!("read_file(\"{path}\")"),
        format!("File::open(\"{path}\")"),
        format!("eval(\"import \\\"{path}\\\" as f;\")"),
        "http_get(\"http://localhost/\")".to_owned(),
        "system(\"ls\")".to_owned(),
        "exec(\"ls\")".to_owned(),
        "env(\"HOME\")".to_owned(),
        "write_file(\"out.txt\", \"x\")".to_owned(),
    ];
    for code in &attempts {
        let result = eval_in_pipeline(Eval::new(), code).await;
        let error = result.outcome.expect_err(code);
        assert!(
            matches!(error, EvalError::Syntax { .. } | EvalError::Runtime { .. }),
            "{code}: {error}"
        );
        assert!(!error.to_string().contains("secret"), "{code}: {error}");
    }
    assert!(!std::path::Path::new("out.txt").exists());
    std::fs::remove_file(&secret).unwrap();
    // `import` is not even part of the language here.
    let import = eval_in_pipeline(Eval::new(), "import \"std/fs\" as fs;").await;
    insta::assert_snapshot!("import_error", import.outcome.unwrap_err());
}

#[tokio::test]
async fn deep_recursion_is_stopped() {
    let result = eval_in_pipeline(Eval::new(), "fn down(n) { down(n + 1) } down(0)").await;
    let Err(EvalError::Limit { message }) = result.outcome else {
        panic!("{:?}", result.outcome)
    };
    assert!(
        message.starts_with("function calls nested deeper than 32"),
        "{message}"
    );

    let nested = format!("{}1{}", "[".repeat(500), "]".repeat(500));
    let result = eval_in_pipeline(Eval::new(), &nested).await;
    let Err(EvalError::Limit { message }) = result.outcome else {
        panic!("{:?}", result.outcome)
    };
    assert!(
        message.starts_with("expressions nested deeper than 64"),
        "{message}"
    );
}

#[tokio::test]
async fn huge_values_are_stopped() {
    // Rhai checks a map's size when the map goes through a function or an operator, not on each
    // `m[key] = value`: a small map limit shows the check, and the clock bounds an endless fill.
    let mut limits = Limits::default();
    limits.max_map_len = 100;
    for code in [
        "let s = \"x\"; loop { s += s }",
        "let s = \"x\"; s.pad(100000000, 'y'); s",
        "let a = [1]; loop { a += a }",
        "let m = #{}; for i in 0..1000 { m[`k${i}`] = i } m.len()",
    ] {
        let result = eval_in_pipeline(Eval::with_limits(limits.clone()), code).await;
        let Err(EvalError::Limit { message }) = &result.outcome else {
            panic!("{code}: {:?}", result.outcome)
        };
        assert!(message.contains("too large"), "{code}: {message}");
    }
    let endless = "let m = #{}; let i = 0; loop { m[`k${i}`] = i; i += 1 }";
    let result = eval_in_pipeline(Eval::new(), endless).await;
    assert!(
        matches!(
            result.outcome,
            Err(EvalError::Timeout { .. } | EvalError::Limit { .. })
        ),
        "{:?}",
        result.outcome
    );
}

#[tokio::test]
async fn arithmetic_and_data_work() {
    for (code, expected) in [
        ("1 + 2 * 3 - 4", json!(3)),
        ("(2 + 3) * 4 % 7", json!(6)),
        ("2 ** 10", json!(1024)),
        ("10.0 / 4.0", json!(2.5)),
        ("sqrt(16.0)", json!(4.0)),
        ("let xs = [3, 1, 2]; xs.sort(); xs", json!([1, 2, 3])),
        (
            "#{total: [1, 2, 3].reduce(|s, x| s + x, 0)}",
            json!({"total": 6}),
        ),
        ("\"Hello\".to_upper() + \" \" + 42", json!("HELLO 42")),
    ] {
        let result = eval_in_pipeline(Eval::new(), code).await;
        assert_eq!(result.outcome, Ok(expected), "{code}");
    }
}

#[tokio::test]
async fn a_non_string_eval_is_reported() {
    // No validation (plain text base schema is not JSON): call the hook the way the pipeline would.
    use claij_interceptors::Interceptor as _;
    let mut ctx = Context::default();
    Eval::new()
        .post_response(&json!({"eval": 42}), &mut ctx)
        .await
        .unwrap();
    assert_eq!(
        ctx.get::<EvalResult>().unwrap().outcome,
        Err(EvalError::NotCode)
    );
}

#[test]
fn schema_delta() {
    insta::assert_json_snapshot!("schema_delta", Eval::new().schema_delta());
}

#[test]
fn prompt_sections() {
    let ok = Eval::new().run_blocking("print(\"a\"); debug(\"b\"); #{x: [1, 2.5, ()]}");
    let failed = Eval::new().run_blocking("let x = 1;\nx + y");
    let section = format!(
        "{}\n\n{}\n\n{}",
        Eval::new().prompt_section(),
        result_section(&ok, 4000),
        result_section(&failed, 4000)
    );
    insta::assert_snapshot!("prompt_sections", section);
}

/// What the model sees on the turn after running code.
#[tokio::test]
async fn system_prompt_after_eval() {
    let backend = Scripted::replies([
        json!({"answer": "", "state": "s", "eval": "[1, 2, 3].map(|x| x * x)"}).to_string(),
        json!({"answer": "1, 4, 9", "state": "s"}).to_string(),
    ]);
    let pipeline = pipeline(&backend, Eval::new());
    let mut ctx = Context::default();
    pipeline.ask(&mut ctx, "Squares of 1..3?").await.unwrap();
    pipeline.ask(&mut ctx, "So?").await.unwrap();
    insta::assert_snapshot!("system_prompt_after_eval", system(&backend.requests()[1]));
}
