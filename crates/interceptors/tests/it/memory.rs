//! Tests of the `memory` interceptor: the design's favourite-colour conversation, each strategy's
//! bounds, and snapshots of its schema deltas and prompt.

use std::sync::Arc;

use claij_backends::{ChatRequest, ChatResponse};
use claij_interceptors::builtin::memory::{Bounded, Hierarchical, Memory, MemoryStrategy, Window};
use claij_interceptors::{Chain, Config, Context, Interceptor, Pipeline, Prompts, Schema};
use claij_schema::AuditAction;
use claij_test_support::Scripted;
use futures_executor::block_on;
use serde_json::{Value, json};

fn system(request: &ChatRequest) -> &str {
    request.system.as_deref().unwrap_or_default()
}

fn reply(answer: &str, summary: &str) -> ChatResponse {
    ChatResponse::text(json!({"answer": answer, "state": "chat", "summary": summary}).to_string())
}

fn pipeline(backend: &Scripted, strategy: impl MemoryStrategy + 'static) -> Pipeline {
    let chain = Chain::new().with(Memory::new(strategy));
    Pipeline::new(Arc::new(backend.clone()), Config::new("test-model"), chain)
}

/// The design's memory test: a fact given on turn 1 is recalled on turn 3, after an unrelated turn.
#[test]
fn favourite_colour_is_remembered_over_three_turns() {
    let backend = Scripted::from_fn(|request, call| {
        let remembered = system(request).contains("- The user's favourite colour is blue.");
        Ok(match call {
            0 => reply("Noted: blue.", "The user's favourite colour is blue."),
            1 => reply("Paris.", "The user asked for the capital of France: Paris."),
            _ if remembered => reply("Blue.", "The user asked for their favourite colour: blue."),
            _ => reply(
                "I don't know.",
                "The user asked for their favourite colour.",
            ),
        })
    });
    let pipeline = pipeline(&backend, Bounded::default());
    let mut ctx = Context::default();
    block_on(pipeline.ask(&mut ctx, "Remember: my favourite colour is blue")).unwrap();
    block_on(pipeline.ask(&mut ctx, "What is the capital of France?")).unwrap();
    let third = block_on(pipeline.ask(&mut ctx, "What is my favourite colour?")).unwrap();

    assert_eq!(third.value["answer"], "Blue.");
    let requests = backend.requests();
    assert_eq!(requests.len(), 3, "every reply was valid the first time");
    assert!(!system(&requests[0]).contains("Previous context"));
    for later in &requests[1..] {
        assert!(system(later).contains("- The user's favourite colour is blue."));
    }
    assert_eq!(ctx.memory.summaries.len(), 3);
    insta::assert_snapshot!("favourite_colour_third_system_prompt", system(&requests[2]));
}

#[test]
fn window_recalls_only_the_last_summaries() {
    let backend = Scripted::from_fn(|_, call| Ok(reply("ok", &format!("fact {call}"))));
    let pipeline = pipeline(&backend, Window::new(2));
    let mut ctx = Context::default();
    for input in ["one", "two", "three", "four"] {
        block_on(pipeline.ask(&mut ctx, input)).unwrap();
    }
    assert_eq!(ctx.memory.summaries, ["fact 2", "fact 3"]);
    let last = &backend.requests()[3];
    assert!(!system(last).contains("- fact 0"));
    assert!(system(last).contains("- fact 1\n- fact 2"));
}

#[test]
fn bounded_stays_within_its_character_budget() {
    let backend =
        Scripted::from_fn(|_, call| Ok(reply("ok", &format!("summary number {call} ....."))));
    let pipeline = pipeline(&backend, Bounded::new(50, 10));
    let mut ctx = Context::default();
    for call in 0..5 {
        block_on(pipeline.ask(&mut ctx, "next")).unwrap();
        let total: usize = ctx.memory.summaries.iter().map(|s| s.chars().count()).sum();
        assert!(total <= 50, "turn {call}: {total} characters kept");
    }
    // Each summary is 22 characters: two fit.
    assert_eq!(
        ctx.memory.summaries,
        ["summary number 3 .....", "summary number 4 ....."]
    );
    let last = &backend.requests()[4];
    assert!(!system(last).contains("summary number 1"));
    assert!(system(last).contains("- summary number 2 .....\n- summary number 3 ....."));
}

#[test]
fn bounded_stays_within_its_count_budget() {
    let backend = Scripted::from_fn(|_, call| Ok(reply("ok", &format!("s{call}"))));
    let pipeline = pipeline(&backend, Bounded::new(1_000, 3));
    let mut ctx = Context::default();
    for _ in 0..5 {
        block_on(pipeline.ask(&mut ctx, "next")).unwrap();
    }
    assert_eq!(ctx.memory.summaries, ["s2", "s3", "s4"]);
}

