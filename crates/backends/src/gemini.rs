//! Google Gemini generateContent (`POST /v1beta/models/{model}:generateContent`): the
//! [`GeminiAdapter`] and the [`Gemini`] backend.
//!
//! What each request sends:
//!
//! - Always `contents` with roles `user` and `model` (tool results without a call id as `user` text), and the system
//!   prompt as `systemInstruction` (with the text of any [`Role::System`] messages appended).
//!   `generationConfig` carries `temperature`, `maxOutputTokens`, `seed` (an int32: larger seeds are
//!   reduced modulo 2^31) and `stopSequences` when set.
//! - [`OutputMode::Native`]: `generationConfig.responseMimeType: "application/json"` plus the schema in
//!   `responseSchema` (the OpenAPI subset, [`SchemaDialect::Gemini`]) or, with
//!   [`SchemaField::ResponseJsonSchema`] on a model that has it, `responseJsonSchema` (JSON Schema,
//!   [`SchemaDialect::JsonSchema`]).
//! - [`OutputMode::Tool`]: one function declaration `{name, description, parameters}` (or
//!   `parametersJsonSchema`, as above) forced with `toolConfig.functionCallingConfig: {mode: "ANY",
//!   allowedFunctionNames: [name]}`; the answer is the `functionCall.args`, serialized to JSON text.
//! - No structured output (prompted): none of the above; the schema is in the system prompt already.
//! - Native tools ([`ChatRequest::tools`]): function declarations beside any answer function (their
//!   parameters in `parameters` or `parametersJsonSchema`, as above); [`ChatRequest::tool_choice`]
//!   as `functionCallingConfig.mode` `AUTO`, `ANY`, `NONE`, or `ANY` with `allowedFunctionNames`
//!   (tool mode with tools of the caller's: `ANY`). An assistant message's calls go as
//!   `functionCall` parts; tool results as `functionResponse` parts (named after the call they
//!   answer, a JSON object as it is, anything else under `result`), one turn's together.
//!
//! The key goes in the `x-goog-api-key` header, never in the query string.
//!
//! Responses: the first candidate's first function call's arguments, else its text parts joined
//! (thought summaries skipped); every function call in [`ChatResponse::tool_calls`], with a stable
//! made-up id (Gemini sends none). `finishReason` `STOP` maps to [`FinishReason::Stop`], or
//! [`FinishReason::ToolCalls`] beside function calls (Gemini reports no separate reason for them),
//! and `MAX_TOKENS` to [`FinishReason::Length`]. A
//! withheld answer is an error, not a finish reason: `SAFETY`, `RECITATION`, `BLOCKLIST`,
//! `PROHIBITED_CONTENT`, `SPII`, `LANGUAGE`, `MODEL_ARMOR` and the image filters, like a prompt
//! blocked by `promptFeedback.blockReason`, become [`Error::Refused`] with the candidate's
//! `finishMessage` (or the `blockReasonMessage`), sent once (Gemini removes the candidate's content,
//! so there is nothing to validate or repair). Other reasons (`MALFORMED_FUNCTION_CALL`, `OTHER`,
//! ...) are [`FinishReason::Other`], so the pipeline's validation retries them.

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
pub const PROVIDER: &str = "gemini";

/// The Gemini API base URL; requests go to `{base}/models/{model}:generateContent`.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The input context window of Gemini 2.x and 2.5 models (and 1.5 Flash) in tokens.
pub const CONTEXT_WINDOW: u32 = 1_048_576;

/// How many characters of a body go into a [`Error::MalformedResponse`].
const EXCERPT_CHARS: usize = 200;

/// The finish reasons that mean the answer was withheld by a filter.
/// `LANGUAGE` (a language the model does not support) and `MODEL_ARMOR` (Vertex's Model Armor)
/// withhold it as surely: the same request gets the same answer.
const BLOCKED: [&str; 11] = [
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "LANGUAGE",
    "MODEL_ARMOR",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
    "IMAGE_OTHER",
];

