//! Cheap contradictions between the schemas composition joins: two constraints on one place that no
//! value can meet (`string` and `integer`, two different `const`s, `minLength` over `maxLength`, a
//! required property whose schema is `false`). A composed schema holding one validates nothing, so
//! every attempt of a request would fail; composition refuses it instead, naming both extensions.
//!
//! Only what is certain is reported: keywords side by side in the same subschema (its `allOf` items
//! included), followed through `properties` and `items`. `anyOf`, `oneOf`, `not`, `if` and references
//! are not looked into.

use serde_json::{Map, Value};

/// How deep the search follows `properties`, `items` and `allOf`: deeper schemas are not searched
/// (a contradiction down there is left to validation), so hostile nesting cannot exhaust the stack.
const MAX_DEPTH: usize = 32;

/// How many pairs of subschemas one search compares at most: `allOf`s inside `allOf`s could
/// otherwise multiply the pairs; past the budget the search gives up (and finds nothing).
const MAX_PAIRS: usize = 100_000;

/// A contradiction found: where (a JSON pointer into the composed schema) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    /// JSON pointer of the keyword in the composed schema (`/properties/summary/type`).
    pub(super) pointer: String,
    /// The two constraints, lowercase (`type "string" and type "integer"`).
    pub(super) detail: String,
}

/// The first contradiction between `first` and `second`, two schemas for the same place (`at`).
/// `first` may be `second` itself, to find what contradicts itself.
pub(super) fn between(first: &Value, second: &Value, at: &str) -> Option<Found> {
    let mut budget = MAX_PAIRS;
    search(first, second, at, 0, &mut budget)
}

fn search(
    first: &Value,
    second: &Value,
    at: &str,
    depth: usize,
    budget: &mut usize,
) -> Option<Found> {
    if depth > MAX_DEPTH {
        return None;
    }
    let (a_parts, b_parts) = (parts(first, depth), parts(second, depth));
    for a in &a_parts {
        for b in &b_parts {
            *budget = budget.checked_sub(1)?;
            if let Some(found) = keywords(a, b, at) {
                return Some(found);
            }
        }
    }
    for a in &a_parts {
        for b in &b_parts {
            if let Some(found) = nested(a, b, at, depth, budget) {
                return Some(found);
            }
        }
    }
    None
}

/// A schema and, flattened, the objects of its `allOf`: all of them hold at once.
fn parts(schema: &Value, depth: usize) -> Vec<&Map<String, Value>> {
    let mut out = Vec::new();
    let mut todo = vec![(schema, depth)];
    while let Some((schema, depth)) = todo.pop() {
        let Value::Object(map) = schema else { continue };
        out.push(map);
        if depth < MAX_DEPTH
            && let Some(Value::Array(items)) = map.get("allOf")
        {
            todo.extend(items.iter().rev().map(|item| (item, depth + 1)));
        }
    }
    out
}

/// The same property or the items, in both.
fn nested(
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    at: &str,
    depth: usize,
    budget: &mut usize,
) -> Option<Found> {
    if let Some(found) = required_but_false(a, b, at).or_else(|| required_but_false(b, a, at)) {
        return Some(found);
    }
    if let (Some(Value::Object(pa)), Some(Value::Object(pb))) =
        (a.get("properties"), b.get("properties"))
    {
        for (name, sa) in pa {
            if let Some(sb) = pb.get(name) {
                let here = crate::pointer::push(&crate::pointer::push(at, "properties"), name);
                if let Some(found) = search(sa, sb, &here, depth + 1, budget) {
                    return Some(found);
                }
            }
        }
    }
    if let (Some(ia @ Value::Object(_)), Some(ib @ Value::Object(_))) =
        (a.get("items"), b.get("items"))
    {
        return search(
            ia,
            ib,
            &crate::pointer::push(at, "items"),
            depth + 1,
            budget,
        );
    }
    None
}

