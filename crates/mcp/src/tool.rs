//! [`ToolInfo`]: a server's tool as claij uses it, with its schemas compiled and normalised.

use std::sync::Arc;

use claij_validation::{Validator, Violation};
use serde::Serialize;
use serde_json::{Map, Value};
use tracing::warn;

/// One tool of one server.
#[derive(Clone, Serialize)]
#[non_exhaustive]
pub struct ToolInfo {
    /// The server that has it.
    pub server: String,
    /// Its name on that server.
    pub name: String,
    /// A human title, when the server gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its `inputSchema` as the server sent it (draft-07 and 2020-12 both occur).
    pub input_schema: Value,
    /// Its `outputSchema`, if it declares structured output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(skip)]
    input: Option<Arc<Validator>>,
    #[serde(skip)]
    output: Option<Arc<Validator>>,
}

impl std::fmt::Debug for ToolInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolInfo")
            .field("server", &self.server)
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

impl ToolInfo {
    /// A tool, its schemas compiled. A schema that does not compile is kept as documentation but not
    /// enforced (with a warning): the server is the authority on its own tool.
    pub fn new(
        server: impl Into<String>,
        name: impl Into<String>,
        description: Option<String>,
        input_schema: Value,
        output_schema: Option<Value>,
    ) -> Self {
        let server = server.into();
        let name = name.into();
        let compile = |which: &str, schema: &Value| match Validator::new(schema) {
            Ok(validator) => Some(Arc::new(validator)),
            Err(err) => {
                warn!(server, tool = name, which, error = %err, "tool schema does not compile; not enforced");
                None
            }
        };
        let input = compile("input", &input_schema);
        let output = output_schema.as_ref().and_then(|s| compile("output", s));
        Self {
            server,
            name,
            title: None,
            description,
            input_schema,
            output_schema,
            input,
            output,
        }
    }

    /// `server.tool`.
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.server, self.name)
    }

    /// Checks arguments against the input schema.
    ///
    /// # Errors
    ///
    /// Every violation, located in `args`.
    pub fn check_args(&self, args: &Value) -> Result<(), Vec<Violation>> {
        match &self.input {
            Some(validator) => validator.validate(args),
            None => Ok(()),
        }
    }

    /// Checks the arguments of a call about to be sent, as [`ToolInfo::check_args`] does, except that
    /// a `null` at a top-level property the schema does not require is taken as the property left
    /// out: MCP reads a null argument as an absent one (SEP-2243 omits its `Mcp-Param` header), and
    /// the server, which sees the null as sent, is the judge of its own tool.
    ///
    /// # Errors
    ///
    /// Every violation, located in `args`.
    pub fn check_call_args(&self, args: &Value) -> Result<(), Vec<Violation>> {
        let Value::Object(map) = args else {
            return self.check_args(args);
        };
        let required: Vec<&str> = self
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !map
            .iter()
            .any(|(name, value)| value.is_null() && !required.contains(&name.as_str()))
        {
            return self.check_args(args);
        }
        let present: Map<String, Value> = map
            .iter()
            .filter(|(name, value)| !value.is_null() || required.contains(&name.as_str()))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        self.check_args(&Value::Object(present))
    }

    /// Checks a structured result against the output schema (nothing to check without one).
    ///
    /// # Errors
    ///
    /// Every violation, located in `structured`.
    pub fn check_output(&self, structured: &Value) -> Result<(), Vec<Violation>> {
        match &self.output {
            Some(validator) => validator.validate(structured),
            None => Ok(()),
        }
    }

    /// The input schema rewritten for embedding in a draft 2020-12 schema (see [`normalise`]).
    pub fn normalised_input(&self) -> Value {
        normalise(&self.input_schema)
    }
}

