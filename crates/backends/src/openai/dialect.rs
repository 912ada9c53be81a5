//! How an OpenAI-compatible server takes structured output: [`StructuredDialect`], the wire rewrite
//! of a native request for each, and the test for an error that means "not this way".

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Capabilities, Error};

/// How a server takes a schema, as a provider entry's `structured_output` names it.
///
/// The first three are native (the server constrains decoding); `tools` and `prompted` tell the
/// pipeline's automatic mode that the server has no native structured output worth asking for.
///
/// ```
/// use claij_backends::openai::StructuredDialect;
///
/// let dialect: StructuredDialect = "json_object_schema".parse().unwrap();
/// assert_eq!(dialect, StructuredDialect::JsonObjectSchema);
/// assert_eq!(dialect.to_string(), "json_object_schema");
/// assert!("grammar".parse::<StructuredDialect>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredDialect {
    /// `response_format: {type: "json_schema", json_schema: {name, strict, schema}}`: OpenAI's
    /// form, which vLLM, llama.cpp's own server, Ollama (0.5 and later) and LM Studio take.
    #[default]
    JsonSchema,
    /// `response_format: {type: "json_object", schema}`: llama-cpp-python's server (it answers
    /// `json_schema` with HTTP 500).
    JsonObjectSchema,
    /// `format: <schema>` at the top of the body: Ollama's own field.
    OllamaFormat,
    /// No native structured output: automatic mode forces a tool instead.
    Tools,
    /// Neither native output nor tools: automatic mode writes the schema into the prompt.
    Prompted,
}

/// A `structured_output` value that is none of [`StructuredDialect::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown structured output `{0}` (expected json_schema, json_object_schema, ollama_format, tools or prompted)"
)]
pub struct UnknownDialect(pub String);

impl StructuredDialect {
    /// Every dialect, in the order messages list them.
    pub const ALL: [StructuredDialect; 5] = [
        StructuredDialect::JsonSchema,
        StructuredDialect::JsonObjectSchema,
        StructuredDialect::OllamaFormat,
        StructuredDialect::Tools,
        StructuredDialect::Prompted,
    ];

    /// The name in configuration files and caches.
    pub fn name(self) -> &'static str {
        match self {
            StructuredDialect::JsonSchema => "json_schema",
            StructuredDialect::JsonObjectSchema => "json_object_schema",
            StructuredDialect::OllamaFormat => "ollama_format",
            StructuredDialect::Tools => "tools",
            StructuredDialect::Prompted => "prompted",
        }
    }

    /// Whether the server constrains decoding itself (a `response_format` or `format` field).
    pub fn is_native(self) -> bool {
        matches!(
            self,
            StructuredDialect::JsonSchema
                | StructuredDialect::JsonObjectSchema
                | StructuredDialect::OllamaFormat
        )
    }

    /// `base` as a server speaking this dialect offers it: no native output for `tools`, neither
    /// native output nor tools for `prompted`.
    pub fn capabilities(self, base: Capabilities) -> Capabilities {
        let mut capabilities = base;
        match self {
            StructuredDialect::Tools => {
                capabilities.native_json_schema = false;
                capabilities.tools = true;
            }
            StructuredDialect::Prompted => {
                capabilities.native_json_schema = false;
                capabilities.tools = false;
            }
            _ => {}
        }
        capabilities
    }
}

impl fmt::Display for StructuredDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for StructuredDialect {
    type Err = UnknownDialect;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        StructuredDialect::ALL
            .into_iter()
            .find(|d| d.name() == text)
            .ok_or_else(|| UnknownDialect(text.to_owned()))
    }
}

/// Rewrites the `response_format` of a native request body (as [`super::translate::request`] built
/// it) into `dialect`'s form. Bodies without one, and the non-native dialects, are left alone: an
/// explicitly native request still goes out as OpenAI's `json_schema`.
pub(super) fn apply(body: &mut Value, dialect: StructuredDialect) {
    let Some(object) = body.as_object_mut() else {
        return;
    };
    let schema = match object.get("response_format") {
        Some(format) if format["type"] == "json_schema" => format["json_schema"]["schema"].clone(),
        _ => return,
    };
    match dialect {
        StructuredDialect::JsonObjectSchema => {
            let mut format = Map::new();
            format.insert("type".to_owned(), Value::from("json_object"));
            format.insert("schema".to_owned(), schema);
            object.insert("response_format".to_owned(), Value::Object(format));
        }
        StructuredDialect::OllamaFormat => {
            object.remove("response_format");
            object.insert("format".to_owned(), schema);
        }
        StructuredDialect::JsonSchema | StructuredDialect::Tools | StructuredDialect::Prompted => {}
    }
}

/// The words in an error body that say the server objects to how structured output was asked for.
const STRUCTURED_WORDS: [&str; 3] = ["response_format", "json_schema", "json_object"];

/// Whether an error response (any status) is the server rejecting the structured-output field
/// rather than failing: its body names `response_format`, `json_schema` or `json_object`. Such a
/// failure repeats identically, so it is not retried, and automatic mode may try another way.
pub(super) fn is_structured_rejection(status: u16, body: &[u8]) -> bool {
    if !matches!(status, 400 | 422 | 500 | 501) {
        return false;
    }
    let text = String::from_utf8_lossy(body).to_lowercase();
    STRUCTURED_WORDS.iter().any(|word| text.contains(word))
}

/// An error [`is_structured_rejection`] matched, as the non-retryable [`Error::BadRequest`] (a
/// llama-cpp-python 500 would otherwise be retried as a server failure).
pub(super) fn as_rejection(error: Error) -> Error {
    match error {
        Error::Server { context, message } => Error::BadRequest { context, message },
        other => other,
    }
}

/// Whether a native request's failure means "not this way": the provider rejected the request
/// ([`Error::BadRequest`], which a structured-output rejection becomes), as opposed to a failure
/// that another way of asking would meet as well (authentication, network, model not found...).
pub(super) fn rejects_native(error: &Error) -> bool {
    matches!(error, Error::BadRequest { .. })
}

/// Whether a rejection says the server takes `json_object` (llama-cpp-python's validation error
/// lists the `response_format.type`s it accepts).
pub(super) fn suggests_json_object(error: &Error) -> bool {
    match error {
        Error::BadRequest { message, .. } => message.contains("json_object"),
        _ => false,
    }
}
