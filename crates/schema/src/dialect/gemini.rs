//! Gemini `responseSchema`: the OpenAPI 3.0 schema subset of `generationConfig`.
//!
//! Kept: `type`, `format` (`date-time`, `enum`; `float`/`double`, `int32`/`int64` on numbers), `description`,
//! `nullable`, string `enum`, `properties`, `required`, `items`, `minItems`, `maxItems`, `anyOf`, plus a
//! generated `propertyOrdering`. Type names stay lowercase: the API accepts both spellings, and lowercase
//! keeps the output a valid JSON Schema.

use serde_json::{Map, Value};

use super::{Cx, DialectError, LossKind, Result, child, count_nodes, json_type};

const FORMATS: [&str; 6] = ["date-time", "enum", "float", "double", "int32", "int64"];

/// Output keyword order, so the provider schema reads the same whatever the input order was.
const ORDER: [&str; 12] = [
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "anyOf",
    "properties",
    "required",
    "propertyOrdering",
    "items",
    "minItems",
    "maxItems",
];

pub(super) fn compile(cx: &mut Cx<'_>) -> Result<Value> {
    let root = cx.root;
    node(cx, root, "")
}

fn node(cx: &mut Cx<'_>, schema: &Value, pointer: &str) -> Result<Value> {
    cx.enter(pointer)?;
    let result = match schema {
        Value::Object(map) => object(cx, map, pointer),
        Value::Bool(true) => Ok(Value::Object(Map::new())),
        Value::Bool(false) => {
            cx.loss(pointer, "false", schema, LossKind::Dropped);
            Ok(Value::Object(Map::new()))
        }
        other => Err(DialectError::NotASchema {
            pointer: pointer.to_owned(),
            found: json_type(other),
        }),
    };
    cx.leave();
    result
}

/// Whether a raw subschema is just `{"type": "null"}` (annotations aside).
fn is_null_schema(schema: &Value) -> bool {
    let Value::Object(map) = schema else {
        return false;
    };
    map.get("type") == Some(&Value::from("null"))
        && map
            .keys()
            .all(|k| matches!(k.as_str(), "type" | "description" | "title"))
}

