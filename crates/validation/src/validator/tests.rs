//! Tests of the validator: violation lists, discriminated unions, pointers.

use serde_json::{Value, json};

use super::*;

#[track_caller]
fn check(schema: Value, instance: Value, expected: &[&str]) {
    let v = Validator::new(&schema).unwrap();
    let got: Vec<String> = match v.validate(&instance) {
        Ok(()) => Vec::new(),
        Err(vs) => vs.iter().map(ToString::to_string).collect(),
    };
    assert_eq!(got, expected);
}

fn tools() -> Value {
    json!({
        "type": "object",
        "required": ["calls"],
        "properties": {"calls": {"type": "array", "items": {"$ref": "#/$defs/Call"}}},
        "$defs": {
            "Call": {"oneOf": [{"$ref": "#/$defs/Search"}, {"$ref": "#/$defs/Add"}]},
            "Search": {"type": "object", "required": ["tool", "query"], "additionalProperties": false,
                "properties": {"tool": {"const": "search"}, "query": {"type": "string", "minLength": 1}}},
            "Add": {"type": "object", "required": ["tool", "a", "b"],
                "properties": {"tool": {"const": "add"}, "a": {"type": "integer"}, "b": {"type": "integer"}}}
        }
    })
}

#[test]
fn base_schema_violations() {
    check(
        claij_schema::base(),
        json!({"answer": "a", "state": "s"}),
        &[],
    );
    check(
        claij_schema::base(),
        json!([]),
        &["(root): expected object, got array"],
    );
    check(
        claij_schema::base(),
        json!({}),
        &[
            "(root): missing required property `answer`",
            "(root): missing required property `state`",
        ],
    );
}

#[test]
fn discriminated_union_reports_the_chosen_branch() {
    check(
        tools(),
        json!({"calls": [{"tool": "search", "query": "x"}, {"tool": "add", "a": 1, "b": 2}]}),
        &[],
    );
    check(
        tools(),
        json!({"calls": [{"tool": "add", "a": "1", "b": 2}, {"tool": "search", "query": "", "extra": 1}]}),
        &[
            "/calls/0/a: expected integer, got string",
            "/calls/1/query: expected at least 1 characters, got 0",
            "/calls/1/extra: property `extra` is not allowed",
        ],
    );
    check(
        tools(),
        json!({"calls": [{"tool": "delete"}, {"query": "x"}, 7]}),
        &[
            "/calls/0/tool: unknown value \"delete\"; expected one of \"search\", \"add\"",
            "/calls/1: missing required property `tool`; expected one of \"search\", \"add\"",
            "/calls/2: expected an object whose `tool` is one of \"search\", \"add\", got number",
        ],
    );
    let v = Validator::new(&tools()).unwrap();
    let err = v
        .validate(&json!({"calls": [{"tool": "add", "a": 1}]}))
        .unwrap_err();
    assert_eq!(err[0].schema_pointer, "/$defs/Add/required");
    assert_eq!(err[0].keyword, "required");
    let err = v
        .validate(&json!({"calls": [{"tool": "nope"}]}))
        .unwrap_err();
    assert_eq!(err[0].schema_pointer, "/$defs/Call/oneOf");
    // The branches are dispatched, not tried one by one.
    assert!(format!("{v:?}").contains("dispatched_branches: 2"), "{v:?}");
}

#[test]
fn union_under_not_stays_with_boon() {
    // The union is reachable through `not`, which the walker does not follow: boon must see it.
    let schema = json!({
        "properties": {"a": {"$ref": "#/$defs/U"}, "b": {"not": {"$ref": "#/$defs/U"}}},
        "$defs": {"U": {"oneOf": [
            {"required": ["k"], "properties": {"k": {"const": 1}}},
            {"required": ["k"], "properties": {"k": {"const": 2}}}
        ]}}
    });
    check(schema.clone(), json!({"a": {"k": 1}, "b": {"k": 3}}), &[]);
    check(
        schema,
        json!({"a": {"k": 1}, "b": {"k": 2}}),
        &["/b: matches a schema it must not match"],
    );
}

#[test]
fn plain_any_of_reports_the_closest_alternative() {
    let schema = json!({"properties": {"x": {"anyOf": [
        {"type": "string", "maxLength": 2},
        {"type": "string", "pattern": "^[0-9]+$", "minLength": 6}
    ]}}});
    check(
        schema,
        json!({"x": "long"}),
        &[
            "/x: matches none of the 2 allowed alternatives",
            "/x: expected at most 2 characters, got 4",
        ],
    );
    // Disjoint types: the type picks the alternative, and only its violations are reported.
    let by_type = json!({"properties": {"x": {"anyOf": [
        {"type": "string", "maxLength": 2},
        {"type": "object", "required": ["a", "b"]}
    ]}}});
    check(
        by_type,
        json!({"x": "long"}),
        &["/x: expected at most 2 characters, got 4"],
    );
}

#[test]
fn draft_07_and_recursive_schemas() {
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/definitions/node"}},
            "kind": {"oneOf": [{"required": ["t"], "properties": {"t": {"const": "a"}}}]}
        }}},
        "$ref": "#/definitions/node"
    });
    check(schema.clone(), json!({"children": [{"children": []}]}), &[]);
    check(
        schema,
        json!({"children": [{"children": [{"kind": {"t": "b"}}]}]}),
        &["/children/0/children/0/kind/t: expected \"a\""],
    );
}

