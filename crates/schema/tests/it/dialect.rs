//! Dialect compilation through the public API: snapshots of every dialect's schema and loss report, and the
//! invariants (compiled schemas are JSON Schemas; valid instances stay valid where nothing was lost).

use claij_schema::dialect::{Compiled, Dialect, LossKind};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A schema of the repository's bench fixtures (`fixtures/bench`).
pub(crate) fn bench(name: &str) -> Value {
    crate::fixture::json(&format!("fixtures/bench/{name}"))
}

/// Hand-written schemas that exercise what the benchmark schemas do not.
pub(crate) fn hand_written() -> Vec<(&'static str, Value)> {
    vec![
        (
            "draft07-shapes",
            json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "title": "Shapes",
                "type": "object",
                "properties": {
                    "shape": {"oneOf": [{"$ref": "#/definitions/Circle"}, {"$ref": "#/definitions/Square"}]},
                    "label": {"type": ["string", "null"], "minLength": 1, "maxLength": 40},
                    "tags": {"type": "array", "items": {"type": "string", "format": "uri"}, "uniqueItems": true, "minItems": 2},
                    "meta": {"type": "object", "additionalProperties": {"type": "string"}},
                    "kind": {"const": 3},
                    "code": {"type": "string", "pattern": "^[a-z]+\\b"},
                },
                "required": ["shape"],
                "definitions": {
                    "Circle": {"type": "object", "properties": {"type": {"const": "circle"}, "r": {"type": "number", "exclusiveMinimum": 0}}, "required": ["type", "r"]},
                    "Square": {"allOf": [{"$ref": "#/definitions/Base"}, {"properties": {"type": {"const": "square"}}, "required": ["type"]}]},
                    "Base": {"type": "object", "properties": {"side": {"type": "integer", "multipleOf": 2}}, "required": ["side"]},
                },
            }),
        ),
        (
            "pydantic-root-model",
            json!({
                "$ref": "#/$defs/Reply",
                "$defs": {
                    "Reply": {"type": "object", "properties": {
                        "mood": {"$ref": "#/$defs/Mood", "default": "calm"},
                        "score": {"type": "integer", "enum": [1, 2, 3]},
                    }, "required": ["score"]},
                    "Mood": {"type": "string", "enum": ["calm", "angry"]},
                },
            }),
        ),
        (
            "tree",
            json!({
                "type": "object",
                "properties": {"root": {"$ref": "#/$defs/Node"}},
                "required": ["root"],
                "$defs": {"Node": {"type": "object", "properties": {
                    "value": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                }, "required": ["value", "children"]}},
            }),
        ),
    ]
}

/// The schema and the structured loss report, or the error.
fn report(schema: &Value, dialect: Dialect) -> Value {
    match dialect.compile(schema) {
        Ok(compiled) => json!(compiled),
        Err(e) => json!({"error": e.to_string()}),
    }
}

#[test]
fn snapshot_small() {
    let schema = bench("small.json");
    for dialect in Dialect::ALL {
        insta::assert_json_snapshot!(format!("small-{dialect}"), report(&schema, dialect));
    }
}

#[test]
fn snapshot_base() {
    let schema = claij_schema::base();
    for dialect in Dialect::ALL {
        insta::assert_json_snapshot!(format!("base-{dialect}"), report(&schema, dialect));
    }
}

#[test]
fn snapshot_big() {
    let schema = bench("big.json");
    for dialect in Dialect::ALL {
        let compiled = dialect
            .compile(&schema)
            .unwrap_or_else(|e| panic!("{dialect}: {e}"));
        // One line per loss: the structured form of a thousand losses is too long to review.
        let losses: Vec<String> = compiled.losses.iter().map(ToString::to_string).collect();
        insta::assert_json_snapshot!(
            format!("big-{dialect}"),
            json!({"schema": compiled.schema, "losses": losses})
        );
    }
}

#[test]
fn snapshot_hand_written() {
    for (name, schema) in hand_written() {
        for dialect in Dialect::ALL {
            insta::assert_json_snapshot!(format!("{name}-{dialect}"), report(&schema, dialect));
        }
    }
}

/// Compiles with boon (which checks the schema against its metaschema), then validates.
fn validate(schema: &Value, instance: &Value) -> Result<(), String> {
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler
        .add_resource("schema.json", schema.clone())
        .map_err(|e| format!("{e:#}"))?;
    let index = compiler
        .compile("schema.json", &mut schemas)
        .map_err(|e| format!("{e:#}"))?;
    schemas
        .validate(instance, index)
        .map_err(|e| format!("{e:#}"))
}

fn compile_ok(schema: &Value, dialect: Dialect) -> Compiled {
    dialect
        .compile(schema)
        .unwrap_or_else(|e| panic!("{dialect}: {e}"))
}

#[test]
fn compiled_schemas_are_json_schemas() {
    let mut schemas = vec![("small", bench("small.json")), ("big", bench("big.json"))];
    schemas.extend(hand_written());
    for (name, schema) in schemas {
        for dialect in Dialect::ALL {
            let Ok(compiled) = dialect.compile(&schema) else {
                continue;
            };
            let result = validate(&compiled.schema, &Value::Null);
            assert!(
                !matches!(&result, Err(e) if !e.starts_with("jsonschema validation failed")),
                "{name} {dialect}: {result:?}"
            );
        }
    }
}

