//! Anthropic Messages (`POST /v1/messages`): the [`AnthropicAdapter`] and the [`Anthropic`] backend.
//!
//! What each request sends:
//!
//! - Always `model`, `max_tokens` (the request's, or [`AnthropicAdapter::max_tokens`] when it has
//!   none: the API requires one), `messages` with roles `user`/`assistant`, and the system prompt as
//!   the top-level `system` field (with the text of any [`Role::System`] messages appended; tool
//!   results without a call id go as `user` text). `temperature` and `stop_sequences` when set; the request's `seed` is
//!   ignored (Anthropic has none).
//! - [`OutputMode::Native`]: `output_config: {format: {type: "json_schema", schema}}`; the JSON comes
//!   back as a text block.
//! - [`OutputMode::Tool`]: one tool `{name, description, input_schema}` (plus `strict: true` when the
//!   structured output is strict and the model has structured outputs: older models reject the
//!   field) forced with `tool_choice: {type: "tool", name}`; the answer is the `tool_use` block's
//!   `input`, serialized to JSON text.
//! - No structured output (prompted): none of the above; the schema is in the system prompt already.
//! - Native tools ([`ChatRequest::tools`]): each as `{name, description, input_schema}` (`strict`
//!   as above) after any answer tool; [`ChatRequest::tool_choice`] as `tool_choice` `auto`, `any`,
//!   `none` or `{type: "tool", name}` (tool mode with tools of the caller's: `any`). An assistant
//!   message's calls go as `tool_use` blocks after its text; tool results as `tool_result` blocks,
//!   the results of one turn's calls together in one user message.
//!
//! Extended thinking ([`AnthropicAdapter::with_thinking_budget`]) is never combined with a forced
//! tool (tool mode, or a tool choice `any` or `tool`) or a temperature: Anthropic rejects both, so
//! such a request fails with [`Error::BadRequest`] before anything is sent.
//!
//! Responses: the first `tool_use` block's input, else the text blocks joined (other blocks, such as
//! thinking, skipped); every `tool_use` block in [`ChatResponse::tool_calls`] (streamed: a
//! [`StreamEvent::ToolCall`] per block, its `input_json_delta`s keyed by block index).
//! `stop_reason` `end_turn` and `stop_sequence` map to [`FinishReason::Stop`], `tool_use` to
//! [`FinishReason::ToolCalls`], `max_tokens` and `model_context_window_exceeded` to
//! [`FinishReason::Length`], and `refusal` to [`Error::Refused`].

use std::time::Duration;

use serde_json::Value;

use crate::http::{HttpBackend, HttpConfig};
use crate::{
    Adapter, ApiKey, Capabilities, ChatRequest, ChatResponse, Error, ErrorContext, FinishReason,
    OutputMode, Role, SchemaDialect, StreamEvent, ToolCall, ToolChoice, Usage, WireRequest,
    excerpt,
};

mod wire;

#[cfg(test)]
mod tests;

/// The provider name in errors and logs.
pub const PROVIDER: &str = "anthropic";

/// Anthropic's API base URL; requests go to `{base}/messages`.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";

/// The `anthropic-version` header every request carries.
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` for requests that set none (the Messages API requires it).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The context window of current Claude models (Claude 2.1 and later) in tokens.
pub const CONTEXT_WINDOW: u32 = 200_000;

/// How many characters of a body go into a [`Error::MalformedResponse`].
const EXCERPT_CHARS: usize = 200;

/// Anthropic Messages over HTTP: `Anthropic::new(key)`, then `with_base_url`, `with_config`, ... from
/// [`HttpBackend`], and the adapter's settings ([`Anthropic::with_max_tokens`],
/// [`Anthropic::with_thinking_budget`]).
///
/// ```
/// use claij_backends::{ApiKey, Backend, SchemaDialect, anthropic::Anthropic};
///
/// let backend = Anthropic::new(ApiKey::new("sk-ant-...")).with_max_tokens(8192);
/// assert_eq!(backend.provider(), "anthropic");
/// let capabilities = backend.capabilities("claude-sonnet-4-5");
/// assert_eq!(capabilities.schema_dialect, Some(SchemaDialect::Anthropic));
/// assert_eq!(capabilities.context_window, Some(200_000));
/// ```
pub type Anthropic = HttpBackend<AnthropicAdapter>;