/// A name `required` by `a` whose schema in `b` is `false`.
fn required_but_false(a: &Map<String, Value>, b: &Map<String, Value>, at: &str) -> Option<Found> {
    let Some(Value::Array(required)) = a.get("required") else {
        return None;
    };
    let Some(Value::Object(properties)) = b.get("properties") else {
        return None;
    };
    required.iter().filter_map(Value::as_str).find_map(|name| {
        (properties.get(name) == Some(&Value::Bool(false))).then(|| Found {
            pointer: crate::pointer::push(&crate::pointer::push(at, "properties"), name),
            detail: format!("property `{name}` is required but its schema is `false`"),
        })
    })
}

/// Keywords of `a` and `b` (the same subschema) that no value can meet together.
fn keywords(a: &Map<String, Value>, b: &Map<String, Value>, at: &str) -> Option<Found> {
    let found = |keyword: &str, detail: String| {
        Some(Found {
            pointer: crate::pointer::push(at, keyword),
            detail,
        })
    };
    if let (Some(ta), Some(tb)) = (types(a), types(b))
        && !ta.iter().any(|x| tb.iter().any(|y| types_meet(x, y)))
    {
        return found(
            "type",
            format!("type {} and type {}", show(a, "type"), show(b, "type")),
        );
    }
    for (x, y) in [(a, b), (b, a)] {
        if let Some(detail) = value_against(x, y) {
            return found(
                if x.contains_key("const") {
                    "const"
                } else {
                    "enum"
                },
                detail,
            );
        }
    }
    for (low, high) in [
        ("minimum", "maximum"),
        ("minLength", "maxLength"),
        ("minItems", "maxItems"),
        ("minProperties", "maxProperties"),
    ] {
        for (x, y) in [(a, b), (b, a)] {
            if let (Some(min), Some(max)) = (number(x, low), number(y, high))
                && min > max
            {
                return found(
                    low,
                    format!(
                        "{low} {} is greater than {high} {}",
                        show(x, low),
                        show(y, high)
                    ),
                );
            }
        }
    }
    None
}

/// What the `const` or `enum` of `x` rules out against `y`'s `const`, `enum` or `type`.
fn value_against(x: &Map<String, Value>, y: &Map<String, Value>) -> Option<String> {
    let allowed: Vec<&Value> = match (x.get("const"), x.get("enum")) {
        (Some(c), _) => vec![c],
        (None, Some(Value::Array(items))) => items.iter().collect(),
        _ => return None,
    };
    let what = if x.contains_key("const") {
        "const"
    } else {
        "enum"
    };
    if let Some(c) = y.get("const")
        && !allowed.iter().any(|v| same(v, c))
    {
        return Some(format!("{what} {} and const {c}", show(x, what)));
    }
    if let Some(Value::Array(other)) = y.get("enum")
        && !allowed.iter().any(|v| other.iter().any(|w| same(v, w)))
    {
        return Some(format!(
            "{what} {} and enum {}",
            show(x, what),
            show(y, "enum")
        ));
    }
    if let Some(types) = types(y)
        && !allowed
            .iter()
            .any(|v| types.iter().any(|t| is_of_type(v, t)))
    {
        return Some(format!(
            "{what} {} and type {}",
            show(x, what),
            show(y, "type")
        ));
    }
    None
}

/// The names in `type`, when it is a string or an array of strings.
fn types(schema: &Map<String, Value>) -> Option<Vec<&str>> {
    match schema.get("type")? {
        Value::String(t) => Some(vec![t.as_str()]),
        Value::Array(ts) => ts.iter().map(Value::as_str).collect(),
        _ => None,
    }
}

/// Whether a value can be of type `x` and of type `y` (an integer is a number).
fn types_meet(x: &str, y: &str) -> bool {
    x == y || matches!((x, y), ("integer", "number") | ("number", "integer"))
}

