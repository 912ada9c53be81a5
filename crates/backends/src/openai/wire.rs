//! The chat-completions wire format, private: requests built strictly (every field the spec knows),
//! responses read leniently (unknown fields ignored, optional-in-practice fields optional).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::request::JsonRef;

/// `POST /chat/completions` body.
#[derive(Debug, Serialize)]
pub(super) struct Request<'a> {
    pub model: &'a str,
    pub messages: Vec<Message<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Legacy name, which OpenRouter and local servers read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// OpenAI's current name (reasoning models reject `max_tokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// OpenRouter: provider routing preferences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderPreferences>,
    /// OpenRouter: usage accounting (the cost comes back in `usage.cost`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageAccounting>,
}

#[derive(Debug, Serialize)]
pub(super) struct Message<'a> {
    pub role: &'static str,
    /// Left out only for an assistant turn that called tools and wrote nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Cow<'a, str>>,
    /// An assistant turn's calls.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<CallOut<'a>>,
    /// The call a `tool` message answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<&'a str>,
}

/// A call of the history, as the request sends it back.
#[derive(Debug, Serialize)]
pub(super) struct CallOut<'a> {
    pub id: &'a str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionOut<'a>,
}

#[derive(Debug, Serialize)]
pub(super) struct FunctionOut<'a> {
    pub name: &'a str,
    /// The arguments as a JSON text, as the API takes them.
    pub arguments: String,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ResponseFormat<'a> {
    JsonSchema { json_schema: JsonSchema<'a> },
}

#[derive(Debug, Serialize)]
pub(super) struct JsonSchema<'a> {
    pub name: String,
    pub strict: bool,
    pub schema: JsonRef<'a>,
}

#[derive(Debug, Serialize)]
pub(super) struct Tool<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: Function<'a>,
}

#[derive(Debug, Serialize)]
pub(super) struct Function<'a> {
    pub name: Cow<'a, str>,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub description: &'a str,
    pub parameters: JsonRef<'a>,
    pub strict: bool,
}

/// `"auto"`, `"required"`, `"none"`, or one function.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum ToolChoice {
    Mode(&'static str),
    Function {
        #[serde(rename = "type")]
        kind: &'static str,
        function: ToolName,
    },
}

#[derive(Debug, Serialize)]
pub(super) struct ToolName {
    pub name: String,
}

#[derive(Debug, Serialize)]
pub(super) struct StreamOptions {
    pub include_usage: bool,
}

#[derive(Debug, Serialize)]
pub(super) struct ProviderPreferences {
    pub require_parameters: bool,
}

#[derive(Debug, Serialize)]
pub(super) struct UsageAccounting {
    pub include: bool,
}

/// A chat completion, or one chunk of a streamed one (`delta` in place of `message`).
#[derive(Debug, Default, Deserialize)]
pub(super) struct Completion {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub choices: Option<Vec<Choice>>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// OpenRouter reports some failures in a 200 body.
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Choice {
    #[serde(default)]
    pub message: Option<ResponseMessage>,
    #[serde(default)]
    pub delta: Option<ResponseMessage>,
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// OpenRouter: an upstream failure in the middle of generation.
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct ResponseMessage {
    /// A string, or (some compatible servers) an array of `{type: "text", text}` parts.
    #[serde(default)]
    pub content: Option<Value>,
    #[serde(default)]
    pub refusal: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCall>>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct ToolCall {
    /// Streamed calls say which call a fragment belongs to.
    #[serde(default)]
    pub index: Option<u32>,
    /// The call's id (in a stream, on the call's first fragment only).
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionCall>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct FunctionCall {
    /// The tool called (in a stream, on the call's first fragment only).
    #[serde(default)]
    pub name: Option<String>,
    /// A JSON text as OpenAI sends it; some compatible servers send the object itself, and some
    /// relays leave it out for a call without arguments.
    #[serde(default)]
    pub arguments: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Usage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
    /// OpenRouter: what the call cost, in credits (US dollars).
    #[serde(default)]
    pub cost: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct PromptTokensDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct CompletionTokensDetails {
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}
