//! Example instances built from a schema: a reply that shows a model the form of a valid one.
//!
//! [`example`] walks a schema and writes the smallest instance that shows its shape, preferring what
//! the schema says itself: `const`, then the first of its `examples`, then `default`, then the first
//! `enum` value. Otherwise a type-appropriate placeholder: the required properties of an object
//! (optional ones are left out unless `minProperties` asks for them, so an example never calls an
//! optional tool), one item of an array (or `minItems`), a string in the schema's `format` or
//! matching its `pattern` (simple patterns: literals, classes, groups, alternatives, quantifiers),
//! the lowest number the bounds allow; `allOf` branches are merged, the first non-null `anyOf`/`oneOf`
//! branch is taken, local `$ref`s are followed. The instance is then validated against the schema:
//! what [`example`] returns is always valid, and a schema it cannot show gets [`NoExample`] saying
//! where.
//!
//! ```
//! use serde_json::json;
//!
//! let schema = json!({
//!     "type": "object",
//!     "required": ["answer", "mood", "code"],
//!     "properties": {
//!         "answer": {"type": "string", "examples": ["A spider has eight legs."]},
//!         "mood": {"enum": ["calm", "angry"]},
//!         "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"},
//!         "note": {"type": "string"},
//!     },
//! });
//! assert_eq!(
//!     claij_schema::example(&schema)?,
//!     json!({"answer": "A spider has eight legs.", "mood": "calm", "code": "AA-000"}),
//! );
//! # Ok::<(), claij_schema::NoExample>(())
//! ```
//!
//! Descriptions are never used as values: a small model copies what it is shown, and a description
//! ("the reply itself") copied into a reply is nonsense.

mod pattern;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value, json};

use crate::dialect::percent_decode;

/// Why [`example`] has no example for a schema: where (a JSON pointer into the schema, or into the
/// instance for one that does not validate) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no example at `{pointer}`: {reason}")]
pub struct NoExample {
    /// JSON pointer into the schema (or, when the instance built does not validate, into it).
    pub pointer: String,
    /// What stopped it.
    pub reason: String,
}

/// Deepest nesting of subschemas followed ([`NoExample`] past it: schemas are untrusted input).
pub const MAX_DEPTH: usize = 32;
/// Most values built for one example, tries that failed included; a schema that needs more (say
/// `minItems: 10000`) has none.
pub const MAX_VALUES: usize = 1_000;
/// Longest string built (a `minLength` above it has no example).
pub const MAX_STRING_CHARS: u64 = 1_000;

/// The string placeholder when the schema gives no value, format or pattern: plainly a placeholder,
/// and not a sentence a model would take for an answer.
const PLACEHOLDER: &str = "...";

/// An instance of `schema`, valid against it, for a prompt to show (see the [module docs](self)).
///
/// # Errors
///
/// [`NoExample`] when the schema accepts nothing that can be built (`false`, a pattern too complex, a
/// recursion that never ends, bounds past [`MAX_VALUES`], [`MAX_STRING_CHARS`] or [`MAX_DEPTH`]) or does
/// not compile.
pub fn example(schema: &Value) -> Result<Value, NoExample> {
    let mut builder = Builder {
        root: schema,
        values: 0,
        references: Vec::new(),
        limited: None,
    };
    let value = builder.build(schema, "", 0)?;
    if let Some(limited) = builder.limited {
        return Err(limited);
    }
    let compiled = crate::compile(schema).map_err(|e| NoExample {
        pointer: String::new(),
        reason: format!("the schema does not compile: {e}"),
    })?;
    let (schemas, index) = compiled.as_boon();
    if let Err(error) = schemas.validate(&value, index) {
        let mut leaf = &error;
        while let Some(first) = leaf.causes.first() {
            leaf = first;
        }
        return Err(NoExample {
            pointer: leaf.instance_location.to_string(),
            reason: format!("the instance built, {value}, is not valid: {}", leaf.kind),
        });
    }
    Ok(value)
}