/// Gemini generateContent over HTTP: `Gemini::new(key)`, then `with_base_url`, `with_config`, ... from
/// [`HttpBackend`], and [`Gemini::with_schema_field`].
///
/// ```
/// use claij_backends::{ApiKey, Backend, SchemaDialect, gemini::{Gemini, SchemaField}};
///
/// let backend = Gemini::new(ApiKey::new("AIza..."));
/// assert_eq!(backend.provider(), "gemini");
/// let capabilities = backend.capabilities("gemini-2.5-flash");
/// assert_eq!(capabilities.schema_dialect, Some(SchemaDialect::Gemini));
/// assert_eq!(capabilities.context_window, Some(1_048_576));
///
/// let full = Gemini::new(ApiKey::new("AIza...")).with_schema_field(SchemaField::ResponseJsonSchema);
/// assert_eq!(full.capabilities("gemini-2.5-pro").schema_dialect, Some(SchemaDialect::JsonSchema));
/// ```
pub type Gemini = HttpBackend<GeminiAdapter>;

/// The Gemini generateContent wire format: pure translations, no IO (see the [module docs](self)).
///
/// ```
/// use claij_backends::gemini::{GeminiAdapter, SchemaField};
/// use claij_backends::{Adapter, ChatRequest, Message, SchemaDialect};
///
/// let request = ChatRequest::new("gemini-2.5-flash").message(Message::user("Hi"));
/// let wire = GeminiAdapter::default().transform_request(&request, true)?;
/// assert_eq!(wire.path, "/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
///
/// let json_schema = GeminiAdapter::default().with_schema_field(SchemaField::ResponseJsonSchema);
/// let dialect = json_schema.capabilities("gemini-2.5-flash").schema_dialect;
/// assert_eq!(dialect, Some(SchemaDialect::JsonSchema));
/// # Ok::<(), claij_backends::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GeminiAdapter {
    schema_field: SchemaField,
}

/// Which fields carry a structured-output schema, and so which dialect the caller compiles to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum SchemaField {
    /// `responseSchema` and function `parameters`: Gemini's OpenAPI 3.0 subset
    /// ([`SchemaDialect::Gemini`]); every Gemini model takes it.
    #[default]
    ResponseSchema,
    /// `responseJsonSchema` and function `parametersJsonSchema`: JSON Schema
    /// ([`SchemaDialect::JsonSchema`]), on Gemini 2.5 and later; older models keep `responseSchema`.
    ResponseJsonSchema,
}

impl GeminiAdapter {
    /// The same adapter sending schemas in other fields.
    #[must_use]
    pub fn with_schema_field(mut self, field: SchemaField) -> Self {
        self.schema_field = field;
        self
    }

    /// The fields this adapter asks to carry schemas (a model may not have them: see
    /// [`GeminiAdapter::capabilities`](Adapter::capabilities)).
    pub fn schema_field(&self) -> SchemaField {
        self.schema_field
    }

    /// The schema dialect used for `model`.
    fn dialect(&self, model: &str) -> SchemaDialect {
        match self.schema_field {
            SchemaField::ResponseJsonSchema if has_json_schema(model) => SchemaDialect::JsonSchema,
            _ => SchemaDialect::Gemini,
        }
    }
}

impl HttpBackend<GeminiAdapter> {
    /// Gemini at [`DEFAULT_BASE_URL`] with `key` (sent as `x-goog-api-key`, never in the URL).
    pub fn new(key: ApiKey) -> Self {
        HttpBackend::from_adapter(GeminiAdapter::default(), HttpConfig::new(DEFAULT_BASE_URL))
            .with_key(key)
    }

    /// The same backend sending schemas in other fields (see [`SchemaField`]).
    #[must_use]
    pub fn with_schema_field(mut self, field: SchemaField) -> Self {
        self.adapter_mut().schema_field = field;
        self
    }
}

impl Adapter for GeminiAdapter {
    fn provider(&self) -> &str {
        PROVIDER
    }

