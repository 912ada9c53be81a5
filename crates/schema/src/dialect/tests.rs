//! Unit tests for the dialect compilers: one `check` per dialect, cases as data.

use serde_json::{Value, json};

use super::*;

/// Compiles `input` for `dialect` and compares the schema and the losses (as display lines).
#[track_caller]
fn check(dialect: Dialect, input: Value, expected: Value, expected_losses: &[&str]) {
    let compiled = match dialect.compile(&input) {
        Ok(compiled) => compiled,
        Err(e) => panic!("{dialect}: {e}"),
    };
    assert_eq!(compiled.schema, expected, "{dialect} schema");
    let losses: Vec<String> = compiled.losses.iter().map(ToString::to_string).collect();
    assert_eq!(losses, expected_losses, "{dialect} losses");
}

#[track_caller]
fn check_err(dialect: Dialect, input: Value, expected: &str) {
    match dialect.compile(&input) {
        Ok(compiled) => panic!("{dialect}: expected an error, got {}", compiled.schema),
        Err(e) => assert_eq!(e.to_string(), expected),
    }
}

#[test]
fn openai_optional_becomes_nullable() {
    check(
        Dialect::OpenAiStrict,
        json!({"type": "object", "properties": {
            "a": {"type": "string"},
            "b": {"type": "integer", "enum": [1, 2]},
            "c": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
            "d": {"$ref": "#/$defs/D"},
        }, "required": ["a"], "$defs": {"D": {"type": "object", "properties": {}}}}),
        json!({"type": "object", "properties": {
            "a": {"type": "string"},
            "b": {"type": ["integer", "null"], "enum": [1, 2, null]},
            "c": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "d": {"anyOf": [{"$ref": "#/$defs/D"}, {"type": "null"}]},
        }, "required": ["a", "b", "c", "d"], "additionalProperties": false,
        "$defs": {"D": {"type": "object", "properties": {}, "required": [], "additionalProperties": false}}}),
        &[
            "#/properties/b: required made required and nullable \"b\"",
            "#/properties/c: default dropped null",
            "#/properties/c: required tightened \"c\"",
            "#/properties/d: required made required and nullable \"d\"",
            "#/$defs/D: additionalProperties dropped true",
        ],
    );
}

#[test]
fn openai_ref_with_siblings_is_inlined() {
    check(
        Dialect::OpenAiStrict,
        json!({"type": "object", "properties": {
            "s": {"$ref": "#/definitions/S", "description": "the state"},
        }, "required": ["s"], "definitions": {"S": {"enum": ["a", "b"], "title": "S"}}}),
        json!({"type": "object", "properties": {
            "s": {"enum": ["a", "b"], "title": "S", "description": "the state"},
        }, "required": ["s"], "additionalProperties": false}),
        &["#/properties/s: $ref rewritten \"#/definitions/S\""],
    );
}

#[test]
fn openai_drops_and_relaxes() {
    check(
        Dialect::OpenAiStrict,
        json!({"type": "object", "properties": {
            "x": {"oneOf": [{"type": "string", "minLength": 1, "format": "uri"}, {"type": "integer", "minimum": 0}]},
        }, "required": ["x"], "additionalProperties": {"type": "string"}}),
        json!({"type": "object", "properties": {
            "x": {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]},
        }, "required": ["x"], "additionalProperties": false}),
        &[
            "#/properties/x: oneOf relaxed [{\"type\":\"string\",\"minLength\":1,\"format\":\"uri\"},{\"type\":\"integer\",\"minimum\":0}]",
            "#/properties/x/oneOf/0: minLength dropped 1",
            "#/properties/x/oneOf/0: format dropped \"uri\"",
            "#: additionalProperties dropped {\"type\":\"string\"}",
        ],
    );
}

