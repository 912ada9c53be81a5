//! Tests of the agent run: the model calls tools within one turn, natively or through its reply's
//! `tools` field, until it answers or a budget runs out.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use claij_backends::testing::Scripted;
use claij_backends::{Capabilities, ChatResponse, Role, ToolCall, Usage};
use claij_interceptors::builtin::tools::Tools;
use claij_interceptors::{Budget, BudgetKind, Chain, Config, Context, Error, Pipeline, ToolOrigin};
use serde_json::{Value, json};

const ANSWER: &str = r#"{"answer": "It is sunny in Oslo.", "state": "done"}"#;

/// A `weather` tool counting its runs.
fn weather(runs: &Arc<AtomicUsize>) -> Tools {
    let runs = Arc::clone(runs);
    Tools::new()
        .register(
            "weather",
            "Today's weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            move |args| {
                runs.fetch_add(1, Ordering::SeqCst);
                async move { Ok(json!(format!("sunny in {}", args["city"].as_str().unwrap_or("?")))) }
            },
        )
        .unwrap()
}

fn pipeline(backend: &Scripted, tools: Tools) -> Pipeline {
    Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("test-model"),
        Chain::new().with(tools),
    )
}

fn native(replies: Vec<ChatResponse>) -> Scripted {
    Scripted::new(replies.into_iter().map(Ok))
        .with_capabilities(Capabilities::prompted().with_tools(true))
}

fn calls(calls: &[(&str, Value)]) -> ChatResponse {
    let calls = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall::new(format!("call_{i}"), *name, args.clone()))
        .collect();
    ChatResponse::text("").tool_calls(calls)
}

fn roles(messages: &[claij_backends::Message]) -> Vec<Role> {
    messages.iter().map(|m| m.role).collect()
}

