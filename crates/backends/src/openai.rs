//! OpenAI chat completions and the servers that speak it: OpenAI ([`OpenAi`]), OpenRouter
//! ([`OpenRouter`]) and any OpenAI-compatible server such as llama.cpp's, vLLM, Ollama's `/v1` or
//! LM Studio ([`OpenAiCompatible`]).
//!
//! Each is an [`HttpBackend`] over an adapter whose methods are pure translations
//! ([`Adapter::transform_request`](crate::Adapter::transform_request),
//! [`Adapter::transform_response`](crate::Adapter::transform_response), ...), testable without a network:
//!
//! ```
//! # #[cfg(feature = "openrouter")] {
//! use claij_backends::openai::OpenRouterAdapter;
//! use claij_backends::{Adapter, ChatRequest, Message};
//! use serde_json::json;
//!
//! let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}},
//!                     "required": ["answer"], "additionalProperties": false});
//! let request = ChatRequest::new("") // no model: OpenRouter's default
//!     .message(Message::user("What is 2+2?"))
//!     .structured("answer", schema, true);
//! let wire = OpenRouterAdapter::default().transform_request(&request, false)?;
//! assert_eq!(wire.path, "/chat/completions");
//! let body = wire.json()?; // the body comes serialized, the schema's text spliced in
//! assert_eq!(body["model"], "google/gemini-2.5-flash");
//! assert_eq!(body["response_format"]["type"], "json_schema");
//! assert_eq!(body["provider"]["require_parameters"], true);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Structured output: [`OutputMode::Native`](crate::OutputMode::Native) sends
//! `response_format: {type: json_schema, json_schema: {name, strict, schema}}`;
//! [`OutputMode::Tool`](crate::OutputMode::Tool) sends the schema as the parameters of one function
//! the model must call (`tool_choice`), and the answer is that call's arguments (even when the model
//! wrote text beside the call; `{}` when they are missing or blank). A request without a
//! schema is plain completion (the prompted mode: the schema is in the system prompt). The schema is
//! sent as given: the caller compiles it to [`SchemaDialect::OpenAiStrict`] (OpenAI, OpenRouter) or
//! full JSON Schema (compatible servers) first, and asks for a strict tool only where
//! [`Capabilities::strict_tools`] says the model has them ([`Capabilities::schema_target`]).
//!
//! Native tools ([`ChatRequest::tools`](crate::ChatRequest::tools)) go as `tools: [{type:
//! function, function: {name, description, parameters, strict}}]` after any answer tool, the
//! [`ToolChoice`](crate::ToolChoice) as `tool_choice` (`auto`, `required`, `none` or one function;
//! tool mode with tools of the caller's: `required`, parallel calls allowed). Every call of a
//! response is in [`ChatResponse::tool_calls`](crate::ChatResponse::tool_calls), its arguments
//! parsed, or, when they are not JSON (malformed, or cut off by the token limit), kept as their raw
//! text in a JSON string, never an error (in tool mode that text is the content, for the pipeline's
//! repair); streamed, a
//! [`StreamEvent::ToolCall`](crate::StreamEvent::ToolCall) per call and its fragments by index. An
//! assistant message's calls go back as its `tool_calls`, a tool result as a `tool` message with its
//! `tool_call_id` (one without an id as user text).
//!
//! Instructions (the system prompt and system messages) go as `system` messages, except on OpenAI's
//! reasoning models ([`models::instruction_role`](crate::models::instruction_role)): `developer`
//! messages for o1, o3, o4-mini and GPT-5; o1-mini and o1-preview take neither, so their
//! instructions open the first user message inside `<instructions>...</instructions>`.
//!
//! Compatible servers differ in how they take a native schema: [`StructuredDialect`] names the ways
//! (`json_schema`, llama-cpp-python's `json_object` with `schema`, Ollama's `format`, or none:
//! `tools`, `prompted`), set with [`CompatibleAdapter::with_structured_output`].
//! [`StructuredFallback`] finds out by trying: a native request the server rejects (a 4xx, or a 5xx
//! whose body names `response_format`, `json_schema` or `json_object`, which is then not retried)
//! goes again as `json_object` with the schema when the rejection says the server takes that, then
//! (in automatic mode) as a forced tool, then with the schema in the prompt; what worked is kept per
//! base URL and model in a [`FallbackMemory`].
//!
//! Errors: `{"error": {message, type, code}}` bodies become 401/403 [`Error::Authentication`], 404
//! [`Error::ModelNotFound`], 429 [`Error::RateLimited`] (but 429 `insufficient_quota` and 402
//! [`Error::QuotaExhausted`], never retried), 400 with `context_length_exceeded`
//! [`Error::ContextLengthExceeded`], other 400/422 [`Error::BadRequest`], 503/529
//! [`Error::Overloaded`], 408 and other 5xx [`Error::Server`]; an error inside a 200 body or a
//! stream's chunk (OpenRouter's, `{"error": {code, message}}`, also under `choices[0].error`) is
//! classified by its own `code` as if it were the status; a refusal is [`Error::Refused`]; a body
//! that is not what the API promises (HTML, empty, cut off) is [`Error::MalformedResponse`] with an
//! excerpt. Which of them are retried is [`Error::is_retryable`]'s to say.

