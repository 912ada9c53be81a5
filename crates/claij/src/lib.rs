//! claij, the crate to add first: a model named `provider:model` (or an alias of the
//! configuration) resolved to a ready pipeline, asked for an answer that is a JSON document valid
//! against a schema; the settings, sessions, interceptors, consensus and state-machine runs the
//! `claij` command line is built on.
//!
//! A typed answer from a hosted model (here an OpenAI-compatible mock server stands for
//! OpenAI: without `base_url`, the requests go to OpenAI itself):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # use wiremock::{Mock, MockServer, ResponseTemplate, matchers::method};
//! # let server = MockServer::start().await;
//! # let reply = r#"{"name": "Paris", "population": 2102650}"#;
//! # Mock::given(method("POST"))
//! #     .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
//! #         "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
//! #         "choices": [{"index": 0, "finish_reason": "stop",
//! #                      "message": {"role": "assistant", "content": reply}}],
//! #         "usage": {"prompt_tokens": 52, "completion_tokens": 12, "total_tokens": 64}
//! #     })))
//! #     .mount(&server)
//! #     .await;
//! use claij::{Claij, settings::Settings};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct City {
//!     name: String,
//!     population: u64,
//! }
//!
//! let settings = Settings::builder().base_url("openai", &server.uri()).build()?;
//! let claij = Claij::new(settings).with_var("OPENAI_API_KEY", "sk-test");
//! let city: City = claij.ask("openai:gpt-4o-mini", "The capital of France?").await?;
//! assert_eq!(city.name, "Paris");
//! assert!(city.population > 2_000_000);
//! # Ok(())
//! # }
//! ```
//!
//! A conversation over several turns, with a session file, memory and tools, is
//! [`conversation`]'s; several models asked at once, [`consensus`]'s.
//!
//! Features: `openai`, `openrouter`, `anthropic`, `gemini` (default), `local` (the embedded
//! model), `fsm`, `mcp`, `restate`, `otel`, `logging`, `tokens` (what a schema and each of its
//! extensions cost in tokens: modules `tokens` and `extensions::cost`).
//!
//! # Settings and models by name
//!
//! A [`Claij`] is built once: from the environment ([`Claij::from_env`]: `$CLAIJ_CONFIG` or
//! `~/.config/claij/config.toml`, keys from `OPENAI_API_KEY`, ...), from a file
//! ([`settings::Settings::from_file`]), or in code ([`settings::Settings::builder`]). It resolves
//! a model named `provider:model`, `local` or an alias, and opens it with its key:
//!
//! ```
//! use claij::{Claij, ErrorKind, settings::Settings};
//!
//! let settings = Settings::builder()
//!     .base_url("openai", "http://127.0.0.1:8080/v1") // a proxy, or a test double
//!     .alias("fast", "openai:gpt-4o-mini")
//!     .default_llm("fast")
//!     .build()?;
//! let claij = Claij::new(settings).with_var("OPENAI_API_KEY", "sk-test");
//!
//! // Aliases, built-in ones included, resolve to a provider and a model.
//! assert_eq!(claij.resolve("fast")?.llm.to_string(), "openai:gpt-4o-mini");
//! assert_eq!(
//!     claij.resolve("gemini-flash")?.llm.to_string(),
//!     "openrouter:google/gemini-2.5-flash"
//! );
//!
//! // Opening reads the key; nothing is sent until the model is asked.
//! let opened = claij.open("fast")?;
//! assert_eq!(opened.model, "gpt-4o-mini");
//! assert_eq!(opened.backend.provider(), "openai");
//!
//! // A missing key, an unknown name: typed errors that say what to do.
//! let err = claij.open("anthropic:claude-sonnet-4-5").unwrap_err();
//! assert_eq!(err.kind(), ErrorKind::Key);
//! assert!(err.is_auth());
//! assert_eq!(claij.open("gpt-6").unwrap_err().kind(), ErrorKind::Model);
//! # Ok::<(), claij::Error>(())
//! ```
//!
//! Errors are [`Error`]: a [`kind`](Error::kind) and the predicates of the backends' and the
//! pipeline's errors underneath ([`Error::is_timeout`], [`Error::is_retryable`], ...). Nothing is
//! process-wide: two [`Claij`] values share no loaded model and no structured-output fallback
//! memory.

pub mod approve;
mod client;
pub mod consensus;
pub mod conversation;
mod error;
pub mod extensions;
pub mod fallback;
pub mod fs;
#[cfg(feature = "fsm")]
pub mod fsm;
#[cfg(feature = "logging")]
pub mod logging;
pub mod matrix;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod model;
#[cfg(feature = "openrouter")]
pub mod openrouter;
pub mod options;
pub mod partials;
pub mod prices;
pub mod progress;
#[cfg(feature = "recall")]
pub mod recall;
pub mod report;
pub mod session;
pub mod settings;
#[cfg(feature = "otel")]
pub mod telemetry;
#[cfg(feature = "tokens")]
pub mod tokens;
pub mod tools;

pub use self::client::{Claij, Notice};

// The crates under the front door, for what it does not wrap: a program that adds `claij` reaches
// every layer through it, with one version of each.
pub use self::error::{Error, ErrorKind, Result};
/// The model adapters (OpenAI, OpenRouter, Anthropic, Gemini wires), usage and prices: [`claij_backends`].
pub use claij_backends as backends;
/// The pipeline and its interceptors (memory, tools, eval, proposals...): [`claij_interceptors`].
pub use claij_interceptors as interceptors;
/// The embedded model (feature `local`): [`claij_local`].
#[cfg(feature = "local")]
pub use claij_local as local;
/// Schemas, their extensions and the audit log: [`claij_schema`].
pub use claij_schema as schema;
/// Extraction, repair and validation of a reply: [`claij_validation`].
pub use claij_validation as validation;

/// `s` on one line: its lines trimmed, empty ones dropped, joined by a space.
pub(crate) fn one_line(s: &str) -> String {
    s.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// An error and its sources, `outer: inner: ...` (as `{:#}` of an `anyhow::Error` shows them).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}
