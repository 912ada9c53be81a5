//! Tests of what a person reads of a call's outcome.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

fn outcome(value: Value) -> CallOutcome {
    serde_json::from_value(value).unwrap()
}

#[test]
fn each_block_is_a_line_and_the_structured_result_only_without_content() {
    let blocks = outcome(json!({"content": [
        {"type": "text", "text": "one\n"}, {"type": "image", "mimeType": "image/png", "data": "AAAA"}
    ], "structured": {"a": 1}, "is_error": false}));
    assert_eq!(text(&blocks), "one\n[image image/png, 4 bytes of base64]\n");
    let structured = outcome(json!({"content": [], "structured": {"a": 1}, "is_error": false}));
    assert_eq!(text(&structured), "{\n  \"a\": 1\n}\n");
    let empty = outcome(json!({"content": [], "is_error": false}));
    assert_eq!(text(&empty), "\n");
}

#[test]
fn a_result_that_breaks_the_output_schema_shows_the_structured_result_and_the_violations() {
    let broken = outcome(json!({
        "content": [
            {"type": "text", "text": "{\"a\": \"x\"}"},
            {"type": "text", "text": "claij: the structured result breaks the outputSchema"}
        ],
        "structured": {"a": "x"},
        "is_error": true,
        "failure": {"kind": "invalid_output", "violations": [
            {"instance_pointer": "/a", "schema_pointer": "/properties/a/type", "keyword": "type",
             "message": "expected integer"},
            {"instance_pointer": "", "schema_pointer": "/required", "keyword": "required",
             "message": "b is missing"}
        ]}
    }));
    assert_eq!(text(&broken), "{\"a\": \"x\"}\n{\n  \"a\": \"x\"\n}\n");
    assert_eq!(
        invalid_output("s.t", &broken).unwrap(),
        "the structured result of `s.t` breaks its outputSchema: /a: expected integer \
         [/properties/a/type]; (root): b is missing [/required]"
    );
    let tool_error = outcome(json!({"content": [], "is_error": true, "failure": {"kind": "tool"}}));
    assert_eq!(invalid_output("s.t", &tool_error), None);
}

#[test]
fn arguments_are_a_json_object_and_a_tool_is_qualified_by_its_server() {
    assert_eq!(arguments(r#"{"a": 1}"#), Ok(json!({"a": 1})));
    assert_eq!(arguments("[1]"), Err("must be a JSON object".to_owned()));
    let err = arguments("{a").unwrap_err();
    assert!(err.starts_with("is not JSON: "), "{err}");
    assert_eq!(qualified("time.now", "tool"), Ok(("time", "now")));
    assert_eq!(qualified("fs.read.file", "tool"), Ok(("fs", "read.file")));
    let err = qualified("now", "prompt").unwrap_err();
    assert_eq!(err, "`now` is not `server.prompt`");
}
