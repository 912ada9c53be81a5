//! The pipeline's spans and metric events, named after OpenTelemetry's GenAI semantic conventions
//! (`gen_ai.*`, claij's own under `claij.*`), for any `tracing` subscriber; the CLI's exporter maps
//! them to OpenTelemetry (`otel.name`, `otel.kind`, `otel.status_code` are its special fields).
//!
//! - `llm.ask`: a turn (`ask {model}`, or `invoke_agent {model}` for an agent run).
//! - `llm.call`: one attempt, a client call (`chat {model}`): request settings, the response's model,
//!   id, finish reasons and usage, and what claij made of the reply (verdict, violations, fixes).
//! - `execute_tool`: one tool call of an agent run (`execute_tool {tool}`).
//! - `interceptor`: a hook (`{stage} {interceptor}`), under the ask or, for checks, the attempt.
//!
//! Prompt and reply content (`gen_ai.input.messages`, `gen_ai.output.messages`,
//! `gen_ai.system_instructions`, tool arguments and results) is recorded only where the target
//! [`CONTENT_TARGET`] is enabled at TRACE, and built only then. Integers are recorded as `i64`
//! (OpenTelemetry has no unsigned attribute). Metric events go to [`METRICS_TARGET`] at INFO.

use claij_backends::{ChatRequest, ChatResponse, FinishReason, Message, Role, ToolCall, Usage};
use serde_json::{Value, json};
use tracing::field::Empty;
use tracing::{Level, Span, info_span};

use super::attempt::{Attempt, Verdict};
use super::fix_counts;
use super::prepare::Prepared;

/// The target whose TRACE level opts in to prompt and reply content on spans.
pub(crate) const CONTENT_TARGET: &str = "claij::content";

/// The target of metric events (`histogram.*`, `monotonic_counter.*` fields).
pub(crate) const METRICS_TARGET: &str = "claij::metrics";

/// An error description on a span is cut here (a retries-exhausted error lists every violation).
const MAX_DESCRIPTION: usize = 512;

/// `gen_ai.provider.name`: the semantic conventions' name where they have one, else claij's id.
pub(crate) fn provider_name(provider: &str) -> &str {
    match provider {
        "gemini" => "gcp.gemini",
        other => other,
    }
}

/// Whether spans may record content: the `claij::content` target is enabled at TRACE.
pub(crate) fn content_enabled() -> bool {
    tracing::enabled!(target: CONTENT_TARGET, Level::TRACE)
}

