//! The Llguidance dialect against llguidance 1.9.1 itself: every compiled schema becomes a grammar, the
//! originals of some do not, and a grammar accepts the instances its schema accepts.

use claij_schema::dialect::Dialect;
use claij_schema::{SchemaDelta, compose};
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use proptest::prelude::*;
use serde_json::{Value, json};
use toktrie::{ApproximateTokEnv, TokEnv};

use crate::dialect::{bench, hand_written, schema_and_instance};

/// A matcher for `schema` over a byte-level vocabulary (one token per byte), and that vocabulary.
fn matcher(schema: &Value) -> (Matcher, TokEnv) {
    let env = ApproximateTokEnv::single_byte_env();
    let factory = ParserFactory::new_simple(&env).expect("a parser factory");
    let parser = factory.create_parser(TopLevelGrammar::from_json_schema(schema.clone()));
    (Matcher::new(parser), env)
}

/// Why llguidance cannot turn `schema` into a grammar; `None` when it can.
fn grammar_error(schema: &Value) -> Option<String> {
    matcher(schema).0.get_error()
}

fn llguidance(schema: &Value, name: &str) -> Value {
    Dialect::Llguidance
        .compile(schema)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .schema
}

/// The schemas of `examples/schemas`, a schema delta composed onto `base.json`.
pub(crate) fn examples() -> Vec<(String, Value)> {
    let dir = format!("{}/../../examples/schemas", env!("CARGO_MANIFEST_DIR"));
    let read = |name: &str| -> Value {
        let path = format!("{dir}/{name}");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let base = read("base.json");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|entry| {
            entry
                .expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let value = read(&name);
            let schema = if value.get("delta").is_some() {
                let delta: SchemaDelta = serde_json::from_value(value).expect("a schema delta");
                compose(&base, &[delta]).expect("the delta composes onto base.json")
            } else {
                value
            };
            (name, schema)
        })
        .collect()
}

#[test]
fn compiled_schemas_become_grammars() {
    let mut schemas = vec![
        ("big.json".to_owned(), bench("big.json")),
        ("small.json".to_owned(), bench("small.json")),
        ("base()".to_owned(), claij_schema::base()),
    ];
    schemas.extend(examples());
    assert!(schemas.iter().any(|(name, _)| name == "memory.delta.json"));
    schemas.extend(hand_written().into_iter().map(|(n, s)| (n.to_owned(), s)));
    schemas.extend(combined().into_iter().map(|(n, s)| (n.to_owned(), s)));
    for (name, schema) in schemas {
        let compiled = llguidance(&schema, &name);
        assert_eq!(grammar_error(&compiled), None, "{name}");
    }
}

/// Schemas where a bound in the wrong place would contradict another keyword (each was once compiled to a
/// schema llguidance found unsatisfiable).
fn combined() -> Vec<(&'static str, Value)> {
    vec![
        (
            "allOf-min",
            json!({"allOf": [{"type": "string"}, {"minLength": 300}]}),
        ),
        (
            "allOf-properties",
            json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],
                   "allOf": [{"properties": {"a": {"type": "string"}}}]}),
        ),
        (
            "allOf-inheritance",
            json!({"allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"c": {"type": "string"}}, "required": ["c"]}],
                   "$defs": {"Base": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a"]}}}),
        ),
        (
            "allOf-unmergeable",
            json!({"allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "integer"}},
                {"properties": {"b": {"type": "integer"}}, "required": ["b"]},
            ]}),
        ),
        (
            "anyOf-with-properties",
            json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],
                   "anyOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}, {"required": ["b"]}]}),
        ),
        (
            "ref-with-assertions",
            json!({"type": "object", "properties": {"t": {"$ref": "#/$defs/T", "minItems": 40}, "u": {"$ref": "#/$defs/U", "required": ["k"]}},
                   "required": ["t", "u"], "$defs": {"T": {"type": "array", "items": {"type": "string"}},
                   "U": {"type": "object", "properties": {"k": {"type": "string"}, "l": {"type": "string"}}}}}),
        ),
        (
            "recursive-allOf",
            json!({"type": "object", "properties": {"next": {"allOf": [{"$ref": "#/definitions/Node"}], "description": "next"}},
                   "definitions": {"Node": {"type": "object", "properties": {"next": {"allOf": [{"$ref": "#/definitions/Node"}]}, "v": {"type": "string"}}}}}),
        ),
        (
            "patterns-next-to-required-properties",
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "patternProperties": {"^x_": {"type": "integer"}}}),
        ),
        (
            "more-keys-than-declared",
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "minProperties": 3}),
        ),
        (
            "anyOf-admitting-other-keys",
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
                   "anyOf": [{"additionalProperties": {"type": "integer"}}, {"minProperties": 1}]}),
        ),
        (
            "counts-with-optional-properties",
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "minProperties": 1}),
        ),
    ]
}

