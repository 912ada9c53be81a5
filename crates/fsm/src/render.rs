//! Diagrams of a definition: Graphviz DOT, Mermaid, and SVG through Graphviz's `dot`.
//!
//! States are nodes shaped by their action: an `llm` state a rounded box, a `service` a component
//! (DOT) or hexagon (Mermaid), a `human` state a parallelogram, a sub-FSM state a box inside a cluster
//! named after the machine it runs (`config.fsm`), a terminal state a double circle, `start` a point.
//! Any other action is an octagon (DOT) or a flag (Mermaid) with the action's name under the state's.
//! Transitions are edges labelled with their description; `omit` transitions (kept out of the trail)
//! are dashed. The implicit states `start`, `end` and `interrupted` are drawn only when a transition
//! uses them. Output follows definition order, so the same definition always gives the same text.
//!
//! ```
//! use claij_fsm::{Definition, render};
//! use serde_json::json;
//!
//! let definition: Definition = serde_json::from_value(json!({
//!     "id": "tools",
//!     "states": [
//!         {"id": "llm", "action": "llm"},
//!         {"id": "servicing", "action": "service", "config": {"service": "mcp"}}
//!     ],
//!     "transitions": [
//!         {"id": ["start", "llm"]},
//!         {"id": ["llm", "servicing"], "description": "call a tool"},
//!         {"id": ["servicing", "llm"], "omit": true},
//!         {"id": ["llm", "end"], "description": "the \"answer\""}
//!     ]
//! }))?;
//! let dot = render::to_dot(&definition);
//! assert!(dot.contains(r#""servicing" [shape=component, label="servicing\nservice: mcp"];"#));
//! assert!(dot.contains(r#""llm" -> "end" [label="the \"answer\""];"#));
//! assert!(dot.contains(r#""servicing" -> "llm" [style=dashed];"#));
//! let mermaid = render::to_mermaid(&definition);
//! assert!(mermaid.contains(r#"s1 -->|"call a tool"| s2"#));
//! // `to_svg` needs Graphviz; without it the error says how to get the DOT text instead.
//! match render::to_svg(&definition) {
//!     Ok(svg) => assert!(svg.contains("<svg")),
//!     Err(e) => assert!(e.to_string().contains("--format dot")),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

use crate::definition::{Action, Definition, END, INTERRUPTED, START, State};

/// Why [`to_svg`] produced no SVG.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// Graphviz is not installed, or its `dot` is not on the `PATH`.
    #[error(
        "graphviz's `dot` is not installed (or not on PATH): install graphviz, or get the DOT text \
         with `claij fsm render FILE --format dot` (or `render::to_dot`) and render it elsewhere"
    )]
    DotNotInstalled,
    /// `dot` ran and failed.
    #[error("graphviz's `dot` failed ({status}): {message}")]
    Dot {
        /// Its exit status.
        status: String,
        /// What it wrote on stderr.
        message: String,
    },
    /// `dot` could not be started or talked to.
    #[error("cannot run graphviz's `dot`")]
    Io(#[source] std::io::Error),
}

/// The definition as a Graphviz `digraph`.
pub fn to_dot(definition: &Definition) -> String {
    let mut out = format!("digraph {} {{\n", dot_quote(&definition.id));
    out.push_str("  graph [fontname=\"Helvetica\"];\n");
    out.push_str("  node [fontname=\"Helvetica\"];\n");
    out.push_str("  edge [fontname=\"Helvetica\", fontsize=10];\n");
    for (i, state) in drawn_states(definition).iter().enumerate() {
        let name = dot_quote(&state.id);
        let label = dot_quote(&node_label(state, "\n"));
        let node = match &state.action {
            _ if state.id == START => format!("{name} [shape=point, width=0.2];"),
            Action::Llm => format!("{name} [shape=box, style=rounded, label={label}];"),
            Action::Service => format!("{name} [shape=component, label={label}];"),
            Action::Human => format!("{name} [shape=parallelogram, label={label}];"),
            Action::End => format!("{name} [shape=doublecircle, label={label}];"),
            Action::Fsm => {
                let machine = dot_quote(state.config_str("fsm").unwrap_or(&state.id));
                let _ = writeln!(out, "  subgraph \"cluster_{i}\" {{");
                let _ = writeln!(out, "    label={machine};");
                out.push_str("    style=rounded;\n");
                let _ = writeln!(out, "    {name} [shape=box3d, label={label}];");
                out.push_str("  }\n");
                continue;
            }
            Action::Custom(_) => format!("{name} [shape=octagon, label={label}];"),
        };
        let _ = writeln!(out, "  {node}");
    }
    for t in &definition.transitions {
        let mut attributes = Vec::new();
        if !t.description.trim().is_empty() {
            let label = wrap(t.description.trim(), LABEL_WIDTH).join("\n");
            attributes.push(format!("label={}", dot_quote(&label)));
        }
        if t.omit {
            attributes.push("style=dashed".to_owned());
        }
        let _ = write!(
            out,
            "  {} -> {}",
            dot_quote(&t.id.from),
            dot_quote(&t.id.to)
        );
        if !attributes.is_empty() {
            let _ = write!(out, " [{}]", attributes.join(", "));
        }
        out.push_str(";\n");
    }
    out.push_str("}\n");
    out
}

