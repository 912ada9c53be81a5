//! Event schemas: a transition's schema with its `id` constant required, and a state's output schema,
//! the `oneOf` of its outgoing transitions (the model picks the edge, the schema checks the pick).

use serde_json::{Map, Value, json};

use crate::definition::{Definition, Transition};

/// How an event names its transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum IdStyle {
    /// `"id": ["from", "to"]`, as the design writes it.
    #[default]
    Array,
    /// `"id": "from->to"`, for constrained decoders that reject array constants.
    Arrow,
}

/// The schema an event must satisfy to take `transition`: its schema, the `id` constant required, the
/// definition's shared schemas attached as `$defs`.
pub fn event_schema(definition: &Definition, transition: &Transition, style: IdStyle) -> Value {
    with_defs(definition, branch(definition, transition, style))
}

/// The output schema of `state`: one branch per outgoing transition, discriminated by `id`
/// (a lone transition is its branch, without `oneOf`, and `id` optional). `None` when nothing leaves
/// the state.
pub fn state_schema(definition: &Definition, state: &str, style: IdStyle) -> Option<Value> {
    let mut branches: Vec<Value> = definition
        .outgoing(state)
        .map(|t| branch(definition, t, style))
        .collect();
    let root = match branches.len() {
        0 => return None,
        // One way out: `id` may be left out (the runner adds it), as models often do when there is
        // no choice to make.
        1 => {
            let mut only = branches.pop().unwrap_or_default();
            if let Some(Value::Array(required)) = only.get_mut("required") {
                required.retain(|r| r != "id");
            }
            only
        }
        _ => json!({"oneOf": branches}),
    };
    Some(with_defs(definition, root))
}

/// The `id` value of `transition` in `style`.
pub fn id_value(transition: &Transition, style: IdStyle) -> Value {
    match style {
        IdStyle::Array => transition.id.to_value(),
        IdStyle::Arrow => Value::String(transition.id.to_arrow()),
    }
}

/// One branch: the transition's schema (a lone `$ref` to a shared schema is inlined so `id` can join
/// its properties) with `id` first among the properties and the required ones.
fn branch(definition: &Definition, transition: &Transition, style: IdStyle) -> Value {
    let id = json!({"const": id_value(transition, style)});
    let schema = inline_ref(definition, &transition.schema);
    let mut map = match schema {
        Value::Object(map) if is_object_schema(&map) => map,
        other => {
            // Not an object schema we can extend in place: intersect with one that has the id.
            let mut map = Map::new();
            map.insert("type".into(), "object".into());
            map.insert("allOf".into(), Value::Array(vec![other]));
            map
        }
    };
    let mut properties = Map::new();
    properties.insert("id".into(), id);
    if let Some(Value::Object(existing)) = map.remove("properties") {
        properties.extend(existing.into_iter().filter(|(k, _)| k != "id"));
    }
    let mut required = vec![Value::String("id".into())];
    if let Some(Value::Array(existing)) = map.remove("required") {
        required.extend(existing.into_iter().filter(|r| r != "id"));
    }
    let mut out = Map::new();
    out.insert("type".into(), "object".into());
    if !transition.description.is_empty() && !map.contains_key("description") {
        out.insert(
            "description".into(),
            Value::String(transition.description.clone()),
        );
    }
    out.insert("properties".into(), Value::Object(properties));
    out.insert("required".into(), Value::Array(required));
    for (key, value) in map {
        if key != "type" {
            out.insert(key, value);
        }
    }
    Value::Object(out)
}

/// An object schema: `type: object`, or no type with object keywords (or nothing at all).
fn is_object_schema(map: &Map<String, Value>) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(_) => false,
        None => {
            !map.contains_key("$ref") && !map.contains_key("oneOf") && !map.contains_key("anyOf")
        }
    }
}

/// `{"$ref": "#/$defs/name", ...siblings}` with the shared schema copied in (siblings win); anything
/// else unchanged.
fn inline_ref(definition: &Definition, schema: &Value) -> Value {
    let Some(map) = schema.as_object() else {
        return schema.clone();
    };
    let Some(reference) = map.get("$ref").and_then(Value::as_str) else {
        return schema.clone();
    };
    let name = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"));
    let Some(Value::Object(target)) = name.and_then(|n| definition.schemas.get(n)) else {
        return schema.clone();
    };
    let mut out = target.clone();
    for (key, value) in map {
        if key != "$ref" {
            out.insert(key.clone(), value.clone());
        }
    }
    Value::Object(out)
}

fn with_defs(definition: &Definition, schema: Value) -> Value {
    if definition.schemas.is_empty() {
        return schema;
    }
    let mut map = match schema {
        Value::Object(map) => map,
        other => Map::from_iter([("allOf".to_owned(), Value::Array(vec![other]))]),
    };
    map.insert("$defs".into(), Value::Object(definition.schemas.clone()));
    Value::Object(map)
}
