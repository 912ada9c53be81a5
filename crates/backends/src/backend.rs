//! The [`Backend`] trait and what a backend can do for a model.

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

use futures_util::StreamExt as _;

use crate::{ChatRequest, ChatResponse, Error, OutputMode, StreamEvent};

/// A boxed, sendable future: what object-safe async methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A boxed, sendable stream.
pub type BoxStream<'a, T> = Pin<Box<dyn futures_core::Stream<Item = T> + Send + 'a>>;

/// One LLM provider. Object-safe, so a pipeline can hold `Arc<dyn Backend>`.
///
/// Dropping the future returned by [`Backend::complete`] cancels the call.
pub trait Backend: Send + Sync {
    /// The provider's name: `openrouter`, `anthropic`, `local`, `scripted`...
    fn provider(&self) -> &str;

    /// What this backend can do for `model`.
    fn capabilities(&self, model: &str) -> Capabilities;

    /// Sends one request and waits for the complete response.
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, Error>>;

    /// Sends one request and streams the response as it is generated. Backends without streaming
    /// answer with the complete response as a few events.
    fn stream<'a>(&'a self, request: &'a ChatRequest) -> BoxStream<'a, Result<StreamEvent, Error>> {
        let events = async move {
            let events: Vec<Result<StreamEvent, Error>> = match self.complete(request).await {
                Ok(response) => {
                    let mut out = Vec::with_capacity(4);
                    if let Some(model) = response.model {
                        out.push(Ok(StreamEvent::Model(model)));
                    }
                    // Native calls as a stream brings them, the first's arguments as the content
                    // has them (so the assembled content is the same as `complete`'s).
                    for (index, call) in (0u32..).zip(&response.tool_calls) {
                        out.push(Ok(StreamEvent::ToolCall {
                            index,
                            id: call.id.clone(),
                            name: call.name.clone(),
                        }));
                        let part = if index == 0 {
                            response.content.clone()
                        } else {
                            call.arguments.to_string()
                        };
                        out.push(Ok(StreamEvent::ToolCallInput { index, part }));
                    }
                    let text = if response.tool_calls.is_empty() {
                        response.content
                    } else {
                        response.text
                    };
                    if !text.is_empty() || response.tool_calls.is_empty() {
                        out.push(Ok(StreamEvent::Text(text)));
                    }
                    out.push(Ok(StreamEvent::Usage(response.usage)));
                    out.push(Ok(StreamEvent::Finish(response.finish_reason)));
                    out
                }
                Err(e) => vec![Err(e)],
            };
            futures_util::stream::iter(events)
        };
        Box::pin(futures_util::stream::once(events).flatten())
    }
}

/// What a backend offers for one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// The provider enforces a JSON Schema while decoding (structured outputs).
    pub native_json_schema: bool,
    /// The provider takes native tools: [`ChatRequest::tools`] are sent in its format and its calls
    /// come back in [`ChatResponse::tool_calls`] (and tool mode, [`OutputMode::Tool`], works). Where
    /// false (the embedded local model), tools are offered through the schema instead.
    pub tools: bool,
    /// The provider can stream the response.
    pub streaming: bool,
    /// The model's context window in tokens, when known.
    pub context_window: Option<u32>,
    /// The JSON Schema subset the provider's structured output accepts, when it has structured output.
    pub schema_dialect: Option<SchemaDialect>,
    /// The JSON Schema subset a forced tool's parameters must be in for the provider to enforce them
    /// (`strict: true`), when the model has strict tools. `None`: tools are sent non-strict, their
    /// parameters in `schema_dialect` (or full JSON Schema), and the schema is only a hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict_tools: Option<SchemaDialect>,
    /// A request without a temperature decodes greedily: the same request gives the same reply,
    /// token for token (the embedded local model). The pipeline samples retries on such backends.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub greedy_default: bool,
    /// The model rejects a `temperature` (OpenAI's o-series and GPT-5 reasoning models, an
    /// OpenRouter model whose `supported_parameters` lack it): the adapter leaves a request's
    /// temperature out, with a warning saying so, rather than have the request refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rejects_temperature: bool,
}

/// How to send a schema in one [`OutputMode`]: the dialect to compile it to and whether to ask the
/// provider to enforce it. See [`Capabilities::schema_target`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SchemaTarget {
    /// The dialect the schema must be compiled to (reporting what it loses).
    pub dialect: SchemaDialect,
    /// Whether to send it strict ([`StructuredOutput::strict`](crate::StructuredOutput::strict)).
    pub strict: bool,
}

