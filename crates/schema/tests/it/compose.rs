//! Composition invariants over random stacks of schema deltas.

use claij_schema::{Registry, SchemaDelta, base, compose};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A pool of deltas like interceptors write: new fields, constraints on existing ones, shared
/// definitions, and keywords that cannot be merged in place.
fn pool() -> Vec<SchemaDelta> {
    let deltas = [
        (
            "summary",
            json!({"properties": {"summary": {"type": "string"}}, "required": ["summary"]}),
        ),
        (
            "state-enum",
            json!({"properties": {"state": {"enum": ["start", "end"]}}}),
        ),
        (
            "state-len",
            json!({"properties": {"state": {"maxLength": 20}}}),
        ),
        (
            "tools",
            json!({
                "$defs": {"Call": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
                "properties": {"tools": {"type": "array", "items": {"$ref": "#/$defs/Call"}}}
            }),
        ),
        (
            "tools-again",
            json!({"$defs": {"Call": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}),
        ),
        ("closed", json!({"additionalProperties": false})),
        (
            "open-strings",
            json!({"additionalProperties": {"type": "string"}}),
        ),
        ("min", json!({"minProperties": 2})),
        (
            "eval",
            json!({"properties": {"eval": {"type": "string", "description": "code"}}, "allOf": [{"required": ["answer"]}]}),
        ),
        (
            "citations",
            json!({"properties": {"metadata": {"type": "object", "properties": {"hasSources": {"type": "boolean"}}}}, "required": ["metadata"]}),
        ),
    ];
    deltas
        .into_iter()
        .map(|(id, d)| SchemaDelta::new(id, "proptest", d))
        .collect()
}

fn stack() -> impl Strategy<Value = Vec<SchemaDelta>> {
    let pool = pool();
    let n = pool.len();
    proptest::sample::subsequence((0..n).collect::<Vec<_>>(), 0..=n)
        .prop_shuffle()
        .prop_map(move |idx| idx.into_iter().map(|i| pool[i].clone()).collect())
}

proptest! {
    #[test]
    fn deterministic(deltas in stack()) {
        let a = compose(&base(), &deltas).unwrap();
        let b = compose(&base(), &deltas).unwrap();
        prop_assert_eq!(a.to_string(), b.to_string());
    }

    #[test]
    fn idempotent(deltas in stack(), again in any::<prop::sample::Index>()) {
        let once = compose(&base(), &deltas).unwrap();
        let mut twice = deltas.clone();
        twice.extend(deltas.iter().cloned());
        prop_assert_eq!(&compose(&base(), &twice).unwrap(), &once);
        if !deltas.is_empty() {
            let mut plus_one = deltas.clone();
            plus_one.push(deltas[again.index(deltas.len())].clone());
            prop_assert_eq!(&compose(&base(), &plus_one).unwrap(), &once);
        }
    }

    #[test]
    fn composed_schemas_compile_and_registry_agrees(deltas in stack()) {
        let composed = compose(&base(), &deltas).unwrap();
        claij_schema::check(&composed).unwrap();
        let mut registry = Registry::new(base()).unwrap();
        for d in &deltas {
            registry.add(d.clone()).unwrap();
        }
        prop_assert_eq!(registry.active(), &composed);
    }
}

#[test]
fn a_valid_answer_still_validates_against_open_stacks() {
    let composed = compose(&base(), &pool()[..3]).unwrap();
    let compiled = claij_schema::compile(&composed).unwrap();
    let (schemas, root) = compiled.as_boon();
    let answer: Value = json!({"answer": "a", "state": "end", "summary": "s"});
    assert!(schemas.validate(&answer, root).is_ok());
    let bad: Value = json!({"answer": "a", "state": "middle", "summary": "s"});
    assert!(schemas.validate(&bad, root).is_err());
}
