//! The pure translations every OpenAI-format adapter shares: neutral request to body, body to neutral
//! response, error body to typed error, stream chunk to events.

use std::borrow::Cow;
use std::time::Duration;

use serde_json::Value;

use super::wire;
use crate::models::{InstructionRole, instruction_role, takes_parallel_tool_calls};
use crate::{
    ApiKey, ChatRequest, ChatResponse, Error, ErrorContext, FinishReason, OutputMode, Role,
    StreamEvent, ToolCall, ToolChoice, Usage, WireRequest, excerpt,
};

/// How one provider's flavour of the format differs.
pub struct Shape<'a> {
    /// The provider, for errors.
    pub provider: &'a str,
    /// The model when the request names none.
    pub default_model: Option<&'a str>,
    /// Send the token limit as `max_completion_tokens` (OpenAI) rather than `max_tokens`.
    pub max_completion_tokens: bool,
    /// Ask OpenRouter for usage accounting and, with a schema, parameter-honouring routing.
    pub openrouter: bool,
    /// The most stop sequences the provider takes.
    pub max_stops: Option<usize>,
    /// Extra headers (OpenRouter's attribution).
    pub headers: Vec<(&'static str, String)>,
    /// Leave the temperature out: the model rejects it ([`Capabilities::rejects_temperature`](crate::Capabilities::rejects_temperature)).
    pub drop_temperature: bool,
}

/// The path of the chat completions endpoint, under the base URL.
pub(super) const PATH: &str = "/chat/completions";

/// What the forced tool tells the model.
const TOOL_DESCRIPTION: &str =
    "Give your answer by calling this function: its arguments are the answer.";

/// Longest excerpt of a body in an error.
const EXCERPT: usize = 200;

/// The HTTP request for `request`.
pub(super) fn request(
    shape: Shape<'_>,
    request: &ChatRequest,
    stream: bool,
) -> Result<WireRequest, Error> {
    let bad = |message: &str| Error::BadRequest {
        context: ErrorContext::new(shape.provider),
        message: message.to_owned(),
    };
    let model = Some(request.model.as_str())
        .filter(|m| !m.is_empty())
        .or(shape.default_model)
        .ok_or_else(|| bad("the request names no model and the backend has no default model"))?;
    let messages = messages(request, instruction_role(model));
    if messages.is_empty() {
        return Err(bad("the request has no messages"));
    }
    if let Some(max) = shape.max_stops
        && request.stop.len() > max
    {
        return Err(bad(&format!("at most {max} stop sequences are allowed")));
    }
    let temperature = match request.temperature {
        Some(t) if !t.is_finite() => return Err(bad("the temperature is not a finite number")),
        Some(t) if shape.drop_temperature => {
            tracing::warn!(
                provider = shape.provider,
                model,
                temperature = f64::from(t),
                "temperature not sent: the model does not take one"
            );
            None
        }
        // Through its shortest text, so 0.2f32 goes out as 0.2 rather than 0.20000000298023224.
        Some(t) => Some(t.to_string().parse::<f64>().unwrap_or(f64::from(t))),
        None => None,
    };
    let mut body = wire::Request {
        model,
        messages,
        temperature,
        max_tokens: request.max_tokens.filter(|_| !shape.max_completion_tokens),
        max_completion_tokens: request.max_tokens.filter(|_| shape.max_completion_tokens),
        seed: request.seed,
        stop: (!request.stop.is_empty()).then_some(request.stop.as_slice()),
        response_format: None,
        tools: Vec::new(),
        tool_choice: None,
        parallel_tool_calls: None,
        stream: stream.then_some(true),
        stream_options: stream.then_some(wire::StreamOptions {
            include_usage: true,
        }),
        provider: None,
        usage: shape
            .openrouter
            .then_some(wire::UsageAccounting { include: true }),
    };
    if let Some(structured) = &request.structured_output {
        let name = schema_name(&structured.name);
        match structured.mode {
            OutputMode::Native => {
                body.response_format = Some(wire::ResponseFormat::JsonSchema {
                    json_schema: wire::JsonSchema {
                        name,
                        strict: structured.strict,
                        schema: (&structured.schema).into(),
                    },
                });
            }
            OutputMode::Tool => {
                body.tool_choice = Some(function_choice(name.clone()));
                body.tools.push(wire::Tool {
                    kind: "function",
                    function: wire::Function {
                        name: Cow::Owned(name),
                        description: TOOL_DESCRIPTION,
                        parameters: (&structured.schema).into(),
                        strict: structured.strict,
                    },
                });
                // One call, one answer; strict schemas do not hold for parallel calls. OpenAI's
                // o-series reject the parameter (and make one call anyway). With tools of the
                // caller's beside it, the model may call several at once.
                body.parallel_tool_calls =
                    (request.tools.is_empty() && takes_parallel_tool_calls(model)).then_some(false);
            }
        }
    }
    add_tools(&mut body, request).map_err(|m| bad(&m))?;
    // Routed only to upstream providers that honour the schema and the tools.
    if shape.openrouter && (request.structured_output.is_some() || !body.tools.is_empty()) {
        body.provider = Some(wire::ProviderPreferences {
            require_parameters: true,
        });
    }
    // Straight to bytes: the schema's text is spliced in, never copied into a `Value`.
    let body = serde_json::to_vec(&body).map_err(|e| bad(&e.to_string()))?;
    Ok(WireRequest {
        path: PATH.to_owned(),
        body,
        headers: shape.headers,
    })
}

