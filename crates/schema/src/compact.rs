//! Compaction: a leaner schema that accepts exactly the same instances, with every rewrite listed.
//!
//! Three rewrites, each applied only where it cannot change what validates:
//! - **merge**: an `allOf` whose items say the same thing (the same keywords up to annotations, as
//!   two deltas each adding a `notes` string make, or a proposal re-adding a field with a new
//!   description) becomes one schema; distinct descriptions are joined with `; ` (one that contains
//!   the other keeps the longer). Items with different constraints merge only when every keyword
//!   is independent of the others (`required` is the union, `enum` the intersection, bounds the
//!   tighter, `properties` merged by name); anything that reads its siblings
//!   (`additionalProperties`, `unevaluated*`, `$ref`, `if`...) keeps its `allOf`.
//! - **shorten**: a `description` or `title` that only repeats the property's name (`notes`: "The
//!   notes.") is removed; anything with another word is kept.
//! - **share**: a sub-schema written out more than once moves to the root's definitions and each
//!   place becomes a `$ref`, only when that shortens both the compact rendering and the JSON.
//!
//! [`compact_deltas`] compacts the deltas an extension registry composes, as one delta that
//! composes onto the same base to the same instances: what [`crate::Registry::compact`] activates.
//!
//! ```
//! use claij_schema::compact::compact;
//! use serde_json::json;
//!
//! let schema = json!({"type": "object", "properties": {"notes": {"allOf": [
//!     {"type": "string", "description": "notes"},
//!     {"type": "string", "description": "Anything the user should follow up"},
//! ]}}});
//! let compacted = compact(&schema);
//! assert_eq!(
//!     compacted.schema["properties"]["notes"],
//!     json!({"type": "string", "description": "Anything the user should follow up"}),
//! );
//! assert_eq!(compacted.rewrites.len(), 2); // merged, then the description that repeats the name
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::base::Draft;
use crate::compose::compose;
use crate::delta::SchemaDelta;
use crate::error::Result;

/// Who the audit log says proposed a compaction claij worked out: its entries are not a model's
/// proposals (a model is never told a declined compaction as one of its own).
pub const COMPACTED_BY: &str = "claij compact";

/// A compacted schema and what was rewritten.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    /// The compacted schema.
    pub schema: Value,
    /// Each rewrite, in the order made.
    pub rewrites: Vec<Rewrite>,
}

/// One rewrite [`compact`] made: what, where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewrite {
    /// What kind.
    pub kind: RewriteKind,
    /// Where: a JSON pointer into the schema before the rewrite.
    pub pointer: String,
    /// What exactly, in words.
    pub detail: String,
}

/// The kinds of [`Rewrite`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewriteKind {
    /// `allOf` items merged into one schema.
    Merged,
    /// A description or title that repeats the property name removed.
    Shortened,
    /// A repeated sub-schema moved to the definitions, referenced where it was.
    Shared,
}

impl fmt::Display for Rewrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            RewriteKind::Merged => "merged",
            RewriteKind::Shortened => "shortened",
            RewriteKind::Shared => "shared",
        };
        write!(f, "{kind} at `{}`: {}", self.pointer, self.detail)
    }
}

/// The schema compacted (see the [module docs](self)); an identical copy with no rewrites when
/// nothing can be compacted.
pub fn compact(schema: &Value) -> Compacted {
    compact_reserving(schema, &BTreeSet::new())
}

/// The `deltas` compacted into one delta: composed onto `base` it accepts exactly the instances
/// that `base` with `deltas` composed accepts. The rewrites' pointers are into that delta.
///
/// ```
/// use claij_schema::{SchemaDelta, base, compose};
/// use claij_schema::compact::compact_deltas;
/// use serde_json::json;
///
/// let notes = |id: &str, by: &str| SchemaDelta::new(id, by, json!({
///     "properties": {"notes": {"type": "string", "description": "Notes"}},
/// }));
/// let (delta, rewrites) = compact_deltas(&base(), &[notes("a", "x"), notes("b", "y")])?;
/// assert_eq!(delta, json!({"properties": {"notes": {"type": "string"}}}));
/// assert_eq!(rewrites[0].pointer, "/properties/notes/description");
/// # Ok::<(), claij_schema::Error>(())
/// ```
///
/// # Errors
///
/// The composition error when `deltas` do not compose.
pub fn compact_deltas(base: &Value, deltas: &[SchemaDelta]) -> Result<(Value, Vec<Rewrite>)> {
    let mut scratch = Map::new();
    if let Some(draft) = base.get("$schema") {
        scratch.insert("$schema".into(), draft.clone());
    }
    let union = compose(&Value::Object(scratch), deltas)?;
    // Composed onto the base, the delta's definitions join the base's: new names must not clash.
    let reserved: BTreeSet<String> = ["$defs", "definitions"]
        .iter()
        .filter_map(|k| base.get(*k).and_then(Value::as_object))
        .flat_map(|defs| defs.keys().cloned())
        .collect();
    let Compacted {
        mut schema,
        rewrites,
    } = compact_reserving(&union, &reserved);
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
    }
    Ok((schema, rewrites))
}

