//! The choice rule on small matrices.

use claij_interceptors::StructuredMode;

use super::{choice_for, choices};
use crate::suite::record::{Matrix, Record};

fn record(model: &str, mode: Option<&str>, passed: bool, first: bool, retries: u64) -> Record {
    Record {
        model: model.to_owned(),
        suite: "retry".to_owned(),
        test: "t".to_owned(),
        passed,
        valid_first_try: first,
        attempts: retries + 1,
        retries,
        tokens_in: 0,
        tokens_out: 0,
        cost: 0.0,
        elapsed_ms: 0,
        detail: String::new(),
        mode: mode.unwrap_or("auto").to_owned(),
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
        "no test passed",
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
