//! The provider-neutral response and token usage, and the [`Assembler`] of streamed responses.

use std::collections::BTreeMap;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ChatRequest, Error, ErrorContext, StreamEvent, ToolCall};

/// What a model answered.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatResponse {
    /// The text of the answer (for a structured request, the JSON as text).
    pub content: String,
    /// Why generation stopped.
    pub finish_reason: FinishReason,
    /// Tokens used, and cost where known.
    pub usage: Usage,
    /// The provider's id for the request, for support and logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The model that answered, as the provider reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The tools the model called natively (in the order it called them), for the request's
    /// [`tools`](crate::ChatRequest::tools); `finish_reason` is then [`FinishReason::ToolCalls`].
    /// A forced structured-output tool ([`OutputMode::Tool`](crate::OutputMode::Tool)) is not
    /// here: its arguments are the `content`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The text the model wrote beside its tool calls ("Let me look that up."), which `content`
    /// does not hold then; empty when it called none (its text is `content`) or wrote nothing. An
    /// assistant message of the history keeps it: [`Message::assistant_calls`](crate::Message::assistant_calls).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

impl ChatResponse {
    /// A complete response with `content` and nothing else known.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }

    /// The same response with a finish reason.
    #[must_use]
    pub fn finish_reason(mut self, reason: FinishReason) -> Self {
        self.finish_reason = reason;
        self
    }

    /// The same response with usage.
    #[must_use]
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// The same response with a request id.
    #[must_use]
    pub fn request_id(mut self, id: impl Into<String>) -> Self {
        self.request_id = Some(id.into());
        self
    }

    /// The same response with the model that answered.
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The calls to run: every native tool call but the forced answer tool's (in tool mode,
    /// [`StructuredOutput::is_answer_call`](crate::StructuredOutput::is_answer_call)). Empty when the
    /// model answered.
    pub fn calls_to_run<'a>(&'a self, request: &ChatRequest) -> Vec<&'a ToolCall> {
        let answer = request.structured_output.as_ref();
        self.tool_calls
            .iter()
            .filter(|call| !answer.is_some_and(|a| a.is_answer_call(call)))
            .collect()
    }

    /// The same response with the tool calls the model made (finish reason
    /// [`FinishReason::ToolCalls`] when there are any).
    #[must_use]
    pub fn tool_calls(mut self, calls: Vec<ToolCall>) -> Self {
        if !calls.is_empty() {
            self.finish_reason = FinishReason::ToolCalls;
        }
        self.tool_calls = calls;
        self
    }
}

/// A response put together from [`StreamEvent`]s: the text, or, once a tool call began, the first
/// call's arguments (the answer in tool mode, even when the model wrote text beside the call); a call
/// without arguments answers `{}`. Native tool calls ([`StreamEvent::ToolCall`], their arguments in
/// [`StreamEvent::ToolInput`] for the first and [`StreamEvent::ToolCallInput`] for the others) become
/// [`ChatResponse::tool_calls`]. Usage split over events (input first, output last) or repeated
/// as running totals keeps the largest figure seen for each count.
///
/// ```
/// use claij_backends::{Assembler, StreamEvent};
///
/// let mut assembler = Assembler::default();
/// for event in [
///     StreamEvent::Text("I'll answer with the tool.".into()),
///     StreamEvent::ToolInput(String::new()),
///     StreamEvent::ToolInput("{\"answer\":".into()),
///     StreamEvent::ToolInput("\"4\"}".into()),
/// ] {
///     assembler.push(event);
/// }
/// assert_eq!(assembler.answer(), "{\"answer\":\"4\"}");
/// assert_eq!(assembler.finish().content, "{\"answer\":\"4\"}");
/// ```
///
/// Two calls at once, as a stream brings them:
///
/// ```
/// use claij_backends::{Assembler, StreamEvent};
/// use serde_json::json;
///
/// let mut assembler = Assembler::default();
/// for event in [
///     StreamEvent::ToolCall { index: 0, id: "call_a".into(), name: "weather".into() },
///     StreamEvent::ToolInput("{\"city\":".into()),
///     StreamEvent::ToolCall { index: 1, id: "call_b".into(), name: "weather".into() },
///     StreamEvent::ToolCallInput { index: 1, part: "{\"city\":\"Oslo\"}".into() },
///     StreamEvent::ToolInput("\"Paris\"}".into()),
/// ] {
///     assembler.push(event);
/// }
/// let response = assembler.try_finish("openai")?;
/// assert_eq!(response.tool_calls[0].arguments, json!({"city": "Paris"}));
/// assert_eq!(response.tool_calls[1].id, "call_b");
/// # Ok::<(), claij_backends::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Assembler {
    response: ChatResponse,
    text: String,
    tool: Option<String>,
    calls: BTreeMap<u32, PartialCall>,
    /// Where the events' indices point in `calls`: a provider that restarts its positions in each
    /// chunk (Gemini) sends a new call under an old index, told apart by its id.
    slots: BTreeMap<u32, u32>,
}