#[test]
fn the_dialect_is_what_makes_them_compile() {
    let branch = |tool: &str| json!({"type": "object", "properties": {"tool": {"const": tool}, "note": {"type": "string"}}, "required": ["tool"]});
    for (name, schema, error) in [
        (
            "uniqueItems",
            json!({"type": "array", "items": {"type": "integer"}, "uniqueItems": true}),
            "Unimplemented keys: [\"uniqueItems\"]",
        ),
        (
            "not",
            json!({"type": "object", "properties": {"x": {"not": {"type": "string"}}}}),
            "Unimplemented keys: [\"not\"]",
        ),
        (
            "oneOf over $ref branches",
            json!({"type": "array", "items": {"oneOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]},
                   "$defs": {"A": branch("a"), "B": branch("b")}}),
            "oneOf constraints are not supported",
        ),
        (
            "a $ref needing an escape",
            json!({"$ref": "#/$defs/a~1b", "$defs": {"a/b": {"type": "string"}}}),
            "Reference segment 'a~1b' not found",
        ),
        (
            "a recursive $ref with a sibling",
            json!({"$ref": "#/$defs/N", "$defs": {"N": {"type": "object", "properties": {"n": {"$ref": "#/$defs/N", "minProperties": 1}}}}}),
            "circular references with sibling keys are not supported",
        ),
        (
            "a word boundary",
            json!({"type": "string", "pattern": "^[a-z]+\\b"}),
            "lookarounds not supported",
        ),
        (
            "an unknown format",
            json!({"type": "string", "format": "uri-reference"}),
            "Unknown format: uri-reference",
        ),
        (
            "a count written as a float",
            json!({"type": "string", "maxLength": 8.0}),
            "Expected positive integer for 'maxLength'",
        ),
    ] {
        let raw = grammar_error(&schema);
        assert!(
            raw.as_deref().is_some_and(|e| e.contains(error)),
            "{name}: {raw:?}"
        );
        assert_eq!(grammar_error(&llguidance(&schema, name)), None, "{name}");
    }
}

/// What the dialect adds is needed too: llguidance rejects `maxProperties` next to optional properties,
/// so open objects with optional properties are closed rather than bounded.
#[test]
fn bounds_are_ones_llguidance_accepts() {
    let open = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let mut bounded = open.clone();
    bounded["maxProperties"] = json!(32);
    assert!(
        grammar_error(&bounded).is_some_and(|e| e.contains("min/maxProperties only supported")),
        "{bounded}"
    );
    let compiled = llguidance(&open, "open");
    assert_eq!(compiled["additionalProperties"], json!(false));
    assert_eq!(grammar_error(&compiled), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn grammars_accept_valid_instances((schema, instance) in schema_and_instance()) {
        let schema = json!({"type": "object", "properties": {"x": schema}, "required": ["x"]});
        let instance = json!({"x": instance});
        let compiled = llguidance(&schema, "generated");
        let (mut matcher, env) = matcher(&compiled);
        prop_assert_eq!(matcher.get_error(), None, "{}", compiled);
        // Compact JSON with keys in schema order, which is what the grammar generates.
        let tokens = env.tokenize_bytes(instance.to_string().as_bytes());
        let consumed = matcher.consume_tokens(&tokens);
        prop_assert!(consumed.is_ok(), "{} rejects {}: {:?}", compiled, instance, consumed);
        prop_assert!(matcher.is_accepting().unwrap_or(false), "{} stops early on {}", compiled, instance);
    }
}