/// The caller's tools beside any answer tool, and the tool choice: the caller's when it made one;
/// in tool mode with tools of the caller's, `required` (the answer is a call too).
fn add_tools<'a>(body: &mut wire::Request<'a>, request: &'a ChatRequest) -> Result<(), String> {
    if request.tools.is_empty() && request.tool_choice.is_none() {
        return Ok(());
    }
    crate::request::check_tools(request)?;
    body.tools
        .extend(request.tools.iter().map(|tool| wire::Tool {
            kind: "function",
            function: wire::Function {
                name: Cow::Borrowed(&tool.name),
                description: &tool.description,
                parameters: (&tool.parameters).into(),
                strict: tool.strict,
            },
        }));
    body.tool_choice = match &request.tool_choice {
        Some(ToolChoice::Auto) => Some(wire::ToolChoice::Mode("auto")),
        Some(ToolChoice::Required) => Some(wire::ToolChoice::Mode("required")),
        Some(ToolChoice::None) => Some(wire::ToolChoice::Mode("none")),
        Some(ToolChoice::Tool(name)) => Some(function_choice(name.clone())),
        None if body.tool_choice.is_some() => Some(wire::ToolChoice::Mode("required")),
        None => None,
    };
    Ok(())
}

fn function_choice(name: String) -> wire::ToolChoice {
    wire::ToolChoice::Function {
        kind: "function",
        function: wire::ToolName { name },
    }
}

/// `Authorization: Bearer <key>`.
pub(super) fn bearer(key: &ApiKey) -> Vec<(&'static str, String)> {
    vec![("authorization", format!("Bearer {}", key.expose()))]
}

/// The neutral response for a 2xx body.
pub(super) fn response(body: &[u8], context: &ErrorContext) -> Result<ChatResponse, Error> {
    let completion: wire::Completion = serde_json::from_slice(body)
        .map_err(|e| malformed(context, format!("not a chat completion ({e})"), body))?;
    if let Some(error) = completion.error.as_ref().filter(|e| !e.is_null()) {
        return Err(in_body_error(error, body, context));
    }
    let choice = completion
        .choices
        .and_then(|choices| choices.into_iter().next())
        .ok_or_else(|| malformed(context, "the completion has no choices".to_owned(), body))?;
    if let Some(error) = choice.error.as_ref().filter(|e| !e.is_null()) {
        return Err(in_body_error(error, body, context));
    }
    let message = choice.message.unwrap_or_default();
    if let Some(refusal) = message.refusal.filter(|r| !r.trim().is_empty()) {
        return Err(Error::Refused {
            context: context.clone(),
            message: refusal,
        });
    }
    let finish_reason = finish_reason(choice.finish_reason.as_deref());
    // In tool mode the first call is the answer, even when the model also wrote text beside it.
    let written = text(message.content.as_ref()).unwrap_or_default();
    let (content, written) = match message.tool_calls.as_deref().and_then(<[_]>::first) {
        Some(call) => (tool_arguments(call), written),
        None => (written, String::new()),
    };
    // Arguments that are not JSON (malformed, or cut off by the token limit) are no error: the
    // call keeps their raw text, and in tool mode the content (that text) goes to the pipeline's
    // repair, as a reply's text does.
    let tool_calls = message
        .tool_calls
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, call)| parse_call(i, call))
        .collect();
    if finish_reason == FinishReason::ContentFilter && content.trim().is_empty() {
        return Err(Error::Refused {
            context: context.clone(),
            message: crate::response::CONTENT_FILTERED.to_owned(),
        });
    }
    Ok(ChatResponse {
        content,
        text: written,
        finish_reason,
        usage: usage(completion.usage.unwrap_or_default()),
        request_id: context.request_id.clone().or(completion.id),
        model: completion.model,
        tool_calls,
    })
}

