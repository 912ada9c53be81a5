//! The example reply in the system prompt: where it is shown (prompted delivery, grammar-constrained
//! local decoding) and where not (hosted structured output), what it is for the built-in deltas, and
//! the `states` interceptor constraining `state`.

use std::sync::Arc;

use claij_backends::{Capabilities, ChatRequest, SchemaDialect};
use claij_interceptors::builtin::memory::{Memory, insights_delta, summary_delta};
use claij_interceptors::builtin::states::States;
use claij_interceptors::builtin::{citations, fsm_routing::FsmRouting, proposals};
use claij_interceptors::{
    Chain, Config, Context, EXAMPLE_INTRO, Pipeline, SchemaFormat, ShowExample, StructuredMode,
};
use claij_schema::{SchemaDelta, base, compose, example};
use claij_test_support::Scripted;
use futures_executor::block_on;
use serde_json::{Value, json};

const VALID: &str = r#"{"answer": "Paris is the capital.", "state": "answered", "summary": "The user asked for the capital of France."}"#;

fn system(request: &ChatRequest) -> String {
    request.system.clone().unwrap_or_default()
}

/// The system prompt of one `ask` through a chain of memory and states, with `capabilities`.
fn first_system(
    capabilities: Capabilities,
    config: impl FnOnce(&mut Config),
) -> (String, ChatRequest) {
    let backend = Scripted::replies([VALID]).with_capabilities(capabilities);
    let mut knobs = Config::new("m");
    config(&mut knobs);
    let chain = Chain::new()
        .with(Memory::default())
        .with(States::conversation());
    let pipeline = Pipeline::new(Arc::new(backend.clone()), knobs, chain);
    block_on(pipeline.ask(&mut Context::default(), "What is the capital of France?")).unwrap();
    let request = backend.requests().remove(0);
    (system(&request), request)
}

const EXAMPLE: &str = r#"{"answer":"...","state":"answered","summary":"..."}"#;

#[test]
fn prompted_shows_the_example_before_the_schema() {
    let (system, _) = first_system(Capabilities::prompted(), |_| {});
    let example = system.find(EXAMPLE).expect("the example is shown");
    let schema = system.find("Respond with only a JSON value").unwrap();
    assert!(example < schema, "{system}");
    insta::assert_snapshot!("prompted_system_prompt", system);
}

#[test]
fn the_local_models_grammar_gets_the_example_too() {
    let local = Capabilities::prompted().with_schema_dialect(SchemaDialect::Llguidance);
    let (system, request) = first_system(local, |_| {});
    assert!(request.structured_output.is_some());
    assert_eq!(system, format!("{EXAMPLE_INTRO}\n{EXAMPLE}"));
}

#[test]
fn hosted_structured_output_gets_it_only_when_asked() {
    let hosted = || Capabilities::prompted().with_schema_dialect(SchemaDialect::OpenAiStrict);
    let (system, request) = first_system(hosted(), |_| {});
    assert!(request.structured_output.is_some());
    assert_eq!(system, "");
    let (system, _) = first_system(hosted(), |c| c.example = ShowExample::Always);
    assert!(system.contains(EXAMPLE), "{system}");
}

#[test]
fn never_and_described_show_none() {
    let (system, _) = first_system(Capabilities::prompted(), |c| c.example = ShowExample::Never);
    assert!(!system.contains(EXAMPLE_INTRO), "{system}");
    assert!(
        system.contains("Respond with only a JSON value"),
        "{system}"
    );
    let (system, _) = first_system(Capabilities::prompted(), |c| {
        c.schema_format = SchemaFormat::Described;
        c.structured = StructuredMode::Prompted;
    });
    assert!(!system.contains(EXAMPLE_INTRO), "{system}");
}

#[test]
fn a_state_outside_the_declared_set_is_retried() {
    let backend = Scripted::replies([
        r#"{"answer": "Paris.", "state": "France", "summary": "s"}"#,
        VALID,
    ]);
    let chain = Chain::new()
        .with(Memory::default())
        .with(States::conversation());
    let pipeline = Pipeline::new(Arc::new(backend.clone()), Config::new("m"), chain);
    let answer = block_on(pipeline.ask(&mut Context::default(), "Capital of France?")).unwrap();
    assert_eq!(answer.retries(), 1);
    let violations = &answer.attempts[0].violations;
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(violations[0].instance_pointer, "/state");
    assert_eq!(violations[0].keyword, "enum");
    assert_eq!(answer.value["state"], "answered");
}

/// Every built-in delta, composed onto the base schema alone and with the states delta, has a valid
/// example; descriptions never appear in it.
#[test]
fn every_builtin_delta_has_an_example() {
    let tools = claij_interceptors::builtin::tools::Tools::new()
        .register(
            "weather",
            "Today's weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            |_| async { Ok(json!("sunny")) },
        )
        .unwrap();
    let deltas: Vec<(&str, Value)> = vec![
        ("summary", summary_delta()),
        ("insights", insights_delta()),
        ("citations", citations::delta()),
        ("proposals", proposals::delta()),
        (
            "eval",
            claij_interceptors::builtin::eval::Eval::new().schema_delta(),
        ),
        ("tools", tools.schema_delta().unwrap()),
        (
            "routing",
            FsmRouting::delta(&["review".to_owned(), "draft".to_owned()]),
        ),
        ("states", States::conversation().delta()),
    ];
    let states = SchemaDelta::new("states-v1", "states", States::conversation().delta());
    for (name, delta) in deltas {
        let delta = SchemaDelta::new(format!("{name}-v1"), name, delta);
        let mut stacks = vec![vec![delta.clone()]];
        if name != "routing" && name != "states" {
            stacks.push(vec![delta, states.clone()]);
        }
        for stack in stacks {
            let schema = compose(&base(), &stack).unwrap();
            let instance = example(&schema).unwrap_or_else(|e| panic!("{name}: {e}"));
            let text = instance.to_string();
            assert!(!text.contains("the reply itself"), "{name}: {text}");
            insta::with_settings!({snapshot_suffix => format!("{name}-{}", stack.len())}, {
                insta::assert_snapshot!("builtin_example", text);
            });
        }
    }
}
