//! The request of each attempt: how the schema is delivered (in the prompt, or to the provider in its
//! dialect), whether the example reply is shown, the retry prompt, and a retry's sampling on a greedy
//! backend.

use std::sync::Arc;

use claij_backends::{ChatRequest, Message, Role};
use claij_validation::retry::Failure;
use serde_json::{Value, json};
use tracing::warn;

use super::{
    Attempt, Call, Pipeline, Prepared, RETRY_TEMPERATURE, RetryForm, SchemaFormat, ShowExample,
    StructuredMode, Verdict,
};
use crate::prompts::Prompts;

/// How one call delivers the schema: in the prompt, or to the provider in its dialect.
#[derive(Debug, Clone)]
pub(super) enum Delivery {
    Prompted,
    Provider {
        mode: claij_backends::OutputMode,
        strict: bool,
        /// The compiled schema as requests carry it, serialized once ([`Prepared::dialect`]'s).
        schema: claij_backends::SharedJson,
        /// What the dialect loses, shared by every attempt's report.
        losses: Arc<Vec<claij_schema::dialect::Loss>>,
        /// The envelope's property when the schema's root was wrapped for the dialect
        /// ([`claij_schema::dialect::Compiled::envelope`]): replies are unwrapped before anything else.
        envelope: Option<&'static str>,
    },
}

impl Delivery {
    /// The envelope's property the reply comes in, if the root was wrapped.
    pub(super) fn envelope(&self) -> Option<&'static str> {
        match self {
            Delivery::Provider { envelope, .. } => *envelope,
            Delivery::Prompted => None,
        }
    }
}

/// A reply sent in the envelope (`{"value": ...}`) as the value inside it, as JSON text; `None` when
/// the reply is not an envelope (then it is judged as it is, and the violations say what is wrong).
pub(super) fn unwrap_envelope(content: &str, property: &str) -> Option<String> {
    let value = match serde_json::from_str::<Value>(content.trim()) {
        Ok(value) => value,
        Err(_) => claij_validation::extract::recover(content).ok()?.value,
    };
    unwrap_value(value, property).map(|v| v.to_string())
}

/// The value inside an envelope: the object's one key, `property`.
pub(super) fn unwrap_value(value: Value, property: &str) -> Option<Value> {
    match value {
        Value::Object(mut map) if map.len() == 1 => map.remove(property),
        _ => None,
    }
}

/// What an attempt's request sends after the prompts' history (and an agent turn's steps after
/// the user's input).
pub(super) enum Retry<'a> {
    /// The user's input: the first attempt.
    First,
    /// The retry prompt in place of the user's input ([`RetryForm::SelfContained`]).
    SelfContained(String),
    /// The user's input, then each earlier attempt's reply and correction
    /// ([`RetryForm::Conversation`]).
    Conversation(&'a [Message]),
}

impl Pipeline {
    /// Native, tool or prompted, by the configuration and the backend's capabilities for the model.
    pub(super) fn delivery(&self, prepared: &Prepared) -> Delivery {
        use claij_backends::OutputMode;
        let capabilities = self.backend.capabilities(&self.config.model);
        let mode = match self.config.structured {
            StructuredMode::Prompted => return Delivery::Prompted,
            StructuredMode::Native => OutputMode::Native,
            StructuredMode::Tool => OutputMode::Tool,
            StructuredMode::Auto if capabilities.native_json_schema => OutputMode::Native,
            StructuredMode::Auto if capabilities.tools => OutputMode::Tool,
            StructuredMode::Auto => return Delivery::Prompted,
        };
        // Tools are strict, in the strict dialect, only on models that have strict tools.
        let target = capabilities.schema_target(mode);
        let dialect = target.dialect;
        // A tool's parameters are an object in every provider's wire format.
        match prepared.dialect_shared(dialect, mode == OutputMode::Tool) {
            Ok(done) => {
                self.log_losses(dialect, &done.loss_lines);
                Delivery::Provider {
                    mode,
                    strict: target.strict,
                    schema: done.schema,
                    losses: done.losses,
                    envelope: done.compiled.envelope(),
                }
            }
            Err(e) => {
                // A schema the dialect cannot express (a recursive one for Gemini) still works prompted.
                warn!(provider = self.backend.provider(), model = %self.config.model, ?dialect, error = %e, "schema not expressible in the provider's dialect; prompting instead");
                Delivery::Prompted
            }
        }
    }