use crate::http::{HttpBackend, HttpConfig};
use crate::{ApiKey, Capabilities, SchemaDialect};
#[cfg(feature = "openai")]
use crate::{Error, WireRequest};

#[cfg(feature = "openrouter")]
mod catalog;
#[cfg(feature = "openai")]
mod dialect;
#[cfg(feature = "openai")]
mod fallback;
mod family;
mod translate;
mod wire;

#[cfg(feature = "openrouter")]
pub use catalog::ModelCatalog;
#[cfg(feature = "openai")]
pub use dialect::{StructuredDialect, UnknownDialect};
#[cfg(feature = "openai")]
pub use fallback::{FallbackMemory, Listener, Remembered, StructuredFallback, memory_key};
use family::Flavour;
use translate::Shape;

/// OpenAI's API.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// OpenRouter's API.
pub const OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";

/// The model OpenRouter requests use when they name none.
pub const OPENROUTER_DEFAULT_MODEL: &str = "google/gemini-2.5-flash";

/// OpenAI chat completions: `OpenAi::new(key)`, then `with_base_url`, `with_config`, ... from
/// [`HttpBackend`].
///
/// ```
/// use claij_backends::{ApiKey, Backend, openai::OpenAi};
///
/// let backend = OpenAi::new(ApiKey::new("sk-..."));
/// assert_eq!(backend.provider(), "openai");
/// assert!(backend.capabilities("gpt-4o-mini").native_json_schema);
/// assert!(!backend.capabilities("gpt-3.5-turbo").native_json_schema);
/// ```
#[cfg(feature = "openai")]
pub type OpenAi = HttpBackend<OpenAiAdapter>;

/// OpenRouter: `OpenRouter::new(key)`, optionally `with_referer`/`with_title` for its rankings.
///
/// ```
/// use claij_backends::{ApiKey, Backend, openai::OpenRouter};
///
/// let backend = OpenRouter::new(ApiKey::new("sk-or-...")).with_title("claij");
/// assert_eq!(backend.provider(), "openrouter");
/// ```
#[cfg(feature = "openrouter")]
pub type OpenRouter = HttpBackend<OpenRouterAdapter>;

/// Any OpenAI-compatible server at a base URL; the key is optional.
///
/// ```
/// use claij_backends::{Backend, SchemaDialect, openai::OpenAiCompatible};
///
/// let backend = OpenAiCompatible::new("http://127.0.0.1:8080/v1").with_provider("llama.cpp");
/// assert_eq!(backend.provider(), "llama.cpp");
/// assert_eq!(backend.capabilities("any").schema_dialect, Some(SchemaDialect::JsonSchema));
/// ```
#[cfg(feature = "openai")]
pub type OpenAiCompatible = HttpBackend<CompatibleAdapter>;

