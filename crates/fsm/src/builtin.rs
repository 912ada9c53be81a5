//! Machines that come with claij, each a [`Definition`](crate::Definition) plus the services it needs,
//! wired by a `runner` function and usable alone or as a sub-FSM (`"action": "fsm"` with
//! `config.fsm` set to its id).
//!
//! - [`vote`]: voter models decide on a proposed schema delta; an approved one is activated in a
//!   shared [`claij_schema::Registry`], which may still refuse it.
//! - [`meta_debug`]: when one model keeps failing validation, another diagnoses why, suggests a fix,
//!   and the failing model is tried again with it.

pub mod meta_debug;
pub mod vote;

use serde_json::{Value, json};

/// An object schema with `properties`, each required unless listed in `optional`.
fn object(properties: Value, optional: &[&str]) -> Value {
    let required: Vec<&String> = properties
        .as_object()
        .map(|p| {
            p.keys()
                .filter(|k| !optional.contains(&k.as_str()))
                .collect()
        })
        .unwrap_or_default();
    json!({"type": "object", "properties": properties, "required": required})
}

/// The first event the run was started with (its `start` transition), without its `id`.
fn input_of(trail: &crate::Trail) -> Option<Value> {
    let entry = trail
        .entries
        .iter()
        .find(|e| e.from == crate::definition::START)?;
    let mut event = entry.event.clone();
    if let Value::Object(map) = &mut event {
        map.remove("id");
    }
    Some(event)
}
