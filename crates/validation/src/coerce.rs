//! Schema-aware coercion: nudging a parsed reply towards its schema without inventing anything, the
//! way BAML's schema-aligned parsing reads everyday replies.
//!
//! What it does, each change recorded as a [`Fix`] of its own kind:
//! - numbers as people write them: `"5"`, `"1,234.5"`, `"$12"`, `"12%"` (12), `"1/2"`, the one number
//!   in a sentence (`"about 42"`); `5.0` to 5 for integers;
//! - booleans: `"true"`, `"yes"`, `"on"`, `"1"` (and their opposites), a yes/no or true/false in prose
//!   (`"Yes, it is."`);
//! - numbers and booleans to strings where a string is expected;
//! - `"null"`, `"None"`, `"N/A"`, `"nil"` to null where null is allowed;
//! - a single value to a one-element array; a string holding a JSON object or array to that value;
//! - enum (and const) strings: ignoring case and surrounding space, else the one member named in prose
//!   (ignoring case, accents and punctuation, whole words) or by an alias (a union of `const` branches:
//!   each branch's `title`, `aliases: ...` in its description), else of several named the one the text
//!   ranks first (`1. X`, `Most likely: X`); for an array of enums, every member named;
//! - a required property left out, set to the `default` its schema gives;
//! - a one-element array to its element where that element's type is asked; a non-empty object or
//!   array inside the reply to its JSON text where only a string is allowed;
//! - object keys matched to properties ignoring case and punctuation, or by a property's alias;
//! - in a union, the branch that needs the fewest coercions (a discriminator first);
//! - properties not allowed under `additionalProperties: false` dropped.
//!
//! It never adds a missing property the schema gives no `default` for, never changes a value that
//! already has an allowed type, and never loses precision (`"5.5"` does not become an integer).
//! Ambiguity is left alone: two enum members named and none ranked first, a negated member (`not X`),
//! two numbers in a sentence, two union branches or two keys fitting equally well. Validation afterwards
//! decides what is still wrong.
//!
//! [`align`] reads a whole reply that failed validation: the candidate value that fits with the fewest
//! coercions, else the reply itself as the value when the schema asks for a scalar.

mod fit;
mod prose;
mod reply;

use claij_schema::pointer::push;
use serde_json::{Map, Number, Value};

use crate::fix::{Fix, FixKind};
use prose::Member;

pub use reply::{align, from_reply};

/// `$ref` chains and nesting deeper than this are left alone (recursive schemas).
const MAX_DEPTH: usize = 64;

