//! Unit tests for the Llguidance dialect: one `check`, cases as data.

use serde_json::{Value, json};

use super::*;
use crate::dialect::Loss;

/// Compiles `input` with the default bounds and compares the schema (`x-guidance` is added to `expected`)
/// and the losses (as display lines).
#[track_caller]
fn check(input: Value, expected: Value, expected_losses: &[&str]) {
    check_with(
        LlguidanceBounds::default(),
        input,
        expected,
        expected_losses,
    );
}

#[track_caller]
fn check_with(
    bounds: LlguidanceBounds,
    input: Value,
    mut expected: Value,
    expected_losses: &[&str],
) {
    let compiled = match compile_llguidance(&input, bounds) {
        Ok(compiled) => compiled,
        Err(e) => panic!("{e}"),
    };
    if let Value::Object(map) = &mut expected {
        map.insert(
            "x-guidance".to_owned(),
            json!({"whitespace_flexible": false}),
        );
    }
    assert_eq!(compiled.schema, expected, "schema");
    let losses: Vec<String> = compiled.losses.iter().map(Loss::to_string).collect();
    assert_eq!(losses, expected_losses, "losses");
}

#[track_caller]
fn check_err(input: Value, expected: &str) {
    match Dialect::Llguidance.compile(&input) {
        Ok(compiled) => panic!("expected an error, got {}", compiled.schema),
        Err(e) => assert_eq!(e.to_string(), expected),
    }
}

#[test]
fn refs_are_inlined() {
    check(
        json!({"type": "object", "properties": {
            "a": {"$ref": "#/$defs/Code"},
            "b": {"$ref": "#/$defs/Code", "description": "the other code"},
            "c": {"$ref": "#/$defs/Code", "maxLength": 2},
            "d": {"$ref": "#/definitions/Level", "default": 1},
        }, "required": ["a", "b", "c", "d"],
        "$defs": {"Code": {"type": "string", "pattern": "^[A-Z]+$"}, "Unused": {"not": {}}},
        "definitions": {"Level": {"type": "integer", "minimum": 0}}}),
        json!({"type": "object", "properties": {
            "a": {"type": "string", "pattern": "^[A-Z]+$", "maxLength": 2000},
            "b": {"type": "string", "pattern": "^[A-Z]+$", "maxLength": 2000, "description": "the other code"},
            "c": {"type": "string", "pattern": "^[A-Z]+$", "maxLength": 2},
            "d": {"type": "integer", "minimum": 0, "default": 1},
        }, "required": ["a", "b", "c", "d"], "additionalProperties": false}),
        &[
            "#/properties/a: $ref rewritten \"#/$defs/Code\"",
            "#/$defs/Code: maxLength tightened 2000",
            "#/properties/b: $ref rewritten \"#/$defs/Code\"",
            "#/properties/c: $ref rewritten \"#/$defs/Code\"",
            "#/properties/d: $ref rewritten \"#/definitions/Level\"",
            "#: additionalProperties tightened false",
        ],
    );
}

