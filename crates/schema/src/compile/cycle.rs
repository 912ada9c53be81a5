//! `$ref` cycles that never reach a value: `a` refers to `b`, which refers back to `a`, with no
//! `properties` or `items` in between, so validating anything would loop. boon compiles them and
//! only fails while validating, which would look like a fault of the instance; they are schema errors.
//!
//! Recursion that goes down into the instance on the way (a tree whose `children` items refer back to
//! the node) is fine and is not reported.

use std::collections::HashMap;

use serde_json::Value;

use crate::pointer::push;

/// Keywords whose subschemas apply to the same instance location: a loop through them alone never
/// moves into the instance.
const IN_PLACE_ONE: &[&str] = &["not", "if", "then", "else"];
const IN_PLACE_MANY: &[&str] = &["allOf", "anyOf", "oneOf"];
const IN_PLACE_MAP: &[&str] = &["dependentSchemas", "dependencies"];

/// Keywords whose subschemas apply to parts of the instance (or are only definitions).
const DOWN_ONE: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
const DOWN_MANY: &[&str] = &["prefixItems"];
const DOWN_MAP: &[&str] = &["properties", "patternProperties", "$defs", "definitions"];

/// A cycle found: the JSON pointer of the `$ref` that closes it, and the subschemas it goes through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Cycle {
    /// Pointer of the `$ref` keyword that leads back into the cycle.
    pub(super) at: String,
    /// The subschemas of the cycle, in order, the first repeated at the end.
    pub(super) path: Vec<String>,
}

/// The first `$ref` cycle in `schema` that stays at one instance location, if any.
///
/// A document with embedded resources (a nested `$id` other than `#name`) is not searched: their
/// references resolve against their own base, which this module does not follow.
pub(super) fn find(schema: &Value) -> Option<Cycle> {
    let nodes = subschemas(schema);
    let embedded = nodes.iter().filter(|at| !at.is_empty()).any(|at| {
        schema
            .pointer(at)
            .and_then(|s| s.get("$id"))
            .and_then(Value::as_str)
            .is_some_and(|id| !id.starts_with('#'))
    });
    if embedded {
        return None;
    }
    let anchors = anchors(schema);
    let mut state: HashMap<String, State> = HashMap::new();
    for start in nodes {
        if state.contains_key(&start) {
            continue;
        }
        if let Some(cycle) = search(schema, &anchors, start, &mut state) {
            return Some(cycle);
        }
    }
    None
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// On the path being explored.
    Open,
    /// Explored: no cycle through it.
    Done,
}

/// A subschema on the search path, its in-place edges (keyword pointer, target), the next to follow.
type Frame = (String, Vec<(String, String)>, usize);

/// Depth-first search along in-place edges from `start`, without recursion (a hostile schema may
/// nest deeply). Each subschema is explored once, so the search is linear in the schema.
fn search(
    schema: &Value,
    anchors: &HashMap<String, String>,
    start: String,
    state: &mut HashMap<String, State>,
) -> Option<Cycle> {
    let mut stack: Vec<Frame> = Vec::new();
    let successors = in_place(schema, anchors, &start);
    state.insert(start.clone(), State::Open);
    stack.push((start, successors, 0));
    while let Some((node, edges, next)) = stack.last_mut() {
        let Some((edge, target)) = edges.get(*next).cloned() else {
            state.insert(node.clone(), State::Done);
            stack.pop();
            continue;
        };
        *next += 1;
        match state.get(&target) {
            Some(State::Done) => {}
            Some(State::Open) => {
                let from = stack.iter().position(|(n, _, _)| *n == target).unwrap_or(0);
                let mut path: Vec<String> =
                    stack.iter().skip(from).map(|(n, _, _)| n.clone()).collect();
                path.push(target);
                return Some(Cycle { at: edge, path });
            }
            None => {
                let successors = in_place(schema, anchors, &target);
                state.insert(target.clone(), State::Open);
                stack.push((target, successors, 0));
            }
        }
    }
    None
}

/// The subschemas applied to the same instance location as the one at `at`: (pointer of the edge's
/// keyword, pointer of the subschema). A `$ref` that does not resolve inside the document is left out
/// (compilation reports it).
fn in_place(schema: &Value, anchors: &HashMap<String, String>, at: &str) -> Vec<(String, String)> {
    let Some(Value::Object(map)) = schema.pointer(at) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for keyword in ["$ref", "$dynamicRef", "$recursiveRef"] {
        if let Some(Value::String(reference)) = map.get(keyword)
            && let Some(target) = resolve(reference, anchors)
        {
            out.push((push(at, keyword), target));
        }
    }
    for &keyword in IN_PLACE_ONE {
        if map.get(keyword).is_some_and(Value::is_object) {
            let here = push(at, keyword);
            out.push((here.clone(), here));
        }
    }
    for &keyword in IN_PLACE_MANY {
        if let Some(Value::Array(items)) = map.get(keyword) {
            let here = push(at, keyword);
            for (i, item) in items.iter().enumerate() {
                if item.is_object() {
                    let item = push(&here, &i.to_string());
                    out.push((item.clone(), item));
                }
            }
        }
    }
    for &keyword in IN_PLACE_MAP {
        if let Some(Value::Object(entries)) = map.get(keyword) {
            let here = push(at, keyword);
            for (name, value) in entries {
                if value.is_object() {
                    let entry = push(&here, name);
                    out.push((entry.clone(), entry));
                }
            }
        }
    }
    out
}

