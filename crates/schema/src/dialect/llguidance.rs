//! llguidance 1.9.1: the JSON Schema subset it compiles to a token grammar, plus bounds against runaway output.
//!
//! What the engine does with a schema (measured, see the dialect docs): it rejects `not`, `if`/`then`/`else`,
//! `uniqueItems`, `contains`, dependencies, `propertyNames`, `unevaluated*`, unknown formats and regexes with
//! lookaround, backreferences or word boundaries; it only accepts `oneOf` when it can prove the branches
//! disjoint (never through `$ref`), `patternProperties` when it can prove the patterns disjoint, and
//! `minProperties`/`maxProperties` when every property is required; it resolves `$ref` by splitting the
//! pointer on `/` without unescaping and cannot intersect a recursive `$ref` with sibling keywords.
//! Everything else it enforces, so the rest of the schema passes through as written.

mod bounds;
mod merge;
mod one_of;
mod recursion;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{
    Compiled, Cx, Dialect, DialectError, LossKind, Result, child, count_nodes, json_type,
    regex_features, types_of,
};
use merge::{merge_all_of, merge_into, mergeable};
use one_of::{intersect_types, one_of_is_exclusive};
use recursion::recursive_targets;

/// Limits [`compile_llguidance`] adds where a schema sets none, so that constrained decoding ends.
///
/// Each added limit is reported as a [`LossKind::Tightened`] loss. A schema that asks for more (`minLength`,
/// `minItems`, `minProperties` or `required` above a limit) gets its minimum instead, so no schema becomes
/// unsatisfiable. `maxLength` counts characters, not tokens. The string bound is generous on purpose: it
/// only stops a model that loops inside a string, and the request's `max_tokens` (which the local backend
/// honours by closing the document in time) is what normally ends a long answer. A string that reaches an
/// added bound is cut short: claij-interceptors flags it on the attempt (`Attempt::cut_strings`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LlguidanceBounds {
    /// `maxLength` of strings without one (and without `enum` or `const`).
    pub max_string_chars: u64,
    /// `maxItems` of arrays without one.
    pub max_items: u64,
    /// `maxProperties` of maps (no `properties`) and of objects whose properties are all required that admit
    /// other keys explicitly (an `additionalProperties` schema, `patternProperties`); an object that declares
    /// properties and says nothing of others, or has optional ones, gets `additionalProperties: false`.
    pub max_properties: u64,
}

/// The default `maxLength` [`Dialect::Llguidance`] adds to strings without one: 2000 characters, more than
/// the local backend's default token limit (512) lets a model write, so it cuts nothing a token limit would
/// not; it still ends a model that loops inside a string when the token limit is large.
pub const DEFAULT_MAX_STRING_CHARS: u64 = 2000;

impl Default for LlguidanceBounds {
    /// 2000 characters ([`DEFAULT_MAX_STRING_CHARS`]), 32 items, 32 properties.
    fn default() -> Self {
        LlguidanceBounds {
            max_string_chars: DEFAULT_MAX_STRING_CHARS,
            max_items: 32,
            max_properties: 32,
        }
    }
}

/// Compiles `schema` for [`Dialect::Llguidance`] with the given bounds instead of the defaults.
///
/// ```
/// use claij_schema::dialect::{LlguidanceBounds, compile_llguidance};
/// use serde_json::json;
///
/// let bounds = LlguidanceBounds { max_string_chars: 80, ..LlguidanceBounds::default() };
/// let compiled = compile_llguidance(&json!({"type": "string"}), bounds)?;
/// assert_eq!(compiled.schema["maxLength"], json!(80));
/// # Ok::<(), claij_schema::dialect::DialectError>(())
/// ```
///
/// # Errors
///
/// As [`Dialect::compile`], and [`DialectError::Unsatisfiable`] for bounds no value meets.
pub fn compile_llguidance(schema: &Value, bounds: LlguidanceBounds) -> Result<Compiled> {
    let mut cx = Cx::new(schema, Dialect::Llguidance);
    let schema = compile(&mut cx, bounds)?;
    Ok(Compiled {
        schema,
        losses: cx.losses,
    })
}

