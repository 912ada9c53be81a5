//! Unit tests of routing: allowed states, the delta, the prompt, transitions.

use serde_json::json;

use super::*;

fn table() -> FsmRouting {
    FsmRouting::new([
        ("draft", vec!["review", "draft", "review"]),
        ("review", vec!["approved", "draft"]),
    ])
}

fn ctx(state: Option<&str>, allowed: &[&str]) -> Context {
    let mut ctx = Context::default();
    ctx.insert(RoutingState {
        current: state.map(str::to_owned),
        allowed: allowed.iter().map(|s| (*s).to_owned()).collect(),
    });
    ctx
}

/// The context's routing state, which a move always leaves there.
#[track_caller]
fn at(ctx: &Context) -> &RoutingState {
    ctx.get::<RoutingState>().expect("a routing state")
}

#[track_caller]
fn check(
    routing: &FsmRouting,
    state: Option<&str>,
    allowed: &[&str],
    expected: Result<Option<&[&str]>, RoutingError>,
) {
    let got = routing.allowed(&ctx(state, allowed));
    let expected = expected.map(|o| o.map(|a| a.iter().map(|s| (*s).to_owned()).collect()));
    assert_eq!(got, expected);
}

#[test]
fn allowed_states_come_from_the_table_then_the_context() {
    let t = table();
    let none = FsmRouting::from_context();
    check(&t, Some("draft"), &[], Ok(Some(&["review", "draft"])));
    // The table wins over the context when it knows the current state.
    check(
        &t,
        Some("review"),
        &["draft"],
        Ok(Some(&["approved", "draft"])),
    );
    // No current state: the context decides, duplicates dropped.
    check(&t, None, &["draft", "draft"], Ok(Some(&["draft"])));
    check(&t, None, &[], Ok(None));
    check(&none, Some("x"), &["a", "b"], Ok(Some(&["a", "b"])));
    check(&none, Some("x"), &[], Ok(None));
    check(
        &t,
        Some("approved"),
        &[],
        Err(RoutingError::Terminal {
            state: "approved".into(),
        }),
    );
    check(
        &t,
        Some("lost"),
        &["draft"],
        Err(RoutingError::UnknownState {
            state: "lost".into(),
        }),
    );
}

#[test]
fn delta_and_prompt() {
    let allowed = vec!["review".to_owned(), "draft".to_owned()];
    assert_eq!(
        FsmRouting::delta(&allowed),
        json!({"properties": {"state": {"enum": ["review", "draft"]}}, "required": ["state"]})
    );
    assert_eq!(
        FsmRouting::prompt(Some("draft"), &allowed),
        "You are in state `draft`. Set `state` to the next state, one of: `review`, `draft`."
    );
    assert_eq!(
        FsmRouting::prompt(None, &allowed[..1]),
        "Set `state` to `review`, the only next state."
    );
}

#[test]
fn a_transition_moves_the_context_and_is_logged() {
    let t = table();
    let mut c = ctx(Some("draft"), &[]);
    c.turn = 4;
    let moved = t.transition(&json!({"state": "review"}), &mut c).unwrap();
    let expected = Route {
        from: Some("draft".into()),
        to: "review".into(),
        turn: 4,
    };
    assert_eq!(moved, Some(expected.clone()));
    assert_eq!(at(&c).current.as_deref(), Some("review"));
    assert_eq!(at(&c).allowed, ["approved", "draft"]);
    t.transition(&json!({"state": "approved"}), &mut c).unwrap();
    assert!(at(&c).allowed.is_empty(), "approved is terminal");
    let log = c.get::<Routes>().unwrap();
    assert_eq!(log.0.len(), 2);
    assert_eq!(log.0[0], expected);
}

#[test]
fn without_a_table_the_allowed_states_are_cleared_after_a_move() {
    let routing = FsmRouting::from_context();
    let mut c = ctx(None, &["a", "b"]);
    routing.transition(&json!({"state": "b"}), &mut c).unwrap();
    assert_eq!(at(&c).current.as_deref(), Some("b"));
    assert!(at(&c).allowed.is_empty());
    // Inactive routing still follows the state, and a response without one changes nothing.
    routing.transition(&json!({"state": "c"}), &mut c).unwrap();
    assert_eq!(routing.transition(&json!({}), &mut c), Ok(None));
    assert_eq!(at(&c).current.as_deref(), Some("c"));
    assert_eq!(c.get::<Routes>().unwrap().0.len(), 2);
}

#[test]
fn a_state_outside_the_allowed_ones_is_refused() {
    let t = table();
    let mut c = ctx(Some("draft"), &[]);
    let err = t
        .transition(&json!({"state": "approved"}), &mut c)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "transition from `draft` to `approved` is not allowed (allowed: review, draft)"
    );
    assert_eq!(
        t.transition(&json!({"answer": "x"}), &mut c),
        Err(RoutingError::MissingState)
    );
    assert_eq!(at(&c).current.as_deref(), Some("draft"), "unchanged");
    assert!(c.get::<Routes>().is_none());
}

#[test]
fn the_routing_state_is_a_typed_extension_of_the_context() {
    let t = table();
    // No routing state: nothing to constrain, even with a table.
    let mut c = Context::default();
    assert_eq!(t.allowed(&c), Ok(None));
    // The first move stores one, beside the context's other extensions.
    c.insert(Routes::default());
    t.transition(&json!({"state": "draft"}), &mut c).unwrap();
    assert_eq!(
        c.get::<RoutingState>(),
        Some(&RoutingState {
            current: Some("draft".into()),
            allowed: vec!["review".into(), "draft".into()],
        })
    );
    assert_eq!(
        t.allowed(&c),
        Ok(Some(vec!["review".into(), "draft".into()]))
    );
    // Taken out and put back (as a caller carrying it between runs would), it routes the same.
    let kept = c.remove::<RoutingState>().unwrap();
    assert_eq!(t.allowed(&c), Ok(None));
    let json = serde_json::to_value(&kept).unwrap();
    assert_eq!(
        json,
        json!({"current": "draft", "allowed": ["review", "draft"]})
    );
    c.insert(serde_json::from_value::<RoutingState>(json).unwrap());
    assert_eq!(
        t.allowed(&c),
        Ok(Some(vec!["review".into(), "draft".into()]))
    );
}

#[test]
fn routing_state_constructors() {
    assert_eq!(
        RoutingState::at("draft"),
        RoutingState {
            current: Some("draft".into()),
            allowed: Vec::new(),
        }
    );
    assert_eq!(
        RoutingState::allowing(["a", "b"]),
        RoutingState {
            current: None,
            allowed: vec!["a".into(), "b".into()],
        }
    );
    assert_eq!(
        serde_json::from_value::<RoutingState>(json!({})).unwrap(),
        RoutingState::default()
    );
}
