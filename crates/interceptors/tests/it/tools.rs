//! Tests of the `tools` interceptor: the tools loop over two turns, timeouts, the concurrency bound,
//! bad calls caught by validation or reported as results, and snapshots of its schema delta and prompt.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use claij_backends::{ChatRequest, ChatResponse};
use claij_interceptors::builtin::tools::{self, Tools};
use claij_interceptors::{Chain, Config, Context, Pipeline, ToolOrigin, ToolResult};
use claij_test_support::Scripted;
use serde_json::{Value, json};

fn system(request: &ChatRequest) -> &str {
    request.system.as_deref().unwrap_or_default()
}

fn reply(value: Value) -> ChatResponse {
    ChatResponse::text(value.to_string())
}

fn pipeline(backend: &Scripted, tools: Tools) -> Pipeline {
    Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("test-model"),
        Chain::new().with(tools),
    )
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first term.
    a: i64,
    /// The second term.
    b: i64,
}

/// What the model may search for.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Search {
    /// Words to look for.
    query: String,
    /// How many hits, at most.
    #[schemars(range(min = 1, max = 20))]
    limit: Option<u8>,
    /// Where to look.
    scope: Scope,
}

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Scope {
    Docs,
    Code,
}

fn sample_tools() -> Tools {
    Tools::new()
        .register_typed("add", "Adds two integers.", |args: Add| async move {
            args.a.checked_add(args.b).ok_or_else(|| "overflow".into())
        })
        .unwrap()
        .register_typed(
            "search",
            "Searches the project.\nReturns the best hits first.",
            |args: Search| async move {
                let hits = vec![args.query; usize::from(args.limit.unwrap_or(1))];
                Ok(json!({"scope": args.scope, "hits": hits}))
            },
        )
        .unwrap()
        .register(
            "now",
            "The current time, as RFC 3339.",
            json!({"type": "object", "additionalProperties": false}),
            |_| async { Ok(json!("2024-01-01T00:00:00Z")) },
        )
        .unwrap()
}

/// Turn 1: the model calls a tool that returns a nonce made up by this test. Turn 2: the prompt shows
/// the result, and the model (which cannot know the nonce otherwise) repeats it.
#[tokio::test]
async fn tool_results_reach_the_next_turn() {
    let nonce = format!("nonce-{:016x}", RandomState::new().hash_one(0u8));
    let tools = Tools::new()
        .register(
            "nonce",
            "A fresh random token.",
            json!({"type": "object"}),
            move |_| {
                let nonce = nonce.clone();
                async move { Ok(json!(nonce)) }
            },
        )
        .unwrap();
    let backend = Scripted::from_fn(|request, call| {
        Ok(match call {
            0 => reply(json!({
                "answer": "Let me get one.", "state": "calling",
                "tools": [{"name": "nonce", "args": {}}]
            })),
            _ => {
                let system = system(request);
                let seen = system
                    .find("\"nonce-")
                    .map(|i| &system[i + 1..i + 23])
                    .unwrap_or("none");
                reply(json!({"answer": seen, "state": "done"}))
            }
        })
    });
    let pipeline = pipeline(&backend, tools);
    let mut ctx = Context::default();

    pipeline.ask(&mut ctx, "Give me a nonce").await.unwrap();
    let [result] = ctx.tool_results.as_slice() else {
        panic!("one result expected: {:?}", ctx.tool_results)
    };
    let Ok(Value::String(nonce)) = &result.output else {
        panic!("{result:?}")
    };
    let nonce = nonce.clone();
    assert_eq!(result.name, "nonce");

    let second = pipeline.ask(&mut ctx, "What was it?").await.unwrap();
    assert_eq!(second.value["answer"], nonce.as_str());
    assert!(
        ctx.tool_results.is_empty(),
        "a reply without calls clears the results"
    );
    let requests = backend.requests();
    assert!(!system(&requests[0]).contains("Results of the tool calls"));
    assert!(system(&requests[1]).contains(&format!("1. nonce {{}}\n   ok: \"{nonce}\"")));
}

