//! Unit tests of the metrics tally: timings, stage grouping of fixes, counting calls and errors.

use std::sync::Arc;
use std::time::Duration;

use claij_backends::{ChatRequest, FinishReason, Usage};
use claij_validation::{Fix, FixKind, StageTimes, Violation};

use super::*;
use crate::error::Exhausted;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// An attempt of `model` with a verdict, fixes of the kinds given, violations with these keywords.
fn attempt(number: usize, verdict: Verdict, fixes: &[FixKind], keywords: &[&str]) -> Attempt {
    Attempt {
        number,
        request: Arc::new(ChatRequest::new("m")),
        raw: (!matches!(verdict, Verdict::BackendError { .. })).then(|| "{}".to_owned()),
        finish_reason: Some(FinishReason::Stop),
        verdict,
        fixes: fixes
            .iter()
            .map(|&kind| Fix {
                pointer: String::new(),
                kind,
                before: String::new(),
                after: String::new(),
            })
            .collect(),
        violations: keywords
            .iter()
            .map(|k| Violation {
                instance_pointer: String::new(),
                schema_pointer: String::new(),
                keyword: (*k).to_owned(),
                message: String::new(),
            })
            .collect(),
        usage: Usage {
            input_tokens: 10,
            output_tokens: 2,
            cost_usd: Some(0.5),
            ..Usage::default()
        },
        latency: ms(10),
        prepare_time: ms(1),
        process_time: ms(5),
        stage_times: StageTimes {
            extraction: ms(1),
            repair: ms(1),
            coercion: ms(1),
            validation: ms(1),
        },
        check_time: ms(1),
        request_id: None,
        dialect_losses: Arc::default(),
        cut_strings: Vec::new(),
    }
}

fn report(attempts: Vec<Attempt>) -> CallReport {
    CallReport {
        provider: "scripted".to_owned(),
        model: "m".to_owned(),
        attempts,
    }
}

#[track_caller]
fn check_stage(kind: FixKind, expected: FixStage) {
    assert_eq!(stage_of(kind), expected, "{kind:?}");
}

#[test]
fn fixes_are_grouped_by_the_stage_that_makes_them() {
    check_stage(FixKind::Extracted, FixStage::Extraction);
    check_stage(FixKind::Unescaped, FixStage::Extraction);
    check_stage(FixKind::TrailingComma, FixStage::Repair);
    check_stage(FixKind::Truncation, FixStage::Repair);
    check_stage(FixKind::QuoteStyle, FixStage::Repair);
    check_stage(FixKind::EnumCase, FixStage::Coercion);
    check_stage(FixKind::StringToNumber, FixStage::Coercion);
    check_stage(FixKind::DroppedProperty, FixStage::Coercion);
    // Counted as coercions (were repairs): the stage follows the fix kind's own classification.
    check_stage(FixKind::DroppedNull, FixStage::Coercion);
    check_stage(FixKind::EnumFromProse, FixStage::Coercion);
    check_stage(FixKind::KeyAlias, FixStage::Coercion);
    check_stage(FixKind::ReplyAsValue, FixStage::Coercion);
}

#[test]
fn timing_keeps_count_total_min_max_and_mean() {
    let mut t = Timing::default();
    assert_eq!(t.mean(), Duration::ZERO);
    for d in [ms(4), ms(2), ms(6)] {
        t.record(d);
    }
    assert_eq!(
        (t.count, t.total, t.min, t.max, t.mean()),
        (3, ms(12), ms(2), ms(6), ms(4))
    );
}

