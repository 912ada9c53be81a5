//! Compaction in the registry: activated, carried through a save, followed by later deltas, rolled
//! back exactly; a torn or edited save refused with a typed error.

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::*;
use crate::compact::RewriteKind;
use crate::{AuditAction, ErrorKind, SavedRegistry, compose};

fn fixed_clock() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)
}

fn delta(id: &str, v: Value) -> SchemaDelta {
    SchemaDelta::new(id, "model", v).at(fixed_clock())
}

/// Ten extensions, several saying the same thing again.
fn ten() -> Vec<SchemaDelta> {
    let address = json!({"type": "object", "required": ["street", "city"], "properties": {
        "street": {"type": "string"}, "city": {"type": "string"},
        "country": {"type": "string", "pattern": "^[A-Z]{2}$"}}});
    vec![
        delta(
            "notes-a",
            json!({"properties": {"notes": {"type": "string", "description": "Notes"}}}),
        ),
        delta(
            "notes-b",
            json!({"properties": {"notes": {"type": "string",
            "description": "Follow-ups for the next turn"}}, "required": ["notes"]}),
        ),
        delta(
            "mood-v1",
            json!({"properties": {"mood": {"enum": ["calm", "tense", "angry"]}}}),
        ),
        delta(
            "mood-v2",
            json!({"properties": {"mood": {"type": "string",
            "enum": ["calm", "tense"], "description": "How the user sounds"}}}),
        ),
        delta("home-v1", json!({"properties": {"home": address.clone()}})),
        delta("work-v1", json!({"properties": {"work": address.clone()}})),
        delta("ship-v1", json!({"properties": {"ship_to": address}})),
        delta(
            "score-v1",
            json!({"properties": {"score": {"type": "integer", "minimum": 0,
            "description": "The score"}}}),
        ),
        delta(
            "score-v2",
            json!({"properties": {"score": {"type": "integer", "maximum": 10}}}),
        ),
        delta(
            "tags-v1",
            json!({"properties": {"tags": {"type": "array",
            "items": {"type": "string"}, "description": "Tags"}}}),
        ),
    ]
}

fn registry() -> Registry {
    let mut registry = Registry::new(crate::base())
        .unwrap()
        .with_clock(fixed_clock);
    for d in ten() {
        registry.add(d).unwrap();
    }
    registry
}

#[test]
fn a_compaction_is_activated_audited_and_rolled_back_exactly() {
    let mut r = registry();
    let before = r.active().clone();
    let proposal = r
        .propose_compaction("compaction-1", "claij")
        .unwrap()
        .unwrap();
    assert_eq!(proposal.before, before);
    assert!(crate::to_compact(&proposal.after).len() < crate::to_compact(&before).len());
    let kinds: Vec<_> = proposal.rewrites.iter().map(|w| w.kind).collect();
    for kind in [
        RewriteKind::Merged,
        RewriteKind::Shortened,
        RewriteKind::Shared,
    ] {
        assert!(kinds.contains(&kind), "{kind:?} in {kinds:?}");
    }
    r.compact(proposal.clone(), "why", Vec::new()).unwrap();
    assert_eq!(r.extensions().len(), 1);
    assert_eq!(r.active(), &proposal.after);
    let last = r.audit().entries().last().unwrap();
    assert_eq!(
        (
            last.action,
            last.extension_id.as_str(),
            last.by.as_str(),
            last.reason.as_deref()
        ),
        (AuditAction::Added, "compaction-1", "claij", Some("why"))
    );
    assert_eq!(last.delta, proposal.delta.delta);

    // Saved and restored, a later delta composes after the compaction.
    let saved: SavedRegistry =
        serde_json::from_str(&serde_json::to_string(&r.to_saved()).unwrap()).unwrap();
    let mut r = Registry::from_saved(saved).unwrap().with_clock(fixed_clock);
    assert_eq!(r.active(), &proposal.after);
    let later = delta(
        "lang-v1",
        json!({"properties": {"lang": {"type": "string"}}}),
    );
    r.add(later.clone()).unwrap();
    // A delta the compaction replaced cannot come back beside it.
    let again = r.add(ten()[0].clone()).unwrap_err();
    assert_eq!(again.kind(), ErrorKind::DuplicateExtension);

    // Rolled back: the ten deltas in its place, exactly, then the later one.
    r.remove("compaction-1", "claij schema rollback").unwrap();
    let mut expected = ten();
    expected.push(later.clone());
    assert_eq!(r.extensions(), expected.as_slice());
    assert_eq!(r.active(), &compose(&crate::base(), &expected).unwrap());
    assert!(r.compactions().is_empty());
    let last = r.audit().entries().last().unwrap();
    assert_eq!(last.action, AuditAction::Removed);
    assert_eq!(last.extension_id, "compaction-1");
    assert!(
        last.reason
            .as_deref()
            .unwrap()
            .contains("notes-a, notes-b, mood-v1")
    );
    // Without the later delta, the schema as it was before the compaction, byte for byte.
    r.remove("lang-v1", "x").unwrap();
    assert_eq!(r.active(), &before);
}

