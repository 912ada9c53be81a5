//! A machine on the embedded model: the state's `oneOf` of transitions goes to llguidance as an
//! `anyOf` with references inlined (claij-schema's Llguidance dialect), so the model can only emit one
//! of the valid routes; the full `oneOf` is still checked afterwards. Mechanics only, never content.
//! Skipped without the model file, except under `CI=true`; one at a time (`.config/nextest.toml`).

use std::sync::Arc;

use claij_fsm::{Fsm, Interrupt, Outcome, Runner};
use claij_interceptors::Config;
use claij_local::LocalBackend;
use serde_json::json;

#[test]
fn the_local_model_routes_only_along_defined_transitions() {
    let env = |name: &str| std::env::var_os(name);
    let Some(path) = claij_test_support::local_model_or_skip(
        "the_local_model_routes_only_along_defined_transitions",
        claij_local::model_dir(env).join(claij_local::DEFAULT_MODEL_FILE),
        env,
    ) else {
        return;
    };
    let fsm = Fsm::from_json(
        &json!({
            "id": "triage",
            "prompts": ["You triage support messages."],
            "schemas": {
                "reply": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 120}}, "required": ["text"], "additionalProperties": false}
            },
            "states": [
                {"id": "triager", "action": "llm", "prompts": ["Route the message: answer it, or escalate it."]},
                {"id": "end", "action": "end"},
                {"id": "escalated", "action": "end"}
            ],
            "transitions": [
                {"id": ["start", "triager"], "schema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}},
                {"id": ["triager", "end"], "schema": {"$ref": "#/$defs/reply"}, "description": "answer the user"},
                {"id": ["triager", "escalated"], "schema": {"type": "object", "properties": {"reason": {"type": "string", "maxLength": 120}}, "required": ["reason"], "additionalProperties": false}, "description": "hand over to a person"}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let backend = LocalBackend::load(&path).unwrap();
    let mut config = Config::new("local");
    config.max_tokens = Some(120);
    config.max_retries = 1;
    let runner = Runner::new(fsm).with_llm(Arc::new(backend), config);
    let mut run = runner
        .start(json!({"message": "My invoice is wrong."}))
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcome = rt
        .block_on(runner.run(&mut run, &Interrupt::new(), None))
        .unwrap();
    let Outcome::Finished { state, event } = outcome else {
        panic!("{outcome:?}")
    };
    assert!(["end", "escalated"].contains(&state.as_str()), "{state}");
    assert_eq!(event["id"], json!(["triager", state]));
    let attempts = &run.trail.last().unwrap().attempts;
    assert_eq!(
        attempts.len(),
        1,
        "valid on the first attempt: {attempts:?}"
    );
}
