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

/// Constraints a value satisfies, each one a possible delta on the property `p`.
fn constraints_met_by(witness: &Value) -> Vec<Value> {
    let mut out = vec![
        json!({"const": witness}),
        json!({"enum": [witness, "other", 12345]}),
    ];
    match witness {
        Value::String(s) => {
            let len = s.chars().count();
            out.extend([
                json!({"type": "string"}),
                json!({"type": ["string", "null"]}),
                json!({"minLength": len}),
                json!({"maxLength": len}),
                json!({"minLength": len / 2, "maxLength": len + 3}),
            ]);
        }
        Value::Number(n) => {
            let n = n.as_i64().unwrap();
            out.extend([
                json!({"type": "integer"}),
                json!({"type": "number"}),
                json!({"minimum": n}),
                json!({"maximum": n}),
                json!({"minimum": n - 7, "maximum": n + 1}),
            ]);
        }
        _ => out.push(json!({"type": "boolean"})),
    }
    out
}

/// A value and a few deltas, each constraining `p` in a way the value meets: never contradictory.
fn compatible() -> impl Strategy<Value = (Value, Vec<SchemaDelta>)> {
    prop_oneof![
        "[a-z]{0,8}".prop_map(Value::from),
        (-100i64..100).prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
    ]
    .prop_flat_map(|witness| {
        let pool = constraints_met_by(&witness);
        let n = pool.len();
        (
            Just(witness),
            proptest::sample::subsequence((0..n).collect::<Vec<_>>(), 1..=n)
                .prop_shuffle()
                .prop_map(move |picked| {
                    picked
                        .into_iter()
                        .map(|i| {
                            let delta = json!({"properties": {"p": pool[i].clone()}});
                            SchemaDelta::new(format!("c{i}"), "proptest", delta)
                        })
                        .collect()
                }),
        )
    })
}

proptest! {
    /// Deltas that a value meets together compose, and the composed schema accepts that value.
    #[test]
    fn compatible_deltas_compose_and_accept_their_witness((witness, deltas) in compatible()) {
        let mut registry = Registry::new(base()).unwrap();
        for d in &deltas {
            let added = registry.add(d.clone());
            prop_assert!(added.is_ok(), "{}: {:?}", d.delta, added.err());
        }
        let compiled = claij_schema::compile(registry.active()).unwrap();
        let (schemas, root) = compiled.as_boon();
        let reply = json!({"answer": "a", "state": "s", "p": witness});
        prop_assert!(schemas.validate(&reply, root).is_ok(), "{}", registry.active());
    }

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

    /// The pool holds compatible deltas only: any stack of them composes, contradiction checks
    /// included, and the result still accepts a reply.
    #[test]
    fn compatible_deltas_are_never_contradictions(deltas in stack()) {
        let composed = compose(&base(), &deltas);
        prop_assert!(composed.is_ok(), "{:?}", composed.err());
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

/// Composes the deltas (`(extension, delta)`) onto the base with a registry and returns the
/// rejection of the last one as text, or `None` when every delta was accepted.
#[track_caller]
fn check_contradiction(deltas: &[(&str, Value)], expected: Option<&str>) {
    let mut registry = Registry::new(base()).unwrap();
    let mut last = None;
    for (id, delta) in deltas {
        last = registry
            .add(SchemaDelta::new(*id, "test", delta.clone()))
            .err();
    }
    if let Some(claij_schema::Error::Contradiction { first, second, .. }) = &last {
        assert!(
            deltas.iter().any(|(id, _)| id == first) || first == "base",
            "{first}"
        );
        assert_eq!(second, deltas.last().unwrap().0);
    }
    assert_eq!(last.as_ref().map(ToString::to_string).as_deref(), expected);
}

#[test]
fn contradictory_deltas_are_rejected_naming_both_extensions() {
    check_contradiction(
        &[
            (
                "summary-text",
                json!({"properties": {"summary": {"type": "string"}}}),
            ),
            (
                "summary-count",
                json!({"properties": {"summary": {"type": "integer"}}}),
            ),
        ],
        Some(
            "extension `summary-count` contradicts extension `summary-text` at \
             `/properties/summary/type`: type \"string\" and type \"integer\"",
        ),
    );
    check_contradiction(
        &[("list", json!({"type": "array"}))],
        Some(
            "extension `list` contradicts extension `base` at `/type`: \
             type \"object\" and type \"array\"",
        ),
    );
    check_contradiction(
        &[
            (
                "fsm-a",
                json!({"properties": {"state": {"const": "start"}}}),
            ),
            ("fsm-b", json!({"properties": {"state": {"const": "end"}}})),
        ],
        Some(
            "extension `fsm-b` contradicts extension `fsm-a` at `/properties/state/const`: \
             const \"start\" and const \"end\"",
        ),
    );
    check_contradiction(
        &[
            (
                "states",
                json!({"properties": {"state": {"enum": ["a", "b"]}}}),
            ),
            (
                "end",
                json!({"allOf": [{"properties": {"state": {"const": "c"}}}]}),
            ),
        ],
        Some(
            "extension `end` contradicts extension `states` at `/properties/state/enum`: \
             enum [\"a\",\"b\"] and const \"c\"",
        ),
    );
    check_contradiction(
        &[
            (
                "long",
                json!({"properties": {"answer": {"minLength": 100}}}),
            ),
            (
                "short",
                json!({"properties": {"answer": {"maxLength": 10}}}),
            ),
        ],
        Some(
            "extension `short` contradicts extension `long` at `/properties/answer/minLength`: \
             minLength 100 is greater than maxLength 10",
        ),
    );
    check_contradiction(
        &[(
            "tags",
            json!({"properties": {"tags": {"type": "array", "minItems": 3, "maxItems": 2}}}),
        )],
        Some(
            "extension `tags` contradicts itself at `/properties/tags/minItems`: \
             minItems 3 is greater than maxItems 2",
        ),
    );
    check_contradiction(
        &[
            ("score", json!({"properties": {"score": {"minimum": 5}}})),
            ("cap", json!({"properties": {"score": {"maximum": 1}}})),
        ],
        Some(
            "extension `cap` contradicts extension `score` at `/properties/score/minimum`: \
             minimum 5 is greater than maximum 1",
        ),
    );
    check_contradiction(
        &[("no-state", json!({"properties": {"state": false}}))],
        Some(
            "extension `no-state` contradicts extension `base` at `/properties/state`: \
             property `state` is required but its schema is `false`",
        ),
    );
    // Compatible constraints on one property compose.
    check_contradiction(
        &[
            (
                "states",
                json!({"properties": {"state": {"enum": ["a", "b"]}}}),
            ),
            ("b-only", json!({"properties": {"state": {"const": "b"}}})),
            (
                "short",
                json!({"properties": {"answer": {"maxLength": 10, "minLength": 10}}}),
            ),
            ("count", json!({"properties": {"n": {"type": "integer"}}})),
            (
                "number",
                json!({"properties": {"n": {"type": ["number", "null"]}}}),
            ),
        ],
        None,
    );
}

#[test]
fn a_rejected_contradiction_keeps_the_previous_schema() {
    let mut registry = Registry::new(base()).unwrap();
    let before = registry.active().clone();
    let err = registry
        .add(SchemaDelta::new("list", "test", json!({"type": "array"})))
        .unwrap_err();
    assert!(
        matches!(err, claij_schema::Error::Contradiction { .. }),
        "{err}"
    );
    assert_eq!(registry.active(), &before);
    assert_eq!(
        registry.audit().entries()[0].action,
        claij_schema::AuditAction::Rejected
    );
}