/// A streamed tool call, its arguments still text.
#[derive(Debug, Clone, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

impl Assembler {
    /// Adds one event. True when it added to [`Assembler::answer`].
    pub fn push(&mut self, event: StreamEvent) -> bool {
        match event {
            StreamEvent::Text(text) => {
                self.text.push_str(&text);
                return self.tool.is_none() && !text.is_empty();
            }
            StreamEvent::ToolInput(part) => {
                if let Some(call) = self.calls.values_mut().next() {
                    call.arguments.push_str(&part);
                }
                self.tool.get_or_insert_with(String::new).push_str(&part);
                return true;
            }
            StreamEvent::ToolCall { index, id, name } => {
                let mut key = self.slots.get(&index).copied().unwrap_or(index);
                if self
                    .calls
                    .get(&key)
                    .is_some_and(|call| !call.id.is_empty() && !id.is_empty() && call.id != id)
                {
                    // A provider's index is input: at the top of the range the call shares the slot.
                    key = self
                        .calls
                        .keys()
                        .next_back()
                        .map_or(0, |last| last.saturating_add(1));
                }
                self.slots.insert(index, key);
                let call = self.calls.entry(key).or_default();
                if !id.is_empty() {
                    call.id = id;
                }
                if !name.is_empty() {
                    call.name = name;
                }
                self.tool.get_or_insert_with(String::new);
            }
            StreamEvent::ToolCallInput { index, part } => {
                let key = self.slots.get(&index).copied().unwrap_or(index);
                let first = self.calls.keys().next().is_none_or(|&first| first >= key);
                self.calls.entry(key).or_default().arguments.push_str(&part);
                if first {
                    self.tool.get_or_insert_with(String::new).push_str(&part);
                    return true;
                }
            }
            StreamEvent::Usage(usage) => merge_usage(&mut self.response.usage, usage),
            StreamEvent::Finish(reason) => self.response.finish_reason = reason,
            StreamEvent::Model(model) => self.response.model = Some(model),
            StreamEvent::ResponseId(id) => self.response.request_id = Some(id),
        }
        false
    }

    /// The answer so far: the first tool call's arguments once a call began, else the text.
    pub fn answer(&self) -> &str {
        self.tool.as_deref().unwrap_or(&self.text)
    }

    /// Whether a tool call began (so the answer is its arguments).
    pub fn is_tool_call(&self) -> bool {
        self.tool.is_some()
    }

    /// The text the model wrote, beside any tool call.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The complete response, its native tool calls' arguments parsed.
    ///
    /// # Errors
    ///
    /// [`Error::ToolArguments`] naming the first call whose arguments are not JSON (a stream torn
    /// in the middle of a call), with `provider` as where; unless the response was cut off at the
    /// token limit ([`FinishReason::Length`]), which says so itself: such a call is left out (in
    /// tool mode its arguments are still the content, for the pipeline to repair).
    pub fn try_finish(self, provider: &str) -> Result<ChatResponse, Error> {
        let (mut response, calls) = self.split();
        // Arguments the token limit cut off are no error: the finish reason says so.
        let cut_off = response.finish_reason == FinishReason::Length;
        for call in calls {
            match parse_call(&call.id, &call.name, &call.arguments) {
                Ok(parsed) => response.tool_calls.push(parsed),
                Err(_) if cut_off => {}
                Err(e) => {
                    return Err(Error::tool_arguments(
                        &ErrorContext::new(provider),
                        &call.id,
                        &call.name,
                        &call.arguments,
                        &e,
                    ));
                }
            }
        }
        Ok(response)
    }

