//! Compaction of a conversation's extensions: approved, audited and rolled back exactly; declined
//! or a dry run, nothing changes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use claij_interceptors::Context;
use claij_interceptors::builtin::proposals::{Decision, Proposal};
use claij_schema::{Registry, SchemaDelta};
use serde_json::{Value, json};

use super::*;
use crate::extensions::{Audit, rollback_conversation};

/// Ten extensions, several saying the same thing again.
pub(crate) fn ten() -> Vec<SchemaDelta> {
    let address = json!({"type": "object", "required": ["street", "city"], "properties": {
        "street": {"type": "string"}, "city": {"type": "string"},
        "country": {"type": "string", "pattern": "^[A-Z]{2}$"}}});
    [
        (
            "notes-a",
            json!({"notes": {"type": "string", "description": "Notes"}}),
        ),
        (
            "notes-b",
            json!({"notes": {"type": "string", "description": "Follow-ups for the next turn"}}),
        ),
        (
            "mood-v1",
            json!({"mood": {"enum": ["calm", "tense", "angry"]}}),
        ),
        (
            "mood-v2",
            json!({"mood": {"type": "string", "enum": ["calm", "tense"],
            "description": "How the user sounds"}}),
        ),
        ("home-v1", json!({"home": address.clone()})),
        ("work-v1", json!({"work": address.clone()})),
        ("ship-v1", json!({"ship_to": address})),
        (
            "score-v1",
            json!({"score": {"type": "integer", "minimum": 0, "description": "The score"}}),
        ),
        (
            "score-v2",
            json!({"score": {"type": "integer", "maximum": 10}}),
        ),
        (
            "tags-v1",
            json!({"tags": {"type": "array", "items": {"type": "string"},
            "description": "Tags"}}),
        ),
    ]
    .into_iter()
    .map(|(id, properties)| {
        let at = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_767_225_600);
        SchemaDelta::new(id, "model", json!({"properties": properties})).at(at)
    })
    .collect()
}

fn conversation(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("claij-compact-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("conversation.json");
    let _ = std::fs::remove_file(&file);
    let mut registry = Registry::new(claij_schema::base()).unwrap();
    for delta in ten() {
        registry.add(delta).unwrap();
    }
    Session::load(&file)
        .unwrap()
        .with_extensions(Some(&registry))
        .save(&file)
        .unwrap();
    file
}

/// Words, as a stand-in tokenizer (the CLI's tests count with o200k_base).
fn words(text: &str) -> Result<usize, String> {
    Ok(text.split_whitespace().count())
}

const WORDS: Count<'static> = Count {
    tokenizer: "words",
    count: &words,
};

fn active(file: &std::path::Path) -> Value {
    let session = Session::load(file).unwrap();
    let registry = conversation_registry(file, &session, claij_schema::base()).unwrap();
    lock(&registry).active().clone()
}

#[tokio::test]
async fn an_approved_compaction_is_audited_and_rolled_back_exactly() {
    let file = conversation("approved");
    let before = active(&file);
    let approve = |_: &Proposal, _: &Context| Decision::Approve;
    let report = compact_conversation(&file, claij_schema::base(), &approve, &WORDS, false)
        .await
        .unwrap()
        .expect("something to compact");
    assert_eq!(report.decision, Some(Decision::Approve));
    assert_eq!(report.extension_id, "compaction-1");
    assert_eq!(report.replaced.len(), 10);
    assert!(report.after < report.before, "{report}");
    let after = active(&file);
    assert_ne!(after, before);
    let audit = Audit::read(&file).unwrap().to_string();
    assert!(
        audit.contains("compaction-1  activated  (proposed by claij compact)"),
        "{audit}"
    );
    assert!(audit.contains(&format!(
        "    reason: {}",
        report.reason().lines().next().unwrap()
    )));
    assert!(audit.ends_with("active: compaction-1"), "{audit}");

    rollback_conversation(&file, "compaction-1", claij_schema::base()).unwrap();
    assert_eq!(active(&file), before);
    let session = Session::load(&file).unwrap();
    assert_eq!(session.extensions.unwrap().extensions, ten());
    let audit = Audit::read(&file).unwrap().to_string();
    assert!(
        audit.contains("compaction-1  rolled back  (removed by claij schema rollback)"),
        "{audit}"
    );
    // A second compaction gets the next id.
    let report = compact_conversation(&file, claij_schema::base(), &approve, &WORDS, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(report.extension_id, "compaction-2");
}

#[tokio::test]
async fn a_declined_compaction_or_a_dry_run_changes_nothing() {
    let file = conversation("declined");
    let before = active(&file);
    let decline = |_: &Proposal, _: &Context| Decision::reject("not today");
    let report = compact_conversation(&file, claij_schema::base(), &decline, &WORDS, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(report.decision, Some(Decision::reject("not today")));
    assert_eq!(active(&file), before);
    let session = Session::load(&file).unwrap();
    assert_eq!(session.extensions.unwrap().extensions, ten());
    let audit = Audit::read(&file).unwrap().to_string();
    assert!(audit.contains("compaction-1  declined"), "{audit}");

    let text = std::fs::read(&file).unwrap();
    let asked = |_: &Proposal, _: &Context| -> Decision { panic!("a dry run asks nobody") };
    let report = compact_conversation(&file, claij_schema::base(), &asked, &WORDS, true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(report.decision, None);
    assert_eq!(std::fs::read(&file).unwrap(), text);
}

#[tokio::test]
async fn the_proposal_the_approver_reads() {
    let file = conversation("prompt");
    let seen = std::sync::Mutex::new(None);
    let keep = |p: &Proposal, _: &Context| {
        *seen.lock().unwrap() = Some(p.clone());
        Decision::reject("only looking")
    };
    compact_conversation(&file, claij_schema::base(), &keep, &WORDS, false)
        .await
        .unwrap();
    let proposal = seen.lock().unwrap().clone().unwrap();
    insta::assert_snapshot!(proposal.reason);
    insta::assert_json_snapshot!(proposal.delta);
}