/// The pointers of every subschema of `schema` (not of `const`, `enum` or annotation values).
pub(super) fn subschemas(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect(schema, String::new(), &mut out);
    out
}

/// Every subschema of the document, by pointer (where searches start).
fn collect(value: &Value, at: String, out: &mut Vec<String>) {
    let mut todo = vec![(value, at)];
    while let Some((value, at)) = todo.pop() {
        let Value::Object(map) = value else { continue };
        let mut children: Vec<(&Value, String)> = Vec::new();
        for (keyword, child) in map {
            let here = push(&at, keyword);
            let one = IN_PLACE_ONE.contains(&keyword.as_str())
                || DOWN_ONE.contains(&keyword.as_str())
                || (keyword == "items" && child.is_object());
            let many = IN_PLACE_MANY.contains(&keyword.as_str())
                || DOWN_MANY.contains(&keyword.as_str())
                || keyword == "items";
            let entries =
                IN_PLACE_MAP.contains(&keyword.as_str()) || DOWN_MAP.contains(&keyword.as_str());
            match child {
                Value::Object(_) if one => children.push((child, here)),
                Value::Array(items) if many => children.extend(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, item)| (item, push(&here, &i.to_string()))),
                ),
                Value::Object(entries_map) if entries => children.extend(
                    entries_map
                        .iter()
                        .map(|(name, item)| (item, push(&here, name))),
                ),
                _ => {}
            }
        }
        out.push(at);
        todo.extend(children.into_iter().rev());
    }
}

/// `$anchor` names (and `$id`s of the form `#name`, draft-07) to the pointer of their subschema.
fn anchors(schema: &Value) -> HashMap<String, String> {
    let nodes = subschemas(schema);
    let mut out = HashMap::new();
    for at in nodes {
        let Some(Value::Object(map)) = schema.pointer(&at) else {
            continue;
        };
        if let Some(Value::String(name)) = map.get("$anchor") {
            out.entry(name.clone()).or_insert_with(|| at.clone());
        }
        if let Some(Value::String(id)) = map.get("$id")
            && let Some(name) = id.strip_prefix('#')
        {
            out.entry(name.to_owned()).or_insert(at);
        }
    }
    out
}

/// The pointer a same-document reference names: `#`, `#/json/pointer` (percent-encoded) or
/// `#anchor`, optionally after the document's own URL.
fn resolve(reference: &str, anchors: &HashMap<String, String>) -> Option<String> {
    let fragment = reference
        .strip_prefix(super::ROOT_URL)
        .unwrap_or(reference)
        .strip_prefix('#')?;
    if fragment.is_empty() || fragment.starts_with('/') {
        return percent_decode(fragment);
    }
    anchors.get(fragment).cloned()
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[track_caller]
    fn check(schema: Value, expected: Option<(&str, &[&str])>) {
        let found = find(&schema);
        let found = found.as_ref().map(|c| {
            (
                c.at.as_str(),
                c.path.iter().map(String::as_str).collect::<Vec<_>>(),
            )
        });
        let expected = expected.map(|(at, path)| (at, path.to_vec()));
        assert_eq!(found, expected, "{schema}");
    }

    #[test]
    fn cycles_without_progress() {
        check(
            json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
            Some(("/$defs/b/$ref", &["/$defs/a", "/$defs/b", "/$defs/a"])),
        );
        check(json!({"$ref": "#"}), Some(("/$ref", &["", ""])));
        check(
            json!({"anyOf": [{"type": "string"}, {"$ref": "#"}]}),
            Some(("/anyOf/1/$ref", &["", "/anyOf/1", ""])),
        );
        check(
            json!({"properties": {"x": {"$ref": "#/properties/x"}}}),
            Some(("/properties/x/$ref", &["/properties/x", "/properties/x"])),
        );
        check(
            json!({"$defs": {"a": {"$anchor": "top", "allOf": [{"$ref": "#top"}]}}}),
            Some((
                "/$defs/a/allOf/0/$ref",
                &["/$defs/a", "/$defs/a/allOf/0", "/$defs/a"],
            )),
        );
        check(
            json!({"$defs": {"a b": {"$ref": "#/$defs/a%20b"}}}),
            Some(("/$defs/a b/$ref", &["/$defs/a b", "/$defs/a b"])),
        );
    }

    #[test]
    fn recursion_into_the_instance_is_fine() {
        check(
            json!({"$defs": {"node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
                "$ref": "#/$defs/node"}),
            None,
        );
        check(
            json!({"properties": {"next": {"$ref": "#"}}, "additionalProperties": {"$ref": "#"}}),
            None,
        );
        check(json!({"$ref": "#/$defs/missing"}), None);
        // `#` inside an embedded resource is that resource, not the document: not followed.
        check(
            json!({"allOf": [{"$ref": "#/$defs/x"}], "$defs": {"x": {"$id": "urn:x", "allOf": [{"$ref": "#"}]}}}),
            None,
        );
        check(json!({"$ref": "other.json"}), None);
    }
}