    /// An info line naming the keywords the provider will not enforce (dropped or relaxed), a debug
    /// line for the forms rewritten to equivalent or stricter ones; annotations (`description`,
    /// `$schema`, ...) are no loss. Not a warning: the validator still checks every keyword, and a
    /// reply breaking one is retried (that retry is the warning), while a schema with a lost keyword
    /// would otherwise warn on every call. The lists are made once per dialect ([`LossLines`]).
    fn log_losses(&self, dialect: claij_backends::SchemaDialect, lines: &LossLines) {
        let provider = self.backend.provider();
        let model = &self.config.model;
        if !lines.weaker.is_empty() {
            tracing::info!(provider, %model, ?dialect, dropped = %lines.weaker, "schema keywords the provider does not enforce; checked on the reply");
        }
        if !lines.other.is_empty() {
            tracing::debug!(provider, %model, ?dialect, rewritten = %lines.other, "schema keywords rewritten for the provider's dialect");
        }
    }

    /// Whether this call's system prompt shows an example reply ([`ShowExample`]).
    pub(super) fn shows_example(&self, delivery: &Delivery) -> bool {
        match (self.config.example, delivery) {
            (ShowExample::Never, _) => false,
            (ShowExample::Always, _) => true,
            (ShowExample::Auto, Delivery::Prompted) => {
                self.config.schema_format != SchemaFormat::Described
            }
            (ShowExample::Auto, Delivery::Provider { mode, .. }) => {
                let capabilities = self.backend.capabilities(&self.config.model);
                capabilities.schema_target(*mode).dialect
                    == claij_backends::SchemaDialect::Llguidance
            }
        }
    }

    /// The request for an attempt: the prompts, the schema in the system prompt or as structured output,
    /// and for a retry what [`Retry`] says.
    pub(super) fn request(&self, call: &Call<'_>, retry: Retry<'_>) -> ChatRequest {
        let Call {
            prompts,
            prepared,
            delivery,
            steps,
            tools,
            ..
        } = *call;
        let mut system = prompts.system.clone();
        if let (Some(prepared), Delivery::Prompted) = (prepared, delivery)
            && !prepared.prompt_section().is_empty()
        {
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            system.push_str(prepared.prompt_section());
        }
        let mut request = ChatRequest::new(self.config.model.clone());
        if !system.is_empty() {
            request.system = Some(system);
        }
        if tools.is_empty() {
            // Providers refuse tool calls and results in a request that defines no tools (Anthropic):
            // a native agent run's steps in the history go as text.
            request.messages.extend(as_text(&prompts.history));
        } else {
            request.messages.extend(prompts.history.iter().map(as_sent));
        }
        let user = match &retry {
            Retry::SelfContained(text) => text.clone(),
            Retry::First | Retry::Conversation(_) => prompts.user.clone(),
        };
        request.messages.push(Message::user(user));
        request.messages.extend(steps.iter().map(as_sent));
        if let Retry::Conversation(exchanges) = retry {
            request.messages.extend(exchanges.iter().cloned());
        }
        request.tools = tools.to_vec();
        if let Delivery::Provider {
            mode,
            strict,
            schema,
            ..
        } = delivery
        {
            // A reference counted, not the schema copied: every attempt shares its one text.
            request.structured_output = Some(claij_backends::StructuredOutput {
                name: "response".to_owned(),
                schema: schema.clone(),
                strict: *strict,
                mode: *mode,
            });
        }
        request.temperature = self.config.temperature;
        request.max_tokens = self.config.max_tokens;
        request.seed = self.config.seed;
        request
    }