/// The OpenAI wire format as OpenAI speaks it: `max_completion_tokens`, at most four stop sequences,
/// strict structured outputs on the models that have them.
#[cfg(feature = "openai")]
#[derive(Debug, Clone, Default)]
pub struct OpenAiAdapter {
    default_model: Option<String>,
}

/// The OpenAI wire format as OpenRouter speaks it: usage accounting on (the cost comes back), and
/// with a schema `provider.require_parameters` so only upstreams that honour it are used.
#[cfg(feature = "openrouter")]
#[derive(Debug, Clone)]
pub struct OpenRouterAdapter {
    default_model: String,
    referer: Option<String>,
    title: Option<String>,
    /// OpenRouter's model list, when it was read: what each listed model offers.
    catalog: Option<std::sync::Arc<ModelCatalog>>,
}

/// The OpenAI wire format for a local or self-hosted server: full JSON Schema in `response_format`,
/// tools and streaming by default (change with `with_capabilities`).
#[cfg(feature = "openai")]
#[derive(Debug, Clone)]
pub struct CompatibleAdapter {
    provider: String,
    default_model: Option<String>,
    capabilities: Capabilities,
    /// How native requests ask for structured output.
    structured: StructuredDialect,
}

#[cfg(feature = "openai")]
impl OpenAiAdapter {
    /// The same adapter using `model` for requests that name none.
    #[must_use]
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.default_model = Some(model.into());
        self
    }
}

#[cfg(feature = "openai")]
impl HttpBackend<OpenAiAdapter> {
    /// OpenAI at [`OPENAI_BASE_URL`] with `key`.
    pub fn new(key: ApiKey) -> Self {
        HttpBackend::from_adapter(OpenAiAdapter::default(), HttpConfig::new(OPENAI_BASE_URL))
            .with_key(key)
    }

    /// The same backend using `model` for requests that name none.
    #[must_use]
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.adapter_mut().default_model = Some(model.into());
        self
    }
}

#[cfg(feature = "openai")]
impl Flavour for OpenAiAdapter {
    fn provider(&self) -> &str {
        "openai"
    }

    fn capabilities(&self, model: &str) -> Capabilities {
        openai_capabilities(model)
    }

    fn shape(&self) -> Shape<'_> {
        Shape {
            provider: "openai",
            default_model: self.default_model.as_deref(),
            max_completion_tokens: true,
            openrouter: false,
            max_stops: Some(4),
            headers: Vec::new(),
            drop_temperature: false,
        }
    }
}

#[cfg(feature = "openrouter")]
impl Default for OpenRouterAdapter {
    fn default() -> Self {
        Self {
            default_model: OPENROUTER_DEFAULT_MODEL.to_owned(),
            referer: None,
            title: None,
            catalog: None,
        }
    }
}

#[cfg(feature = "openrouter")]
impl OpenRouterAdapter {
    /// The same adapter using `model` for requests that name none.
    #[must_use]
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.default_model = model.into();
        self
    }

    /// The same adapter sending `HTTP-Referer` (your site, for OpenRouter's rankings).
    #[must_use]
    pub fn with_referer(mut self, referer: impl Into<String>) -> Self {
        self.referer = Some(referer.into());
        self
    }

    /// The same adapter sending `X-Title` (your app's name, for OpenRouter's rankings).
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// The same adapter taking each listed model's capabilities from OpenRouter's model list
    /// ([`ModelCatalog`]); models it does not list keep the guess.
    #[must_use]
    pub fn with_catalog(mut self, catalog: std::sync::Arc<ModelCatalog>) -> Self {
        self.catalog = Some(catalog);
        self
    }
}

#[cfg(feature = "openrouter")]
impl HttpBackend<OpenRouterAdapter> {
    /// OpenRouter at [`OPENROUTER_BASE_URL`] with `key`; requests without a model use
    /// [`OPENROUTER_DEFAULT_MODEL`].
    pub fn new(key: ApiKey) -> Self {
        HttpBackend::from_adapter(
            OpenRouterAdapter::default(),
            HttpConfig::new(OPENROUTER_BASE_URL),
        )
        .with_key(key)
    }

