//! Unit tests of [`embed`]: what is hoisted, how references are rewritten and escaped, and that the
//! result resolves inside a host schema.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::embed;

#[track_caller]
fn check(prefix: &str, schema: Value, expected_schema: Value, expected_defs: Value) {
    let (embedded, defs) = embed(prefix, &schema);
    assert_eq!(embedded, expected_schema);
    assert_eq!(Value::Object(defs), expected_defs);
}

#[test]
fn self_contained_schemas_stay_in_place() {
    check(
        "t",
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}),
        json!({"type": "object"}),
        json!({}),
    );
    // A `$ref` inside `const` is data, not a reference.
    check(
        "t",
        json!({"const": {"$ref": "#/x"}}),
        json!({"const": {"$ref": "#/x"}}),
        json!({}),
    );
    check("t", json!(true), json!(true), json!({}));
}

#[test]
fn definitions_are_hoisted_and_references_rewritten() {
    check(
        "t",
        json!({
            "type": "object",
            "properties": {"f": {"$ref": "#/$defs/Filter"}, "g": {"$ref": "#/definitions/G"}},
            "$defs": {"Filter": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Filter"}}}},
            "definitions": {"G": {"type": "integer"}},
        }),
        json!({"$ref": "#/$defs/t"}),
        json!({
            "t.Filter": {"type": "object", "properties": {"next": {"$ref": "#/$defs/t.Filter"}}},
            "t.G": {"type": "integer"},
            "t": {"type": "object", "properties": {"f": {"$ref": "#/$defs/t.Filter"}, "g": {"$ref": "#/$defs/t.G"}}},
        }),
    );
    // References to the root and into it; anchors and remote references kept.
    check(
        "t",
        json!({"properties": {
            "child": {"$ref": "#"},
            "same": {"$ref": "#/properties/child"},
            "anchored": {"$ref": "#here"},
            "remote": {"$ref": "https://example.invalid/s.json"},
        }}),
        json!({"$ref": "#/$defs/t"}),
        json!({"t": {"properties": {
            "child": {"$ref": "#/$defs/t"},
            "same": {"$ref": "#/$defs/t/properties/child"},
            "anchored": {"$ref": "#here"},
            "remote": {"$ref": "https://example.invalid/s.json"},
        }}}),
    );
}

#[test]
fn prefixes_are_escaped_in_references_not_in_keys() {
    let schema = json!({
        "properties": {"p": {"$ref": "#/$defs/P"}, "me": {"$ref": "#"}},
        "$defs": {"P": {"type": "string"}},
    });
    check(
        "files.read/dir~x",
        schema.clone(),
        json!({"$ref": "#/$defs/files.read~1dir~0x"}),
        json!({
            "files.read/dir~x.P": {"type": "string"},
            "files.read/dir~x": {"properties": {
                "p": {"$ref": "#/$defs/files.read~1dir~0x.P"},
                "me": {"$ref": "#/$defs/files.read~1dir~0x"},
            }},
        }),
    );
    check(
        "a b%c\"é",
        schema,
        json!({"$ref": "#/$defs/a%20b%25c%22%C3%A9"}),
        json!({
            "a b%c\"é.P": {"type": "string"},
            "a b%c\"é": {"properties": {
                "p": {"$ref": "#/$defs/a%20b%25c%22%C3%A9.P"},
                "me": {"$ref": "#/$defs/a%20b%25c%22%C3%A9"},
            }},
        }),
    );
}

/// Every embedding resolves inside a host that holds two of them, whatever characters the prefixes
/// have, and validates as the schema did on its own.
#[test]
fn embedded_schemas_resolve_in_the_host() {
    let tree = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"label": {"$ref": "#/$defs/Label"}, "children": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["label"],
        "$defs": {"Label": {"type": "string", "maxLength": 3}},
    });
    for prefix in [
        "t",
        "srv.tool",
        "git/status",
        "x~1",
        "a b",
        "100%",
        "café",
        "q?#",
    ] {
        let (first, mut defs) = embed(prefix, &tree);
        let number = json!({"$ref": "#/$defs/N", "$defs": {"N": {"type": "integer"}}});
        let (second, more) = embed(&format!("{prefix}.2"), &number);
        defs.extend(more);
        let host = json!({
            "type": "object",
            "properties": {"a": first, "b": second},
            "$defs": defs,
        });
        let compiled = crate::compile(&host).unwrap_or_else(|e| panic!("{prefix}: {e}"));
        let (schemas, root) = compiled.as_boon();
        let good = json!({"a": {"label": "abc", "children": [{"label": "d"}]}, "b": 3});
        assert!(schemas.validate(&good, root).is_ok(), "{prefix}");
        for bad in [
            json!({"a": {"label": "abcd"}}),
            json!({"a": {"label": "a", "children": [{"label": 1}]}}),
            json!({"b": "three"}),
        ] {
            assert!(schemas.validate(&bad, root).is_err(), "{prefix}: {bad}");
        }
    }
}
