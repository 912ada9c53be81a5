//! Provider-neutral LLM requests and responses, and the [`Backend`] trait every provider implements.
//!
//! A [`ChatRequest`] says what to ask (model, system prompt, messages, an optional JSON Schema for a
//! structured answer, sampling parameters); a [`Backend`] turns it into a [`ChatResponse`] (the text, why
//! it stopped, the [`Usage`]) or a typed [`Error`] that says which provider failed, with which HTTP status
//! and request id. The trait is object-safe, so a pipeline holds an `Arc<dyn Backend>` and never knows
//! which provider it talks to.
//!
//! ```
//! use claij_backends::{Backend, ChatRequest, Message};
//! // A backend that answers from a script (the workspace's test support, not part of this crate).
//! use claij_test_support::Scripted;
//!
//! let backend = Scripted::replies([r#"{"answer": "4", "state": "done"}"#]);
//! let request = ChatRequest::new("any-model").message(Message::user("What is 2+2?"));
//! let response = futures_executor::block_on(backend.complete(&request))?;
//! assert_eq!(response.content, r#"{"answer": "4", "state": "done"}"#);
//! assert_eq!(backend.requests()[0].messages[0].content, "What is 2+2?");
//! # Ok::<(), claij_backends::Error>(())
//! ```
//!
//! A real provider is one line away (nothing is sent until `complete` is awaited):
//!
//! ```
//! # #[cfg(feature = "openrouter")] {
//! use claij_backends::{ApiKey, Backend, OpenRouter};
//!
//! let backend = OpenRouter::new(ApiKey::new("sk-or-..."));
//! let capabilities = backend.capabilities("google/gemini-2.5-flash");
//! assert!(capabilities.native_json_schema);
//! # }
//! ```
//!
//! What is here:
//! - [`Adapter`]: a provider's wire format as pure functions (`transform_request`,
//!   `transform_response`, `classify_error`, `stream_event`); [`HttpBackend`] drives any adapter over
//!   HTTP with timeouts, retries with backoff and jitter honouring `Retry-After`, a [`CancelToken`],
//!   server-sent-event streaming and a pre-flight check.
//! - Adapters: [`OpenAi`], [`OpenRouter`], [`OpenAiCompatible`] (llama.cpp, vLLM, Ollama, LM Studio),
//!   [`Anthropic`], [`Gemini`]; structured output natively ([`OutputMode::Native`]) or as a forced tool
//!   ([`OutputMode::Tool`]), with the schema already compiled to the provider's [`SchemaDialect`].
//! - Native tools: [`ChatRequest::tools`] ([`ToolSpec`]) and [`ChatRequest::tool_choice`]
//!   ([`ToolChoice`]) in each provider's format; the model's calls, parallel ones too, in
//!   [`ChatResponse::tool_calls`] ([`ToolCall`], arguments parsed, or kept as their raw text when
//!   they are not JSON: never an error, repairing them is the caller's job) and, streamed, as
//!   [`StreamEvent::ToolCall`]s that [`Assembler::finish`] puts together ([`Assembler::try_finish`]:
//!   [`Error::ToolArguments`] names a call whose arguments are not JSON); a history's calls ([`Message::assistant_calls`]) and
//!   results ([`Message::tool_result`]) sent back in each provider's form. [`Capabilities::tools`]
//!   says where; in tool mode beside the caller's tools, [`ChatResponse::calls_to_run`] leaves out
//!   the answer's own call.
//! - [`ModelTable`]: context windows and prices of known models, a conservative pre-flight token
//!   estimate ([`models::preflight`]) and cost ([`Price`]: input, cache reads and writes, output,
//!   reasoning, long-context tiers); prices are data ([`models::PriceList`], built in with their
//!   dates and sources, or imported from genai-prices' and LiteLLM's lists), and every HTTP backend
//!   prices each response's [`Usage`] from its table unless the provider reported a cost.
//! - [`cassette`] (feature `cassette`): [`Recorder`] writes request/response pairs (secrets scrubbed)
//!   to JSONL; [`Replayer`] answers from them offline, so real failures become regression tests.
//! - [`ApiKey`]: never shown by `Debug` or `Display`. The library never reads the environment.
//! - [`redact`]: the one set of redaction rules (keys by prefix, auth headers, query parameters, URL
//!   user info, a known key's encoded copies) that cassettes, errors, the failure log and printed
//!   configurations all use.
//!
//! The embedded model (candle, llguidance) is its own crate, claij-local, a [`Backend`] like these;
//! this crate's tree holds neither.
//!
//! Features (additive):
//! - `openai`, `openrouter`, `anthropic`, `gemini` (default on): the HTTP adapters; each pulls in `http`
//!   (reqwest with rustls, tokio timers). With no default features the crate has no IO dependency.
//! - `cassette` (off by default): [`Recorder`] and [`Replayer`], the one part of the crate that reads
//!   and writes files. Without it (and without the HTTP adapters) the crate does no IO.
//!
//! Errors: [`Error`], one variant per kind of failure a caller handles differently (retry, re-auth,
//! shorten the prompt, give up), each carrying the provider, status and request id where there are any.
//! No error, log or `Debug` output contains an API key.

mod adapter;
#[cfg(feature = "anthropic")]
pub mod anthropic;
mod backend;
#[cfg(feature = "cassette")]
pub mod cassette;
mod error;
#[cfg(feature = "gemini")]
pub mod gemini;
#[cfg(feature = "http")]
pub mod http;
mod key;
pub mod models;
#[cfg(any(feature = "openai", feature = "openrouter"))]
pub mod openai;
pub mod redact;
mod request;
mod response;

pub use adapter::{Adapter, StreamEvent, WireRequest, excerpt};
#[cfg(feature = "anthropic")]
pub use anthropic::Anthropic;
pub use backend::{Backend, BoxFuture, BoxStream, Capabilities, SchemaDialect, SchemaTarget};
#[cfg(feature = "cassette")]
pub use cassette::{Recorder, Replayer};
pub use error::{BodyLimit, Error, ErrorContext, ErrorKind};
#[cfg(feature = "gemini")]
pub use gemini::Gemini;
#[cfg(feature = "http")]
pub use http::{CancelToken, Cancellable, HttpBackend, HttpConfig, HttpVersion, RetryPolicy};
pub use key::ApiKey;
pub use models::{InstructionRole, ModelInfo, ModelTable, Price};
#[cfg(feature = "openrouter")]
pub use openai::OpenRouter;
#[cfg(feature = "openai")]
pub use openai::{OpenAi, OpenAiCompatible};
pub use request::{
    ChatRequest, Message, OutputMode, Role, SharedJson, StructuredOutput, ToolCall, ToolChoice,
    ToolSpec,
};
pub use response::{Assembler, ChatResponse, FinishReason, Usage};
