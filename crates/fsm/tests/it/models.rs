//! Per-state models: a state with a backend of its own, and the trail saying which model answered.

use std::sync::Arc;

use claij_fsm::{Definition, Entry, Fsm, Interrupt, Outcome, Runner, Trail};
use claij_interceptors::Config;
use claij_test_support::Scripted;
use serde_json::json;

/// start -> draft (llm) -> review (llm, `config.model: "reviewer-model"`) -> end.
fn fsm() -> Fsm {
    let definition: Definition = serde_json::from_value(json!({
        "id": "two-models",
        "states": [
            {"id": "draft", "action": "llm"},
            {"id": "review", "action": "llm", "config": {"model": "reviewer-model"}},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "draft"], "schema": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}},
            {"id": ["draft", "review"], "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
            {"id": ["review", "end"], "schema": {"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]}}
        ]
    }))
    .unwrap();
    Fsm::new(definition).unwrap()
}

fn run_to_end(runner: &Runner) -> claij_fsm::Run {
    let mut run = runner.start(json!({"topic": "rust"})).unwrap();
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(runner.run(&mut run, &Interrupt::new(), None))
        .unwrap();
    assert!(matches!(outcome, Outcome::Finished { .. }), "{outcome:?}");
    run
}

fn models(run: &claij_fsm::Run) -> Vec<Option<&str>> {
    run.trail
        .entries
        .iter()
        .map(|e| e.model.as_deref())
        .collect()
}

#[test]
fn a_state_with_its_own_backend_asks_it_and_the_trail_names_each_model() {
    let writer = Scripted::replies([r#"{"text": "Rust is fast."}"#]).with_provider("alpha");
    let reviewer = Scripted::replies([r#"{"verdict": "good"}"#]).with_provider("beta");
    let runner = Runner::new(fsm())
        .with_llm(Arc::new(writer.clone()), Config::new("writer-model"))
        .with_llm_for("review", Arc::new(reviewer.clone()), Config::new("judge"));
    let run = run_to_end(&runner);
    assert_eq!((writer.calls(), reviewer.calls()), (1, 1));
    assert_eq!(
        reviewer.requests()[0].model,
        "judge",
        "its own config names the model"
    );
    assert_eq!(
        models(&run),
        [None, Some("alpha:writer-model"), Some("beta:judge")]
    );
}

#[test]
fn without_a_backend_of_its_own_a_state_names_its_model_to_the_runner_s() {
    let backend = Scripted::replies([r#"{"text": "Rust is fast."}"#, r#"{"verdict": "good"}"#])
        .with_provider("alpha");
    let runner = Runner::new(fsm()).with_llm(Arc::new(backend.clone()), Config::new("default"));
    let run = run_to_end(&runner);
    let asked: Vec<String> = backend.requests().into_iter().map(|r| r.model).collect();
    assert_eq!(asked, ["default", "reviewer-model"]);
    assert_eq!(
        models(&run),
        [None, Some("alpha:default"), Some("alpha:reviewer-model")]
    );
}

#[test]
fn the_model_is_written_only_when_known_and_old_trails_still_read() {
    let plain = Entry::new("start", "draft", json!({"topic": "rust"}));
    let text = serde_json::to_string(&plain).unwrap();
    assert!(!text.contains("model"), "{text}");
    let with = plain.clone().with_model("local:SmolLM2");
    let value = serde_json::to_value(&with).unwrap();
    assert_eq!(value["model"], "local:SmolLM2");
    // A journal line from before the field existed.
    let old: Trail = serde_json::from_value(json!([
        {"from": "start", "to": "draft", "event": {"topic": "rust"}, "at": "2026-01-01T00:00:00Z"}
    ]))
    .unwrap();
    assert_eq!(old.entries[0].model, None);
    let back: Entry = serde_json::from_value(value).unwrap();
    assert_eq!(back.model.as_deref(), Some("local:SmolLM2"));
}