/// The JSON Schema subset a provider's structured output accepts. The caller compiles a schema to it
/// (claij-schema's `Dialect`) before putting it in a request, and reports what was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SchemaDialect {
    /// Full JSON Schema (draft 2020-12): llama.cpp, vLLM, Gemini's `responseJsonSchema`.
    JsonSchema,
    /// OpenAI strict structured outputs (and OpenRouter, which forwards them).
    OpenAiStrict,
    /// Gemini `responseSchema` (an OpenAPI 3.0 subset).
    Gemini,
    /// Anthropic structured outputs and strict tools.
    Anthropic,
    /// The JSON Schema subset llguidance compiles to a token grammar: the embedded local model
    /// (`local` feature).
    Llguidance,
}

impl Capabilities {
    /// Nothing but plain completion: the schema goes in the prompt.
    pub fn prompted() -> Self {
        Self::default()
    }

    /// The same capabilities with native JSON Schema support set.
    #[must_use]
    pub fn with_native_json_schema(mut self, yes: bool) -> Self {
        self.native_json_schema = yes;
        self
    }

    /// The same capabilities with tool support set.
    #[must_use]
    pub fn with_tools(mut self, yes: bool) -> Self {
        self.tools = yes;
        self
    }

    /// The same capabilities with streaming support set.
    #[must_use]
    pub fn with_streaming(mut self, yes: bool) -> Self {
        self.streaming = yes;
        self
    }

    /// The same capabilities with a context window.
    #[must_use]
    pub fn with_context_window(mut self, tokens: u32) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// The same capabilities with native structured output in a schema dialect.
    #[must_use]
    pub fn with_schema_dialect(mut self, dialect: SchemaDialect) -> Self {
        self.native_json_schema = true;
        self.schema_dialect = Some(dialect);
        self
    }

    /// The same capabilities with greedy decoding when a request sets no temperature.
    #[must_use]
    pub fn with_greedy_default(mut self, yes: bool) -> Self {
        self.greedy_default = yes;
        self
    }

    /// The same capabilities with the model rejecting (or taking) a `temperature`.
    #[must_use]
    pub fn with_rejects_temperature(mut self, yes: bool) -> Self {
        self.rejects_temperature = yes;
        self
    }

    /// The same capabilities with strict tools, whose parameters must be in `dialect` (tools on).
    #[must_use]
    pub fn with_strict_tools(mut self, dialect: SchemaDialect) -> Self {
        self.tools = true;
        self.strict_tools = Some(dialect);
        self
    }

    /// How to send a schema in `mode`. Native: in `schema_dialect` (full JSON Schema when unknown),
    /// strict. Tool: in the strict-tools dialect, strict, when the model has strict tools; otherwise
    /// non-strict in `schema_dialect` (or full JSON Schema), since a provider with strict tools
    /// rejects `strict: true` on a schema outside its dialect and one without them ignores or
    /// rejects the flag.
    ///
    /// ```
    /// use claij_backends::{Capabilities, OutputMode, SchemaDialect};
    ///
    /// let gpt4_turbo = Capabilities::prompted().with_strict_tools(SchemaDialect::OpenAiStrict);
    /// let target = gpt4_turbo.schema_target(OutputMode::Tool);
    /// assert_eq!((target.dialect, target.strict), (SchemaDialect::OpenAiStrict, true));
    ///
    /// let claude_3_5 = Capabilities::prompted().with_tools(true);
    /// let target = claude_3_5.schema_target(OutputMode::Tool);
    /// assert_eq!((target.dialect, target.strict), (SchemaDialect::JsonSchema, false));
    /// ```
    pub fn schema_target(&self, mode: OutputMode) -> SchemaTarget {
        let native = self.schema_dialect.unwrap_or(SchemaDialect::JsonSchema);
        match (mode, self.strict_tools) {
            (OutputMode::Native, _) => SchemaTarget {
                dialect: native,
                strict: true,
            },
            (OutputMode::Tool, Some(dialect)) => SchemaTarget {
                dialect,
                strict: true,
            },
            (OutputMode::Tool, None) => SchemaTarget {
                dialect: native,
                strict: false,
            },
        }
    }
}