    /// Streaming everywhere; tools and native structured output, in the dialect of [`SchemaField`],
    /// for Gemini models and tuned models (not Gemma, which the API serves without either); the
    /// context window from the model name (1M tokens; 2M for Gemini 1.5 Pro).
    fn capabilities(&self, model: &str) -> Capabilities {
        let mut capabilities = Capabilities::prompted().with_streaming(true);
        let name = model.strip_prefix("models/").unwrap_or(model);
        if name.starts_with("gemini-") || name.starts_with("tunedModels/") {
            capabilities = capabilities
                .with_tools(true)
                .with_schema_dialect(self.dialect(model));
        }
        if let Some(window) = context_window(model) {
            capabilities = capabilities.with_context_window(window);
        }
        capabilities
    }

    fn transform_request(&self, request: &ChatRequest, stream: bool) -> Result<WireRequest, Error> {
        let model = model_path(&request.model)?;
        let body = self.body(request)?;
        let body = serde_json::to_vec(&body).map_err(|e| bad_request(e.to_string()))?;
        let path = if stream {
            format!("/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("/{model}:generateContent")
        };
        Ok(WireRequest {
            path,
            body,
            headers: Vec::new(),
        })
    }

    fn transform_response(
        &self,
        body: &[u8],
        context: &ErrorContext,
    ) -> Result<ChatResponse, Error> {
        let parsed: wire::Response =
            serde_json::from_slice(body).map_err(|e| malformed(context, &e.to_string(), body))?;
        response(parsed, context, body)
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
        vec![("x-goog-api-key", key.expose().to_owned())]
    }

    fn stream_event(
        &self,
        _event: Option<&str>,
        data: &str,
        context: &ErrorContext,
    ) -> Result<Vec<StreamEvent>, Error> {
        stream_event(data, context)
    }
}

impl GeminiAdapter {
    fn body<'a>(&self, request: &'a ChatRequest) -> Result<wire::Request<'a>, Error> {
        if !request.messages.iter().any(|m| m.role != Role::System) {
            return Err(bad_request(
                "the request has no user or model messages".to_owned(),
            ));
        }
        if request.temperature.is_some_and(|t| !t.is_finite()) {
            return Err(bad_request(
                "the temperature is not a finite number".to_owned(),
            ));
        }
        let mut body = wire::Request {
            system_instruction: system_instruction(request),
            contents: contents(request)?,
            tools: Vec::new(),
            tool_config: None,
            generation_config: wire::GenerationConfig {
                temperature: request.temperature.map(decimal_f64),
                max_output_tokens: request.max_tokens,
                seed: request.seed.map(int32_seed),
                stop_sequences: &request.stop,
                ..wire::GenerationConfig::default()
            },
        };
        let json_schema = self.dialect(&request.model) == SchemaDialect::JsonSchema;
        let Some(structured) = &request.structured_output else {
            add_tools(&mut body, request, json_schema)?;
            return Ok(body);
        };
        let schema = &structured.schema;
        match structured.mode {
            OutputMode::Native => {
                let config = &mut body.generation_config;
                config.response_mime_type = Some("application/json");
                if json_schema {
                    config.response_json_schema = Some(schema.into());
                } else {
                    config.response_schema = Some(schema.into());
                }
            }
            OutputMode::Tool => {
                check_function_name(&structured.name)?;
                body.tools.push(wire::Tool {
                    function_declarations: vec![wire::FunctionDeclaration {
                        name: &structured.name,
                        description: function_description(schema),
                        parameters: (!json_schema).then_some(schema.into()),
                        parameters_json_schema: json_schema.then_some(schema.into()),
                    }],
                });
                body.tool_config = Some(wire::ToolConfig {
                    function_calling_config: wire::FunctionCallingConfig {
                        mode: "ANY",
                        allowed_function_names: vec![&structured.name],
                    },
                });
            }
        }
        add_tools(&mut body, request, json_schema)?;
        Ok(body)
    }
}