struct Builder<'a> {
    root: &'a Value,
    values: usize,
    /// The `$ref` targets being built, to stop a recursion that never ends.
    references: Vec<String>,
    /// The first limit reached.
    limited: Option<NoExample>,
}

impl Builder<'_> {
    /// Remembers a limit reached: an example past a limit is refused even where a failed item
    /// would otherwise be left out (a schema nested 100,000 deep is not compiled to check it).
    fn limit(&mut self, error: NoExample) -> NoExample {
        self.limited.get_or_insert_with(|| error.clone());
        error
    }

    fn build(&mut self, schema: &Value, at: &str, depth: usize) -> Result<Value, NoExample> {
        if depth > MAX_DEPTH {
            return Err(self.limit(no(at, format!("nested deeper than {MAX_DEPTH} levels"))));
        }
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(self.limit(no(at, format!("it needs more than {MAX_VALUES} values"))));
        }
        match schema {
            Value::Bool(true) => Ok(Value::Null),
            Value::Bool(false) => Err(no(at, "the schema `false` accepts nothing".to_owned())),
            Value::Object(map) => self.build_map(map, at, depth),
            _ => Err(no(at, "a schema must be an object or a boolean".to_owned())),
        }
    }

    fn build_map(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        depth: usize,
    ) -> Result<Value, NoExample> {
        if let Some(reference) = map.get("$ref") {
            return self.reference(map, reference, at, depth);
        }
        if let Some(Value::Array(branches)) = map.get("allOf") {
            let mut merged = map.clone();
            merged.shift_remove("allOf");
            for branch in branches {
                match branch {
                    Value::Object(branch) => merge(&mut merged, branch),
                    Value::Bool(true) => {}
                    _ => {
                        return Err(no(
                            &child(at, "allOf"),
                            "an `allOf` branch accepts nothing".to_owned(),
                        ));
                    }
                }
            }
            return self.build_map(&merged, at, depth + 1);
        }
        if let Some(value) = chosen(map) {
            return Ok(value);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get(key) {
                // The first branch that is not a bare `null` (a nullable field shows its value).
                let index = branches.iter().position(|b| !is_null_type(b)).unwrap_or(0);
                let Some(branch) = branches.get(index) else {
                    return Err(no(&child(at, key), format!("`{key}` has no branch")));
                };
                let mut merged = map.clone();
                merged.shift_remove(key);
                return match branch {
                    Value::Object(branch) => {
                        merge(&mut merged, branch);
                        self.build_map(
                            &merged,
                            &child(&child(at, key), &index.to_string()),
                            depth + 1,
                        )
                    }
                    other => self.build(
                        other,
                        &child(&child(at, key), &index.to_string()),
                        depth + 1,
                    ),
                };
            }
        }
        match type_of(map) {
            "object" => self.object(map, at, depth),
            "array" => self.array(map, at, depth),
            "string" => string(map, at),
            "integer" => Ok(number(map, true)),
            "number" => Ok(number(map, false)),
            "boolean" => Ok(Value::Bool(true)),
            _ => Ok(Value::Null),
        }
    }

    fn reference(
        &mut self,
        map: &Map<String, Value>,
        reference: &Value,
        at: &str,
        depth: usize,
    ) -> Result<Value, NoExample> {
        let pointer = reference
            .as_str()
            .and_then(|r| r.strip_prefix('#'))
            .and_then(percent_decode)
            .filter(|p| p.is_empty() || p.starts_with('/'));
        let Some(pointer) = pointer else {
            return Err(no(
                &child(at, "$ref"),
                format!("cannot follow the reference {reference}"),
            ));
        };
        let Some(Value::Object(target)) = self.root.pointer(&pointer) else {
            return Err(no(
                &child(at, "$ref"),
                format!("the reference {reference} points at no schema object"),
            ));
        };
        if self.references.iter().filter(|r| **r == pointer).count() >= 2 {
            return Err(no(
                &child(at, "$ref"),
                format!("the reference {reference} recurses without end"),
            ));
        }
        let mut merged = target.clone();
        let mut siblings = map.clone();
        siblings.shift_remove("$ref");
        merge(&mut merged, &siblings);
        self.references.push(pointer);
        let value = self.build_map(&merged, at, depth + 1);
        self.references.pop();
        value
    }

    fn object(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        depth: usize,
    ) -> Result<Value, NoExample> {
        let empty = Map::new();
        let properties = match map.get("properties") {
            Some(Value::Object(p)) => p,
            _ => &empty,
        };
        let required: Vec<&str> = match map.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let min = count(map, "minProperties").unwrap_or(0);
        let mut out = Map::new();
        let at_properties = child(at, "properties");
        // Declared order, required ones; then optional ones while `minProperties` asks for more.
        for (name, schema) in properties {
            if required.contains(&name.as_str()) {
                let value = self.build(schema, &child(&at_properties, name), depth + 1)?;
                out.insert(name.clone(), value);
            }
        }
        for (name, schema) in properties {
            if (out.len() as u64) >= min {
                break;
            }
            if !out.contains_key(name) {
                let value = self.build(schema, &child(&at_properties, name), depth + 1)?;
                out.insert(name.clone(), value);
            }
        }
        // Required names without a property schema take what other keys take.
        let others = map
            .get("additionalProperties")
            .cloned()
            .unwrap_or(Value::Bool(true));
        for name in required {
            if !out.contains_key(name) {
                let value = self.build(&others, &child(at, "additionalProperties"), depth + 1)?;
                out.insert(name.to_owned(), value);
            }
        }
        Ok(Value::Object(out))
    }

    fn array(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        depth: usize,
    ) -> Result<Value, NoExample> {
        let mut out = Vec::new();
        let prefix = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(prefix)), _) => Some(("prefixItems", prefix)),
            (None, Some(Value::Array(prefix))) => Some(("items", prefix)),
            _ => None,
        };
        let min = count(map, "minItems").unwrap_or(0);
        let max = count(map, "maxItems");
        if min > MAX_VALUES as u64 {
            return Err(no(
                &child(at, "minItems"),
                format!("minItems {min} is over the limit of {MAX_VALUES} values"),
            ));
        }
        if let Some((key, prefix)) = prefix {
            for (i, item) in prefix.iter().enumerate() {
                if (out.len() as u64) >= min.max(prefix.len() as u64).min(max.unwrap_or(u64::MAX)) {
                    break;
                }
                out.push(self.build(item, &child(&child(at, key), &i.to_string()), depth + 1)?);
            }
        }
        let rest = match (prefix, map.get("items")) {
            (Some(("prefixItems", _)), Some(items)) => Some(items),
            (Some(_), _) => map.get("additionalItems"),
            (None, items) => items,
        };
        // One item shows its shape; `minItems` asks for more.
        let wanted = min.max(1).min(max.unwrap_or(u64::MAX));
        let rest_key = if prefix.is_some() && map.contains_key("additionalItems") {
            "additionalItems"
        } else {
            "items"
        };
        while (out.len() as u64) < wanted {
            match rest {
                Some(Value::Bool(false)) => break,
                Some(items) => {
                    // The values counted stay counted: they bound the work, failed tries included.
                    match self.build(items, &child(at, rest_key), depth + 1) {
                        Ok(item) => out.push(item),
                        // An item nobody asked for that cannot be built (a tree's children): none.
                        Err(_) if (out.len() as u64) >= min => break,
                        Err(e) => return Err(e),
                    }
                }
                None => out.push(Value::Null),
            }
        }
        Ok(Value::Array(out))
    }
}

