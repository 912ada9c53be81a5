//! Whether a `oneOf` can become an `anyOf` without changing what it accepts.

use serde_json::Value;

use crate::dialect::{Cx, types_of};

/// What a `oneOf` branch certainly requires, gathered through `$ref` and `allOf`.
#[derive(Default)]
struct Facts {
    /// The JSON types it admits (`None`: unknown, any).
    types: Option<Vec<String>>,
    required: Vec<String>,
    /// Properties whose schema is a single value (`const` or a one-value `enum`).
    consts: Vec<(String, Value)>,
    /// Schemas looked at so far, against [`MAX_VISITS`].
    visits: usize,
}

/// How many `$ref`/`allOf` steps [`gather`] follows; deeper facts are simply not known.
const MAX_HOPS: usize = 16;

/// How many schemas [`gather`] looks at per branch (`allOf`s of `$ref`s to `allOf`s grow exponentially).
const MAX_VISITS: usize = 256;

/// Whether at most one branch can match any instance: all branches are objects that require one property
/// with a different constant each (a discriminator), or their types are pairwise disjoint.
pub(super) fn one_of_is_exclusive(cx: &Cx<'_>, branches: &[Value]) -> bool {
    let facts: Vec<Facts> = branches
        .iter()
        .map(|b| {
            let mut facts = Facts::default();
            gather(cx, b, &mut facts, 0);
            facts
        })
        .collect();
    let Some(first) = facts.first() else {
        return true;
    };
    let objects = facts.iter().all(|f| {
        f.types
            .as_ref()
            .is_some_and(|t| t.iter().all(|t| t == "object"))
    });
    let discriminated = objects
        && first.required.iter().any(|name| {
            let values: Option<Vec<&Value>> = facts
                .iter()
                .map(|f| {
                    let value = f.consts.iter().find(|(n, _)| n == name).map(|(_, v)| v);
                    value.filter(|_| f.required.contains(name))
                })
                .collect();
            values.is_some_and(|values| {
                values
                    .iter()
                    .enumerate()
                    .all(|(i, a)| values[i + 1..].iter().all(|b| a != b))
            })
        });
    let typed = facts.iter().enumerate().all(|(i, a)| {
        facts[i + 1..].iter().all(|b| match (&a.types, &b.types) {
            (Some(a), Some(b)) => !types_overlap(a, b),
            _ => false,
        })
    });
    discriminated || typed
}

fn gather(cx: &Cx<'_>, schema: &Value, facts: &mut Facts, hops: usize) {
    facts.visits += 1;
    let map = match schema {
        Value::Object(map) if hops <= MAX_HOPS && facts.visits <= MAX_VISITS => map,
        Value::Bool(false) => {
            facts.types = Some(Vec::new());
            return;
        }
        _ => return,
    };
    if let Some(Value::String(reference)) = map.get("$ref")
        && let Ok((target, _)) = cx.resolve(reference, "")
    {
        gather(cx, target, facts, hops + 1);
    }
    if map.contains_key("type") {
        let types: Vec<String> = types_of(map).into_iter().map(str::to_owned).collect();
        facts.types = Some(match facts.types.take() {
            Some(known) => intersect_types(&known, &types),
            None => types,
        });
    }
    if let Some(Value::Array(names)) = map.get("required") {
        facts
            .required
            .extend(names.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (name, property) in properties {
            if let Some(value) = single_value(cx, property, hops + 1) {
                facts.consts.push((name.clone(), value));
            }
        }
    }
    if let Some(Value::Array(all_of)) = map.get("allOf") {
        for branch in all_of {
            gather(cx, branch, facts, hops + 1);
        }
    }
}

/// The one value a schema admits, through a `$ref` chain: `const`, or an `enum` of one.
fn single_value(cx: &Cx<'_>, schema: &Value, hops: usize) -> Option<Value> {
    let map = schema.as_object().filter(|_| hops <= MAX_HOPS)?;
    if let Some(value) = map.get("const") {
        return Some(value.clone());
    }
    if let Some(Value::Array(values)) = map.get("enum")
        && let [value] = values.as_slice()
    {
        return Some(value.clone());
    }
    let reference = map.get("$ref")?.as_str()?;
    let (target, _) = cx.resolve(reference, "").ok()?;
    single_value(cx, target, hops + 1)
}

/// Whether some value has a type in both lists (an integer is also a number).
fn types_overlap(a: &[String], b: &[String]) -> bool {
    !intersect_types(a, b).is_empty()
}

pub(super) fn intersect_types(a: &[String], b: &[String]) -> Vec<String> {
    let has = |list: &[String], t: &str| list.iter().any(|x| x == t);
    let mut out = Vec::new();
    for t in a {
        let both = has(b, t)
            || (t == "integer" && has(b, "number"))
            || (t == "number" && has(b, "integer"));
        if both {
            let t = if t == "number" && !has(b, "number") {
                "integer"
            } else {
                t.as_str()
            };
            if !has(&out, t) {
                out.push(t.to_owned());
            }
        }
    }
    out
}
