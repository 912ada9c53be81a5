//! Random stacks of built-in interceptors: any subset in any order composes a schema that compiles,
//! with no rejected delta, byte-identically every time, with the same fields whatever the order, and
//! with exactly the fields its interceptors add on their own.

use std::collections::BTreeSet;
use std::sync::Arc;

use claij_interceptors::builtin::citations::{Citations, Document};
use claij_interceptors::builtin::fsm_routing::{FsmRouting, RoutingState};
use claij_interceptors::builtin::memory::{Hierarchical, Memory};
use claij_interceptors::builtin::metrics::Metrics;
use claij_interceptors::builtin::proposals::{Decision, Proposal, Proposals};
use claij_interceptors::builtin::tools::Tools;
use claij_interceptors::{
    Chain, Config, Context, Error, Interceptor, OnError, Pipeline, StructuredMode, ToolOrigin,
    ToolResult,
};
use claij_test_support::Scripted;
use claij_validation::Validator;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Makes a fresh interceptor.
type Make = fn() -> Arc<dyn Interceptor>;

/// Every built-in by name; [`context`] gives each what it needs to contribute its delta and prompt.
fn builtins() -> Vec<(&'static str, Make)> {
    let all: Vec<(&'static str, Make)> = vec![
        ("fsm_routing", || {
            Arc::new(FsmRouting::new([
                ("draft", vec!["review"]),
                ("review", vec!["approved", "draft"]),
            ]))
        }),
        ("metrics", || Arc::new(Metrics::new())),
        ("memory", || Arc::new(Memory::new(Hierarchical::new(1)))),
        ("citations", || {
            Arc::new(Citations::new(vec![Document::new(
                "n1",
                "Colours",
                "The user's favourite colour is blue.",
            )]))
        }),
        ("proposals", || {
            Arc::new(Proposals::new(|_: &Proposal, _: &Context| {
                Decision::Approve
            }))
        }),
        ("tools", || Arc::new(tools())),
    ];
    #[cfg(feature = "eval")]
    let all = [
        all,
        vec![("eval", || {
            Arc::new(claij_interceptors::builtin::eval::Eval::new()) as Arc<dyn Interceptor>
        })],
    ]
    .concat();
    all
}

// The arguments of a typed tool (no doc comment: it would become a description the model sees).
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

/// Three tools: plain arguments, arguments with `$defs` and `$ref`s (moved into the composed schema's
/// `$defs`), typed arguments.
fn tools() -> Tools {
    let place =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    Tools::new()
        .register(
            "weather",
            "Today's weather in a city.",
            place.clone(),
            |_| async { Ok(json!("sunny")) },
        )
        .and_then(|t| {
            t.register(
                "route",
                "A route between two places.",
                json!({
                    "type": "object",
                    "properties": {"from": {"$ref": "#/$defs/place"}, "to": {"$ref": "#/$defs/place"}},
                    "required": ["from", "to"],
                    "$defs": {"place": place},
                }),
                |_| async { Ok(json!("north")) },
            )
        })
        .and_then(|t| {
            t.register_typed("add", "Adds two integers.", |args: Add| async move {
                Ok(args.a + args.b)
            })
        })
        .unwrap()
}

/// A context in which every built-in has something to say.
fn context() -> Context {
    let mut ctx = Context::default();
    ctx.insert(RoutingState::at("review"));
    ctx.memory.summaries = vec!["The user asked for a review of their draft.".into()];
    ctx.tool_results = vec![ToolResult {
        name: "weather".into(),
        args: json!({"city": "Paris"}),
        output: Ok(json!("sunny")),
        origin: ToolOrigin::Rust,
    }];
    ctx
}

fn chain(stack: &[usize]) -> Chain {
    let mut chain = Chain::new();
    for &i in stack {
        chain.push_shared((builtins()[i].1)(), OnError::Fail);
    }
    chain
}

