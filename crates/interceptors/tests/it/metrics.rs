//! Tests of the `metrics` interceptor: counts after a scripted run, the rendered summary, the logs and
//! spans of a call.

use std::sync::{Arc, LazyLock, Mutex};

use claij_interceptors::builtin::metrics::{Metrics, MetricsCollector, MetricsSnapshot};
use claij_interceptors::builtin::tools::Tools;
use claij_interceptors::{Budget, Chain, Config, Context, Error, Pipeline};
use claij_test_support::Scripted;
use claij_validation::{FixKind, Violation};
use regex::Regex;
use serde_json::{Value, json};

fn block<F: std::future::Future>(f: F) -> F::Output {
    futures_executor::block_on(f)
}

fn pipeline(backend: Scripted, model: &str, max_retries: usize, metrics: Metrics) -> Pipeline {
    let mut config = Config::new(model);
    config.max_retries = max_retries;
    Pipeline::new(Arc::new(backend), config, Chain::new().with(metrics))
}

/// Asks once; a failed call goes to the collector as the docs say.
fn ask(p: &Pipeline, collector: &MetricsCollector, input: &str) -> Result<Value, ()> {
    match block(p.ask(&mut Context::default(), input)) {
        Ok(answer) => Ok(answer.value),
        Err(e) => {
            collector.record_error(&e);
            Err(())
        }
    }
}