/// The Anthropic Messages wire format: pure translations, no IO (see the [module docs](self)).
///
/// ```
/// use claij_backends::{Adapter, ChatRequest, Message, anthropic::AnthropicAdapter};
///
/// let request = ChatRequest::new("claude-sonnet-4-5")
///     .system("Be brief.")
///     .message(Message::user("Hi"));
/// let wire = AnthropicAdapter::default().transform_request(&request, false)?;
/// assert_eq!(wire.path, "/messages");
/// let body = wire.json()?;
/// assert_eq!(body["system"], "Be brief.");
/// assert_eq!(body["max_tokens"], 4096);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnthropicAdapter {
    max_tokens: u32,
    thinking_budget: Option<u32>,
}

impl Default for AnthropicAdapter {
    fn default() -> Self {
        Self {
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget: None,
        }
    }
}

impl AnthropicAdapter {
    /// The same adapter with another default `max_tokens` for requests that set none.
    #[must_use]
    pub fn with_max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = tokens.max(1);
        self
    }

    /// The same adapter with extended thinking on, allowing `budget` thinking tokens (Anthropic asks
    /// for at least 1024). Requests then refuse [`OutputMode::Tool`] and a temperature, and a request
    /// without `max_tokens` gets the budget plus the default, since `max_tokens` must exceed the
    /// budget.
    #[must_use]
    pub fn with_thinking_budget(mut self, budget: u32) -> Self {
        self.thinking_budget = Some(budget);
        self
    }

    /// The default `max_tokens` for requests that set none.
    pub fn max_tokens(&self) -> u32 {
        self.max_tokens
    }

    /// The extended-thinking budget, when thinking is on.
    pub fn thinking_budget(&self) -> Option<u32> {
        self.thinking_budget
    }
}

impl HttpBackend<AnthropicAdapter> {
    /// Anthropic at [`DEFAULT_BASE_URL`] with `key` (sent as `x-api-key`).
    pub fn new(key: ApiKey) -> Self {
        HttpBackend::from_adapter(
            AnthropicAdapter::default(),
            HttpConfig::new(DEFAULT_BASE_URL),
        )
        .with_key(key)
    }

    /// The same backend with another default `max_tokens` for requests that set none.
    #[must_use]
    pub fn with_max_tokens(mut self, tokens: u32) -> Self {
        self.adapter_mut().max_tokens = tokens.max(1);
        self
    }

    /// The same backend with extended thinking on (see [`AnthropicAdapter::with_thinking_budget`]).
    #[must_use]
    pub fn with_thinking_budget(mut self, budget: u32) -> Self {
        self.adapter_mut().thinking_budget = Some(budget);
        self
    }
}

impl Adapter for AnthropicAdapter {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn capabilities(&self, model: &str) -> Capabilities {
        capabilities(model)
    }

    fn transform_request(&self, request: &ChatRequest, stream: bool) -> Result<WireRequest, Error> {
        let body = self.body(request, stream)?;
        let body = serde_json::to_vec(&body).map_err(|e| bad_request(e.to_string()))?;
        Ok(WireRequest {
            path: "/messages".to_owned(),
            body,
            headers: vec![("anthropic-version", API_VERSION.to_owned())],
        })
    }