    /// The complete response, as [`Backend::complete`](crate::Backend::complete) gives it: a native
    /// tool call whose arguments are not JSON keeps their raw text as a JSON string (see
    /// [`ToolCall::arguments`]); [`Assembler::try_finish`] reports it instead, for callers that
    /// want every call parsed.
    pub fn finish(self) -> ChatResponse {
        let (mut response, calls) = self.split();
        response.tool_calls = calls
            .into_iter()
            .map(|call| lenient_call(call.id, call.name, call.arguments))
            .collect();
        response
    }

    fn split(mut self) -> (ChatResponse, Vec<PartialCall>) {
        if self.calls.values().any(|call| !call.name.is_empty()) {
            self.response.text = self.text.clone();
        }
        self.response.content = match self.tool {
            Some(arguments) if arguments.trim().is_empty() => "{}".to_owned(),
            Some(arguments) => arguments,
            None => self.text,
        };
        let calls: Vec<PartialCall> = self
            .calls
            .into_iter()
            .filter(|(_, call)| !call.name.is_empty())
            .map(|(index, mut call)| {
                if call.id.is_empty() {
                    call.id = format!("call_{index}");
                }
                call
            })
            .collect();
        (self.response, calls)
    }
}

/// A tool call with its arguments parsed: blank arguments are `{}` (providers leave them out for a
/// call without any).
pub(crate) fn parse_call(
    id: &str,
    name: &str,
    arguments: &str,
) -> Result<ToolCall, serde_json::Error> {
    let arguments = if arguments.trim().is_empty() {
        Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_str(arguments)?
    };
    Ok(ToolCall::new(id, name, arguments))
}

/// A tool call with its arguments parsed, or, when they are not JSON, their raw text as a JSON
/// string (see [`ToolCall::arguments`]).
pub(crate) fn lenient_call(id: String, name: String, arguments: String) -> ToolCall {
    match parse_call(&id, &name, &arguments) {
        Ok(call) => call,
        Err(_) => ToolCall::new(id, name, Value::String(arguments)),
    }
}

/// Keeps the largest figure seen for each count; a cost, once reported, is the latest one.
pub(crate) fn merge_usage(total: &mut Usage, seen: Usage) {
    total.input_tokens = total.input_tokens.max(seen.input_tokens);
    total.output_tokens = total.output_tokens.max(seen.output_tokens);
    total.cached_tokens = total.cached_tokens.max(seen.cached_tokens);
    total.cache_write_tokens = total.cache_write_tokens.max(seen.cache_write_tokens);
    total.reasoning_tokens = total.reasoning_tokens.max(seen.reasoning_tokens);
    if seen.cost_usd.is_some() {
        total.cost_usd = seen.cost_usd;
    }
}

/// What a refusal says when a content filter stopped the answer before any of it and the provider
/// gave no message of its own.
#[cfg(feature = "http")]
pub(crate) const CONTENT_FILTERED: &str = "the provider's content filter stopped the answer";

/// Why generation stopped.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// The model finished its answer (or hit a stop sequence).
    #[default]
    Stop,
    /// The token limit cut the answer off: it may be truncated.
    Length,
    /// The provider's content filter stopped it.
    ContentFilter,
    /// The model called a tool.
    ToolCalls,
    /// Anything else, as the provider named it.
    Other(String),
}

/// Tokens used by one call (or, added up, by many), and what they cost.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from a cache (part of `input_tokens`).
    #[serde(default)]
    pub cached_tokens: u64,
    /// Prompt tokens written to a cache (part of `input_tokens`): Anthropic bills them above plain
    /// input.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// Reasoning tokens (part of `output_tokens`).
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// What it cost in US dollars, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// Whether a count is zero (left out of the JSON).
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Input and output tokens together.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(mut self, other: Usage) -> Usage {
        self += other;
        self
    }
}

impl AddAssign for Usage {
    /// Costs add up when both are known; an unknown cost stays unknown only if both are.
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_tokens += other.cached_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(iter: I) -> Usage {
        iter.fold(Usage::default(), Add::add)
    }
}

#[cfg(test)]
mod tests;
