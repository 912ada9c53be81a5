//! Composition: merging schema deltas into a schema, deterministically and idempotently.
//!
//! Rules, applied to the root of the schema for each delta in order:
//! - `properties`: new names are added; a name defined identically is a no-op; a name defined differently
//!   becomes `{"allOf": [existing, delta's]}`, so both constraints hold.
//! - `required`: a union, existing names first, new ones appended in the delta's order.
//! - `$defs` and `definitions`: new names are added; the same name with a different definition is an
//!   [`Error::DefinitionConflict`] naming both extensions.
//! - `allOf`: items not already present are appended.
//! - `$schema`: must name the schema's draft (else [`Error::DraftMismatch`]).
//! - any other keyword: set when absent, a no-op when equal, otherwise unsafe to merge: every such keyword
//!   of the delta goes, as one subschema, into the root `allOf` (once).
//! - a delta that contradicts the base, an earlier delta or itself (different types, `const`s or
//!   `enum`s at one place, a minimum over a maximum, a required property whose schema is `false`) is
//!   an [`Error::Contradiction`] naming both extensions: the composed schema would accept nothing.
//!
//! The same deltas in the same order give byte-identical output (maps keep insertion order); applying a
//! delta that is already in the schema changes nothing.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::base::Draft;
use crate::delta::SchemaDelta;
use crate::error::{Error, Result};

/// The name composition gives the base schema when reporting a conflict.
pub const BASE: &str = "base";

/// Composes `deltas`, in order, onto `base`.
///
/// ```
/// use claij_schema::{SchemaDelta, base, compose};
/// use serde_json::json;
///
/// let memory = SchemaDelta::new("summary-v1", "memory", json!({
///     "properties": {"summary": {"type": "string"}},
///     "required": ["summary"],
/// }));
/// let schema = compose(&base(), &[memory])?;
/// assert_eq!(schema["required"], json!(["answer", "state", "summary"]));
/// # Ok::<(), claij_schema::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::InvalidDelta`], [`Error::DefinitionConflict`], [`Error::Contradiction`] or
/// [`Error::DraftMismatch`], naming the extension.
/// The result is not meta-validated here; [`crate::Registry`] does that before activating it.
pub fn compose(base: &Value, deltas: &[SchemaDelta]) -> Result<Value> {
    let mut composer = Composer::new(base)?;
    for delta in deltas {
        composer.apply(delta)?;
    }
    Ok(composer.finish())
}

/// Incremental composition; remembers which extension defined each `$defs` name.
struct Composer {
    schema: Map<String, Value>,
    draft: Draft,
    /// (defs keyword, name) -> extension that defined it.
    def_owners: HashMap<(String, String), String>,
    /// The base and every delta applied, with who wrote it: each must leave some value possible
    /// with every other.
    applied: Vec<(String, Value)>,
}

impl Composer {
    fn new(base: &Value) -> Result<Self> {
        let schema = match base {
            Value::Object(map) => map.clone(),
            Value::Bool(true) => Map::new(),
            _ => {
                return Err(Error::InvalidDelta {
                    extension: BASE.into(),
                    pointer: String::new(),
                    reason: "the base schema must be an object".into(),
                });
            }
        };
        let draft = Draft::of(base).ok_or_else(|| Error::InvalidSchema {
            extension: None,
            pointer: "/$schema".into(),
            message: "unknown `$schema`".into(),
        })?;
        let mut def_owners = HashMap::new();
        for keyword in ["$defs", "definitions"] {
            if let Some(Value::Object(defs)) = schema.get(keyword) {
                for name in defs.keys() {
                    def_owners.insert((keyword.to_owned(), name.clone()), BASE.to_owned());
                }
            }
        }
        Ok(Self {
            schema,
            draft,
            def_owners,
            applied: vec![(BASE.to_owned(), base.clone())],
        })
    }

    fn apply(&mut self, delta: &SchemaDelta) -> Result<()> {
        let ext = delta.extension_id.as_str();
        let Value::Object(fields) = &delta.delta else {
            return Err(invalid(ext, "", "a schema delta must be a JSON object"));
        };
        self.check_contradictions(ext, &delta.delta)?;
        let mut unsafe_part = Map::new();
        for (keyword, value) in fields {
            match keyword.as_str() {
                "properties" => self.merge_properties(ext, value)?,
                "required" => self.merge_required(ext, value)?,
                "$defs" | "definitions" => self.merge_defs(ext, keyword, value)?,
                "allOf" => self.merge_all_of(ext, value)?,
                "$schema" => self.check_draft(ext, value)?,
                _ => match self.schema.get(keyword) {
                    None => {
                        self.schema.insert(keyword.clone(), value.clone());
                    }
                    Some(existing) if existing == value => {}
                    Some(_) => {
                        unsafe_part.insert(keyword.clone(), value.clone());
                    }
                },
            }
        }
        if !unsafe_part.is_empty() {
            self.push_all_of(Value::Object(unsafe_part));
        }
        if !self
            .applied
            .iter()
            .any(|(_, applied)| applied == &delta.delta)
        {
            self.applied.push((ext.to_owned(), delta.delta.clone()));
        }
        Ok(())
    }

