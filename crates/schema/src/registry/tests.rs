//! Tests of the registry: activation, rollback, audit.

use std::time::{Duration, SystemTime};

use serde_json::json;

use super::*;

fn fixed_clock() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)
}

fn registry() -> Registry {
    Registry::new(crate::base())
        .unwrap()
        .with_clock(fixed_clock)
}

fn delta(id: &str, v: Value) -> SchemaDelta {
    SchemaDelta::new(id, "tester", v).at(fixed_clock())
}

#[test]
fn add_remove_and_audit() {
    let mut r = registry();
    let before = r.hash();
    assert_eq!(
        r.add(delta(
            "summary-v1",
            json!({"properties": {"summary": {"type": "string"}}})
        ))
        .unwrap(),
        Added::Activated
    );
    assert_eq!(
        r.add(delta(
            "summary-v1",
            json!({"properties": {"summary": {"type": "string"}}})
        ))
        .unwrap(),
        Added::AlreadyActive
    );
    assert_ne!(r.hash(), before);
    let err = r
        .add(delta(
            "summary-v1",
            json!({"properties": {"summary": {"type": "number"}}}),
        ))
        .unwrap_err();
    assert!(matches!(err, Error::DuplicateExtension { .. }));
    r.add(delta("bad", json!({"required": 5}))).unwrap_err();
    r.add(delta(
        "broken",
        json!({"properties": {"n": {"minimum": "zero"}}}),
    ))
    .unwrap_err();
    assert!(r.active()["properties"].get("n").is_none());
    r.remove("summary-v1", "admin").unwrap();
    assert_eq!(r.hash(), before);
    assert_eq!(r.active(), &compose(&crate::base(), &[]).unwrap());
    assert!(matches!(
        r.remove("summary-v1", "admin"),
        Err(Error::UnknownExtension { .. })
    ));
    insta::assert_json_snapshot!(r.audit());
    let back: AuditLog = serde_json::from_value(serde_json::to_value(r.audit()).unwrap()).unwrap();
    assert_eq!(&back, r.audit());
}

#[test]
fn rejection_names_extension_and_pointer() {
    let mut r = registry();
    let err = r
        .add(delta(
            "evil",
            json!({"properties": {"x": {"$ref": "#/$defs/Nope"}}}),
        ))
        .unwrap_err();
    assert_eq!(
        err,
        Error::InvalidSchema {
            extension: Some("evil".into()),
            pointer: "/properties/x/$ref".into(),
            message: "`$ref` target /$defs/Nope does not exist".into(),
        }
    );
    assert_eq!(r.extensions().len(), 0);
    assert_eq!(r.audit().entries()[0].action, AuditAction::Rejected);
}

#[test]
fn try_compose_records_nothing() {
    let r = registry();
    let schema = r
        .try_compose(&delta(
            "x",
            json!({"properties": {"x": {"type": "integer"}}}),
        ))
        .unwrap();
    assert_eq!(schema["properties"]["x"], json!({"type": "integer"}));
    assert!(r.audit().is_empty());
}

#[test]
fn invalid_base_is_refused() {
    assert!(Registry::new(json!({"type": 7})).is_err());
    assert!(Registry::new(json!([])).is_err());
}

fn ballot(voter: &str, approve: bool) -> Ballot {
    Ballot {
        voter: voter.to_owned(),
        approve,
        reason: format!("{voter} says so"),
    }
}

#[test]
fn votes_and_declines_are_audited() {
    let mut r = registry();
    let confidence = delta(
        "confidence-v1",
        json!({"properties": {"confidence": {"type": "number"}}}),
    );
    let ballots = vec![ballot("a", true), ballot("b", false), ballot("c", true)];
    r.add_approved(confidence, ballots.clone()).unwrap();
    let mood = delta(
        "mood-v1",
        json!({"properties": {"mood": {"type": "string"}}}),
    );
    r.decline(&mood, "voted down", vec![ballot("a", false)]);
    assert!(r.active()["properties"].get("mood").is_none());
    let entries = r.audit().entries();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].action, AuditAction::Added);
    assert_eq!(entries[0].ballots, ballots);
    assert_eq!(entries[1].action, AuditAction::Declined);
    assert_eq!(entries[1].reason.as_deref(), Some("voted down"));
    assert_eq!(
        serde_json::to_value(&entries[1]).unwrap()["action"],
        "declined"
    );
}

#[test]
fn a_saved_registry_comes_back_whole() {
    let mut r = registry();
    r.add(delta(
        "summary-v1",
        json!({"properties": {"summary": {"type": "string"}}}),
    ))
    .unwrap();
    r.decline(
        &delta("mood-v1", json!({"properties": {"mood": {}}})),
        "no",
        vec![],
    );
    let text = serde_json::to_string(&r.to_saved()).unwrap();
    let back = Registry::from_saved(serde_json::from_str(&text).unwrap()).unwrap();
    assert_eq!(back.active(), r.active());
    assert_eq!(back.hash(), r.hash());
    assert_eq!(back.extensions(), r.extensions());
    assert_eq!(back.audit(), r.audit());
}

#[test]
fn a_saved_registry_that_no_longer_composes_names_the_extension() {
    let mut saved = registry().to_saved();
    saved.extensions = vec![
        delta("ok-v1", json!({"properties": {"ok": {"type": "string"}}})),
        delta("bad-v1", json!({"properties": {"x": {"type": "strin"}}})),
    ];
    let err = Registry::from_saved(saved.clone()).unwrap_err();
    assert!(err.to_string().contains("bad-v1"), "{err}");
    saved.extensions[1] = saved.extensions[0].clone();
    let err = Registry::from_saved(saved).unwrap_err();
    assert!(
        matches!(&err, Error::DuplicateExtension { extension } if extension == "ok-v1"),
        "{err}"
    );
}