/// What one streamed chunk means.
pub(super) fn stream_event(data: &str, context: &ErrorContext) -> Result<Vec<StreamEvent>, Error> {
    let chunk: wire::Completion = serde_json::from_str(data).map_err(|e| {
        malformed(
            context,
            format!("not a chat completion chunk ({e})"),
            data.as_bytes(),
        )
    })?;
    if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
        return Err(in_body_error(error, data.as_bytes(), context));
    }
    let mut events = Vec::new();
    if let Some(choice) = chunk.choices.unwrap_or_default().into_iter().next() {
        if let Some(error) = choice.error.as_ref().filter(|e| !e.is_null()) {
            return Err(in_body_error(error, data.as_bytes(), context));
        }
        let delta = choice.delta.or(choice.message).unwrap_or_default();
        if let Some(refusal) = delta.refusal.filter(|r| !r.is_empty()) {
            return Err(Error::Refused {
                context: context.clone(),
                message: refusal,
            });
        }
        if let Some(text) = text(delta.content.as_ref()).filter(|t| !t.is_empty()) {
            events.push(StreamEvent::Text(text));
        }
        for call in delta.tool_calls.unwrap_or_default() {
            let index = call.index.unwrap_or(0);
            let (name, arguments) = call
                .function
                .map_or((None, None), |f| (f.name, f.arguments));
            if call.id.is_some() || name.is_some() {
                events.push(StreamEvent::ToolCall {
                    index,
                    id: call.id.unwrap_or_default(),
                    name: name.unwrap_or_default(),
                });
            }
            let part = match arguments {
                Some(Value::String(part)) => part,
                None | Some(Value::Null) => String::new(),
                Some(object) => object.to_string(),
            };
            // Every fragment of the first call, empty ones too: the first says a call began, so
            // text beside it is not the answer and a call without arguments answers `{}`.
            if index == 0 {
                events.push(StreamEvent::ToolInput(part));
            } else if !part.is_empty() {
                events.push(StreamEvent::ToolCallInput { index, part });
            }
        }
        if let Some(reason) = choice.finish_reason.as_deref() {
            events.extend(chunk.model.clone().map(StreamEvent::Model));
            events.extend(chunk.id.clone().map(StreamEvent::ResponseId));
            events.push(StreamEvent::Finish(finish_reason(Some(reason))));
        }
    }
    if let Some(u) = chunk.usage {
        events.push(StreamEvent::Usage(usage(u)));
    }
    Ok(events)
}

/// The typed error for a non-2xx response.
pub(super) fn classify(
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
    context: ErrorContext,
) -> Error {
    let info = match serde_json::from_slice::<Value>(body) {
        Ok(value) => ErrorInfo::from_json(&value),
        Err(_) => ErrorInfo::not_json(body),
    };
    classify_info(status, retry_after, info, body, context)
}

/// What an error body says.
struct ErrorInfo {
    message: String,
    /// `error.type` and `error.code`, lowercase, space-separated (for keyword checks).
    kinds: String,
    /// `error.code` when it is a number (OpenRouter puts the HTTP status there).
    numeric_code: Option<u16>,
    /// The body was JSON: the provider itself answered (not a proxy's or a wrong URL's page).
    json: bool,
}

impl ErrorInfo {
    fn from_json(value: &Value) -> Self {
        let error = value.get("error").unwrap_or(value);
        let field = |name: &str| error.get(name).filter(|v| !v.is_null());
        let mut message = match error {
            Value::String(s) => s.clone(),
            _ => field("message")
                .or_else(|| field("detail"))
                .map(|m| match m {
                    Value::String(s) => s.clone(),
                    other => excerpt(other.to_string().as_bytes(), EXCERPT),
                })
                .unwrap_or_else(|| excerpt(value.to_string().as_bytes(), EXCERPT)),
        };
        // OpenRouter wraps upstream failures; the upstream's words are the useful part.
        if let Some(raw) = error.pointer("/metadata/raw").and_then(Value::as_str) {
            message = format!("{message} ({})", excerpt(raw.as_bytes(), EXCERPT));
        }
        let code = field("code");
        let mut kinds = String::new();
        for part in [field("type"), code, field("status")].into_iter().flatten() {
            let text = match part {
                Value::String(s) => s.to_lowercase(),
                other => other.to_string(),
            };
            kinds.push_str(&text);
            kinds.push(' ');
        }
        let numeric_code = code.and_then(|c| match c {
            Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
            Value::String(s) => s.parse().ok(),
            _ => None,
        });
        Self {
            message,
            kinds,
            numeric_code,
            json: true,
        }
    }

