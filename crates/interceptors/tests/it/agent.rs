//! Tests of the agent run: the model calls tools within one turn, natively or through its reply's
//! `tools` field, until it answers or a budget runs out.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use claij_backends::{Capabilities, ChatResponse, Role, ToolCall, Usage};
use claij_interceptors::builtin::tools::Tools;
use claij_interceptors::{
    Budget, BudgetKind, Chain, Config, Context, Error, HistoryPolicy, Limits, Pipeline, ToolOrigin,
};
use claij_test_support::Scripted;
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
    let executor = tools.executor();
    Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("test-model"),
        Chain::new().with(tools),
    )
    .with_tools(executor)
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
    // The turn's steps are in the history, between the question and the answer; the results are
    // a tool message answering no single call, sent as the user turn the snapshot shows.
    assert_eq!(
        roles(&ctx.history.messages),
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(ctx.history.messages[2].tool_call_id, None);
    assert_eq!(requests[1].messages[2].role, Role::User);
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

/// The model's native calls as an adapter gives them: the content holds the first call's arguments
/// (the answer in tool mode), `text` what the model wrote beside the calls.
fn calls_beside(text: &str, calls: &[(&str, Value)]) -> ChatResponse {
    let mut response = self::calls(calls);
    response.content = match &calls[0].1 {
        Value::String(raw) => raw.clone(),
        args => args.to_string(),
    };
    response.text = text.to_owned();
    response
}

#[tokio::test]
async fn the_history_says_the_text_beside_the_calls_not_their_arguments() {
    let runs = Arc::new(AtomicUsize::new(0));
    let backend = native(vec![
        calls_beside("Let me look.", &[("weather", json!({"city": "Oslo"}))]),
        calls_beside("", &[("weather", json!({"city": "Bergen"}))]),
        ChatResponse::text(ANSWER),
    ]);
    let p = pipeline(&backend, weather(&runs));
    let mut ctx = Context::default();
    p.run_agent(&mut ctx, "Weather?", &Budget::default())
        .await
        .unwrap();
    let requests = backend.requests();
    let said = &requests[2].messages[1];
    assert_eq!(
        (said.role, said.content.as_str()),
        (Role::Assistant, "Let me look.")
    );
    assert_eq!(said.tool_calls[0].arguments, json!({"city": "Oslo"}));
    let said = &requests[2].messages[3];
    assert_eq!((said.role, said.content.as_str()), (Role::Assistant, ""));
    assert_eq!(said.tool_calls[0].arguments, json!({"city": "Bergen"}));
    assert_eq!(ctx.history.messages[1].content, "Let me look.");
}

/// A provider keeps arguments it could not parse as their raw text: repaired as a reply is, the
/// tool runs with them (and the history holds them repaired); text with no object in it, or cut
/// off, goes back to the model as the call's violation.
#[tokio::test]
async fn malformed_native_arguments_are_repaired_or_go_back_to_the_model() {
    let runs = Arc::new(AtomicUsize::new(0));
    let backend = native(vec![
        calls_beside(
            "",
            &[
                ("weather", json!("{'city': 'Oslo',}")),
                ("weather", json!("the city is Bergen")),
                ("weather", json!("{\"city\": \"Ber")),
            ],
        ),
        ChatResponse::text(ANSWER),
    ]);
    let p = pipeline(&backend, weather(&runs));
    let run = p
        .run_agent(&mut Context::default(), "Weather?", &Budget::default())
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(run.calls[0].args, json!({"city": "Oslo"}));
    assert_eq!(run.calls[0].output, Ok(json!("sunny in Oslo")));
    let requests = backend.requests();
    assert_eq!(
        requests[1].messages[1].tool_calls[0].arguments,
        json!({"city": "Oslo"})
    );
    let results: Vec<&str> = requests[1].messages[2..]
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(results[0], "\"sunny in Oslo\"");
    assert!(
        results[1].starts_with("error: invalid arguments, not run: the arguments are not"),
        "{results:?}"
    );
    assert_eq!(
        results[2],
        "error: invalid arguments, not run: the arguments were cut off before their end"
    );
    assert_eq!(run.calls[1].args, json!("the city is Bergen"));
    assert_eq!(run.answer.value["state"], "done");
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
        ..
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
    // A price of 0: each call is estimated free, the reported $0.02 is what counts.
    let budget = Budget {
        max_cost_usd: Some(0.03),
        price: Some(claij_backends::Price::new(0.0, 0.0)),
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

/// Partial values of every step reach `on_partial`: the step that calls a tool through its reply's
/// field, then the answer, the last partial being the final value.
#[tokio::test]
async fn a_streamed_agent_run_shows_each_steps_partial_values() {
    let runs = Arc::new(AtomicUsize::new(0));
    let backend = Scripted::replies([
        r#"{"answer": "", "state": "asking", "tools": [{"name": "weather", "args": {"city": "Oslo"}}]}"#,
        ANSWER,
    ]);
    let p = pipeline(&backend, weather(&runs));
    let seen = Mutex::new(Vec::new());
    let on_partial = |value: &Value| seen.lock().unwrap().push(value.clone());
    let run = p
        .run_agent_streaming(
            &mut Context::default(),
            "Weather in Oslo?",
            &Budget::default(),
            &on_partial,
        )
        .await
        .unwrap();
    let seen = seen.into_inner().unwrap();
    assert!(
        seen.iter().any(|v| v["tools"][0]["name"] == "weather"),
        "{seen:?}"
    );
    assert_eq!(seen.last(), Some(&run.answer.value));
    assert_eq!(run.steps, 2);
}

/// Natively, a tool call's arguments are not the answer: never a partial value.
#[tokio::test]
async fn a_streamed_native_call_is_no_partial_value() {
    let runs = Arc::new(AtomicUsize::new(0));
    // As adapters give a call: the content holds the first call's arguments.
    let call = ChatResponse::text(r#"{"city": "Oslo"}"#).tool_calls(vec![ToolCall::new(
        "call_0",
        "weather",
        json!({"city": "Oslo"}),
    )]);
    let backend = native(vec![call, ChatResponse::text(ANSWER)]);
    let p = pipeline(&backend, weather(&runs));
    let seen = Mutex::new(Vec::new());
    let on_partial = |value: &Value| seen.lock().unwrap().push(value.clone());
    let run = p
        .run_agent_streaming(
            &mut Context::default(),
            "Weather?",
            &Budget::default(),
            &on_partial,
        )
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen, [run.answer.value]);
}