    fn transform_response(
        &self,
        body: &[u8],
        context: &ErrorContext,
    ) -> Result<ChatResponse, Error> {
        match serde_json::from_slice::<wire::Message>(body) {
            Ok(message) => response(message, context),
            // Some proxies answer 200 with an error body.
            Err(e) => match serde_json::from_slice::<wire::ErrorBody>(body) {
                Ok(error) if error.kind == "error" => {
                    Err(typed_error(&error.error, None, None, context.clone()))
                }
                _ => Err(malformed(context, &e.to_string(), body)),
            },
        }
    }

    fn classify_error(
        &self,
        status: u16,
        retry_after: Option<Duration>,
        body: &[u8],
        context: ErrorContext,
    ) -> Error {
        classify_error(status, retry_after, body, context)
    }

    fn auth_headers(&self, key: &ApiKey) -> Vec<(&'static str, String)> {
        vec![("x-api-key", key.expose().to_owned())]
    }

    fn stream_event(
        &self,
        event: Option<&str>,
        data: &str,
        context: &ErrorContext,
    ) -> Result<Vec<StreamEvent>, Error> {
        stream_event(event, data, context)
    }
}

impl AnthropicAdapter {
    fn body<'a>(&self, request: &'a ChatRequest, stream: bool) -> Result<wire::Request<'a>, Error> {
        let thinking = self.thinking_budget.map(|budget| wire::Thinking {
            kind: "enabled",
            budget_tokens: budget,
        });
        let max_tokens = match (request.max_tokens, self.thinking_budget) {
            (Some(n), Some(budget)) if n <= budget => {
                return Err(bad_request(format!(
                    "max_tokens ({n}) must exceed the thinking budget ({budget})"
                )));
            }
            (Some(n), _) => n,
            (None, Some(budget)) => budget.saturating_add(self.max_tokens),
            (None, None) => self.max_tokens,
        };
        check_request(request)?;
        if thinking.is_some() && request.temperature.is_some() {
            return Err(bad_request(
                "extended thinking does not allow a temperature".to_owned(),
            ));
        }
        let mut body = wire::Request {
            model: &request.model,
            max_tokens,
            system: system_prompt(request),
            messages: messages(request),
            temperature: request.temperature.map(decimal_f64),
            stop_sequences: &request.stop,
            tools: Vec::new(),
            tool_choice: None,
            output_config: None,
            thinking,
            stream,
        };
        let Some(structured) = &request.structured_output else {
            self.add_tools(&mut body, request)?;
            return Ok(body);
        };
        match structured.mode {
            OutputMode::Native => {
                body.output_config = Some(wire::OutputConfig {
                    format: wire::OutputFormat {
                        kind: "json_schema",
                        schema: (&structured.schema).into(),
                    },
                });
            }
            OutputMode::Tool => {
                if body.thinking.is_some() {
                    return Err(bad_request(
                        "extended thinking cannot be combined with a forced tool; use native mode"
                            .to_owned(),
                    ));
                }
                check_tool_name(&structured.name)?;
                body.tools.push(wire::Tool {
                    name: &structured.name,
                    description: tool_description(&structured.schema),
                    input_schema: (&structured.schema).into(),
                    // Models before structured outputs reject the field.
                    strict: structured.strict && has_structured_outputs(&request.model),
                });
                body.tool_choice = Some(wire::ToolChoice {
                    kind: "tool",
                    name: Some(&structured.name),
                });
            }
        }
        self.add_tools(&mut body, request)?;
        Ok(body)
    }

    /// The caller's tools beside any answer tool, and the tool choice: the caller's when it made
    /// one; in tool mode with tools of the caller's, `any` (the answer is a call too).
    fn add_tools<'a>(
        &self,
        body: &mut wire::Request<'a>,
        request: &'a ChatRequest,
    ) -> Result<(), Error> {
        if request.tools.is_empty() && request.tool_choice.is_none() {
            return Ok(());
        }
        crate::request::check_tools(request).map_err(bad_request)?;
        let strict = has_structured_outputs(&request.model);
        body.tools
            .extend(request.tools.iter().map(|tool| wire::Tool {
                name: &tool.name,
                description: &tool.description,
                input_schema: (&tool.parameters).into(),
                strict: tool.strict && strict,
            }));
        let choice = |kind, name| Some(wire::ToolChoice { kind, name });
        body.tool_choice = match &request.tool_choice {
            Some(ToolChoice::Auto) => choice("auto", None),
            Some(ToolChoice::Required) => choice("any", None),
            Some(ToolChoice::None) => choice("none", None),
            Some(ToolChoice::Tool(name)) => choice("tool", Some(name.as_str())),
            None if body.tool_choice.is_some() => choice("any", None),
            None => None,
        };
        let forced = body
            .tool_choice
            .as_ref()
            .is_some_and(|c| c.kind == "any" || c.kind == "tool");
        if forced && body.thinking.is_some() {
            return Err(bad_request(
                "extended thinking cannot be combined with a forced tool choice".to_owned(),
            ));
        }
        Ok(())
    }
}