    fn not_json(body: &[u8]) -> Self {
        let message = if body.iter().all(u8::is_ascii_whitespace) {
            "the error response has an empty body".to_owned()
        } else {
            format!(
                "the error response is not JSON: {:?}",
                excerpt(body, EXCERPT)
            )
        };
        Self {
            message,
            kinds: String::new(),
            numeric_code: None,
            json: false,
        }
    }

    fn mentions(&self, words: &[&str]) -> bool {
        let message = self.message.to_lowercase();
        words
            .iter()
            .any(|w| self.kinds.contains(w) || message.contains(w))
    }
}

fn classify_info(
    status: u16,
    retry_after: Option<Duration>,
    info: ErrorInfo,
    body: &[u8],
    context: ErrorContext,
) -> Error {
    let message = info.message.clone();
    let context_length = [
        "context_length_exceeded",
        "exceed_context_size",
        "maximum context length",
        "context length",
        "context window",
    ];
    match status {
        // OpenRouter's moderation: "your input was flagged" (with `metadata.reasons`).
        403 if info.mentions(&["moderation"]) => Error::Refused { context, message },
        401 | 403 => Error::Authentication { context, message },
        // OpenRouter's "insufficient credits".
        402 => Error::QuotaExhausted {
            context,
            message: format!("payment required: {message}"),
        },
        404 if info.json => Error::ModelNotFound {
            context,
            model: String::new(),
        },
        404 => Error::MalformedResponse {
            context,
            reason: "HTTP 404 with a body that is not JSON; is the base URL right?".to_owned(),
            excerpt: excerpt(body, EXCERPT),
        },
        // Out of credit is not a rate limit: waiting will not help, so it must not be retried.
        429 if info.mentions(&["insufficient_quota"]) => Error::QuotaExhausted { context, message },
        429 => Error::RateLimited {
            context,
            retry_after,
            message,
        },
        503 | 529 => Error::Overloaded {
            context,
            retry_after,
            message,
        },
        // OpenRouter's "your request timed out": the server gave up waiting, sending again may pass.
        408 => Error::Server { context, message },
        400..=499 if info.mentions(&context_length) => {
            Error::ContextLengthExceeded { context, message }
        }
        413 => Error::ContextLengthExceeded { context, message },
        400..=499 if info.mentions(&["model_not_found", "not a valid model"]) => {
            Error::ModelNotFound {
                context,
                model: String::new(),
            }
        }
        400..=499 if info.mentions(&["content_filter", "content_policy"]) => {
            Error::Refused { context, message }
        }
        400..=499 => Error::BadRequest { context, message },
        500..=599 if info.mentions(&["overloaded"]) => Error::Overloaded {
            context,
            retry_after,
            message,
        },
        500..=599 => Error::Server { context, message },
        _ => Error::MalformedResponse {
            context,
            reason: format!("unexpected HTTP status {status}"),
            excerpt: excerpt(body, EXCERPT),
        },
    }
}

/// An error reported inside a 2xx body or stream: classified by its own code (the HTTP status
/// OpenRouter would have sent), else by its type as OpenAI names them (`invalid_request_error` as a
/// 400, ...), else as a 502.
fn in_body_error(error: &Value, body: &[u8], context: &ErrorContext) -> Error {
    let wrapped = serde_json::json!({ "error": error });
    let info = ErrorInfo::from_json(&wrapped);
    let by_type = [
        ("insufficient_quota", 429),
        ("rate_limit", 429),
        ("invalid_api_key", 401),
        ("authentication", 401),
        ("invalid_request_error", 400),
    ]
    .into_iter()
    .find_map(|(kind, status)| info.kinds.contains(kind).then_some(status));
    let status = info
        .numeric_code
        .filter(|c| (400..=599).contains(c))
        .or(by_type)
        .unwrap_or(502);
    classify_info(
        status,
        None,
        info,
        body,
        context.clone().with_status(status),
    )
}

fn malformed(context: &ErrorContext, reason: String, body: &[u8]) -> Error {
    Error::MalformedResponse {
        context: context.clone(),
        reason,
        excerpt: excerpt(body, EXCERPT),
    }
}