/// A `slow` tool that sleeps a second, keeping the most calls that ran at once.
fn slow(concurrency: usize, most: &Arc<AtomicUsize>) -> Tools {
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::clone(most);
    Tools::with_limits(Limits {
        concurrency,
        timeout: Some(Duration::from_secs(5)),
        ..Limits::default()
    })
    .register(
        "slow",
        "Takes a while.",
        json!({"type": "object"}),
        move |_| {
            let (running, most) = (Arc::clone(&running), Arc::clone(&most));
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(1)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                Ok(json!("done"))
            }
        },
    )
    .unwrap()
}

/// A step's calls run as the `tools` interceptor runs a reply's: at most its concurrency at once.
#[tokio::test(start_paused = true)]
async fn a_steps_calls_keep_to_the_toolboxs_concurrency() {
    for (concurrency, expected) in [(1, 1), (2, 2)] {
        let most = Arc::new(AtomicUsize::new(0));
        let backend = native(vec![
            calls(&[
                ("slow", json!({})),
                ("slow", json!({})),
                ("slow", json!({})),
            ]),
            ChatResponse::text(ANSWER),
        ]);
        let p = pipeline(&backend, slow(concurrency, &most));
        let run = p
            .run_agent(&mut Context::default(), "Go", &Budget::default())
            .await
            .unwrap();
        assert_eq!(run.calls.len(), 3);
        assert!(run.calls.iter().all(|c| c.output == Ok(json!("done"))));
        assert_eq!(
            most.load(Ordering::SeqCst),
            expected,
            "concurrency {concurrency}"
        );
    }
}

/// And under its timeout: a call past it is a timed-out result for the model.
#[tokio::test(start_paused = true)]
async fn a_steps_call_keeps_to_the_toolboxs_timeout() {
    let tools = Tools::with_limits(Limits {
        timeout: Some(Duration::from_millis(100)),
        ..Limits::default()
    })
    .register("stuck", "Never ends.", json!({"type": "object"}), |_| {
        std::future::pending::<Result<Value, claij_interceptors::BoxError>>()
    })
    .unwrap();
    let backend = native(vec![
        calls(&[("stuck", json!({}))]),
        ChatResponse::text(ANSWER),
    ]);
    let run = pipeline(&backend, tools)
        .run_agent(&mut Context::default(), "Go", &Budget::default())
        .await
        .unwrap();
    assert_eq!(
        run.calls[0].output,
        Err("timed out after 100ms (timeout)".to_owned())
    );
}

/// A tool that returns 100 `x`s, its results shown in 10 characters.
fn long() -> Tools {
    Tools::with_limits(Limits {
        result_chars: 10,
        ..Limits::default()
    })
    .register(
        "long",
        "A long output.",
        json!({"type": "object"}),
        |_| async { Ok(json!("x".repeat(100))) },
    )
    .unwrap()
}