    /// Refuses a delta that contradicts itself, the base or a delta applied before it.
    fn check_contradictions(&self, ext: &str, delta: &Value) -> Result<()> {
        let own = std::iter::once((ext, delta));
        let earlier = self
            .applied
            .iter()
            .map(|(owner, applied)| (owner.as_str(), applied));
        for (owner, earlier) in own.chain(earlier) {
            if let Some(found) = contradiction::between(earlier, delta, "") {
                return Err(Error::Contradiction {
                    pointer: found.pointer,
                    first: owner.to_owned(),
                    second: ext.to_owned(),
                    detail: found.detail,
                });
            }
        }
        Ok(())
    }

    fn merge_properties(&mut self, ext: &str, value: &Value) -> Result<()> {
        let Value::Object(new) = value else {
            return Err(invalid(
                ext,
                "/properties",
                "`properties` must be an object",
            ));
        };
        let props = object_entry(&mut self.schema, "properties").ok_or_else(|| {
            invalid(
                ext,
                "/properties",
                "the schema's `properties` is not an object",
            )
        })?;
        for (name, schema) in new {
            if !(schema.is_object() || schema.is_boolean()) {
                let at = crate::pointer::push("/properties", name);
                return Err(invalid(
                    ext,
                    &at,
                    "a property schema must be an object or a boolean",
                ));
            }
            match props.get_mut(name) {
                None => {
                    props.insert(name.clone(), schema.clone());
                }
                Some(existing) if existing == schema => {}
                Some(existing) => merge_property(existing, schema),
            }
        }
        Ok(())
    }

    fn merge_required(&mut self, ext: &str, value: &Value) -> Result<()> {
        let Some(new) = value.as_array().filter(|a| a.iter().all(Value::is_string)) else {
            return Err(invalid(
                ext,
                "/required",
                "`required` must be an array of strings",
            ));
        };
        let required = self
            .schema
            .entry("required")
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(required) = required else {
            return Err(invalid(
                ext,
                "/required",
                "the schema's `required` is not an array",
            ));
        };
        for name in new {
            if !required.contains(name) {
                required.push(name.clone());
            }
        }
        Ok(())
    }

    fn merge_defs(&mut self, ext: &str, keyword: &str, value: &Value) -> Result<()> {
        let at = crate::pointer::push("", keyword);
        let Value::Object(new) = value else {
            return Err(invalid(ext, &at, "definitions must be an object"));
        };
        let defs = object_entry(&mut self.schema, keyword)
            .ok_or_else(|| invalid(ext, &at, "the schema's definitions are not an object"))?;
        for (name, schema) in new {
            match defs.get(name) {
                None => {
                    defs.insert(name.clone(), schema.clone());
                    self.def_owners
                        .insert((keyword.to_owned(), name.clone()), ext.to_owned());
                }
                Some(existing) if existing == schema => {}
                Some(_) => {
                    let first = self
                        .def_owners
                        .get(&(keyword.to_owned(), name.clone()))
                        .cloned()
                        .unwrap_or_else(|| BASE.to_owned());
                    return Err(Error::DefinitionConflict {
                        pointer: crate::pointer::push(&at, name),
                        first,
                        second: ext.to_owned(),
                    });
                }
            }
        }
        Ok(())
    }

    fn merge_all_of(&mut self, ext: &str, value: &Value) -> Result<()> {
        let Value::Array(items) = value else {
            return Err(invalid(ext, "/allOf", "`allOf` must be an array"));
        };
        for item in items {
            self.push_all_of(item.clone());
        }
        Ok(())
    }

    fn check_draft(&self, ext: &str, value: &Value) -> Result<()> {
        let found = value.as_str().and_then(Draft::from_uri);
        if found == Some(self.draft) {
            return Ok(());
        }
        Err(Error::DraftMismatch {
            extension: ext.to_owned(),
            expected: self.draft.to_string(),
            found: found.map_or_else(|| value.to_string(), |d| d.to_string()),
        })
    }

    fn push_all_of(&mut self, item: Value) {
        let all_of = self
            .schema
            .entry("allOf")
            .or_insert_with(|| Value::Array(Vec::new()));
        match all_of {
            Value::Array(items) => {
                if !items.contains(&item) {
                    items.push(item);
                }
            }
            other => *other = Value::Array(vec![other.clone(), item]),
        }
    }

    fn finish(self) -> Value {
        Value::Object(self.schema)
    }
}

/// Both constraints on one property: `{"allOf": [existing, new]}`, flat and without repeats, so that
/// re-applying any delta changes nothing.
fn merge_property(existing: &mut Value, schema: &Value) {
    if let Value::Object(map) = existing
        && map.len() == 1
        && let Some(Value::Array(items)) = map.get_mut("allOf")
    {
        if !items.contains(schema) {
            items.push(schema.clone());
        }
        return;
    }
    *existing = serde_json::json!({"allOf": [existing.clone(), schema.clone()]});
}

/// The object under `key`, created when absent; `None` when something else is there.
fn object_entry<'m>(
    map: &'m mut Map<String, Value>,
    key: &str,
) -> Option<&'m mut Map<String, Value>> {
    map.entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
}

fn invalid(extension: &str, pointer: &str, reason: &str) -> Error {
    Error::InvalidDelta {
        extension: extension.to_owned(),
        pointer: pointer.to_owned(),
        reason: reason.to_owned(),
    }
}

mod contradiction;
#[cfg(test)]
mod tests;
