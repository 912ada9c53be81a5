//! Tests of the conversation history a pipeline keeps in the context: what each request carries,
//! the window, plain text, opting out, and a caller replaying its own history.

use std::sync::Arc;

use claij_backends::{Message, Role};
use claij_interceptors::{Chain, Config, Context, History, HistoryPolicy, Pipeline, from_fn};
use claij_test_support::Scripted;

fn block<F: std::future::Future>(f: F) -> F::Output {
    futures_executor::block_on(f)
}

fn pipeline(backend: &Scripted, config: Config, chain: Chain) -> Pipeline {
    Pipeline::new(Arc::new(backend.clone()), config, chain)
}

fn roles(messages: &[Message]) -> Vec<Role> {
    messages.iter().map(|m| m.role).collect()
}

#[test]
fn the_second_turn_carries_the_first_as_history() {
    // The first reply needs repairs (fences, a trailing comma): the history keeps the valid value.
    let backend = Scripted::replies([
        "```json\n{\"answer\": \"Paris\", \"state\": \"done\",}\n```",
        r#"{"answer": "about 2.1 million", "state": "done"}"#,
    ]);
    let p = pipeline(&backend, Config::new("test-model"), Chain::new());
    let mut ctx = Context::default();
    block(p.ask(&mut ctx, "What is the capital of France?")).unwrap();
    block(p.ask(&mut ctx, "How many people live there?")).unwrap();
    let requests = backend.requests();
    assert_eq!(roles(&requests[0].messages), [Role::User]);
    insta::assert_json_snapshot!("second_turn_request", requests[1]);
    assert_eq!(ctx.history.len(), 4);
    assert_eq!(
        ctx.history.messages[3].content,
        r#"{"answer":"about 2.1 million","state":"done"}"#
    );
}

#[test]
fn the_window_bounds_what_is_sent_and_kept() {
    let replies: Vec<String> = (0..4)
        .map(|n| format!(r#"{{"answer": "{n}", "state": "done"}}"#))
        .collect();
    let backend = Scripted::replies(replies);
    let mut config = Config::new("test-model");
    config.history = HistoryPolicy {
        max_messages: 4,
        ..HistoryPolicy::default()
    };
    let p = pipeline(&backend, config, Chain::new());
    let mut ctx = Context::default();
    for n in 0..4 {
        block(p.ask(&mut ctx, &format!("question {n}"))).unwrap();
    }
    let requests = backend.requests();
    let last = &requests[3];
    let sent: Vec<&str> = last.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(sent[0], "question 1");
    assert_eq!(sent.len(), 5);
    assert_eq!(ctx.history.len(), 4);
    assert_eq!(ctx.history.messages[0].content, "question 2");
}

#[test]
fn plain_text_answers_are_kept_as_text() {
    let backend = Scripted::replies(["Paris.", "About two million."]);
    let p = pipeline(&backend, Config::new("test-model"), Chain::new()).with_plain_text();
    let mut ctx = Context::default();
    block(p.ask(&mut ctx, "Capital of France?")).unwrap();
    block(p.ask(&mut ctx, "Population?")).unwrap();
    let requests = backend.requests();
    let second = &requests[1];
    assert_eq!(second.messages[1], Message::assistant("Paris."));
}

#[test]
fn no_history_policy_sends_and_keeps_nothing() {
    let backend = Scripted::replies([
        r#"{"answer": "a", "state": "done"}"#,
        r#"{"answer": "b", "state": "done"}"#,
    ]);
    let mut config = Config::new("test-model");
    config.history = HistoryPolicy::NONE;
    let p = pipeline(&backend, config, Chain::new());
    let mut ctx = Context::default();
    ctx.history.push(Message::user("stale"));
    block(p.ask(&mut ctx, "one")).unwrap();
    block(p.ask(&mut ctx, "two")).unwrap();
    for request in backend.requests() {
        assert_eq!(roles(&request.messages), [Role::User]);
    }
    assert!(ctx.history.is_empty());
}

/// A caller that replays its own conversation (the FSM replays its trail) sets `prompts.history` in
/// `pre_prompt`: it replaces the pipeline's, so nothing is sent twice.
#[test]
fn a_hook_setting_the_history_replaces_the_pipelines() {
    let backend = Scripted::replies([
        r#"{"answer": "a", "state": "done"}"#,
        r#"{"answer": "b", "state": "done"}"#,
    ]);
    let replay = from_fn("replay").pre_prompt(|prompts, _| {
        prompts.history = vec![Message::user("trail"), Message::assistant("event")];
        Ok(())
    });
    let p = pipeline(
        &backend,
        Config::new("test-model"),
        Chain::new().with(replay),
    );
    let mut ctx = Context::default();
    block(p.ask(&mut ctx, "one")).unwrap();
    block(p.ask(&mut ctx, "two")).unwrap();
    let requests = backend.requests();
    let sent: Vec<&str> = requests[1]
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(sent, ["trail", "event", "two"]);
}

#[test]
fn a_restored_history_is_sent() {
    let stored = r#"{"messages": [{"role": "user", "content": "Hi, I am Ada."},
        {"role": "assistant", "content": "{\"answer\":\"Hello Ada\",\"state\":\"done\"}"}]}"#;
    let backend = Scripted::replies([r#"{"answer": "Ada", "state": "done"}"#]);
    let p = pipeline(&backend, Config::new("test-model"), Chain::new());
    let mut ctx = Context::default();
    ctx.history = serde_json::from_str::<History>(stored).unwrap();
    block(p.ask(&mut ctx, "What is my name?")).unwrap();
    let requests = backend.requests();
    let request = &requests[0];
    assert_eq!(
        roles(&request.messages),
        [Role::User, Role::Assistant, Role::User]
    );
    assert_eq!(request.messages[0].content, "Hi, I am Ada.");
}
