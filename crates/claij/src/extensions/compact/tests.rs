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

/// `schema compact --approve ask`: the person is asked claij's own question (the compaction's,
/// as `ask --approve ask` puts it), their answer decides, and the audit records it as a
/// conversation's compaction records it; without a person (no terminal) nothing is read or changed.
#[cfg(feature = "tokens")]
#[test]
fn on_demand_ask_puts_claijs_question_to_the_person_and_records_the_answer() {
    let file = conversation("ask");
    let shown = std::sync::Mutex::new(Vec::new());
    let answer = std::sync::Mutex::new("n\n");
    let person = |p: &Proposal, ctx: &Context| {
        shown.lock().unwrap().push(crate::approve::prompt(p, ctx));
        crate::approve::answered(*answer.lock().unwrap())
    };
    let text = std::fs::read(&file).unwrap();
    let refused = compact_file(&file, None, OnDemand::Ask, None, false, |_| {}).unwrap_err();
    assert!(matches!(refused, Error::NoTerminal), "{refused}");
    assert_eq!(
        refused.to_string(),
        "--approve ask asks the person at the terminal, and there is none (stdin and stderr are \
         not both terminals): --approve auto or never decide without one"
    );
    assert_eq!(std::fs::read(&file).unwrap(), text);

    let declined = compact_file(
        &file,
        None,
        OnDemand::Ask,
        Some(&person as &dyn Approver),
        false,
        |_| {},
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        declined.decision,
        Some(Decision::reject("declined by the person at the terminal"))
    );
    let session = Session::load(&file).unwrap();
    assert_eq!(session.extensions.unwrap().extensions, ten());

    *answer.lock().unwrap() = " Yes\n";
    let report = compact_file(
        &file,
        None,
        OnDemand::Ask,
        Some(&person as &dyn Approver),
        false,
        |_| {},
    )
    .unwrap()
    .unwrap();
    assert_eq!(report.decision, Some(Decision::Approve));
    let shown = shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 2);
    assert!(
        shown[1].starts_with(&format!("{}\n{{", report.question())),
        "{}",
        shown[1]
    );
    assert!(
        shown[1].starts_with(
            "claij proposes compacting the schema's 10 extension(s) (notes-a, notes-b, mood-v1, \
             mood-v2, home-v1, work-v1, ship-v1, score-v1, score-v2, tags-v1) into `compaction-2`: "
        ),
        "{}",
        shown[1]
    );
    assert!(shown[1].ends_with("\nEvery later reply will follow it. Accept? [y/N] "));

    // As a conversation's: an approved compaction-N by claij compact, its reason, no ballots.
    let other = conversation("ask-auto");
    let approve = |_: &Proposal, _: &Context| Decision::Approve;
    futures_util::FutureExt::now_or_never(compact_conversation(
        &other,
        claij_schema::base(),
        &approve,
        &o200k(),
        false,
    ))
    .unwrap()
    .unwrap();
    let last = |file: &std::path::Path| {
        let saved = Session::load(file).unwrap().extensions.unwrap();
        let entry = saved.audit.entries().last().unwrap().clone();
        (
            entry.action,
            entry.by,
            entry.reason,
            entry.ballots,
            entry.delta,
        )
    };
    let (asked, conversation) = (last(&file), last(&other));
    assert_eq!(asked.0, claij_schema::AuditAction::Added);
    assert_eq!(asked.1, COMPACTED_BY);
    assert_eq!((&asked.2, &asked.3), (&conversation.2, &conversation.3));
    assert_eq!(asked.4, conversation.4);
    let audit = Audit::read(&file).unwrap().to_string();
    assert!(
        audit.contains("compaction-1  declined  (proposed by claij compact)")
            && audit.contains("    reason: declined by the person at the terminal")
            && audit.contains("compaction-2  activated  (proposed by claij compact)"),
        "{audit}"
    );

    assert_eq!("ask".parse(), Ok(OnDemand::Ask));
    assert_eq!(
        "vote".parse::<OnDemand>(),
        Err(crate::extensions::VOTE_ON_DEMAND)
    );
    assert_eq!(
        "maybe".parse::<OnDemand>(),
        Err("expected auto, ask or never")
    );
}

/// The tokenizer `schema compact` counts with.
#[cfg(feature = "tokens")]
fn o200k() -> Count<'static> {
    fn count(text: &str) -> Result<usize, String> {
        static COUNTER: std::sync::OnceLock<crate::tokens::Counter> = std::sync::OnceLock::new();
        let counter = COUNTER.get_or_init(|| crate::tokens::Tokenizer::O200kBase.open().unwrap());
        counter.count(text).map_err(|e| e.to_string())
    }
    Count {
        tokenizer: "o200k_base",
        count: &count,
    }
}