/// The value the schema names itself: `const`, its first example, its default, its first `enum`
/// value (an example or default outside the `enum` is not taken).
fn chosen(map: &Map<String, Value>) -> Option<Value> {
    if let Some(value) = map.get("const") {
        return Some(value.clone());
    }
    let allowed = |v: &Value| match map.get("enum") {
        Some(Value::Array(values)) => values.contains(v),
        _ => true,
    };
    let example = match map.get("examples") {
        Some(Value::Array(examples)) => examples.first(),
        _ => None,
    };
    example
        .into_iter()
        .chain(map.get("default"))
        .find(|v| allowed(v))
        .or_else(|| match map.get("enum") {
            Some(Value::Array(values)) => values.first(),
            _ => None,
        })
        .cloned()
}

/// Adds `other`'s keywords to `into` as an `allOf` would: properties of both (a property in both
/// becomes the `allOf` of the two), `required` united, the narrower `type`, the first `const`, `enum`,
/// example and bound seen; everything else from `into` first.
fn merge(into: &mut Map<String, Value>, other: &Map<String, Value>) {
    for (key, value) in other {
        match (key.as_str(), into.get_mut(key)) {
            (_, None) => {
                into.insert(key.clone(), value.clone());
            }
            ("properties", Some(Value::Object(have))) => {
                if let Value::Object(add) = value {
                    for (name, schema) in add {
                        match have.get_mut(name) {
                            None => {
                                have.insert(name.clone(), schema.clone());
                            }
                            Some(existing) if existing == schema => {}
                            Some(existing) => {
                                *existing = json!({"allOf": [existing.clone(), schema.clone()]});
                            }
                        }
                    }
                }
            }
            ("required", Some(Value::Array(have))) => {
                if let Value::Array(add) = value {
                    for name in add {
                        if !have.contains(name) {
                            have.push(name.clone());
                        }
                    }
                }
            }
            ("type", Some(have)) => {
                let types = |v: &Value| -> Vec<Value> {
                    match v {
                        Value::Array(ts) => ts.clone(),
                        other => vec![other.clone()],
                    }
                };
                let add = types(value);
                let integer = Value::from("integer");
                let number = Value::from("number");
                let mut both: Vec<Value> = Vec::new();
                for t in types(have) {
                    let kept = if add.contains(&t) {
                        t
                    } else if (t == number && add.contains(&integer))
                        || (t == integer && add.contains(&number))
                    {
                        integer.clone()
                    } else {
                        continue;
                    };
                    if !both.contains(&kept) {
                        both.push(kept);
                    }
                }
                *have = match both.as_slice() {
                    [one] => one.clone(),
                    _ => Value::Array(both),
                };
            }
            ("enum", Some(Value::Array(have))) => {
                if let Value::Array(add) = value {
                    have.retain(|v| add.contains(v));
                }
            }
            ("allOf", Some(Value::Array(have))) => {
                if let Value::Array(add) = value {
                    have.extend(add.iter().cloned());
                }
            }
            _ => {}
        }
    }
}