#[test]
fn compactions_nest_and_unwind() {
    let mut r = registry();
    let first = r
        .propose_compaction("compaction-1", "claij")
        .unwrap()
        .unwrap();
    r.compact(first, "", Vec::new()).unwrap();
    r.add(delta(
        "dup",
        json!({"properties": {"score": {"type": "integer", "minimum": 1}}}),
    ))
    .unwrap();
    let second = r
        .propose_compaction("compaction-2", "claij")
        .unwrap()
        .unwrap();
    r.compact(second, "", Vec::new()).unwrap();
    let restored = Registry::from_saved(r.to_saved()).unwrap();
    assert_eq!(restored.active(), r.active());
    assert_eq!(
        r.remove("compaction-1", "x").unwrap_err().kind(),
        ErrorKind::UnknownExtension
    );
    r.remove("compaction-2", "x").unwrap();
    r.remove("compaction-1", "x").unwrap();
    assert_eq!(r.extensions().len(), 11);
}

#[test]
fn nothing_to_rewrite_proposes_nothing_and_a_taken_id_is_refused() {
    let mut r = Registry::new(crate::base()).unwrap();
    assert_eq!(r.propose_compaction("c", "claij").unwrap(), None);
    r.add(delta(
        "lang",
        json!({"properties": {"lang": {"type": "string", "maxLength": 5}}}),
    ))
    .unwrap();
    assert_eq!(r.propose_compaction("c", "claij").unwrap(), None);
    let err = r.propose_compaction("lang", "claij").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DuplicateExtension);
}

#[test]
fn a_stale_proposal_is_refused() {
    let mut r = registry();
    let proposal = r
        .propose_compaction("compaction-1", "claij")
        .unwrap()
        .unwrap();
    r.add(delta(
        "lang",
        json!({"properties": {"lang": {"type": "string"}}}),
    ))
    .unwrap();
    let active = r.active().clone();
    let err = r.compact(proposal, "", Vec::new()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Compaction);
    assert_eq!(r.active(), &active);
}

#[test]
fn a_torn_or_edited_save_is_a_typed_error() {
    let mut r = registry();
    let proposal = r
        .propose_compaction("compaction-1", "claij")
        .unwrap()
        .unwrap();
    r.compact(proposal, "", Vec::new()).unwrap();
    let saved = r.to_saved();
    let refused = |saved: SavedRegistry| {
        let err = Registry::from_saved(saved).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Compaction, "{err}");
        assert_eq!(err.extension(), Some("compaction-1"));
        err.to_string()
    };
    // The compacted delta edited: a field dropped.
    let mut edited = saved.clone();
    edited.extensions[0].delta["properties"]
        .as_object_mut()
        .unwrap()
        .remove("mood");
    assert!(refused(edited).contains("not the compaction of the deltas it replaced"));
    // One replaced delta lost.
    let mut torn = saved.clone();
    torn.compactions[0].replaced.pop();
    refused(torn);
    // The compaction's extension gone while its record stays.
    let mut gone = saved.clone();
    gone.extensions.clear();
    assert!(refused(gone).contains("neither active"));
    // A replaced delta active again beside it.
    let mut twice = saved.clone();
    twice
        .extensions
        .push(twice.compactions[0].replaced[0].clone());
    refused(twice);
}
