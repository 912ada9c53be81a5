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
        r#"{"version": 3, "turn": 1, "interceptors": {"memory": {"version": 1, "state": {"summaries": ["Likes blue.", 3, "Second."]}}}}"#,
    )
    .unwrap();
    assert_eq!(summaries(&memory).unwrap(), ["Likes blue.", "Second."]);
    fs::write(&memory, "not json").unwrap();
    assert!(summaries(&memory).is_err());
    fs::remove_dir_all(&dir).unwrap();
}

/// The commands the demo shows can be pasted from the repository root: the binary and the memory
/// file by their paths from there, no environment prefix.
#[test]
fn the_ask_command_is_shown_ready_to_paste() {
    let claij = root().join("target/release/claij");
    let memory = root().join("target/claij/demo/memory.json");
    let shown = ask_cmd(&claij, TURNS[0], &memory).to_string();
    assert_eq!(
        shown,
        "target/release/claij ask 'Remember: my favourite colour is blue.' --llm local \
         --interceptors memory --memory target/claij/demo/memory.json"
    );
    assert!(!shown.contains("CLAIJ_MODEL_DIR"), "{shown}");
    // A binary outside the repository (CARGO_TARGET_DIR elsewhere) is shown whole.
    let elsewhere = Path::new("/elsewhere/release/claij");
    assert!(
        claij_cmd(elsewhere)
            .to_string()
            .starts_with("/elsewhere/release/claij"),
    );
}

#[test]
fn the_model_dir_is_named_only_when_the_variable_sets_it() {
    assert_eq!(model_note(None), None);
    assert_eq!(model_note(Some("".into())), None);
    assert_eq!(
        model_note(Some("/models".into())).as_deref(),
        Some(
            "(the model is in $CLAIJ_MODEL_DIR, /models: claij finds it there while the variable is set)"
        )
    );
}

#[test]
fn the_last_line_says_which_binary_ran_and_how_to_install_it() {
    let line = how_to_run(&root().join("target/release/claij"));
    assert!(
        line.contains("ran target/release/claij, built by this demo"),
        "{line}"
    );
    assert!(
        line.contains("cargo install --path crates/cli --locked"),
        "{line}"
    );
}
