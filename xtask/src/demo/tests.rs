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
fn the_closing_line_says_which_mechanism_carried_the_fact() {
    let summary = "The user's locker number is 47.".to_owned();
    let memory = Outcome {
        valid: 2,
        earlier_messages: 0,
        carried: Some(summary.clone()),
        recalled: Some(true),
    };
    check(
        &memory,
        &[
            "2 of 2 turns answered with a document valid against the schema",
            "turn 2's request held no earlier turn (--history-messages 0); the fact reached the model \
             through the memory summary: \"The user's locker number is 47.\"; turn 2's answer says 47",
        ],
        &["every step behaved as expected", "does not", "guess"],
    );
    // Valid but wrong: said so.
    check(
        &Outcome {
            recalled: Some(false),
            ..memory.clone()
        },
        &[
            "2 of 2 turns",
            "through the memory summary",
            "turn 2's answer does not say 47: valid is not right",
        ],
        &["answer says 47"],
    );
    // Right, but the summary never held the fact: a guess, not memory.
    check(
        &Outcome {
            carried: Some("This is a response to the user's question.".to_owned()),
            ..memory.clone()
        },
        &[
            "turn 1's summary (\"This is a response to the user's question.\") does not hold 47, so \
             nothing carried the fact",
            "turn 2's answer says 47, which no mechanism carried: a guess",
        ],
        &["through the memory summary"],
    );
    // Earlier messages kept (and so maybe sent): the summary is not the only way.
    check(
        &Outcome {
            earlier_messages: 2,
            ..memory
        },
        &["turn 2 may have been sent 2 earlier messages (the memory file kept them)"],
        &["held no earlier turn"],
    );
    // Turn 1 invalid: nothing carried, and turn 2 invalid too: nothing claimed about its content.
    check(
        &Outcome {
            valid: 0,
            earlier_messages: 0,
            carried: None,
            recalled: None,
        },
        &[
            "0 of 2 turns",
            "turn 1 left no summary, so nothing carried the fact",
        ],
        &["through the memory summary", "says 47", "does not say"],
    );
}

#[test]
fn earlier_messages_come_from_the_memory_file() {
    let dir = std::env::temp_dir().join(format!("xtask-demo-history-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let memory = dir.join("memory.json");
    assert_eq!(earlier_messages(&memory).unwrap(), 0);
    fs::write(&memory, r#"{"turn": 1, "history": {"messages": []}}"#).unwrap();
    assert_eq!(earlier_messages(&memory).unwrap(), 0);
    fs::write(
        &memory,
        r#"{"turn": 1, "history": {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}}"#,
    )
    .unwrap();
    assert_eq!(earlier_messages(&memory).unwrap(), 2);
    fs::write(&memory, "not json").unwrap();
    assert!(earlier_messages(&memory).is_err());
    fs::remove_dir_all(&dir).unwrap();
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
    // A whole word: 47 is not in 1470.
    assert!(says(&json!({"answer": "It is 47."}), "47"));
    assert!(!says(&json!({"answer": "It is 1470."}), "47"));
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
        "target/release/claij ask 'Note: my locker number is 47.' --llm local --interceptors memory \
         --history-messages 0 --memory target/claij/demo/memory.json"
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