/// A turn's span.
pub(super) fn ask(provider: &str, model: &str, turn: u64, agent: bool) -> Span {
    let operation = if agent { "invoke_agent" } else { "ask" };
    info_span!(
        "llm.ask",
        otel.name = %format_args!("{operation} {model}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = operation,
        gen_ai.provider.name = provider_name(provider),
        gen_ai.request.model = model,
        claij.turn = as_i64(turn),
    )
}

/// An attempt's span, with what is known before the request is sent.
pub(super) fn call(
    provider: &str,
    model: &str,
    number: usize,
    request: &ChatRequest,
    prepared: Option<&Prepared>,
) -> Span {
    let span = info_span!(
        "llm.call",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider_name(provider),
        gen_ai.request.model = model,
        gen_ai.request.max_tokens = Empty,
        gen_ai.request.temperature = Empty,
        gen_ai.request.seed = Empty,
        gen_ai.response.model = Empty,
        gen_ai.response.id = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.system_instructions = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        claij.attempt = as_i64(number),
        claij.verdict = Empty,
        claij.violations.count = Empty,
        claij.fixes = Empty,
        claij.cost_usd = Empty,
        claij.schema.hash = Empty,
        claij.extensions = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if let Some(max_tokens) = request.max_tokens {
        span.record("gen_ai.request.max_tokens", i64::from(max_tokens));
    }
    if let Some(temperature) = request.temperature {
        // As written (`0.2`), not as the f32 widens (`0.20000000298023224`).
        let written = temperature
            .to_string()
            .parse()
            .unwrap_or(f64::from(temperature));
        span.record("gen_ai.request.temperature", written);
    }
    if let Some(seed) = request.seed {
        span.record("gen_ai.request.seed", as_i64(seed));
    }
    if let Some(prepared) = prepared {
        span.record("claij.schema.hash", prepared.hash().to_string());
        span.record("claij.extensions", prepared.extensions());
    }
    if content_enabled() {
        if let Some(system) = &request.system {
            let parts = json!([{"type": "text", "content": system}]);
            span.record("gen_ai.system_instructions", parts.to_string());
        }
        let messages: Vec<Value> = request.messages.iter().map(message).collect();
        span.record("gen_ai.input.messages", Value::Array(messages).to_string());
    }
    span
}

/// What the provider said about its reply: its model, id and, on opt-in, the reply itself.
pub(super) fn record_response(span: &Span, response: &ChatResponse) {
    if span.is_disabled() {
        return;
    }
    if let Some(model) = &response.model {
        span.record("gen_ai.response.model", model.as_str());
    }
    if let Some(id) = &response.request_id {
        span.record("gen_ai.response.id", id.as_str());
    }
    if content_enabled() {
        let mut parts = Vec::new();
        let text = if response.tool_calls.is_empty() {
            &response.content
        } else {
            &response.text
        };
        if !text.is_empty() {
            parts.push(json!({"type": "text", "content": text}));
        }
        parts.extend(response.tool_calls.iter().map(tool_call));
        let output = json!([{
            "role": "assistant",
            "parts": parts,
            "finish_reason": finish_reason(&response.finish_reason),
        }]);
        span.record("gen_ai.output.messages", output.to_string());
    }
}

/// What an attempt came to, on its span: usage, finish reason, verdict, violations and fixes; a
/// backend error as the span's error status.
pub(super) fn record_attempt(span: &Span, attempt: &Attempt) {
    if span.is_disabled() {
        return;
    }
    let verdict = match attempt.verdict {
        Verdict::Valid => "valid",
        Verdict::Invalid | Verdict::NoJson { .. } => "invalid",
        Verdict::BackendError { .. } => "error",
    };
    span.record("claij.verdict", verdict);
    span.record("claij.violations.count", as_i64(attempt.violations.len()));
    if !attempt.fixes.is_empty() {
        span.record("claij.fixes", fix_counts(&attempt.fixes));
    }
    if let Verdict::BackendError { message } = &attempt.verdict {
        fail(span, message);
        return;
    }
    if let Some(reason) = &attempt.finish_reason {
        let reasons = Value::from(vec![finish_reason(reason)]);
        span.record("gen_ai.response.finish_reasons", reasons.to_string());
    }
    let Usage {
        input_tokens,
        output_tokens,
        cost_usd,
        ..
    } = attempt.usage;
    span.record("gen_ai.usage.input_tokens", as_i64(input_tokens));
    span.record("gen_ai.usage.output_tokens", as_i64(output_tokens));
    if let Some(cost) = cost_usd {
        span.record("claij.cost_usd", cost);
    }
}

/// Marks `span` failed, with `description` (redacted, cut to a few hundred characters).
pub(super) fn fail(span: &Span, description: &str) {
    span.record("otel.status_code", "ERROR");
    // Errors carry no secrets by design; redacting again costs little and guards the exporter.
    let description = claij_backends::redact::redact_text(description);
    let description = match description.char_indices().nth(MAX_DESCRIPTION) {
        Some((end, _)) => format!("{}…", &description[..end]),
        None => description.into_owned(),
    };
    span.record("otel.status_description", description);
}

/// Marks `span` failed by `error`, described with its sources (`attempt 1: openai: …`).
pub(super) fn fail_with(span: &Span, error: &(dyn std::error::Error + 'static)) {
    if span.is_disabled() {
        return;
    }
    let mut description = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        description.push_str(": ");
        description.push_str(&cause.to_string());
        source = cause.source();
    }
    fail(span, &description);
}

/// An interceptor hook's span (`stage`: `pre_schema`, `pre_prompt`, `check`, `post_response`).
pub(super) fn interceptor(name: &str, stage: &'static str) -> Span {
    info_span!(
        "interceptor",
        otel.name = %format_args!("{stage} {name}"),
        otel.kind = "internal",
        claij.interceptor = name,
        claij.stage = stage,
    )
}

/// A tool call's span in an agent run.
pub(crate) fn execute_tool(call: &ToolCall) -> Span {
    let span = info_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", call.name),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name.as_str(),
        gen_ai.tool.call.id = call.id.as_str(),
        gen_ai.tool.type = "function",
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
    );
    if !span.is_disabled() && content_enabled() {
        span.record("gen_ai.tool.call.arguments", call.arguments.to_string());
    }
    span
}

/// A tool call's output on its span: the result on opt-in, an error as the span's status.
pub(crate) fn record_tool_output(span: &Span, output: &Result<Value, String>) {
    if span.is_disabled() {
        return;
    }
    match output {
        Ok(value) => {
            if content_enabled() {
                span.record("gen_ai.tool.call.result", value.to_string());
            }
        }
        Err(why) => fail(span, why),
    }
}

/// The metric events of one attempt: its duration and, when the backend replied, its tokens.
pub(super) fn attempt_metrics(provider: &str, model: &str, attempt: &Attempt) {
    let provider = provider_name(provider);
    let seconds = attempt.latency.as_secs_f64();
    match &attempt.verdict {
        Verdict::BackendError { .. } => tracing::event!(
            target: METRICS_TARGET,
            Level::INFO,
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = provider,
            gen_ai.request.model = model,
            error.type = "backend",
            histogram.gen_ai.client.operation.duration = seconds,
        ),
        _ => {
            tracing::event!(
                target: METRICS_TARGET,
                Level::INFO,
                gen_ai.operation.name = "chat",
                gen_ai.provider.name = provider,
                gen_ai.request.model = model,
                histogram.gen_ai.client.operation.duration = seconds,
            );
            for (kind, tokens) in [
                ("input", attempt.usage.input_tokens),
                ("output", attempt.usage.output_tokens),
            ] {
                tracing::event!(
                    target: METRICS_TARGET,
                    Level::INFO,
                    gen_ai.operation.name = "chat",
                    gen_ai.provider.name = provider,
                    gen_ai.request.model = model,
                    gen_ai.token.type = kind,
                    histogram.gen_ai.client.token.usage = tokens,
                );
            }
        }
    }
}

/// The metric events of one validation-retry loop: a call, whether its first attempt was valid,
/// and its retries.
pub(super) fn call_metrics(provider: &str, model: &str, attempts: &[Attempt]) {
    let provider = provider_name(provider);
    let first_try_valid = attempts.len() == 1 && attempts[0].verdict == Verdict::Valid;
    tracing::event!(
        target: METRICS_TARGET,
        Level::INFO,
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        claij.first_try_valid = first_try_valid,
        monotonic_counter.claij.calls = 1u64,
    );
    let retries = attempts.len().saturating_sub(1);
    if retries > 0 {
        tracing::event!(
            target: METRICS_TARGET,
            Level::INFO,
            gen_ai.provider.name = provider,
            gen_ai.request.model = model,
            monotonic_counter.claij.retries = retries as u64,
        );
    }
}

/// A message in the conventions' form: a role and its parts.
fn message(message: &Message) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut parts = Vec::new();
    match (&message.tool_call_id, message.role) {
        (Some(id), _) => {
            parts.push(json!({"type": "tool_call_response", "id": id, "response": message.content}))
        }
        (None, _) if !message.content.is_empty() => {
            parts.push(json!({"type": "text", "content": message.content}));
        }
        _ => {}
    }
    parts.extend(message.tool_calls.iter().map(tool_call));
    json!({"role": role, "parts": parts})
}

fn tool_call(call: &ToolCall) -> Value {
    json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments})
}

/// A finish reason as the conventions name it.
fn finish_reason(reason: &FinishReason) -> String {
    match reason {
        FinishReason::Stop => "stop".to_owned(),
        FinishReason::Length => "length".to_owned(),
        FinishReason::ContentFilter => "content_filter".to_owned(),
        FinishReason::ToolCalls => "tool_call".to_owned(),
        FinishReason::Other(other) => other.clone(),
        // A reason added later: its serialized name.
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| format!("{other:?}")),
    }
}

/// A count as an OpenTelemetry integer (saturating: no count reaches `i64::MAX`).
fn as_i64(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}