fn object(cx: &mut Cx<'_>, map: &Map<String, Value>, pointer: &str) -> Result<Value> {
    if let Some(reference) = map.get("$ref") {
        return reference_node(cx, map, reference, pointer);
    }
    let map = cx.flatten(map, pointer)?;
    let mut out = Map::new();
    let mut nullable = false;
    let mut types: Vec<String> = Vec::new();
    let mut hoisted: Option<Value> = None;
    // The JSON type of a dropped non-string `const`/`enum`, so the field keeps at least its type.
    let mut value_type: Option<&'static str> = None;
    for (key, value) in map.iter() {
        match (key.as_str(), value) {
            ("type", Value::String(t)) => {
                if t == "null" {
                    nullable = true;
                    cx.loss(pointer, key, value, LossKind::Rewritten);
                } else {
                    types.push(t.clone());
                }
            }
            ("type", Value::Array(ts)) if ts.iter().all(Value::is_string) => {
                for t in ts.iter().filter_map(Value::as_str) {
                    if t == "null" {
                        nullable = true;
                    } else {
                        types.push(t.to_owned());
                    }
                }
                if nullable || types.len() > 1 {
                    cx.loss(pointer, key, value, LossKind::Rewritten);
                }
            }
            ("nullable", Value::Bool(b)) => nullable |= b,
            ("description", Value::String(_)) => {
                out.insert(key.clone(), value.clone());
            }
            ("enum", Value::Array(values)) => {
                let strings: Vec<Value> =
                    values.iter().filter(|v| v.is_string()).cloned().collect();
                let nulls = values.iter().filter(|v| v.is_null()).count();
                if !strings.is_empty() && strings.len() + nulls == values.len() {
                    if nulls > 0 {
                        nullable = true;
                        cx.loss(pointer, key, value, LossKind::Rewritten);
                    }
                    out.insert(key.clone(), Value::Array(strings));
                } else {
                    cx.loss(pointer, key, value, LossKind::Dropped);
                    let mut kinds = values.iter().map(value_type_of);
                    let first = kinds.next().flatten();
                    if kinds.all(|k| k == first) {
                        value_type = first;
                    }
                }
            }
            ("const", Value::String(_)) => {
                cx.loss(pointer, key, value, LossKind::Rewritten);
                out.insert("enum".to_owned(), Value::Array(vec![value.clone()]));
            }
            ("const", Value::Null) => {
                cx.loss(pointer, key, value, LossKind::Rewritten);
                nullable = true;
            }
            ("const", v @ (Value::Bool(_) | Value::Number(_))) => {
                cx.loss(pointer, key, value, LossKind::Dropped);
                value_type = value_type_of(v);
            }
            ("format", Value::String(f)) if FORMATS.contains(&f.as_str()) => {
                out.insert(key.clone(), value.clone());
            }
            ("minItems" | "maxItems", Value::Number(n)) if n.is_u64() => {
                out.insert(key.clone(), value.clone());
            }
            ("items", Value::Object(_) | Value::Bool(_)) => {
                out.insert(key.clone(), node(cx, value, &child(pointer, key))?);
            }
            ("properties", Value::Object(properties)) => {
                let base = child(pointer, key);
                let mut compiled = Map::new();
                for (name, schema) in properties {
                    let at = child(&base, name);
                    if *schema == Value::Bool(false) {
                        cx.loss(&at, "false", schema, LossKind::Dropped);
                        continue;
                    }
                    compiled.insert(name.clone(), node(cx, schema, &at)?);
                }
                let ordering = compiled.keys().map(|k| Value::from(k.as_str())).collect();
                out.insert("properties".to_owned(), Value::Object(compiled));
                out.insert("propertyOrdering".to_owned(), Value::Array(ordering));
            }
            ("required", Value::Array(_)) => {} // below, once `properties` is known
            ("anyOf" | "oneOf", Value::Array(branches))
                if !(key == "oneOf" && map.contains_key("anyOf")) =>
            {
                if key == "oneOf" {
                    cx.loss(pointer, key, value, LossKind::Relaxed);
                }
                let base = child(pointer, key);
                let mut compiled = Vec::new();
                for (i, branch) in branches.iter().enumerate() {
                    let at = child(&base, &i.to_string());
                    if is_null_schema(branch) {
                        nullable = true;
                        cx.loss(&at, "type", &Value::from("null"), LossKind::Rewritten);
                    } else if *branch != Value::Bool(false) {
                        compiled.push(node(cx, branch, &at)?);
                    }
                }
                match compiled.len() {
                    0 => {} // only `null` (now `nullable`) or nothing at all
                    1 => hoisted = compiled.pop(),
                    _ => {
                        out.insert("anyOf".to_owned(), Value::Array(compiled));
                    }
                }
            }
            ("$defs" | "definitions", Value::Object(_)) => {} // inlined where referenced
            ("propertyOrdering", _) => {}                     // generated from `properties`
            _ => cx.loss(pointer, key, value, LossKind::Dropped),
        }
    }
    required(cx, &map, pointer, &mut out);
    if types.is_empty()
        && let Some(t) = value_type
    {
        types.push(t.to_owned());
    }
    split_types(cx, &map, pointer, types, &mut out);
    if let Some(Value::Object(branch)) = hoisted {
        for (key, value) in branch {
            out.entry(key).or_insert(value);
        }
    }
    if nullable {
        out.insert("nullable".to_owned(), Value::Bool(true));
    }
    Ok(Value::Object(ordered(out)))
}

fn required(
    cx: &mut Cx<'_>,
    map: &Map<String, Value>,
    pointer: &str,
    out: &mut Map<String, Value>,
) {
    let Some(Value::Array(names)) = map.get("required") else {
        return;
    };
    let mut kept = Vec::new();
    for name in names {
        let known = name
            .as_str()
            .is_some_and(|n| out.get("properties").and_then(|p| p.get(n)).is_some());
        if known {
            kept.push(name.clone());
        } else {
            cx.loss(pointer, "required", name, LossKind::Dropped);
        }
    }
    out.insert("required".to_owned(), Value::Array(kept));
}

