//! The pipeline's spans and metric events as a subscriber sees them, captured by a small `tracing`
//! layer: `llm.ask > llm.call` per attempt with the GenAI fields, `execute_tool` for an agent's
//! tools, content only when `claij::content` is enabled, no key in any field.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use claij_backends::{ChatResponse, Error as BackendError, Usage};
use claij_interceptors::builtin::tools::Tools;
use claij_interceptors::{Budget, Chain, Config, Context, Pipeline};
use claij_test_support::Scripted;
use claij_test_support::spans::{CapturedSpan, SpanCapture};
use serde_json::json;

const VALID: &str = r#"{"answer": "4", "state": "done"}"#;
const KEY: &str = "sk-or-v1-0123456789abcdef0123456789";

/// The shared capturing layer, with what these tests ask of it.
struct Capture(SpanCapture);

impl Capture {
    /// A capture with `claij::content` enabled when `content` is.
    fn new(content: bool) -> Self {
        Self(SpanCapture::with_content(content))
    }

    /// Runs `f` on a current-thread runtime with this layer as the thread's subscriber.
    fn run<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        let _guard = self.0.set_default();
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn spans(&self) -> Vec<CapturedSpan> {
        self.0.spans()
    }

    /// The spans named `name`, with their indexes.
    fn named(&self, name: &str) -> Vec<(usize, CapturedSpan)> {
        self.spans()
            .into_iter()
            .enumerate()
            .filter(|(_, s)| s.name == name)
            .collect()
    }

    /// The metric events carrying `field`.
    fn metrics_with(&self, field: &str) -> Vec<BTreeMap<String, String>> {
        self.0
            .events()
            .into_iter()
            .filter(|e| e.target == "claij::metrics" && e.fields.contains_key(field))
            .map(|e| e.fields)
            .collect()
    }
}

#[track_caller]
fn check_fields(span: &CapturedSpan, expected: &[(&str, &str)]) {
    for (key, value) in expected {
        assert_eq!(
            span.fields.get(*key).map(String::as_str),
            Some(*value),
            "{key} of {span:#?}"
        );
    }
}

fn pipeline(backend: &Scripted, chain: Chain) -> Pipeline {
    let mut config = Config::new("gpt-test");
    config.max_tokens = Some(256);
    config.temperature = Some(0.2);
    Pipeline::new(Arc::new(backend.clone()), config, chain)
}

fn ask(
    capture: &Capture,
    backend: &Scripted,
) -> Result<claij_interceptors::Answer, claij_interceptors::Error> {
    let pipeline = pipeline(backend, Chain::new());
    capture.run(async {
        let mut ctx = Context::default();
        pipeline.ask(&mut ctx, "What is 2+2?").await
    })
}

