//! The shape of a provider adapter: pure translations between the neutral types and one provider's
//! wire format, kept apart from HTTP so each function can be tested on its own (Ring-style).

use std::time::Duration;

use serde_json::Value;

use crate::{
    ApiKey, Capabilities, ChatRequest, ChatResponse, Error, ErrorContext, FinishReason, Usage,
};

/// One provider's wire format. Implementations hold no connection and do no IO; the HTTP backend
/// (`HttpBackend`) drives them.
pub trait Adapter: Send + Sync + 'static {
    /// The provider's name, for errors and logs (`openai`, `openrouter`, `anthropic`, `gemini`, ...).
    fn provider(&self) -> &str;

    /// What the provider offers for `model`.
    fn capabilities(&self, model: &str) -> Capabilities;

    /// The HTTP request for a neutral request; `stream` asks for server-sent events.
    ///
    /// # Errors
    ///
    /// [`Error::BadRequest`] for a request the provider cannot express (say, a tool-mode request to a
    /// provider without tools), before anything is sent.
    fn transform_request(&self, request: &ChatRequest, stream: bool) -> Result<WireRequest, Error>;

    /// The neutral response for a successful (2xx) body.
    ///
    /// # Errors
    ///
    /// [`Error::MalformedResponse`] (with an excerpt) when the body is not what the API promises;
    /// [`Error::Refused`] when the provider reports a refusal or a content filter.
    fn transform_response(
        &self,
        body: &[u8],
        context: &ErrorContext,
    ) -> Result<ChatResponse, Error>;

    /// The typed error for a non-2xx response. `retry_after` is the parsed `Retry-After` header.
    fn classify_error(
        &self,
        status: u16,
        retry_after: Option<Duration>,
        body: &[u8],
        context: ErrorContext,
    ) -> Error;

    /// The headers that carry the key. They are marked sensitive and never logged.
    fn auth_headers(&self, key: &ApiKey) -> Vec<(&'static str, String)>;

    /// What one server-sent event of a streamed response means. `data` is the event's data field.
    ///
    /// # Errors
    ///
    /// [`Error::MalformedResponse`] for an event that cannot be read; an in-stream error event
    /// becomes its typed error.
    fn stream_event(
        &self,
        event: Option<&str>,
        data: &str,
        context: &ErrorContext,
    ) -> Result<Vec<StreamEvent>, Error>;
}

/// The HTTP request an adapter wants sent.
#[derive(Debug, Clone, PartialEq)]
pub struct WireRequest {
    /// The path, joined to the backend's base URL (`/chat/completions`, `/models/m:generateContent`).
    pub path: String,
    /// The JSON body, serialized: adapters write their wire structs straight to bytes (a shared
    /// schema's text spliced in, [`SharedJson`](crate::SharedJson)), and every attempt sends these
    /// bytes. [`WireRequest::json`] reads it back.
    pub body: Vec<u8>,
    /// Extra headers that are not secret (`anthropic-version`, `HTTP-Referer`, ...).
    pub headers: Vec<(&'static str, String)>,
}

impl WireRequest {
    /// The body parsed, for tests and tools that inspect it.
    ///
    /// # Errors
    ///
    /// When the body is not JSON (an adapter's bug).
    pub fn json(&self) -> serde_json::Result<Value> {
        serde_json::from_slice(&self.body)
    }
}

/// One piece of a streamed response.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// More text of the answer.
    Text(String),
    /// More of the first tool call's arguments (an empty fragment says a call began). In tool mode
    /// ([`OutputMode::Tool`](crate::OutputMode::Tool)) they are the answer, and text beside them is
    /// not: see [`Assembler`](crate::Assembler).
    ToolInput(String),
    /// A native tool call began (so text beside it is not the answer): its position among the
    /// response's parts (the provider's index, which orders the calls and keys their arguments),
    /// the provider's id and the tool's name.
    ToolCall {
        /// The call's position.
        index: u32,
        /// The call's id.
        id: String,
        /// The tool called.
        name: String,
    },
    /// More arguments of the tool call at `index` (JSON text). An adapter sends the first call's
    /// either this way or as [`StreamEvent::ToolInput`], never both.
    ToolCallInput {
        /// The call's position.
        index: u32,
        /// The fragment of its arguments.
        part: String,
    },
    /// Token usage (often sent once, near the end).
    Usage(Usage),
    /// Why generation stopped.
    Finish(FinishReason),
    /// The model that answers, as the provider names it.
    Model(String),
    /// The provider's id for the response.
    ResponseId(String),
}

/// The first bytes of a body, for error messages: at most `max` characters, lossy UTF-8.
pub fn excerpt(body: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(body);
    let trimmed = text.trim();
    if trimmed.chars().count() <= max {
        return trimmed.to_owned();
    }
    let cut: String = trimmed.chars().take(max).collect();
    format!("{cut}...")
}