/// The conversation with the instructions where the model takes them: a `system` or `developer`
/// message first, or (o1-mini, o1-preview) delimited at the top of the opening user message (a user
/// message of their own when the conversation opens with the model). System messages in the
/// conversation go the same way, as messages of their own.
fn messages(request: &ChatRequest, instructions: InstructionRole) -> Vec<wire::Message<'_>> {
    let system_role = match instructions {
        InstructionRole::Developer => "developer",
        _ => "system",
    };
    let fold = instructions == InstructionRole::User;
    let mut messages: Vec<wire::Message<'_>> = Vec::with_capacity(request.messages.len() + 1);
    let text = |role, content| wire::Message {
        role,
        content: Some(content),
        tool_calls: Vec::new(),
        tool_call_id: None,
    };
    messages.extend(request.messages.iter().map(|m| {
        match m.role {
            Role::System if fold => text("user", Cow::Owned(delimited(&m.content))),
            Role::System => text(system_role, Cow::Borrowed(&m.content)),
            Role::User => text("user", Cow::Borrowed(&m.content)),
            Role::Assistant if !m.tool_calls.is_empty() => wire::Message {
                role: "assistant",
                content: (!m.content.is_empty()).then_some(Cow::Borrowed(&m.content)),
                tool_calls: m
                    .tool_calls
                    .iter()
                    .map(|call| wire::CallOut {
                        id: &call.id,
                        kind: "function",
                        function: wire::FunctionOut {
                            name: &call.name,
                            arguments: call.arguments_text(),
                        },
                    })
                    .collect(),
                tool_call_id: None,
            },
            Role::Assistant => text("assistant", Cow::Borrowed(&m.content)),
            Role::Tool => match &m.tool_call_id {
                Some(id) => wire::Message {
                    tool_call_id: Some(id),
                    ..text("tool", Cow::Borrowed(&m.content))
                },
                // A chat-completions tool message must answer a `tool_call_id`; a result without one
                // goes back as what it is to the model, text from outside.
                None => text("user", Cow::Borrowed(&m.content)),
            },
        }
    }));
    let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) else {
        return messages;
    };
    // Instructions always come first: in a conversation that opens with the model, on their own.
    match messages.first_mut().filter(|m| fold && m.role == "user") {
        Some(first) => {
            let content = first.content.as_deref().unwrap_or_default();
            first.content = Some(Cow::Owned(format!("{}\n\n{content}", delimited(system))));
        }
        None => messages.insert(
            0,
            text(
                if fold { "user" } else { system_role },
                if fold {
                    Cow::Owned(delimited(system))
                } else {
                    Cow::Borrowed(system)
                },
            ),
        ),
    }
    messages
}

/// Instructions inside a user message, marked off from what the user says.
fn delimited(instructions: &str) -> String {
    format!("<instructions>\n{instructions}\n</instructions>")
}

/// A schema or tool name as the API accepts it: `[A-Za-z0-9_-]{1,64}`.
fn schema_name(name: &str) -> String {
    crate::request::wire_name(name)
}

/// The text of a message's content: a string, or the `text` of each part of an array.
fn text(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
        ),
        _ => None,
    }
}

/// A call's arguments: `{}` when they are missing or blank (OpenRouter relaying Claude leaves them
/// out for a call without arguments).
fn tool_arguments(call: &wire::ToolCall) -> String {
    match call.function.as_ref().and_then(|f| f.arguments.as_ref()) {
        Some(Value::String(text)) if !text.trim().is_empty() => text.clone(),
        None | Some(Value::Null | Value::String(_)) => "{}".to_owned(),
        Some(object) => object.to_string(),
    }
}

/// The neutral call for a wire call: its arguments parsed (`{}` when missing or blank), or their
/// raw text as a JSON string when they are not JSON. A call without an id (some compatible servers)
/// gets `call_<position>`.
fn parse_call(position: usize, call: &wire::ToolCall) -> ToolCall {
    let id = call
        .id
        .clone()
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| format!("call_{position}"));
    let name = call
        .function
        .as_ref()
        .and_then(|f| f.name.clone())
        .unwrap_or_default();
    crate::response::lenient_call(id, name, tool_arguments(call))
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        None | Some("stop" | "end_turn" | "eos") => FinishReason::Stop,
        Some("length" | "max_tokens") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

fn usage(usage: wire::Usage) -> Usage {
    Usage {
        input_tokens: usage.prompt_tokens.unwrap_or(0),
        output_tokens: usage.completion_tokens.unwrap_or(0),
        cached_tokens: usage
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0),
        reasoning_tokens: usage
            .completion_tokens_details
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0),
        cost_usd: usage.cost.filter(|c| c.is_finite()),
        ..Usage::default()
    }
}