    /// The same backend using `model` for requests that name none.
    #[must_use]
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.adapter_mut().default_model = model.into();
        self
    }

    /// The same backend sending `HTTP-Referer` (your site, for OpenRouter's rankings).
    #[must_use]
    pub fn with_referer(mut self, referer: impl Into<String>) -> Self {
        self.adapter_mut().referer = Some(referer.into());
        self
    }

    /// The same backend sending `X-Title` (your app's name, for OpenRouter's rankings).
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.adapter_mut().title = Some(title.into());
        self
    }

    /// The same backend taking each listed model's capabilities from OpenRouter's model list
    /// ([`ModelCatalog`], read with [`HttpBackend::fetch_catalog`] or from a saved body).
    #[must_use]
    pub fn with_catalog(mut self, catalog: std::sync::Arc<ModelCatalog>) -> Self {
        self.adapter_mut().catalog = Some(catalog);
        self
    }

    /// OpenRouter's model list (`GET /models` under the base URL), through this backend's client
    /// and limits ([`HttpBackend::get`]), as its body: read it with [`ModelCatalog::from_json`].
    ///
    /// # Errors
    ///
    /// As [`HttpBackend::get`]'s.
    pub async fn fetch_catalog(&self) -> Result<Vec<u8>, crate::Error> {
        self.get(MODELS_PATH).await
    }
}

/// OpenRouter's model list, under its base URL.
#[cfg(feature = "openrouter")]
pub const MODELS_PATH: &str = "/models";

#[cfg(feature = "openrouter")]
impl Flavour for OpenRouterAdapter {
    fn provider(&self) -> &str {
        "openrouter"
    }

    /// What the model list says ([`OpenRouterAdapter::with_catalog`]) for a model it lists.
    /// Otherwise guessed: strict structured outputs for every model (with `require_parameters`
    /// OpenRouter routes only to upstreams that honour the schema, and answers 404 when none
    /// does), and OpenAI's own models (`openai/...`) as OpenAI serves them, so one without
    /// structured outputs or tools (o1-mini, gpt-4-turbo) is not sent to a 404.
    fn capabilities(&self, model: &str) -> Capabilities {
        if let Some(listed) = self.catalog.as_ref().and_then(|c| c.capabilities(model)) {
            return listed;
        }
        if model.starts_with("openai/") {
            return openai_capabilities(model);
        }
        Capabilities::default()
            .with_schema_dialect(SchemaDialect::OpenAiStrict)
            .with_strict_tools(SchemaDialect::OpenAiStrict)
            .with_streaming(true)
    }

    fn shape(&self) -> Shape<'_> {
        let mut headers = Vec::new();
        if let Some(referer) = &self.referer {
            headers.push(("HTTP-Referer", referer.clone()));
        }
        if let Some(title) = &self.title {
            headers.push(("X-Title", title.clone()));
        }
        Shape {
            provider: "openrouter",
            default_model: Some(&self.default_model),
            max_completion_tokens: false,
            openrouter: true,
            max_stops: None,
            headers,
            drop_temperature: false,
        }
    }
}

#[cfg(feature = "openai")]
impl Default for CompatibleAdapter {
    fn default() -> Self {
        Self {
            provider: "openai-compatible".to_owned(),
            default_model: None,
            capabilities: Capabilities::default()
                .with_schema_dialect(SchemaDialect::JsonSchema)
                .with_tools(true)
                .with_streaming(true),
            structured: StructuredDialect::default(),
        }
    }
}

#[cfg(feature = "openai")]
impl CompatibleAdapter {
    /// The same adapter asking for structured output in `dialect` (see [`StructuredDialect`]):
    /// native requests use its wire form, and `tools` or `prompted` take native output out of the
    /// capabilities.
    #[must_use]
    pub fn with_structured_output(mut self, dialect: StructuredDialect) -> Self {
        self.structured = dialect;
        self
    }

    /// How native requests ask for structured output.
    pub fn structured_output(&self) -> StructuredDialect {
        self.structured
    }