#[test]
fn openai_all_of_is_merged() {
    check(
        Dialect::OpenAiStrict,
        json!({"allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"b": {"type": "string"}}, "required": ["b"]}],
               "$defs": {"Base": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}),
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
               "required": ["a", "b"], "additionalProperties": false}),
        &[
            "#: allOf rewritten [{\"$ref\":\"#/$defs/Base\"},{\"properties\":{\"b\":{\"type\":\"string\"}},\"required\":[\"b\"]}]",
        ],
    );
}

#[test]
fn openai_wraps_a_root_that_is_not_an_object() {
    // An FSM state's output: a `oneOf` of its transitions at the root.
    let state = json!({"oneOf": [
        {"type": "object", "properties": {"id": {"const": "a"}}, "required": ["id"]},
        {"$ref": "#/$defs/B"}],
        "$defs": {"B": {"type": "object", "properties": {"id": {"const": "b"}, "next": {"$ref": "#"}}, "required": ["id"]}}});
    let compiled = Dialect::OpenAiStrict.compile(&state).unwrap();
    assert_eq!(compiled.envelope(), Some("value"));
    let root = &compiled.schema;
    assert_eq!(root["type"], json!("object"));
    assert_eq!(root["required"], json!(["value"]));
    assert_eq!(root["additionalProperties"], json!(false));
    assert_eq!(root["properties"].as_object().map(|m| m.len()), Some(1));
    assert!(root["properties"]["value"]["anyOf"].is_array(), "{root}");
    // `$defs` stay at the root; a reference to the old root follows it into the envelope.
    assert_eq!(
        root["properties"]["value"]["anyOf"][1]["$ref"],
        json!("#/$defs/B")
    );
    assert_eq!(
        root["$defs"]["B"]["properties"]["next"]["anyOf"][0]["$ref"],
        json!("#/properties/value")
    );
    let losses: Vec<String> = compiled.losses.iter().map(ToString::to_string).collect();
    assert_eq!(
        losses[0],
        "#: oneOf wrapped in an object envelope as property \"value\""
    );
    // Every other loss points into the original schema, not the envelope.
    assert!(
        compiled
            .losses
            .iter()
            .any(|l| l.pointer.is_empty() && l.keyword == "oneOf" && l.change == LossKind::Relaxed),
        "{losses:?}"
    );
    assert!(
        compiled
            .losses
            .iter()
            .all(|l| !l.pointer.starts_with("/properties/value")),
        "{losses:?}"
    );
    for (input, found) in [
        (
            json!({"anyOf": [{"type": "object"}, {"type": "string"}]}),
            "anyOf",
        ),
        (
            json!({"type": "array", "items": {"type": "string"}}),
            "type \"array\"",
        ),
        (json!({"type": "string"}), "type \"string\""),
    ] {
        let compiled = Dialect::OpenAiStrict.compile(&input).unwrap();
        assert_eq!(compiled.losses[0].keyword, found);
        assert_eq!(compiled.losses[0].change, LossKind::Wrapped);
        assert_eq!(compiled.schema["type"], json!("object"));
    }
    // An object root is sent as it is.
    let plain = Dialect::OpenAiStrict
        .compile(
            &json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
        )
        .unwrap();
    assert_eq!(plain.envelope(), None);
    assert!(plain.schema["properties"]["a"].is_object());
    check_err(
        Dialect::OpenAiStrict,
        json!(3),
        "root schema must be an object for openai-strict, found a number",
    );
}

#[test]
fn anthropic_wraps_and_gemini_keeps_a_union_root() {
    let union = json!({"oneOf": [
        {"type": "object", "properties": {"id": {"const": "a"}}, "required": ["id"]},
        {"type": "object", "properties": {"id": {"const": "b"}}, "required": ["id"]}]});
    let anthropic = Dialect::Anthropic.compile(&union).unwrap();
    assert_eq!(anthropic.envelope(), Some("value"));
    assert_eq!(anthropic.schema["type"], json!("object"));
    assert_eq!(anthropic.schema["additionalProperties"], json!(false));
    // Gemini's responseSchema takes any Schema at the root, `anyOf` included: no envelope.
    let gemini = Dialect::Gemini.compile(&union).unwrap();
    assert_eq!(gemini.envelope(), None);
    assert!(gemini.schema["anyOf"].is_array(), "{}", gemini.schema);
    let llguidance = Dialect::Llguidance.compile(&union).unwrap();
    assert_eq!(llguidance.envelope(), None);
}

