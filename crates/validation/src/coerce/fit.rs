//! How far a value is from fitting a schema: a cheap count of structural mismatches, to choose a
//! union's branch. Not a validator: it looks at types, `enum`/`const`, required properties, properties
//! `additionalProperties: false` forbids, items, `$ref`, `allOf` and unions, and nothing else.

use serde_json::Value;

use super::{MAX_DEPTH, admits, lookup, types};

/// The number of mismatches between `value` and `schema` (0: nothing this counts is wrong).
pub(super) fn misfit(value: &Value, schema: &Value, root: &Value, depth: usize) -> usize {
    if depth > MAX_DEPTH {
        return 0;
    }
    let node = match schema {
        Value::Object(node) => node,
        Value::Bool(false) => return 1,
        _ => return 0,
    };
    let mut count = 0;
    if let Some(target) = node
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| lookup(root, r))
    {
        count += misfit(value, target, root, depth + 1);
    }
    if let Some(Value::Array(all)) = node.get("allOf") {
        count += all
            .iter()
            .map(|sub| misfit(value, sub, root, depth + 1))
            .sum::<usize>();
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = node.get(keyword) {
            count += branches
                .iter()
                .map(|sub| misfit(value, sub, root, depth + 1))
                .min()
                .unwrap_or(0);
        }
    }
    if let Some(allowed) = types(node)
        && !allowed.iter().any(|t| admits(t, value))
    {
        return count + 1;
    }
    if let Some(Value::Array(options)) = node.get("enum")
        && !options.contains(value)
    {
        count += 1;
    }
    if node.get("const").is_some_and(|c| c != value) {
        count += 1;
    }
    match value {
        Value::Object(map) => {
            let required = node.get("required").and_then(Value::as_array);
            count += required
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter(|key| !map.contains_key(*key))
                .count();
            let props = node.get("properties").and_then(Value::as_object);
            let closed = node.get("additionalProperties") == Some(&Value::Bool(false))
                && node.get("patternProperties").is_none();
            for (key, v) in map {
                match props.and_then(|p| p.get(key)) {
                    Some(sub) => count += misfit(v, sub, root, depth + 1),
                    None if closed => count += 1,
                    None => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = node.get("items").filter(|i| i.is_object())
                && node.get("prefixItems").is_none()
            {
                count += items
                    .iter()
                    .map(|item| misfit(item, sub, root, depth + 1))
                    .sum::<usize>();
            }
        }
        _ => {}
    }
    count
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn counts_what_it_looks_at() {
        let schema = json!({
            "type": "object", "required": ["a", "b"], "additionalProperties": false,
            "properties": {"a": {"type": "integer"}, "b": {"enum": ["x"]}, "c": {"$ref": "#/$defs/C"}},
            "$defs": {"C": {"type": "array", "items": {"type": "string"}}}
        });
        let at = |v: Value| misfit(&v, &schema, &schema, 0);
        assert_eq!(at(json!({"a": 1, "b": "x"})), 0);
        assert_eq!(at(json!({"a": "1", "b": "x"})), 1);
        assert_eq!(at(json!({"a": 1})), 1);
        assert_eq!(at(json!({"a": 1, "b": "y", "z": 0})), 2);
        assert_eq!(at(json!({"a": 1, "b": "x", "c": ["s", 1, 2]})), 2);
        assert_eq!(at(json!("not an object")), 1);
        let union = json!({"anyOf": [{"type": "integer"}, {"type": "null"}]});
        assert_eq!(misfit(&json!(null), &union, &union, 0), 0);
        assert_eq!(misfit(&json!("x"), &union, &union, 0), 1);
        assert_eq!(misfit(&json!(1), &json!(false), &union, 0), 1);
    }
}