/// Four calls on two models sharing one collector: a retry with repairs and a coercion, a first-try
/// success, a semantic check failing with no retries left, and a backend failure.
fn scripted_run() -> MetricsSnapshot {
    let metrics = Metrics::new();
    let collector = metrics.collector().clone();
    let a = pipeline(
        Scripted::replies([
            "Sure:\n```json\n{'answer': 'hi'}\n```", // extracted, quotes; no `state`
            r#"{"answer": 42, "state": "done",}"#,   // trailing comma; 42 coerced to "42"
            r#"{"answer": "fine", "state": "done"}"#, // valid at once
        ]),
        "model-a",
        3,
        metrics.clone(),
    );
    let b = pipeline(
        Scripted::replies([r#"{"answer": "no", "state": "done"}"#]), // then the script runs out
        "model-b",
        0,
        Metrics::with_collector(collector.clone()),
    )
    .with_check("polite", |value, _| {
        if value["answer"] == "no" {
            vec![Violation {
                instance_pointer: "/answer".into(),
                schema_pointer: String::new(),
                keyword: String::new(),
                message: "say it politely".into(),
            }]
        } else {
            Vec::new()
        }
    });
    assert_eq!(
        ask(&a, &collector, "Hello"),
        Ok(json!({"answer": "42", "state": "done"}))
    );
    assert!(ask(&a, &collector, "How are you?").is_ok());
    assert!(ask(&b, &collector, "Will you?").is_err());
    assert!(ask(&b, &collector, "Again?").is_err());
    collector.snapshot()
}

#[test]
fn a_scripted_run_is_counted() {
    let s = scripted_run();
    assert_eq!((s.calls, s.succeeded, s.failed, s.first_try), (4, 2, 2, 1));
    assert_eq!((s.attempts, s.retries), (5, 1));
    let v = s.verdicts;
    assert_eq!(
        (v.valid, v.invalid, v.no_json, v.backend_error),
        (2, 2, 0, 1)
    );
    assert_eq!(s.errors["retries_exhausted"], 1);
    assert_eq!(s.errors["backend"], 1);
    // The first reply's extraction and quote repairs did not make it valid: they stay in its
    // attempt's record, not among the fixes that made replies valid.
    assert!(s.extractions.is_empty(), "{:?}", s.extractions);
    assert!(!s.repairs.contains_key(&FixKind::QuoteStyle));
    assert_eq!(s.repairs[&FixKind::TrailingComma], 1);
    assert_eq!(s.coercions[&FixKind::ToString], 1);
    assert_eq!(s.violations["required"], 1);
    assert_eq!(s.violations["polite"], 1);
    // Four attempts reached the backend and got a reply; the fifth failed there.
    assert_eq!(s.timings.request.count, 5);
    assert_eq!(s.timings.processing.count, 4);
    assert_eq!(s.timings.call.count, 4);
    assert!(s.timings.processing.total >= s.timings.repair.total + s.timings.validation.total);
    assert!(s.usage.input_tokens > 0);
    assert_eq!(s.usage.input_tokens, s.estimated_input_tokens); // Scripted estimates the same way
    let a = &s.models["model-a"];
    assert_eq!(
        (a.calls, a.succeeded, a.first_try, a.attempts),
        (2, 2, 1, 3)
    );
    let b = &s.models["model-b"];
    assert_eq!(
        (b.calls, b.succeeded, b.first_try, b.attempts),
        (2, 0, 0, 2)
    );
    assert_eq!(s.first_try_rate(), Some(0.25));
}

#[test]
fn rendered_summary() {
    insta::assert_snapshot!(redact_times(&scripted_run().render()));
}

/// Every duration (always `<digits>.<3 digits>ms`) with its column padding, as `[t]`.
fn redact_times(text: &str) -> String {
    // The stage rows' milliseconds (three decimals); counts are whole numbers and stay.
    let re = Regex::new(r" +\d+\.\d{3}\b").unwrap();
    re.replace_all(text, " [t]").into_owned()
}

#[test]
fn logs_and_spans_of_a_call() {
    let capture = Arc::new(Capture::default());
    let metrics = Metrics::new();
    let p = pipeline(
        Scripted::replies([
            r#"{"answer": "hi"}"#,
            r#"{'answer': 'hi', 'state': 'done',}"#,
        ]),
        "test-model",
        3,
        metrics,
    );
    LazyLock::force(&SECOND_DISPATCH);
    tracing::subscriber::with_default(Arc::clone(&capture), || {
        block(p.ask(&mut Context::default(), "Hello")).unwrap();
    });
    let lines = capture.lines.lock().unwrap().join("\n");
    insta::assert_snapshot!(lines);
}

/// A repaired reply that still fails validation is one warning, the failure, with the repair among
/// its fields; `reply repaired` is for a reply the repair made valid.
#[test]
fn a_repair_is_said_only_for_a_reply_that_then_validated() {
    let capture = Arc::new(Capture::default());
    let p = pipeline(
        Scripted::replies([
            r#"{'answer': 'hi',}"#,                  // repaired, but no `state`: invalid
            r#"{"answer": "hi", "state": "done",}"#, // repaired and valid
        ]),
        "test-model",
        3,
        Metrics::new(),
    );
    LazyLock::force(&SECOND_DISPATCH);
    tracing::subscriber::with_default(Arc::clone(&capture), || {
        block(p.ask(&mut Context::default(), "Hello")).unwrap();
    });
    let lines = capture.lines.lock().unwrap().clone();
    let warnings: Vec<&String> = lines.iter().filter(|l| l.starts_with("WARN")).collect();
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(
        warnings[0].starts_with("WARN reply failed validation; retrying attempt=1 ")
            && warnings[0].contains(" fixes=quote_style:2,trailing_comma:1 "),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].starts_with("WARN reply repaired attempt=2 fixes=trailing_comma:1 "),
        "{}",
        warnings[1]
    );
}

/// The numbers of an agent run, as `claij ask --max-steps N --metrics` showed them wrong ("first
/// try 0 of 1 valid", "attempts 2 (1 retry)" for two valid steps): each step's call is a model call
/// with its own first try.
#[test]
fn each_step_of_an_agent_run_counts_as_a_model_call() {
    let tools = Tools::new()
        .register(
            "now",
            "The time.",
            json!({"type": "object", "properties": {}}),
            |_| async { Ok(json!("12:00")) },
        )
        .unwrap();
    let metrics = Metrics::new();
    let collector = metrics.collector().clone();
    let backend = Scripted::replies([
        r#"{"answer": "", "state": "asking", "tools": [{"name": "now", "args": {}}]}"#,
        r#"{"answer": "It is noon.", "state": "done"}"#,
    ]);
    let p = Pipeline::new(
        Arc::new(backend),
        Config::new("test-model"),
        Chain::new().with(tools.clone()).with(metrics),
    )
    .with_tools(tools.executor());
    let run = block(p.run_agent(&mut Context::default(), "Time?", &Budget::default())).unwrap();
    assert_eq!((run.steps, run.answer.retries()), (2, 0));
    let s = collector.snapshot();
    assert_eq!((s.calls, s.succeeded, s.failed, s.first_try), (2, 2, 0, 2));
    assert_eq!((s.attempts, s.retries), (2, 0));
    let table = s.render();
    assert!(
        table.contains("\n  first try     2 of 2 valid (100%)\n"),
        "{table}"
    );
    assert!(
        table.contains("\n  attempts      2 (0 retries)\n"),
        "{table}"
    );
}

/// A run that stops at its steps budget, or fails at a later step, still counts each step it made
/// as its own call (the error carries every step's attempts).
#[test]
fn a_failed_agent_run_counts_its_earlier_steps() {
    let tools = || {
        Tools::new()
            .register(
                "now",
                "The time.",
                json!({"type": "object", "properties": {}}),
                |_| async { Ok(json!("12:00")) },
            )
            .unwrap()
    };
    let calls_now = r#"{"answer": "", "state": "asking", "tools": [{"name": "now", "args": {}}]}"#;
    let metrics = Metrics::new();
    let collector = metrics.collector().clone();
    // Stopped by `max_steps` after two steps that both called a tool.
    let p = Pipeline::new(
        Arc::new(Scripted::replies([calls_now, calls_now])),
        Config::new("test-model"),
        Chain::new().with(tools()).with(metrics.clone()),
    )
    .with_tools(tools().executor());
    let budget = Budget {
        max_steps: 2,
        ..Budget::default()
    };
    let error = block(p.run_agent(&mut Context::default(), "Time?", &budget)).unwrap_err();
    assert!(matches!(error, Error::BudgetExceeded { .. }), "{error}");
    collector.record_error(&error);
    let s = collector.take();
    assert_eq!((s.calls, s.succeeded, s.failed, s.first_try), (2, 2, 0, 2));
    assert_eq!(s.errors["budget_exceeded"], 1);

    // A tool call, then no valid answer within one retry.
    let mut config = Config::new("test-model");
    config.max_retries = 1;
    let p = Pipeline::new(
        Arc::new(Scripted::replies([calls_now, "no json", "still none"])),
        config,
        Chain::new().with(tools()).with(metrics),
    )
    .with_tools(tools().executor());
    let error =
        block(p.run_agent(&mut Context::default(), "Time?", &Budget::default())).unwrap_err();
    let Error::RetriesExhausted(exhausted) = &error else {
        panic!("{error}");
    };
    assert_eq!(
        (exhausted.attempts.len(), exhausted.last_call().len()),
        (3, 2)
    );
    assert!(
        error
            .to_string()
            .starts_with("no valid reply after 2 attempts"),
        "{error}"
    );
    collector.record_error(&error);
    let s = collector.snapshot();
    assert_eq!((s.calls, s.succeeded, s.failed, s.first_try), (2, 1, 1, 1));
    assert_eq!((s.attempts, s.retries), (3, 1));
}

/// A second dispatcher, registered for the whole run. With a single one registered, tracing decides
/// whether a callsite is enabled from the dispatcher of the thread that first reaches it, so another
/// test's thread (with no subscriber) could switch callsites off for the capture below.
static SECOND_DISPATCH: LazyLock<tracing::Dispatch> =
    LazyLock::new(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));