fn is_null_type(schema: &Value) -> bool {
    matches!(schema, Value::Object(m) if m.get("type") == Some(&Value::from("null")))
}

/// The type to build: the schema's (the first that is not `null` when it lists several), else what
/// its keywords imply.
fn type_of(map: &Map<String, Value>) -> &str {
    match map.get("type") {
        Some(Value::String(t)) => return t,
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            return names
                .iter()
                .find(|t| **t != "null")
                .or(names.first())
                .copied()
                .unwrap_or("null");
        }
        _ => {}
    }
    let has = |keys: &[&str]| keys.iter().any(|k| map.contains_key(*k));
    if has(&[
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "minProperties",
    ]) {
        "object"
    } else if has(&["items", "prefixItems", "minItems", "maxItems"]) {
        "array"
    } else if has(&["minLength", "maxLength", "pattern", "format"]) {
        "string"
    } else if has(&[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    ]) {
        "number"
    } else {
        "null"
    }
}

fn string(map: &Map<String, Value>, at: &str) -> Result<Value, NoExample> {
    let mut text = match (
        map.get("format").and_then(Value::as_str),
        map.get("pattern").and_then(Value::as_str),
    ) {
        (_, Some(p)) => pattern::sample(p).ok_or_else(|| {
            no(
                &child(at, "pattern"),
                format!("cannot write a string matching {p:?}"),
            )
        })?,
        (Some(format), None) => format_sample(format).unwrap_or(PLACEHOLDER).to_owned(),
        (None, None) => PLACEHOLDER.to_owned(),
    };
    let min = count(map, "minLength").unwrap_or(0);
    if min > MAX_STRING_CHARS {
        return Err(no(
            &child(at, "minLength"),
            format!("minLength {min} is over the limit of {MAX_STRING_CHARS} characters"),
        ));
    }
    let chars = text.chars().count() as u64;
    if chars < min {
        text.extend(std::iter::repeat_n('.', (min - chars) as usize));
    }
    if let Some(max) = count(map, "maxLength") {
        text = text
            .chars()
            .take(usize::try_from(max).unwrap_or(usize::MAX))
            .collect();
    }
    Ok(Value::String(text))
}

