//! Merging compiled schemas that apply to the same instance (`allOf` branches, a `$ref` target and its
//! siblings) into one map, where that keeps their meaning.

use serde_json::{Map, Value};

use super::is_assertion;
use crate::dialect::{Cx, LossKind};

/// Merges the `allOf` branches that [`mergeable`] allows into the schema holding them (reported as the
/// `allOf` rewritten); the rest stay in `allOf`.
pub(super) fn merge_all_of(
    cx: &mut Cx<'_>,
    mut out: Map<String, Value>,
    pointer: &str,
    original: Option<&Value>,
) -> Map<String, Value> {
    let Some(Value::Array(branches)) = out.shift_remove("allOf") else {
        return out;
    };
    let mut kept = Vec::new();
    let mut merged = false;
    // Last branch first, so that properties end up in branch order, ahead of the holder's own.
    for branch in branches.into_iter().rev() {
        match branch {
            Value::Object(side) if mergeable(&out, &side) => {
                merge_into(&mut out, side, true, false);
                merged = true;
            }
            Value::Bool(true) => merged = true,
            other => kept.push(other),
        }
    }
    kept.reverse();
    if !kept.is_empty() {
        out.insert("allOf".to_owned(), Value::Array(kept));
    }
    if let (true, Some(original)) = (merged, original) {
        cx.loss(pointer, "allOf", original, LossKind::Rewritten);
    }
    out
}

/// Whether two compiled schemas that apply to the same instance can share one map without changing what
/// they accept: no assertion set differently on both sides (`properties` and `required` are united), and
/// no keyword that speaks about its neighbours (`additionalProperties` about `properties`, `items` about
/// `prefixItems`) next to a neighbour from the other side.
pub(super) fn mergeable(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    let asserts = |m: &Map<String, Value>| m.keys().any(|k| is_assertion(k));
    // llguidance cannot intersect a recursive `$ref` with anything.
    if (a.contains_key("$ref") && (asserts(b) || b.contains_key("$ref")))
        || (b.contains_key("$ref") && asserts(a))
    {
        return false;
    }
    for (key, value) in b {
        if !is_assertion(key) || key == "required" {
            continue;
        }
        match (key.as_str(), a.get(key), value) {
            (_, None, _) => {}
            ("properties", Some(Value::Object(have)), Value::Object(add)) => {
                if add.iter().any(|(n, s)| have.get(n).is_some_and(|h| h != s)) {
                    return false;
                }
            }
            (_, Some(have), value) if have == value => {}
            _ => return false,
        }
    }
    let neighbours = |group: &[&str], speakers: &[&str]| {
        let speaks = |m: &Map<String, Value>| speakers.iter().any(|k| m.contains_key(*k));
        let has = |m: &Map<String, Value>| group.iter().any(|k| m.contains_key(*k));
        let same = group.iter().all(|k| a.get(*k) == b.get(*k));
        !same && ((speaks(a) && has(b)) || (speaks(b) && has(a)))
    };
    let objects = ["properties", "patternProperties", "additionalProperties"];
    let arrays = ["prefixItems", "items", "additionalItems"];
    !neighbours(&objects, &objects[1..]) && !neighbours(&arrays, &arrays)
}

/// Adds `side` to `into` (see [`mergeable`]): `properties` and `required` united (`side_first`: the side's
/// names first), other keywords added; where both have one, `side_wins` decides (only annotations differ).
pub(super) fn merge_into(
    into: &mut Map<String, Value>,
    side: Map<String, Value>,
    side_first: bool,
    side_wins: bool,
) {
    for (key, value) in side {
        match (key.as_str(), into.get_mut(&key), value) {
            ("properties", Some(Value::Object(have)), Value::Object(add)) => {
                let (mut first, second) = if side_first {
                    (add, std::mem::take(have))
                } else {
                    (std::mem::take(have), add)
                };
                for (name, schema) in second {
                    first.entry(name).or_insert(schema);
                }
                *have = first;
            }
            ("required", Some(Value::Array(have)), Value::Array(add)) => {
                let (mut first, second) = if side_first {
                    (add, std::mem::take(have))
                } else {
                    (std::mem::take(have), add)
                };
                for name in second {
                    if !first.contains(&name) {
                        first.push(name);
                    }
                }
                *have = first;
            }
            (_, Some(have), value) => {
                if side_wins {
                    *have = value;
                }
            }
            (_, None, value) => {
                into.insert(key, value);
            }
        }
    }
}
