//! Loading definitions: every problem at once with its pointer, the `xitions` alias, and the example
//! machines in `examples/fsm` (they load, their states' outputs are `oneOf`s, they route real events).

use std::path::PathBuf;

use claij_fsm::{Definition, DefinitionError, Error, Fsm};
use serde_json::{Value, json};

/// The text of `examples/fsm/<name>.json`.
pub(crate) fn example(name: &str) -> String {
    let path = examples_dir().join(format!("{name}.json"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/fsm")
}

fn definition_error(definition: Value) -> DefinitionError {
    let definition: Definition = serde_json::from_value(definition).unwrap();
    match Fsm::new(definition) {
        Err(Error::Definition(e)) => e,
        other => panic!("expected a definition error, got {other:?}"),
    }
}

fn lines(error: &DefinitionError) -> Vec<String> {
    error
        .problems
        .iter()
        .map(|p| format!("{}: {}", p.pointer, p.message))
        .collect()
}

/// A small valid machine, `ask` -> `end`, with `states` and `transitions` appended.
fn with(states: Value, transitions: Value) -> Value {
    let mut all_states = vec![json!({"id": "ask", "action": "llm"})];
    all_states.extend(states.as_array().unwrap().iter().cloned());
    let mut all_transitions = vec![
        json!({"id": ["start", "ask"]}),
        json!({"id": ["ask", "end"]}),
    ];
    all_transitions.extend(transitions.as_array().unwrap().iter().cloned());
    json!({"id": "m", "states": all_states, "transitions": all_transitions})
}

#[track_caller]
fn check(definition: Value, expected: &[&str]) {
    assert_eq!(lines(&definition_error(definition)), expected);
}

#[test]
fn each_problem_is_found_with_its_pointer() {
    check(
        with(json!([{"id": "ask", "action": "llm"}]), json!([])),
        &["/states/1/id: duplicate state `ask` (first at /states/0)"],
    );
    check(
        with(json!([]), json!([{"id": ["ask", "end"]}])),
        &["/transitions/2/id: duplicate transition [\"ask\", \"end\"] (first at /transitions/1)"],
    );
    check(
        with(json!([]), json!([{"id": ["ask", "nowhere"]}])),
        &["/transitions/2/id/1: unknown state `nowhere`"],
    );
    check(
        with(
            json!([{"id": "orphan", "action": "llm"}]),
            json!([{"id": ["orphan", "end"]}]),
        ),
        &["/states/1: `orphan` cannot be reached from `start`"],
    );
    check(
        with(
            json!([{"id": "stuck", "action": "llm"}]),
            json!([{"id": ["ask", "stuck"]}]),
        ),
        &["/states/1: `stuck` is not terminal and no transition leaves it"],
    );
    check(
        with(
            json!([]),
            json!([{"id": ["ask", "ask"], "schema": {"type": 12}}]),
        ),
        &[
            "/transitions/2/schema/type: invalid schema: not valid against the meta-schema: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'",
        ],
    );
    check(
        with(
            json!([{"id": "sub", "action": "fsm"}]),
            json!([{"id": ["ask", "sub"]}, {"id": ["sub", "end"]}]),
        ),
        &["/states/1/config: an `fsm` state names its sub-FSM: {\"fsm\": \"<id>\"}"],
    );
    check(
        with(json!([]), json!([{"id": ["ask", "start"]}])),
        &["/transitions/2/id/1: no transition may enter `start`"],
    );
    check(
        with(json!([]), json!([{"id": ["end", "ask"]}])),
        &["/transitions/2/id/0: `end` is terminal: nothing may leave it"],
    );
    check(
        json!({"id": "m", "states": [{"id": "ask"}], "transitions": [{"id": ["ask", "end"]}]}),
        &[
            "/transitions: no transition leaves `start`",
            "/states/0: `ask` cannot be reached from `start`",
        ],
    );
}

/// One definition with many problems: all are reported, in definition order, in one error.
#[test]
fn every_problem_at_once() {
    let error = definition_error(json!({
        "id": "broken",
        "states": [
            {"id": "ask", "action": "llm"},
            {"id": "ask", "action": "human"},
            {"id": "orphan", "action": "llm"},
            {"id": "sub", "action": "fsm", "config": {"trail": "full"}},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "ask"]},
            {"id": ["ask", "sub"]},
            {"id": ["ask", "sub"]},
            {"id": ["sub", "nowhere"]},
            {"id": ["ask", "end"], "schema": {"type": 12}}
        ]
    }));
    insta::assert_snapshot!("every_problem_at_once", report(&error));
}

