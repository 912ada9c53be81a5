//! Tests of a state's pipeline: the trail is the conversation, the context keeps no second copy.

use std::sync::Arc;

use claij_backends::Role;
use claij_interceptors::Config;
use claij_test_support::Scripted;
use serde_json::json;

use crate::{Fsm, Interrupt, Outcome, Runner};

/// Two `llm` states in a row: the second one's conversation is the trail (the first state's
/// event), and the run's context keeps no message history of either.
#[tokio::test]
async fn states_keep_no_history_in_the_context() {
    let fsm = Fsm::from_json(
        r#"{
      "id": "two",
      "states": [{"id": "a", "action": "llm"}, {"id": "b", "action": "llm"}, {"id": "end", "action": "end"}],
      "transitions": [
        {"id": ["start", "a"], "schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}},
        {"id": ["a", "b"], "schema": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}},
        {"id": ["b", "end"], "schema": {"type": "object", "properties": {"y": {"type": "string"}}, "required": ["y"]}}
      ]
    }"#,
    )
    .unwrap();
    let model = Arc::new(Scripted::replies([r#"{"x": "one"}"#, r#"{"y": "two"}"#]));
    let runner = Runner::new(fsm).with_llm(model.clone(), Config::new("any-model"));
    let mut run = runner.start(json!({"q": "go"})).unwrap();
    let outcome = runner.run(&mut run, &Interrupt::new(), None).await.unwrap();
    assert!(matches!(outcome, Outcome::Finished { ref state, .. } if state == "end"));
    assert!(
        run.context.history.is_empty(),
        "the context kept {:?}",
        run.context.history
    );
    // The second state's request: the trail as the conversation, then its input; no turn of the
    // first state's pipeline twice.
    let requests = model.requests();
    let second = &requests[1].messages;
    let roles: Vec<Role> = second.iter().map(|m| m.role).collect();
    let users = second
        .iter()
        .filter(|m| m.content.contains("\"q\""))
        .count();
    assert_eq!(users, 1, "{second:#?}");
    assert_eq!(roles.last(), Some(&Role::User));
    // The input: the event that entered `b`.
    assert!(
        second
            .last()
            .is_some_and(|m| m.content.contains(r#""x":"one""#))
    );
}
