//! Schema-aware coercion: nudging a parsed reply towards its schema without inventing anything.
//!
//! What it does, each change recorded as a [`Fix`]:
//! - `"5"` to 5 for integers, `"1,234.5"` to 1234.5 for numbers, `5.0` to 5 for integers;
//! - `"true"`, `"yes"`, `"on"`, `"1"` (and their opposites) to booleans;
//! - numbers and booleans to strings where a string is expected;
//! - `"null"` to null where only null fits;
//! - a single value to a one-element array; a string holding a JSON object or array to that value;
//! - enum (and const) strings matched ignoring case and surrounding space;
//! - properties not allowed under `additionalProperties: false` dropped.
//!
//! It never adds a missing property, never changes a value that already has an allowed type, and never
//! loses precision (`"5.5"` does not become an integer). Validation afterwards decides what is still wrong.

use claij_schema::pointer::push;
use serde_json::{Map, Number, Value};

use crate::fix::{Fix, FixKind};

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
            if let Some(Value::Array(branches)) = node.get(keyword)
                && let Some(branch) = self.pick_branch(value, branches)
            {
                self.coerce(value, branch, at, depth + 1);
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
        claij_schema::pointer::resolve(self.root, reference.strip_prefix('#')?)
    }

    /// The branch of a union a value should be coerced into: by discriminator, else the only non-null
    /// branch, else the first branch whose type admits the value as it is.
    fn pick_branch(&self, value: &Value, branches: &'s [Value]) -> Option<&'s Value> {
        if let Value::Object(map) = value {
            for (prop, tag) in map {
                let hit = branches.iter().find(|b| {
                    let b = self.deref(b);
                    b.pointer(&push("/properties", prop))
                        .and_then(|p| p.get("const"))
                        .is_some_and(|c| c == tag || loosely_equal(c, tag))
                });
                if hit.is_some() {
                    return hit;
                }
            }
        }
        let non_null: Vec<&Value> = branches
            .iter()
            .filter(|b| self.deref(b).get("type") != Some(&Value::String("null".into())))
            .collect();
        if value.is_null() && non_null.len() < branches.len() {
            return None;
        }
        if let [only] = non_null.as_slice() {
            return Some(only);
        }
        branches.iter().find(|b| {
            self.deref(b)
                .as_object()
                .and_then(types)
                .is_some_and(|ts| ts.iter().any(|t| admits(t, value)))
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

    fn coerce_type(&mut self, value: &mut Value, node: &Map<String, Value>, at: &str) {
        let Some(allowed) = types(node) else { return };
        if allowed.iter().any(|t| admits(t, value)) {
            return;
        }
        for target in &allowed {
            if let Some((new, kind)) = convert(value, target) {
                self.record(at, kind, value, &new);
                *value = new;
                return;
            }
        }
    }

    fn coerce_enum(&mut self, value: &mut Value, node: &Map<String, Value>, at: &str) {
        let Value::String(s) = &*value else { return };
        let options: Vec<&Value> = match (node.get("enum"), node.get("const")) {
            (Some(Value::Array(values)), _) => values.iter().collect(),
            (None, Some(c)) => vec![c],
            _ => return,
        };
        if options.iter().any(|o| o.as_str() == Some(s)) {
            return;
        }
        let wanted = normalise(s);
        let mut matches = options
            .iter()
            .filter_map(|o| o.as_str())
            .filter(|o| normalise(o) == wanted);
        if let (Some(hit), None) = (matches.next(), matches.next()) {
            let new = Value::String(hit.to_owned());
            self.record(at, FixKind::EnumCase, value, &new);
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
                        .is_some_and(|ts| !ts.iter().any(|t| t == "null"))
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

/// The types a node allows: from `type`, else inferred from `enum`/`const`; `None` when unconstrained.
fn types(node: &Map<String, Value>) -> Option<Vec<String>> {
    match node.get("type") {
        Some(Value::String(t)) => Some(vec![t.clone()]),
        Some(Value::Array(ts)) => Some(
            ts.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => {
            let values: Vec<&Value> = match (node.get("enum"), node.get("const")) {
                (Some(Value::Array(values)), _) => values.iter().collect(),
                (None, Some(c)) => vec![c],
                _ => return None,
            };
            let mut out: Vec<String> = Vec::new();
            for v in values {
                let t = type_of(v).to_owned();
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
            let n = parse_number(s)?;
            integral(n).map(|i| (i, FixKind::StringToNumber))
        }
        ("integer", Value::Number(n)) => {
            integral(n.as_f64()?).map(|i| (i, FixKind::FloatToInteger))
        }
        ("number", Value::String(s)) => {
            let n = parse_number(s)?;
            let v = integral(n).unwrap_or(Value::Number(Number::from_f64(n)?));
            Some((v, FixKind::StringToNumber))
        }
        ("boolean", Value::String(s)) => {
            let b = match s.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "y" | "on" | "1" => true,
                "false" | "no" | "n" | "off" | "0" => false,
                _ => return None,
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
        ("null", Value::String(s)) if s.trim().eq_ignore_ascii_case("null") => {
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

fn loosely_equal(a: &Value, b: &Value) -> bool {
    matches!((a, b), (Value::String(a), Value::String(b)) if normalise(a) == normalise(b))
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