/// What Anthropic offers for `model`: tools, streaming and (Claude) a 200k context window everywhere;
/// native structured outputs (`output_config`, [`SchemaDialect::Anthropic`]) and strict tools (in
/// the same dialect) from Claude Opus 4.1 and the 4.5 generation on.
pub fn capabilities(model: &str) -> Capabilities {
    let mut capabilities = Capabilities::prompted()
        .with_tools(true)
        .with_streaming(true);
    if let Some(window) = context_window(model) {
        capabilities = capabilities.with_context_window(window);
    }
    if has_structured_outputs(model) {
        capabilities = capabilities
            .with_schema_dialect(SchemaDialect::Anthropic)
            .with_strict_tools(SchemaDialect::Anthropic);
    }
    capabilities
}

/// What Anthropic would reject in any case: no conversation, a temperature that is no number.
fn check_request(request: &ChatRequest) -> Result<(), Error> {
    if !request.messages.iter().any(|m| m.role != Role::System) {
        return Err(bad_request(
            "the request has no user or assistant messages".to_owned(),
        ));
    }
    if request.temperature.is_some_and(|t| !t.is_finite()) {
        return Err(bad_request(
            "the temperature is not a finite number".to_owned(),
        ));
    }
    Ok(())
}

/// The system prompt: the request's, then the text of any system messages, blank-line separated.
fn system_prompt(request: &ChatRequest) -> Option<String> {
    let parts: Vec<&str> = request
        .system
        .iter()
        .map(String::as_str)
        .chain(
            request
                .messages
                .iter()
                .filter(|m| m.role == Role::System)
                .map(|m| m.content.as_str()),
        )
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// The conversation without system messages: an assistant turn's calls as `tool_use` blocks after
/// its text; tool results as `tool_result` blocks of a user turn, the results of one turn's calls
/// together (Anthropic wants them all in the next user message); a result without a call id as
/// user text.
fn messages(request: &ChatRequest) -> Vec<wire::InputMessage<'_>> {
    let mut out: Vec<wire::InputMessage<'_>> = Vec::with_capacity(request.messages.len());
    for m in &request.messages {
        let (role, content) = match (m.role, &m.tool_call_id) {
            (Role::System, _) => continue,
            (Role::Tool, Some(id)) => {
                let result = wire::InputBlock::ToolResult {
                    tool_use_id: id,
                    content: &m.content,
                };
                if let Some(wire::InputMessage {
                    role: "user",
                    content: wire::Content::Blocks(blocks),
                }) = out.last_mut()
                    && matches!(blocks.last(), Some(wire::InputBlock::ToolResult { .. }))
                {
                    blocks.push(result);
                    continue;
                }
                ("user", wire::Content::Blocks(vec![result]))
            }
            (Role::User | Role::Tool, _) => ("user", wire::Content::Text(&m.content)),
            (Role::Assistant, _) if !m.tool_calls.is_empty() => {
                let text =
                    (!m.content.is_empty()).then_some(wire::InputBlock::Text { text: &m.content });
                let calls = m.tool_calls.iter().map(|call| wire::InputBlock::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    input: call.arguments_object(),
                });
                (
                    "assistant",
                    wire::Content::Blocks(text.into_iter().chain(calls).collect()),
                )
            }
            (Role::Assistant, _) => ("assistant", wire::Content::Text(&m.content)),
        };
        out.push(wire::InputMessage { role, content });
    }
    out
}

