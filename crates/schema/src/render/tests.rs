//! Unit tests for the compact renderer: schema in, text out.

use serde_json::{Value, json};

use super::*;

#[track_caller]
fn check(schema: Value, expected: &str) {
    assert_eq!(to_compact(&schema), expected);
}

#[test]
fn scalars_and_literals() {
    check(json!({"type": "string"}), "string\n");
    check(
        json!({"type": "integer", "minimum": 1, "maximum": 5}),
        "integer // 1..=5\n",
    );
    check(
        json!({"type": "number", "exclusiveMinimum": 0}),
        "number // >0\n",
    );
    check(
        json!({"type": "number", "minimum": 0, "exclusiveMaximum": true, "maximum": 1}),
        "number // ≥0, <1\n",
    );
    check(json!({"enum": ["a", 1, null]}), "\"a\" | 1 | null\n");
    check(json!({"const": "x", "description": "d"}), "// d\n\"x\"\n");
    check(
        json!({"type": ["string", "null"], "maxLength": 3}),
        "string | null // ≤3 chars\n",
    );
    check(json!(true), "any\n");
    check(json!(false), "never\n");
    check(json!(42), "any // invalid schema 42\n");
}

#[test]
fn objects() {
    check(
        json!({"type": "object", "description": "A thing.", "properties": {
            "a-b": {"type": "string", "pattern": "^x$"},
            "n": {"type": "object", "properties": {"x": {"type": "boolean", "default": false}}, "required": ["x"]},
        }, "required": ["a-b"]}),
        "// A thing.\n{\n  \"a-b\": string // pattern ^x$\n  n?: {\n    x: boolean // default false\n  }\n}\n",
    );
    check(json!({"type": "object"}), "object\n");
    check(
        json!({"type": "object", "additionalProperties": {"type": "integer"}}),
        "{\n  [key: string]: integer\n}\n",
    );
    check(
        json!({"properties": {"x": {"description": "line one\nline two", "type": "string"}}}),
        "{\n  // line one\n  // line two\n  x?: string\n}\n",
    );
}

#[test]
fn arrays_and_unions() {
    check(
        json!({"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1}),
        "(\"a\" | \"b\")[] // ≥1 items\n",
    );
    check(
        json!({"type": "array", "items": {"type": "string", "format": "uri"}}),
        "string[] // each: format uri\n",
    );
    check(
        json!({"prefixItems": [{"type": "string"}, {"type": "integer"}]}),
        "[string, integer]\n",
    );
    check(
        json!({"anyOf": [{"type": "string", "pattern": "^a"}, {"type": "integer", "minimum": 0}]}),
        "string | integer // string: pattern ^a; integer: ≥0\n",
    );
    check(
        json!({"allOf": [{"type": "string"}, {"minLength": 2}]}),
        "string & any // ≥2 chars\n",
    );
    check(
        json!({"type": "string", "nullable": true}),
        "string | null\n",
    );
}

#[test]
fn definitions() {
    let schema = json!({
        "type": "object",
        "properties": {
            "home": {"$ref": "#/$defs/Address", "description": "Where they live"},
            "work": {"$ref": "#/$defs/Address"},
            "pet": {"$ref": "#/definitions/Pet"},
            "kind": {"oneOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B-c"}]},
        },
        "required": ["home"],
        "$defs": {
            "Address": {"description": "A postal address.", "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "A": {"const": "a"},
            "B-c": {"const": "b"},
            "Unused": {"type": "string"},
        },
        "definitions": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}},
    });
    check(
        schema,
        "{\n  home: Address // Where they live\n  work?: Address\n  pet?: {\n    name?: string\n  }\n  kind?: A | B_c\n}\n\
         // A postal address.\ntype Address = {\n  city: string\n}\ntype A = \"a\"\ntype B_c = \"b\"\n",
    );
}