/// The caller's tools as function declarations beside any answer function (in one tool), and the
/// calling mode: the caller's choice when it made one (`AUTO`, `ANY`, `NONE`, or `ANY` allowing
/// one function); in tool mode with tools of the caller's, `ANY` of them all.
fn add_tools<'a>(
    body: &mut wire::Request<'a>,
    request: &'a ChatRequest,
    json_schema: bool,
) -> Result<(), Error> {
    if request.tools.is_empty() && request.tool_choice.is_none() {
        return Ok(());
    }
    crate::request::check_tools(request).map_err(bad_request)?;
    for tool in &request.tools {
        check_function_name(&tool.name)?;
    }
    let declarations = request.tools.iter().map(|tool| wire::FunctionDeclaration {
        name: &tool.name,
        description: &tool.description,
        parameters: (!json_schema).then_some((&tool.parameters).into()),
        parameters_json_schema: json_schema.then_some((&tool.parameters).into()),
    });
    match body.tools.first_mut() {
        Some(tool) => tool.function_declarations.extend(declarations),
        None if !request.tools.is_empty() => body.tools.push(wire::Tool {
            function_declarations: declarations.collect(),
        }),
        None => {}
    }
    let (mode, allowed) = match &request.tool_choice {
        Some(ToolChoice::Auto) => ("AUTO", Vec::new()),
        Some(ToolChoice::Required) => ("ANY", Vec::new()),
        Some(ToolChoice::None) => ("NONE", Vec::new()),
        Some(ToolChoice::Tool(name)) => ("ANY", vec![name.as_str()]),
        None if body.tool_config.is_some() => ("ANY", Vec::new()),
        None => return Ok(()),
    };
    body.tool_config = Some(wire::ToolConfig {
        function_calling_config: wire::FunctionCallingConfig {
            mode,
            allowed_function_names: allowed,
        },
    });
    Ok(())
}

/// `models/{id}` for a bare id, or the name as given when it already is a resource name
/// (`models/...`, `tunedModels/...`). Anything that could leave the path segment is refused.
fn model_path(model: &str) -> Result<String, Error> {
    let (prefix, id) = match model.split_once('/') {
        Some(("models", id)) => ("models", id),
        Some(("tunedModels", id)) => ("tunedModels", id),
        Some(_) => ("", ""),
        None => ("models", model),
    };
    let ok = !id.is_empty()
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(format!("{prefix}/{id}"))
    } else {
        Err(bad_request(format!(
            "model `{model}` is not a Gemini model name \
             (letters, digits, `-`, `_`, `.`, optionally after `models/`)"
        )))
    }
}

/// The system instruction: the request's system prompt, then the text of any system messages.
fn system_instruction(request: &ChatRequest) -> Option<wire::Content<'_>> {
    let parts: Vec<wire::Part<'_>> = request
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
        .map(|text| wire::Part::Text { text })
        .collect();
    (!parts.is_empty()).then_some(wire::Content { role: None, parts })
}

/// The conversation without system messages: a model turn's calls as `functionCall` parts after
/// its text; tool results as `functionResponse` parts of a user turn (the results of one turn's
/// calls together), named after the call they answer (Gemini matches them by name and order, so
/// the made-up ids are not sent); a result without a call id as user text.
///
/// # Errors
///
/// [`Error::BadRequest`] for a result whose call id no earlier model turn made.
fn contents(request: &ChatRequest) -> Result<Vec<wire::Content<'_>>, Error> {
    let mut out: Vec<wire::Content<'_>> = Vec::with_capacity(request.messages.len());
    for (i, m) in request.messages.iter().enumerate() {
        let (role, parts) = match (m.role, &m.tool_call_id) {
            (Role::System, _) => continue,
            (Role::Tool, Some(id)) => {
                let name = request.messages[..i]
                    .iter()
                    .rev()
                    .flat_map(|earlier| &earlier.tool_calls)
                    .find(|call| &call.id == id)
                    .map(|call| call.name.as_str())
                    .ok_or_else(|| {
                        bad_request(format!(
                            "message {i}: the tool result for `{id}` answers no call of an earlier message"
                        ))
                    })?;
                let part = wire::Part::FunctionResponse {
                    function_response: wire::ResultOut {
                        name,
                        response: result_object(&m.content),
                    },
                };
                if let Some(last) = out.last_mut()
                    && last.role == Some("user")
                    && matches!(last.parts.last(), Some(wire::Part::FunctionResponse { .. }))
                {
                    last.parts.push(part);
                    continue;
                }
                ("user", vec![part])
            }
            (Role::User | Role::Tool, _) => ("user", vec![wire::Part::Text { text: &m.content }]),
            (Role::Assistant, _) => {
                let text = (!m.content.is_empty() || m.tool_calls.is_empty())
                    .then_some(wire::Part::Text { text: &m.content });
                let calls = m.tool_calls.iter().map(|call| wire::Part::FunctionCall {
                    function_call: wire::CallOut {
                        name: &call.name,
                        args: call.arguments_object(),
                    },
                });
                ("model", text.into_iter().chain(calls).collect())
            }
        };
        out.push(wire::Content {
            role: Some(role),
            parts,
        });
    }
    Ok(out)
}

