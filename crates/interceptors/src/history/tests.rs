//! Tests of history windows: the bounds, and a window always opening on a user turn.

use claij_backends::Message;

use super::*;

/// A history of `turns` exchanges: `u0`, `a0`, `u1`, `a1`, ...
fn exchanges(turns: usize) -> History {
    let mut history = History::default();
    for n in 0..turns {
        history.push(Message::user(format!("u{n}")));
        history.push(Message::assistant(format!("a{n}")));
    }
    history
}

#[track_caller]
fn check(history: &History, policy: HistoryPolicy, expected: &[&str]) {
    let window: Vec<&str> = history
        .window(&policy)
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(window, expected);
}

fn policy(max_messages: usize, max_tokens: usize) -> HistoryPolicy {
    HistoryPolicy {
        max_messages,
        max_tokens,
    }
}

#[test]
fn windows() {
    let h = exchanges(3);
    check(
        &h,
        HistoryPolicy::default(),
        &["u0", "a0", "u1", "a1", "u2", "a2"],
    );
    check(&h, policy(4, 1000), &["u1", "a1", "u2", "a2"]);
    // An odd bound would open on an answer: the window starts at the next user turn.
    check(&h, policy(3, 1000), &["u2", "a2"]);
    check(&h, policy(1, 1000), &[]);
    // Each message is 1 + 4 estimated tokens: 15 tokens fit three, and the window opens on u2.
    check(&h, policy(100, 15), &["u2", "a2"]);
    check(&h, policy(100, 20), &["u1", "a1", "u2", "a2"]);
    check(&h, policy(100, 9), &[]);
    check(&h, HistoryPolicy::NONE, &[]);
    check(&h, policy(0, 1000), &[]);
    check(&h, policy(10, 0), &[]);
    check(&History::default(), HistoryPolicy::default(), &[]);
}

#[test]
fn a_window_never_opens_on_a_tool_result() {
    let mut h = History::default();
    h.push(Message::user("u0"));
    h.push(Message::assistant("calls"));
    h.push(Message {
        role: claij_backends::Role::Tool,
        ..Message::user("result")
    });
    h.push(Message::assistant("a0"));
    check(&h, policy(3, 1000), &[]);
    check(&h, policy(4, 1000), &["u0", "calls", "result", "a0"]);
}

#[test]
fn trim_keeps_the_window() {
    let mut h = exchanges(5);
    h.trim(&policy(4, 1000));
    assert_eq!(h, {
        let mut w = exchanges(5);
        w.messages.drain(..6);
        w
    });
    h.trim(&HistoryPolicy::NONE);
    assert!(h.is_empty());
}

#[test]
fn serde_round_trip_and_defaults() {
    let h = exchanges(2);
    let text = serde_json::to_string(&h).unwrap();
    assert_eq!(serde_json::from_str::<History>(&text).unwrap(), h);
    assert_eq!(
        serde_json::from_str::<History>("{}").unwrap(),
        History::default()
    );
    let p: HistoryPolicy = serde_json::from_str(r#"{"max_messages": 6}"#).unwrap();
    assert_eq!(p, policy(6, DEFAULT_HISTORY_TOKENS));
}

#[test]
fn tool_calls_count_in_the_estimate() {
    let call = claij_backends::ToolCall::new("c1", "weather", serde_json::json!({"city": "Oslo"}));
    // "weather" and {"city":"Oslo"}: 7 + 15 bytes, 6 tokens, plus 4.
    assert_eq!(
        estimate_tokens(&Message::assistant_calls("", vec![call])),
        10
    );
    assert_eq!(estimate_tokens(&Message::user("abcde")), 6);
}

proptest::proptest! {
    /// A window is a suffix of the history, within both bounds, opening on a user turn.
    #[test]
    fn windows_are_bounded_suffixes_opening_on_a_user_turn(
        roles in proptest::collection::vec(0u8..3, 0..40),
        max_messages in 0usize..30,
        max_tokens in 0usize..200,
    ) {
        let mut h = History::default();
        for (n, role) in roles.iter().enumerate() {
            let text = "x".repeat(n % 13);
            h.push(match role {
                0 => Message::user(text),
                1 => Message::assistant(text),
                _ => Message::tool_result(format!("c{n}"), text),
            });
        }
        let policy = policy(max_messages, max_tokens);
        let window = h.window(&policy);
        proptest::prop_assert!(h.messages.ends_with(window));
        proptest::prop_assert!(window.len() <= max_messages);
        proptest::prop_assert!(window.iter().map(estimate_tokens).sum::<usize>() <= max_tokens);
        if let Some(first) = window.first() {
            proptest::prop_assert_eq!(first.role, claij_backends::Role::User);
        }
    }
}
