//! OpenAI strict structured outputs, and the strict-subset walker Anthropic shares.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{
    Cx, Dialect, DialectError, LossKind, Result, accepts_null, child, is_object_schema,
    is_primitive, is_reached, json_type, make_nullable, percent_decode, reachable_refs,
};

/// What one strict dialect keeps, drops and requires.
pub(super) struct Rules {
    /// Optional properties become required and nullable (OpenAI: every property must be in `required`).
    pub all_required: bool,
    /// The root must be `type: "object"` without `anyOf`.
    pub root_object: bool,
    /// `$ref` cycles are an error.
    pub forbid_recursion: bool,
    /// Root `definitions` (draft-07) are moved to `$defs`.
    pub rename_definitions: bool,
    /// Numeric keywords kept as they are.
    pub numeric: &'static [&'static str],
    /// Supported `format` values for strings.
    pub formats: &'static [&'static str],
    /// `default` is accepted.
    pub keep_default: bool,
    /// `minItems` above this is relaxed to it (`None`: kept, if listed in `numeric`).
    pub min_items_cap: Option<u64>,
    /// Whether a `pattern` is within what the provider's regex engine accepts.
    pub pattern_ok: fn(&str) -> bool,
}

/// OpenAI structured outputs, `strict: true` (supported-schemas list of the structured-outputs guide).
const OPENAI: Rules = Rules {
    all_required: true,
    root_object: true,
    forbid_recursion: false,
    rename_definitions: true,
    numeric: &[
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
    ],
    formats: &[
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uuid",
    ],
    // Rejected by the API in 2024 ("'default' is not permitted") and still by some deployments; it is an
    // annotation, so dropping it changes no validation.
    keep_default: false,
    min_items_cap: None,
    pattern_ok: |_| true,
};

pub(super) fn compile(cx: &mut Cx<'_>) -> Result<Value> {
    compile_strict(cx, &OPENAI)
}

/// Compiles the whole schema with a strict dialect's rules.
pub(super) fn compile_strict(cx: &mut Cx<'_>, rules: &Rules) -> Result<Value> {
    let (reached, cycle) = reachable_refs(cx)?;
    if let (true, Some((pointer, reference))) = (rules.forbid_recursion, cycle) {
        return Err(cx.recursive(&reference, &pointer));
    }
    let root = cx.root;
    let Value::Object(root_map) = root else {
        return Err(DialectError::RootNotObject {
            dialect: cx.dialect,
            found: json_type(root).to_owned(),
        });
    };
    let mut walker = Walker { rules, reached };
    let mut out = walker.node(cx, root, "")?;
    if let Value::Object(map) = &mut out {
        // A root `{"$ref": ...}` (what pydantic's RootModel emits) is inlined: OpenAI wants the object itself.
        if let (true, Some(Value::String(reference))) = (rules.root_object, map.get("$ref")) {
            let reference = reference.clone();
            let (target, target_pointer) = cx.resolve(&reference, "")?;
            let inlined = walker.node(cx, target, &target_pointer)?;
            cx.loss("", "$ref", &Value::String(reference), LossKind::Rewritten);
            map.shift_remove("$ref");
            if let Value::Object(inlined) = inlined {
                for (key, value) in inlined {
                    map.entry(key).or_insert(value);
                }
            }
        }
        if !map.contains_key("type") && map.contains_key("properties") {
            map.insert("type".to_owned(), "object".into());
        }
    }
    let renamed = rules.rename_definitions
        && root_map.contains_key("definitions")
        && !root_map.contains_key("$defs");
    prune_definitions(cx, &mut out, renamed);
    if rules.root_object {
        check_root_object(cx.dialect, &out, root_map)?;
    }
    Ok(out)
}

fn check_root_object(dialect: Dialect, out: &Value, original: &Map<String, Value>) -> Result<()> {
    let found = match out {
        Value::Object(map) if map.contains_key("anyOf") => "anyOf".to_owned(),
        Value::Object(map) => match map.get("type") {
            Some(Value::String(t)) if t == "object" => return Ok(()),
            Some(t) => format!("type {t}"),
            None if original.contains_key("oneOf") => "oneOf".to_owned(),
            None => "a schema without type".to_owned(),
        },
        other => json_type(other).to_owned(),
    };
    Err(DialectError::RootNotObject { dialect, found })
}