/// A tracing subscriber keeping one line per event: level, message, fields (durations blanked), and
/// the spans it happened in, outermost first.
#[derive(Default)]
struct Capture {
    spans: Mutex<Vec<String>>,
    stack: Mutex<Vec<u64>>,
    lines: Mutex<Vec<String>>,
}

/// Fields as `name=value`, durations (`*_us`, `*_ms`) blanked.
#[derive(Default)]
struct Fields {
    message: String,
    fields: Vec<String>,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.record_debug(field, &format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let name = field.name();
        if name == "message" {
            self.message = format!("{value:?}");
        } else if name.ends_with("_us") || name.ends_with("_ms") {
            self.fields.push(format!("{name}=_"));
        } else {
            self.fields.push(format!("{name}={value:?}"));
        }
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        // Metric events are for an exporter, not log lines (the CLI's log layer drops them too).
        metadata.target() != "claij::metrics"
    }

    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut fields = Fields::default();
        span.record(&mut fields);
        let mut spans = self.spans.lock().unwrap();
        spans.push(format!(
            "{}{{{}}}",
            span.metadata().name(),
            fields.fields.join(",")
        ));
        tracing::span::Id::from_u64(spans.len() as u64)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let spans = self.spans.lock().unwrap();
        let path: Vec<&str> = self
            .stack
            .lock()
            .unwrap()
            .iter()
            .map(|&id| spans[id as usize - 1].as_str())
            .collect();
        self.lines.lock().unwrap().push(format!(
            "{} {} {} @ {}",
            event.metadata().level(),
            fields.message,
            fields.fields.join(" "),
            path.join(" > ")
        ));
    }

    fn enter(&self, span: &tracing::span::Id) {
        self.stack.lock().unwrap().push(span.into_u64());
    }

    fn exit(&self, _: &tracing::span::Id) {
        self.stack.lock().unwrap().pop();
    }
}