#[test]
fn recursive_refs_stay_references() {
    // `definitions` (draft-07) and a name that needs escaping in a pointer both end up as plain `$defs` names.
    check(
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {
            "root": {"$ref": "#/definitions/a~1b"},
            "list": {"$ref": "#/definitions/List", "description": "a linked list"},
        }, "required": ["root", "list"], "definitions": {
            "a/b": {"type": "object", "properties": {
                "kids": {"type": "array", "items": {"$ref": "#/definitions/a~1b", "minProperties": 1}},
            }, "required": ["kids"], "additionalProperties": false},
            "a_b": {"type": "object", "properties": {"again": {"$ref": "#/definitions/a_b"}}, "required": [], "additionalProperties": false},
            "List": {"type": "object", "properties": {"next": {"$ref": "#/definitions/List"}, "also": {"$ref": "#/definitions/a_b"}}, "required": ["next"]},
        }}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {
            "root": {"$ref": "#/$defs/a_b_2"},
            "list": {"$ref": "#/$defs/List", "description": "a linked list"},
        }, "required": ["root", "list"], "additionalProperties": false, "$defs": {
            "a_b_2": {"type": "object", "properties": {
                "kids": {"type": "array", "items": {"$ref": "#/$defs/a_b_2"}, "maxItems": 32},
            }, "required": ["kids"], "additionalProperties": false},
            "List": {"type": "object", "properties": {"next": {"$ref": "#/$defs/List"}, "also": {"$ref": "#/$defs/a_b"}}, "required": ["next"], "additionalProperties": false},
            "a_b": {"type": "object", "properties": {"again": {"$ref": "#/$defs/a_b"}}, "required": [], "additionalProperties": false},
        }}),
        &[
            "#/properties/root: $ref rewritten \"#/definitions/a~1b\"",
            "#/properties/list: $ref rewritten \"#/definitions/List\"",
            "#: additionalProperties tightened false",
            "#/definitions/a~1b/properties/kids/items: $ref rewritten \"#/definitions/a~1b\"",
            "#/definitions/a~1b/properties/kids/items: minProperties dropped 1",
            "#/definitions/a~1b/properties/kids: maxItems tightened 32",
            "#/definitions/List/properties/next: $ref rewritten \"#/definitions/List\"",
            "#/definitions/List/properties/also: $ref rewritten \"#/definitions/a_b\"",
            "#/definitions/List: additionalProperties tightened false",
            "#/definitions/a_b/properties/again: $ref rewritten \"#/definitions/a_b\"",
        ],
    );
    // The root itself: `#` is kept; a definition reached only through it is inlined.
    check(
        json!({"type": "object", "properties": {"name": {"$ref": "#/$defs/Name"}, "kids": {"type": "array", "items": {"$ref": "#"}, "maxItems": 4}},
               "required": ["name", "kids"], "additionalProperties": false, "$defs": {"Name": {"enum": ["a", "b"]}}}),
        json!({"type": "object", "properties": {"name": {"enum": ["a", "b"]}, "kids": {"type": "array", "items": {"$ref": "#"}, "maxItems": 4}},
               "required": ["name", "kids"], "additionalProperties": false}),
        &["#/properties/name: $ref rewritten \"#/$defs/Name\""],
    );
}

