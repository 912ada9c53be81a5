//! Tests of the `fsm_routing` interceptor: a state outside the allowed ones is retried, transitions
//! are recorded over several turns, and the delta, prompt and retry prompt the model sees.

use std::sync::Arc;

use claij_interceptors::builtin::fsm_routing::{FsmRouting, Route, Routes, RoutingState};
use claij_interceptors::{
    Chain, Config, Context, Error, ErrorChain, Pipeline, Stage, StructuredMode,
};
use claij_test_support::Scripted;
use serde_json::json;

fn block<F: std::future::Future>(f: F) -> F::Output {
    futures_executor::block_on(f)
}

/// A review workflow: draft -> review -> approved (terminal) or back to draft.
fn routing() -> FsmRouting {
    FsmRouting::new([
        ("draft", vec!["review"]),
        ("review", vec!["approved", "draft"]),
    ])
}

fn pipeline(backend: &Scripted, routing: FsmRouting) -> Pipeline {
    Pipeline::new(
        Arc::new(backend.clone()),
        Config::new("test-model"),
        Chain::new().with(routing),
    )
}

fn reply(state: &str) -> String {
    json!({"answer": "ok", "state": state}).to_string()
}

fn in_state(state: &str) -> Context {
    let mut ctx = Context::default();
    ctx.insert(RoutingState::at(state));
    ctx
}

/// The routing state the pipeline left in the context.
#[track_caller]
fn routing_of(ctx: &Context) -> &RoutingState {
    ctx.get::<RoutingState>().expect("a routing state")
}

#[test]
fn a_state_not_allowed_is_a_violation_retried_then_accepted() {
    let backend = Scripted::replies([reply("approved"), reply("review")]);
    let p = pipeline(&backend, routing());
    let mut ctx = in_state("draft");
    let answer = block(p.ask(&mut ctx, "Please send the draft on.")).unwrap();
    assert_eq!(answer.retries(), 1);
    let first = &answer.attempts[0].violations;
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0].instance_pointer, "/state");
    assert_eq!(first[0].keyword, "enum");
    assert_eq!(routing_of(&ctx).current.as_deref(), Some("review"));
    assert_eq!(routing_of(&ctx).allowed, ["approved", "draft"]);
    insta::assert_snapshot!(
        "retry_prompt",
        backend.requests()[1].messages.last().unwrap().content
    );
}

#[test]
fn transitions_are_recorded_turn_after_turn() {
    let backend = Scripted::replies([
        reply("review"),
        reply("Draft"), // case coerced
        reply("review"),
        reply("approved"),
    ]);
    let p = pipeline(&backend, routing());
    let mut ctx = in_state("draft");
    for input in ["send", "revise", "send again", "approve"] {
        block(p.ask(&mut ctx, input)).unwrap();
    }
    let log = ctx.get::<Routes>().unwrap();
    let moves: Vec<(Option<&str>, &str, u64)> = log
        .0
        .iter()
        .map(|t| (t.from.as_deref(), t.to.as_str(), t.turn))
        .collect();
    assert_eq!(
        moves,
        [
            (Some("draft"), "review", 0),
            (Some("review"), "draft", 1),
            (Some("draft"), "review", 2),
            (Some("review"), "approved", 3),
        ]
    );
    assert!(routing_of(&ctx).allowed.is_empty());
    // Each request showed the states allowed at that turn.
    let systems: Vec<String> = backend
        .requests()
        .iter()
        .map(|r| r.system.clone().unwrap())
        .collect();
    assert!(systems[0].contains("You are in state `draft`. Set `state` to `review`"));
    assert!(systems[1].contains("one of: `approved`, `draft`."));
    // Approved is terminal: asking again is a routing error, before any request.
    let err = block(p.ask(&mut ctx, "and now?")).unwrap_err();
    assert!(
        matches!(&err, Error::Hook { interceptor, stage: Stage::PreSchema, .. } if interceptor == "fsm_routing"),
        "{err}"
    );
    assert_eq!(
        ErrorChain(&err).to_string(),
        "interceptor `fsm_routing` failed in pre_schema: state `approved` is terminal: it has no transitions"
    );
    assert_eq!(backend.calls(), 4);
}

#[test]
fn the_callers_allowed_states_route_without_a_table() {
    let backend = Scripted::replies([reply("left"), reply("right")]);
    let p = pipeline(&backend, FsmRouting::from_context());
    let mut ctx = Context::default();
    ctx.insert(RoutingState::allowing(["right", "up"]));
    let answer = block(p.ask(&mut ctx, "Which way?")).unwrap();
    assert_eq!(answer.retries(), 1);
    assert_eq!(
        ctx.get::<Routes>().unwrap().0,
        [Route {
            from: None,
            to: "right".into(),
            turn: 0,
        }]
    );
    assert!(
        routing_of(&ctx).allowed.is_empty(),
        "the caller sets the next ones"
    );
}

#[test]
fn delta_and_system_prompt() {
    let backend = Scripted::replies([reply("approved")]);
    let p = pipeline(&backend, routing());
    block(p.ask(&mut in_state("review"), "Is it good?")).unwrap();
    insta::assert_snapshot!(
        "system_prompt",
        backend.requests()[0].system.clone().unwrap()
    );
    let allowed = routing().allowed(&in_state("review")).unwrap().unwrap();
    insta::assert_json_snapshot!("delta", FsmRouting::delta(&allowed));
}

#[test]
fn composed_schema() {
    let backend = Scripted::replies([reply("draft")]);
    let mut config = Config::new("test-model");
    config.structured = StructuredMode::Native;
    let p = Pipeline::new(
        Arc::new(backend.clone()),
        config,
        Chain::new().with(routing()),
    );
    block(p.ask(&mut in_state("review"), "Is it good?")).unwrap();
    let schema = backend.requests()[0]
        .structured_output
        .clone()
        .unwrap()
        .schema;
    insta::assert_json_snapshot!("composed_schema", schema);
}
