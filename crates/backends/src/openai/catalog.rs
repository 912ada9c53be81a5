//! OpenRouter's model list (`GET /api/v1/models`) read into what claij needs of each model: the
//! capabilities its `supported_parameters` say it has.
//!
//! The documented body is `{"data": [Model]}`, each model with an `id` (as requests name it),
//! `context_length`, `top_provider.context_length` and `supported_parameters`, the request
//! parameters some upstream serving it honours. From them, for one model:
//!
//! - native structured output (OpenAI strict dialect) with `structured_outputs`; `response_format`
//!   alone is JSON mode, which enforces no schema, so such a model is prompted or uses a tool;
//! - tools, and so tool mode, with both `tools` and `tool_choice` (tool mode forces a call);
//!   strict tools where it has structured outputs too (the same constrained decoding), else the
//!   tool is sent non-strict and its schema is a hint the validator checks;
//! - no `temperature` in the list: the model rejects one, and a request's is left out.
//!
//! ```
//! use claij_backends::openai::ModelCatalog;
//!
//! let body = br#"{"data": [{"id": "qwen/qwen-2.5-7b-instruct",
//!   "supported_parameters": ["tools", "tool_choice", "response_format", "temperature"]}]}"#;
//! let catalog = ModelCatalog::from_json(body)?;
//! let qwen = catalog.capabilities("qwen/qwen-2.5-7b-instruct").unwrap();
//! assert!(qwen.tools && qwen.strict_tools.is_none() && !qwen.native_json_schema);
//! assert!(catalog.capabilities("google/gemini-2.5-flash").is_none()); // not listed: guessed
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::collections::HashMap;

use serde::Deserialize;

use crate::{Capabilities, SchemaDialect};

/// The models of one OpenRouter model list, by id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelCatalog {
    models: HashMap<String, Listed>,
}

/// What the list says of one model.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
struct Listed {
    #[serde(default)]
    supported_parameters: Vec<String>,
    #[serde(default)]
    context_length: Option<u64>,
    #[serde(default)]
    top_provider: Option<TopProvider>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
struct TopProvider {
    #[serde(default)]
    context_length: Option<u64>,
}

#[derive(Deserialize)]
struct Body {
    data: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    id: String,
    #[serde(flatten)]
    listed: Listed,
}

impl ModelCatalog {
    /// The catalog of a models-endpoint body.
    ///
    /// # Errors
    ///
    /// The JSON error when `body` is not `{"data": [{"id": ..., ...}, ...]}`.
    pub fn from_json(body: &[u8]) -> Result<Self, serde_json::Error> {
        let body: Body = serde_json::from_slice(body)?;
        let models = body
            .data
            .into_iter()
            .map(|entry| (entry.id, entry.listed))
            .collect();
        Ok(Self { models })
    }

    /// How many models it lists.
    pub fn len(&self) -> usize {
        self.models.len()
    }

    /// Whether it lists no model.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// The request parameters the list gives for `model` (exactly, else without an `:variant`
    /// such as `:free`); `None` for a model it does not list.
    pub fn supported_parameters(&self, model: &str) -> Option<&[String]> {
        self.find(model).map(|m| m.supported_parameters.as_slice())
    }

    /// What `model` offers, from its supported parameters (see the module's notes); `None` for a
    /// model the list does not name, whose capabilities are then guessed.
    pub fn capabilities(&self, model: &str) -> Option<Capabilities> {
        let listed = self.find(model)?;
        let has = |name: &str| listed.supported_parameters.iter().any(|p| p == name);
        let mut capabilities = Capabilities::default()
            .with_streaming(true)
            .with_rejects_temperature(!has("temperature"));
        let structured = has("structured_outputs");
        if structured {
            capabilities = capabilities.with_schema_dialect(SchemaDialect::OpenAiStrict);
        }
        if has("tools") && has("tool_choice") {
            capabilities = if structured {
                capabilities.with_strict_tools(SchemaDialect::OpenAiStrict)
            } else {
                capabilities.with_tools(true)
            };
        }
        let window = [
            listed.context_length,
            listed.top_provider.as_ref().and_then(|t| t.context_length),
        ]
        .into_iter()
        .flatten()
        .filter(|&n| n > 0)
        .min();
        if let Some(window) = window.and_then(|n| u32::try_from(n).ok()) {
            capabilities = capabilities.with_context_window(window);
        }
        Some(capabilities)
    }

    fn find(&self, model: &str) -> Option<&Listed> {
        self.models.get(model).or_else(|| {
            let (base, _variant) = model.rsplit_once(':')?;
            self.models.get(base)
        })
    }
}