fn compact_reserving(schema: &Value, reserved: &BTreeSet<String>) -> Compacted {
    let mut out = schema.clone();
    let mut rewrites = Vec::new();
    rewrite(&mut out, "", None, 0, &mut rewrites);
    share(&mut out, reserved, &mut rewrites);
    Compacted {
        schema: out,
        rewrites,
    }
}

/// Deepest nesting rewritten (schemas are untrusted input); deeper parts are left as they are.
const MAX_DEPTH: usize = 64;

/// Keywords that hold one sub-schema.
const ONE: [&str; 11] = [
    "additionalProperties",
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
];
/// Keywords that hold an array of sub-schemas.
const MANY: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords that hold a map of sub-schemas.
const NAMED: [&str; 6] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// Annotations: they never change what validates.
const ANNOTATIONS: [&str; 8] = [
    "description",
    "title",
    "examples",
    "default",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Keywords that constrain only the instance, never reading a sibling keyword: two schemas of
/// these alone merge keyword by keyword.
const INDEPENDENT: [&str; 19] = [
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "required",
    "properties",
];

/// Rewrites `schema` (at `pointer`, the value of property `name` if it is one) bottom-up: merges,
/// then the name's repetitions.
fn rewrite(
    schema: &mut Value,
    pointer: &str,
    name: Option<&str>,
    depth: usize,
    rewrites: &mut Vec<Rewrite>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let Value::Object(map) = schema else {
        return;
    };
    for key in ONE {
        if let Some(sub) = map.get_mut(key) {
            rewrite(
                sub,
                &crate::pointer::push(pointer, key),
                None,
                depth + 1,
                rewrites,
            );
        }
    }
    for key in MANY {
        if let Some(Value::Array(items)) = map.get_mut(key) {
            let at = crate::pointer::push(pointer, key);
            for (i, item) in items.iter_mut().enumerate() {
                let at = crate::pointer::push(&at, &i.to_string());
                rewrite(
                    item,
                    &at,
                    name.filter(|_| key == "allOf"),
                    depth + 1,
                    rewrites,
                );
            }
        }
    }
    for key in NAMED {
        if let Some(Value::Object(subs)) = map.get_mut(key) {
            let at = crate::pointer::push(pointer, key);
            let named = key == "properties";
            for (sub_name, sub) in subs.iter_mut() {
                let at = crate::pointer::push(&at, sub_name);
                rewrite(
                    sub,
                    &at,
                    named.then_some(sub_name.as_str()),
                    depth + 1,
                    rewrites,
                );
            }
        }
    }
    merge_all_of(map, pointer, rewrites);
    if let Some(name) = name {
        shorten(map, pointer, name, rewrites);
    }
}

/// Merges the items of `map`'s `allOf` that say the same thing, and the lone result into `map`.
fn merge_all_of(map: &mut Map<String, Value>, pointer: &str, rewrites: &mut Vec<Rewrite>) {
    let Some(Value::Array(items)) = map.get("allOf") else {
        return;
    };
    let before = items.len();
    let mut merged: Vec<Value> = Vec::new();
    for item in items {
        if let Some(slot) = merged.iter_mut().find_map(|m| {
            let joined = merge(m, item)?;
            Some((m, joined))
        }) {
            let (m, joined) = slot;
            *m = joined;
        } else {
            merged.push(item.clone());
        }
    }
    // The allOf's one schema merges into its host when they too say compatible things.
    let mut host = map.clone();
    host.remove("allOf");
    let mut into_host = false;
    if merged.len() == 1
        && let Some(Value::Object(joined)) = merge(&Value::Object(host.clone()), &merged[0])
    {
        *map = joined;
        into_host = true;
    }
    if !into_host && merged.len() < before {
        map.insert("allOf".into(), Value::Array(merged.clone()));
    }
    if into_host || merged.len() < before {
        let after = if into_host { 1 } else { merged.len() };
        rewrites.push(Rewrite {
            kind: RewriteKind::Merged,
            pointer: crate::pointer::push(pointer, "allOf"),
            detail: format!("{before} schemas merged into {after} accepting the same values"),
        });
    }
}

/// One schema meaning both `a` and `b` (their conjunction), or `None` when that cannot be written
/// without `allOf`.
fn merge(a: &Value, b: &Value) -> Option<Value> {
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        return match (a, b) {
            (Value::Bool(true), other) | (other, Value::Bool(true)) => Some(other.clone()),
            _ => None,
        };
    };
    let same_constraints = without_annotations(a) == without_annotations(b);
    let independent = |m: &Map<String, Value>| {
        m.keys()
            .all(|k| INDEPENDENT.contains(&k.as_str()) || ANNOTATIONS.contains(&k.as_str()))
    };
    let only_annotations =
        |m: &Map<String, Value>| m.keys().all(|k| ANNOTATIONS.contains(&k.as_str()));
    let mergeable = same_constraints
        || only_annotations(a)
        || only_annotations(b)
        || (independent(a) && independent(b));
    if !mergeable {
        return None;
    }
    let mut out = a.clone();
    for (key, theirs) in b {
        let Some(ours) = out.get(key) else {
            out.insert(key.clone(), theirs.clone());
            continue;
        };
        if ours == theirs {
            continue;
        }
        let joined = merge_keyword(key, ours, theirs)?;
        out.insert(key.clone(), joined);
    }
    Some(Value::Object(out))
}