#[test]
fn openai_keeps_recursion() {
    let schema = json!({"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}, "required": ["kids"]});
    let compiled = Dialect::OpenAiStrict
        .compile(&schema)
        .map_err(|e| e.to_string());
    assert_eq!(
        compiled.map(|c| c.schema["properties"]["kids"]["items"].clone()),
        Ok(json!({"$ref": "#"}))
    );
}

#[test]
fn unresolvable_refs_are_errors() {
    for dialect in Dialect::ALL {
        check_err(
            dialect,
            json!({"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}}),
            "unresolvable $ref \"other.json#/x\" at \"/properties/a\"",
        );
        check_err(
            dialect,
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}),
            "unresolvable $ref \"#/$defs/Missing\" at \"/properties/a\"",
        );
    }
}

#[test]
fn recursion_is_an_error_for_gemini_and_anthropic() {
    let schema = json!({"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}},
                        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}});
    check_err(
        Dialect::Gemini,
        schema.clone(),
        "recursive $ref \"#/$defs/Node\" at \"/$defs/Node/properties/next\": gemini does not support recursive schemas",
    );
    check_err(
        Dialect::Anthropic,
        schema,
        "recursive $ref \"#/$defs/Node\" at \"/$defs/Node/properties/next\": anthropic does not support recursive schemas",
    );
}

#[test]
fn gemini_rewrites() {
    check(
        Dialect::Gemini,
        json!({"type": "object", "title": "T", "properties": {
            "k": {"const": "x"},
            "n": {"type": ["string", "null"], "maxLength": 3},
            "o": {"anyOf": [{"$ref": "#/$defs/M"}, {"type": "null"}], "description": "maybe"},
            "u": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]},
            "t": {"type": ["string", "array"], "items": {"type": "string"}, "format": "date-time"},
        }, "required": ["k", "zzz"], "additionalProperties": false,
        "$defs": {"M": {"type": "object", "properties": {"a": {"type": "number", "minimum": 0}}}}}),
        json!({"type": "object", "properties": {
            "k": {"type": "string", "enum": ["x"]},
            "n": {"type": "string", "nullable": true},
            "o": {"type": "object", "description": "maybe", "nullable": true,
                  "properties": {"a": {"type": "number"}}, "propertyOrdering": ["a"]},
            "u": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
            "t": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "array", "items": {"type": "string"}}]},
        }, "required": ["k"], "propertyOrdering": ["k", "n", "o", "u", "t"]}),
        &[
            "#: title dropped \"T\"",
            "#/properties/k: const rewritten \"x\"",
            "#/properties/n: type rewritten [\"string\",\"null\"]",
            "#/properties/n: maxLength dropped 3",
            "#/properties/o/anyOf/0: $ref rewritten \"#/$defs/M\"",
            "#/$defs/M/properties/a: minimum dropped 0",
            "#/properties/o/anyOf/1: type rewritten \"null\"",
            "#/properties/u: oneOf relaxed [{\"type\":\"integer\"},{\"type\":\"boolean\"}]",
            "#/properties/t: type rewritten [\"string\",\"array\"]",
            "#: additionalProperties dropped false",
            "#: required dropped \"zzz\"",
        ],
    );
}

