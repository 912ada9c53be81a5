//! Consensus: canonical comparison, tallies on the whole value and on pointers, the strict majority.

use std::sync::Arc;

use claij_backends::Error as BackendError;
use claij_test_support::Scripted;
use serde_json::{Value, json};

use super::{Missing, Reply, Tally, ask_all, canonical, first_valid, majority, tally};
use crate::{Chain, Config, Context, Pipeline};

/// Replies from one pipeline per entry: `Some(text)` replies `text`, `None` is a backend that is down.
/// Pipelines are named `a`, `b`, `c`...
fn replies(texts: &[Option<&str>]) -> Vec<Reply> {
    let pipelines: Vec<(String, Pipeline)> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let backend = match text {
                Some(text) => Scripted::replies([*text]),
                None => Scripted::new([Err(BackendError::other("down", "unreachable"))]),
            };
            let name = char::from(b'a' + u8::try_from(i).unwrap()).to_string();
            let mut config = Config::new("m");
            config.max_retries = 0;
            (name, Pipeline::new(Arc::new(backend), config, Chain::new()))
        })
        .collect();
    let named: Vec<(&str, &Pipeline)> = pipelines.iter().map(|(n, p)| (n.as_str(), p)).collect();
    futures_executor::block_on(ask_all(&named, Context::default, "question?"))
}

#[track_caller]
fn check_canonical(input: &str, expected: &str) {
    let value: Value = serde_json::from_str(input).unwrap();
    assert_eq!(canonical(&value).to_string(), expected);
}