/// Results are cut to the tools' `result_chars`, and the model is told so.
#[tokio::test]
async fn results_are_cut_to_the_budget_and_say_so() {
    let budget = Budget::default();
    // Native: each result.
    let backend = native(vec![
        calls(&[("long", json!({}))]),
        ChatResponse::text(ANSWER),
    ]);
    pipeline(&backend, long())
        .run_agent(&mut Context::default(), "Go", &budget)
        .await
        .unwrap();
    let result = &backend.requests()[1].messages[2];
    assert_eq!(result.role, Role::Tool);
    assert_eq!(
        result.content,
        format!(
            "\"{}… [cut: the tool-results budget shows 10 of its 102 characters]",
            "x".repeat(9)
        )
    );
    // The `oneOf` route: shared by the step's results.
    let backend = Scripted::replies([
        r#"{"answer": "", "state": "asking", "tools": [{"name": "long", "args": {}}]}"#,
        ANSWER,
    ]);
    pipeline(&backend, long())
        .run_agent(&mut Context::default(), "Go", &budget)
        .await
        .unwrap();
    let results = &backend.requests()[1].messages[2].content;
    assert!(
        results.ends_with("(Cut where marked: the results share a budget of 10 characters.)"),
        "{results}"
    );
    assert!(!results.contains(&"x".repeat(10)), "{results}");
}

/// On the `oneOf` route a step's results go back as a user turn; a history window kept after the
/// turn still opens on the user's own input, never on those results.
#[tokio::test]
async fn a_history_window_never_opens_on_one_of_results() {
    let runs = Arc::new(AtomicUsize::new(0));
    let backend = Scripted::replies([
        r#"{"answer": "", "state": "asking", "tools": [{"name": "weather", "args": {"city": "Oslo"}}]}"#,
        ANSWER,
        r#"{"answer": "Yes.", "state": "done"}"#,
    ]);
    let mut config = Config::new("test-model");
    // The turn's last two messages: its results and its answer.
    config.history = HistoryPolicy {
        max_messages: 2,
        ..HistoryPolicy::default()
    };
    let tools = weather(&runs);
    let p = Pipeline::new(
        Arc::new(backend.clone()),
        config,
        Chain::new().with(tools.clone()),
    )
    .with_tools(tools.executor());
    let mut ctx = Context::default();
    p.run_agent(&mut ctx, "Weather in Oslo?", &Budget::default())
        .await
        .unwrap();
    assert!(ctx.history.is_empty(), "{:?}", ctx.history);
    p.ask(&mut ctx, "Sure?").await.unwrap();
    let later = &backend.requests()[2].messages;
    assert_eq!(later.len(), 1, "{later:?}");
    assert_eq!(later[0].content, "Sure?");
}

/// A later ask sends the `oneOf` route's results in the history as the user turn they were.
#[tokio::test]
async fn a_later_ask_sends_one_of_results_as_a_user_turn() {
    let runs = Arc::new(AtomicUsize::new(0));
    let backend = Scripted::replies([
        r#"{"answer": "", "state": "asking", "tools": [{"name": "weather", "args": {"city": "Oslo"}}]}"#,
        ANSWER,
        r#"{"answer": "Yes.", "state": "done"}"#,
    ]);
    let p = pipeline(&backend, weather(&runs));
    let mut ctx = Context::default();
    p.run_agent(&mut ctx, "Weather in Oslo?", &Budget::default())
        .await
        .unwrap();
    p.ask(&mut ctx, "Sure?").await.unwrap();
    let requests = backend.requests();
    let later = &requests[2].messages;
    assert_eq!(
        roles(later),
        [
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::User
        ]
    );
    assert_eq!(later[2], requests[1].messages[2]);
}

/// A step runs no more of a toolbox's calls than its `max_calls`, as a reply's `tools` field
/// allows; the others' results say why.
#[tokio::test]
async fn a_step_runs_at_most_the_toolboxs_max_calls() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runs_in = Arc::clone(&runs);
    let tools = Tools::with_limits(Limits {
        max_calls: 2,
        ..Limits::default()
    })
    .register("count", "Counts.", json!({"type": "object"}), move |_| {
        runs_in.fetch_add(1, Ordering::SeqCst);
        async { Ok(json!("ok")) }
    })
    .unwrap();
    let backend = native(vec![
        calls(&[
            ("count", json!({})),
            ("count", json!({})),
            ("count", json!({})),
        ]),
        ChatResponse::text(ANSWER),
    ]);
    let run = pipeline(&backend, tools)
        .run_agent(&mut Context::default(), "Go", &Budget::default())
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let outputs: Vec<_> = run.calls.iter().map(|c| c.output.clone()).collect();
    assert_eq!(
        outputs,
        [
            Ok(json!("ok")),
            Ok(json!("ok")),
            Err("not run: at most 2 calls per reply (max_calls)".to_owned())
        ]
    );
}