#[tokio::test]
async fn one_of_route_two_steps_end_valid() {
    let runs = Arc::new(AtomicUsize::new(0));
    let backend = Scripted::replies([
        r#"{"answer": "", "state": "asking", "tools": [{"name": "weather", "args": {"city": "Oslo"}}]}"#,
        ANSWER,
    ]);
    let p = pipeline(&backend, weather(&runs));
    let mut ctx = Context::default();
    let run = p
        .run_agent(&mut ctx, "Weather in Oslo?", &Budget::default())
        .await
        .unwrap();
    assert_eq!(run.steps, 2);
    assert_eq!(run.answer.value["state"], "done");
    assert_eq!(run.calls.len(), 1);
    assert_eq!(run.calls[0].origin, ToolOrigin::Rust);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let requests = backend.requests();
    // The oneOf route: no native tools, the `tools` field in the schema, results as a user turn.
    assert!(requests[0].tools.is_empty());
    assert!(requests[0].system.as_deref().unwrap().contains("weather"));
    assert_eq!(requests[1].messages[..1], requests[0].messages[..]);
    insta::assert_json_snapshot!("one_of_second_step", requests[1].messages);
    // The turn's steps are in the history, between the question and the answer.
    assert_eq!(
        roles(&ctx.history.messages),
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
    assert_eq!(ctx.turn, 1);
}

#[tokio::test]
async fn native_route_two_steps_end_valid() {
    let runs = Arc::new(AtomicUsize::new(0));
    let backend = native(vec![
        calls(&[
            ("weather", json!({"city": "Oslo"})),
            ("weather", json!({"city": "Bergen"})),
        ]),
        ChatResponse::text(ANSWER),
    ]);
    let p = pipeline(&backend, weather(&runs));
    let mut ctx = Context::default();
    let run = p
        .run_agent(&mut ctx, "Weather in Oslo and Bergen?", &Budget::default())
        .await
        .unwrap();
    assert_eq!(run.steps, 2);
    assert_eq!(run.answer.value["answer"], "It is sunny in Oslo.");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(run.answer.attempts.len(), 2);
    let requests = backend.requests();
    // Native: the tools in the request, neither the `tools` field nor its prompt section, and the
    // answer's schema in the prompt (not a forced tool beside the model's own).
    assert_eq!(requests[0].tools.len(), 1);
    assert!(requests[0].structured_output.is_none());
    let system = requests[0].system.as_deref().unwrap();
    assert!(!system.contains("tools?"), "{system}");
    insta::assert_json_snapshot!("native_second_step", requests[1]);
    assert_eq!(
        roles(&ctx.history.messages),
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(
        ctx.history.messages[2].tool_call_id.as_deref(),
        Some("call_0")
    );
}

#[tokio::test]
async fn invalid_arguments_go_back_to_the_model_and_are_corrected() {
    let runs = Arc::new(AtomicUsize::new(0));
    let backend = native(vec![
        calls(&[("weather", json!({"city": 5})), ("forecast", json!({}))]),
        calls(&[("weather", json!({"city": "Oslo"}))]),
        ChatResponse::text(ANSWER),
    ]);
    let p = pipeline(&backend, weather(&runs));
    let run = p
        .run_agent(&mut Context::default(), "Weather?", &Budget::default())
        .await
        .unwrap();
    assert_eq!(run.steps, 3);
    // Neither bad call ran; the corrected one did.
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let requests = backend.requests();
    let results: Vec<&str> = requests[1].messages[2..]
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(
        results,
        [
            "error: invalid arguments, not run: /city: expected string, got number",
            "error: unknown tool `forecast`; the tools are: weather",
        ]
    );
    assert_eq!(run.calls[2].output, Ok(json!("sunny in Oslo")));
}

#[tokio::test]
async fn the_step_budget_is_a_typed_error() {
    let runs = Arc::new(AtomicUsize::new(0));
    let call = || calls(&[("weather", json!({"city": "Oslo"}))]);
    let backend = native(vec![call(), call(), call()]);
    let p = pipeline(&backend, weather(&runs));
    let budget = Budget {
        max_steps: 2,
        ..Budget::default()
    };
    let err = p
        .run_agent(&mut Context::default(), "Weather?", &budget)
        .await
        .unwrap_err();
    let Error::BudgetExceeded {
        budget,
        limit,
        used,
        attempts,
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!((*budget, *limit, *used), (BudgetKind::Steps, 2.0, 2.0));
    assert_eq!(attempts.len(), 2);
    assert_eq!(err.attempts().len(), 2);
    assert_eq!(
        err.to_string(),
        "the agent run reached its max_steps budget: 2 used of 2"
    );
    // The last step's calls were not run, and no third request was made.
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(backend.calls(), 2);
}

#[tokio::test]
async fn the_cost_budget_is_a_typed_error() {
    let runs = Arc::new(AtomicUsize::new(0));
    let priced = |response: ChatResponse| {
        response.usage(Usage {
            input_tokens: 100,
            output_tokens: 10,
            cost_usd: Some(0.02),
            ..Usage::default()
        })
    };
    let backend = Scripted::new(
        [
            r#"{"answer": "", "state": "s", "tools": [{"name": "weather", "args": {"city": "Oslo"}}]}"#,
            r#"{"answer": "", "state": "s", "tools": [{"name": "weather", "args": {"city": "Rome"}}]}"#,
            ANSWER,
        ]
        .map(|text| Ok(priced(ChatResponse::text(text)))),
    );
    let p = pipeline(&backend, weather(&runs));
    let budget = Budget {
        max_cost_usd: Some(0.03),
        ..Budget::default()
    };
    let err = p
        .run_agent(&mut Context::default(), "Weather?", &budget)
        .await
        .unwrap_err();
    let Error::BudgetExceeded {
        budget,
        limit,
        used,
        ..
    } = err
    else {
        panic!("{err}")
    };
    assert_eq!(budget, BudgetKind::CostUsd);
    assert_eq!(limit, 0.03);
    assert!((used - 0.04).abs() < 1e-9, "{used}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // The token budget the same way: 110 tokens a step.
    let backend = Scripted::new(
        [
            r#"{"answer": "", "state": "s", "tools": [{"name": "weather", "args": {"city": "Oslo"}}]}"#,
            ANSWER,
        ]
        .map(|text| Ok(priced(ChatResponse::text(text)))),
    );
    let budget = Budget {
        max_tokens: Some(100),
        ..Budget::default()
    };
    let err = pipeline(&backend, weather(&runs))
        .run_agent(&mut Context::default(), "Weather?", &budget)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::BudgetExceeded { budget: BudgetKind::Tokens, used, .. } if used == 110.0),
        "{err}"
    );
}

/// On the oneOf route the arguments are part of the reply's schema: a bad call is a violation, and
/// the retry's correction says so before anything runs.
#[tokio::test]
async fn one_of_route_invalid_arguments_are_a_violation_retried() {
    let runs = Arc::new(AtomicUsize::new(0));
    let backend = Scripted::replies([
        r#"{"answer": "", "state": "s", "tools": [{"name": "weather", "args": {"town": "Oslo"}}]}"#,
        r#"{"answer": "", "state": "s", "tools": [{"name": "weather", "args": {"city": "Oslo"}}]}"#,
        ANSWER,
    ]);
    let p = pipeline(&backend, weather(&runs));
    let run = p
        .run_agent(&mut Context::default(), "Weather?", &Budget::default())
        .await
        .unwrap();
    assert_eq!(run.steps, 2);
    assert_eq!(run.answer.attempts.len(), 3);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let correction = &backend.requests()[1].messages[2].content;
    assert!(correction.contains("/tools/0"), "{correction}");
}

/// `ask` keeps its behaviour with the same chain: the calls run after the reply, for the next turn.
#[tokio::test]
async fn ask_still_runs_tools_for_the_next_turn() {
    let runs = Arc::new(AtomicUsize::new(0));
    let backend = Scripted::replies([
        r#"{"answer": "", "state": "s", "tools": [{"name": "weather", "args": {"city": "Oslo"}}]}"#,
    ]);
    let p = pipeline(&backend, weather(&runs));
    let mut ctx = Context::default();
    let answer = p.ask(&mut ctx, "Weather?").await.unwrap();
    assert_eq!(answer.attempts.len(), 1);
    assert_eq!(ctx.tool_results.len(), 1);
    assert_eq!(backend.calls(), 1);
}

/// A backend with strict tools gets each tool's schema in its strict dialect, marked strict.
#[tokio::test]
async fn native_tools_are_compiled_to_the_backends_tool_dialect() {
    let runs = Arc::new(AtomicUsize::new(0));
    let backend = Scripted::new([Ok(ChatResponse::text(ANSWER))]).with_capabilities(
        Capabilities::prompted()
            .with_tools(true)
            .with_strict_tools(claij_backends::SchemaDialect::OpenAiStrict),
    );
    pipeline(&backend, weather(&runs))
        .run_agent(&mut Context::default(), "Hi", &Budget::default())
        .await
        .unwrap();
    let spec = &backend.requests()[0].tools[0];
    assert!(spec.strict);
    assert_eq!(spec.parameters["additionalProperties"], json!(false));
}

/// After a native agent run, a plain `ask` (no tools in its request) sends the run's steps in the
/// history as text: providers refuse tool calls and results in a request without tools.
#[tokio::test]
async fn a_later_ask_sends_the_native_steps_as_text() {
    let runs = Arc::new(AtomicUsize::new(0));
    let backend = native(vec![
        calls(&[
            ("weather", json!({"city": "Oslo"})),
            ("weather", json!({"city": "Bergen"})),
        ]),
        ChatResponse::text(ANSWER),
        ChatResponse::text(r#"{"answer": "Yes.", "state": "done"}"#),
    ]);
    let p = pipeline(&backend, weather(&runs));
    let mut ctx = Context::default();
    p.run_agent(&mut ctx, "Weather in Oslo and Bergen?", &Budget::default())
        .await
        .unwrap();
    p.ask(&mut ctx, "Both sunny?").await.unwrap();
    let requests = backend.requests();
    let later = &requests[2];
    assert!(later.tools.is_empty());
    assert!(
        later
            .messages
            .iter()
            .all(|m| m.tool_calls.is_empty() && m.role != Role::Tool)
    );
    insta::assert_json_snapshot!("later_ask_history", later.messages);
}