/// A shared schema that does not compile, and a transition schema with its own mistake.
#[test]
fn a_broken_shared_schema() {
    let error = definition_error(json!({
        "id": "shared",
        "schemas": {"opinion": {"type": "object", "properties": {"text": {"type": "strin"}}}},
        "states": [{"id": "ask"}],
        "transitions": [
            {"id": ["start", "ask"], "schema": {"$ref": "#/$defs/opinion"}},
            {"id": ["ask", "end"], "schema": {"type": "object", "properties": {"n": {"type": "integr"}}}}
        ]
    }));
    insta::assert_snapshot!("a_broken_shared_schema", report(&error));
}

/// The error's `Display`, then its problems one per line.
fn report(error: &DefinitionError) -> String {
    format!("{error}\n\n{}\n", lines(error).join("\n"))
}

#[test]
fn xitions_is_an_alias_of_transitions() {
    let text = r#"{"id": "m", "states": [{"id": "ask"}],
        "xitions": [{"id": ["start", "ask"]}, {"id": ["ask", "end"]}]}"#;
    let definition = Definition::from_json(text).unwrap();
    assert_eq!(definition.transitions.len(), 2);
    let fsm = Fsm::from_json(text).unwrap();
    assert_eq!(fsm.definition().outgoing("ask").count(), 1);
}

