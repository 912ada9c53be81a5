//! Each delta's cost: the tokens it adds to the rendering of everything else, each delta counted
//! once, and what a conversation file's active deltas cost.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use claij_schema::{AppliedLog, Registry, SchemaDelta, base, compose, to_compact};
use serde_json::{Value, json};

use super::{Costs, Window, cost};
use crate::session::Session;
use crate::tokens::{Counter, Tokenizer};

fn o200k() -> Counter {
    Tokenizer::O200kBase.open().unwrap()
}

fn tokens(schema: &Value) -> usize {
    o200k().count(&to_compact(schema)).unwrap()
}

fn property(id: &str, name: &str, description: &str) -> SchemaDelta {
    SchemaDelta::new(
        id,
        "test",
        json!({"properties": {name: {"type": "string", "description": description}}}),
    )
}

#[test]
fn a_delta_costs_the_tokens_it_adds_to_the_others() {
    let short = property("short-v1", "tag", "A tag");
    let long = property(
        "long-v1",
        "rationale",
        "Why the answer is right, step by step, citing the sources the user gave",
    );
    let deltas = [short.clone(), long.clone()];
    let cost = cost(&base(), &deltas, &o200k()).unwrap();
    let all = tokens(&compose(&base(), &deltas).unwrap());
    assert_eq!(cost.total, all);
    assert_eq!(cost.base, tokens(&base()));
    // The most expensive first, each the difference it makes to the rendering with the other.
    let ids: Vec<&str> = cost
        .deltas
        .iter()
        .map(|d| d.extension_id.as_str())
        .collect();
    assert_eq!(ids, ["long-v1", "short-v1"]);
    let without_long = tokens(&compose(&base(), &[short]).unwrap());
    let without_short = tokens(&compose(&base(), &[long]).unwrap());
    assert_eq!(cost.deltas[0].tokens, (all - without_long) as i64);
    assert_eq!(cost.deltas[1].tokens, (all - without_short) as i64);
    assert!(cost.deltas[1].tokens > 0);
}

#[test]
fn a_delta_that_repeats_another_costs_nothing() {
    let first = property("notes-a", "notes", "Free notes");
    let again = property("notes-b", "notes", "Free notes");
    let cost = cost(&base(), &[first, again], &o200k()).unwrap();
    assert!(cost.total > cost.base);
    assert!(cost.deltas.iter().all(|d| d.tokens == 0), "{cost:?}");
}

/// A conversation file whose proposal `confidence-v1` is both applied to its last request and
/// among its approved extensions (as `ask --interceptors proposals` saves it), beside an
/// interceptor's delta.
fn conversation(dir: &std::path::Path) -> std::path::PathBuf {
    let file = dir.join("conversation.json");
    let confidence = SchemaDelta::new(
        "confidence-v1",
        "proposals",
        json!({"properties": {"confidence": {"type": "number", "description": "How sure, 0 to 1"}}}),
    );
    let memory = SchemaDelta::new(
        "summary-v1",
        "memory",
        json!({"properties": {"summary": {"type": "string"}}, "required": ["summary"]}),
    );
    let mut registry = Registry::new(base()).unwrap();
    registry.add(confidence.clone()).unwrap();
    let mut session = Session::load(&file).unwrap();
    let mut applied = AppliedLog::new();
    applied.record(&[memory, confidence], std::time::SystemTime::UNIX_EPOCH);
    session.applied = applied;
    session
        .with_extensions(Some(&registry))
        .save(&file)
        .unwrap();
    file
}

#[test]
fn a_conversations_deltas_are_each_counted_once() {
    let dir = std::env::temp_dir().join(format!("claij-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = conversation(&dir);
    let costs = Costs::of_file(&file, None, &o200k()).unwrap();
    assert_eq!(costs.costs.len(), 1);
    let cost = costs.costs[0].clone();
    let ids: Vec<&str> = cost
        .deltas
        .iter()
        .map(|d| d.extension_id.as_str())
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&"confidence-v1") && ids.contains(&"summary-v1"));
    // Composed twice, the proposal would cost nothing (the other copy says it all).
    assert!(cost.deltas.iter().all(|d| d.tokens > 0), "{cost:?}");
    let json = costs
        .with_window(Window {
            model: Some("openai:gpt-4o".into()),
            tokens: Some(128_000),
        })
        .to_json();
    assert_eq!(json["tokenizer"], "o200k_base");
    assert_eq!(json["context_window"], 128_000);
    let share = json["schemas"][0]["share"].as_f64().unwrap();
    assert!((share - 100.0 * cost.total as f64 / 128_000.0).abs() < 1e-9);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bare_schemas_cost_is_its_total_and_an_unknown_window_says_so() {
    let schema = base();
    let costs = Costs::of_schema(std::path::Path::new("base.json"), &schema, &o200k()).unwrap();
    assert_eq!(costs.costs[0].total, tokens(&schema));
    assert_eq!(
        costs.to_string(),
        format!(
            "base.json: {} tokens (o200k_base), no model (--model or defaults.llm): context window unknown",
            tokens(&schema)
        )
    );
    assert!(costs.to_json()["schemas"][0]["share"].is_null());
}

/// A run's journal: the deltas of each `llm` state's requests, each composed with the run's
/// approved extensions onto the journal's base.
#[cfg(feature = "fsm")]
#[test]
fn a_journals_states_each_get_their_costs() {
    use claij_fsm::journal::Header;
    use claij_fsm::{ExistingJournal, Journal};

    let dir = std::env::temp_dir().join(format!("claij-cost-journal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("run.jsonl");
    let header: Header = serde_json::from_value(json!({
        "run_id": "r1", "fsm": "m", "started_at": "2026-12-07T09:00:00Z"
    }))
    .unwrap();
    let mut journal = Journal::create(&file, &header, ExistingJournal::Refuse).unwrap();
    let at = std::time::SystemTime::UNIX_EPOCH;
    for (state, delta) in [
        (
            "draft",
            property("tone-v1", "tone", "How the text should sound"),
        ),
        (
            "review",
            property("verdict-v1", "verdict", "Accept or reject, with why"),
        ),
    ] {
        let entries = AppliedLog::new().record(&[delta], at);
        journal.record_applied(state, &entries).unwrap();
    }
    let mut registry = Registry::new(base()).unwrap();
    registry
        .add(property("confidence-v1", "confidence", "How sure"))
        .unwrap();
    journal.record_extensions(&registry.to_saved()).unwrap();
    drop(journal);
    let costs = Costs::of_file(&file, None, &o200k()).unwrap();
    let states: Vec<Option<&str>> = costs.costs.iter().map(|c| c.state.as_deref()).collect();
    assert_eq!(states, [Some("draft"), Some("review")]);
    for cost in &costs.costs {
        let mut ids: Vec<&str> = cost
            .deltas
            .iter()
            .map(|d| d.extension_id.as_str())
            .collect();
        ids.sort_unstable();
        let own = if cost.state.as_deref() == Some("draft") {
            "tone-v1"
        } else {
            "verdict-v1"
        };
        assert_eq!(ids, ["confidence-v1", own]);
        assert!(cost.deltas.iter().all(|d| d.tokens > 0), "{cost:?}");
    }
    let text = costs.to_string();
    assert!(
        text.contains("run.jsonl of state `review`: 2 active schema delta(s)"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