    /// What a retry after `attempt`'s invalid reply adds, by [`RetryForm`]: to `exchanges` (the
    /// conversation's earlier retries) the reply and the correction, or the self-contained prompt.
    pub(super) fn retry<'a>(
        &self,
        prompts: &Prompts,
        attempt: &Attempt,
        exchanges: &'a mut Vec<Message>,
    ) -> Retry<'a> {
        let prompt = &self.config.retry_prompt;
        match self.config.retry_form {
            RetryForm::SelfContained => Retry::SelfContained(
                self.with_failure(attempt, |raw, f| prompt.render(&prompts.user, raw, f)),
            ),
            RetryForm::Conversation => {
                let correction = self.with_failure(attempt, |_, f| prompt.correction(f));
                exchanges.push(Message::assistant(self.reply_turn(attempt)));
                exchanges.push(Message::user(correction));
                Retry::Conversation(exchanges)
            }
        }
    }

    /// The model's turn in a conversation retry: its reply as it was, but a reply too long to be
    /// read cut as the retry prompt quotes it (it would make every later request as long), and an
    /// empty one said to be empty (providers refuse an empty assistant turn).
    fn reply_turn(&self, attempt: &Attempt) -> String {
        let raw = attempt.raw.as_deref().unwrap_or_default();
        if raw.trim().is_empty() {
            return "(no reply)".to_owned();
        }
        if raw.len() <= self.config.max_reply_bytes {
            return raw.to_owned();
        }
        let max = self.config.retry_prompt.max_response_chars;
        match raw.char_indices().nth(max) {
            Some((end, _)) => format!(
                "{}\n[... cut: the reply was {} bytes ...]",
                &raw[..end],
                raw.len()
            ),
            None => raw.to_owned(),
        }
    }

    /// `render` called with `attempt`'s reply and what was wrong with it: the failure, and whether
    /// it was cut off.
    fn with_failure(
        &self,
        attempt: &Attempt,
        render: impl FnOnce(&str, Failure<'_>) -> String,
    ) -> String {
        let raw = attempt.raw.as_deref().unwrap_or_default();
        let cut_off = attempt.is_truncated();
        let violations = &attempt.violations;
        let cut_reason;
        let bytes = raw.len();
        let failure = match &attempt.verdict {
            Verdict::NoJson { .. } if bytes > self.config.max_reply_bytes => Failure::TooLarge {
                bytes,
                limit: self.config.max_reply_bytes,
            },
            // Cut off before any JSON (a long preamble): say so, so the next reply is shorter.
            Verdict::NoJson { reason } if cut_off => {
                cut_reason = format!(
                    "{reason}; it was cut off at the output token limit: reply with the JSON \
                         alone, and keep it shorter"
                );
                Failure::NoJson(&cut_reason)
            }
            Verdict::NoJson { reason } => Failure::NoJson(reason),
            _ if cut_off => Failure::Truncated(violations),
            _ => Failure::Invalid(violations),
        };
        render(raw, failure)
    }

    /// Attempt `number` (2 or more) on a backend that decodes greedily by default, with no
    /// temperature or 0 configured, samples at [`RETRY_TEMPERATURE`] with the configured seed (0 when
    /// none) plus `number - 1`: consecutive attempts never send the same request, and with a changed
    /// seed the sampled reply changes too, unless the grammar leaves the model no choice.
    pub(super) fn vary_retry(&self, request: &mut ChatRequest, number: usize) {
        let greedy = request.temperature.is_none_or(|t| t <= 0.0);
        if greedy && self.backend.capabilities(&self.config.model).greedy_default {
            let retry = u64::try_from(number.saturating_sub(1)).unwrap_or(u64::MAX);
            request.temperature = Some(RETRY_TEMPERATURE);
            request.seed = Some(self.config.seed.unwrap_or(0).wrapping_add(retry));
        }
    }
}

/// What a dialect loses, as the call's log lines list it: `keyword at /pointer, ...` for the
/// keywords the provider will not enforce (dropped or relaxed), and for the rest (rewritten).
#[derive(Debug, Default)]
pub(super) struct LossLines {
    pub(super) weaker: String,
    pub(super) other: String,
}

impl LossLines {
    /// The lines for `losses`, annotations left out.
    pub(super) fn new(losses: &[claij_schema::dialect::Loss]) -> Self {
        use claij_schema::dialect::LossKind;
        const ANNOTATIONS: &[&str] = &[
            "$schema",
            "$id",
            "$comment",
            "title",
            "description",
            "examples",
            "default",
            "deprecated",
            "readOnly",
            "writeOnly",
        ];
        let list = |weaker: bool| {
            losses
                .iter()
                .filter(|l| !ANNOTATIONS.contains(&l.keyword.as_str()))
                .filter(|l| matches!(l.change, LossKind::Dropped | LossKind::Relaxed) == weaker)
                .map(|l| {
                    format!(
                        "{} at {}",
                        l.keyword,
                        if l.pointer.is_empty() {
                            "/"
                        } else {
                            &l.pointer
                        }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        Self {
            weaker: list(true),
            other: list(false),
        }
    }
}

/// `messages` with native tool calls and results written as text: an assistant turn's calls after
/// its text, as JSON; each run of tool results as one user turn ([`as_sent`] for the rest).
fn as_text(messages: &[Message]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut results = String::new();
    for message in messages {
        if let Some(id) = message.tool_call_id.as_deref()
            && message.role == Role::Tool
        {
            results.push_str(&format!("\n- {id}: {}", message.content));
            continue;
        }
        if !results.is_empty() {
            out.push(Message::user(format!(
                "Results of the tool calls:{}",
                std::mem::take(&mut results)
            )));
        }
        if message.tool_calls.is_empty() {
            out.push(as_sent(message));
            continue;
        }
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
            .collect();
        let mut text = message.content.clone();
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("Tool calls: {}", Value::Array(calls)));
        out.push(Message::new(message.role, text));
    }
    if !results.is_empty() {
        out.push(Message::user(format!(
            "Results of the tool calls:{results}"
        )));
    }
    out
}

/// `message` as a provider takes it: the results of a step of the `oneOf` route (a tool message
/// answering no single call) as the user turn they are; anything else as it is.
fn as_sent(message: &Message) -> Message {
    if message.role == Role::Tool && message.tool_call_id.is_none() {
        return Message::user(message.content.clone());
    }
    message.clone()
}