#[test]
fn a_call_with_a_retry_counts_attempts_fixes_violations_and_time() {
    let collector = MetricsCollector::new();
    collector.record_call(&report(vec![
        attempt(
            1,
            Verdict::Invalid,
            &[FixKind::Extracted],
            &["required", "enum"],
        ),
        attempt(
            2,
            Verdict::Valid,
            &[
                FixKind::TrailingComma,
                FixKind::TrailingComma,
                FixKind::EnumCase,
            ],
            &[],
        ),
    ]));
    let s = collector.snapshot();
    assert_eq!((s.calls, s.succeeded, s.failed, s.first_try), (1, 1, 0, 0));
    assert_eq!((s.attempts, s.retries), (2, 1));
    assert_eq!((s.verdicts.valid, s.verdicts.invalid), (1, 1));
    // The first reply's extraction did not make it valid: it stays in that attempt's record.
    assert!(s.extractions.is_empty(), "{:?}", s.extractions);
    assert_eq!(s.repairs[&FixKind::TrailingComma], 2);
    assert_eq!(s.coercions[&FixKind::EnumCase], 1);
    assert_eq!(s.fixes().values().sum::<u64>(), 3);
    assert_eq!((s.violations["required"], s.violations["enum"]), (1, 1));
    assert_eq!(s.usage.input_tokens, 20);
    assert_eq!(s.usage.cost_usd, Some(1.0));
    // One call of two attempts, each 1 + 10 + 5 ms.
    assert_eq!((s.timings.call.count, s.timings.call.total), (1, ms(32)));
    assert_eq!(
        (s.timings.request.count, s.timings.request.total),
        (2, ms(20))
    );
    assert_eq!(s.timings.repair.count, 2);
    let m = &s.models["m"];
    assert_eq!(
        (m.calls, m.succeeded, m.first_try, m.attempts),
        (1, 1, 0, 2)
    );
    assert!(m.providers.contains("scripted"));
}

#[test]
fn first_try_successes_are_counted_per_model() {
    let collector = MetricsCollector::new();
    collector.record_call(&report(vec![attempt(1, Verdict::Valid, &[], &[])]));
    collector.record_call(&report(vec![
        attempt(
            1,
            Verdict::NoJson {
                reason: "prose".into(),
            },
            &[],
            &[],
        ),
        attempt(2, Verdict::Valid, &[], &[]),
    ]));
    let s = collector.snapshot();
    assert_eq!((s.calls, s.first_try, s.verdicts.no_json), (2, 1, 1));
    assert_eq!(s.first_try_rate(), Some(0.5));
    assert_eq!(s.models["m"].first_try, 1);
}

/// An agent run's turn: a model call per step, each numbering its attempts from 1.
#[test]
fn each_step_of_an_agent_run_is_a_model_call_with_its_own_first_try() {
    let collector = MetricsCollector::new();
    // Two steps, each valid at once (the tool call, then the answer).
    collector.record_call(&report(vec![
        attempt(1, Verdict::Valid, &[], &[]),
        attempt(1, Verdict::Valid, &[], &[]),
    ]));
    let s = collector.snapshot();
    assert_eq!((s.calls, s.succeeded, s.failed, s.first_try), (2, 2, 0, 2));
    assert_eq!((s.attempts, s.retries), (2, 0));
    assert_eq!(s.first_try_rate(), Some(1.0));
    assert_eq!(s.timings.call.count, 2);
    let m = &s.models["m"];
    assert_eq!((m.calls, m.first_try, m.attempts), (2, 2, 2));

    // Three steps: the second needs a retry.
    let collector = MetricsCollector::new();
    collector.record_call(&report(vec![
        attempt(1, Verdict::Valid, &[], &[]),
        attempt(1, Verdict::Invalid, &[FixKind::QuoteStyle], &["required"]),
        attempt(2, Verdict::Valid, &[FixKind::TrailingComma], &[]),
        attempt(1, Verdict::Valid, &[], &[]),
    ]));
    let s = collector.snapshot();
    assert_eq!((s.calls, s.succeeded, s.first_try), (3, 3, 2));
    assert_eq!((s.attempts, s.retries), (4, 1));
    assert_eq!(
        s.repairs.keys().collect::<Vec<_>>(),
        [&FixKind::TrailingComma]
    );
}

/// A run that fails at a later step still counts its earlier steps' calls.
#[test]
fn a_failed_agent_run_counts_each_step_as_its_own_call() {
    let collector = MetricsCollector::new();
    let exhausted = Error::RetriesExhausted(Box::new(Exhausted {
        attempts: vec![
            attempt(1, Verdict::Valid, &[], &[]),
            attempt(1, Verdict::Invalid, &[], &["type"]),
            attempt(2, Verdict::Invalid, &[], &["type"]),
        ],
    }));
    collector.record_error(&exhausted);
    let s = collector.snapshot();
    assert_eq!((s.calls, s.succeeded, s.failed, s.first_try), (2, 1, 1, 1));
    assert_eq!((s.attempts, s.retries), (3, 1));
    assert_eq!(s.errors["retries_exhausted"], 1);
}

