//! Embedding a tool's arguments schema in the reply's schema: its definitions hoisted, its references
//! rewritten to where they land.

use serde_json::{Map, Value, json};

/// The schema to put under a call's `args`, and the definitions to add to the delta's root `$defs`.
///
/// A self-contained schema (no `$ref`, no definitions) is used as it is, less `$schema`. Otherwise the
/// schema itself becomes `$defs/<tool>` and each of its definitions `$defs/<tool>.<name>`, with every
/// local `$ref` rewritten: `#` to `#/$defs/<tool>`, `#/$defs/X…` (or `#/definitions/X…`) to
/// `#/$defs/<tool>.X…`, any other `#/…` to `#/$defs/<tool>/…`. Tool names contain no `.`, so the names
/// of two tools never collide.
pub(super) fn embed(tool: &str, schema: &Value) -> (Value, Map<String, Value>) {
    let mut schema = schema.clone();
    let mut defs = Map::new();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        for keyword in ["$defs", "definitions"] {
            match map.remove(keyword) {
                Some(Value::Object(found)) => {
                    for (name, def) in found {
                        defs.insert(format!("{tool}.{name}"), def);
                    }
                }
                Some(other) => {
                    // Not definitions (the schema compiled, so this cannot be); keep it untouched.
                    map.insert(keyword.to_owned(), other);
                }
                None => {}
            }
        }
    }
    if defs.is_empty() && !has_ref(&schema) {
        return (schema, defs);
    }
    rewrite_refs(&mut schema, tool);
    for def in defs.values_mut() {
        rewrite_refs(def, tool);
    }
    defs.insert(tool.to_owned(), schema);
    (json!({"$ref": format!("#/$defs/{tool}")}), defs)
}

/// Keywords whose values are data, not schemas: a `$ref` inside them is not a reference.
fn is_data_keyword(key: &str) -> bool {
    matches!(key, "const" | "enum" | "default" | "examples")
}

fn has_ref(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k == "$ref" || (!is_data_keyword(k) && has_ref(v))),
        Value::Array(items) => items.iter().any(has_ref),
        _ => false,
    }
}

fn rewrite_refs(schema: &mut Value, tool: &str) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if key == "$ref" {
                    if let Value::String(reference) = value {
                        *reference = rewrite(reference, tool);
                    }
                } else if !is_data_keyword(key) {
                    rewrite_refs(value, tool);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_refs(v, tool)),
        _ => {}
    }
}

/// Where a local reference of the tool's schema points once embedded; other references are kept.
fn rewrite(reference: &str, tool: &str) -> String {
    let Some(pointer) = reference.strip_prefix('#') else {
        return reference.to_owned();
    };
    if pointer.is_empty() {
        return format!("#/$defs/{tool}");
    }
    for prefix in ["/$defs/", "/definitions/"] {
        if let Some(rest) = pointer.strip_prefix(prefix) {
            return format!("#/$defs/{tool}.{rest}");
        }
    }
    if pointer.starts_with('/') {
        format!("#/$defs/{tool}{pointer}")
    } else {
        // `#anchor`: left as it is.
        reference.to_owned()
    }
}
