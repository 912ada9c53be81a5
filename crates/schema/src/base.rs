//! The base response schema and the JSON Schema drafts claij accepts.

use std::fmt;

use serde_json::{Value, json};

/// The `$schema` URI of JSON Schema draft 2020-12, claij's default.
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";
/// The `$schema` URI of JSON Schema draft-07 (what most MCP servers send).
pub const DRAFT_07: &str = "http://json-schema.org/draft-07/schema#";

/// The minimal schema every reply starts from: an object requiring `answer` and `state`.
///
/// Interceptors grow it with schema deltas (see [`crate::Registry`]); a state machine constrains
/// `state` to its next states, a conversation without one to how the turn ended. The descriptions
/// say what a field holds, not words to copy (a small model parrots "Your response to the user is
/// ..."). No field carries `examples`: SmolLM2-135M copied an example answer ("A spider has eight
/// legs.") into its reply to an unrelated message, so [`crate::example()`] shows placeholders.
///
/// ```
/// let base = claij_schema::base();
/// assert_eq!(base["required"], serde_json::json!(["answer", "state"]));
/// ```
pub fn base() -> Value {
    json!({
        "$schema": DRAFT_2020_12,
        "type": "object",
        "required": ["answer", "state"],
        "properties": {
            "answer": {
                "type": "string",
                "description": "the reply itself, in plain words"
            },
            "state": {
                "type": "string",
                "description": "the state the conversation moves to next"
            }
        }
    })
}

/// A JSON Schema draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Draft {
    /// Draft 4.
    Draft4,
    /// Draft 6.
    Draft6,
    /// Draft 7, as most MCP servers send.
    Draft7,
    /// Draft 2019-09.
    Draft2019_09,
    /// Draft 2020-12, the default for schemas without `$schema`.
    #[default]
    Draft2020_12,
}

impl Draft {
    /// The draft a schema declares with `$schema`, or the default (2020-12) when it declares none.
    ///
    /// Returns `None` for a `$schema` that names no known draft.
    pub fn of(schema: &Value) -> Option<Draft> {
        match schema.get("$schema") {
            None => Some(Draft::default()),
            Some(Value::String(uri)) => Draft::from_uri(uri),
            Some(_) => None,
        }
    }

    /// The draft a `$schema` URI names (`http` or `https`, with or without the trailing `#`).
    pub fn from_uri(uri: &str) -> Option<Draft> {
        let rest = uri
            .strip_prefix("https://")
            .or_else(|| uri.strip_prefix("http://"))?;
        let rest = rest.trim_end_matches('#');
        match rest {
            "json-schema.org/draft-04/schema" => Some(Draft::Draft4),
            "json-schema.org/draft-06/schema" => Some(Draft::Draft6),
            "json-schema.org/draft-07/schema" => Some(Draft::Draft7),
            "json-schema.org/draft/2019-09/schema" => Some(Draft::Draft2019_09),
            "json-schema.org/draft/2020-12/schema" => Some(Draft::Draft2020_12),
            _ => None,
        }
    }

    /// The keyword this draft uses for shared definitions: `definitions` before 2019-09, else `$defs`.
    pub fn defs_keyword(self) -> &'static str {
        match self {
            Draft::Draft4 | Draft::Draft6 | Draft::Draft7 => "definitions",
            Draft::Draft2019_09 | Draft::Draft2020_12 => "$defs",
        }
    }

    /// The equivalent boon draft.
    pub(crate) fn to_boon(self) -> boon::Draft {
        match self {
            Draft::Draft4 => boon::Draft::V4,
            Draft::Draft6 => boon::Draft::V6,
            Draft::Draft7 => boon::Draft::V7,
            Draft::Draft2019_09 => boon::Draft::V2019_09,
            Draft::Draft2020_12 => boon::Draft::V2020_12,
        }
    }
}

impl fmt::Display for Draft {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Draft::Draft4 => "draft-04",
            Draft::Draft6 => "draft-06",
            Draft::Draft7 => "draft-07",
            Draft::Draft2019_09 => "draft 2019-09",
            Draft::Draft2020_12 => "draft 2020-12",
        })
    }
}
