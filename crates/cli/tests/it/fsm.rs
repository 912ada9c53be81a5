//! `claij fsm validate` and `claij fsm render`: summaries, problems one per line, diagrams, exit codes.

use std::process::{Command, Stdio};

use super::{Files, assert_one_line_error, claij, claij_env};

fn example(name: &str) -> String {
    format!(
        "{}/../../examples/fsm/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Every problem at once: a duplicate state, a duplicate transition, an unknown and an unreachable
/// state, a schema that does not compile, a sub-FSM state naming no machine.
const BROKEN: &str = r#"{
  "id": "broken",
  "states": [
    {"id": "ask", "action": "llm"},
    {"id": "ask", "action": "human"},
    {"id": "orphan", "action": "llm"},
    {"id": "sub", "action": "fsm"},
    {"id": "end", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "ask"]},
    {"id": ["ask", "sub"]},
    {"id": ["ask", "sub"]},
    {"id": ["sub", "nowhere"]},
    {"id": ["ask", "end"], "schema": {"type": 12}}
  ]
}"#;

#[track_caller]
fn check_valid(file: &str, summary: &str) {
    let run = claij(&["fsm", "validate", file], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, format!("{summary}\n"));
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn validate_the_examples() {
    check_valid(
        &example("code-review"),
        "FSM `code-review`: 4 states, 6 transitions",
    );
    check_valid(
        &example("tool-loop"),
        "FSM `tool-loop`: 3 states, 4 transitions",
    );
    let one = r#"{"id": "one", "states": [{"id": "ask"}], "xitions": [{"id": ["start", "ask"]}, {"id": ["ask", "end"]}]}"#;
    let f = Files::new(&[("one.json", one)]);
    check_valid(&f.path("one.json"), "FSM `one`: 1 state, 2 transitions");
}

#[test]
fn validate_lists_every_problem() {
    let f = Files::new(&[("broken.json", BROKEN)]);
    let path = f.path("broken.json");
    let run = claij(&["fsm", "validate", &path], "");
    assert_eq!(run.code, 1, "{}", run.stderr);
    insta::assert_snapshot!(run.stdout, @r#"
    /states/1/id: duplicate state `ask` (first at /states/0)
    /states/3/config: an `fsm` state names its sub-FSM: {"fsm": "<id>"}
    /transitions/2/id: duplicate transition ["ask", "sub"] (first at /transitions/1)
    /transitions/3/id/1: unknown state `nowhere`
    /transitions/4/schema/type: invalid schema: not valid against the meta-schema: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'
    /states/2: `orphan` cannot be reached from `start`
    /states/2: `orphan` is not terminal and no transition leaves it
    "#);
    assert_eq!(
        run.stderr,
        format!("{path}: invalid: FSM `broken` has 7 problems\n")
    );
    // Rendering refuses the same definition the same way.
    let render = claij(&["fsm", "render", &path], "");
    assert_eq!((render.code, render.stdout), (1, run.stdout));
}

#[test]
fn validate_exit_codes() {
    let f = Files::new(&[
        ("broken.json", "{\"id\": \"x\", "),
        ("shape.json", r#"{"id": "x", "transitions": []}"#),
    ]);
    let missing = claij(&["fsm", "validate", &f.path("nope.json")], "");
    assert_one_line_error(&missing, 2, "cannot read");
    let broken = claij(&["fsm", "validate", &f.path("broken.json")], "");
    assert_one_line_error(&broken, 2, "broken.json: invalid JSON");
    let stdin = claij(&["fsm", "validate", "-"], "[1, 2");
    assert_one_line_error(&stdin, 2, "stdin: invalid JSON");
    let shape = claij(&["fsm", "validate", &f.path("shape.json")], "");
    assert_one_line_error(
        &shape,
        1,
        "shape.json: not an FSM definition: missing field `states`",
    );
    assert!(shape.stdout.is_empty(), "{}", shape.stdout);
    let usage = claij(&["fsm", "validate"], "");
    assert_eq!(usage.code, 2);
}

#[test]
fn render_dot_and_mermaid() {
    let path = example("code-review");
    let definition =
        claij_fsm::Definition::from_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for args in [vec![], vec!["--format", "dot"]] {
        let mut all = vec!["fsm", "render", path.as_str()];
        all.extend(args);
        let run = claij(&all, "");
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.stdout, claij_fsm::render::to_dot(&definition));
        assert!(run.stdout.starts_with("digraph \"code-review\" {\n"));
    }
    let mermaid = claij(&["fsm", "render", &path, "--format", "mermaid"], "");
    assert_eq!(mermaid.code, 0, "{}", mermaid.stderr);
    assert_eq!(mermaid.stdout, claij_fsm::render::to_mermaid(&definition));
    let stdin = claij(
        &["fsm", "render", "-"],
        &std::fs::read_to_string(example("tool-loop")).unwrap(),
    );
    assert!(
        stdin
            .stdout
            .contains(r#""servicing" [shape=component, label="servicing\nservice: mcp"];"#),
        "{}",
        stdin.stdout
    );
    let usage = claij(&["fsm", "render", &path, "--format", "png"], "");
    assert_one_line_error(&usage, 2, "invalid value 'png'");
}

#[test]
fn render_svg_needs_graphviz() {
    let path = example("tool-loop");
    let installed = Command::new("dot")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if installed {
        let run = claij(&["fsm", "render", &path, "--format", "svg"], "");
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(run.stdout.contains("<svg"), "{}", run.stdout);
    }
    // With nothing on the PATH, `dot` is missing whether or not Graphviz is installed.
    let empty = Files::new(&[]);
    let run = claij_env(
        &["fsm", "render", &path, "--format", "svg"],
        "",
        &[("PATH", Some(&empty.path("")))],
    );
    assert_one_line_error(&run, 2, "graphviz's `dot` is not installed");
    assert!(
        run.stderr
            .contains(&format!("`claij fsm render {path} --format dot`")),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

/// A machine with no model: a person approves, then it ends.
const APPROVAL: &str = r#"{
  "id": "approval",
  "states": [
    {"id": "approve", "action": "human"},
    {"id": "end", "action": "end"}
  ],
  "transitions": [
    {"id": ["start", "approve"], "schema": {"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"]}},
    {"id": ["approve", "end"], "schema": {"type": "object", "properties": {"decision": {"enum": ["yes", "no"]}}, "required": ["decision"]}}
  ]
}"#;

#[test]
fn run_waits_for_input_and_resume_finishes_from_the_journal() {
    let files = Files::new(&[("approval.json", APPROVAL)]);
    let journal = files.path("run.jsonl");
    let args = [
        "fsm",
        "run",
        &files.path("approval.json"),
        "--input",
        r#"{"plan": "ship it"}"#,
        "--journal",
        &journal,
    ];
    // No input on stdin: the run stops waiting, and says how to go on.
    let waiting = claij(&args, "");
    assert_eq!(waiting.code, 0, "{}", waiting.stderr);
    assert!(
        waiting.stderr.contains("start -> approve"),
        "{}",
        waiting.stderr
    );
    assert!(
        waiting
            .stderr
            .contains("waiting for input in state `approve`"),
        "{}",
        waiting.stderr
    );
    assert!(
        waiting.stderr.contains("claij fsm resume"),
        "{}",
        waiting.stderr
    );
    let trail: serde_json::Value = serde_json::from_str(&waiting.stdout).unwrap();
    assert_eq!(trail.as_array().unwrap().len(), 1);

    // An invalid answer is refused (exit 1) and changes nothing.
    let refused = claij(&["fsm", "resume", &journal], "{\"decision\": \"maybe\"}\n");
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("decision"), "{}", refused.stderr);

    // Resume needs only the journal; the answer comes from stdin.
    let done = claij(
        &["fsm", "resume", &journal, "--json"],
        "{\"decision\": \"yes\"}\n",
    );
    assert_eq!(done.code, 0, "{}", done.stderr);
    let report: serde_json::Value = serde_json::from_str(&done.stdout).unwrap();
    assert_eq!(report["outcome"]["finished"], "end");
    assert_eq!(report["trail"].as_array().unwrap().len(), 2);
    assert_eq!(report["trail"][1]["event"]["decision"], "yes");

    // Finished: resuming again does nothing more.
    let again = claij(&["fsm", "resume", &journal, "--json"], "");
    assert_eq!(again.code, 0, "{}", again.stderr);
    let report: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(report["trail"].as_array().unwrap().len(), 2);
}

#[test]
fn run_refuses_input_that_fits_no_start_transition() {
    let files = Files::new(&[("approval.json", APPROVAL)]);
    let run = claij(
        &[
            "fsm",
            "run",
            &files.path("approval.json"),
            "--input",
            r#"{"plan": 3}"#,
        ],
        "",
    );
    assert_one_line_error(&run, 2, "invalid event from state `start`");
}
