//! Unit tests of the states interceptor: the delta, declaring more states, composing onto the base.

use claij_schema::{SchemaDelta, compose};
use serde_json::json;

use super::*;

#[track_caller]
fn check(states: &States, names: &[&str], description: &str) {
    assert_eq!(states.names(), names);
    assert_eq!(
        states.delta(),
        json!({
            "properties": {"state": {"enum": names, "description": description}},
            "required": ["state"],
        })
    );
}

#[test]
fn the_conversation_set_and_more() {
    let conversation = States::conversation();
    check(
        &conversation,
        &["answered", "needs_clarification", "cannot_answer"],
        "answered: the answer replies to the message; needs_clarification: the message is unclear \
         and the answer asks what the user means; cannot_answer: you cannot answer and the answer \
         says why",
    );
    check(
        &conversation
            .clone()
            .with_state("waiting", "tools are running")
            .with_state("answered", "done"),
        &[
            "answered",
            "needs_clarification",
            "cannot_answer",
            "waiting",
        ],
        "answered: done; needs_clarification: the message is unclear and the answer asks what the \
         user means; cannot_answer: you cannot answer and the answer says why; waiting: tools are \
         running",
    );
}

fn delta(id: &str, delta: Value) -> SchemaDelta {
    SchemaDelta::new(id, id, delta)
}

#[test]
fn composes_onto_the_base_and_its_example_is_the_first_state() {
    let schema = compose(
        &claij_schema::base(),
        &[delta(EXTENSION_ID, States::conversation().delta())],
    )
    .unwrap();
    assert_eq!(
        schema["properties"]["state"]["allOf"][1]["enum"],
        json!(["answered", "needs_clarification", "cannot_answer"])
    );
    assert_eq!(
        claij_schema::example(&schema).unwrap(),
        json!({"answer": "...", "state": "answered"})
    );
}

#[test]
fn a_state_machine_routing_contradicts_it() {
    let routing = crate::builtin::fsm_routing::FsmRouting::delta(&["review".to_owned()]);
    let err = compose(
        &claij_schema::base(),
        &[
            delta(EXTENSION_ID, States::conversation().delta()),
            delta("fsm-routing-v1", routing),
        ],
    )
    .unwrap_err();
    assert!(
        matches!(&err, claij_schema::Error::Contradiction { pointer, .. } if pointer.starts_with("/properties/state")),
        "{err}"
    );
}
