//! Gemini generateContent wire JSON: what goes out (serialize) and what comes back (leniently).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::request::JsonRef;

/// `generateContent` body. Field order is the order of the snapshots.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Request<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<Content<'a>>,
    pub contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "GenerationConfig::is_empty")]
    pub generation_config: GenerationConfig<'a>,
}

#[derive(Debug, Serialize)]
pub(super) struct Content<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    pub parts: Vec<Part<'a>>,
}

/// A part of a request's content: text, a call of the model's, or a call's result.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum Part<'a> {
    Text {
        text: &'a str,
    },
    FunctionCall {
        #[serde(rename = "functionCall")]
        function_call: CallOut<'a>,
    },
    FunctionResponse {
        #[serde(rename = "functionResponse")]
        function_response: ResultOut<'a>,
    },
}

#[derive(Debug, Serialize)]
pub(super) struct CallOut<'a> {
    pub name: &'a str,
    pub args: &'a Value,
}

#[derive(Debug, Serialize)]
pub(super) struct ResultOut<'a> {
    pub name: &'a str,
    /// A JSON object (Gemini takes a `Struct`).
    pub response: Value,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GenerationConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i32>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<JsonRef<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_json_schema: Option<JsonRef<'a>>,
}

impl GenerationConfig<'_> {
    fn is_empty(&self) -> bool {
        self.temperature.is_none()
            && self.max_output_tokens.is_none()
            && self.seed.is_none()
            && self.stop_sequences.is_empty()
            && self.response_mime_type.is_none()
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Tool<'a> {
    pub function_declarations: Vec<FunctionDeclaration<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FunctionDeclaration<'a> {
    pub name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<JsonRef<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters_json_schema: Option<JsonRef<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolConfig<'a> {
    pub function_calling_config: FunctionCallingConfig<'a>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FunctionCallingConfig<'a> {
    pub mode: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_function_names: Vec<&'a str>,
}

/// A `GenerateContentResponse` (whole, or one streamed chunk). Every field may be missing.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Response {
    #[serde(default)]
    pub candidates: Vec<Candidate>,
    #[serde(default)]
    pub prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    pub usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    pub model_version: Option<String>,
    #[serde(default)]
    pub response_id: Option<String>,
    /// An error where a response should be (proxies, and the stream's in-band errors).
    #[serde(default)]
    pub error: Option<Status>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Candidate {
    #[serde(default)]
    pub content: Option<CandidateContent>,
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub finish_message: Option<String>,
    #[serde(default)]
    pub safety_ratings: Vec<SafetyRating>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct CandidateContent {
    #[serde(default)]
    pub parts: Vec<ResponsePart>,
}

/// One part of a candidate: text (a thought summary when `thought` is set) or a function call.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResponsePart {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub thought: bool,
    #[serde(default)]
    pub function_call: Option<FunctionCall>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct FunctionCall {
    /// Set by some API versions; generateContent usually sends none.
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub args: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SafetyRating {
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default)]
    pub probability: Option<String>,
    #[serde(default)]
    pub blocked: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PromptFeedback {
    #[serde(default)]
    pub block_reason: Option<String>,
    #[serde(default)]
    pub block_reason_message: Option<String>,
}

/// Token counts. `promptTokenCount` includes cached tokens; `candidatesTokenCount` excludes thoughts.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct UsageMetadata {
    #[serde(default)]
    pub prompt_token_count: Option<u64>,
    #[serde(default)]
    pub candidates_token_count: Option<u64>,
    #[serde(default)]
    pub cached_content_token_count: Option<u64>,
    #[serde(default)]
    pub thoughts_token_count: Option<u64>,
    #[serde(default)]
    pub tool_use_prompt_token_count: Option<u64>,
}

/// `{"error": {"code", "message", "status", "details"}}` (Google's `google.rpc.Status`).
#[derive(Debug, Deserialize)]
pub(super) struct ErrorBody {
    pub error: Status,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Status {
    #[serde(default)]
    pub code: Option<u16>,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub details: Vec<Detail>,
}

/// An `ErrorInfo` (`reason`), `RetryInfo` (`retryDelay`, like `"37s"`) or `QuotaFailure`
/// (`violations`) detail; others are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Detail {
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub retry_delay: Option<String>,
    #[serde(default)]
    pub violations: Vec<QuotaViolation>,
}

/// One quota a `QuotaFailure` says was exceeded
/// (`GenerateRequestsPerDayPerProjectPerModel-FreeTier`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct QuotaViolation {
    #[serde(default)]
    pub quota_id: Option<String>,
    #[serde(default)]
    pub quota_metric: Option<String>,
}
