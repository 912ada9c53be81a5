//! Unit tests of example building: one case per rule, and schemas without an example.

use serde_json::{Value, json};

use super::*;

#[track_caller]
fn check(schema: Value, expected: Value) {
    assert_eq!(example(&schema), Ok(expected), "{schema}");
}

#[track_caller]
fn none(schema: Value, pointer: &str, reason: &str) {
    let got = example(&schema);
    match &got {
        Err(e) => {
            assert_eq!(e.pointer, pointer, "{e}");
            assert!(e.reason.contains(reason), "{e}");
        }
        Ok(v) => panic!("{schema}: expected no example, got {v}"),
    }
}

#[test]
fn the_schema_names_the_value() {
    check(json!({"const": 3}), json!(3));
    check(
        json!({"type": "string", "examples": ["Rome", "Oslo"], "default": "x"}),
        json!("Rome"),
    );
    check(json!({"type": "string", "default": "x"}), json!("x"));
    check(json!({"enum": ["calm", "angry"]}), json!("calm"));
    // An example outside the enum is not taken.
    check(
        json!({"enum": ["calm", "angry"], "examples": ["sad"]}),
        json!("calm"),
    );
    check(
        json!({"enum": ["calm", "angry"], "examples": ["angry"]}),
        json!("angry"),
    );
}

#[test]
fn descriptions_are_never_values() {
    check(
        json!({"type": "string", "description": "Your response to the user"}),
        json!("..."),
    );
}

#[test]
fn placeholders_by_type() {
    check(json!({"type": "integer"}), json!(0));
    check(json!({"type": "integer", "minimum": 3}), json!(3));
    check(json!({"type": "integer", "exclusiveMinimum": 3}), json!(4));
    check(json!({"type": "integer", "maximum": -2}), json!(-2));
    check(
        json!({"type": "integer", "minimum": 1, "multipleOf": 5}),
        json!(5),
    );
    check(
        json!({"type": "number", "exclusiveMinimum": 0, "maximum": 1}),
        json!(0.5),
    );
    check(json!({"type": "boolean"}), json!(true));
    check(json!({"type": "null"}), json!(null));
    check(json!({"type": ["null", "string"]}), json!("..."));
    check(json!({"type": "string", "minLength": 5}), json!("....."));
    check(json!({"type": "string", "maxLength": 2}), json!(".."));
    check(
        json!({"type": "string", "format": "date-time"}),
        json!("2024-05-17T09:30:00Z"),
    );
    check(
        json!({"type": "string", "format": "email"}),
        json!("someone@example.com"),
    );
    check(json!({}), json!(null));
    check(json!(true), json!(null));
}

#[test]
fn patterns() {
    check(
        json!({"type": "string", "pattern": "^[A-Z]{2}$"}),
        json!("AA"),
    );
    check(
        json!({"type": "string", "pattern": "^call_[a-z0-9]{4,32}$"}),
        json!("call_aaaa"),
    );
    check(
        json!({"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+$"}),
        json!("a@a"),
    );
    check(
        json!({"type": "string", "pattern": "^(?:yes|no)-\\d+(\\.\\d{2})?$"}),
        json!("yes-0"),
    );
    check(json!({"type": "string", "pattern": "x"}), json!("x"));
    none(
        json!({"type": "string", "pattern": "^(?=a)a$"}),
        "/pattern",
        "cannot write a string",
    );
    none(
        json!({"type": "string", "pattern": "^a{100000}$"}),
        "/pattern",
        "cannot write a string",
    );
}

#[test]
fn objects_show_their_required_properties() {
    check(
        json!({
            "type": "object",
            "required": ["b", "a", "extra"],
            "properties": {"a": {"type": "integer"}, "b": {"enum": ["x"]}, "c": {"type": "string"}},
        }),
        json!({"a": 0, "b": "x", "extra": null}),
    );
    check(
        json!({"type": "object", "minProperties": 1, "properties": {"c": {"type": "string"}}}),
        json!({"c": "..."}),
    );
}

#[test]
fn arrays_show_one_item_or_min_items() {
    check(
        json!({"type": "array", "items": {"type": "integer"}}),
        json!([0]),
    );
    check(
        json!({"type": "array", "items": {"const": 1}, "minItems": 3}),
        json!([1, 1, 1]),
    );
    check(
        json!({"type": "array", "items": {"const": 1}, "maxItems": 0}),
        json!([]),
    );
    check(
        json!({"type": "array", "prefixItems": [{"const": "a"}, {"type": "integer"}], "items": false}),
        json!(["a", 0]),
    );
    check(json!({"type": "array"}), json!([null]));
}

#[test]
fn combinations_and_references() {
    // The FSM's state: the base's string and the routing's enum.
    check(
        json!({"allOf": [{"type": "string", "examples": ["done"]}, {"enum": ["review", "draft"]}]}),
        json!("review"),
    );
    check(
        json!({"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 2}]}),
        json!(2),
    );
    check(
        json!({"oneOf": [{"type": "object", "properties": {"tool": {"const": "a"}}, "required": ["tool"]}]}),
        json!({"tool": "a"}),
    );
    check(
        json!({
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/Point"}},
            "required": ["p"],
        }),
        json!({"p": {"x": 0}}),
    );
    // A recursion through optional fields ends.
    check(
        json!({
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
            "$ref": "#/$defs/Node",
        }),
        json!({}),
    );
}

#[test]
fn schemas_without_an_example() {
    none(json!(false), "", "accepts nothing");
    none(
        json!({"type": "object", "properties": {"a": false}, "required": ["a"]}),
        "/properties/a",
        "accepts nothing",
    );
    none(
        json!({
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}, "required": ["next"]}},
            "$ref": "#/$defs/Node",
        }),
        "/properties/next/properties/next/$ref",
        "recurses without end",
    );
    none(
        json!({"type": "array", "minItems": 100000}),
        "/minItems",
        "over the limit of 1000 values",
    );
    none(
        json!({"type": "string", "minLength": 100000}),
        "/minLength",
        "over the limit of 1000 characters",
    );
    none(
        json!({"$ref": "https://example.com/schema"}),
        "/$ref",
        "cannot follow",
    );
    // Built, then refused by validation: where in the instance, and why.
    none(
        json!({"type": "string", "not": {"const": "..."}}),
        "",
        "is not valid",
    );
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let mut schema = json!({"type": "integer"});
    for _ in 0..100_000 {
        // Built by hand: `json!` would serialize the inner value recursively.
        let mut map = serde_json::Map::new();
        map.insert("type".to_owned(), json!("array"));
        map.insert("items".to_owned(), schema);
        schema = Value::Object(map);
    }
    let got = example(&schema);
    assert!(
        matches!(&got, Err(e) if e.reason.contains("nested deeper than 32 levels")),
        "{got:?}"
    );
    // serde_json's own recursion limits drop: forget the value without recursing.
    std::mem::forget(schema);
}