#[test]
fn external_and_anchor_refs_are_errors() {
    check_err(
        json!({"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}}),
        "unresolvable $ref \"other.json#/x\" at \"/properties/a\"",
    );
    check_err(
        json!({"type": "object", "properties": {"a": {"$ref": "#node"}}, "$defs": {"N": {"$anchor": "node"}}}),
        "unresolvable $ref \"#node\" at \"/properties/a\"",
    );
}

#[test]
fn one_of_becomes_any_of() {
    let call = |tool: &str| {
        json!({"type": "object", "properties": {"tool": {"const": tool}, "args": {"type": "object", "additionalProperties": false}},
               "required": ["tool", "args"], "additionalProperties": false})
    };
    let refs = json!([{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]);
    let ref_losses = [
        "#/properties/x/oneOf/0: $ref rewritten \"#/$defs/A\"",
        "#/properties/x/oneOf/1: $ref rewritten \"#/$defs/B\"",
    ];
    for (one_of, defs, compiled, change, more_losses) in [
        // A discriminator behind `$ref`s (the shape llguidance itself never proves disjoint).
        (
            refs.clone(),
            json!({"A": call("a"), "B": call("b")}),
            json!([call("a"), call("b")]),
            "rewritten",
            &ref_losses[..],
        ),
        // The same constant twice: both branches can match.
        (
            refs.clone(),
            json!({"A": call("a"), "B": call("a")}),
            json!([call("a"), call("a")]),
            "relaxed",
            &ref_losses[..],
        ),
        // Disjoint types; an integer is also a number.
        (
            json!([{"type": "integer"}, {"type": ["string", "null"], "enum": ["x", null]}]),
            json!({}),
            json!([{"type": "integer"}, {"type": ["string", "null"], "enum": ["x", null]}]),
            "rewritten",
            &[][..],
        ),
        (
            json!([{"type": "integer"}, {"type": "number", "minimum": 1}]),
            json!({}),
            json!([{"type": "integer"}, {"type": "number", "minimum": 1}]),
            "relaxed",
            &[][..],
        ),
        // Constants without `type: object`: any string matches both branches.
        (
            json!([{"properties": {"k": {"const": 1}}, "required": ["k"]}, {"properties": {"k": {"const": 2}}, "required": ["k"]}]),
            json!({}),
            json!([
                {"properties": {"k": {"const": 1}}, "required": ["k"], "additionalProperties": false},
                {"properties": {"k": {"const": 2}}, "required": ["k"], "additionalProperties": false},
            ]),
            "relaxed",
            &[
                "#/properties/x/oneOf/0: additionalProperties tightened false",
                "#/properties/x/oneOf/1: additionalProperties tightened false",
            ][..],
        ),
    ] {
        let first = format!("#/properties/x: oneOf {change} {one_of}");
        let losses: Vec<&str> = [first.as_str()]
            .into_iter()
            .chain(more_losses.iter().copied())
            .collect();
        check(
            json!({"type": "object", "properties": {"x": {"oneOf": one_of}}, "required": ["x"], "additionalProperties": false, "$defs": defs}),
            json!({"type": "object", "properties": {"x": {"anyOf": compiled}}, "required": ["x"], "additionalProperties": false}),
            &losses,
        );
    }
    // Next to an `anyOf`, the former `oneOf` joins `allOf`; what can be merged out of `allOf` is.
    check(
        json!({"anyOf": [{"type": "integer"}, {"type": "boolean"}], "oneOf": [{"type": "integer", "minimum": 0}, {"type": "boolean"}], "allOf": [{"const": 1}]}),
        json!({"anyOf": [{"type": "integer"}, {"type": "boolean"}], "const": 1, "allOf": [{"anyOf": [{"type": "integer", "minimum": 0}, {"type": "boolean"}]}]}),
        &[
            "#: oneOf rewritten [{\"type\":\"integer\",\"minimum\":0},{\"type\":\"boolean\"}]",
            "#: allOf rewritten [{\"const\":1}]",
        ],
    );
}

#[test]
fn unsupported_keywords_are_dropped() {
    check(
        json!({"type": "object", "properties": {
            "list": {"type": "array", "items": {"type": "integer"}, "uniqueItems": true, "contains": {"const": 1}, "minContains": 1, "maxContains": 2, "maxItems": 5, "unevaluatedItems": false},
            "other": {"not": {"type": "null"}, "if": {"type": "string"}, "then": {"minLength": 1}, "else": {"type": "null"}},
            "when": {"type": "string", "format": "date-time", "maxLength": 40},
            "site": {"type": "string", "format": "uri-reference", "maxLength": 200},
            "word": {"type": "string", "pattern": "^\\w+\\b", "maxLength": 20},
            "pair": {"type": "string", "pattern": "^(a)\\1$", "maxLength": 20},
            "ahead": {"type": "string", "pattern": "^(?=a)", "maxLength": 20},
            "ctrl": {"type": "string", "pattern": "\\cA", "maxLength": 20},
            "ok": {"type": "string", "pattern": "^[A-Z]{2}\\d+\\p{L}$", "maxLength": 20},
            "meta": {"type": "object", "patternProperties": {"^(?!x)": {"type": "string"}, "^y": {"type": "integer"}, "^z": {"type": "boolean"}}, "propertyNames": {"maxLength": 3}, "maxProperties": 4},
        }, "required": ["list", "other", "when", "site", "word", "pair", "ahead", "ctrl", "ok", "meta"],
        "additionalProperties": false, "dependentRequired": {"a": ["b"]}, "dependentSchemas": {"a": {}}, "dependencies": {"a": ["b"]}, "unevaluatedProperties": false,
        "title": "T", "description": "D", "examples": [{}], "default": {}, "$comment": "C", "deprecated": false, "readOnly": true, "writeOnly": false, "x-vendor": 1}),
        json!({"type": "object", "properties": {
            "list": {"type": "array", "items": {"type": "integer"}, "maxItems": 5},
            "other": {},
            "when": {"type": "string", "format": "date-time", "maxLength": 40},
            "site": {"type": "string", "maxLength": 200},
            "word": {"type": "string", "maxLength": 20},
            "pair": {"type": "string", "maxLength": 20},
            "ahead": {"type": "string", "maxLength": 20},
            "ctrl": {"type": "string", "maxLength": 20},
            "ok": {"type": "string", "pattern": "^[A-Z]{2}\\d+\\p{L}$", "maxLength": 20},
            "meta": {"type": "object", "patternProperties": {"^y": {"type": "integer"}}, "maxProperties": 4},
        }, "required": ["list", "other", "when", "site", "word", "pair", "ahead", "ctrl", "ok", "meta"],
        "additionalProperties": false,
        "title": "T", "description": "D", "examples": [{}], "default": {}, "$comment": "C", "deprecated": false, "readOnly": true, "writeOnly": false, "x-vendor": 1}),
        &[
            "#/properties/list: uniqueItems dropped true",
            "#/properties/list: contains dropped {\"const\":1}",
            "#/properties/list: minContains dropped 1",
            "#/properties/list: maxContains dropped 2",
            "#/properties/list: unevaluatedItems dropped false",
            "#/properties/other: not dropped {\"type\":\"null\"}",
            "#/properties/other: if dropped {\"type\":\"string\"}",
            "#/properties/other: then dropped {\"minLength\":1}",
            "#/properties/other: else dropped {\"type\":\"null\"}",
            "#/properties/site: format dropped \"uri-reference\"",
            "#/properties/word: pattern dropped \"^\\\\w+\\\\b\"",
            "#/properties/pair: pattern dropped \"^(a)\\\\1$\"",
            "#/properties/ahead: pattern dropped \"^(?=a)\"",
            "#/properties/ctrl: pattern dropped \"\\\\cA\"",
            "#/properties/meta/patternProperties: ^(?!x) dropped {\"type\":\"string\"}",
            "#/properties/meta/patternProperties: ^z dropped {\"type\":\"boolean\"}",
            "#/properties/meta: propertyNames dropped {\"maxLength\":3}",
            "#: dependentRequired dropped {\"a\":[\"b\"]}",
            "#: dependentSchemas dropped {\"a\":{}}",
            "#: dependencies dropped {\"a\":[\"b\"]}",
            "#: unevaluatedProperties dropped false",
        ],
    );
}

#[test]
fn runaway_bounds() {
    check(
        json!({"type": "object", "properties": {
            "s": {"type": "string"},
            "n": {"type": ["string", "null"], "minLength": 3000},
            "e": {"type": "string", "enum": ["a", "b"]},
            "c": {"type": "string", "const": "a"},
            "a": {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 40},
            "m": {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 33},
            "r": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
            "o": {"type": "object", "properties": {"x": {"type": "integer"}}, "patternProperties": {"^y": {"type": "integer"}}},
            "f": {"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": false},
            "t": {"type": "number", "multipleOf": 2.0, "maxLength": 2.0},
        }, "required": ["s"], "additionalProperties": true}),
        json!({"type": "object", "properties": {
            "s": {"type": "string", "maxLength": 2000},
            "n": {"type": ["string", "null"], "minLength": 3000, "maxLength": 3000},
            "e": {"type": "string", "enum": ["a", "b"]},
            "c": {"type": "string", "const": "a"},
            "a": {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 40, "maxItems": 40},
            "m": {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 33, "maxProperties": 33},
            "r": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": false},
            "o": {"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": false},
            "f": {"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": false},
            "t": {"type": "number", "multipleOf": 2.0, "maxLength": 2},
        }, "required": ["s"], "additionalProperties": false}),
        &[
            "#/properties/s: maxLength tightened 2000",
            "#/properties/n: maxLength tightened 3000",
            "#/properties/a: maxItems tightened 40",
            "#/properties/m: maxProperties tightened 33",
            "#/properties/r: additionalProperties tightened false",
            "#/properties/o: additionalProperties tightened false",
            "#/properties/o: patternProperties dropped {\"^y\":{\"type\":\"integer\"}}",
            "#/properties/t: maxLength rewritten 2.0",
            "#: additionalProperties tightened false",
        ],
    );
    // Optional properties: llguidance counts only what is beyond the required ones, and only then.
    check(
        json!({"anyOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "minProperties": 1, "maxProperties": 1, "additionalProperties": false},
            {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "minProperties": 2, "additionalProperties": false},
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "z"], "maxProperties": 3},
        ]}),
        json!({"anyOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "minProperties": 1, "maxProperties": 1, "additionalProperties": false},
            {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "additionalProperties": false},
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "z"], "maxProperties": 3},
        ]}),
        &["#/anyOf/1: minProperties dropped 2"],
    );
    check_with(
        LlguidanceBounds {
            max_string_chars: 10,
            max_items: 2,
            max_properties: 3,
        },
        json!({"type": "array", "items": {"type": "object", "additionalProperties": {"type": "string"}}}),
        json!({"type": "array", "items": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 10}, "maxProperties": 3}, "maxItems": 2}),
        &[
            "#/items/additionalProperties: maxLength tightened 10",
            "#/items: maxProperties tightened 3",
            "#: maxItems tightened 2",
        ],
    );
}