/// A run's journal: its extensions compacted on demand (appended as a rollback appends, under the
/// journal's lock), the audit shows it, a resumed run's registry composes it, and `schema rollback
/// FILE compaction-1` brings back the extensions byte for byte; a dry run changes no byte; a
/// response schema for a journal, or a journal without extensions, is refused.
#[cfg(all(feature = "tokens", feature = "fsm"))]
#[test]
fn a_journals_extensions_compact_audit_and_roll_back_byte_for_byte() {
    use claij_fsm::journal::{Header, read_extensions};
    use claij_fsm::{ExistingJournal, Journal};

    let dir = std::env::temp_dir().join(format!("claij-compact-journal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (file, empty) = (dir.join("run.jsonl"), dir.join("empty.jsonl"));
    let header: Header = serde_json::from_value(json!({
        "run_id": "r1", "fsm": "m", "started_at": "2026-12-07T09:00:00Z"
    }))
    .unwrap();
    drop(Journal::create(&empty, &header, ExistingJournal::Refuse).unwrap());
    let mut journal = Journal::create(&file, &header, ExistingJournal::Refuse).unwrap();
    let mut registry = Registry::new(json!({"type": "object"})).unwrap();
    for delta in ten() {
        registry.add(delta).unwrap();
    }
    journal.record_extensions(&registry.to_saved()).unwrap();
    drop(journal);
    let extensions = |file: &std::path::Path| {
        serde_json::to_string(&read_extensions(file).unwrap().unwrap().extensions).unwrap()
    };
    let before = extensions(&file);
    let bytes = std::fs::read(&file).unwrap();

    let dry = compact_file(&file, None, OnDemand::Auto, None, true, |_| {})
        .unwrap()
        .unwrap();
    assert_eq!(dry.decision, None);
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    let base = Some(("state.json", json!({"type": "object"})));
    let err = compact_file(&file, base, OnDemand::Auto, None, false, |_| {}).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: a run's journal composes its extensions onto its own base (each state onto its \
             output schema): --schema state.json is for a conversation",
            file.display()
        )
    );
    let err = compact_file(&empty, None, OnDemand::Auto, None, false, |_| {}).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}: the run has no schema extensions", empty.display())
    );
    assert_eq!(std::fs::read(&file).unwrap(), bytes);

    let report = compact_file(&file, None, OnDemand::Auto, None, false, |_| {})
        .unwrap()
        .unwrap();
    assert_eq!(report.decision, Some(Decision::Approve));
    assert_eq!(report.replaced.len(), 10);
    assert!(report.after < report.before, "{report}");
    let saved = read_extensions(&file).unwrap().unwrap();
    let ids: Vec<&str> = saved
        .extensions
        .iter()
        .map(|d| d.extension_id.as_str())
        .collect();
    assert_eq!(ids, ["compaction-1"]);
    // A resumed run composes the journal's extensions again.
    crate::approve::registry(saved.base.clone(), Some(&saved)).unwrap();
    let audit = Audit::read(&file).unwrap().to_string();
    assert!(
        audit.contains("compaction-1  activated  (proposed by claij compact)"),
        "{audit}"
    );
    assert!(std::fs::read(&file).unwrap().starts_with(&bytes));

    crate::extensions::rollback(&file, "compaction-1", None, |_| {}).unwrap();
    assert_eq!(extensions(&file), before);
    let audit = Audit::read(&file).unwrap().to_string();
    assert!(
        audit.contains("compaction-1  rolled back  (removed by claij schema rollback)"),
        "{audit}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A run whose machine shares a schema named as the compaction would share the addresses
/// (`home`): the compacted extensions would not compose onto its `llm` state's output schema, so
/// the approved compaction is refused naming the state and the journal keeps every byte.
#[cfg(all(feature = "tokens", feature = "fsm"))]
#[test]
fn a_journal_compaction_that_a_state_cannot_compose_is_not_recorded() {
    use claij_fsm::journal::Header;
    use claij_fsm::{ExistingJournal, Journal};

    let dir = std::env::temp_dir().join(format!("claij-compact-states-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("run.jsonl");
    let machine = |home: Value| {
        json!({
            "id": "m",
            "schemas": {"home": home},
            "states": [{"id": "draft", "action": "llm"}, {"id": "end", "action": "end"}],
            "transitions": [
                {"id": ["start", "draft"], "schema": {"type": "object"}},
                {"id": ["draft", "end"], "schema": {"type": "object",
                    "properties": {"at": {"$ref": "#/$defs/home"}}}}
            ]
        })
    };
    let write = |definition: Value| {
        let _ = std::fs::remove_file(&file);
        let header: Header = serde_json::from_value(json!({
            "run_id": "r1", "fsm": "m", "started_at": "2026-12-07T09:00:00Z",
            "definition": definition,
        }))
        .unwrap();
        let mut journal = Journal::create(&file, &header, ExistingJournal::Refuse).unwrap();
        let mut registry = Registry::new(json!({"type": "object"})).unwrap();
        for delta in ten() {
            registry.add(delta).unwrap();
        }
        journal.record_extensions(&registry.to_saved()).unwrap();
    };
    write(machine(json!({"type": "string"})));
    let bytes = std::fs::read(&file).unwrap();
    let err = compact_file(&file, None, OnDemand::Auto, None, false, |_| {}).unwrap_err();
    assert!(
        matches!(err, Error::StateCompose { ref state, .. } if state == "draft"),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{}: the compacted extensions do not compose onto the output schema of state \
             `draft`, so the compaction is not recorded",
            file.display()
        )
    );
    assert_eq!(std::fs::read(&file).unwrap(), bytes);

    // The machine's own `home` is another name's business: the compaction composes and is kept.
    let mut other = machine(json!({"type": "string"}));
    other["schemas"] = json!({"place": {"type": "string"}});
    other["transitions"][1]["schema"]["properties"]["at"]["$ref"] = json!("#/$defs/place");
    write(other);
    let report = compact_file(&file, None, OnDemand::Auto, None, false, |_| {})
        .unwrap()
        .unwrap();
    assert_eq!(report.decision, Some(Decision::Approve));
    std::fs::remove_dir_all(&dir).unwrap();
}