/// Rewrites a tool's schema (draft-07 or 2020-12) as draft 2020-12 without `$schema`, so it can sit
/// inside claij's composed response schema: `definitions` becomes `$defs` (references follow),
/// array-form `items` becomes `prefixItems` (`additionalItems` becomes `items`), `dependencies`
/// splits into `dependentRequired` and `dependentSchemas`. `$id`s are dropped: an embedded schema
/// must resolve its references inside the document.
///
/// ```
/// use serde_json::json;
/// let draft7 = json!({
///     "$schema": "http://json-schema.org/draft-07/schema#",
///     "type": "object",
///     "properties": {"p": {"$ref": "#/definitions/point"}, "pair": {"items": [{"type": "number"}], "additionalItems": false}},
///     "definitions": {"point": {"type": "array"}}
/// });
/// assert_eq!(claij_mcp::normalise(&draft7), json!({
///     "type": "object",
///     "properties": {"p": {"$ref": "#/$defs/point"}, "pair": {"prefixItems": [{"type": "number"}], "items": false}},
///     "$defs": {"point": {"type": "array"}}
/// }));
/// ```
pub fn normalise(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
    }
    rewrite(&mut schema);
    schema
}

/// Rewrites one schema (an object; booleans are left alone) and every schema inside it.
fn rewrite(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.remove("$id");
            if let Some(defs) = map.remove("definitions") {
                match map.get_mut("$defs") {
                    Some(Value::Object(existing)) => {
                        if let Value::Object(defs) = defs {
                            for (k, v) in defs {
                                existing.entry(k).or_insert(v);
                            }
                        }
                    }
                    _ => {
                        map.insert("$defs".to_owned(), defs);
                    }
                }
            }
            if matches!(map.get("items"), Some(Value::Array(_))) {
                if let Some(items) = map.remove("items") {
                    map.insert("prefixItems".to_owned(), items);
                }
                if let Some(additional) = map.remove("additionalItems") {
                    map.insert("items".to_owned(), additional);
                }
            } else {
                map.remove("additionalItems");
            }
            if let Some(Value::Object(dependencies)) = map.remove("dependencies") {
                let (mut required, mut schemas) = (Map::new(), Map::new());
                for (key, dependency) in dependencies {
                    if dependency.is_array() {
                        required.insert(key, dependency);
                    } else {
                        schemas.insert(key, dependency);
                    }
                }
                if !required.is_empty() {
                    map.insert("dependentRequired".to_owned(), Value::Object(required));
                }
                if !schemas.is_empty() {
                    map.insert("dependentSchemas".to_owned(), Value::Object(schemas));
                }
            }
            if let Some(Value::String(reference)) = map.get_mut("$ref")
                && let Some(rest) = reference.strip_prefix("#/definitions/")
            {
                *reference = format!("#/$defs/{rest}");
            }
            for (key, value) in map.iter_mut() {
                match key.as_str() {
                    "properties" | "patternProperties" | "$defs" | "dependentSchemas" => {
                        if let Value::Object(schemas) = value {
                            schemas.values_mut().for_each(rewrite);
                        }
                    }
                    "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                        if let Value::Array(schemas) = value {
                            schemas.iter_mut().for_each(rewrite);
                        }
                    }
                    "items"
                    | "additionalProperties"
                    | "not"
                    | "if"
                    | "then"
                    | "else"
                    | "contains"
                    | "propertyNames"
                    | "unevaluatedItems"
                    | "unevaluatedProperties" => rewrite(value),
                    _ => {}
                }
            }
        }
        Value::Array(_) | Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn tool() -> ToolInfo {
        ToolInfo::new(
            "s",
            "t",
            None,
            json!({"type": "object", "properties": {
                "region": {"type": "string"}, "verbose": {"type": "boolean"}
            }, "required": ["region"]}),
            None,
        )
    }

    #[test]
    fn a_call_may_give_null_for_an_optional_property_not_for_a_required_one() {
        let tool = tool();
        let optional_null = json!({"region": "us-east1", "verbose": null});
        assert_eq!(tool.check_call_args(&optional_null), Ok(()));
        // The model's arguments are still checked strictly.
        assert!(tool.check_args(&optional_null).is_err());
        let required_null = json!({"region": null, "verbose": true});
        let violations = tool.check_call_args(&required_null).unwrap_err();
        assert_eq!(violations[0].instance_pointer, "/region");
        let wrong_type = json!({"region": "us-east1", "verbose": "yes"});
        assert!(tool.check_call_args(&wrong_type).is_err());
        assert!(tool.check_call_args(&json!("not an object")).is_err());
    }
}
