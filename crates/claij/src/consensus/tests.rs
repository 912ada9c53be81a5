//! The consensus lines: values shown short, on a character.

use serde_json::json;

use super::shown;

#[track_caller]
fn check_shown(value: serde_json::Value, expected: &str) {
    assert_eq!(shown(&value), expected);
}

#[test]
fn long_values_are_cut_on_a_character() {
    check_shown(json!("Paris"), r#""Paris""#);
    check_shown(json!({"b": 1}), r#"{"b":1}"#);
    // 62 characters of JSON text, the last ones two bytes long: cut after the 60th character.
    let text = format!("{}ééé", "a".repeat(57));
    check_shown(json!(text), &format!("\"{}éé…", "a".repeat(57)));
}

#[test]
fn pointers_start_with_a_slash() {
    use super::pointer;
    assert_eq!(pointer("/answer"), Ok("/answer".to_owned()));
    assert_eq!(pointer(""), Ok(String::new()));
    assert_eq!(
        pointer("answer"),
        Err("a JSON pointer starts with `/`: did you mean /answer?".to_owned())
    );
}

#[test]
fn chat_refuses_a_consensus_and_several_models() {
    use super::refuse_in_chat;
    assert_eq!(refuse_in_chat(None, false, false), Ok(()));
    assert_eq!(refuse_in_chat(Some("local"), false, false), Ok(()));
    let refused = Err("claij chat talks with one model: --consensus and several --llm models are for claij ask (one question, several answers compared)".to_owned());
    assert_eq!(refuse_in_chat(Some("a,b"), false, false), refused);
    assert_eq!(refuse_in_chat(Some("local"), true, false), refused);
    assert_eq!(refuse_in_chat(None, false, true), refused);
}