#[tokio::test(start_paused = true)]
async fn slow_calls_time_out_and_others_complete() {
    let limits = claij_interceptors::Limits {
        timeout: Some(Duration::from_secs(2)),
        ..Default::default()
    };
    let tools = Tools::with_limits(limits)
        .register(
            "sleep",
            "Sleeps.",
            json!({"type": "integer"}),
            |secs| async move {
                let secs = secs.as_u64().unwrap_or_default();
                tokio::time::sleep(Duration::from_secs(secs)).await;
                Ok(json!(secs))
            },
        )
        .unwrap();
    let started = tokio::time::Instant::now();
    let results = tools
        .run(&json!([
            {"name": "sleep", "args": 60},
            {"name": "sleep", "args": 1},
        ]))
        .await;
    let outputs: Vec<_> = results.iter().map(|r| r.output.clone()).collect();
    assert_eq!(
        outputs,
        [Err("timed out after 2s (timeout)".to_owned()), Ok(json!(1))]
    );
    assert_eq!(started.elapsed(), Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn at_most_concurrency_calls_run_at_once_results_in_call_order() {
    let limits = claij_interceptors::Limits {
        concurrency: 3,
        max_calls: 10,
        ..Default::default()
    };
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (now, peak) = (Arc::clone(&in_flight), Arc::clone(&most));
    let tools = Tools::with_limits(limits)
        .register("work", "Works.", json!({"type": "integer"}), move |n| {
            let (now, peak) = (Arc::clone(&now), Arc::clone(&peak));
            async move {
                let running = now.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(running, Ordering::SeqCst);
                // Later calls finish sooner, so completion order differs from call order.
                let n = n.as_u64().unwrap_or_default();
                tokio::time::sleep(Duration::from_millis(100 - 10 * n)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                Ok(json!(n))
            }
        })
        .unwrap();
    let calls: Vec<Value> = (0..10)
        .map(|n| json!({"name": "work", "args": n}))
        .collect();
    let results = tools.run(&Value::Array(calls)).await;
    assert_eq!(most.load(Ordering::SeqCst), 3);
    let outputs: Vec<Value> = results.into_iter().map(|r| r.output.unwrap()).collect();
    assert_eq!(outputs, (0..10).map(|n| json!(n)).collect::<Vec<_>>());
}

/// With validation on, an unknown tool or bad arguments are violations naming the call, and the
/// retry fixes them before anything runs.
#[tokio::test]
async fn bad_calls_are_violations_then_retried() {
    let backend = Scripted::replies([
        json!({"answer": "", "state": "s", "tools": [
            {"name": "ad", "args": {"a": 1, "b": 2}},
            {"name": "add", "args": {"a": 1, "b": "two"}},
        ]})
        .to_string(),
        json!({"answer": "", "state": "s", "tools": [{"name": "add", "args": {"a": 1, "b": 2}}]})
            .to_string(),
    ]);
    let pipeline = pipeline(&backend, sample_tools());
    let mut ctx = Context::default();
    let answer = pipeline.ask(&mut ctx, "1 + 2?").await.unwrap();

    let violations: Vec<String> = answer.attempts[0]
        .violations
        .iter()
        .map(ToString::to_string)
        .collect();
    insta::assert_debug_snapshot!("bad_calls_violations", violations);
    assert!(violations.iter().any(|v| v.starts_with("/tools/0")));
    assert!(violations.iter().any(|v| v.starts_with("/tools/1/args/b")));
    assert_eq!(answer.retries(), 1);
    assert_eq!(
        ctx.tool_results,
        [ToolResult {
            name: "add".into(),
            args: json!({"a": 1, "b": 2}),
            output: Ok(json!(3)),
            origin: ToolOrigin::Rust,
        }]
    );
}

/// Run directly (no validation before), bad calls become error results and the good ones still run.
#[tokio::test]
async fn bad_calls_are_error_results_when_run_directly() {
    let results = sample_tools()
        .run(&json!([
            {"name": "ad", "args": {}},
            {"name": "add", "args": {"a": 1}},
            {"name": "add", "args": {"a": 9_223_372_036_854_775_807_i64, "b": 1}},
            {"name": "add", "args": {"a": 1, "b": 2}},
        ]))
        .await;
    let outputs: Vec<_> = results.into_iter().map(|r| r.output).collect();
    assert_eq!(
        outputs,
        [
            Err("unknown tool `ad`; the tools are: add, search, now".to_owned()),
            Err("invalid arguments, not run: (root): missing required property `b`".to_owned(),),
            Err("overflow".to_owned()),
            Ok(json!(3)),
        ]
    );
}

#[test]
fn schema_delta() {
    insta::assert_json_snapshot!("schema_delta", sample_tools().schema_delta());
}

#[test]
fn prompt_sections() {
    let results = [
        ToolResult {
            name: "add".into(),
            args: json!({"a": 1, "b": 2}),
            output: Ok(json!(3)),
            origin: ToolOrigin::Rust,
        },
        ToolResult {
            name: "search".into(),
            args: json!({"query": "x".repeat(300), "scope": "docs"}),
            output: Ok(json!({"hits": ["y".repeat(400)]})),
            origin: ToolOrigin::Rust,
        },
        ToolResult {
            name: "now".into(),
            args: json!({}),
            output: Err("timed out after 30s".into()),
            origin: ToolOrigin::Rust,
        },
    ];
    let section = format!(
        "{}\n\n{}",
        sample_tools().prompt_section().unwrap(),
        tools::results_section(&results, 300).unwrap()
    );
    insta::assert_snapshot!("prompt_sections", section);
}

/// What the model sees on the turn after calling tools: the base prompt, the tools, the results, and
/// the composed schema with the `tools` union.
#[tokio::test]
async fn system_prompt_after_calls() {
    let backend = Scripted::replies([
        json!({"answer": "", "state": "s", "tools": [
            {"name": "add", "args": {"a": 1, "b": 2}},
            {"name": "now", "args": {}},
        ]})
        .to_string(),
        json!({"answer": "3", "state": "done"}).to_string(),
    ]);
    let pipeline = pipeline(&backend, sample_tools());
    let mut ctx = Context::default();
    pipeline.ask(&mut ctx, "1 + 2?").await.unwrap();
    pipeline.ask(&mut ctx, "So?").await.unwrap();
    insta::assert_snapshot!("system_prompt_after_calls", system(&backend.requests()[1]));
}

/// One engine, one meaning: the same tools' limits hold on the `oneOf` route (a reply's `tools`,
/// run after it) and on the native route (an agent run's step), with the same results: at most
/// `max_calls` calls of one reply run (the third says which limit), a call past `timeout` is
/// dropped (saying so), raw text arguments are repaired then checked, and the model is shown
/// `result_chars` of the reply's results, shared by them.
#[tokio::test(start_paused = true)]
async fn a_limit_means_the_same_on_the_one_of_and_native_routes() {
    use claij_backends::{Capabilities, ToolCall};
    use claij_interceptors::{Budget, Interceptor as _, Limits, Prompts};

    let tools = Tools::with_limits(Limits {
        max_calls: 2,
        timeout: Some(Duration::from_secs(1)),
        result_chars: 30,
        ..Limits::default()
    })
    .register(
        "echo",
        "Echoes.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |args| async move { Ok(args["text"].clone()) },
    )
    .unwrap()
    .register("slow", "Sleeps.", json!({"type": "object"}), |_| async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(json!("late"))
    })
    .unwrap();
    let long = "x".repeat(100);
    // The first call's arguments are text, as a model that wrote them as a string gives them.
    let raw = format!("{{text: '{long}',}}");
    let expected = [
        Ok(json!(long)),
        Err("timed out after 1s (timeout)".to_owned()),
        Err("not run: at most 2 calls per reply (max_calls)".to_owned()),
    ];

    // The `oneOf` route.
    let mut ctx = Context::default();
    let reply = json!({"answer": "", "state": "s", "tools": [
        {"name": "echo", "args": raw},
        {"name": "slow", "args": {}},
        {"name": "echo", "args": {"text": "third"}},
    ]});
    tools.post_response(&reply, &mut ctx).await.unwrap();
    let one_of: Vec<_> = ctx.tool_results.iter().map(|r| r.output.clone()).collect();
    assert_eq!(one_of, expected);
    let mut prompts = Prompts::new("", "next");
    tools.pre_prompt(&mut prompts, &ctx).unwrap();
    assert!(
        prompts
            .system
            .ends_with("(Cut where marked: the results share a budget of 30 characters.)"),
        "{}",
        prompts.system
    );

    // The native route.
    let backend = Scripted::new([
        Ok(ChatResponse::text("").tool_calls(vec![
            ToolCall::new("c0", "echo", json!(raw)),
            ToolCall::new("c1", "slow", json!({})),
            ToolCall::new("c2", "echo", json!({"text": "third"})),
        ])),
        Ok(ChatResponse::text(r#"{"answer": "done", "state": "done"}"#)),
    ])
    .with_capabilities(Capabilities::prompted().with_tools(true));
    let pipeline = Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("test-model"),
        Chain::new().with(tools.clone()),
    )
    .with_tools(tools.executor());
    let run = pipeline
        .run_agent(&mut Context::default(), "Go", &Budget::default())
        .await
        .unwrap();
    let native: Vec<_> = run.calls.iter().map(|r| r.output.clone()).collect();
    assert_eq!(native, expected);
    // The three results share the 30 characters: 10 each.
    let shown: Vec<String> = backend.requests()[1]
        .messages
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .map(|m| m.content.clone())
        .collect();
    assert_eq!(
        shown[0],
        format!(
            "\"{}… [cut: the tool-results budget shows 10 of its 102 characters]",
            "x".repeat(9)
        )
    );
    assert_eq!(shown.len(), 3);
    assert!(
        shown[2].starts_with("error: not… [cut: the tool-results budget shows 10 of "),
        "{}",
        shown[2]
    );
}