#[test]
fn valid_instances_stay_valid() {
    let small = bench("small.json");
    let small_valid = bench("small.valid.json");
    for dialect in [Dialect::OpenAiStrict, Dialect::Anthropic] {
        let compiled = compile_ok(&small, dialect);
        assert!(compiled.is_lossless(), "{dialect}: {:?}", compiled.losses);
        assert_eq!(
            validate(&compiled.schema, &small_valid),
            Ok(()),
            "{dialect}"
        );
    }
    // Anthropic only drops and relaxes (and closes objects), so a valid instance stays valid even with losses.
    let big = bench("big.json");
    let compiled = compile_ok(&big, Dialect::Anthropic);
    assert_eq!(validate(&compiled.schema, &bench("big.valid.json")), Ok(()));
    // ...and what it dropped is still caught locally: the invalid instance is invalid against the original.
    assert!(validate(&big, &bench("big.invalid.json")).is_err());
}

#[test]
fn openai_reports_every_optional_property_it_made_nullable() {
    let compiled = compile_ok(&bench("big.json"), Dialect::OpenAiStrict);
    let nullable = compiled
        .losses
        .iter()
        .filter(|l| l.change == LossKind::Nullable)
        .count();
    assert!(nullable > 0);
    for loss in compiled
        .losses
        .iter()
        .filter(|l| l.change == LossKind::Nullable)
    {
        assert!(loss.pointer.contains("/properties/"), "{loss}");
    }
}

#[test]
fn compilation_is_deterministic() {
    let big = bench("big.json");
    for dialect in Dialect::ALL {
        assert_eq!(dialect.compile(&big), dialect.compile(&big), "{dialect}");
    }
}

// ---------------------------------------------------------------------------------------------------------
// Properties.

/// A schema together with an instance valid against it.
pub(crate) fn schema_and_instance() -> impl Strategy<Value = (Value, Value)> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(|b| (json!({"type": "boolean"}), json!(b))),
        (-1000i64..1000).prop_map(|n| (
            json!({"type": "integer", "minimum": -1000, "maximum": 1000}),
            json!(n)
        )),
        "[a-z]{0,8}".prop_map(|s| (
            json!({"type": "string", "maxLength": 8, "pattern": "^[a-z]*$"}),
            json!(s)
        )),
        prop::sample::select(vec!["a", "b", "c"])
            .prop_map(|s| (json!({"enum": ["a", "b", "c"]}), json!(s))),
        "[a-z]{1,4}".prop_map(|s| (
            json!({"const": s.clone(), "description": "fixed"}),
            json!(s)
        )),
        Just((json!({"type": "null"}), Value::Null)),
    ];
    leaf.prop_recursive(3, 32, 4, |inner| {
        prop_oneof![
            (inner.clone(), 0usize..3).prop_map(|((schema, instance), n)| {
                (json!({"type": "array", "items": schema, "maxItems": 3}), Value::Array(vec![instance; n]))
            }),
            prop::collection::btree_map("[a-z]{1,5}", (inner.clone(), any::<bool>(), any::<bool>()), 0..4).prop_map(
                |properties| {
                    let mut schema_properties = serde_json::Map::new();
                    let mut required = Vec::new();
                    let mut instance = serde_json::Map::new();
                    for (name, ((schema, value), is_required, present)) in properties {
                        schema_properties.insert(name.clone(), schema);
                        if is_required {
                            required.push(json!(name));
                        }
                        if is_required || present {
                            instance.insert(name, value);
                        }
                    }
                    (
                        json!({"type": "object", "properties": schema_properties, "required": required}),
                        Value::Object(instance),
                    )
                },
            ),
            // `anyOf` only: with `oneOf` an instance may match both branches.
            (inner.clone(), inner).prop_map(|((s1, i1), (s2, _))| (json!({"anyOf": [s1, s2]}), i1)),
        ]
    })
}

/// Arbitrary JSON biased towards schema keywords, to shake the compilers and the renderer.
fn schema_like() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-5i64..5).prop_map(Value::from),
        prop::sample::select(vec![
            "string",
            "object",
            "array",
            "null",
            "#",
            "#/$defs/a",
            "#/properties/x",
            "x#/y",
            "%zz"
        ])
        .prop_map(Value::from),
    ];
    let keys = prop::sample::select(vec![
        "type",
        "properties",
        "items",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
        "enum",
        "const",
        "required",
        "additionalProperties",
        "nullable",
        "minItems",
        "pattern",
        "a",
        "x",
    ]);
    leaf.prop_recursive(4, 48, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(keys.clone(), inner, 0..5).prop_map(|m| Value::Object(
                m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn compiled_generated_schemas_keep_their_instances((schema, instance) in schema_and_instance()) {
        // OpenAI wants an object at the root.
        let schema = json!({"type": "object", "properties": {"x": schema}, "required": ["x"]});
        let instance = json!({"x": instance});
        prop_assert_eq!(validate(&schema, &instance), Ok(()));
        for dialect in Dialect::ALL {
            let compiled = dialect.compile(&schema).map_err(|e| TestCaseError::fail(format!("{dialect}: {e}")))?;
            prop_assert_eq!(dialect.compile(&schema).ok(), Some(compiled.clone()));
            let result = validate(&compiled.schema, &instance);
            prop_assert!(
                !matches!(&result, Err(e) if !e.starts_with("jsonschema validation failed")),
                "{} does not compile: {:?}", dialect, result
            );
            // Llguidance only tightens by bounds these instances stay within, and by closing objects.
            let keeps = matches!(dialect, Dialect::Anthropic | Dialect::Llguidance)
                || (dialect == Dialect::OpenAiStrict && compiled.is_lossless());
            if keeps {
                prop_assert_eq!(result, Ok(()), "{} {}", dialect, compiled.schema);
            }
        }
    }

    #[test]
    fn hostile_schemas_never_panic(schema in schema_like()) {
        for dialect in Dialect::ALL {
            let _ = dialect.compile(&schema);
        }
        let _ = claij_schema::render::to_compact(&schema);
    }
}
