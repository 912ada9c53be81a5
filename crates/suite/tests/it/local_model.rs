//! The memory and history suites on the embedded model, end to end through `claij-suite run`.
//!
//! These tests run alone, on one thread (the nextest `local-model` group; `cargo xtask test` sets
//! `CANDLE_NUM_THREADS=1`).

use std::path::PathBuf;

use serde_json::Value;

use super::claij_suite_env;

/// The model file in the cache `cargo xtask model` fills; `None` (skip) when it is missing, except
/// under CI.
fn model(test: &str) -> Option<PathBuf> {
    let env = |name: &str| std::env::var_os(name);
    let path = claij_local::model_dir(env).join(claij_local::DEFAULT_MODEL_FILE);
    claij_test_support::local_model_or_skip(test, path, env)
}

/// Runs `claij-suite run --suite SUITE` on the embedded model and returns its records.
fn suite_on_the_embedded_model(model: &std::path::Path, suite: &str) -> Vec<Value> {
    let model = model.to_string_lossy().into_owned();
    // Past any turn's time on a loaded machine; nextest stops a stuck test after 20 minutes.
    let run = claij_suite_env(
        &[
            "run",
            "--llm",
            "local",
            "--model-path",
            &model,
            "--suite",
            suite,
            "--threads",
            "1",
            "--timeout",
            "900",
        ],
        "",
        &[],
    );
    let records: Vec<Value> = run
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect();
    assert!(!records.is_empty(), "{}", run.stderr);
    for record in &records {
        assert_eq!(record["passed"], true, "{record}\n{}", run.stderr);
    }
    assert_eq!(run.code, 0, "{}", run.stderr);
    records
}

/// The memory suite on the embedded model, with no earlier turn sent: a fact told on turn 1 is
/// answered on turn 2, and in a longer conversation after turns about other things, only because
/// the model's own summaries carried it (the suite checks each request: no earlier turn, the fact in
/// the memory section and nowhere else, the fact in the answer). A memory that keeps nothing fails
/// it. Greedy decoding: the same prompts give the same replies.
#[test]
fn memory_alone_carries_facts_to_later_turns() {
    let Some(model) = model("memory_alone_carries_facts_to_later_turns") else {
        return;
    };
    let records = suite_on_the_embedded_model(&model, "memory");
    let tests: Vec<&str> = records
        .iter()
        .map(|r| r["test"].as_str().unwrap())
        .collect();
    assert_eq!(tests, ["recall-next-turn", "recall-after-distractions"]);
}

/// The history suite on the embedded model, with no memory interceptor: the fact of turn 1 reaches
/// turn 2 in the messages sent, and the answer says it. A history that sends nothing fails it.
#[test]
fn history_alone_carries_a_fact_to_the_next_turn() {
    let Some(model) = model("history_alone_carries_a_fact_to_the_next_turn") else {
        return;
    };
    let records = suite_on_the_embedded_model(&model, "history");
    assert_eq!(records[0]["test"], "recall-next-turn");
}