#[test]
fn canonical_sorts_keys_and_normalises_numbers() {
    check_canonical(r#"{"b": 2.0, "a": 1}"#, r#"{"a":1,"b":2}"#);
    check_canonical(
        r#"{"z": {"y": 1, "x": [3.0, -0.0, 1.5]}}"#,
        r#"{"z":{"x":[3,0,1.5],"y":1}}"#,
    );
    check_canonical("-7.0", "-7");
    check_canonical("1e2", "100");
    // Past 2^53 a float's integral value is not exact: it stays a float.
    check_canonical("1e300", "1e+300");
    // Arrays keep their order; strings are not touched.
    check_canonical(r#"["b", "a", "1.0"]"#, r#"["b","a","1.0"]"#);
}

#[test]
fn canonical_forms_are_equal() {
    let a = json!({"answer": "4", "n": 2.0, "meta": {"y": 1, "x": 0.5}});
    let b: Value =
        serde_json::from_str(r#"{"meta": {"x": 0.5, "y": 1.0}, "n": 2, "answer": "4"}"#).unwrap();
    assert_ne!(a, b, "without canonical form 2.0 and 2 differ");
    assert_eq!(canonical(&a), canonical(&b));
}

#[track_caller]
fn check_majority(texts: &[Option<&str>], on: &[&str], expected: Option<Value>) {
    assert_eq!(majority(&replies(texts), on), expected);
}

#[test]
fn majority_is_more_than_half_of_the_pipelines_asked() {
    let four = Some(r#"{"answer": "4", "state": "done", "n": 1.0}"#);
    let four_reordered = Some(r#"{"n": 1, "state": "done", "answer": "4"}"#);
    let five = Some(r#"{"answer": "5", "state": "done", "n": 1}"#);
    let whole = json!({"answer": "4", "n": 1, "state": "done"});
    // The whole value, compared canonically: 2 of 3.
    check_majority(&[four, five, four_reordered], &[], Some(whole.clone()));
    // 2 of 4 is no majority; nor is a three-way split.
    check_majority(&[four, five, four_reordered, five], &[], None);
    check_majority(
        &[four, five, Some(r#"{"answer": "6", "state": "done"}"#)],
        &[],
        None,
    );
    // A failed pipeline was asked: 1 valid answer of 3 is no majority, 2 of 3 is.
    check_majority(&[None, four, None], &[], None);
    check_majority(&[None, four, four_reordered], &[], Some(whole));
}

#[test]
fn majority_on_a_pointer_ignores_the_other_fields() {
    let texts = [
        Some(r#"{"answer": "Paris", "state": "done", "why": "capital"}"#),
        Some(r#"{"answer": "Lyon", "state": "done"}"#),
        Some(r#"{"answer": "Paris", "state": "chat", "why": "it is"}"#),
    ];
    check_majority(&texts, &["/answer"], Some(json!("Paris")));
    check_majority(&texts, &[], None);
    // Several pointers: each answer's values at all of them, keyed by pointer.
    check_majority(&texts, &["/answer", "/state"], None);
    check_majority(
        &[texts[0], texts[2], texts[0]],
        &["/answer", "/state"],
        Some(json!({"/answer": "Paris", "/state": "done"})),
    );
}

#[test]
fn a_tally_says_who_voted_for_what() {
    let got = tally(
        &replies(&[
            Some(r#"{"answer": "Lyon", "state": "done"}"#),
            None,
            Some(r#"{"answer": "Paris", "state": "done"}"#),
            Some(r#"{"answer": "Paris", "state": "done"}"#),
        ]),
        &["/answer"],
    );
    assert_eq!(got.asked, 4);
    assert_eq!(got.failed, ["b"]);
    assert!(got.missing.is_empty());
    let votes: Vec<(Value, usize, Vec<String>, Vec<usize>)> = got
        .votes
        .iter()
        .map(|v| (v.value.clone(), v.count, v.names.clone(), v.replies.clone()))
        .collect();
    assert_eq!(
        votes,
        [
            (
                json!("Paris"),
                2,
                vec!["c".to_owned(), "d".to_owned()],
                vec![2, 3]
            ),
            (json!("Lyon"), 1, vec!["a".to_owned()], vec![0]),
        ]
    );
    // 2 of 4 is the most votes but no majority.
    assert_eq!(got.majority(), None);
    assert_eq!(got.valid(), 3);
    assert_eq!(
        serde_json::to_value(&got).unwrap(),
        json!({"on": ["/answer"], "asked": 4, "failed": ["b"], "missing": [], "votes": [
            {"value": "Paris", "count": 2, "names": ["c", "d"]},
            {"value": "Lyon", "count": 1, "names": ["a"]},
        ]})
    );
}

#[test]
fn ties_keep_the_order_first_seen() {
    let got = tally(
        &replies(&[
            Some(r#"{"answer": "x", "state": "done"}"#),
            Some(r#"{"answer": "y", "state": "done"}"#),
            Some(r#"{"answer": "y", "state": "done"}"#),
            Some(r#"{"answer": "x", "state": "done"}"#),
        ]),
        &["/answer"],
    );
    let order: Vec<&Value> = got.votes.iter().map(|v| &v.value).collect();
    assert_eq!(order, [&json!("x"), &json!("y")]);
}

#[test]
fn answers_without_a_pointer_vote_for_nothing() {
    let texts = [
        Some(r#"{"answer": "4", "state": "done", "confidence": 0.9}"#),
        Some(r#"{"answer": "4", "state": "done"}"#),
        Some(r#"{"answer": "5", "state": "done", "confidence": 0.9}"#),
    ];
    let got = tally(&replies(&texts), &["/confidence"]);
    assert_eq!(
        got.missing,
        [Missing {
            name: "b".into(),
            pointers: vec!["/confidence".into()]
        }]
    );
    assert_eq!(got.majority().map(|v| v.count), Some(2));
    assert!(got.absent_pointers().is_empty());
    // A pointer no answer has is named (most likely a typo), the others are not.
    let got = tally(&replies(&texts), &["/answer", "/anwser"]);
    assert!(got.votes.is_empty());
    assert_eq!(got.absent_pointers(), ["/anwser"]);
    // Without a valid answer no pointer is blamed.
    let got: Tally = tally(&replies(&[None, None]), &["/anwser"]);
    assert!(got.absent_pointers().is_empty());
    assert_eq!(got.valid(), 0);
}

#[test]
fn first_valid_skips_failures() {
    let got = replies(&[
        None,
        Some(r#"{"answer": "2", "state": "done"}"#),
        Some(r#"{"answer": "3", "state": "done"}"#),
    ]);
    assert_eq!(
        first_valid(&got).map(|a| a.value["answer"].clone()),
        Some(json!("2"))
    );
    assert!(first_valid(&replies(&[None])).is_none());
}
