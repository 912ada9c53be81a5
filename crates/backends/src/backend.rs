//! The [`Backend`] trait and what a backend can do for a model.

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

use crate::{ChatRequest, ChatResponse, Error};

/// A boxed, sendable future: what object-safe async methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

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
}

/// What a backend offers for one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// The provider enforces a JSON Schema while decoding (structured outputs).
    pub native_json_schema: bool,
    /// The provider supports tool (function) calls.
    pub tools: bool,
    /// The provider can stream the response.
    pub streaming: bool,
    /// The model's context window in tokens, when known.
    pub context_window: Option<u32>,
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
}