#[test]
fn anthropic_rules() {
    check(
        Dialect::Anthropic,
        json!({"type": "object", "properties": {
            "a": {"type": "array", "items": {"type": "string", "pattern": "^(a)\\1$"}, "minItems": 3, "maxItems": 5},
            "b": {"type": "integer", "minimum": 1, "default": 2},
            "c": {"type": "string", "pattern": "^call_[a-z0-9]{4,32}$", "format": "uri"},
        }, "required": ["a"]}),
        json!({"type": "object", "properties": {
            "a": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "b": {"type": "integer", "default": 2},
            "c": {"type": "string", "pattern": "^call_[a-z0-9]{4,32}$", "format": "uri"},
        }, "required": ["a"], "additionalProperties": false}),
        &[
            "#/properties/a/items: pattern dropped \"^(a)\\\\1$\"",
            "#/properties/a: minItems relaxed 3",
            "#/properties/a: maxItems dropped 5",
            "#/properties/b: minimum dropped 1",
        ],
    );
}

#[test]
fn simple_patterns() {
    for (pattern, ok) in [
        ("^[A-Z]{2}$", true),
        ("^call_[a-z0-9]{4,32}$", true),
        ("\\\\b", true),
        ("(?=x)", false),
        ("(?<!x)y", false),
        ("\\bword", false),
        ("(a)\\1", false),
        ("a{1,1000}", false),
        ("é{2}\\é(", true),
    ] {
        assert_eq!(anthropic::simple_pattern(pattern), ok, "{pattern}");
    }
}

#[test]
fn hostile_input_is_an_error_not_a_panic() {
    let mut deep = json!({"type": "string"});
    for _ in 0..(MAX_DEPTH + 5) {
        deep = json!({"type": "array", "items": deep});
    }
    let deep = json!({"type": "object", "properties": {"x": deep}});
    for dialect in Dialect::ALL {
        assert!(
            matches!(dialect.compile(&deep), Err(DialectError::TooDeep { .. })),
            "{dialect}"
        );
        assert!(
            dialect
                .compile(&json!({"type": "object", "properties": {"x": 5}}))
                .is_err()
        );
    }
    // 2^30 copies if inlined naively.
    let mut defs = serde_json::Map::new();
    defs.insert("D0".into(), json!({"type": "string"}));
    for i in 1..=30 {
        let prev = format!("#/$defs/D{}", i - 1);
        defs.insert(
            format!("D{i}"),
            json!({"type": "object", "properties": {"a": {"$ref": prev}, "b": {"$ref": prev}}}),
        );
    }
    let bomb =
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D30"}}, "$defs": defs});
    for dialect in [Dialect::Gemini, Dialect::Llguidance] {
        assert!(
            matches!(dialect.compile(&bomb), Err(DialectError::TooLarge { .. })),
            "{dialect}"
        );
    }
}

#[test]
fn an_object_root_for_tools_in_every_dialect() {
    let union = json!({"oneOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, {"type": "string"}]});
    let gemini = Dialect::Gemini.compile_object_root(&union).unwrap();
    assert_eq!(gemini.envelope(), Some("value"));
    assert_eq!(gemini.schema["type"], json!("object"));
    assert_eq!(gemini.schema["required"], json!(["value"]));
    // The envelope's own keywords are no loss of the original; the union's are, at its pointers.
    let losses: Vec<String> = gemini.losses.iter().map(ToString::to_string).collect();
    assert!(
        !losses.iter().any(|l| l.contains("additionalProperties")),
        "{losses:?}"
    );
    assert_eq!(
        losses[0],
        "#: oneOf wrapped in an object envelope as property \"value\""
    );
    assert!(
        gemini
            .losses
            .iter()
            .all(|l| !l.pointer.starts_with("/properties/value"))
    );
    // An object root stays as it is.
    let object = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    assert_eq!(
        Dialect::Gemini
            .compile_object_root(&object)
            .unwrap()
            .envelope(),
        None
    );
    // Full JSON Schema (no dialect): the envelope around the schema as written.
    let full = object_root(&union);
    assert_eq!(full.envelope(), Some("value"));
    assert_eq!(full.schema["properties"]["value"], union);
    assert_eq!(object_root(&object).schema, object);
    assert!(object_root(&object).losses.is_empty());
}