fn without_annotations(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// One value of `key` meaning both `ours` and `theirs` (which differ).
fn merge_keyword(key: &str, ours: &Value, theirs: &Value) -> Option<Value> {
    match key {
        "description" | "title" => {
            let (a, b) = (ours.as_str()?, theirs.as_str()?);
            Some(Value::String(if a.contains(b) {
                a.to_owned()
            } else if b.contains(a) {
                b.to_owned()
            } else {
                format!("{a}; {b}")
            }))
        }
        "examples" => {
            let mut all = ours.as_array()?.clone();
            for v in theirs.as_array()? {
                if !all.contains(v) {
                    all.push(v.clone());
                }
            }
            Some(Value::Array(all))
        }
        // The newer default; $comment and the flags are annotations too.
        "default" | "$comment" => Some(theirs.clone()),
        "deprecated" | "readOnly" | "writeOnly" | "uniqueItems" => {
            Some(Value::Bool(ours.as_bool()? || theirs.as_bool()?))
        }
        "required" => {
            let mut all = ours.as_array()?.clone();
            for v in theirs.as_array()? {
                if !all.contains(v) {
                    all.push(v.clone());
                }
            }
            Some(Value::Array(all))
        }
        "enum" => {
            let theirs = theirs.as_array()?;
            // Validators compare numbers by value (1 is 1.0), serde_json by representation.
            let floats = |v: &[Value]| v.iter().any(|v| v.as_number().is_some_and(|n| n.is_f64()));
            if floats(ours.as_array()?) || floats(theirs) {
                return None;
            }
            let both: Vec<Value> = ours
                .as_array()?
                .iter()
                .filter(|v| theirs.contains(v))
                .cloned()
                .collect();
            // An empty intersection accepts nothing: left visible as it was.
            (!both.is_empty()).then_some(Value::Array(both))
        }
        "type" => {
            let set = |v: &Value| -> Option<Vec<String>> {
                match v {
                    Value::String(s) => Some(vec![s.clone()]),
                    Value::Array(a) => a.iter().map(|t| t.as_str().map(str::to_owned)).collect(),
                    _ => None,
                }
            };
            let (a, b) = (set(ours)?, set(theirs)?);
            let both: Vec<String> = a.into_iter().filter(|t| b.contains(t)).collect();
            match both.as_slice() {
                [] => None,
                [one] => Some(Value::String(one.clone())),
                _ => Some(Value::Array(both.into_iter().map(Value::String).collect())),
            }
        }
        "minimum" | "exclusiveMinimum" | "minLength" | "minItems" | "minProperties" => {
            tighter(ours, theirs, true)
        }
        "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" | "maxProperties" => {
            tighter(ours, theirs, false)
        }
        "properties" => {
            let mut all = ours.as_object()?.clone();
            for (name, schema) in theirs.as_object()? {
                let joined = match all.get(name) {
                    None => schema.clone(),
                    Some(existing) if existing == schema => continue,
                    Some(existing) => merge(existing, schema).unwrap_or_else(
                        || serde_json::json!({"allOf": [existing.clone(), schema.clone()]}),
                    ),
                };
                all.insert(name.clone(), joined);
            }
            Some(Value::Object(all))
        }
        _ => None,
    }
}

/// The larger (`max`) or smaller bound of two numbers, as written.
fn tighter(ours: &Value, theirs: &Value, max: bool) -> Option<Value> {
    let (a, b) = (ours.as_f64()?, theirs.as_f64()?);
    let ours_wins = if max { a >= b } else { a <= b };
    Some(if ours_wins { ours } else { theirs }.clone())
}

/// Removes a `description` or `title` of property `name` that says only its name.
fn shorten(map: &mut Map<String, Value>, pointer: &str, name: &str, rewrites: &mut Vec<Rewrite>) {
    let named = words(name);
    for key in ["description", "title"] {
        let Some(Value::String(text)) = map.get(key) else {
            continue;
        };
        if named.is_empty() || words(text) != named {
            continue;
        }
        rewrites.push(Rewrite {
            kind: RewriteKind::Shortened,
            pointer: crate::pointer::push(pointer, key),
            detail: format!("{key} {text:?} repeats the property name"),
        });
        map.remove(key);
    }
}

/// The words of a name or a sentence, lowercase, without articles: `userId`, `user_id` and "The
/// user ID." all give `[user, id]`.
fn words(text: &str) -> Vec<String> {
    const ARTICLES: [&str; 3] = ["the", "a", "an"];
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            previous_lower = false;
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            continue;
        }
        if c.is_uppercase() && previous_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_lowercase() || c.is_numeric();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out.retain(|w| !ARTICLES.contains(&w.as_str()));
    out
}

