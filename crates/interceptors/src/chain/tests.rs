//! Tests of [`Chain::carry`] and [`Chain::restore`]: what each built-in interceptor keeps for the
//! next turn survives a save into another process, and the next turn's prompt is the same.

use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::builtin::memory::Memory;
use crate::builtin::tools::Tools;
use crate::context::{ToolOrigin, ToolResult};
use crate::prompts::Prompts;

/// The system prompt `chain` builds for the next turn from `ctx`.
fn next_prompt(chain: &Chain, ctx: &Context) -> String {
    let mut prompts = Prompts::new("", "next");
    for link in chain.links() {
        link.interceptor.pre_prompt(&mut prompts, ctx).unwrap();
    }
    prompts.system
}

fn tools() -> Tools {
    Tools::new()
        .register("now", "The time.", json!({"type": "object"}), |_| async {
            Ok(json!("noon"))
        })
        .unwrap()
}

/// A context after a turn: memory, a tool result of each origin, and (with the feature) an `eval`
/// result.
fn after_a_turn() -> Context {
    let mut ctx = Context::default();
    ctx.turn = 3;
    ctx.memory.summaries = vec!["The user's favourite colour is blue.".into()];
    ctx.tool_results = vec![
        ToolResult {
            name: "now".into(),
            args: json!({}),
            output: Ok(json!("noon")),
            origin: ToolOrigin::Rust,
        },
        ToolResult {
            name: "time.get_current_time".into(),
            args: json!({"timezone": "UTC"}),
            output: Err("timed out after 30s".into()),
            origin: ToolOrigin::Mcp {
                server: "time".into(),
            },
        },
    ];
    #[cfg(feature = "eval")]
    ctx.insert(crate::builtin::eval::Eval::new().run_blocking("print(\"hi\"); 6 * 7"));
    ctx
}

fn chain() -> Chain {
    let chain = Chain::new().with(Memory::default()).with(tools());
    #[cfg(feature = "eval")]
    let chain = chain.with(crate::builtin::eval::Eval::new());
    chain
}

#[test]
fn what_is_carried_shows_the_same_prompt_on_the_next_turn() {
    let chain = chain();
    let ctx = after_a_turn();
    let carried = chain.carry(&ctx).unwrap();
    let mut names: Vec<&str> = vec!["memory", "tools"];
    if cfg!(feature = "eval") {
        names.insert(0, "eval");
    }
    assert_eq!(
        carried.keys().map(String::as_str).collect::<Vec<_>>(),
        names
    );
    // Through JSON, as a session file keeps it.
    let text = serde_json::to_string(&carried).unwrap();
    let read: BTreeMap<String, Carried> = serde_json::from_str(&text).unwrap();
    let mut next = Context::default();
    next.turn = ctx.turn;
    chain.restore(&read, &mut next).unwrap();

    let live = next_prompt(&chain, &ctx);
    assert!(
        live.contains("- The user's favourite colour is blue."),
        "{live}"
    );
    assert!(live.contains("1. now {}\n   ok: \"noon\""), "{live}");
    if cfg!(feature = "eval") {
        assert!(
            live.contains(
                "Result of the `eval` code of your previous reply:\nok: 42\nprinted:\nhi"
            ),
            "{live}"
        );
    }
    assert_eq!(next_prompt(&chain, &next), live);
    // The tools interceptor carries only its own results: the MCP one is the MCP interceptor's.
    assert_eq!(next.tool_results, ctx.tool_results[..1]);
    assert_eq!(chain.carry(&next).unwrap(), carried);
}

/// Each interceptor's state is its own: dropping one from what was saved loses exactly what it
/// showed (the mutation a session file's test must catch).
#[test]
fn each_interceptor_restores_only_its_own_state() {
    let chain = chain();
    let ctx = after_a_turn();
    let carried = chain.carry(&ctx).unwrap();
    for name in carried.keys() {
        let mut without = carried.clone();
        without.remove(name);
        let mut next = Context::default();
        chain.restore(&without, &mut next).unwrap();
        assert_ne!(
            next_prompt(&chain, &next),
            next_prompt(&chain, &ctx),
            "{name}"
        );
        let restored = chain.carry(&next).unwrap();
        assert_eq!(restored, without, "{name}");
    }
}

/// Nothing kept, nothing carried; a state from a newer format, or malformed, is an error naming
/// the interceptor and the stage, never a silent loss.
#[test]
fn unreadable_states_are_refused_by_name() {
    let chain = chain();
    assert!(chain.carry(&Context::default()).unwrap().is_empty());
    let mut carried = chain.carry(&after_a_turn()).unwrap();
    carried.insert(
        "memory".into(),
        Carried {
            version: 2,
            state: json!({"summaries": []}),
        },
    );
    let err = chain
        .restore(&carried, &mut Context::default())
        .unwrap_err();
    assert_eq!(
        crate::ErrorChain(&err).to_string(),
        "interceptor `memory` failed in restore: saved in version 2 of its format, newer than this \
         claij reads (up to 1)"
    );
    carried.insert(
        "memory".into(),
        Carried {
            version: 1,
            state: json!({"summaries": "blue"}),
        },
    );
    let err = chain
        .restore(&carried, &mut Context::default())
        .unwrap_err();
    let text = crate::ErrorChain(&err).to_string();
    assert!(
        text.starts_with(
            "interceptor `memory` failed in restore: not a version 1 state: invalid type"
        ),
        "{text}"
    );
    // A state of an interceptor the chain does not have is not read.
    let mut other = BTreeMap::new();
    other.insert(
        "vector-store".to_owned(),
        Carried {
            version: 9,
            state: json!(null),
        },
    );
    chain.restore(&other, &mut Context::default()).unwrap();
}