#[test]
fn errors_with_attempts_are_failed_calls_others_only_counted() {
    let collector = MetricsCollector::new();
    let exhausted = Error::RetriesExhausted(Box::new(Exhausted {
        attempts: vec![attempt(1, Verdict::Invalid, &[], &["type"])],
    }));
    let backend = Error::Backend {
        attempts: vec![attempt(
            1,
            Verdict::BackendError {
                message: "down".into(),
            },
            &[],
            &[],
        )],
        source: Box::new(claij_backends::Error::other("openrouter", "down")),
    };
    let typed = Error::Typed {
        type_name: "T",
        message: String::new(),
        value: Value::Null,
    };
    for e in [&exhausted, &backend, &typed] {
        collector.record_error(e);
    }
    let s = collector.snapshot();
    assert_eq!((s.calls, s.succeeded, s.failed), (2, 0, 2));
    assert_eq!(s.errors["retries_exhausted"], 1);
    assert_eq!(s.errors["backend"], 1);
    assert_eq!(s.errors["typed"], 1);
    assert_eq!(s.violations["type"], 1);
    assert_eq!(s.verdicts.backend_error, 1);
    // A backend error has no reply: nothing was processed.
    assert_eq!(
        (s.timings.request.count, s.timings.processing.count),
        (2, 1)
    );
    assert!(s.models["m"].providers.contains("openrouter"));
}

#[test]
fn the_snapshot_round_trips_through_json_with_milliseconds() {
    let collector = MetricsCollector::new();
    collector.record_call(&report(vec![attempt(
        1,
        Verdict::Valid,
        &[FixKind::QuoteStyle],
        &[],
    )]));
    let s = collector.snapshot();
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["timings"]["request"]["total_ms"], 10.0);
    assert_eq!(json["repairs"]["quote_style"], 1);
    let back: MetricsSnapshot = serde_json::from_value(json).unwrap();
    assert_eq!(back, s);
}

#[test]
fn take_resets_and_clones_share_the_tally() {
    let metrics = Metrics::new();
    let handle = metrics.clone().collector().clone();
    metrics
        .collector()
        .record_call(&report(vec![attempt(1, Verdict::Valid, &[], &[])]));
    assert_eq!(handle.take().calls, 1);
    assert_eq!(metrics.collector().snapshot().calls, 0);
}

#[test]
fn post_response_without_a_report_fails() {
    let mut ctx = Context::default();
    let result = futures_executor::block_on(Metrics::new().post_response(&Value::Null, &mut ctx));
    assert!(result.unwrap_err().to_string().contains("no call report"));
}

// The table `render` draws (`claij ask --metrics`).

#[test]
#[allow(clippy::field_reassign_with_default)] // a tally built field by field reads best
fn the_table_has_a_row_per_count_and_per_stage() {
    let mut m = MetricsSnapshot::default();
    m.calls = 1;
    m.succeeded = 1;
    m.attempts = 2;
    m.retries = 1;
    m.verdicts.valid = 1;
    m.verdicts.invalid = 1;
    m.repairs.insert(FixKind::TrailingComma, 2);
    m.extractions.insert(FixKind::Extracted, 1);
    m.violations.insert("required".to_owned(), 1);
    m.usage.input_tokens = 120;
    m.usage.output_tokens = 30;
    m.usage.cost_usd = Some(0.00042);
    m.timings.request.record(Duration::from_millis(250));
    m.timings.request.record(Duration::from_millis(750));
    insta::assert_snapshot!(m.render(), @r"
    metrics
      calls         1 (1 valid, 0 failed)
      first try     0 of 1 valid (0%)
      attempts      2 (1 retry)
      verdicts      valid 1, invalid 1, no json 0, backend error 0
      fixes         extracted 1, trailing_comma 2
      violations    required 1
      tokens        120 in, 30 out (0 cached, 0 reasoning)
      cost          $0.000420
      stage          count    total ms     mean ms      min ms      max ms
      call               0       0.000       0.000       0.000       0.000
        prompt           0       0.000       0.000       0.000       0.000
        request          2    1000.000     500.000     250.000     750.000
        processing       0       0.000       0.000       0.000       0.000
          extraction     0       0.000       0.000       0.000       0.000
          repair         0       0.000       0.000       0.000       0.000
          coercion       0       0.000       0.000       0.000       0.000
          validation     0       0.000       0.000       0.000       0.000
          check          0       0.000       0.000       0.000       0.000
    ");
}

#[test]
fn an_empty_tally_says_none_and_an_unknown_cost() {
    let text = MetricsSnapshot::default().render();
    assert!(text.contains("  fixes         none\n"), "{text}");
    assert!(text.contains("  cost          unknown"), "{text}");
    assert!(!text.contains("errors"), "{text}");
}