#[test]
fn formats_are_enforced() {
    check(
        json!({"properties": {"when": {"type": "string", "format": "date-time"}}}),
        json!({"when": "yesterday"}),
        &["/when: \"yesterday\" is not a valid date-time"],
    );
}

#[test]
fn memoized_compiles_once() {
    let memo = Memo::default();
    let a = Validator::memoized(&memo, &tools()).unwrap();
    let b = Validator::memoized(&memo, &tools()).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!((memo.stats().hits, memo.stats().misses), (1, 1));
}

#[test]
fn invalid_schema_is_an_error() {
    let err = Validator::new(&json!({"type": "strng"})).unwrap_err();
    assert!(err.to_string().contains("/type"), "{err}");
}

#[test]
fn nullable_unions_dispatch_by_type() {
    let schema = json!({
        "$defs": {"Money": {"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number"}}}},
        "properties": {"budget": {"anyOf": [{"$ref": "#/$defs/Money"}, {"type": "null"}]}}
    });
    check(schema.clone(), json!({"budget": null}), &[]);
    check(schema.clone(), json!({"budget": {"amount": 5}}), &[]);
    check(
        schema.clone(),
        json!({"budget": {"amount": "5"}}),
        &["/budget/amount: expected number, got string"],
    );
    check(
        schema.clone(),
        json!({"budget": 3}),
        &["/budget: expected object, null, got number"],
    );
    let v = Validator::new(&schema).unwrap();
    assert!(format!("{v:?}").contains("dispatched_branches: 2"), "{v:?}");
    // `integer` and `number` overlap: not planned, boon decides.
    let overlapping = json!({"anyOf": [{"type": "integer"}, {"type": "number", "maximum": 1}]});
    check(overlapping.clone(), json!(7), &[]);
    check(
        overlapping,
        json!(7.5),
        &[
            "(root): matches none of the 2 allowed alternatives",
            "(root): expected integer, got number",
        ],
    );
}

#[test]
fn the_fast_path_says_how_much_it_covers() {
    let full = Validator::new(&claij_schema::base()).unwrap();
    assert_eq!(full.fast_path(), FastPath::Full);
    // `date` is one of the formats the check asserts itself; `email` goes to boon.
    let own = Validator::new(&json!({"properties": {"at": {"format": "date"}}})).unwrap();
    assert_eq!(own.fast_path(), FastPath::Full);
    let partial = Validator::new(&json!({"properties": {"at": {"format": "email"}}})).unwrap();
    assert_eq!(partial.fast_path(), FastPath::Partial { deferred: 1 });
    let off =
        Validator::new(&json!({"$dynamicAnchor": "x", "items": {"$dynamicRef": "#x"}})).unwrap();
    assert_eq!(off.fast_path(), FastPath::Off);
    assert!(!partial.is_valid(&json!({"at": "tomorrow"})));
    assert!(partial.is_valid(&json!({"at": "ada@example.org"})));
    assert!(!own.is_valid(&json!({"at": "2023-02-29"})));
    assert!(own.is_valid(&json!({"at": "2024-02-29"})));
}

#[test]
fn a_union_inside_a_dispatched_branch_is_dispatched_too() {
    // The inner `anyOf` lies under the outer `oneOf` itself (not behind a `$ref`): both are renamed in
    // the rewrite, and the inner branch pointers must follow the outer rename.
    let schema = json!({"oneOf": [
        {"type": "object", "required": ["k"], "properties": {"k": {"const": "a"},
            "v": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
        {"type": "object", "required": ["k"], "properties": {"k": {"const": "b"}}}
    ]});
    let v = Validator::new(&schema).unwrap();
    assert!(format!("{v:?}").contains("dispatched_branches: 4"), "{v:?}");
    check(
        schema,
        json!({"k": "a", "v": 5}),
        &["/v: expected string, null, got number"],
    );
}

#[test]
fn a_deferred_subschema_sees_the_unions_the_rewrite_renames() {
    // The root goes to boon (`format: email`), and the tagged union below it is planned, so renamed in the
    // rewrite boon runs for violations: the deferred root must be boon's compilation of the schema
    // as written, or the union would be skipped and the wrong branch payload pass.
    let schema = json!({"format": "email", "properties": {"c": {"oneOf": [
        {"type": "object", "required": ["k"], "properties": {"k": {"const": "a"}, "x": {"type": "string"}}},
        {"type": "object", "required": ["k"], "properties": {"k": {"const": "b"}}}
    ]}}});
    let v = Validator::new(&schema).unwrap();
    assert_eq!(v.fast_path(), FastPath::Partial { deferred: 1 });
    assert!(format!("{v:?}").contains("dispatched_branches: 2"), "{v:?}");
    assert!(v.is_valid(&json!({"c": {"k": "a", "x": "s"}})));
    assert!(!v.is_valid(&json!({"c": {"k": "a", "x": 1}})));
    assert!(!v.is_valid(&json!({"c": {"k": "c"}})));
    check(
        schema,
        json!({"c": {"k": "a", "x": 1}}),
        &["/c/x: expected string, got number"],
    );
}
