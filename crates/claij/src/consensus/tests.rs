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