#[test]
fn every_example_loads_with_one_of_outputs() {
    let mut names: Vec<String> = std::fs::read_dir(examples_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "adoption",
            "code-review",
            "release-note",
            "shipping",
            "tool-loop"
        ]
    );
    for name in &names {
        let fsm = Fsm::from_json(&example(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut states: Vec<&str> = vec!["start"];
        states.extend(fsm.definition().states.iter().map(|s| s.id.as_str()));
        for state in states {
            let exits = fsm.definition().outgoing(state).count();
            let schema = fsm.output_schema(state);
            match exits {
                0 => assert!(schema.is_none(), "{name} {state}"),
                1 => assert!(schema.unwrap().get("oneOf").is_none(), "{name} {state}"),
                n => {
                    let branches = schema.unwrap()["oneOf"].as_array();
                    assert_eq!(branches.map(Vec::len), Some(n), "{name} {state}");
                }
            }
            if exits > 0 {
                assert!(fsm.prompt(state).is_some(), "{name} {state}");
            }
        }
    }
}

/// `event`, emitted in `state` of example `name`, takes the transition to `to` (`None`: is rejected).
#[track_caller]
fn check_route(name: &str, state: &str, event: Value, to: Option<&str>) {
    let fsm = Fsm::from_json(&example(name)).unwrap();
    let routed = fsm.route(state, &event);
    match (routed, to) {
        (Ok(t), Some(to)) => assert_eq!(t.id.to, to),
        (Err(violations), None) => assert!(!violations.is_empty()),
        (Ok(t), None) => panic!("{name} {state}: accepted, to {}", t.id.to),
        (Err(violations), Some(_)) => panic!("{name} {state}: {violations:#?}"),
    }
}

#[test]
fn the_examples_route_their_events() {
    let tool_call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "hostname", "arguments": {}}});
    let content = json!({"content": [{"type": "text", "text": "box-7"}], "isError": false});
    let cases = [
        (
            "tool-loop",
            "start",
            json!({"id": ["start", "llm"], "request": "What is this machine's hostname?"}),
            Some("llm"),
        ),
        (
            "tool-loop",
            "llm",
            json!({"id": ["llm", "servicing"], "message": tool_call}),
            Some("servicing"),
        ),
        (
            "tool-loop",
            "servicing",
            json!({"id": ["servicing", "llm"],
            "message": {"jsonrpc": "2.0", "id": 1, "result": content}}),
            Some("llm"),
        ),
        (
            "tool-loop",
            "servicing",
            json!({"id": ["servicing", "llm"],
            "message": {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "unknown tool"}}}),
            Some("llm"),
        ),
        (
            "tool-loop",
            "llm",
            json!({"id": ["llm", "end"], "result": content}),
            Some("end"),
        ),
        // A tool call smuggled into the answer, and a call that is not `tools/call`.
        (
            "tool-loop",
            "llm",
            json!({"id": ["llm", "end"], "result": tool_call}),
            None,
        ),
        (
            "tool-loop",
            "llm",
            json!({"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": 1,
            "method": "tools/list", "params": {"name": "x", "arguments": {}}}}),
            None,
        ),
        (
            "code-review",
            "start",
            json!({"id": ["start", "chairman"], "code": "fn add(a: i32, b: i32) -> i32 { a - b }",
            "language": "rust"}),
            Some("chairman"),
        ),
        (
            "code-review",
            "chairman",
            json!({"id": ["chairman", "correctness-reviewer"],
            "focus": "does add add?"}),
            Some("correctness-reviewer"),
        ),
        (
            "code-review",
            "correctness-reviewer",
            json!({"id": ["correctness-reviewer", "chairman"],
            "comments": [{"where": "add", "severity": "blocker", "comment": "subtracts; use a + b"}],
            "summary": "wrong operator", "approve": false}),
            Some("chairman"),
        ),
        (
            "code-review",
            "chairman",
            json!({"id": ["chairman", "end"], "decision": "request-changes",
            "summary": "add subtracts", "required_changes": ["use a + b"]}),
            Some("end"),
        ),
        (
            "code-review",
            "chairman",
            json!({"id": ["chairman", "end"], "decision": "maybe",
            "summary": "?"}),
            None,
        ),
        (
            "code-review",
            "design-reviewer",
            json!({"id": ["design-reviewer", "chairman"],
            "comments": [{"severity": "style", "comment": "?"}], "summary": "", "approve": true}),
            None,
        ),
    ];
    for (name, state, event, to) in cases {
        check_route(name, state, event, to);
    }
}

/// What the chairman is told: the machine's, the state's and each transition's prompts, and the
/// schemas of its three ways out.
#[test]
fn code_review_chairman_prompt() {
    let fsm = Fsm::from_json(&example("code-review")).unwrap();
    insta::assert_snapshot!(
        "code_review_chairman_prompt",
        fsm.prompt("chairman").unwrap()
    );
}

/// A misspelt key is refused where it is, with the key it was probably meant to be; annotations
/// (`$...`, `x-...`) are kept and allowed.
#[test]
fn unknown_fields_are_refused_with_a_suggestion_and_annotations_kept() {
    let mut definition = with(
        json!([{"id": "wait", "action": "human", "prompt": "Approve?"}]),
        json!([
            {"id": ["ask", "wait"], "descripton": "ask a person", "x-owner": "ops"},
            {"id": ["wait", "end"]}
        ]),
    );
    definition["$comment"] = json!("reviewed in March");
    definition["x-team"] = json!("platform");
    definition["Prompts"] = json!(["Be brief."]);
    definition["colour"] = json!("blue");
    check(
        definition,
        &[
            "/Prompts: unknown field `Prompts`; did you mean `prompts`? (annotations may start with `$` or `x-`)",
            "/colour: unknown field `colour` (known: id, description, prompts, schemas, states, transitions) (annotations may start with `$` or `x-`)",
            "/states/1/prompt: unknown field `prompt`; did you mean `prompts`? (annotations may start with `$` or `x-`)",
            "/transitions/2/descripton: unknown field `descripton`; did you mean `description`? (annotations may start with `$` or `x-`)",
        ],
    );

    let mut annotated = with(json!([]), json!([]));
    annotated["$comment"] = json!("kept");
    annotated["states"][0]["x-owner"] = json!("ops");
    let definition: Definition = serde_json::from_value(annotated.clone()).unwrap();
    let fsm = Fsm::new(definition).unwrap();
    // Written back with its annotations, as read.
    let written = serde_json::to_value(fsm.definition()).unwrap();
    assert_eq!(written["$comment"], "kept");
    assert_eq!(written["states"][0]["x-owner"], "ops");
    // The original system's `xitions` is a name for `transitions`, not an unknown field.
    let mut old = with(json!([]), json!([]));
    let transitions = old.as_object_mut().unwrap().remove("transitions").unwrap();
    old["xitions"] = transitions;
    Fsm::new(serde_json::from_value(old).unwrap()).unwrap();
}

