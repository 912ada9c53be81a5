//! Unit tests for repair: input and the value it must become, then the fixes recorded on a few.

use serde_json::{Value, json};

use super::{MAX_DEPTH, RepairError, repair};
use crate::FixKind;

#[track_caller]
fn check(input: &str, expected: Value) {
    match repair(input) {
        Ok(repaired) => assert_eq!(repaired.value, expected, "input {input:?}"),
        Err(error) => panic!("input {input:?}: {error}"),
    }
}

/// The fixes of repairing `input`, as (pointer, kind).
fn fixes(input: &str) -> Vec<(String, FixKind)> {
    repair(input)
        .unwrap()
        .fixes
        .into_iter()
        .map(|fix| (fix.pointer, fix.kind))
        .collect()
}

#[test]
fn valid_json_passes_untouched() {
    check(
        r#"{"a": [1, 2.5, "x", true, null]}"#,
        json!({"a": [1, 2.5, "x", true, null]}),
    );
    check(r#""just a string""#, json!("just a string"));
    check("  42 ", json!(42));
    assert!(fixes(r#"{"b": 1, "a": 2}"#).is_empty());
    // Key order is kept.
    let keys: Vec<String> = repair(r#"{"b": 1, "a": 2}"#)
        .unwrap()
        .value
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["b", "a"]);
}

#[test]
fn commas() {
    check("[1, 2, 3,]", json!([1, 2, 3]));
    check(r#"{"a": 1,}"#, json!({"a": 1}));
    check("[,1]", json!([1]));
    check("[1 2\n3]", json!([1, 2, 3]));
    check("{\"a\": 1\n\"b\": 2}", json!({"a": 1, "b": 2}));
    check(r#"[{"a": 1}{"b": 2}]"#, json!([{"a": 1}, {"b": 2}]));
}

#[test]
fn colons_and_keys() {
    check(r#"{"a" 1}"#, json!({"a": 1}));
    check("{name: 'Ada', age: 36}", json!({"name": "Ada", "age": 36}));
    check("{2: 'two'}", json!({"2": "two"}));
    check(r#"{"a": 1, COMMENT "b": 2}"#, json!({"a": 1, "b": 2}));
}

#[test]
fn quote_styles() {
    check("{'a': 'b'}", json!({"a": "b"}));
    check("{\u{201c}a\u{201d}: \u{201c}b\u{201d}}", json!({"a": "b"}));
    check("{`a`: `b`}", json!({"a": "b"}));
    check("'it\\'s'", json!("it's"));
    check(
        r#"{"a": "say \u201chi\u201d"}"#,
        json!({"a": "say \u{201c}hi\u{201d}"}),
    );
}

#[test]
fn unquoted_values() {
    check("{a: hello world}", json!({"a": "hello world"}));
    check(
        "{url: https://example.com/a/b?c=d}",
        json!({"url": "https://example.com/a/b?c=d"}),
    );
    check("[a, b]", json!(["a", "b"]));
    check(
        "{a: 2024-10-18T18:35:22Z}",
        json!({"a": "2024-10-18T18:35:22Z"}),
    );
}

#[test]
fn literals() {
    check("[True, False, None]", json!([true, false, null]));
    check("[TRUE, Null, undefined]", json!([true, null, null]));
    check("[NaN, Infinity, -Infinity]", json!([null, null, null]));
    check("[trueish]", json!(["trueish"]));
}

#[test]
fn comments() {
    check("{\"a\": 1 // one\n}", json!({"a": 1}));
    check(r#"{/* c */ "a": /* d */ 1}"#, json!({"a": 1}));
    check("{\n# python comment\n\"a\": 1}", json!({"a": 1}));
    check(r#""/* not a comment */""#, json!("/* not a comment */"));
}

#[test]
fn numbers() {
    check("[.5, 1., -.5, +1]", json!([0.5, 1.0, -0.5, 1]));
    check("[0789, 1_000, 1/3]", json!(["0789", 1000, "1/3"]));
    check("[2e, -]", json!([2.0, 0]));
    check("[0.0.1, 1e999]", json!(["0.0.1", null]));
    check("[0x1F]", json!(["0x1F"]));
}

#[test]
fn truncation() {
    check(r#"{"a": [1, 2"#, json!({"a": [1, 2]}));
    check(r#"{"a": "hel"#, json!({"a": "hel"}));
    check(r#"{"a": 1, "b"#, json!({"a": 1}));
    check(r#"{"a": 1, "b":"#, json!({"a": 1, "b": null}));
    check(r#"{"a": 1, "a"#, json!({"a": 1}));
    check(r#"{"a": 1, ""#, json!({"a": 1}));
    check(r#"["a", ""#, json!(["a"]));
    check(r#"{"a": "\u26"#, json!({"a": ""}));
    check(r#"{"done": fals"#, json!({"done": false}));
    check("[tr", json!([true]));
    check("[nu, t", json!(["nu", "t"]));
}

#[test]
fn quotes_inside_strings() {
    check(
        r#"{"a": "the 24" screen"}"#,
        json!({"a": "the 24\" screen"}),
    );
    check(
        r#"{"a": "say "hi" now", "b": 1}"#,
        json!({"a": "say \"hi\" now", "b": 1}),
    );
    check(r#"{"a": "b, "c": 1}"#, json!({"a": "b", "c": 1}));
    check(
        r#"{"a": "set {"k": "v"}, done", "b": 2}"#,
        json!({"a": "set {\"k\": \"v\"}, done", "b": 2}),
    );
    check(
        r#"{"code": "print("{}")", "b": 2}"#,
        json!({"code": "print(\"{}\")", "b": 2}),
    );
    check(
        r#"{"msg": "the value is "{}" here"}"#,
        json!({"msg": "the value is \"{}\" here"}),
    );
    check(
        "{\"html\": \"<a href=\"x\">link</a>\"}",
        json!({"html": "<a href=\"x\">link</a>"}),
    );
    check(r#"{""a"": ""b""}"#, json!({"a": "b"}));
}

#[test]
fn escapes_and_control_characters() {
    check(
        "{\"a\": \"line\nbreak\tand tab\"}",
        json!({"a": "line\nbreak\tand tab"}),
    );
    check(r#"{"re": "\d+\.\d"}"#, json!({"re": "\\d+\\.\\d"}));
    check(r#""\ud83d\ude00""#, json!("😀"));
    check(r#"["\ud83d x"]"#, json!(["\u{fffd} x"]));
    check(r#"{\"a\": \"b\"}"#, json!({"a": "b"}));
}

#[test]
fn concatenation_jsonp_ellipsis() {
    check(r#"{"a": "x" + "y" + 'z'}"#, json!({"a": "xyz"}));
    check("callback({\"a\": 1});", json!({"a": 1}));
    check(r#"{"id": ObjectId("5f1")}"#, json!({"id": "5f1"}));
    check("[1, 2, ...]", json!([1, 2]));
    check(r#"{"a": 1, …}"#, json!({"a": 1}));
}

#[test]
fn brackets() {
    check(r#"{"a": 1}}"#, json!({"a": 1}));
    check(r#"[{"a": 1}}, {"b": 2}]"#, json!([{"a": 1}, {"b": 2}]));
    check(r#"{"a": [1, 2}, "b": 3}"#, json!({"a": [1, 2], "b": 3}));
    check(r#"{"a": 1}, "b": 2}"#, json!({"a": 1, "b": 2}));
    check(r#"{"a": [1], [2, 3]}"#, json!({"a": [1, 2, 3]}));
    check(r#"["k": "v"]"#, json!([{"k": "v"}]));
}

#[test]
fn python_structures() {
    check("(1, 2)", json!([1, 2]));
    check(
        "{'pair': (1, 'a'), 'one': (1)}",
        json!({"pair": [1, "a"], "one": 1}),
    );
    check("{'a', 'b'}", json!(["a", "b"]));
}

#[test]
fn several_values() {
    check("{\"a\": 1}\n{\"a\": 2}", json!([{"a": 1}, {"a": 2}]));
    check("1\n2", json!([1, 2]));
    check("[1][2]", json!([[1], [2]]));
    check(r#"{"a": 1}, {}"#, json!({"a": 1}));
}

#[test]
fn fences_inside_the_text() {
    check("```json\n{\"a\": 1}\n```", json!({"a": 1}));
    assert_eq!(repair("```json\n```"), Err(RepairError::Empty));
    check("{\"a\": \"b```", json!({"a": "b"}));
    check(r#"{"a": "```json"}"#, json!({"a": "```json"}));
}

#[test]
fn errors_say_where() {
    assert_eq!(repair("   "), Err(RepairError::Empty));
    assert_eq!(repair("/* only a comment */"), Err(RepairError::Empty));
    let error = repair("{\"a\": 1}\nfoo").unwrap_err();
    assert_eq!(
        error.to_string(),
        "unexpected character 'f' after the json value at line 2 column 1 (byte 9)"
    );
    assert_eq!(error.offset(), Some(9));
    let error = repair(r#""\uZZZZ""#).unwrap_err();
    assert!(
        error.to_string().starts_with("invalid unicode escape"),
        "{error}"
    );
    let deep = "[".repeat(MAX_DEPTH + 1);
    assert!(matches!(
        repair(&deep),
        Err(RepairError::TooDeep {
            limit: MAX_DEPTH,
            offset: MAX_DEPTH,
            ..
        })
    ));
}

#[test]
fn fixes_name_kind_and_pointer() {
    assert_eq!(fixes("[1, 2,]"), [(String::new(), FixKind::TrailingComma)]);
    assert_eq!(
        fixes("{a: {'b/c': [1 2]}}"),
        [
            (String::new(), FixKind::UnquotedKey),
            ("/a".to_owned(), FixKind::QuoteStyle),
            ("/a/b~1c".to_owned(), FixKind::MissingComma),
        ]
    );
    assert_eq!(
        fixes(r#"{"a": [True"#),
        [
            ("/a/0".to_owned(), FixKind::Literal),
            ("/a".to_owned(), FixKind::Truncation),
            (String::new(), FixKind::Truncation),
        ]
    );
    // Values of newline-delimited JSON are items of the array it becomes.
    assert_eq!(
        fixes("{'a': 1}\n{'b': 2}"),
        [
            ("/0".to_owned(), FixKind::QuoteStyle),
            ("/1".to_owned(), FixKind::QuoteStyle),
            (String::new(), FixKind::Ndjson),
        ]
    );
    let fix = repair("{\"a\": NaN}").unwrap().fixes.remove(0);
    assert_eq!((fix.before.as_str(), fix.after.as_str()), ("NaN", "null"));
}

#[test]
fn excerpts_are_short() {
    let long = format!("{{\"a\": \"{}", "x".repeat(500));
    let repaired = repair(&long).unwrap();
    assert!(
        repaired
            .fixes
            .iter()
            .all(|fix| fix.before.chars().count() <= 41 && fix.after.chars().count() <= 41)
    );
}