/// A tool result as the object Gemini takes: a JSON object as it is, anything else (other JSON,
/// plain text) under `result`.
fn result_object(content: &str) -> Value {
    match serde_json::from_str::<Value>(content) {
        Ok(object @ Value::Object(_)) => object,
        Ok(other) => serde_json::json!({ "result": other }),
        Err(_) => serde_json::json!({ "result": content }),
    }
}

/// The candidate's function calls. Gemini's generateContent gives them no id, so each gets a
/// stable one: `call_<position>_<hash of name and arguments>`, the same for the same reply.
fn function_calls(candidate: &wire::Candidate) -> Vec<(u32, ToolCall)> {
    let parts = candidate.content.as_ref().map_or(&[][..], |c| &c.parts[..]);
    (0u32..)
        .zip(parts.iter().filter_map(|p| p.function_call.as_ref()))
        .map(|(position, call)| {
            let name = call.name.clone().unwrap_or_default();
            let arguments = match &call.args {
                Some(args) if !args.is_null() => args.clone(),
                _ => Value::Object(serde_json::Map::new()),
            };
            let id = call
                .id
                .clone()
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| {
                    format!(
                        "call_{position}_{:08x}",
                        fnv1a(&format!("{name}{arguments}")) as u32
                    )
                });
            (position, ToolCall::new(id, name, arguments))
        })
        .collect()
}

/// FNV-1a: a small stable hash (std's is randomly seeded per process).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The function's description: the schema's own, or a sentence saying the arguments are the answer.
fn function_description(schema: &Value) -> &str {
    schema
        .get("description")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .unwrap_or("Give your final answer as this function's arguments.")
}

/// Gemini function names: a letter or `_` first, then letters, digits, `_`, `.`, `-`; at most 64.
fn check_function_name(name: &str) -> Result<(), Error> {
    let ok = name.len() <= 64
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(bad_request(format!(
            "function name `{name}` must start with a letter or `_` \
             and have at most 64 letters, digits, `_`, `.` or `-`"
        )))
    }
}

/// Gemini's seed is an int32: larger seeds are reduced modulo 2^31, so each still maps to one seed.
fn int32_seed(seed: u64) -> i32 {
    i32::try_from(seed % (1 << 31)).unwrap_or(i32::MAX)
}

fn response(
    parsed: wire::Response,
    context: &ErrorContext,
    body: &[u8],
) -> Result<ChatResponse, Error> {
    let usage = parsed
        .usage_metadata
        .as_ref()
        .map(usage)
        .unwrap_or_default();
    let Some(candidate) = parsed.candidates.into_iter().next() else {
        if let Some(refusal) = blocked_prompt(parsed.prompt_feedback.as_ref(), context) {
            return Err(refusal);
        }
        // Some proxies answer 200 with an error body.
        if let Some(error) = &parsed.error {
            return Err(typed_error(error, None, None, context.clone()));
        }
        return Err(malformed(context, "no candidates", body));
    };
    let finish = candidate.finish_reason.as_deref().unwrap_or("STOP");
    if BLOCKED.contains(&finish) {
        return Err(blocked_candidate(finish, &candidate, context));
    }
    let tool_calls: Vec<ToolCall> = function_calls(&candidate)
        .into_iter()
        .map(|(_, call)| call)
        .collect();
    let text = if tool_calls.is_empty() {
        String::new()
    } else {
        text_parts(&candidate)
    };
    Ok(ChatResponse {
        content: candidate_text(&candidate),
        text,
        finish_reason: call_finish(finish_reason(finish), !tool_calls.is_empty()),
        usage,
        request_id: context.request_id.clone().or(parsed.response_id),
        model: parsed.model_version,
        tool_calls,
    })
}