struct Walker<'r> {
    rules: &'r Rules,
    /// `$ref` targets reachable from the root; unreachable root definitions are left out.
    reached: HashSet<String>,
}

impl Walker<'_> {
    fn node(&mut self, cx: &mut Cx<'_>, schema: &Value, pointer: &str) -> Result<Value> {
        cx.enter(pointer)?;
        let result = match schema {
            Value::Object(map) => self.object(cx, map, pointer),
            Value::Bool(true) => Ok(Value::Object(Map::new())),
            Value::Bool(false) => Ok(Value::Bool(false)),
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
    ) -> Result<Value> {
        if let Some(reference) = map.get("$ref") {
            return self.reference(cx, map, reference, pointer);
        }
        let map = cx.flatten(map, pointer)?;
        let rules = self.rules;
        let object = is_object_schema(&map);
        let mut out = Map::new();
        for (key, value) in map.iter() {
            let kept = match (key.as_str(), value) {
                ("type", Value::String(_)) => Some(value.clone()),
                ("type", Value::Array(ts)) if ts.iter().all(Value::is_string) => {
                    Some(value.clone())
                }
                ("description" | "title", Value::String(_)) => Some(value.clone()),
                ("default", _) if rules.keep_default => Some(value.clone()),
                ("enum", Value::Array(values)) if values.iter().all(is_primitive) => {
                    Some(value.clone())
                }
                ("const", v) if is_primitive(v) => Some(value.clone()),
                ("format", Value::String(f)) if rules.formats.contains(&f.as_str()) => {
                    Some(value.clone())
                }
                ("pattern", Value::String(p)) if (rules.pattern_ok)(p) => Some(value.clone()),
                ("minItems", Value::Number(n)) if rules.min_items_cap.is_some() => {
                    let cap = rules.min_items_cap.unwrap_or(0);
                    match n.as_u64() {
                        Some(n) if n <= cap => Some(value.clone()),
                        Some(_) => {
                            cx.loss(pointer, key, value, LossKind::Relaxed);
                            out.insert(key.clone(), cap.into());
                            continue;
                        }
                        None => None,
                    }
                }
                (k, Value::Number(_)) if rules.numeric.contains(&k) => Some(value.clone()),
                ("items", Value::Object(_) | Value::Bool(_)) => {
                    Some(self.node(cx, value, &child(pointer, "items"))?)
                }
                ("anyOf" | "oneOf", Value::Array(branches)) => {
                    if key == "oneOf" && map.contains_key("anyOf") {
                        None
                    } else {
                        if key == "oneOf" {
                            cx.loss(pointer, key, value, LossKind::Relaxed);
                        }
                        let compiled = self.branches(cx, branches, &child(pointer, key))?;
                        out.insert("anyOf".to_owned(), Value::Array(compiled));
                        continue;
                    }
                }
                ("$defs" | "definitions", Value::Object(defs)) => {
                    let out_key = if rules.rename_definitions
                        && pointer.is_empty()
                        && !map.contains_key("$defs")
                    {
                        "$defs"
                    } else {
                        key.as_str()
                    };
                    let compiled = self.definitions(cx, defs, &child(pointer, key))?;
                    out.insert(out_key.to_owned(), Value::Object(compiled));
                    continue;
                }
                ("properties" | "required" | "additionalProperties", _) if object => {
                    let value = self.object_keyword(cx, &map, key, value, pointer)?;
                    out.insert(key.clone(), value);
                    continue;
                }
                _ => None,
            };
            match kept {
                Some(value) => {
                    out.insert(key.clone(), value);
                }
                None if key == "nullable" && value.is_boolean() => {} // applied below
                None => cx.loss(pointer, key, value, LossKind::Dropped),
            }
        }
        if object {
            self.finish_object(cx, &map, pointer, &mut out)?;
        }
        let mut out = Value::Object(out);
        if map.get("nullable") == Some(&Value::Bool(true)) {
            cx.loss(pointer, "nullable", &Value::Bool(true), LossKind::Rewritten);
            if !accepts_null(&out) {
                out = make_nullable(out);
            }
        }
        Ok(out)
    }

    /// `properties`, `required` or `additionalProperties` of an object schema, in place so that keys and losses
    /// keep the input order; [`Walker::finish_object`] fills in what is missing.
    fn object_keyword(
        &mut self,
        cx: &mut Cx<'_>,
        map: &Map<String, Value>,
        key: &str,
        value: &Value,
        pointer: &str,
    ) -> Result<Value> {
        match (key, value) {
            ("properties", Value::Object(properties)) => {
                self.properties(cx, map, properties, pointer)
            }
            ("required", Value::Array(names)) => {
                let properties = map.get("properties").and_then(Value::as_object);
                for name in names {
                    let known = name
                        .as_str()
                        .is_some_and(|n| properties.is_some_and(|p| p.contains_key(n)));
                    if !known {
                        cx.loss(pointer, key, name, LossKind::Dropped);
                    }
                }
                Ok(Value::Null) // placeholder, see finish_object
            }
            ("additionalProperties", Value::Bool(false)) => Ok(Value::Bool(false)),
            _ => {
                cx.loss(pointer, key, value, LossKind::Dropped);
                Ok(Value::Null)
            }
        }
    }

    fn properties(
        &mut self,
        cx: &mut Cx<'_>,
        map: &Map<String, Value>,
        properties: &Map<String, Value>,
        pointer: &str,
    ) -> Result<Value> {
        let required = required_names(map);
        let base = child(pointer, "properties");
        let mut compiled = Map::new();
        for (name, schema) in properties {
            let at = child(&base, name);
            if *schema == Value::Bool(false) {
                // A forbidden property: leaving it out (with additionalProperties false) says the same.
                cx.loss(&at, "false", schema, LossKind::Rewritten);
                continue;
            }
            let mut property = self.node(cx, schema, &at)?;
            if self.rules.all_required && !required.contains(&name.as_str()) {
                let name = Value::from(name.as_str());
                if accepts_null(&property) {
                    cx.loss(&at, "required", &name, LossKind::Tightened);
                } else {
                    cx.loss(&at, "required", &name, LossKind::Nullable);
                    property = make_nullable(property);
                }
            }
            compiled.insert(name.clone(), property);
        }
        Ok(Value::Object(compiled))
    }

    /// `type`, `properties`, `required` and `additionalProperties: false`, whatever the input had.
    fn finish_object(
        &mut self,
        cx: &mut Cx<'_>,
        map: &Map<String, Value>,
        pointer: &str,
        out: &mut Map<String, Value>,
    ) -> Result<()> {
        if !out.contains_key("type") {
            out.insert("type".to_owned(), "object".into());
        }
        let has_properties =
            matches!(out.get("properties"), Some(Value::Object(p)) if !p.is_empty());
        if !matches!(out.get("properties"), Some(Value::Object(_))) {
            out.insert("properties".to_owned(), Value::Object(Map::new()));
        }
        if !has_properties && !map.contains_key("additionalProperties") {
            // An open object without properties becomes an empty one: say so.
            cx.loss(
                pointer,
                "additionalProperties",
                &Value::Bool(true),
                LossKind::Dropped,
            );
        }
        let compiled = out.get("properties").and_then(Value::as_object);
        let names = compiled
            .map(|p| p.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        let required: Vec<Value> = if self.rules.all_required {
            names.into_iter().map(Value::String).collect()
        } else {
            let wanted = required_names(map);
            names
                .into_iter()
                .filter(|n| wanted.contains(&n.as_str()))
                .map(Value::String)
                .collect()
        };
        out.insert("required".to_owned(), Value::Array(required));
        out.insert("additionalProperties".to_owned(), Value::Bool(false));
        Ok(())
    }

    fn branches(
        &mut self,
        cx: &mut Cx<'_>,
        branches: &[Value],
        pointer: &str,
    ) -> Result<Vec<Value>> {
        let mut out = Vec::with_capacity(branches.len());
        for (i, branch) in branches.iter().enumerate() {
            if *branch == Value::Bool(false) {
                continue; // a branch nothing matches changes nothing
            }
            out.push(self.node(cx, branch, &child(pointer, &i.to_string()))?);
        }
        if out.is_empty() {
            out.push(Value::Bool(false)); // `anyOf: []` is not a schema; nothing matches either way
        }
        Ok(out)
    }

    fn definitions(
        &mut self,
        cx: &mut Cx<'_>,
        defs: &Map<String, Value>,
        pointer: &str,
    ) -> Result<Map<String, Value>> {
        let mut out = Map::new();
        for (name, schema) in defs {
            let def_pointer = child(pointer, name);
            // Definitions nothing refers to cost prompt tokens and can trip provider limits: leave them out.
            let reachable = is_reached(&self.reached, &def_pointer);
            if reachable {
                out.insert(name.clone(), self.node(cx, schema, &def_pointer)?);
            }
        }
        Ok(out)
    }

    /// `$ref`: kept when alone; with sibling keywords (which strict mode rejects) the target is inlined one
    /// level and the siblings override it.
    fn reference(
        &mut self,
        cx: &mut Cx<'_>,
        map: &Map<String, Value>,
        reference: &Value,
        pointer: &str,
    ) -> Result<Value> {
        let Value::String(text) = reference else {
            cx.loss(pointer, "$ref", reference, LossKind::Dropped);
            let mut rest = map.clone();
            rest.shift_remove("$ref");
            return self.object(cx, &rest, pointer);
        };
        let (target, target_pointer) = cx.resolve(text, pointer)?;
        let text = match text.strip_prefix("#/definitions/") {
            Some(rest)
                if self.rules.rename_definitions
                    && !cx.root.get("$defs").is_some_and(Value::is_object) =>
            {
                format!("#/$defs/{rest}")
            }
            _ => text.clone(),
        };
        if map.len() == 1 {
            return Ok(Value::Object(Map::from_iter([(
                "$ref".to_owned(),
                Value::String(text),
            )])));
        }
        if cx.ref_stack.contains(&target_pointer) {
            // Inlining again would not end: keep the reference and give up the siblings.
            for (key, value) in map.iter().filter(|(k, _)| *k != "$ref") {
                cx.loss(pointer, key, value, LossKind::Dropped);
            }
            return Ok(Value::Object(Map::from_iter([(
                "$ref".to_owned(),
                Value::String(text),
            )])));
        }
        cx.loss(pointer, "$ref", reference, LossKind::Rewritten);
        cx.ref_stack.push(target_pointer.clone());
        let inlined = self.node(cx, target, &target_pointer);
        cx.ref_stack.pop();
        let mut siblings = map.clone();
        siblings.shift_remove("$ref");
        let siblings = self.object(cx, &siblings, pointer)?;
        let mut out = match inlined? {
            Value::Object(inlined) => inlined,
            _ => Map::new(),
        };
        if let Value::Object(siblings) = siblings {
            for (key, value) in siblings {
                out.insert(key, value);
            }
        }
        Ok(Value::Object(out))
    }
}

fn required_names(map: &Map<String, Value>) -> Vec<&str> {
    match map.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Removes root definitions no `$ref` in the output points at any more (inlining can orphan them), and
/// reports the draft-07 `definitions` → `$defs` move when something is left to move.
fn prune_definitions(cx: &mut Cx<'_>, out: &mut Value, renamed: bool) {
    let Value::Object(root) = out else { return };
    for key in ["$defs", "definitions"] {
        let Some(Value::Object(defs)) = root.get(key) else {
            continue;
        };
        let prefix = format!("#/{key}/");
        let mut used: HashSet<String> = HashSet::new();
        let mut queue: Vec<&Value> = root
            .iter()
            .filter(|(k, _)| *k != key)
            .map(|(_, v)| v)
            .collect();
        while let Some(value) = queue.pop() {
            match value {
                Value::Object(map) => {
                    let def = match map.get("$ref") {
                        Some(Value::String(reference)) => def_name(reference, &prefix),
                        _ => None,
                    };
                    if let Some(def) = def
                        && used.insert(def.clone())
                        && let Some(target) = defs.get(&def)
                    {
                        queue.push(target);
                    }
                    queue.extend(map.values());
                }
                Value::Array(items) => queue.extend(items),
                _ => {}
            }
        }
        let kept: Map<String, Value> = defs
            .iter()
            .filter(|(name, _)| used.contains(*name))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if kept.is_empty() {
            root.shift_remove(key);
        } else {
            if renamed && key == "$defs" {
                cx.loss(
                    "",
                    "definitions",
                    &Value::from("$defs"),
                    LossKind::Rewritten,
                );
            }
            root.insert(key.to_owned(), Value::Object(kept));
        }
    }
}

/// The definition name in `#/$defs/Name...` (unescaped), given the `#/$defs/` prefix.
fn def_name(reference: &str, prefix: &str) -> Option<String> {
    let rest = reference.strip_prefix(prefix)?;
    let token = rest.split('/').next().unwrap_or(rest);
    Some(percent_decode(token)?.replace("~1", "/").replace("~0", "~"))
}
