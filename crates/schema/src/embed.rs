//! Embedding one schema inside another: its definitions hoisted to the host's root `$defs`, its local
//! references rewritten to where they land.
//!
//! A tool's arguments schema (a Rust function's, an MCP server's) is a document of its own: `#` is its
//! root and `#/$defs/X` its definitions. Placed as it is under some property of a response schema, those
//! references would point into the response schema instead. [`embed`] moves such a schema to
//! `$defs/<prefix>` of the host and rewrites every local reference, so it resolves the same way inside
//! the composed schema.

use serde_json::{Map, Value, json};

use crate::pointer;

/// The schema to put in place of `schema`, and the definitions to add to the host's root `$defs`.
///
/// A self-contained schema (no `$ref`, no definitions) is used as it is, less `$schema`, and needs no
/// definitions. Otherwise the schema itself becomes `$defs/<prefix>` and each of its definitions
/// (`$defs` or draft-07 `definitions`) `$defs/<prefix>.<name>`, and every local `$ref` is rewritten:
/// `#` to `#/$defs/<prefix>`, `#/$defs/X…` (or `#/definitions/X…`) to `#/$defs/<prefix>.X…`, any other
/// `#/…` to `#/$defs/<prefix>/…`; the schema is replaced by `{"$ref": "#/$defs/<prefix>"}`. Anchors
/// (`#name`) and references to other documents are kept. The keys of the returned map are the plain
/// names; in the references the prefix is escaped as a JSON pointer token (`~0`, `~1`) and
/// percent-encoded where a URI fragment needs it, so a prefix may contain `/`, `~`, `%` or spaces.
///
/// Values under `const`, `enum`, `default` and `examples` are data: a `$ref` there is left alone.
///
/// The caller picks prefixes that cannot collide: two schemas embedded with prefixes `a` and `a.b`
/// could both produce `a.b` if the first defines `b`.
///
/// ```
/// use serde_json::json;
///
/// let args = json!({
///     "type": "object",
///     "properties": {"near": {"$ref": "#/$defs/Point"}},
///     "$defs": {"Point": {"type": "array", "items": {"type": "number"}}},
/// });
/// let (embedded, defs) = claij_schema::embed("maps/route", &args);
/// assert_eq!(embedded, json!({"$ref": "#/$defs/maps~1route"}));
/// assert_eq!(defs["maps/route"], json!({
///     "type": "object",
///     "properties": {"near": {"$ref": "#/$defs/maps~1route.Point"}},
/// }));
/// assert_eq!(defs["maps/route.Point"], json!({"type": "array", "items": {"type": "number"}}));
///
/// // The composed schema resolves the references.
/// let host = json!({
///     "type": "object",
///     "properties": {"args": embedded},
///     "$defs": defs,
/// });
/// let compiled = claij_schema::compile(&host)?;
/// let (schemas, root) = compiled.as_boon();
/// assert!(schemas.validate(&json!({"args": {"near": [1.5, 2]}}), root).is_ok());
/// assert!(schemas.validate(&json!({"args": {"near": "here"}}), root).is_err());
/// # Ok::<(), claij_schema::Error>(())
/// ```
pub fn embed(prefix: &str, schema: &Value) -> (Value, Map<String, Value>) {
    let mut schema = schema.clone();
    let mut defs = Map::new();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        for keyword in ["$defs", "definitions"] {
            match map.remove(keyword) {
                Some(Value::Object(found)) => {
                    for (name, def) in found {
                        defs.insert(format!("{prefix}.{name}"), def);
                    }
                }
                Some(other) => {
                    // Not definitions (a schema that compiles cannot have this); keep it untouched.
                    map.insert(keyword.to_owned(), other);
                }
                None => {}
            }
        }
    }
    if defs.is_empty() && !has_ref(&schema) {
        return (schema, defs);
    }
    let token = fragment_token(prefix);
    rewrite_refs(&mut schema, &token);
    for def in defs.values_mut() {
        rewrite_refs(def, &token);
    }
    defs.insert(prefix.to_owned(), schema);
    (json!({"$ref": format!("#/$defs/{token}")}), defs)
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

fn rewrite_refs(schema: &mut Value, token: &str) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if key == "$ref" {
                    if let Value::String(reference) = value {
                        *reference = rewrite(reference, token);
                    }
                } else if !is_data_keyword(key) {
                    rewrite_refs(value, token);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_refs(v, token)),
        _ => {}
    }
}

/// Where a local reference of the embedded schema points once embedded under `$defs/<token>` (the
/// prefix, already escaped for a fragment); other references are kept.
fn rewrite(reference: &str, token: &str) -> String {
    let Some(pointer) = reference.strip_prefix('#') else {
        return reference.to_owned();
    };
    if pointer.is_empty() {
        return format!("#/$defs/{token}");
    }
    for definitions in ["/$defs/", "/definitions/"] {
        if let Some(rest) = pointer.strip_prefix(definitions) {
            // `rest` starts with the definition's name, already escaped by the schema's author.
            return format!("#/$defs/{token}.{rest}");
        }
    }
    if pointer.starts_with('/') {
        format!("#/$defs/{token}{pointer}")
    } else {
        // `#anchor`: anchors are document-wide, so it still resolves.
        reference.to_owned()
    }
}

/// `prefix` as one reference token of a URI fragment: JSON-pointer-escaped (`~0`, `~1`), then
/// percent-encoded where a fragment may not hold the character as it is (`%`, spaces, quotes, `#`,
/// non-ASCII...).
fn fragment_token(prefix: &str) -> String {
    // Escaped, the token holds no `/`, so encoding it as a pointer fragment leaves it one token.
    crate::compile::encode_fragment(&pointer::escape(prefix))
}

#[cfg(test)]
mod tests;