/// A value in a format JSON Schema defines (reserved documentation names and addresses).
fn format_sample(format: &str) -> Option<&'static str> {
    Some(match format {
        "date-time" => "2024-05-17T09:30:00Z",
        "date" => "2024-05-17",
        "time" => "09:30:00Z",
        "duration" => "P1D",
        "email" | "idn-email" => "someone@example.com",
        "hostname" | "idn-hostname" => "example.com",
        "ipv4" => "192.0.2.1",
        "ipv6" => "2001:db8::1",
        "uri" | "iri" => "https://example.com/",
        "uri-reference" | "iri-reference" => "/example",
        "uri-template" => "https://example.com/{id}",
        "uuid" => "123e4567-e89b-12d3-a456-426614174000",
        "json-pointer" => "/example",
        "relative-json-pointer" => "0",
        "regex" => ".*",
        _ => return None,
    })
}

/// The lowest number the bounds allow (0 when they allow it), a multiple of `multipleOf` when one
/// is that low.
fn number(map: &Map<String, Value>, integer: bool) -> Value {
    let get = |key: &str| map.get(key).and_then(Value::as_f64);
    let flag = |key: &str| map.get(key) == Some(&Value::Bool(true));
    let step = if integer { 1.0 } else { 0.5 };
    let low = match (get("exclusiveMinimum"), get("minimum")) {
        (Some(x), Some(m)) => Some((x + step).max(m)),
        (Some(x), None) => Some(x + step),
        (None, Some(m)) if flag("exclusiveMinimum") => Some(m + step),
        (None, Some(m)) => Some(m),
        (None, None) => None,
    };
    let high = match (get("exclusiveMaximum"), get("maximum")) {
        (Some(x), Some(m)) => Some((x - step).min(m)),
        (Some(x), None) => Some(x - step),
        (None, Some(m)) if flag("exclusiveMaximum") => Some(m - step),
        (None, Some(m)) => Some(m),
        (None, None) => None,
    };
    let mut n = match (low, high) {
        (Some(low), _) => low,
        (None, Some(high)) if high < 0.0 => high,
        _ => 0.0,
    };
    if integer {
        n = n.ceil();
    }
    if let Some(step) = get("multipleOf").filter(|s| *s > 0.0) {
        n = (n / step).ceil() * step;
    }
    if integer || n.fract() == 0.0 && n.abs() < 9e15 {
        json!(n as i64)
    } else {
        json!(n)
    }
}

fn count(map: &Map<String, Value>, key: &str) -> Option<u64> {
    map.get(key).and_then(Value::as_u64)
}

fn child(pointer: &str, token: &str) -> String {
    crate::pointer::push(pointer, token)
}

fn no(pointer: &str, reason: String) -> NoExample {
    NoExample {
        pointer: pointer.to_owned(),
        reason,
    }
}