/// A misspelt `transitions` (or `states`) is named at its pointer with the key it was meant to be,
/// alone (what a machine without its transitions lacks would bury it); a list that is simply
/// missing is still a missing field.
#[test]
fn a_misspelt_top_level_list_is_named_not_reported_missing() {
    let mut misspelt = with(json!([]), json!([]));
    let transitions = misspelt
        .as_object_mut()
        .unwrap()
        .remove("transitions")
        .unwrap();
    misspelt["transitons"] = transitions;
    check(
        misspelt,
        &[
            "/transitons: unknown field `transitons`; did you mean `transitions`? (annotations may start with `$` or `x-`)",
        ],
    );
    let mut misspelt = with(json!([]), json!([]));
    let states = misspelt.as_object_mut().unwrap().remove("states").unwrap();
    misspelt["stats"] = states;
    check(
        misspelt,
        &[
            "/stats: unknown field `stats`; did you mean `states`? (annotations may start with `$` or `x-`)",
        ],
    );
    let mut missing = with(json!([]), json!([]));
    missing.as_object_mut().unwrap().remove("transitions");
    missing["colour"] = json!("blue");
    let err = serde_json::from_value::<Definition>(missing).unwrap_err();
    assert_eq!(err.to_string(), "missing field `transitions`");
    let err = Definition::from_json(r#"{"id": "x", "transitions": []}"#).unwrap_err();
    assert!(
        err.to_string().starts_with("missing field `states`"),
        "{err}"
    );
}

/// The values of a state's closed `config` settings (`trail`, `history`, `input`) are checked,
/// with the one probably meant; a custom action that looks like a misspelt built-in one says which.
#[test]
fn closed_config_values_and_misspelt_actions_get_a_suggestion() {
    check(
        with(
            json!([
                {"id": "sub", "action": "fsm", "config": {"fsm": "x", "trail": "ful"}},
                {"id": "ask2", "action": "llm", "config": {"history": "nothing", "input": 3}}
            ]),
            json!([{"id": ["ask", "sub"]}, {"id": ["sub", "ask2"]}, {"id": ["ask2", "end"]}]),
        ),
        &[
            "/states/1/config/trail: unknown trail \"ful\"; did you mean `full`? (one of: omit, summary, full)",
            "/states/2/config/history: unknown history \"nothing\" (one of: full, none)",
            "/states/2/config/input: unknown input 3 (one of: entered, start)",
        ],
    );
    // Known values pass.
    let fine = with(
        json!([{"id": "sub", "action": "fsm", "config": {"fsm": "x", "trail": "omit"}}]),
        json!([{"id": ["ask", "sub"]}, {"id": ["sub", "end"]}]),
    );
    Fsm::new(serde_json::from_value(fine).unwrap()).unwrap();

    let action = |name: &str| -> claij_fsm::Action { serde_json::from_value(json!(name)).unwrap() };
    assert_eq!(action("lm").misspelt_built_in(), Some("llm"));
    assert_eq!(action("Human").misspelt_built_in(), Some("human"));
    assert_eq!(action("servce").misspelt_built_in(), Some("service"));
    assert_eq!(action("summarise").misspelt_built_in(), None);
    assert_eq!(action("llm").misspelt_built_in(), None);
}
