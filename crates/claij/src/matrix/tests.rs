//! The choice rule and the support verdict on small matrices.

use claij_interceptors::StructuredMode;

use super::{Matrix, Record};
use super::{choice_for, choices, unsupported};

fn record(model: &str, mode: Option<&str>, passed: bool, first: bool, retries: u64) -> Record {
    in_suite("retry", model, mode, passed, first, retries)
}

fn in_suite(
    suite: &str,
    model: &str,
    mode: Option<&str>,
    passed: bool,
    first: bool,
    retries: u64,
) -> Record {
    Record {
        model: model.to_owned(),
        suite: suite.to_owned(),
        test: "t".to_owned(),
        passed,
        valid_first_try: first,
        attempts: retries + 1,
        retries,
        tokens_in: 0,
        tokens_out: 0,
        cost: Some(0.0),
        elapsed_ms: 0,
        detail: format!("detail of {model}"),
        mode: mode.unwrap_or("auto").to_owned(),
        schema_tokens: None,
        at: None,
    }
}

#[track_caller]
fn check(
    records: Vec<Record>,
    model: &str,
    mode: Option<StructuredMode>,
    retries: usize,
    why: &str,
) {
    let matrix = Matrix { records };
    let choice = choice_for(&matrix, &[model]).unwrap();
    assert_eq!(
        (choice.mode, choice.max_retries),
        (mode, retries),
        "{}",
        choice.why
    );
    assert!(choice.why.contains(why), "{}", choice.why);
}

#[test]
fn modes_and_retry_budgets() {
    // Every test valid first try, no mode compared: auto, one retry in reserve.
    check(
        vec![
            record("a", None, true, true, 0),
            record("a", None, true, true, 0),
        ],
        "a",
        None,
        1,
        "auto",
    );
    // Passing tests needed two retries: a budget of three.
    check(
        vec![
            record("b", None, true, false, 2),
            record("b", None, true, true, 0),
        ],
        "b",
        None,
        3,
        "up to 2 retries",
    );
    // What passed needed no retry, though not every test was valid first try.
    check(
        vec![
            record("g", None, true, true, 0),
            record("g", None, false, false, 3),
        ],
        "g",
        None,
        1,
        "needed no retry",
    );
    // Nothing passed: the default.
    check(
        vec![record("c", None, false, false, 3)],
        "c",
        None,
        3,
        "no retry-suite test passed",
    );
    // Huge retry counts are capped.
    check(
        vec![record("d", None, true, false, 40)],
        "d",
        None,
        5,
        "at most 5",
    );
    // Modes compared: the best first-try rate wins; ties go to the earlier of native, tool, prompted.
    check(
        vec![
            record("e", Some("native"), true, false, 1),
            record("e", Some("tool"), true, true, 0),
            record("e", Some("prompted"), true, false, 2),
        ],
        "e",
        Some(StructuredMode::Tool),
        3,
        "tool was valid first try most often (1/1)",
    );
    check(
        vec![
            record("f", Some("prompted"), true, true, 0),
            record("f", Some("native"), true, true, 0),
        ],
        "f",
        Some(StructuredMode::Native),
        1,
        "native",
    );
}

#[test]
fn only_retry_suite_tests_that_retried_are_evidence_for_the_budget() {
    // Four retries in the fsm suite say nothing about the retry budget: the retry suite recovered
    // after one.
    check(
        vec![
            in_suite("fsm", "h", None, true, false, 4),
            record("h", None, true, false, 1),
            record("h", None, true, true, 0),
        ],
        "h",
        None,
        2,
        "retry-suite tests that retried passed after up to 1 retry",
    );
    // No retry suite: the default, and why.
    check(
        vec![in_suite("memory", "i", None, true, false, 2)],
        "i",
        None,
        3,
        "the retry suite was not measured",
    );
    // Retries that never recovered a reply are no evidence either.
    check(
        vec![
            record("j", None, true, true, 0),
            record("j", None, false, false, 1),
            in_suite("tools", "j", None, true, false, 3),
        ],
        "j",
        None,
        1,
        "passing retry-suite tests needed no retry",
    );
}

#[test]
fn a_model_whose_retry_suite_never_passed_is_unsupported() {
    let mut failed = record("k", Some("native"), false, false, 1);
    failed.at = Some("2026-11-26T15:00:00Z".to_owned());
    let matrix = Matrix {
        records: vec![
            failed,
            record("k", Some("tool"), false, false, 1),
            // Other suites passing do not make up for it.
            in_suite("memory", "k", None, true, true, 0),
            record("l", Some("native"), false, false, 1),
            record("l", Some("tool"), true, false, 1),
            in_suite("memory", "m", None, false, false, 0),
        ],
    };
    assert_eq!(
        unsupported(&matrix, &["k"]).as_deref(),
        Some(
            "its retry suite never passed (0/2 in native, tool modes, measured 2026-11-26T15:00:00Z; detail of k)"
        )
    );
    assert_eq!(unsupported(&matrix, &["l"]), None, "passed in one mode");
    assert_eq!(unsupported(&matrix, &["m"]), None, "retry suite not run");
    assert_eq!(unsupported(&matrix, &["z"]), None, "not measured");
    assert!(unsupported(&matrix, &["z", "k"]).is_some(), "any name");
}

#[test]
fn every_model_in_order_and_unknown_models_have_no_choice() {
    let matrix = Matrix {
        records: vec![
            record("x", None, true, true, 0),
            record("y", None, false, false, 1),
            record("x", None, true, true, 0),
        ],
    };
    let all: Vec<String> = choices(&matrix).into_iter().map(|c| c.model).collect();
    assert_eq!(all, ["x", "y"]);
    assert_eq!(choices(&matrix)[0].measured, (2, 2, 2));
    assert!(choice_for(&matrix, &["z"]).is_none());
}

#[test]
fn a_choice_shows_the_most_schema_tokens_its_records_sent() {
    let mut small = record("m", Some("tool"), true, true, 0);
    small.schema_tokens = Some(57);
    let mut big = record("m", Some("tool"), true, true, 0);
    big.schema_tokens = Some(812);
    let old = record("m", Some("tool"), true, true, 0);
    let matrix = Matrix {
        records: vec![small, big, old],
    };
    let choice = choice_for(&matrix, &["m"]).unwrap();
    assert_eq!(choice.schema_tokens, Some(812));
    let line = choice.line(None);
    assert!(
        line.contains("(3/3 passed, 3 valid first try, schema up to 812 tokens)"),
        "{line}"
    );
    assert_eq!(choice.to_json(None)["schema_tokens"], 812);
    // Records older than the field: nothing said.
    let matrix = Matrix {
        records: vec![record("n", None, true, true, 0)],
    };
    let choice = choice_for(&matrix, &["n"]).unwrap();
    assert!(
        !choice.line(None).contains("schema"),
        "{}",
        choice.line(None)
    );
    assert!(choice.to_json(None)["schema_tokens"].is_null());
}
