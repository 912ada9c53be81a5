//! What a model is told in an `llm` state: the machine's and the state's prompts, the transitions it
//! may take with their schemas, and that `id` is the discriminator choosing the route.

use std::fmt::Write as _;

use crate::definition::{Definition, State};
use crate::schema::{IdStyle, event_schema, id_value};

/// The system prompt of `state`.
pub fn state_prompt(definition: &Definition, state: &State, style: IdStyle) -> String {
    let mut out = String::new();
    let mut section = |text: &str| {
        let text = text.trim();
        if !text.is_empty() {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(text);
        }
    };
    section(&definition.description);
    for prompt in &definition.prompts {
        section(prompt);
    }
    let mut here = format!("You are in state `{}`.", state.id);
    if !state.description.is_empty() {
        let _ = write!(here, " {}", state.description.trim());
    }
    section(&here);
    for prompt in &state.prompts {
        section(prompt);
    }

    let outgoing: Vec<_> = definition.outgoing(&state.id).collect();
    let mut options = String::from(
        "Your reply is one JSON event that moves the conversation along one of these transitions:",
    );
    for t in &outgoing {
        let _ = write!(options, "\n\n- id {}", id_value(t, style));
        if !t.description.is_empty() {
            let _ = write!(options, ": {}", t.description.trim());
        }
        for prompt in &t.prompts {
            let _ = write!(options, "\n  {}", prompt.trim());
        }
        // The description is the bullet's; the schema need not repeat it.
        let mut schema = event_schema(definition, t, style);
        if let serde_json::Value::Object(map) = &mut schema {
            map.remove("description");
        }
        let schema = claij_schema::to_compact(&schema);
        let _ = write!(options, "\n  schema:\n{}", indent(&schema, "    "));
    }
    section(&options);

    let ids: Vec<String> = outgoing
        .iter()
        .map(|t| id_value(t, style).to_string())
        .collect();
    let example = ids.first().cloned().unwrap_or_default();
    let shape = match style {
        IdStyle::Array => format!("an array of exactly two strings, [from, to], e.g. {example}"),
        IdStyle::Arrow => format!("a string \"from->to\", e.g. {example}"),
    };
    section(&format!(
        "CRITICAL: the top-level \"id\" field is the discriminator that selects the route.\n\
         - \"id\" MUST be {shape}\n\
         - \"id\" MUST equal exactly one of: {}\n\
         Choose the transition that fits, then fill in every field its schema requires and no other.\n\
         Reply with only the JSON event: no prose, no code fences.",
        ids.join(", ")
    ));
    out
}

/// The section a state's prompt gains while schema extensions are active (an approved proposal, a
/// meta-debug schema remedy): the fields every event now has besides its transition's, composed
/// from `deltas` in order as the schema registry composes them, in the compact form the transitions'
/// schemas are shown in. `None` when no delta adds anything. A delta that does not compose with the
/// ones before it is left out, as the registry refuses it.
pub fn extensions_section(deltas: &[claij_schema::SchemaDelta]) -> Option<String> {
    let mut composed = serde_json::json!({"type": "object"});
    let mut ids = Vec::new();
    for delta in deltas {
        if let Ok(next) = claij_schema::compose(&composed, std::slice::from_ref(delta)) {
            composed = next;
            ids.push(format!("`{}`", delta.extension_id));
        }
    }
    if ids.is_empty() {
        return None;
    }
    Some(format!(
        "Schema extensions in force ({}): whatever its transition, the event also has these \
         fields; fill in every one they require.\n{}",
        ids.join(", "),
        indent(&claij_schema::to_compact(&composed), "  ")
    ))
}

fn indent(text: &str, by: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{by}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