fn is_of_type(value: &Value, ty: &str) -> bool {
    match (value, ty) {
        (Value::Null, "null")
        | (Value::Bool(_), "boolean")
        | (Value::String(_), "string")
        | (Value::Array(_), "array")
        | (Value::Object(_), "object")
        | (Value::Number(_), "number") => true,
        (Value::Number(n), "integer") => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// JSON Schema equality: numbers by value (`1` is `1.0`), objects without regard to order.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn number(schema: &Map<String, Value>, keyword: &str) -> Option<f64> {
    schema.get(keyword)?.as_f64()
}

/// A keyword's value as JSON, shortened for a message.
fn show(schema: &Map<String, Value>, keyword: &str) -> String {
    let text = schema
        .get(keyword)
        .map(Value::to_string)
        .unwrap_or_default();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or_default()),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[track_caller]
    fn check(a: Value, b: Value, expected: Option<(&str, &str)>) {
        let found = between(&a, &b, "");
        let found = found
            .as_ref()
            .map(|f| (f.pointer.as_str(), f.detail.as_str()));
        assert_eq!(found, expected, "{a} and {b}");
    }

    #[test]
    fn contradictions() {
        check(
            json!({"type": "string"}),
            json!({"type": "integer"}),
            Some(("/type", "type \"string\" and type \"integer\"")),
        );
        check(
            json!({"type": "integer"}),
            json!({"type": ["number", "null"]}),
            None,
        );
        check(
            json!({"const": "a"}),
            json!({"const": "b"}),
            Some(("/const", "const \"a\" and const \"b\"")),
        );
        check(json!({"const": 1}), json!({"const": 1.0}), None);
        check(
            json!({"const": "c"}),
            json!({"enum": ["a", "b"]}),
            Some(("/const", "const \"c\" and enum [\"a\",\"b\"]")),
        );
        check(
            json!({"enum": ["a", "b"]}),
            json!({"const": "c"}),
            Some(("/enum", "enum [\"a\",\"b\"] and const \"c\"")),
        );
        check(
            json!({"enum": ["a"]}),
            json!({"enum": ["b"]}),
            Some(("/enum", "enum [\"a\"] and enum [\"b\"]")),
        );
        check(
            json!({"const": 1.5}),
            json!({"type": "integer"}),
            Some(("/const", "const 1.5 and type \"integer\"")),
        );
        check(json!({"enum": ["a", 1]}), json!({"type": "integer"}), None);
        check(
            json!({"minLength": 10}),
            json!({"maxLength": 5}),
            Some(("/minLength", "minLength 10 is greater than maxLength 5")),
        );
        check(
            json!({"maxItems": 1}),
            json!({"minItems": 2}),
            Some(("/minItems", "minItems 2 is greater than maxItems 1")),
        );
        check(json!({"minimum": 1}), json!({"maximum": 1}), None);
        check(
            json!({"required": ["x"]}),
            json!({"properties": {"x": false}}),
            Some((
                "/properties/x",
                "property `x` is required but its schema is `false`",
            )),
        );
        // Followed through properties, items and allOf.
        check(
            json!({"properties": {"a": {"items": {"type": "string"}}}}),
            json!({"allOf": [{"properties": {"a": {"items": {"type": "null"}}}}]}),
            Some((
                "/properties/a/items/type",
                "type \"string\" and type \"null\"",
            )),
        );
        // One schema against itself.
        let own = json!({"minimum": 3, "maximum": 2});
        check(
            own.clone(),
            own,
            Some(("/minimum", "minimum 3 is greater than maximum 2")),
        );
        // Not looked into: alternatives.
        check(
            json!({"anyOf": [{"type": "string"}]}),
            json!({"type": "integer"}),
            None,
        );
    }

    #[test]
    fn deep_nesting_is_not_followed_forever() {
        let mut a = json!({"type": "string"});
        let mut b = json!({"type": "integer"});
        for _ in 0..200 {
            a = json!({"properties": {"x": a}});
            b = json!({"properties": {"x": b}});
        }
        check(a, b, None);
    }
}