/// What a stack shows the model: the composed schema (sent natively) and the system prompt (the
/// schema in the prompt), from a fresh pipeline and backend.
fn composed(stack: &[usize]) -> (String, String) {
    let system = {
        let backend = Scripted::replies(["{}"]);
        let mut config = Config::new("test-model");
        config.structured = StructuredMode::Prompted;
        config.max_retries = 0;
        let p = Pipeline::new(Arc::new(backend.clone()), config, chain(stack));
        sent_or_invalid(futures_executor::block_on(p.ask(&mut context(), "Go on.")));
        backend.requests()[0].system.clone().unwrap_or_default()
    };
    let backend = Scripted::replies(["{}", "{}"]);
    let mut config = Config::new("test-model");
    config.structured = StructuredMode::Native;
    config.max_retries = 0;
    let p = Pipeline::new(Arc::new(backend.clone()), config, chain(stack));
    sent_or_invalid(futures_executor::block_on(p.ask(&mut context(), "Go on.")));
    // The same pipeline again (its memoized schema) sends the same bytes.
    sent_or_invalid(futures_executor::block_on(p.ask(&mut context(), "Go on.")));
    let requests = backend.requests();
    let schema = |i: usize| {
        let output = requests[i]
            .structured_output
            .as_ref()
            .expect("native schema");
        serde_json::to_string(&output.schema).unwrap()
    };
    assert_eq!(schema(0), schema(1), "a pipeline's second call");
    (schema(0), system)
}

/// The call got as far as the model: `{}` is invalid for every stack, any other error (a hook, a
/// rejected delta) is a failure of the stack.
#[track_caller]
fn sent_or_invalid<T: std::fmt::Debug>(result: Result<T, Error>) {
    match result {
        Err(Error::RetriesExhausted(_)) => {}
        other => panic!("the stack failed before the model: {other:?}"),
    }
}

/// The fields of a schema and the required ones, whatever their order.
fn shape(schema: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let schema: Value = serde_json::from_str(schema).unwrap();
    let names = |v: &Value| -> BTreeSet<String> {
        match v {
            Value::Object(m) => m.keys().cloned().collect(),
            Value::Array(a) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => BTreeSet::new(),
        }
    };
    (names(&schema["properties"]), names(&schema["required"]))
}

fn stacks() -> impl Strategy<Value = Vec<usize>> {
    let n = builtins().len();
    proptest::sample::subsequence((0..n).collect::<Vec<_>>(), 0..=n).prop_shuffle()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn any_stack_composes_compiles_and_is_deterministic(stack in stacks()) {
        let (schema, system) = composed(&stack);
        let value: Value = serde_json::from_str(&schema).unwrap();
        prop_assert!(Validator::new(&value).is_ok(), "{schema}");
        let (again, system_again) = composed(&stack);
        prop_assert_eq!(&schema, &again, "same stack, fresh pipeline");
        prop_assert_eq!(&system, &system_again);
        let mut sorted = stack.clone();
        sorted.sort_unstable();
        let (in_order, _) = composed(&sorted);
        prop_assert_eq!(shape(&schema), shape(&in_order), "the order changes no field");
        // Composition only adds: the stack's fields are the union of each interceptor's alone.
        let mut union = shape(&composed(&[]).0);
        for &i in &stack {
            let (properties, required) = shape(&composed(&[i]).0);
            union.0.extend(properties);
            union.1.extend(required);
        }
        prop_assert_eq!(shape(&schema), union, "each interceptor's fields, no more, no fewer");
    }
}

#[test]
fn the_full_stack() {
    let builtins = builtins();
    let all: Vec<usize> = (0..builtins.len()).collect();
    let names: Vec<&str> = builtins.iter().map(|b| b.0).collect();
    assert_eq!(
        chain(&all).names(),
        names,
        "builtins() names its interceptors"
    );
    let (schema, system) = composed(&all);
    let schema: Value = serde_json::from_str(&schema).unwrap();
    // The snapshots show the default build, with every built-in.
    if cfg!(feature = "eval") {
        insta::assert_json_snapshot!("full_stack_schema", schema);
        insta::assert_snapshot!("full_stack_system_prompt", system);
    }
}