    /// The same adapter under another provider name (`llama.cpp`, `vllm`, `ollama`...).
    #[must_use]
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = provider.into();
        self
    }

    /// The same adapter using `model` for requests that name none.
    #[must_use]
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.default_model = Some(model.into());
        self
    }

    /// The same adapter reporting other capabilities (say, no native schema for an old server).
    #[must_use]
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }
}

#[cfg(feature = "openai")]
impl HttpBackend<CompatibleAdapter> {
    /// A server at `base_url` (up to and including `/v1`), without a key (add one with `with_key`).
    pub fn new(base_url: impl Into<String>) -> Self {
        HttpBackend::from_adapter(CompatibleAdapter::default(), HttpConfig::new(base_url))
    }

    /// The same backend under another provider name (`llama.cpp`, `vllm`, `ollama`...).
    #[must_use]
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.adapter_mut().provider = provider.into();
        self
    }

    /// The same backend using `model` for requests that name none.
    #[must_use]
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.adapter_mut().default_model = Some(model.into());
        self
    }

    /// The same backend reporting other capabilities.
    #[must_use]
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.adapter_mut().capabilities = capabilities;
        self
    }

    /// The same backend asking for structured output in `dialect`.
    #[must_use]
    pub fn with_structured_output(mut self, dialect: StructuredDialect) -> Self {
        self.adapter_mut().structured = dialect;
        self
    }
}

#[cfg(feature = "openai")]
impl Flavour for CompatibleAdapter {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn capabilities(&self, _model: &str) -> Capabilities {
        self.structured.capabilities(self.capabilities)
    }

    fn shape(&self) -> Shape<'_> {
        Shape {
            provider: &self.provider,
            default_model: self.default_model.as_deref(),
            max_completion_tokens: false,
            openrouter: false,
            max_stops: None,
            headers: Vec::new(),
            drop_temperature: false,
        }
    }

    fn finish(&self, wire: &mut WireRequest) {
        // Only the dialects that move the schema read the body back (local servers, where the
        // model's time dwarfs it); the default one sends the adapter's bytes as they are.
        if !matches!(
            self.structured,
            StructuredDialect::JsonObjectSchema | StructuredDialect::OllamaFormat
        ) {
            return;
        }
        if let Ok(mut body) = wire.json() {
            dialect::apply(&mut body, self.structured);
            if let Ok(bytes) = serde_json::to_vec(&body) {
                wire.body = bytes;
            }
        }
    }

    fn classify(&self, error: Error, status: u16, body: &[u8]) -> Error {
        // A server rejecting the structured-output field fails the same way every time.
        if dialect::is_structured_rejection(status, body) {
            dialect::as_rejection(error)
        } else {
            error
        }
    }
}

/// What OpenAI offers for `model`: streaming everywhere; strict structured outputs on everything
/// since `gpt-4o-2024-08-06`, so on any model not known to predate them; strict tools (function
/// calling with `strict: true`, in the same dialect) on every model with function calling, which is
/// all but o1-mini, o1-preview, ChatGPT's own model, the completion models and the March 2023
/// snapshots; no `temperature` on the reasoning models ([`takes_temperature`](crate::models::takes_temperature)).
fn openai_capabilities(model: &str) -> Capabilities {
    let name = model.rsplit('/').next().unwrap_or(model);
    let no_tools = ["o1-mini", "o1-preview", "chatgpt-", "davinci", "babbage"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || name.ends_with("-0301")
        || name.ends_with("-0314");
    let no_schema = no_tools
        || name == "gpt-4"
        || name == "gpt-4o-2024-05-13"
        || ["gpt-3.5", "gpt-4-"]
            .iter()
            .any(|prefix| name.starts_with(prefix));
    let mut capabilities = Capabilities::default()
        .with_streaming(true)
        .with_rejects_temperature(!crate::models::takes_temperature(name));
    if !no_tools {
        capabilities = capabilities.with_strict_tools(SchemaDialect::OpenAiStrict);
    }
    if !no_schema {
        capabilities = capabilities.with_schema_dialect(SchemaDialect::OpenAiStrict);
    }
    capabilities
}

#[cfg(test)]
mod tests;