#[test]
fn recursion_and_bad_refs() {
    check(
        json!({"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}, "x": {"$ref": "#/nope"}, "y": {"$ref": "http://x"}}}),
        "type Root = {\n  kids?: Root[]\n  x?: any // unresolved $ref #/nope\n  y?: any // unresolved $ref http://x\n}\n",
    );
    check(
        json!({"$ref": "#/$defs/N", "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}}),
        "N\ntype N = {\n  next?: N\n}\n",
    );
}

#[test]
fn unknown_keywords_show_as_json() {
    check(
        json!({"type": "string", "not": {"const": "x"}, "x-foo": 1}),
        "string // not {\"const\":\"x\"}; x-foo 1\n",
    );
}

#[test]
fn deep_schemas_do_not_overflow() {
    let mut deep = json!({"type": "string"});
    for _ in 0..500 {
        deep = json!({"type": "array", "items": deep});
    }
    assert!(to_compact(&deep).contains("nested too deeply"));
}

#[test]
fn a_union_of_objects_in_an_array_is_parenthesised() {
    let schema = json!({"type": "object", "properties": {"calls": {"type": "array", "items": {"oneOf": [
        {"type": "object", "properties": {"name": {"const": "a"}, "x": {"type": "integer"}}},
        {"type": "object", "properties": {"name": {"const": "b"}, "y": {"type": "string"}}}
    ]}}}});
    let text = to_compact(&schema);
    assert!(text.contains("calls?: ({"), "{text}");
    assert!(text.contains("})[]"), "{text}");
}

#[test]
fn an_enum_inside_an_intersection_is_parenthesised() {
    let schema =
        json!({"allOf": [{"type": "string", "maxLength": 8}, {"enum": ["approved", "draft"]}]});
    let text = to_compact(&schema);
    assert!(
        text.contains(r#"string & ("approved" | "draft")"#),
        "{text}"
    );
}

#[test]
fn a_type_its_literals_all_have_is_not_repeated_beside_them() {
    let schema = json!({"allOf": [
        {"type": "string", "description": "the next state"},
        {"enum": ["approved", "draft"], "description": "approved: done; draft: not yet"}
    ]});
    assert_eq!(
        to_compact(&schema).trim(),
        r#""approved" | "draft" // the next state; approved: done; draft: not yet"#
    );
    // Literals of another type, or a branch that says more than its type, keep the intersection.
    for schema in [
        json!({"allOf": [{"type": "integer"}, {"enum": ["a", "b"]}]}),
        json!({"allOf": [{"type": "string", "minLength": 2}, {"enum": ["a", "b"]}]}),
    ] {
        assert!(to_compact(&schema).contains(" & "), "{schema}");
    }
}

#[test]
fn a_closed_object_says_no_other_keys_and_an_open_one_does_not() {
    check(
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}),
        "{\n  a: string\n  // no other keys\n}\n",
    );
    check(
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
        "{\n  a: string\n}\n",
    );
}

#[test]
fn descriptions_that_only_repeat_names_are_left_out_and_others_kept() {
    let schema = json!({
        "type": "object",
        "properties": {"call": {"$ref": "#/$defs/SearchFlightsCall"}},
        "required": ["call"],
        "$defs": {
            "SearchFlightsCall": {
                "description": "Call the `search_flights` tool (search flights).",
                "type": "object",
                "properties": {
                    "tool": {"const": "search_flights", "description": "Tool name"},
                    "args": {"$ref": "#/$defs/SearchFlightsArgs", "description": "Arguments for search_flights"},
                    "city": {"type": "string", "description": "City the flight leaves from"},
                },
                "required": ["tool", "args", "city"],
            },
            "SearchFlightsArgs": {
                "description": "Arguments of the `search_flights` tool.",
                "type": "object",
                "properties": {"seats": {"type": "integer", "description": "Seats"}},
                "required": ["seats"],
            },
        },
    });
    check(
        schema,
        "{\n  call: {\n    tool: \"search_flights\"\n    args: {\n      seats: integer\n    }\n    city: string // City the flight leaves from\n  }\n}\n",
    );
    // One word the names do not hold keeps the description.
    check(
        json!({"type": "object", "properties": {"tool": {"const": "x", "description": "Tool name, lower case"}}}),
        "{\n  tool?: \"x\" // Tool name, lower case\n}\n",
    );
}

#[test]
fn words_split_names_and_match_abbreviations() {
    assert_eq!(words("SearchFlightsCall"), ["search", "flights", "call"]);
    assert_eq!(
        words("`search_flights` tool."),
        ["search", "flights", "tool"]
    );
    assert!(same_word("arguments", "args"));
    assert!(same_word("flight", "flights"));
    assert!(!same_word("id", "idle"));
    assert!(!same_word("city", "country"));
}