#[test]
fn a_valid_first_try_is_one_call_under_its_ask_with_the_gen_ai_fields() {
    let backend = Scripted::new([Ok(ChatResponse::text(VALID)
        .model("gpt-test-2025-01")
        .request_id("req-1")
        .usage(Usage {
            input_tokens: 120,
            output_tokens: 9,
            ..Usage::default()
        }))])
    .with_provider("openai");
    let capture = Capture::new(false);
    ask(&capture, &backend).unwrap();

    let asks = capture.named("llm.ask");
    let calls = capture.named("llm.call");
    assert_eq!((asks.len(), calls.len()), (1, 1), "{:#?}", capture.spans());
    let (ask_index, ask) = &asks[0];
    let (_, call) = &calls[0];
    assert_eq!(call.parent, Some(*ask_index));
    check_fields(
        ask,
        &[
            ("otel.name", "ask gpt-test"),
            ("otel.kind", "internal"),
            ("gen_ai.operation.name", "ask"),
            ("gen_ai.provider.name", "openai"),
            ("gen_ai.request.model", "gpt-test"),
            ("claij.turn", "0"),
        ],
    );
    assert!(!ask.fields.contains_key("otel.status_code"), "{ask:#?}");
    check_fields(
        call,
        &[
            ("otel.name", "chat gpt-test"),
            ("otel.kind", "client"),
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.provider.name", "openai"),
            ("gen_ai.request.model", "gpt-test"),
            ("gen_ai.request.max_tokens", "256"),
            ("gen_ai.request.temperature", "0.2"),
            ("gen_ai.response.model", "gpt-test-2025-01"),
            ("gen_ai.response.id", "req-1"),
            ("gen_ai.response.finish_reasons", r#"["stop"]"#),
            ("gen_ai.usage.input_tokens", "120"),
            ("gen_ai.usage.output_tokens", "9"),
            ("claij.attempt", "1"),
            ("claij.verdict", "valid"),
            ("claij.violations.count", "0"),
            ("claij.extensions", ""),
        ],
    );
    let hash = &call.fields["claij.schema.hash"];
    assert_eq!(hash.len(), 16, "{hash}");
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()), "{hash}");
    // Content stays out unless asked for.
    for field in [
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
    ] {
        assert!(!call.fields.contains_key(field), "{field} in {call:#?}");
    }
    // The interceptor spans of the attempt sit under it as before (none here: the chain is empty).

    let tokens = capture.metrics_with("histogram.gen_ai.client.token.usage");
    let by_type: BTreeMap<&str, &str> = tokens
        .iter()
        .map(|m| {
            (
                m["gen_ai.token.type"].as_str(),
                m["histogram.gen_ai.client.token.usage"].as_str(),
            )
        })
        .collect();
    assert_eq!(by_type, BTreeMap::from([("input", "120"), ("output", "9")]));
    assert_eq!(tokens[0]["gen_ai.provider.name"], "openai");
    assert_eq!(tokens[0]["gen_ai.request.model"], "gpt-test");
    assert_eq!(tokens[0]["gen_ai.operation.name"], "chat");
    assert_eq!(
        capture
            .metrics_with("histogram.gen_ai.client.operation.duration")
            .len(),
        1
    );
    let calls = capture.metrics_with("monotonic_counter.claij.calls");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["claij.first_try_valid"], "true");
    assert_eq!(calls[0]["monotonic_counter.claij.calls"], "1");
    assert!(
        capture
            .metrics_with("monotonic_counter.claij.retries")
            .is_empty()
    );
}

#[test]
fn a_retry_is_a_second_call_under_the_same_ask() {
    // The first reply lacks `state` and is fenced: extracted, then invalid.
    let backend =
        Scripted::replies(["```json\n{\"answer\": \"4\"}\n```", VALID]).with_provider("gemini");
    let capture = Capture::new(false);
    let answer = ask(&capture, &backend).unwrap();
    assert_eq!(answer.retries(), 1);

    let (ask_index, ask) = capture.named("llm.ask").remove(0);
    let calls = capture.named("llm.call");
    assert_eq!(calls.len(), 2, "{:#?}", capture.spans());
    assert!(calls.iter().all(|(_, c)| c.parent == Some(ask_index)));
    assert_eq!(ask.fields["gen_ai.provider.name"], "gcp.gemini");
    let first = &calls[0].1;
    check_fields(
        first,
        &[
            ("claij.attempt", "1"),
            ("claij.verdict", "invalid"),
            ("claij.violations.count", "1"),
            ("claij.fixes", "extracted:1"),
        ],
    );
    assert!(!first.fields.contains_key("otel.status_code"), "{first:#?}");
    check_fields(
        &calls[1].1,
        &[("claij.attempt", "2"), ("claij.verdict", "valid")],
    );

    let calls = capture.metrics_with("monotonic_counter.claij.calls");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["claij.first_try_valid"], "false");
    let retries = capture.metrics_with("monotonic_counter.claij.retries");
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0]["monotonic_counter.claij.retries"], "1");
    assert_eq!(retries[0]["gen_ai.provider.name"], "gcp.gemini");
    assert_eq!(
        capture
            .metrics_with("histogram.gen_ai.client.operation.duration")
            .len(),
        2
    );
}

#[test]
fn a_backend_error_marks_the_call_and_the_ask_failed_without_the_key() {
    let backend = Scripted::new([Err(BackendError::other(
        "openai",
        format!("upstream said: invalid key {KEY}"),
    ))]);
    let capture = Capture::new(false);
    ask(&capture, &backend).unwrap_err();

    let (_, call) = capture.named("llm.call").remove(0);
    let (_, ask) = capture.named("llm.ask").remove(0);
    for span in [&call, &ask] {
        check_fields(span, &[("otel.status_code", "ERROR")]);
        assert!(
            span.fields["otel.status_description"].contains("upstream said"),
            "{span:#?}"
        );
    }
    check_fields(&call, &[("claij.verdict", "error")]);
    // No field of any span holds the key.
    for span in capture.spans() {
        for (field, value) in &span.fields {
            assert!(
                !value.contains(KEY),
                "{field} of {} holds the key: {value}",
                span.name
            );
        }
    }
    let durations = capture.metrics_with("histogram.gen_ai.client.operation.duration");
    assert_eq!(durations.len(), 1);
    assert_eq!(durations[0]["error.type"], "backend");
    assert!(
        capture
            .metrics_with("histogram.gen_ai.client.token.usage")
            .is_empty()
    );
}

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