/// One `type`, inferred when missing; several become `anyOf` branches carrying their own keywords.
fn split_types(
    cx: &mut Cx<'_>,
    map: &Map<String, Value>,
    pointer: &str,
    mut types: Vec<String>,
    out: &mut Map<String, Value>,
) {
    if types.is_empty() {
        let inferred = if out.contains_key("properties") {
            "object"
        } else if out.contains_key("items") {
            "array"
        } else if out.contains_key("enum") {
            "string"
        } else {
            return;
        };
        types.push(inferred.to_owned());
    }
    if types.len() == 1 {
        out.insert("type".to_owned(), types.swap_remove(0).into());
        return;
    }
    let original = map.get("type").cloned().unwrap_or_default();
    if out.contains_key("anyOf") {
        cx.loss(pointer, "type", &original, LossKind::Dropped);
        return;
    }
    let mut branches = Vec::new();
    for t in types {
        let keywords: &[&str] = match t.as_str() {
            "object" => &["properties", "required", "propertyOrdering"],
            "array" => &["items", "minItems", "maxItems"],
            "string" => &["enum", "format"],
            "number" | "integer" => &["format"],
            _ => &[],
        };
        let mut branch = Map::from_iter([("type".to_owned(), Value::from(t.as_str()))]);
        for keyword in keywords {
            if let Some(value) = out.get(*keyword) {
                branch.insert((*keyword).to_owned(), value.clone());
            }
        }
        branches.push(Value::Object(ordered(branch)));
    }
    for keyword in [
        "properties",
        "required",
        "propertyOrdering",
        "items",
        "minItems",
        "maxItems",
        "enum",
        "format",
    ] {
        out.shift_remove(keyword);
    }
    out.insert("anyOf".to_owned(), Value::Array(branches));
}

/// `$ref` is inlined (compiled once per target, then copied); siblings override the target's keywords.
fn reference_node(
    cx: &mut Cx<'_>,
    map: &Map<String, Value>,
    reference: &Value,
    pointer: &str,
) -> Result<Value> {
    let Value::String(text) = reference else {
        cx.loss(pointer, "$ref", reference, LossKind::Dropped);
        let mut rest = map.clone();
        rest.shift_remove("$ref");
        return object(cx, &rest, pointer);
    };
    let (target, target_pointer) = cx.resolve(text, pointer)?;
    if cx.ref_stack.contains(&target_pointer) {
        return Err(cx.recursive(text, pointer));
    }
    cx.loss(pointer, "$ref", reference, LossKind::Rewritten);
    let (compiled, nodes) = match cx.cache.get(&target_pointer) {
        Some(hit) => hit.clone(),
        None => {
            cx.ref_stack.push(target_pointer.clone());
            let compiled = node(cx, target, &target_pointer);
            cx.ref_stack.pop();
            let compiled = compiled?;
            let nodes = count_nodes(&compiled);
            cx.cache.insert(target_pointer, (compiled.clone(), nodes));
            (compiled, nodes)
        }
    };
    cx.charge(nodes, text, pointer)?;
    if map.len() == 1 {
        return Ok(compiled);
    }
    let mut siblings = map.clone();
    siblings.shift_remove("$ref");
    let Value::Object(siblings) = object(cx, &siblings, pointer)? else {
        return Ok(compiled);
    };
    let mut out = match compiled {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    for (key, value) in siblings {
        out.insert(key, value);
    }
    Ok(Value::Object(ordered(out)))
}

/// `integer`, `number` or `boolean` for such values; `None` for anything else.
fn value_type_of(value: &Value) -> Option<&'static str> {
    match value {
        Value::Bool(_) => Some("boolean"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
        Value::Number(_) => Some("number"),
        _ => None,
    }
}

fn ordered(mut map: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for key in ORDER {
        if let Some(value) = map.shift_remove(key) {
            out.insert(key.to_owned(), value);
        }
    }
    out.extend(map);
    out
}