/// The tool's description: the schema's own, or a sentence saying the input is the answer.
fn tool_description(schema: &Value) -> &str {
    schema
        .get("description")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .unwrap_or("Give your final answer as this tool's input.")
}

/// Anthropic tool names match `^[a-zA-Z0-9_-]{1,64}$`.
fn check_tool_name(name: &str) -> Result<(), Error> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(bad_request(format!(
            "tool name `{name}` must be 1 to 64 letters, digits, `_` or `-`"
        )))
    }
}

fn response(message: wire::Message, context: &ErrorContext) -> Result<ChatResponse, Error> {
    let mut text = String::new();
    let mut tool_input = None;
    let mut tool_calls = Vec::new();
    for block in message.content {
        match block {
            wire::ContentBlock::Text { text: t } => text.push_str(&t),
            wire::ContentBlock::ToolUse { id, name, input } => {
                let input = if input.is_null() {
                    Value::Object(serde_json::Map::new())
                } else {
                    input
                };
                tool_input.get_or_insert_with(|| input.clone());
                let id = if id.is_empty() {
                    format!("toolu_{}", tool_calls.len())
                } else {
                    id
                };
                tool_calls.push(ToolCall::new(id, name, input));
            }
            wire::ContentBlock::Other => {}
        }
    }
    let stop_reason = message.stop_reason.as_deref().unwrap_or("end_turn");
    if stop_reason == "refusal" {
        return Err(refused(context, message.stop_details.as_ref(), &text));
    }
    let (content, text) = match tool_input {
        // An input that came as text (a proxy's; Anthropic's own is an object) is the raw answer.
        Some(Value::String(raw)) => (raw, text),
        Some(input) => (input.to_string(), text),
        None => (text, String::new()),
    };
    Ok(ChatResponse {
        content,
        text,
        finish_reason: finish_reason(stop_reason),
        usage: message.usage.as_ref().map(usage).unwrap_or_default(),
        request_id: context.request_id.clone().or(message.id),
        model: message.model,
        tool_calls,
    })
}