/// An object that declares properties and says nothing of others is closed, even when every property is
/// required (given the open base schema, a small model invented keys until it ran out of tokens); objects
/// that admit other keys in so many words are counted instead.
#[test]
fn declared_properties_close_the_object() {
    let string = json!({"type": "string", "maxLength": 4});
    // The base schema, with `additionalProperties: true` saying no more than its absence.
    for open in [json!({}), json!({"additionalProperties": true})] {
        let mut input = json!({"type": "object", "required": ["answer", "state"], "properties": {"answer": string, "state": string}});
        if let (Value::Object(input), Value::Object(open)) = (&mut input, open) {
            input.extend(open);
        }
        check(
            input,
            json!({"type": "object", "required": ["answer", "state"], "properties": {"answer": string, "state": string},
                   "additionalProperties": false}),
            &["#: additionalProperties tightened false"],
        );
    }
    for (input, expected, losses) in [
        // A map: no declared properties (a required key alone declares none).
        (
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"type": "object", "additionalProperties": {"type": "string", "maxLength": 2000}, "maxProperties": 32}),
            &[
                "#/additionalProperties: maxLength tightened 2000",
                "#: maxProperties tightened 32",
            ][..],
        ),
        (
            json!({"type": "object", "required": ["k"]}),
            json!({"type": "object", "required": ["k"], "maxProperties": 32}),
            &["#: maxProperties tightened 32"][..],
        ),
        // Other keys admitted explicitly, next to the declared ones or in another branch at this level.
        (
            json!({"type": "object", "properties": {"a": string}, "required": ["a"], "patternProperties": {"^x_": {"type": "integer"}}}),
            json!({"type": "object", "properties": {"a": string}, "required": ["a"], "patternProperties": {"^x_": {"type": "integer"}},
                   "maxProperties": 32}),
            &["#: maxProperties tightened 32"][..],
        ),
        (
            json!({"type": "object", "properties": {"a": string}, "required": ["a"],
                   "anyOf": [{"additionalProperties": {"type": "integer"}}, {"minProperties": 1}]}),
            json!({"type": "object", "properties": {"a": string}, "required": ["a"],
                   "anyOf": [{"additionalProperties": {"type": "integer"}}, {"minProperties": 1}], "maxProperties": 32}),
            &["#: maxProperties tightened 32"][..],
        ),
        // More keys needed than declared: closing would leave no instance.
        (
            json!({"type": "object", "properties": {"a": string}, "required": ["a"], "minProperties": 40}),
            json!({"type": "object", "properties": {"a": string}, "required": ["a"], "minProperties": 40, "maxProperties": 40}),
            &["#: maxProperties tightened 40"][..],
        ),
    ] {
        check(input, expected, losses);
    }
}