/// The ten formats llguidance has a grammar for; it rejects the others.
const FORMATS: [&str; 10] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
    "uri",
];

/// Keywords llguidance knows but does not implement ("Unimplemented keys"): dropped wherever they appear.
const UNSUPPORTED: [&str; 18] = [
    "not",
    "if",
    "then",
    "else",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
];

/// Keywords llguidance enforces. Any other keyword is an annotation to it (or unknown, hence ignored).
const ASSERTIONS: [&str; 26] = [
    "anyOf",
    "oneOf",
    "allOf",
    "const",
    "enum",
    "type",
    "items",
    "additionalItems",
    "prefixItems",
    "minItems",
    "maxItems",
    "properties",
    "additionalProperties",
    "patternProperties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// Counts llguidance reads as unsigned integers (it rejects `2.0`).
const COUNTS: [&str; 6] = [
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
];

/// `$schema` values llguidance recognises, without the trailing `#`; it reads any other as 2020-12.
const DRAFTS: [&str; 2] = [
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft-07/schema",
];

/// Compiles the whole schema.
pub(super) fn compile(cx: &mut Cx<'_>, bounds: LlguidanceBounds) -> Result<Value> {
    let root = cx.root;
    let root_map = match root {
        Value::Object(map) => map.clone(),
        Value::Bool(true) => Map::new(),
        Value::Bool(false) => return Ok(Value::Bool(false)), // nothing to decode, nowhere to put options
        other => {
            return Err(DialectError::NotASchema {
                pointer: String::new(),
                found: json_type(other),
            });
        }
    };
    let recursive = recursive_targets(cx)?;
    let mut walker = Walker {
        bounds,
        refs: recursive
            .iter()
            .map(|(target, name, _)| (target.clone(), reference_to(name.as_deref())))
            .collect(),
    };
    let mut body = Map::new();
    let mut draft = None;
    for (key, value) in root_map {
        match key.as_str() {
            "$schema" if value.as_str().is_some_and(is_known_draft) => draft = Some(value),
            "$schema" => cx.loss("", &key, &value, LossKind::Rewritten),
            "$defs" | "definitions" => {} // inlined, or re-emitted below when recursive
            "x-guidance" => cx.loss("", &key, &value, LossKind::Dropped), // replaced below
            _ => {
                body.insert(key, value);
            }
        }
    }
    let mut out = Map::new();
    if let Some(draft) = draft {
        out.insert("$schema".to_owned(), draft);
    }
    match walker.node(cx, &Value::Object(body), "", true)? {
        Value::Object(compiled) => out.extend(compiled),
        other => {
            out.insert("allOf".to_owned(), Value::Array(vec![other]));
        }
    }
    let mut defs = Map::new();
    for (target, name, schema) in &recursive {
        if let Some(name) = name {
            defs.insert(name.clone(), walker.node(cx, schema, target, true)?);
        }
    }
    if !defs.is_empty() {
        out.insert("$defs".to_owned(), Value::Object(defs));
    }
    // Compact JSON: flexible whitespace lets a small model pad with newlines until it runs out of tokens.
    let options = Map::from_iter([("whitespace_flexible".to_owned(), Value::Bool(false))]);
    out.insert("x-guidance".to_owned(), Value::Object(options));
    Ok(Value::Object(out))
}

fn is_known_draft(uri: &str) -> bool {
    DRAFTS.contains(&uri.trim_end_matches('#'))
}

/// The `$ref` that points at a recursive target: `#` for the root, `#/$defs/<name>` otherwise.
fn reference_to(name: Option<&str>) -> String {
    match name {
        Some(name) => format!("#/$defs/{name}"),
        None => "#".to_owned(),
    }
}

struct Walker {
    bounds: LlguidanceBounds,
    /// `$ref` targets on a cycle (JSON pointers) and the reference that replaces theirs; every other target
    /// is inlined.
    refs: HashMap<String, String>,
}

impl Walker {
    /// Compiles a subschema. A `standalone` one (a property, an item, the root, a union branch) gets the
    /// runaway bounds; one that is intersected with others (an `allOf` branch, a `$ref` target with sibling
    /// assertions) does not, because a bound or a closed object there can contradict the other side: the
    /// schema they are combined into is bounded instead, as a whole.
    fn node(
        &mut self,
        cx: &mut Cx<'_>,
        schema: &Value,
        pointer: &str,
        standalone: bool,
    ) -> Result<Value> {
        cx.enter(pointer)?;
        let result = match schema {
            Value::Object(map) => self.object(cx, map, pointer, standalone),
            Value::Bool(_) => Ok(schema.clone()),
            other => Err(DialectError::NotASchema {
                pointer: pointer.to_owned(),
                found: json_type(other),
            }),
        };
        cx.leave();
        result
    }

    fn object(
        &mut self,
        cx: &mut Cx<'_>,
        map: &Map<String, Value>,
        pointer: &str,
        standalone: bool,
    ) -> Result<Value> {
        if let Some(reference) = map.get("$ref") {
            return self.reference(cx, map, reference, pointer, standalone);
        }
        // In a plain union each branch is a schema of its own, bounded on its own.
        let union = is_union(map);
        let mut out = self.keywords(cx, map, pointer, standalone && union)?;
        if standalone {
            self.bound(cx, &mut out, pointer, !union);
        }
        Ok(Value::Object(out))
    }

    /// Every keyword of a schema without `$ref`, in input order; `allOf` branches merged in where that
    /// changes nothing. `standalone_branches`: whether `anyOf`/`oneOf` branches get bounds of their own.
    fn keywords(
        &mut self,
        cx: &mut Cx<'_>,
        map: &Map<String, Value>,
        pointer: &str,
        standalone_branches: bool,
    ) -> Result<Map<String, Value>> {
        check_satisfiable(map, pointer)?;
        let mut out = Map::new();
        // `oneOf` next to `anyOf` cannot become a second `anyOf`: it joins `allOf`.
        let mut extra_all_of = Vec::new();
        for (key, value) in map {
            let compiled = match (key.as_str(), value) {
                ("$defs" | "definitions", _) => continue, // inlined where referenced
                (k, _) if UNSUPPORTED.contains(&k) => {
                    cx.loss(pointer, key, value, LossKind::Dropped);
                    continue;
                }
                ("format", Value::String(f)) if FORMATS.contains(&f.as_str()) => value.clone(),
                ("pattern", Value::String(p)) if pattern_ok(p) => value.clone(),
                ("format" | "pattern", _) => {
                    cx.loss(pointer, key, value, LossKind::Dropped);
                    continue;
                }
                (k, _) if COUNTS.contains(&k) => match count(value) {
                    Some(n) if value.is_u64() => Value::from(n),
                    Some(n) => {
                        cx.loss(pointer, key, value, LossKind::Rewritten);
                        Value::from(n)
                    }
                    None => {
                        cx.loss(pointer, key, value, LossKind::Dropped);
                        continue;
                    }
                },
                (
                    "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf",
                    v,
                ) if !v.is_number() => {
                    // Draft-04 boolean `exclusiveMinimum`: llguidance reads 2020-12 numbers only.
                    cx.loss(pointer, key, value, LossKind::Dropped);
                    continue;
                }
                ("properties", Value::Object(properties)) => {
                    let base = child(pointer, key);
                    let mut compiled = Map::new();
                    for (name, schema) in properties {
                        let schema = self.node(cx, schema, &child(&base, name), true)?;
                        compiled.insert(name.clone(), schema);
                    }
                    Value::Object(compiled)
                }
                ("patternProperties", Value::Object(patterns)) => {
                    self.pattern_properties(cx, patterns, pointer)?
                }
                (
                    "additionalProperties" | "items" | "additionalItems",
                    Value::Object(_) | Value::Bool(_),
                ) => self.node(cx, value, &child(pointer, key), true)?,
                ("items" | "prefixItems", Value::Array(items)) => {
                    Value::Array(self.branches(cx, items, &child(pointer, key), true)?)
                }
                ("allOf", Value::Array(branches)) => {
                    Value::Array(self.branches(cx, branches, &child(pointer, key), false)?)
                }
                ("anyOf", Value::Array(branches)) => {
                    let at = child(pointer, key);
                    Value::Array(self.branches(cx, branches, &at, standalone_branches)?)
                }
                ("oneOf", Value::Array(branches)) => {
                    let change = if one_of_is_exclusive(cx, branches) {
                        LossKind::Rewritten
                    } else {
                        LossKind::Relaxed // the validator still checks that exactly one branch matches
                    };
                    cx.loss(pointer, key, value, change);
                    let at = child(pointer, key);
                    let compiled =
                        Value::Array(self.branches(cx, branches, &at, standalone_branches)?);
                    if map.contains_key("anyOf") {
                        let any_of = Map::from_iter([("anyOf".to_owned(), compiled)]);
                        extra_all_of.push(Value::Object(any_of));
                    } else {
                        out.insert("anyOf".to_owned(), compiled);
                    }
                    continue;
                }
                _ => value.clone(),
            };
            out.insert(key.clone(), compiled);
        }
        if !extra_all_of.is_empty() {
            match out.get_mut("allOf") {
                Some(Value::Array(all_of)) => all_of.extend(extra_all_of),
                _ => {
                    out.insert("allOf".to_owned(), Value::Array(extra_all_of));
                }
            }
        }
        let out = merge_all_of(cx, out, pointer, map.get("allOf"));
        check_types(&out, pointer)?;
        Ok(out)
    }

    fn branches(
        &mut self,
        cx: &mut Cx<'_>,
        branches: &[Value],
        pointer: &str,
        standalone: bool,
    ) -> Result<Vec<Value>> {
        let mut out = Vec::with_capacity(branches.len());
        for (i, branch) in branches.iter().enumerate() {
            out.push(self.node(cx, branch, &child(pointer, &i.to_string()), standalone)?);
        }
        Ok(out)
    }

    /// `patternProperties` without the regexes llguidance cannot compile. It also insists that patterns be
    /// provably disjoint, which only a regex engine can tell, so only the first one is kept.
    fn pattern_properties(
        &mut self,
        cx: &mut Cx<'_>,
        patterns: &Map<String, Value>,
        pointer: &str,
    ) -> Result<Value> {
        let base = child(pointer, "patternProperties");
        let mut out = Map::new();
        for (pattern, schema) in patterns {
            if !out.is_empty() || !pattern_ok(pattern) {
                cx.loss(&base, pattern, schema, LossKind::Dropped);
                continue;
            }
            let schema = self.node(cx, schema, &child(&base, pattern), true)?;
            out.insert(pattern.clone(), schema);
        }
        Ok(Value::Object(out))
    }

    /// `$ref`: a recursive target stays a reference (without the sibling assertions llguidance cannot
    /// intersect with it); any other target is inlined, with its siblings merged in, or intersected with
    /// `allOf` where merging would change the meaning.
    fn reference(
        &mut self,
        cx: &mut Cx<'_>,
        map: &Map<String, Value>,
        reference: &Value,
        pointer: &str,
        standalone: bool,
    ) -> Result<Value> {
        let mut siblings = map.clone();
        siblings.shift_remove("$ref");
        siblings.retain(|k, _| k != "$defs" && k != "definitions"); // inlined where referenced
        let Value::String(text) = reference else {
            cx.loss(pointer, "$ref", reference, LossKind::Dropped);
            return self.object(cx, &siblings, pointer, standalone);
        };
        let (target, target_pointer) = cx.resolve(text, pointer)?;
        if let Some(kept) = self.refs.get(&target_pointer) {
            if kept != text {
                cx.loss(pointer, "$ref", reference, LossKind::Rewritten);
            }
            let mut out = Map::from_iter([("$ref".to_owned(), Value::String(kept.clone()))]);
            for (key, value) in siblings {
                if is_assertion(&key) {
                    cx.loss(pointer, &key, &value, LossKind::Dropped);
                } else {
                    out.insert(key, value);
                }
            }
            return Ok(Value::Object(out));
        }
        if cx.ref_stack.contains(&target_pointer) {
            return Err(cx.recursive(text, pointer)); // not on a cycle by `recursive_targets`: a bug, not a hang
        }
        cx.loss(pointer, "$ref", reference, LossKind::Rewritten);
        let composed = siblings.keys().any(|k| is_assertion(k));
        let inlined = self.inline(
            cx,
            target,
            &target_pointer,
            text,
            pointer,
            standalone && !composed,
        )?;
        if !composed {
            // Annotations only: they override the target's.
            return Ok(match inlined {
                _ if siblings.is_empty() => inlined,
                Value::Object(mut target) => {
                    target.extend(siblings);
                    Value::Object(target)
                }
                Value::Bool(true) => Value::Object(siblings),
                other => {
                    siblings.insert("allOf".to_owned(), Value::Array(vec![other]));
                    Value::Object(siblings)
                }
            });
        }
        let siblings = self.keywords(cx, &siblings, pointer, false)?;
        let mut out = match inlined {
            Value::Object(mut target) if mergeable(&target, &siblings) => {
                merge_into(&mut target, siblings, false, true);
                target
            }
            Value::Bool(true) => siblings,
            inlined => Map::from_iter([(
                "allOf".to_owned(),
                Value::Array(vec![inlined, Value::Object(siblings)]),
            )]),
        };
        if standalone {
            self.bound(cx, &mut out, pointer, true);
        }
        Ok(Value::Object(out))
    }

    /// A `$ref` target compiled once per kind of use (standalone or intersected with siblings).
    fn inline(
        &mut self,
        cx: &mut Cx<'_>,
        target: &Value,
        target_pointer: &str,
        reference: &str,
        pointer: &str,
        standalone: bool,
    ) -> Result<Value> {
        let key = if standalone {
            target_pointer.to_owned()
        } else {
            format!("composed:{target_pointer}") // never a JSON pointer, which is empty or starts with `/`
        };
        let (compiled, nodes) = match cx.cache.get(&key) {
            Some(hit) => hit.clone(),
            None => {
                cx.ref_stack.push(target_pointer.to_owned());
                let compiled = self.node(cx, target, target_pointer, standalone);
                cx.ref_stack.pop();
                let compiled = compiled?;
                let nodes = count_nodes(&compiled);
                cx.cache.insert(key, (compiled.clone(), nodes));
                (compiled, nodes)
            }
        };
        cx.charge(nodes, reference, pointer)?;
        Ok(compiled)
    }
}

/// Whether llguidance enforces `key` (an assertion), as opposed to an annotation it ignores.
fn is_assertion(key: &str) -> bool {
    ASSERTIONS.contains(&key) || UNSUPPORTED.contains(&key)
}

/// Whether a schema is nothing but one `anyOf` or `oneOf` (and annotations): a union of schemas that are
/// each used on their own.
fn is_union(map: &Map<String, Value>) -> bool {
    let unions = ["anyOf", "oneOf"]
        .iter()
        .filter(|k| matches!(map.get(**k), Some(Value::Array(_))))
        .count();
    unions == 1
        && map
            .keys()
            .all(|k| k == "anyOf" || k == "oneOf" || !ASSERTIONS.contains(&k.as_str()))
}

/// Whether a regex compiles in llguidance, whose parser (Rust regex syntax) has no lookaround,
/// backreferences, word boundaries or ECMA-262 escapes like `\cX` and `\0`.
fn pattern_ok(pattern: &str) -> bool {
    let features = regex_features(pattern);
    !features.lookaround
        && !features.backreference
        && !features.word_boundary
        && !features.foreign_escape
}

/// A count keyword's value as an unsigned integer (`2.0` included); `None` when it is not one.
fn count(value: &Value) -> Option<u64> {
    if let Some(n) = value.as_u64() {
        return Some(n);
    }
    let f = value.as_f64()?;
    // Exact for every integer below 2^53; larger counts are meaningless for a grammar anyway.
    (f >= 0.0 && f.fract() == 0.0 && f < 9_007_199_254_740_992.0).then_some(f as u64)
}

/// Whether an object schema lets in properties beyond `properties`.
fn admits_additional(map: &Map<String, Value>) -> bool {
    let patterns = matches!(map.get("patternProperties"), Some(Value::Object(p)) if !p.is_empty());
    patterns || map.get("additionalProperties") != Some(&Value::Bool(false))
}

/// `allOf` branches that declare types with nothing in common (what merging left in `allOf`).
fn check_types(out: &Map<String, Value>, pointer: &str) -> Result<()> {
    let Some(Value::Array(branches)) = out.get("allOf") else {
        return Ok(());
    };
    let declared = std::iter::once(out)
        .chain(branches.iter().filter_map(Value::as_object))
        .filter(|m| m.contains_key("type"))
        .map(|m| {
            types_of(m)
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        });
    let mut agreed: Option<Vec<String>> = None;
    for types in declared {
        agreed = Some(match agreed {
            None => types,
            Some(agreed) => intersect_types(&agreed, &types),
        });
    }
    match agreed {
        Some(types) if types.is_empty() => Err(DialectError::Unsatisfiable {
            pointer: pointer.to_owned(),
            reason: "the types of allOf have nothing in common".to_owned(),
        }),
        _ => Ok(()),
    }
}

/// Bounds no value meets: a schema error for a grammar, where llguidance refuses to compile.
fn check_satisfiable(map: &Map<String, Value>, pointer: &str) -> Result<()> {
    let unsatisfiable = |reason: String| DialectError::Unsatisfiable {
        pointer: pointer.to_owned(),
        reason,
    };
    for (min, max) in [
        ("minLength", "maxLength"),
        ("minItems", "maxItems"),
        ("minProperties", "maxProperties"),
    ] {
        if let (Some(lo), Some(hi)) = (map.get(min), map.get(max))
            && let (Some(l), Some(h)) = (lo.as_f64(), hi.as_f64())
            && l > h
        {
            return Err(unsatisfiable(format!(
                "{min} {lo} is greater than {max} {hi}"
            )));
        }
    }
    // The tightest lower and upper bounds: keyword, value, whether it is exclusive.
    let bound = |inclusive: &'static str, exclusive: &'static str, lower: bool| {
        let mut best: Option<(&'static str, &Value, f64, bool)> = None;
        for (keyword, is_exclusive) in [(inclusive, false), (exclusive, true)] {
            let Some((value, v)) = map.get(keyword).and_then(|n| Some((n, n.as_f64()?))) else {
                continue;
            };
            let tighter = match best {
                None => true,
                Some((_, _, b, _)) if v == b => is_exclusive,
                Some((_, _, b, _)) => (v > b) == lower,
            };
            if tighter {
                best = Some((keyword, value, v, is_exclusive));
            }
        }
        best
    };
    if let (Some((lk, lo, l, lx)), Some((hk, hi, h, hx))) = (
        bound("minimum", "exclusiveMinimum", true),
        bound("maximum", "exclusiveMaximum", false),
    ) && (l > h || (l == h && (lx || hx)))
    {
        return Err(unsatisfiable(if l > h {
            format!("{lk} {lo} is greater than {hk} {hi}")
        } else {
            format!("{lk} {lo} and {hk} {hi} leave no number")
        }));
    }
    if types_of(map) == ["object"] && map.get("additionalProperties") == Some(&Value::Bool(false)) {
        let declared = |name: &str| {
            map.get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| p.contains_key(name))
                || matches!(map.get("patternProperties"), Some(Value::Object(p)) if !p.is_empty())
        };
        let required = map.get("required").and_then(Value::as_array);
        if let Some(name) = required
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find(|name| !declared(name))
        {
            return Err(unsatisfiable(format!(
                "required property {name:?} is not allowed by additionalProperties false"
            )));
        }
    }
    Ok(())
}
