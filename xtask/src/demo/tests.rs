//! Tests for the demo's closing line: it says what happened, never more.

use serde_json::json;

use super::*;

#[track_caller]
fn check(outcome: &Outcome, has: &[&str], lacks: &[&str]) {
    let line = closing(outcome);
    for part in has {
        assert!(line.contains(part), "{part:?} missing from {line:?}");
    }
    for part in lacks {
        assert!(!line.contains(part), "{part:?} in {line:?}");
    }
}

#[test]
fn the_closing_line_states_what_was_checked() {
    let summary = "The user's favourite colour is blue.".to_owned();
    check(
        &Outcome {
            valid: 2,
            carried: Some(summary.clone()),
            recalled: Some(true),
        },
        &[
            "2 of 2 turns answered with a document valid against the schema",
            "turn 1's summary (\"The user's favourite colour is blue.\") carried into turn 2's prompt",
            "turn 2's answer says blue",
        ],
        &["every step behaved as expected", "does not"],
    );
    // Valid but wrong: said so.
    check(
        &Outcome {
            valid: 2,
            carried: Some(summary),
            recalled: Some(false),
        },
        &[
            "2 of 2 turns",
            "turn 2's answer does not say blue: valid is not right",
        ],
        &["answer says blue"],
    );
    // Turn 1 invalid: nothing carried, and turn 2 invalid too: nothing claimed about its content.
    check(
        &Outcome {
            valid: 0,
            carried: None,
            recalled: None,
        },
        &[
            "0 of 2 turns",
            "turn 1 left no summary, so turn 2 was asked without it",
        ],
        &["carried into", "says blue", "does not say"],
    );
}

#[test]
fn an_answer_says_a_word_in_its_answer_field_or_anywhere() {
    assert!(says(
        &json!({"answer": "Your favourite colour is Blue.", "state": "answered"}),
        "blue"
    ));
    assert!(!says(
        &json!({"answer": "Your favourite colour is", "summary": "blue"}),
        "blue"
    ));
    assert!(says(&json!({"colour": "BLUE"}), "blue"));
    assert!(!says(
        &json!({"answer": "json-schema.org/draft/2020"}),
        "blue"
    ));
}

#[test]
fn summaries_come_from_the_memory_file() {
    let dir = std::env::temp_dir().join(format!("xtask-demo-test-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let memory = dir.join("memory.json");
    assert_eq!(summaries(&memory).unwrap(), Vec::<String>::new());
    fs::write(
        &memory,
        r#"{"turn": 1, "memory": {"summaries": ["Likes blue.", 3, "Second."]}}"#,
    )
    .unwrap();
    assert_eq!(summaries(&memory).unwrap(), ["Likes blue.", "Second."]);
    fs::write(&memory, "not json").unwrap();
    assert!(summaries(&memory).is_err());
    fs::remove_dir_all(&dir).unwrap();
}