/// Bounds go where nothing else is intersected with them: a bound or a closed object inside an `allOf`
/// branch could contradict the other branches.
#[test]
fn bounds_of_combined_schemas() {
    // Merged `allOf`: one object, bounded once; the minimum of one branch raises the other's bound.
    check(
        json!({"type": "object", "properties": {
            "s": {"allOf": [{"type": "string"}, {"minLength": 3000}]},
            "o": {"allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"c": {"type": "string", "maxLength": 9}}, "required": ["c"]}]},
        }, "required": ["s", "o"], "additionalProperties": false,
        "$defs": {"Base": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a"]}}}),
        json!({"type": "object", "properties": {
            "s": {"minLength": 3000, "type": "string", "maxLength": 3000},
            "o": {"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "string", "maxLength": 9}},
                  "required": ["a", "c"], "type": "object", "additionalProperties": false},
        }, "required": ["s", "o"], "additionalProperties": false}),
        &[
            "#/properties/s: allOf rewritten [{\"type\":\"string\"},{\"minLength\":3000}]",
            "#/properties/s: maxLength tightened 3000",
            "#/properties/o/allOf/0: $ref rewritten \"#/$defs/Base\"",
            "#/properties/o: allOf rewritten [{\"$ref\":\"#/$defs/Base\"},{\"properties\":{\"c\":{\"type\":\"string\",\"maxLength\":9}},\"required\":[\"c\"]}]",
            "#/properties/o: additionalProperties tightened false",
        ],
    );
    // What cannot be merged stays in `allOf` (an `additionalProperties` speaks about the properties next to
    // it), and the holder is bounded for both branches.
    check(
        json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "integer"}},
            {"properties": {"b": {"type": "integer"}}, "required": ["b"]},
        ]}),
        json!({"properties": {"b": {"type": "integer"}, "a": {}}, "required": ["b"], "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "integer"}},
        ], "additionalProperties": false}),
        &[
            "#: allOf rewritten [{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"additionalProperties\":{\"type\":\"integer\"}},{\"properties\":{\"b\":{\"type\":\"integer\"}},\"required\":[\"b\"]}]",
            "#: additionalProperties tightened false",
        ],
    );
    // Branches of an `anyOf` next to other keywords are part of one object: every property any branch
    // names stays allowed when it is closed.
    check(
        json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],
               "anyOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}, {"required": ["b"]}]}),
        json!({"type": "object", "properties": {"x": {"type": "integer"}, "a": {}, "b": {}}, "required": ["x"],
               "anyOf": [{"properties": {"a": {"type": "string", "maxLength": 2000}}, "required": ["a"]}, {"required": ["b"]}],
               "additionalProperties": false}),
        &[
            "#/anyOf/0/properties/a: maxLength tightened 2000",
            "#: additionalProperties tightened false",
        ],
    );
    // A plain union: each branch is bounded on its own.
    check(
        json!({"anyOf": [{"type": "string"}, {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}, {"type": "null"}]}),
        json!({"anyOf": [{"type": "string", "maxLength": 2000}, {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": false}, {"type": "null"}]}),
        &[
            "#/anyOf/0: maxLength tightened 2000",
            "#/anyOf/1: additionalProperties tightened false",
        ],
    );
    // A `$ref` with sibling assertions: the target is compiled without bounds and merged with them.
    check(
        json!({"type": "array", "items": {"$ref": "#/$defs/Tags", "minItems": 40}, "maxItems": 1,
               "$defs": {"Tags": {"type": "array", "items": {"type": "string", "maxLength": 5}}}}),
        json!({"type": "array", "items": {"type": "array", "items": {"type": "string", "maxLength": 5}, "minItems": 40, "maxItems": 40}, "maxItems": 1}),
        &[
            "#/items: $ref rewritten \"#/$defs/Tags\"",
            "#/items: maxItems tightened 40",
        ],
    );
}

#[test]
fn root_options_and_drafts() {
    for (draft, kept) in [
        ("https://json-schema.org/draft/2020-12/schema", true),
        ("http://json-schema.org/draft-07/schema#", true),
        ("http://json-schema.org/draft-07/schema", true),
        ("https://json-schema.org/draft/2019-09/schema", false),
        ("http://json-schema.org/draft-04/schema#", false),
        ("https://example.com/my-schema", false),
    ] {
        let expected = if kept {
            json!({"$schema": draft, "type": "integer"})
        } else {
            json!({"type": "integer"})
        };
        let loss = format!("#: $schema rewritten \"{draft}\"");
        let losses: &[&str] = if kept { &[] } else { &[loss.as_str()] };
        check(
            json!({"type": "integer", "$schema": draft}),
            expected,
            losses,
        );
    }
    check(
        json!({"type": "boolean", "x-guidance": {"lenient": true}}),
        json!({"type": "boolean"}),
        &["#: x-guidance dropped {\"lenient\":true}"],
    );
    // Property order is the input's, not alphabetical.
    let compiled = Dialect::Llguidance
        .compile(&json!({"type": "object", "properties": {"z": {"type": "integer"}, "a": {"type": "integer"}}, "required": ["z", "a"]}))
        .map(|c| c.schema["properties"].as_object().map(|p| p.keys().cloned().collect::<Vec<_>>()));
    assert_eq!(compiled, Ok(Some(vec!["z".to_owned(), "a".to_owned()])));
}

#[test]
fn unsatisfiable_bounds_are_errors() {
    for (input, expected) in [
        (
            json!({"type": "object", "properties": {"a": {"type": "string", "minLength": 5, "maxLength": 2}}}),
            "unsatisfiable schema at \"/properties/a\": minLength 5 is greater than maxLength 2",
        ),
        (
            json!({"type": "array", "items": {"$ref": "#/$defs/N"}, "$defs": {"N": {"type": "number", "minimum": 1.5, "maximum": 1}}}),
            "unsatisfiable schema at \"/$defs/N\": minimum 1.5 is greater than maximum 1",
        ),
        (
            json!({"type": "integer", "exclusiveMinimum": 3, "maximum": 3}),
            "unsatisfiable schema at \"\": exclusiveMinimum 3 and maximum 3 leave no number",
        ),
        (
            json!({"type": "array", "minItems": 3, "maxItems": 2}),
            "unsatisfiable schema at \"\": minItems 3 is greater than maxItems 2",
        ),
        (
            json!({"type": "object", "minProperties": 3, "maxProperties": 2}),
            "unsatisfiable schema at \"\": minProperties 3 is greater than maxProperties 2",
        ),
        (
            json!({"allOf": [{"type": "string"}, {"type": ["integer", "null"]}], "type": ["number", "string"]}),
            "unsatisfiable schema at \"\": the types of allOf have nothing in common",
        ),
        (
            json!({"type": "object", "properties": {"a": {}}, "required": ["a", "b"], "additionalProperties": false}),
            "unsatisfiable schema at \"\": required property \"b\" is not allowed by additionalProperties false",
        ),
    ] {
        check_err(input, expected);
    }
    // A bound that can be met is no error.
    check(
        json!({"type": "integer", "minimum": 3, "maximum": 3, "exclusiveMinimum": 2}),
        json!({"type": "integer", "minimum": 3, "maximum": 3, "exclusiveMinimum": 2}),
        &[],
    );
}

#[test]
fn patterns() {
    for (pattern, ok) in [
        ("^[A-Z]{2}$", true),
        ("^call_[a-z0-9]{4,32}$", true),
        ("a{1,1000}", true),
        ("^\\d+\\s\\w\\p{L}\\u00e9\\x41\\t$", true),
        ("\\\\b", true),
        ("(?=x)", false),
        ("(?<!x)y", false),
        ("(a)\\1", false),
        ("(?<n>a)\\k<n>", false),
        ("\\bword", false),
        ("\\cA", false),
        ("\\0", false),
    ] {
        assert_eq!(pattern_ok(pattern), ok, "{pattern}");
    }
}

#[test]
fn hostile_input_ends_quickly() {
    // 4^30 schemas if `oneOf` exclusivity or inlining followed every `allOf`: a budget for the one, the
    // cache and merging (four identical branches are one) for the other.
    let mut defs = serde_json::Map::new();
    defs.insert("A0".into(), json!({"type": "object", "required": ["k"]}));
    for i in 1..=30 {
        let prev = json!({"$ref": format!("#/$defs/A{}", i - 1)});
        defs.insert(format!("A{i}"), json!({"allOf": [prev, prev, prev, prev]}));
    }
    let bomb = json!({"oneOf": [{"$ref": "#/$defs/A30"}, {"type": "string"}], "$defs": defs});
    let compiled = Dialect::Llguidance.compile(&bomb).map(|c| c.schema);
    assert_eq!(
        compiled,
        Ok(json!({"anyOf": [
            {"type": "object", "required": ["k"], "maxProperties": 32},
            {"type": "string", "maxLength": 2000},
        ], "x-guidance": {"whitespace_flexible": false}}))
    );
    // One long cycle through 10,000 definitions: found in linear time, kept as references.
    let n = 10_000;
    let defs: serde_json::Map<String, Value> = (0..n)
        .map(|i| {
            let next = format!("#/$defs/D{}", (i + 1) % n);
            (
                format!("D{i}"),
                json!({"type": "array", "items": {"$ref": next}}),
            )
        })
        .collect();
    let cycle = json!({"$ref": "#/$defs/D0", "$defs": defs});
    let compiled = Dialect::Llguidance
        .compile(&cycle)
        .map(|c| c.schema["$defs"].as_object().map(|d| d.len()));
    assert_eq!(compiled, Ok(Some(n)));
}
