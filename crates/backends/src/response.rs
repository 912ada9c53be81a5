//! The provider-neutral response and token usage, and the [`Assembler`] of streamed responses.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

use crate::{StreamEvent, ToolCall};

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

/// A response put together from [`StreamEvent`]s: the text, or, once a tool call began, the call's
/// arguments (the answer in tool mode, even when the model wrote text beside the call); a call
/// without arguments answers `{}`. Usage split over events (input first, output last) or repeated
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
#[derive(Debug, Clone, Default)]
pub struct Assembler {
    response: ChatResponse,
    text: String,
    tool: Option<String>,
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
                self.tool.get_or_insert_with(String::new).push_str(&part);
                return true;
            }
            StreamEvent::Usage(usage) => merge_usage(&mut self.response.usage, usage),
            StreamEvent::Finish(reason) => self.response.finish_reason = reason,
            StreamEvent::Model(model) => self.response.model = Some(model),
            StreamEvent::ResponseId(id) => self.response.request_id = Some(id),
        }
        false
    }

    /// The answer so far: the tool call's arguments once a call began, else the text.
    pub fn answer(&self) -> &str {
        self.tool.as_deref().unwrap_or(&self.text)
    }

    /// Whether a tool call began (so the answer is its arguments).
    pub fn is_tool_call(&self) -> bool {
        self.tool.is_some()
    }

    /// The complete response.
    pub fn finish(mut self) -> ChatResponse {
        self.response.content = match self.tool {
            Some(arguments) if arguments.trim().is_empty() => "{}".to_owned(),
            Some(arguments) => arguments,
            None => self.text,
        };
        self.response
    }
}

/// Keeps the largest figure seen for each count; a cost, once reported, is the latest one.
fn merge_usage(total: &mut Usage, seen: Usage) {
    total.input_tokens = total.input_tokens.max(seen.input_tokens);
    total.output_tokens = total.output_tokens.max(seen.output_tokens);
    total.cached_tokens = total.cached_tokens.max(seen.cached_tokens);
    total.reasoning_tokens = total.reasoning_tokens.max(seen.reasoning_tokens);
    if seen.cost_usd.is_some() {
        total.cost_usd = seen.cost_usd;
    }
}

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
    /// Reasoning tokens (part of `output_tokens`).
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// What it cost in US dollars, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
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