/// The candidate's answer: its first function call's arguments, else its text parts (not thoughts)
/// joined.
fn candidate_text(candidate: &wire::Candidate) -> String {
    let parts = candidate.content.as_ref().map_or(&[][..], |c| &c.parts[..]);
    if let Some(call) = parts.iter().find_map(|p| p.function_call.as_ref()) {
        return match &call.args {
            // Arguments that came as text (a proxy's; Gemini's own are an object) are the raw answer.
            Some(Value::String(raw)) => raw.clone(),
            Some(args) if !args.is_null() => args.to_string(),
            _ => "{}".to_owned(),
        };
    }
    text_parts(candidate)
}

/// The candidate's text parts (not thoughts) joined.
fn text_parts(candidate: &wire::Candidate) -> String {
    let parts = candidate.content.as_ref().map_or(&[][..], |c| &c.parts[..]);
    parts
        .iter()
        .filter(|p| !p.thought)
        .filter_map(|p| p.text.as_deref())
        .collect()
}

/// Gemini reports `STOP` when the model stopped to call functions; the neutral reason says so.
fn call_finish(reason: FinishReason, has_calls: bool) -> FinishReason {
    match reason {
        FinishReason::Stop if has_calls => FinishReason::ToolCalls,
        other => other,
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Neutral usage: input counts tool-use prompt tokens too, output counts thoughts (reported apart).
fn usage(usage: &wire::UsageMetadata) -> Usage {
    let thoughts = usage.thoughts_token_count.unwrap_or(0);
    Usage {
        input_tokens: usage.prompt_token_count.unwrap_or(0)
            + usage.tool_use_prompt_token_count.unwrap_or(0),
        output_tokens: usage.candidates_token_count.unwrap_or(0) + thoughts,
        cached_tokens: usage.cached_content_token_count.unwrap_or(0),
        reasoning_tokens: thoughts,
        cost_usd: None,
        ..Usage::default()
    }
}

fn blocked_prompt(
    feedback: Option<&wire::PromptFeedback>,
    context: &ErrorContext,
) -> Option<Error> {
    let feedback = feedback?;
    let reason = feedback.block_reason.as_deref()?;
    let mut message = format!("prompt blocked: {reason}");
    if let Some(detail) = feedback
        .block_reason_message
        .as_deref()
        .filter(|m| !m.is_empty())
    {
        message = format!("{message}: {detail}");
    }
    Some(Error::Refused {
        context: context.clone(),
        message,
    })
}

fn blocked_candidate(reason: &str, candidate: &wire::Candidate, context: &ErrorContext) -> Error {
    let mut message = format!("finish reason {reason}");
    let categories: Vec<&str> = candidate
        .safety_ratings
        .iter()
        .filter(|r| r.blocked || matches!(r.probability.as_deref(), Some("HIGH")))
        .filter_map(|r| r.category.as_deref())
        .collect();
    if !categories.is_empty() {
        message = format!("{message} ({})", categories.join(", "));
    }
    if let Some(detail) = candidate
        .finish_message
        .as_deref()
        .filter(|m| !m.is_empty())
    {
        message = format!("{message}: {detail}");
    }
    Error::Refused {
        context: context.clone(),
        message,
    }
}

/// The typed error for a non-2xx response: by the `google.rpc` status name when the body has one, else
/// by HTTP status. A `RetryInfo` delay stands in for a missing `Retry-After`.
pub(crate) fn classify_error(
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
    mut context: ErrorContext,
) -> Error {
    context.status.get_or_insert(status);
    let value: Option<Value> = serde_json::from_slice(body).ok();
    // The non-SSE streaming endpoint wraps everything, errors too, in a JSON array.
    let value = match value {
        Some(Value::Array(items)) => items.into_iter().next(),
        other => other,
    };
    let parsed = value
        .filter(Value::is_object)
        .and_then(|v| serde_json::from_value::<wire::ErrorBody>(v).ok())
        .map_or_else(
            || wire::Status {
                message: excerpt(body, EXCERPT_CHARS),
                ..wire::Status::default()
            },
            |b| b.error,
        );
    typed_error(&parsed, Some(status), retry_after, context)
}

fn typed_error(
    error: &wire::Status,
    status: Option<u16>,
    retry_after: Option<Duration>,
    context: ErrorContext,
) -> Error {
    let message = if error.message.is_empty() {
        format!(
            "HTTP {} without a message",
            status.or(error.code).unwrap_or(0)
        )
    } else {
        error.message.clone()
    };
    let retry_after = retry_after.or_else(|| {
        error
            .details
            .iter()
            .find_map(|d| d.retry_delay.as_deref().and_then(parse_delay))
    });
    let key_rejected = error.details.iter().any(|d| {
        d.reason
            .as_deref()
            .is_some_and(|r| r.starts_with("API_KEY_"))
    });
    let status = status.or(error.code);
    let kind = match error.status.as_str() {
        "" => match status {
            Some(401 | 403) => "UNAUTHENTICATED",
            Some(404) => "NOT_FOUND",
            Some(429) => "RESOURCE_EXHAUSTED",
            Some(503) => "UNAVAILABLE",
            Some(s) if s >= 500 => "INTERNAL",
            _ => "INVALID_ARGUMENT",
        },
        kind => kind,
    };
    match kind {
        _ if key_rejected => Error::Authentication { context, message },
        "UNAUTHENTICATED" | "PERMISSION_DENIED" => Error::Authentication { context, message },
        // The model is left empty for `HttpBackend` to fill in with the one asked for.
        "NOT_FOUND" => Error::ModelNotFound {
            context,
            model: String::new(),
        },
        "RESOURCE_EXHAUSTED" if is_quota_exhausted(error) => {
            Error::QuotaExhausted { context, message }
        }
        "RESOURCE_EXHAUSTED" => Error::RateLimited {
            context,
            retry_after,
            message,
        },
        "UNAVAILABLE" => Error::Overloaded {
            context,
            retry_after,
            message,
        },
        "INVALID_ARGUMENT" if is_context_length(&message) => {
            Error::ContextLengthExceeded { context, message }
        }
        _ if status.is_some_and(|s| s >= 500) => Error::Server { context, message },
        "INTERNAL" | "DEADLINE_EXCEEDED" | "UNKNOWN" | "DATA_LOSS" => {
            Error::Server { context, message }
        }
        _ => Error::BadRequest { context, message },
    }
}

/// Whether a `RESOURCE_EXHAUSTED` is a quota that waiting within a call cannot clear: a daily quota
/// (`...PerDay...` in a `QuotaFailure`), or a quota of 0 (`limit: 0`, the model is not in the plan).
/// A per-minute quota is a rate limit, retried after its `RetryInfo` delay.
fn is_quota_exhausted(error: &wire::Status) -> bool {
    let daily = error
        .details
        .iter()
        .flat_map(|d| &d.violations)
        .flat_map(|v| [v.quota_id.as_deref(), v.quota_metric.as_deref()])
        .flatten()
        .any(|id| id.to_ascii_lowercase().contains("perday"));
    daily || error.message.contains("limit: 0,") || error.message.ends_with("limit: 0")
}

/// Whether an invalid-argument message says the prompt has too many tokens.
fn is_context_length(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    (m.contains("token")
        && (m.contains("exceed") || m.contains("too long") || m.contains("too many")))
        || m.contains("context length")
        || m.contains("context window")
}

/// A protobuf duration (`"37s"`, `"1.5s"`).
fn parse_delay(delay: &str) -> Option<Duration> {
    let seconds: f64 = delay.strip_suffix('s')?.parse().ok()?;
    // Provider bytes: `1e308s` must not panic the conversion; a wait past a day is a day.
    if !seconds.is_finite() {
        return None;
    }
    Duration::try_from_secs_f64(seconds.min(86_400.0)).ok()
}

/// The neutral events of one streamed chunk (each SSE event is a whole `GenerateContentResponse`).
fn stream_event(data: &str, context: &ErrorContext) -> Result<Vec<StreamEvent>, Error> {
    let data = data.trim();
    if data.is_empty() {
        return Ok(Vec::new());
    }
    let chunk: wire::Response = serde_json::from_str(data)
        .map_err(|e| malformed(context, &e.to_string(), data.as_bytes()))?;
    if let Some(error) = &chunk.error {
        return Err(typed_error(error, None, None, context.clone()));
    }
    let mut out = Vec::with_capacity(4);
    out.extend(chunk.response_id.clone().map(StreamEvent::ResponseId));
    out.extend(chunk.model_version.clone().map(StreamEvent::Model));
    let Some(candidate) = chunk.candidates.first() else {
        if let Some(refusal) = blocked_prompt(chunk.prompt_feedback.as_ref(), context) {
            return Err(refusal);
        }
        out.extend(
            chunk
                .usage_metadata
                .as_ref()
                .map(|u| StreamEvent::Usage(usage(u))),
        );
        return Ok(out);
    };
    let finish = candidate.finish_reason.as_deref();
    if let Some(reason) = finish.filter(|r| BLOCKED.contains(r)) {
        return Err(blocked_candidate(reason, candidate, context));
    }
    // A function call's arguments are the answer in tool mode, not text written beside them. Each
    // call comes whole; its position is within the chunk, and its id tells a later chunk's calls
    // apart (see `Assembler`).
    let calls = function_calls(candidate);
    for (index, call) in &calls {
        out.push(StreamEvent::ToolCall {
            index: *index,
            id: call.id.clone(),
            name: call.name.clone(),
        });
        out.push(StreamEvent::ToolCallInput {
            index: *index,
            part: call.arguments_text(),
        });
    }
    let text = text_parts(candidate);
    if !text.is_empty() {
        out.push(StreamEvent::Text(text));
    }
    // Chunks carry the running usage, so the last one seen is the most complete.
    out.extend(
        chunk
            .usage_metadata
            .as_ref()
            .map(|u| StreamEvent::Usage(usage(u))),
    );
    out.extend(
        finish.map(|r| StreamEvent::Finish(call_finish(finish_reason(r), !calls.is_empty()))),
    );
    Ok(out)
}

/// The input context window of a Gemini model: 2M for 1.5 Pro, 1M for the other text models; unknown
/// for image, speech, live and embedding variants and for non-Gemini models.
fn context_window(model: &str) -> Option<u32> {
    let name = model.rsplit('/').next().unwrap_or(model);
    if !name.starts_with("gemini-") {
        return None;
    }
    if ["-image", "-tts", "-live", "embedding", "-audio"]
        .iter()
        .any(|v| name.contains(v))
    {
        return None;
    }
    if name.starts_with("gemini-1.5-pro") {
        return Some(2_097_152);
    }
    if name.starts_with("gemini-1.0") || name == "gemini-pro" {
        return Some(32_768);
    }
    Some(CONTEXT_WINDOW)
}

/// Whether a model takes `responseJsonSchema`: Gemini 2.5 and later, and the `-latest` aliases.
fn has_json_schema(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    let Some(rest) = name.strip_prefix("gemini-") else {
        return false;
    };
    let version = rest.split('-').next().unwrap_or("");
    let mut numbers = version.split('.').map(str::parse::<u32>);
    match (numbers.next(), numbers.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => (major, minor) >= (2, 5),
        (Some(Ok(major)), None) => major >= 3,
        _ => name.ends_with("-latest"),
    }
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