/// Smallest sub-schema (minified characters) considered for sharing.
const MIN_SHARED_CHARS: usize = 24;

/// Moves sub-schemas written out more than once into the root's definitions, largest first, each
/// only when that shortens both renderings.
fn share(schema: &mut Value, reserved: &BTreeSet<String>, rewrites: &mut Vec<Rewrite>) {
    let Some(draft) = Draft::of(schema) else {
        return;
    };
    if !schema.is_object() || has_unsafe_reference(schema, 0) {
        return;
    }
    let defs_keyword = draft.defs_keyword();
    // Each try renders the schema twice: a candidate that did not shorten it is not tried again,
    // and the tries are bounded, so a schema with thousands of repeats costs bounded work.
    let mut failed: BTreeSet<String> = BTreeSet::new();
    let mut tries = 0;
    loop {
        let mut seen: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        collect(schema, "", None, 0, &mut seen);
        let mut candidates: Vec<(String, Vec<(String, String)>)> = seen
            .into_iter()
            .filter(|(text, at)| at.len() > 1 && !failed.contains(text))
            .collect();
        candidates.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        let mut shared = false;
        let now = Sizes::of(schema);
        for (text, places) in candidates {
            if tries >= MAX_SHARE_TRIES {
                return;
            }
            tries += 1;
            if let Some(done) = try_share(schema, now, defs_keyword, reserved, &text, &places) {
                rewrites.push(done);
                shared = true;
                break;
            }
            failed.insert(text);
        }
        if !shared {
            return;
        }
    }
}

/// Most sub-schemas [`compact`] tries to share in one schema.
const MAX_SHARE_TRIES: usize = 32;

