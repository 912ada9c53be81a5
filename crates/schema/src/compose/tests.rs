//! Tests of composition rules.

use serde_json::{Value, json};

use super::*;

fn delta(id: &str, v: Value) -> SchemaDelta {
    SchemaDelta::new(id, "test", v)
}

#[test]
fn merges_properties_required_and_defs() {
    let schema = compose(
        &crate::base(),
        &[
            delta(
                "summary-v1",
                json!({"properties": {"summary": {"type": "string"}}, "required": ["summary"]}),
            ),
            delta(
                "tools-v1",
                json!({"$defs": {"Call": {"type": "object"}}, "properties": {"tools": {"type": "array", "items": {"$ref": "#/$defs/Call"}}}, "required": ["state", "tools"]}),
            ),
        ],
    )
    .unwrap();
    insta::assert_json_snapshot!(schema);
}

#[test]
fn conflicting_property_falls_back_to_all_of() {
    let fsm = delta(
        "fsm-v1",
        json!({"properties": {"state": {"enum": ["a", "b"]}}}),
    );
    let once = compose(&crate::base(), std::slice::from_ref(&fsm)).unwrap();
    assert_eq!(
        once["properties"]["state"]["allOf"][1],
        json!({"enum": ["a", "b"]})
    );
    let twice = compose(&crate::base(), &[fsm.clone(), fsm]).unwrap();
    assert_eq!(once, twice);
}

#[test]
fn unsafe_keywords_go_to_all_of() {
    let schema = compose(
        &crate::base(),
        &[
            delta("a", json!({"additionalProperties": false})),
            delta(
                "b",
                json!({"additionalProperties": {"type": "string"}, "minProperties": 2}),
            ),
        ],
    )
    .unwrap();
    assert_eq!(schema["additionalProperties"], json!(false));
    assert_eq!(schema["minProperties"], json!(2));
    assert_eq!(
        schema["allOf"],
        json!([{"additionalProperties": {"type": "string"}}])
    );
}

#[test]
fn definition_conflict_names_both_extensions() {
    let err = compose(
        &crate::base(),
        &[
            delta("first", json!({"$defs": {"X": {"type": "string"}}})),
            delta("second", json!({"$defs": {"X": {"type": "integer"}}})),
        ],
    )
    .unwrap_err();
    assert_eq!(
        err,
        Error::DefinitionConflict {
            pointer: "/$defs/X".into(),
            first: "first".into(),
            second: "second".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "extension `second` redefines `/$defs/X`, which extension `first` defined differently"
    );
}

#[test]
fn bad_deltas_say_where() {
    #[track_caller]
    fn check(v: Value, pointer: &str) {
        match compose(&crate::base(), &[delta("ext", v)]) {
            Err(Error::InvalidDelta {
                extension,
                pointer: p,
                ..
            }) => {
                assert_eq!(extension, "ext");
                assert_eq!(p, pointer);
            }
            other => panic!("{other:?}"),
        }
    }
    check(json!([1]), "");
    check(json!({"properties": []}), "/properties");
    check(json!({"properties": {"a/b": 3}}), "/properties/a~1b");
    check(json!({"required": "x"}), "/required");
    check(json!({"required": [1]}), "/required");
    check(json!({"$defs": 1}), "/$defs");
    check(json!({"allOf": {}}), "/allOf");
}

#[test]
fn draft_mismatch_is_an_error() {
    let err = compose(
        &crate::base(),
        &[delta("old", json!({"$schema": crate::DRAFT_07}))],
    )
    .unwrap_err();
    assert!(matches!(err, Error::DraftMismatch { .. }), "{err}");
    compose(
        &crate::base(),
        &[delta("same", json!({"$schema": crate::DRAFT_2020_12}))],
    )
    .unwrap();
}

#[test]
fn draft_07_definitions_merge() {
    let base = json!({"$schema": crate::DRAFT_07, "type": "object", "definitions": {"A": {"type": "string"}}});
    let schema = compose(
        &base,
        &[delta(
            "d",
            json!({"definitions": {"A": {"type": "string"}, "B": {"type": "number"}}}),
        )],
    )
    .unwrap();
    assert_eq!(
        schema["definitions"],
        json!({"A": {"type": "string"}, "B": {"type": "number"}})
    );
    let err = compose(&base, &[delta("d", json!({"definitions": {"A": {}}}))]).unwrap_err();
    assert!(err.to_string().contains("extension `base`"), "{err}");
}