fn agent_run(capture: &Capture) {
    let runs = Arc::new(AtomicUsize::new(0));
    let backend = Scripted::replies([
        r#"{"answer": "", "state": "asking", "tools": [{"name": "weather", "args": {"city": "Oslo"}}]}"#,
        r#"{"answer": "It is sunny in Oslo.", "state": "done"}"#,
    ]);
    let tools = weather(&runs);
    let pipeline =
        pipeline(&backend, Chain::new().with(tools.clone())).with_tools(tools.executor());
    capture
        .run(async {
            let mut ctx = Context::default();
            pipeline
                .run_agent(&mut ctx, "Weather in Oslo?", &Budget::default())
                .await
        })
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_tool_loop_is_an_agent_ask_with_calls_and_an_execute_tool_between_them() {
    let capture = Capture::new(false);
    agent_run(&capture);

    let (ask_index, ask) = capture.named("llm.ask").remove(0);
    check_fields(
        &ask,
        &[
            ("otel.name", "invoke_agent gpt-test"),
            ("gen_ai.operation.name", "invoke_agent"),
        ],
    );
    // Under the ask, in order (besides the hooks' spans): the step that calls the tool, the tool,
    // the step that answers.
    let children: Vec<&str> = capture
        .spans()
        .iter()
        .filter(|s| s.parent == Some(ask_index) && s.name != "interceptor")
        .map(|s| s.name)
        .collect();
    assert_eq!(children, ["llm.call", "execute_tool", "llm.call"]);
    let (_, tool) = capture.named("execute_tool").remove(0);
    check_fields(
        &tool,
        &[
            ("otel.name", "execute_tool weather"),
            ("otel.kind", "internal"),
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "weather"),
            ("gen_ai.tool.type", "function"),
        ],
    );
    assert!(!tool.fields["gen_ai.tool.call.id"].is_empty());
    assert!(
        !tool.fields.contains_key("gen_ai.tool.call.arguments"),
        "{tool:#?}"
    );
    assert!(
        !tool.fields.contains_key("gen_ai.tool.call.result"),
        "{tool:#?}"
    );
    assert!(!tool.fields.contains_key("otel.status_code"), "{tool:#?}");
    // Each step is a call of its own for the first-try metric.
    assert_eq!(
        capture.metrics_with("monotonic_counter.claij.calls").len(),
        2
    );
}

#[test]
fn content_is_recorded_only_when_its_target_is_enabled() {
    let capture = Capture::new(true);
    agent_run(&capture);

    let calls = capture.named("llm.call");
    let first = &calls[0].1;
    let input: serde_json::Value =
        serde_json::from_str(&first.fields["gen_ai.input.messages"]).unwrap();
    assert_eq!(input[0]["role"], "user");
    assert_eq!(input[0]["parts"][0]["type"], "text");
    assert_eq!(input[0]["parts"][0]["content"], "Weather in Oslo?");
    let system: serde_json::Value =
        serde_json::from_str(&first.fields["gen_ai.system_instructions"]).unwrap();
    assert_eq!(system[0]["type"], "text");
    let output: serde_json::Value =
        serde_json::from_str(&calls[1].1.fields["gen_ai.output.messages"]).unwrap();
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["finish_reason"], "stop");
    assert!(
        output[0]["parts"][0]["content"]
            .as_str()
            .unwrap()
            .contains("sunny in Oslo")
    );
    let (_, tool) = capture.named("execute_tool").remove(0);
    assert_eq!(
        tool.fields["gen_ai.tool.call.arguments"],
        r#"{"city":"Oslo"}"#
    );
    assert_eq!(tool.fields["gen_ai.tool.call.result"], r#""sunny in Oslo""#);
}