/// Shares the sub-schema `text` found at `places` (pointer, property name) when that shortens
/// both renderings; the rewrite made.
fn try_share(
    schema: &mut Value,
    now: Sizes,
    defs_keyword: &str,
    reserved: &BTreeSet<String>,
    text: &str,
    places: &[(String, String)],
) -> Option<Rewrite> {
    let sub: Value = serde_json::from_str(text).ok()?;
    let taken =
        |n: &str| reserved.contains(n) || schema.get(defs_keyword).and_then(|d| d.get(n)).is_some();
    let stem = places
        .iter()
        .map(|(_, name)| name.as_str())
        .find(|n| !n.is_empty())
        .unwrap_or("Shared");
    let name = std::iter::once(stem.to_owned())
        .chain((2..).map(|i| format!("{stem}{i}")))
        .find(|n| !taken(n))?;
    let mut candidate = schema.clone();
    let reference = format!("#/{defs_keyword}/{}", crate::pointer::escape(&name));
    for (pointer, _) in places {
        let slot = candidate.pointer_mut(pointer)?;
        *slot = serde_json::json!({"$ref": reference});
    }
    let defs = candidate
        .as_object_mut()?
        .entry(defs_keyword)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()?;
    defs.insert(name.clone(), sub);
    let after = Sizes::of(&candidate);
    if !(after.compact < now.compact && after.json < now.json) {
        return None;
    }
    *schema = candidate;
    let at: Vec<&str> = places.iter().map(|(p, _)| p.as_str()).collect();
    Some(Rewrite {
        kind: RewriteKind::Shared,
        pointer: at.first().copied().unwrap_or_default().to_owned(),
        detail: format!(
            "the same sub-schema at {} moved to `/{defs_keyword}/{name}`",
            at.join(", ")
        ),
    })
}

/// The lengths of a schema's two renderings.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    compact: usize,
    json: usize,
}

impl Sizes {
    fn of(schema: &Value) -> Self {
        Self {
            compact: crate::render::to_compact(schema).len(),
            json: crate::render::to_json(schema).len(),
        }
    }
}

/// Records every sub-schema outside the definitions worth sharing, by its minified text.
fn collect(
    schema: &Value,
    pointer: &str,
    name: Option<&str>,
    depth: usize,
    seen: &mut BTreeMap<String, Vec<(String, String)>>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let Value::Object(map) = schema else {
        return;
    };
    if depth > 0 && !map.contains_key("$ref") {
        let text = schema.to_string();
        if text.len() >= MIN_SHARED_CHARS && movable(schema) {
            seen.entry(text)
                .or_default()
                .push((pointer.to_owned(), name.unwrap_or_default().to_owned()));
        }
    }
    for key in ONE {
        if let Some(sub) = map.get(key) {
            collect(
                sub,
                &crate::pointer::push(pointer, key),
                name,
                depth + 1,
                seen,
            );
        }
    }
    for key in MANY {
        if let Some(Value::Array(items)) = map.get(key) {
            let at = crate::pointer::push(pointer, key);
            for (i, item) in items.iter().enumerate() {
                let at = crate::pointer::push(&at, &i.to_string());
                collect(item, &at, name, depth + 1, seen);
            }
        }
    }
    for key in ["properties", "patternProperties", "dependentSchemas"] {
        if let Some(Value::Object(subs)) = map.get(key) {
            let at = crate::pointer::push(pointer, key);
            for (sub_name, sub) in subs {
                let at = crate::pointer::push(&at, sub_name);
                collect(sub, &at, Some(sub_name), depth + 1, seen);
            }
        }
    }
}

/// Whether a sub-schema means the same at another place: nothing in it sets a base URI or an anchor.
fn movable(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.iter().all(|(k, v)| {
            !matches!(
                k.as_str(),
                "$id"
                    | "id"
                    | "$anchor"
                    | "$dynamicAnchor"
                    | "$dynamicRef"
                    | "$recursiveAnchor"
                    | "$recursiveRef"
            ) && movable(v)
        }),
        Value::Array(items) => items.iter().all(movable),
        _ => true,
    }
}

/// Whether some `$ref` points anywhere but the root or a root definition: moving a sub-schema could
/// then break a pointer that goes through it.
fn has_unsafe_reference(schema: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    match schema {
        Value::Object(map) => map.iter().any(|(k, v)| {
            let bad_ref = k == "$ref"
                && v.as_str().is_none_or(|r| {
                    let Some(rest) = r.strip_prefix("#/") else {
                        return r != "#";
                    };
                    let mut parts = rest.split('/');
                    !matches!(parts.next(), Some("$defs" | "definitions")) || parts.count() != 1
                });
            bad_ref || has_unsafe_reference(v, depth + 1)
        }),
        Value::Array(items) => items.iter().any(|v| has_unsafe_reference(v, depth + 1)),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
