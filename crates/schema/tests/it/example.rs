//! Examples built from schemas: every bench schema (`fixtures/bench`), example schema and hand-written one has a
//! valid example, and so does every generated satisfiable schema.

use claij_schema::{base, example};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::dialect::{bench, hand_written, schema_and_instance};

/// Whether `instance` is valid against `schema`, checked by boon apart from `example`'s own check.
fn is_valid(schema: &Value, instance: &Value) -> bool {
    let compiled = claij_schema::compile(schema).unwrap();
    let (schemas, index) = compiled.as_boon();
    schemas.validate(instance, index).is_ok()
}

#[test]
fn every_shared_schema_has_a_valid_example() {
    let mut schemas: Vec<(String, Value)> = vec![
        ("base()".to_owned(), base()),
        ("small.json".to_owned(), bench("small.json")),
        ("big.json".to_owned(), bench("big.json")),
    ];
    schemas.extend(crate::grammar::examples());
    schemas.extend(hand_written().into_iter().map(|(n, s)| (n.to_owned(), s)));
    for (name, schema) in schemas {
        let instance = example(&schema).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(is_valid(&schema, &instance), "{name}: {instance}");
    }
}

#[test]
fn examples_of_the_shared_schemas() {
    let base = example(&base()).unwrap();
    // Placeholders, never a description, never words a small model would copy as its answer.
    assert_eq!(base, json!({"answer": "...", "state": "..."}));
    insta::assert_snapshot!("small", example(&bench("small.json")).unwrap().to_string());
    let big = example(&bench("big.json")).unwrap();
    insta::assert_json_snapshot!("big", big);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn a_satisfiable_generated_schema_has_a_valid_example((schema, _instance) in schema_and_instance()) {
        let built = example(&schema);
        prop_assert!(built.is_ok(), "{}: {:?}", schema, built);
        prop_assert!(is_valid(&schema, &built.unwrap_or_default()));
    }

    #[test]
    fn building_never_panics(schema in any_json()) {
        let _ = example(&schema);
    }
}

/// Arbitrary JSON biased towards schema keywords.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-5i64..100_000).prop_map(Value::from),
        prop::sample::select(vec![
            "string",
            "object",
            "array",
            "integer",
            "#",
            "#/$defs/a",
            "^a+$",
            "(?=x)"
        ])
        .prop_map(Value::from),
    ];
    let keys = prop::sample::select(vec![
        "type",
        "properties",
        "items",
        "prefixItems",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
        "enum",
        "const",
        "examples",
        "default",
        "required",
        "minItems",
        "maxItems",
        "minLength",
        "pattern",
        "minimum",
        "exclusiveMaximum",
        "multipleOf",
        "a",
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
