//! What claij answers when an MCP server asks the user something (MCP elicitation), without a
//! person: [`Defaults`] accepts with the requested schema's defaults filled in (SEP-1034),
//! [`Decline`] declines every question. An application that can ask a person implements
//! [`claij_mcp::Elicitor`] itself (the `claij` command line's terminal form does).
//!
//! ```
//! use claij::mcp::elicitation::defaults;
//! use serde_json::json;
//!
//! let schema = json!({"type": "object", "properties": {
//!     "name": {"type": "string", "default": "Ada"},
//!     "age": {"type": "integer"}
//! }, "required": ["name"]});
//! assert_eq!(defaults(&schema), Some(json!({"name": "Ada"})));
//! // A required field without a default: nothing truthful to answer, so the question is declined.
//! assert_eq!(defaults(&json!({"type": "object", "required": ["age"]})), None);
//! ```

use claij_backends::BoxFuture;
use claij_mcp::{ElicitationReply, ElicitationRequest, Elicitor};
use serde_json::{Map, Value};

/// An [`Elicitor`] that accepts every question with its schema's defaults ([`defaults`]), and
/// declines one whose required fields are not all defaulted.
#[derive(Debug, Clone, Copy, Default)]
pub struct Defaults;

impl Elicitor for Defaults {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationReply> {
        Box::pin(async move {
            match defaults(&request.schema) {
                Some(answer) => ElicitationReply::Accept(answer),
                None => ElicitationReply::Decline,
            }
        })
    }
}

/// The answer the requested schema's defaults make: an object with each property that has a
/// `default`; `None` when the schema is not an object schema or a required property has no default
/// (there is nothing claij could truthfully answer for it).
pub fn defaults(schema: &Value) -> Option<Value> {
    let properties = match schema.get("properties") {
        None => Map::new(),
        Some(properties) => properties.as_object()?.clone(),
    };
    let mut answer = Map::new();
    for (name, property) in &properties {
        if let Some(default) = property.get("default") {
            answer.insert(name.clone(), default.clone());
        }
    }
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let all_there = required
        .iter()
        .all(|name| name.as_str().is_some_and(|name| answer.contains_key(name)));
    all_there.then_some(Value::Object(answer))
}

/// An [`Elicitor`] that declines every question (as a client that offers no elicitor does).
#[derive(Debug, Clone, Copy, Default)]
pub struct Decline;

impl Elicitor for Decline {
    fn elicit<'a>(&'a self, _request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationReply> {
        Box::pin(async { ElicitationReply::Decline })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[track_caller]
    fn check(schema: Value, expected: Option<Value>) {
        assert_eq!(defaults(&schema), expected);
    }

    #[test]
    fn each_default_is_filled_in_whatever_its_type() {
        check(
            json!({"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "note": {"type": "string"}
            }, "required": []}),
            Some(
                json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true}),
            ),
        );
    }

    #[test]
    fn a_required_field_without_a_default_declines() {
        check(
            json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "default": 3}}, "required": ["name"]}),
            None,
        );
        check(
            json!({"type": "object", "properties": {"name": {"type": "string", "default": "x"}}, "required": ["name"]}),
            Some(json!({"name": "x"})),
        );
    }

    #[test]
    fn a_schema_without_properties_is_an_empty_answer_and_a_malformed_one_declines() {
        check(json!({"type": "object"}), Some(json!({})));
        check(json!({"type": "object", "properties": []}), None);
        check(json!({"type": "object", "required": ["a"]}), None);
    }

    #[test]
    fn the_elicitor_accepts_with_defaults_or_declines() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let accepted = ElicitationRequest::new(
            "s",
            "q",
            json!({"type": "object", "properties": {"a": {"type": "integer", "default": 1}}}),
        );
        let declined =
            ElicitationRequest::new("s", "q", json!({"type": "object", "required": ["a"]}));
        assert_eq!(
            runtime.block_on(Defaults.elicit(&accepted)),
            ElicitationReply::Accept(json!({"a": 1}))
        );
        assert_eq!(
            runtime.block_on(Defaults.elicit(&declined)),
            ElicitationReply::Decline
        );
        assert_eq!(
            runtime.block_on(Decline.elicit(&accepted)),
            ElicitationReply::Decline
        );
    }
}