/// Replies with insights exactly when the schema in the prompt asks for them.
fn hierarchical_backend() -> Scripted {
    Scripted::from_fn(|request, call| {
        let mut value = json!({"answer": "ok", "state": "chat", "summary": format!("s{call}")});
        if system(request).contains("long_term_insights") {
            value["long_term_insights"] = json!(format!("insights as of turn {call}"));
        }
        Ok(ChatResponse::text(value.to_string()))
    })
}

#[test]
fn hierarchical_asks_for_insights_on_refresh_turns_only() {
    let backend = hierarchical_backend();
    let pipeline = pipeline(&backend, Hierarchical::new(2));
    let mut ctx = Context::default();
    let mut kept = Vec::new();
    for _ in 0..5 {
        block_on(pipeline.ask(&mut ctx, "next")).unwrap();
        kept.push((ctx.memory.summaries.join(","), ctx.memory.insights.clone()));
    }
    let requests = backend.requests();
    assert_eq!(requests.len(), 5, "every reply was valid the first time");
    let asked: Vec<bool> = requests
        .iter()
        .map(|r| system(r).contains("long_term_insights"))
        .collect();
    assert_eq!(asked, [false, true, false, true, false]);

    let some = |s: &str| Some(s.to_owned());
    assert_eq!(
        kept,
        [
            ("s0".to_owned(), None),
            ("s1".to_owned(), some("insights as of turn 1")),
            ("s1,s2".to_owned(), some("insights as of turn 1")),
            ("s3".to_owned(), some("insights as of turn 3")),
            ("s3,s4".to_owned(), some("insights as of turn 3")),
        ]
    );
    assert!(system(&requests[2]).contains("Long-term insights:\ninsights as of turn 1"));

    // The insights extension is added and removed around each refresh turn.
    let insights: Vec<AuditAction> = pipeline
        .audit()
        .entries()
        .iter()
        .filter(|e| e.extension_id == "long-term-insights-v1")
        .map(|e| e.action)
        .collect();
    assert_eq!(
        insights,
        [
            AuditAction::Added,
            AuditAction::Removed,
            AuditAction::Added,
            AuditAction::Removed
        ]
    );
}

#[test]
fn a_reply_without_a_summary_fails_validation_and_is_retried() {
    let backend = Scripted::replies([
        json!({"answer": "ok", "state": "chat"}).to_string(),
        json!({"answer": "ok", "state": "chat", "summary": "fixed"}).to_string(),
    ]);
    let pipeline = pipeline(&backend, Bounded::default());
    let mut ctx = Context::default();
    let answer = block_on(pipeline.ask(&mut ctx, "hi")).unwrap();
    assert_eq!(answer.retries(), 1);
    assert_eq!(ctx.memory.summaries, ["fixed"]);
}

/// The deltas a memory interceptor adds on `turn`, as `{extension_id: delta}`.
fn deltas(memory: &Memory, turn: u64) -> Value {
    let mut ctx = Context::default();
    ctx.turn = turn;
    let mut schema = Schema::default();
    memory.pre_schema(&mut schema, &ctx).unwrap();
    schema
        .deltas()
        .iter()
        .map(|d| (d.extension_id.clone(), d.delta.clone()))
        .collect()
}

#[test]
fn schema_deltas() {
    let hierarchical = Memory::new(Hierarchical::new(3));
    assert_eq!(deltas(&hierarchical, 0), deltas(&Memory::default(), 0));
    insta::assert_json_snapshot!("summary_delta", deltas(&Memory::default(), 0));
    insta::assert_json_snapshot!("refresh_turn_deltas", deltas(&hierarchical, 2));
}

#[test]
fn prompt_is_empty_without_memory_and_recalls_it_otherwise() {
    let memory = Memory::new(Hierarchical::new(3));
    let mut ctx = Context::default();
    let mut prompts = Prompts::new("You are helpful.", "hi");
    memory.pre_prompt(&mut prompts, &ctx).unwrap();
    assert_eq!(prompts.system, "You are helpful.");

    ctx.memory.insights = Some("The user is planning a trip to Lisbon in May.".into());
    ctx.memory.summaries = vec![
        "The user's favourite colour is blue.".into(),
        "The user asked for a packing list; I suggested light clothes.".into(),
    ];
    memory.pre_prompt(&mut prompts, &ctx).unwrap();
    insta::assert_snapshot!("recall_prompt", prompts.system);
}