/// The definition as a Mermaid `flowchart`. States get generated ids (`s0`, `s1`, ... in drawing
/// order), since Mermaid reserves words such as `end`; their names are the labels.
pub fn to_mermaid(definition: &Definition) -> String {
    let states = drawn_states(definition);
    let mut out = String::from("flowchart TD\n");
    for (i, state) in states.iter().enumerate() {
        let label = mermaid_quote(&node_label(state, "\n"));
        let node = match &state.action {
            _ if state.id == START => format!("s{i}(({label}))"),
            Action::Llm => format!("s{i}({label})"),
            Action::Service => format!("s{i}{{{{{label}}}}}"),
            Action::Human => format!("s{i}[/{label}/]"),
            Action::End => format!("s{i}((({label})))"),
            Action::Fsm => {
                let machine = mermaid_quote(state.config_str("fsm").unwrap_or(&state.id));
                let _ = writeln!(out, "  subgraph c{i} [{machine}]");
                let _ = writeln!(out, "    s{i}[[{label}]]");
                out.push_str("  end\n");
                continue;
            }
            Action::Custom(_) => format!("s{i}>{label}]"),
        };
        let _ = writeln!(out, "  {node}");
    }
    let index = |id: &str| states.iter().position(|s| s.id == id);
    for t in &definition.transitions {
        // A transition naming an undeclared state (an unchecked definition) has no node to join.
        let (Some(from), Some(to)) = (index(&t.id.from), index(&t.id.to)) else {
            continue;
        };
        let arrow = if t.omit { "-.->" } else { "-->" };
        let description = t.description.trim();
        if description.is_empty() {
            let _ = writeln!(out, "  s{from} {arrow} s{to}");
        } else {
            let label = mermaid_quote(description);
            let _ = writeln!(out, "  s{from} {arrow}|{label}| s{to}");
        }
    }
    out
}

/// The definition as SVG, laid out by Graphviz (`dot -Tsvg`, the DOT text on its stdin).
///
/// # Errors
///
/// [`RenderError::DotNotInstalled`] without Graphviz; [`RenderError::Dot`] when `dot` rejects the
/// graph; [`RenderError::Io`] when it cannot be talked to.
pub fn to_svg(definition: &Definition) -> Result<String, RenderError> {
    run_graphviz("dot", &to_dot(definition))
}

/// Edge labels wider than this many characters are wrapped (DOT does not wrap by itself).
const LABEL_WIDTH: usize = 32;

/// The states to draw, in order: `start` if a transition leaves it, the declared states, then `end`
/// and `interrupted` if a transition enters them and they are not declared.
fn drawn_states(definition: &Definition) -> Vec<State> {
    let used = |id: &str| {
        !definition.states.iter().any(|s| s.id == id)
            && definition
                .transitions
                .iter()
                .any(|t| t.id.from == id || t.id.to == id)
    };
    let implicit = |id: &str| used(id).then(|| definition.state(id)).flatten().into_iter();
    implicit(START)
        .chain(definition.states.iter().cloned())
        .chain(implicit(END))
        .chain(implicit(INTERRUPTED))
        .collect()
}

/// A state's label: its id, and under it what it runs when the shape does not say so.
fn node_label(state: &State, newline: &str) -> String {
    let detail = match &state.action {
        Action::Service => state.config_str("service").map(|s| format!("service: {s}")),
        Action::Custom(action) if state.id != START => Some(format!("action: {action}")),
        _ => None,
    };
    match detail {
        Some(detail) => format!("{}{newline}{detail}", state.id),
        None => state.id.clone(),
    }
}

/// A DOT quoted string. Backslashes are doubled so that label escapes (`\N`, `\l`) cannot be
/// injected and a trailing backslash cannot escape the closing quote; newlines become `\n`.
fn dot_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A Mermaid quoted label: quotes and markup characters as entity codes, newlines as `<br/>`.
fn mermaid_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '\n' => out.push_str("<br/>"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Words of `text` in lines of at most `width` characters (a longer word gets a line of its own);
/// existing line breaks are kept.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for paragraph in text.lines() {
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines.push(line);
    }
    lines
}

/// Runs `program -Tsvg` with `dot` on its stdin and returns its stdout.
fn run_graphviz(program: &str, dot: &str) -> Result<String, RenderError> {
    let spawned = Command::new(program)
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(RenderError::DotNotInstalled);
        }
        Err(e) => return Err(RenderError::Io(e)),
    };
    let stdin = child.stdin.take();
    // Write on another thread while this one drains stdout and stderr, so that neither side can
    // block on a full pipe.
    let (written, output) = std::thread::scope(|scope| {
        let writer = scope.spawn(move || match stdin {
            Some(mut stdin) => stdin.write_all(dot.as_bytes()),
            None => Ok(()),
        });
        let output = child.wait_with_output();
        (writer.join(), output)
    });
    let output = output.map_err(RenderError::Io)?;
    if !output.status.success() {
        let message = String::from_utf8_lossy(&output.stderr);
        return Err(RenderError::Dot {
            status: output.status.to_string(),
            message: message.split_whitespace().collect::<Vec<_>>().join(" "),
        });
    }
    match written {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(RenderError::Io(e)),
        Err(_) => {
            return Err(RenderError::Io(std::io::Error::other(
                "the thread writing to `dot` panicked",
            )));
        }
    }
    String::from_utf8(output.stdout)
        .map_err(|e| RenderError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

#[cfg(test)]
mod tests;