fn finish_reason(stop_reason: &str) -> FinishReason {
    match stop_reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Neutral usage: input counts cache writes and reads too (Anthropic reports them apart); cached
/// counts the reads, cache writes the writes (billed above plain input).
fn usage(usage: &wire::Usage) -> Usage {
    let read = usage.cache_read_input_tokens.unwrap_or(0);
    let written = usage.cache_creation_input_tokens.unwrap_or(0);
    Usage {
        input_tokens: usage.input_tokens.unwrap_or(0) + written + read,
        output_tokens: usage.output_tokens.unwrap_or(0),
        cached_tokens: read,
        cache_write_tokens: written,
        reasoning_tokens: usage
            .output_tokens_details
            .as_ref()
            .and_then(|d| d.thinking_tokens)
            .unwrap_or(0),
        cost_usd: None,
    }
}

fn refused(context: &ErrorContext, details: Option<&wire::StopDetails>, text: &str) -> Error {
    let explanation = details.and_then(|d| d.explanation.as_deref());
    let category = details.and_then(|d| d.category.as_deref());
    let mut message = match explanation {
        Some(e) if !e.is_empty() => e.to_owned(),
        _ if !text.trim().is_empty() => excerpt(text.as_bytes(), EXCERPT_CHARS),
        _ => "the model declined to answer".to_owned(),
    };
    if let Some(category) = category {
        message = format!("{message} (category {category})");
    }
    Error::Refused {
        context: context.clone(),
        message,
    }
}

/// The typed error for a non-2xx response: by Anthropic's error type when the body has one, else by
/// HTTP status.
pub(crate) fn classify_error(
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
    mut context: ErrorContext,
) -> Error {
    context.status.get_or_insert(status);
    let parsed = serde_json::from_slice::<Value>(body)
        .ok()
        .filter(Value::is_object)
        .and_then(|v| serde_json::from_value::<wire::ErrorBody>(v).ok());
    match parsed {
        Some(parsed) => {
            if context.request_id.is_none() {
                context.request_id = parsed.request_id;
            }
            typed_error(&parsed.error, Some(status), retry_after, context)
        }
        None => {
            let detail = wire::ErrorDetail {
                kind: String::new(),
                message: excerpt(body, EXCERPT_CHARS),
            };
            typed_error(&detail, Some(status), retry_after, context)
        }
    }
}

/// Maps an error type (or, failing that, an HTTP status) to the neutral error.
fn typed_error(
    error: &wire::ErrorDetail,
    status: Option<u16>,
    retry_after: Option<Duration>,
    context: ErrorContext,
) -> Error {
    let message = if error.message.is_empty() {
        match status {
            Some(s) => format!("HTTP {s} without a message"),
            None => "no message".to_owned(),
        }
    } else {
        error.message.clone()
    };
    let kind = match error.kind.as_str() {
        "" => match status {
            Some(401 | 403) => "authentication_error",
            Some(404) => "not_found_error",
            Some(429) => "rate_limit_error",
            Some(529) => "overloaded_error",
            Some(s) if s >= 500 => "api_error",
            _ => "invalid_request_error",
        },
        kind => kind,
    };
    match kind {
        "authentication_error" | "permission_error" => Error::Authentication { context, message },
        // Out of credit (a 402 `billing_error`, or a 400 saying "credit balance is too low"):
        // waiting will not help.
        "billing_error" => Error::QuotaExhausted { context, message },
        _ if message.to_ascii_lowercase().contains("credit balance") => {
            Error::QuotaExhausted { context, message }
        }
        // The model is left empty for `HttpBackend` to fill in with the one asked for.
        "not_found_error" => Error::ModelNotFound {
            context,
            model: String::new(),
        },
        "rate_limit_error" => Error::RateLimited {
            context,
            retry_after,
            message,
        },
        "overloaded_error" => Error::Overloaded {
            context,
            retry_after,
            message,
        },
        "invalid_request_error" | "request_too_large" if is_context_length(&message) => {
            Error::ContextLengthExceeded { context, message }
        }
        _ if status == Some(529) => Error::Overloaded {
            context,
            retry_after,
            message,
        },
        _ if status.is_some_and(|s| s >= 500) || kind == "api_error" || kind == "timeout_error" => {
            Error::Server { context, message }
        }
        _ => Error::BadRequest { context, message },
    }
}

/// Whether an invalid-request message says the prompt does not fit the context window.
fn is_context_length(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("prompt is too long")
        || m.contains("exceed context limit")
        || m.contains("context window")
        || m.contains("context length")
}

/// The neutral events of one streamed event.
fn stream_event(
    event: Option<&str>,
    data: &str,
    context: &ErrorContext,
) -> Result<Vec<StreamEvent>, Error> {
    if matches!(event, Some("ping")) || data.trim().is_empty() {
        return Ok(Vec::new());
    }
    let parsed: wire::Event = serde_json::from_str(data)
        .map_err(|e| malformed(context, &e.to_string(), data.as_bytes()))?;
    let events = match parsed {
        wire::Event::MessageStart { message } => {
            let mut out = Vec::with_capacity(3);
            out.extend(message.id.map(StreamEvent::ResponseId));
            out.extend(message.model.map(StreamEvent::Model));
            out.extend(message.usage.as_ref().map(|u| StreamEvent::Usage(usage(u))));
            out
        }
        wire::Event::ContentBlockStart {
            content_block: wire::StartBlock::Text { text },
            ..
        } if !text.is_empty() => vec![StreamEvent::Text(text)],
        // A call began: its input, not the text beside it, is the answer in tool mode. Its input
        // comes in deltas of the same block index.
        wire::Event::ContentBlockStart {
            index,
            content_block: wire::StartBlock::ToolUse { id, name },
        } => vec![StreamEvent::ToolCall { index, id, name }],
        wire::Event::ContentBlockDelta { index, delta } => match delta {
            wire::Delta::Text { text } => vec![StreamEvent::Text(text)],
            wire::Delta::InputJson { partial_json } => vec![StreamEvent::ToolCallInput {
                index,
                part: partial_json,
            }],
            wire::Delta::Other => Vec::new(),
        },
        wire::Event::MessageDelta { delta, usage: u } => {
            if delta.stop_reason.as_deref() == Some("refusal") {
                return Err(refused(context, delta.stop_details.as_ref(), ""));
            }
            let mut out = Vec::with_capacity(2);
            out.extend(u.as_ref().map(|u| StreamEvent::Usage(usage(u))));
            out.extend(
                delta
                    .stop_reason
                    .as_deref()
                    .map(|r| StreamEvent::Finish(finish_reason(r))),
            );
            out
        }
        wire::Event::Error { error } => {
            return Err(typed_error(&error, None, None, context.clone()));
        }
        wire::Event::ContentBlockStart { .. } | wire::Event::Other => Vec::new(),
    };
    Ok(events)
}

/// The context window of a Claude model: 100k for Claude 2.0 and Instant, 200k for the rest.
fn context_window(model: &str) -> Option<u32> {
    let name = model.strip_prefix("anthropic/").unwrap_or(model);
    if !name.starts_with("claude") {
        return None;
    }
    if name.starts_with("claude-instant") || name.starts_with("claude-2.0") {
        return Some(100_000);
    }
    Some(CONTEXT_WINDOW)
}

/// Whether a model has native structured outputs: Claude Opus 4.1, and every model from 4.5 on.
fn has_structured_outputs(model: &str) -> bool {
    let Some((family, version)) = claude_version(model) else {
        return false;
    };
    version >= (4, 5) || (family == "opus" && version >= (4, 1))
}

/// `(family, (major, minor))` of a Claude model id, old style (`claude-3-5-sonnet-20241022`) or new
/// (`claude-sonnet-4-5-20250929`, `claude-opus-4-1`, `claude-sonnet-4-0`).
fn claude_version(model: &str) -> Option<(&str, (u32, u32))> {
    let rest = model.strip_prefix("claude-")?;
    let mut family = None;
    let mut numbers = Vec::with_capacity(2);
    for token in rest.split('-') {
        if token.chars().all(|c| c.is_ascii_digit()) {
            // Dates (8 digits) end the version.
            if token.len() > 2 {
                break;
            }
            numbers.push(token.parse::<u32>().ok()?);
        } else if family.is_none() {
            family = Some(token);
        } else {
            break;
        }
    }
    let major = *numbers.first()?;
    let minor = numbers.get(1).copied().unwrap_or(0);
    Some((family?, (major, minor)))
}

/// A float sent as its shortest decimal: `0.2f32` goes out as `0.2`, not `0.20000000298023224`.
fn decimal_f64(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

fn bad_request(message: String) -> Error {
    Error::BadRequest {
        context: ErrorContext::new(PROVIDER),
        message,
    }
}

fn malformed(context: &ErrorContext, reason: &str, body: &[u8]) -> Error {
    Error::MalformedResponse {
        context: context.clone(),
        reason: reason.to_owned(),
        excerpt: excerpt(body, EXCERPT_CHARS),
    }
}
