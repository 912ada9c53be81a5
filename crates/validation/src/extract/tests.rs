//! Unit tests for extraction: a reply and the candidate texts it must yield, in order.

use std::borrow::Cow;

use serde_json::json;

use super::{MAX_CANDIDATES, candidates, recover};
use crate::FixKind;
use crate::repair::RepairError;

#[track_caller]
fn check(reply: &str, expected: &[&str]) {
    let found = candidates(reply);
    let texts: Vec<&str> = found
        .iter()
        .map(|candidate| candidate.text.as_ref())
        .collect();
    assert_eq!(texts, expected, "reply {reply:?}");
    for candidate in &found {
        if let Cow::Borrowed(text) = candidate.text {
            assert_eq!(
                reply.get(candidate.span.clone()),
                Some(text),
                "span of {text:?}"
            );
        }
    }
}

#[test]
fn valid_json_is_the_only_candidate() {
    check(r#"{"a": 1}"#, &[r#"{"a": 1}"#]);
    check(" [1, 2]\n", &["[1, 2]"]);
    check("\u{feff}{\"a\": 1}", &[r#"{"a": 1}"#]);
    let found = candidates(r#"{"a": 1}"#);
    assert!(matches!(found[0].text, Cow::Borrowed(_)));
    assert!(found[0].fixes.is_empty());
}

#[test]
fn json_escaped_in_a_string_is_unescaped() {
    check(r#""{\"a\": 1}""#, &[r#""{\"a\": 1}""#, r#"{"a": 1}"#]);
    let found = candidates(r#""{\"a\": 1}""#);
    assert_eq!(
        found[1].fixes.last().map(|fix| fix.kind),
        Some(FixKind::Unescaped)
    );
    // A string that merely starts with a bracket stays a string.
    check(r#""[citation needed""#, &[r#""[citation needed""#]);
}

#[test]
fn fences() {
    check(
        "Here:\n```json\n{\"a\": 1}\n```\nDone.",
        &["{\"a\": 1}", "Here:\n```json\n{\"a\": 1}\n```\nDone."],
    );
    check("```\n[1]\n```", &["[1]", "```\n[1]\n```"]);
    check(
        "~~~json\n{\"a\": 1}\n~~~",
        &["{\"a\": 1}", "~~~json\n{\"a\": 1}\n~~~"],
    );
    check(
        "Sure: ```json {\"a\": 1} ``` ok",
        &["{\"a\": 1}", "Sure: ```json {\"a\": 1} ``` ok"],
    );
    // The json-tagged fence comes before the others.
    check(
        "```python\nprint({'x': 1})\n```\n```json\n{\"a\": 1}\n```",
        &[
            "{\"a\": 1}",
            "print({'x': 1})",
            "{'x': 1}",
            "```python\nprint({'x': 1})\n```\n```json\n{\"a\": 1}\n```",
        ],
    );
    // A fence inside a JSON string does not close the block.
    check(
        "```json\n{\"code\": \"```py\\nx\\n```\"}\n```",
        &[
            "{\"code\": \"```py\\nx\\n```\"}",
            "```json\n{\"code\": \"```py\\nx\\n```\"}\n```",
        ],
    );
    // An unclosed fence runs to the end.
    check("```json\n{\"a\": 1", &["{\"a\": 1", "```json\n{\"a\": 1"]);
}

#[test]
fn tags_and_prose() {
    check(
        "<json>{\"a\": 1}</json>",
        &["{\"a\": 1}", "<json>{\"a\": 1}</json>"],
    );
    check(
        "The answer is {\"a\": 1}. Hope it helps!",
        &["{\"a\": 1}", "The answer is {\"a\": 1}. Hope it helps!"],
    );
    check(
        "See [1] and {\"a\": \"}\"} then [2, 3]",
        &[
            "{\"a\": \"}\"}",
            "[1]",
            "[2, 3]",
            "See [1] and {\"a\": \"}\"} then [2, 3]",
        ],
    );
    // Brackets around prose are looked into, not taken.
    check(
        "(see {this note} and {\"a\": 1})",
        &["{\"a\": 1}", "(see {this note} and {\"a\": 1})"],
    );
    check("no json here", &["no json here"]);
    // A citation does not win over the object.
    let recovered = recover("Paris [1]. Here: {\"answer\": \"Paris\"}").unwrap();
    assert_eq!(recovered.value, json!({"answer": "Paris"}));
    check("", &[]);
}

#[test]
fn reasoning_is_skipped() {
    check("<think>{\"a\": 0}</think>\n{\"a\": 1}", &["{\"a\": 1}"]);
    check(
        "<thinking>{\"a\": 0}</thinking> ok {\"a\": 1}",
        &["{\"a\": 1}", "ok {\"a\": 1}"],
    );
    check("plan {\"a\": 0}</think>{\"a\": 1}", &["{\"a\": 1}"]);
    check("<think>{\"a\": 0} and never closed", &[]);
    let found = candidates("<think>hmm</think>{\"a\": 1}");
    assert_eq!(found[0].fixes[0].kind, FixKind::Extracted);
}

#[test]
fn starts_like_json_goes_first() {
    // A reply that starts with a bracket is repaired whole before its pieces are tried...
    check(
        "{'a': 1} and {\"b\": 2}",
        &["{'a': 1} and {\"b\": 2}", "{'a': 1}", "{\"b\": 2}"],
    );
    // ...unless it starts with valid JSON followed by prose.
    check(
        "[1, 2] and {\"a\": 1}",
        &["[1, 2]", "[1, 2] and {\"a\": 1}", "{\"a\": 1}"],
    );
    check(
        "{\"a\": [\"[\"]} Hope this helps!",
        &["{\"a\": [\"[\"]}", "{\"a\": [\"[\"]} Hope this helps!"],
    );
    check(
        "/* c */ {\"a\": 1,}",
        &["/* c */ {\"a\": 1,}", "{\"a\": 1,}"],
    );
}

#[test]
fn recover_takes_the_first_value() {
    let recovered = recover("Sure!\n```json\n{'a': 1,}\n```").unwrap();
    assert_eq!(recovered.value, json!({"a": 1}));
    let kinds: Vec<FixKind> = recovered.fixes.iter().map(|fix| fix.kind).collect();
    assert_eq!(
        kinds,
        [
            FixKind::Extracted,
            FixKind::QuoteStyle,
            FixKind::TrailingComma
        ]
    );
    assert_eq!(
        recover("{\"a\": 1}\n\nThat is all.").unwrap().value,
        json!({"a": 1})
    );
    assert_eq!(
        recover("Result: \"{\\\"a\\\": 1}\"").unwrap().value,
        json!({"a": 1})
    );
    assert!(recover("{\"a\": 1}").unwrap().fixes.is_empty());
    // A complete value wins over a cut-off one before it.
    let reply = "```json\n{\"a\": [1, 2\n```\nFixed:\n```json\n{\"a\": [1, 2, 3]}\n```";
    assert_eq!(recover(reply).unwrap().value, json!({"a": [1, 2, 3]}));
    // A cut-off value wins over the whole reply repaired as text.
    assert_eq!(
        recover("Result:\n```json\n{\"a\": 1\n```\nDone")
            .unwrap()
            .value,
        json!({"a": 1})
    );
}

#[test]
fn recover_errors() {
    assert_eq!(recover(""), Err(RepairError::Empty));
    assert_eq!(
        recover("<think>{\"a\": 1}</think>"),
        Err(RepairError::Empty)
    );
    // The error is placed in the reply, not in the piece that was repaired.
    let error = recover("Here:\n{\"a\" ]").unwrap_err();
    assert_eq!(error.offset(), Some(11), "{error}");
}

/// Hostile replies of about `n` bytes: each kind once made extraction or repair quadratic, or could.
fn adversarial(n: usize) -> Vec<(&'static str, String)> {
    let distinct: String = (0..n / 10).map(|i| format!("x {{\"a\":{i}}} ")).collect();
    let hidden: String = (0..n / 24)
        .map(|i| format!("<think>{i}</think>{{\"a\":{i}}} "))
        .collect();
    vec![
        ("empty objects", "{}".repeat(n / 2)),
        ("objects in prose", distinct),
        ("objects between reasoning", hidden),
        ("fences", "```\n".repeat(n / 4)),
        ("inline fences", "```{}".repeat(n / 5)),
        ("unbalanced quotes", "\"a".repeat(n / 2)),
        ("deep arrays", "[".repeat(n)),
        ("open members", "{\"a\":".repeat(n / 5)),
        ("json tags", "<json>{".repeat(n / 7)),
        ("newline-delimited", "{\"a\":1}\n".repeat(n / 8)),
    ]
}

/// The work of recovering a reply, counted rather than timed: the bytes of every candidate that
/// repair may be run on, and the fixes each carries.
fn work(reply: &str) -> usize {
    let found = candidates(reply);
    assert!(
        found.len() <= MAX_CANDIDATES + 1,
        "{} candidates in a reply of {} bytes",
        found.len(),
        reply.len()
    );
    found
        .iter()
        .map(|candidate| candidate.text.len() + candidate.fixes.len())
        .sum()
}

#[test]
fn extraction_work_is_linear_in_the_reply() {
    let (small, large) = (adversarial(20_000), adversarial(40_000));
    for ((name, small), (_, large)) in small.iter().zip(&large) {
        let (w_small, w_large) = (work(small), work(large));
        assert!(
            w_small <= 6 * small.len() + 1024,
            "{name}: work {w_small} for {} bytes",
            small.len()
        );
        // Twice the reply, about twice the work (not four times).
        assert!(
            w_large <= 2 * w_small + w_small / 4 + 1024,
            "{name}: work {w_small} for {} bytes, {w_large} for {}",
            small.len(),
            large.len()
        );
    }
}

#[test]
fn hostile_replies_still_recover_their_first_value() {
    for (name, reply) in adversarial(40_000) {
        let _ = recover(&reply);
        assert!(!candidates(&reply).is_empty(), "{name}");
    }
    assert_eq!(recover(&"{}".repeat(80_000)).unwrap().value, json!({}));
    let prose: String = (0..5_000).map(|i| format!("x {{\"a\":{i}}} ")).collect();
    assert_eq!(recover(&prose).unwrap().value, json!({"a": 0}));
}