/// Coerces `value` towards `schema`, returning the new value and every change made.
///
/// ```
/// use claij_validation::{FixKind, coerce::coerce};
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "additionalProperties": false, "properties": {
///     "n": {"type": "integer"}, "ok": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
///     "color": {"enum": ["Red", "Green"]}
/// }});
/// let (value, fixes) = coerce(json!({"n": "5", "ok": "yes", "tags": "a", "color": " red ", "x": 1}), &schema);
/// assert_eq!(value, json!({"n": 5, "ok": true, "tags": ["a"], "color": "Red"}));
/// assert_eq!(fixes.len(), 5);
/// assert_eq!(fixes[0].kind, FixKind::DroppedProperty);
/// assert_eq!(fixes[1].kind, FixKind::StringToNumber);
/// ```
pub fn coerce(mut value: Value, schema: &Value) -> (Value, Vec<Fix>) {
    let mut fixes = Vec::new();
    let mut c = Coercer {
        root: schema,
        fixes: &mut fixes,
    };
    c.coerce(&mut value, schema, "", 0);
    (value, fixes)
}

struct Coercer<'s, 'f> {
    root: &'s Value,
    fixes: &'f mut Vec<Fix>,
}

impl<'s> Coercer<'s, '_> {
    fn coerce(&mut self, value: &mut Value, schema: &'s Value, at: &str, depth: usize) {
        let Value::Object(node) = schema else { return };
        if depth > MAX_DEPTH {
            return;
        }
        if let Some(target) = node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| self.resolve(r))
        {
            self.coerce(value, target, at, depth + 1);
        }
        if let Some(Value::Array(all)) = node.get("allOf") {
            for sub in all {
                self.coerce(value, sub, at, depth + 1);
            }
        }
        for keyword in ["oneOf", "anyOf"] {
            if let Some(Value::Array(branches)) = node.get(keyword) {
                match self.const_members(branches) {
                    Some(members) => self.coerce_members(value, &members, at),
                    None => self.coerce_union(value, branches, at, depth),
                }
            }
        }
        self.coerce_type(value, node, at);
        self.coerce_enum(value, node, at);
        match value {
            Value::Object(map) => self.coerce_object(map, node, at, depth),
            Value::Array(items) => self.coerce_array(items, node, at, depth),
            _ => {}
        }
    }

    fn resolve(&self, reference: &str) -> Option<&'s Value> {
        lookup(self.root, reference)
    }

    /// Coerces `value` into the branch of a union it fits best: the one its discriminator names, else
    /// the only branch it can reach, else the branch that fits with the fewest mismatches and then the
    /// fewest coercions. Two branches fitting equally well with different results: left alone.
    fn coerce_union(&mut self, value: &mut Value, branches: &'s [Value], at: &str, depth: usize) {
        if let Some(branch) = self.discriminated(value, branches) {
            self.coerce(value, branch, at, depth + 1);
            return;
        }
        let null_branch = branches
            .iter()
            .any(|b| self.deref(b).get("type") == Some(&Value::String("null".into())));
        if value.is_null() && null_branch {
            return;
        }
        let reachable: Vec<&'s Value> =
            branches.iter().filter(|b| self.reaches(value, b)).collect();
        let branch = match reachable.as_slice() {
            [] => return,
            [only] => only,
            _ => {
                if let Some((new, fixes)) = self.fittest(value, &reachable, at, depth) {
                    *value = new;
                    self.fixes.extend(fixes);
                }
                return;
            }
        };
        self.coerce(value, branch, at, depth + 1);
    }

    /// The branch a tagged value names: a property whose value equals a branch's `const` for it
    /// (exactly, else ignoring case and spacing).
    fn discriminated(&self, value: &Value, branches: &'s [Value]) -> Option<&'s Value> {
        let Value::Object(map) = value else {
            return None;
        };
        let tag_of = |branch: &'s Value, prop: &str| -> Option<&'s Value> {
            self.deref(branch)
                .get("properties")?
                .get(prop)?
                .get("const")
        };
        for (prop, tag) in map {
            if let Some(hit) = branches.iter().find(|b| tag_of(b, prop) == Some(tag)) {
                return Some(hit);
            }
        }
        for (prop, tag) in map {
            let Value::String(tag) = tag else { continue };
            let wanted = normalise(tag);
            if let Some(hit) = branches.iter().find(
                |b| matches!(tag_of(b, prop), Some(Value::String(c)) if normalise(c) == wanted),
            ) {
                return Some(hit);
            }
        }
        None
    }

    /// Whether coercion could take `value` into `branch`'s type at all.
    fn reaches(&self, value: &Value, branch: &'s Value) -> bool {
        match self.deref(branch) {
            Value::Object(node) => types(node).is_none_or(|ts| {
                ts.iter()
                    .any(|t| admits(t, value) || convert(value, t).is_some())
            }),
            Value::Bool(b) => *b,
            _ => true,
        }
    }

    /// `value` coerced into each branch on the side; the result that fits best, with its fixes, unless
    /// another branch fits as well with a different result.
    fn fittest(
        &self,
        value: &Value,
        branches: &[&'s Value],
        at: &str,
        depth: usize,
    ) -> Option<(Value, Vec<Fix>)> {
        let mut best: Option<((usize, usize), Value, Vec<Fix>)> = None;
        let mut tied = false;
        for branch in branches {
            let mut trial = value.clone();
            let mut fixes = Vec::new();
            Coercer {
                root: self.root,
                fixes: &mut fixes,
            }
            .coerce(&mut trial, branch, at, depth + 1);
            let score = (fit::misfit(&trial, branch, self.root, 0), fixes.len());
            match &best {
                Some((top, _, _)) if score > *top => {}
                Some((top, kept, _)) if score == *top => tied |= *kept != trial,
                _ => {
                    best = Some((score, trial, fixes));
                    tied = false;
                }
            }
        }
        let (_, new, fixes) = best.filter(|_| !tied)?;
        (!fixes.is_empty()).then_some((new, fixes))
    }

    /// The members of a union whose every branch is one string (`const`, or a one-value `enum`), with
    /// each branch's aliases: an enum written as `oneOf` so that members can carry descriptions.
    fn const_members(&self, branches: &'s [Value]) -> Option<Vec<Member<'s>>> {
        if branches.is_empty() {
            return None;
        }
        branches
            .iter()
            .map(|b| {
                let node = self.deref(b).as_object()?;
                let value = match (node.get("const"), node.get("enum")) {
                    (Some(Value::String(c)), _) => c,
                    (None, Some(Value::Array(one))) => match one.as_slice() {
                        [Value::String(c)] => c,
                        _ => return None,
                    },
                    _ => return None,
                };
                Some(Member {
                    value,
                    aliases: prose::aliases(node),
                })
            })
            .collect()
    }

    /// The enum members an array's `items` schema allows (an `enum` of strings or a union of them).
    fn item_members(&self, node: &'s Map<String, Value>) -> Option<Vec<Member<'s>>> {
        let items = self.deref(node.get("items")?).as_object()?;
        if let Some(Value::Array(options)) = items.get("enum") {
            let members: Vec<Member<'s>> = options
                .iter()
                .filter_map(Value::as_str)
                .map(|value| Member {
                    value,
                    aliases: Vec::new(),
                })
                .collect();
            return (!members.is_empty()).then_some(members);
        }
        ["oneOf", "anyOf"]
            .iter()
            .find_map(|keyword| match items.get(*keyword) {
                Some(Value::Array(branches)) => self.const_members(branches),
                _ => None,
            })
    }

    fn deref(&self, schema: &'s Value) -> &'s Value {
        let mut current = schema;
        for _ in 0..MAX_DEPTH {
            match current
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| self.resolve(r))
            {
                Some(next) => current = next,
                None => break,
            }
        }
        current
    }

    fn coerce_type(&mut self, value: &mut Value, node: &'s Map<String, Value>, at: &str) {
        let Some(allowed) = types(node) else { return };
        if allowed.iter().any(|t| admits(t, value)) {
            return;
        }
        if let Value::String(s) = &*value
            && allowed.contains(&"array")
            && embedded_json(s).is_none_or(|p| !p.is_array())
            && let Some(members) = self.item_members(node)
        {
            let named = prose::members_in(s, &members);
            if !named.is_empty() {
                let list = named
                    .iter()
                    .filter_map(|&i| members.get(i))
                    .map(|m| Value::String(m.value.to_owned()))
                    .collect();
                let new = Value::Array(list);
                self.record(at, FixKind::EnumList, value, &new);
                *value = new;
                return;
            }
        }
        for target in &allowed {
            if let Some((new, kind)) = convert(value, target) {
                self.record(at, kind, value, &new);
                *value = new;
                return;
            }
        }
        // An object or array where only a string will do, inside the reply (the whole reply is read
        // as text by `align`): its JSON text. Not a conversion a union branch is chosen by. An empty
        // one holds nothing to write (`"answer": []` is no answer, not the text `[]`).
        let holds_data = match &*value {
            Value::Object(map) => !map.is_empty(),
            Value::Array(items) => !items.is_empty(),
            _ => false,
        };
        if allowed == ["string"] && !at.is_empty() && holds_data {
            let new = Value::String(value.to_string());
            self.record(at, FixKind::JsonAsString, value, &new);
            *value = new;
        }
    }

    fn coerce_enum(&mut self, value: &mut Value, node: &'s Map<String, Value>, at: &str) {
        let options: Vec<&'s Value> = match (node.get("enum"), node.get("const")) {
            (Some(Value::Array(values)), _) => values.iter().collect(),
            (None, Some(c)) => vec![c],
            _ => return,
        };
        let members: Vec<Member<'s>> = options
            .iter()
            .filter_map(|o| o.as_str())
            .map(|value| Member {
                value,
                aliases: Vec::new(),
            })
            .collect();
        self.coerce_members(value, &members, at);
    }

    /// A string that is not one of `members`: the member it is ignoring case and spacing, else the one
    /// member (or alias) it names in prose; nothing when two match.
    fn coerce_members(&mut self, value: &mut Value, members: &[Member<'_>], at: &str) {
        let Value::String(s) = &*value else { return };
        if members.is_empty() || members.iter().any(|m| m.value == s) {
            return;
        }
        let wanted = normalise(s);
        let mut matches = members.iter().filter(|m| normalise(m.value) == wanted);
        let found = match (matches.next(), matches.next()) {
            (Some(hit), None) => Some((hit.value, FixKind::EnumCase)),
            (Some(_), Some(_)) => None,
            (None, _) => prose::member_in(s, members)
                .and_then(|(i, kind)| members.get(i).map(|m| (m.value, kind))),
        };
        if let Some((hit, kind)) = found {
            let new = Value::String(hit.to_owned());
            self.record(at, kind, value, &new);
            *value = new;
        }
    }

    fn coerce_object(
        &mut self,
        map: &mut Map<String, Value>,
        node: &'s Map<String, Value>,
        at: &str,
        depth: usize,
    ) {
        let props = node.get("properties").and_then(Value::as_object);
        let patterns: Vec<(regex::Regex, &'s Value)> = match node.get("patternProperties") {
            Some(Value::Object(pp)) => pp
                .iter()
                .filter_map(|(p, sub)| regex::Regex::new(p).ok().map(|r| (r, sub)))
                .collect(),
            _ => Vec::new(),
        };
        // A pattern Rust's regex cannot compile: keep every key rather than guess.
        let patterns_complete = node
            .get("patternProperties")
            .and_then(Value::as_object)
            .is_none_or(|pp| pp.len() == patterns.len());
        if let Some(props) = props
            && patterns_complete
        {
            self.match_keys(map, props, &patterns, at);
        }
        if node.get("additionalProperties") == Some(&Value::Bool(false)) && patterns_complete {
            let unknown: Vec<String> = map
                .keys()
                .filter(|k| {
                    !props.is_some_and(|p| p.contains_key(*k))
                        && !patterns.iter().any(|(r, _)| r.is_match(k))
                })
                .cloned()
                .collect();
            for key in unknown {
                if let Some(old) = map.remove(&key) {
                    self.fixes.push(Fix {
                        pointer: push(at, &key),
                        kind: FixKind::DroppedProperty,
                        before: excerpt(&old),
                        after: String::new(),
                    });
                }
            }
        }
        self.drop_optional_nulls(map, node, props, at);
        self.fill_defaults(map, node, props, at);
        let additional = node.get("additionalProperties").filter(|a| a.is_object());
        for (key, v) in map.iter_mut() {
            let named = props.and_then(|p| p.get(key));
            let matching: Vec<&'s Value> = patterns
                .iter()
                .filter(|(r, _)| r.is_match(key))
                .map(|(_, sub)| *sub)
                .collect();
            let here = push(at, key);
            if let Some(sub) = named {
                self.coerce(v, sub, &here, depth + 1);
            }
            for sub in &matching {
                self.coerce(v, sub, &here, depth + 1);
            }
            if named.is_none()
                && matching.is_empty()
                && let Some(sub) = additional
            {
                self.coerce(v, sub, &here, depth + 1);
            }
        }
    }

    /// Keys that name no property renamed to the property they mean: the same ignoring case and
    /// punctuation (`First-Name` for `first_name`), else one of the property's aliases. Only a property
    /// not already present, meant by one key only.
    fn match_keys(
        &mut self,
        map: &mut Map<String, Value>,
        props: &'s Map<String, Value>,
        patterns: &[(regex::Regex, &'s Value)],
        at: &str,
    ) {
        let mut renames: Vec<(String, &'s String, FixKind)> = Vec::new();
        for key in map.keys() {
            if props.contains_key(key) || patterns.iter().any(|(r, _)| r.is_match(key)) {
                continue;
            }
            let wanted = squash(key);
            if wanted.is_empty() {
                continue;
            }
            let mut hits = props
                .iter()
                .filter(|(prop, _)| !map.contains_key(*prop))
                .filter_map(|(prop, sub)| {
                    if squash(prop) == wanted {
                        return Some((prop, FixKind::KeyCase));
                    }
                    let node = self.deref(sub).as_object()?;
                    prose::aliases(node)
                        .iter()
                        .any(|alias| squash(alias) == wanted)
                        .then_some((prop, FixKind::KeyAlias))
                });
            if let (Some((prop, kind)), None) = (hits.next(), hits.next()) {
                renames.push((key.clone(), prop, kind));
            }
        }
        let unique: Vec<(String, &'s String, FixKind)> = renames
            .iter()
            .filter(|(_, prop, _)| renames.iter().filter(|(_, p, _)| p == prop).count() == 1)
            .cloned()
            .collect();
        for (key, prop, kind) in unique {
            if let Some(v) = map.remove(&key) {
                map.insert(prop.clone(), v);
                self.fixes.push(Fix {
                    pointer: push(at, prop),
                    kind,
                    before: key,
                    after: prop.clone(),
                });
            }
        }
    }

    /// A required property left out whose schema gives a `default`: set to it. Nothing else is ever
    /// added: a required property without a default stays missing.
    fn fill_defaults(
        &mut self,
        map: &mut Map<String, Value>,
        node: &'s Map<String, Value>,
        props: Option<&'s Map<String, Value>>,
        at: &str,
    ) {
        let (Some(props), Some(Value::Array(required))) = (props, node.get("required")) else {
            return;
        };
        for key in required.iter().filter_map(Value::as_str) {
            if map.contains_key(key) {
                continue;
            }
            let Some(default) = props.get(key).and_then(|p| self.deref(p).get("default")) else {
                continue;
            };
            map.insert(key.to_owned(), default.clone());
            self.fixes.push(Fix {
                pointer: push(at, key),
                kind: FixKind::Default,
                before: String::new(),
                after: excerpt(default),
            });
        }
    }

    /// `"key": null` for an optional property whose schema does not allow null means "left out" (what
    /// OpenAI strict mode sends): the key is removed.
    fn drop_optional_nulls(
        &mut self,
        map: &mut Map<String, Value>,
        node: &'s Map<String, Value>,
        props: Option<&'s Map<String, Value>>,
        at: &str,
    ) {
        let Some(props) = props else { return };
        let required: Vec<&str> = node
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let drop: Vec<String> = map
            .iter()
            .filter(|(k, v)| v.is_null() && !required.contains(&k.as_str()))
            .filter(|(k, _)| {
                props.get(*k).is_some_and(|schema| {
                    let schema = self.deref(schema);
                    schema
                        .as_object()
                        .and_then(types)
                        .is_some_and(|ts| !ts.contains(&"null"))
                })
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in drop {
            map.remove(&key);
            self.fixes.push(Fix {
                pointer: push(at, &key),
                kind: FixKind::DroppedNull,
                before: "null".to_owned(),
                after: String::new(),
            });
        }
    }

    fn coerce_array(
        &mut self,
        items: &mut [Value],
        node: &'s Map<String, Value>,
        at: &str,
        depth: usize,
    ) {
        let prefix: &[Value] = match (node.get("prefixItems"), node.get("items")) {
            (Some(Value::Array(p)), _) | (None, Some(Value::Array(p))) => p,
            _ => &[],
        };
        let rest = node.get("items").filter(|i| i.is_object());
        for (i, item) in items.iter_mut().enumerate() {
            let sub = prefix.get(i).or(rest);
            if let Some(sub) = sub {
                self.coerce(item, sub, &push(at, &i.to_string()), depth + 1);
            }
        }
    }

    fn record(&mut self, at: &str, kind: FixKind, before: &Value, after: &Value) {
        self.fixes.push(Fix {
            pointer: at.to_owned(),
            kind,
            before: excerpt(before),
            after: excerpt(after),
        });
    }
}

/// The schema a local `$ref` (`#/$defs/X`) points to; plain tokens are looked up without allocating.
fn lookup<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.contains(['~', '%']) {
        return claij_schema::pointer::resolve(root, pointer);
    }
    pointer
        .split('/')
        .skip(1)
        .try_fold(root, |at, token| match at {
            Value::Object(map) => map.get(token),
            Value::Array(items) => items.get(token.parse::<usize>().ok()?),
            _ => None,
        })
}

/// The types a node allows: from `type`, else inferred from `enum`/`const`; `None` when unconstrained.
fn types(node: &Map<String, Value>) -> Option<Vec<&str>> {
    match node.get("type") {
        Some(Value::String(t)) => Some(vec![t.as_str()]),
        Some(Value::Array(ts)) => Some(ts.iter().filter_map(Value::as_str).collect()),
        _ => {
            let values: Vec<&Value> = match (node.get("enum"), node.get("const")) {
                (Some(Value::Array(values)), _) => values.iter().collect(),
                (None, Some(c)) => vec![c],
                _ => return None,
            };
            let mut out: Vec<&str> = Vec::new();
            for v in values {
                let t = type_of(v);
                if !out.contains(&t) {
                    out.push(t);
                }
            }
            Some(out)
        }
    }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether a JSON Schema type name admits a value as it is.
fn admits(t: &str, value: &Value) -> bool {
    match (t, value) {
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        ("number", Value::Number(_)) => true,
        (t, v) => t == type_of(v) || (t == "number" && type_of(v) == "integer"),
    }
}

/// The value converted to type `t`, if that can be done without guessing or losing anything.
fn convert(value: &Value, t: &str) -> Option<(Value, FixKind)> {
    match (t, value) {
        ("integer", Value::String(s)) => {
            let (n, kind) = read_number(s)?;
            integral(n).map(|i| (i, kind))
        }
        ("integer", Value::Number(n)) => {
            integral(n.as_f64()?).map(|i| (i, FixKind::FloatToInteger))
        }
        ("number", Value::String(s)) => {
            let (n, kind) = read_number(s)?;
            let v = integral(n).unwrap_or(Value::Number(Number::from_f64(n)?));
            Some((v, kind))
        }
        ("boolean", Value::String(s)) => {
            let b = match s.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "y" | "on" | "1" => true,
                "false" | "no" | "n" | "off" | "0" => false,
                _ => {
                    return prose::boolean_in(s)
                        .map(|b| (Value::Bool(b), FixKind::BooleanFromProse));
                }
            };
            Some((Value::Bool(b), FixKind::StringToBoolean))
        }
        ("boolean", Value::Number(n)) => match n.as_f64() {
            Some(1.0) => Some((Value::Bool(true), FixKind::StringToBoolean)),
            Some(0.0) => Some((Value::Bool(false), FixKind::StringToBoolean)),
            _ => None,
        },
        ("string", Value::Number(n)) => Some((Value::String(n.to_string()), FixKind::ToString)),
        ("string", Value::Bool(b)) => Some((Value::String(b.to_string()), FixKind::ToString)),
        ("null", Value::String(s)) if prose::is_null_word(s) => {
            Some((Value::Null, FixKind::ToNull))
        }
        ("object" | "array", Value::String(s)) => {
            let parsed = embedded_json(s).filter(|p| type_of(p) == t);
            match parsed {
                Some(p) => Some((p, FixKind::Unescaped)),
                None if t == "array" => {
                    Some((Value::Array(vec![value.clone()]), FixKind::WrapInArray))
                }
                None => None,
            }
        }
        ("array", v) if !v.is_null() => Some((Value::Array(vec![v.clone()]), FixKind::WrapInArray)),
        (t, Value::Array(items)) => match items.as_slice() {
            [one] if admits(t, one) => Some((one.clone(), FixKind::Unwrapped)),
            _ => None,
        },
        _ => None,
    }
}

/// A JSON object or array held in a string, repaired if need be (`"{verdict: bad}"`); only text that
/// starts and ends like one is tried, so prose is never turned into a value.
fn embedded_json(s: &str) -> Option<Value> {
    let t = s.trim();
    let shaped =
        (t.starts_with('{') && t.ends_with('}')) || (t.starts_with('[') && t.ends_with(']'));
    if !shaped {
        return None;
    }
    crate::repair::repair(t).ok().map(|r| r.value)
}

/// A number in a string: as JSON would write it or with thousands separators, else as people write one
/// (currency, percentage, fraction), else the one number in a sentence; with the kind of fix it is.
fn read_number(s: &str) -> Option<(f64, FixKind)> {
    prose::number(s).or_else(|| prose::number_in(s).map(|n| (n, FixKind::NumberFromProse)))
}

/// Parses `5`, ` -3.5 `, `1,234.5`, `+7`, `1e3`; thousands separators only in groups of three.
fn parse_number(s: &str) -> Option<f64> {
    let s = s.trim();
    let s = s.strip_prefix('+').unwrap_or(s);
    if s.is_empty() {
        return None;
    }
    let plain = if s.contains(',') {
        let (int, frac) = s.split_once('.').map_or((s, None), |(i, f)| (i, Some(f)));
        let digits = int.strip_prefix('-').unwrap_or(int);
        let mut groups = digits.split(',');
        let first = groups.next()?;
        let ok = (1..=3).contains(&first.len())
            && first.bytes().all(|b| b.is_ascii_digit())
            && groups.all(|g| g.len() == 3 && g.bytes().all(|b| b.is_ascii_digit()));
        if !ok {
            return None;
        }
        let mut joined = int.replace(',', "");
        if let Some(f) = frac {
            joined.push('.');
            joined.push_str(f);
        }
        joined
    } else {
        s.to_owned()
    };
    // Only what JSON would call a number (no `inf`, `nan`, hex).
    if !plain
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'e' | b'E' | b'+'))
    {
        return None;
    }
    plain.parse::<f64>().ok().filter(|f| f.is_finite())
}

fn integral(n: f64) -> Option<Value> {
    if n.fract() != 0.0 || n.abs() > 9_007_199_254_740_992.0 {
        return None;
    }
    #[allow(clippy::cast_possible_truncation)]
    Some(Value::Number(Number::from(n as i64)))
}

fn normalise(s: &str) -> String {
    s.trim()
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A key as letters and digits only, lowercase (`First-Name` and `first_name` are both `firstname`).
fn squash(key: &str) -> String {
    key.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// A value as short compact JSON, for a [`Fix`].
pub(crate) fn excerpt(value: &Value) -> String {
    const MAX: usize = 60;
    let text = value.to_string();
    if text.chars().count() <= MAX {
        return text;
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}...")
}

#[cfg(test)]
mod tests;
