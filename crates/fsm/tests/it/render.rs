//! Diagrams: DOT and Mermaid snapshots of the examples and of a machine using every shape; SVG
//! through Graphviz when it is installed, and the error saying how to do without it when it is not.

use std::process::{Command, Stdio};

use claij_fsm::Definition;
use claij_fsm::render::{self, RenderError};
use serde_json::json;

use crate::definitions::example;

/// Every action, the implicit states, an `omit` edge, and labels that need escaping and wrapping.
fn shapes() -> Definition {
    serde_json::from_value(json!({
        "id": "shapes \"all\"",
        "states": [
            {"id": "triage", "action": "llm"},
            {"id": "lookup", "action": "service", "config": {"service": "search"}},
            {"id": "confirm", "action": "human"},
            {"id": "escalate", "action": "fsm", "config": {"fsm": "incident-review"}},
            {"id": "page", "action": "notify"},
            {"id": "done", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "triage"], "description": "a ticket"},
            {"id": ["triage", "lookup"], "description": "search the \"known issues\" list\nfirst"},
            {"id": ["lookup", "triage"], "omit": true},
            {"id": ["triage", "confirm"], "description": "ask the reporter to confirm it is fixed before closing the ticket"},
            {"id": ["confirm", "done"]},
            {"id": ["triage", "escalate"], "description": "an outage <P1> & worse"},
            {"id": ["escalate", "page"]},
            {"id": ["page", "done"], "description": r"paged \N"},
            {"id": ["triage", "interrupted"], "description": "cancelled", "omit": true}
        ]
    }))
    .unwrap()
}

fn code_review() -> Definition {
    Definition::from_json(&example("code-review")).unwrap()
}

#[test]
fn diagrams() {
    let cases = [
        ("code_review", code_review()),
        (
            "tool_loop",
            Definition::from_json(&example("tool-loop")).unwrap(),
        ),
        ("shapes", shapes()),
    ];
    for (name, definition) in cases {
        let dot = render::to_dot(&definition);
        assert_eq!(dot, render::to_dot(&definition.clone()), "deterministic");
        insta::assert_snapshot!(format!("{name}_dot"), dot);
        insta::assert_snapshot!(format!("{name}_mermaid"), render::to_mermaid(&definition));
    }
}

#[track_caller]
fn check_drawn(definition: serde_json::Value, state: &str, drawn: bool) {
    let definition: Definition = serde_json::from_value(definition).unwrap();
    let dot = render::to_dot(&definition);
    let node = format!("  \"{state}\" [");
    assert_eq!(dot.contains(&node), drawn, "{state} in\n{dot}");
    let mermaid = render::to_mermaid(&definition);
    assert_eq!(
        mermaid.contains(&format!("\"{state}\"")),
        drawn,
        "{state} in\n{mermaid}"
    );
}

#[test]
fn implicit_states_are_drawn_only_when_used() {
    let unused = json!({"id": "m", "states": [{"id": "ask"}, {"id": "done", "action": "end"}],
        "transitions": [{"id": ["start", "ask"]}, {"id": ["ask", "done"]}]});
    let used = json!({"id": "m", "states": [{"id": "ask"}],
        "transitions": [{"id": ["start", "ask"]}, {"id": ["ask", "end"]}, {"id": ["ask", "interrupted"]}]});
    check_drawn(unused.clone(), "end", false);
    check_drawn(unused.clone(), "interrupted", false);
    check_drawn(unused, "done", true);
    check_drawn(used.clone(), "end", true);
    check_drawn(used, "interrupted", true);
}

fn graphviz_installed() -> bool {
    Command::new("dot")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

#[test]
fn svg_through_graphviz_or_a_typed_error() {
    for (definition, state) in [(code_review(), "chairman"), (shapes(), "triage")] {
        let svg = render::to_svg(&definition);
        if graphviz_installed() {
            let svg = svg.unwrap();
            assert!(svg.contains("<svg"), "{svg}");
            assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
            assert!(svg.contains(state), "{svg}");
        } else {
            let err = svg.unwrap_err();
            assert!(matches!(err, RenderError::DotNotInstalled), "{err:?}");
            let message = err.to_string();
            assert!(message.contains("`dot` is not installed"), "{message}");
            assert!(
                message.contains("claij fsm render FILE --format dot"),
                "{message}"
            );
        }
    }
}
