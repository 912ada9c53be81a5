//! The provider-neutral request.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What to ask a model. Adapters translate it into each provider's wire format.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatRequest {
    /// The model id as the provider knows it (`google/gemini-2.5-flash`).
    pub model: String,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// Ask for JSON that conforms to a schema, natively where the provider can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<StructuredOutput>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// The most tokens to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// A seed, for providers that sample reproducibly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Sequences that stop generation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
}

/// A structured-output request: the schema the answer must satisfy, and how to ask for it.
///
/// `schema` is sent as given: the caller (the pipeline) compiles it to the provider's
/// [`SchemaDialect`](crate::SchemaDialect) first and validates the reply against the full schema after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructuredOutput {
    /// A name for the schema (providers ask for one): letters, digits, `_` and `-`.
    pub name: String,
    /// The schema to send, already in the provider's dialect.
    pub schema: Value,
    /// Ask the provider to enforce it strictly where that is an option.
    pub strict: bool,
    /// Native structured output, or the schema as a forced tool.
    #[serde(default)]
    pub mode: OutputMode,
}

/// How a provider is asked to produce schema-shaped output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// The provider's structured-output feature (`response_format`, `output_config`, `responseSchema`).
    #[default]
    Native,
    /// The schema as the parameters of one tool the model is forced to call; its arguments are the answer.
    Tool,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: String,
}

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions (most providers take these apart from the conversation).
    System,
    /// The user, or anything that is not the model.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

impl ChatRequest {
    /// A request to `model` with nothing in it yet.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            ..Self::default()
        }
    }

    /// The same request with a system prompt.
    #[must_use]
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// The same request with one more message.
    #[must_use]
    pub fn message(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    /// The same request asking for JSON that conforms to `schema`, natively.
    #[must_use]
    pub fn structured(mut self, name: impl Into<String>, schema: Value, strict: bool) -> Self {
        self.structured_output = Some(StructuredOutput {
            name: name.into(),
            schema,
            strict,
            mode: OutputMode::Native,
        });
        self
    }

    /// The same request with a temperature.
    #[must_use]
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// The same request with a token limit.
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// The same request with a seed.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The same request with a stop sequence added.
    #[must_use]
    pub fn stop(mut self, stop: impl Into<String>) -> Self {
        self.stop.push(stop.into());
        self
    }

    /// All the text of the request, for estimates: system prompt and messages.
    pub fn text_len(&self) -> usize {
        self.system.as_ref().map_or(0, String::len)
            + self.messages.iter().map(|m| m.content.len()).sum::<usize>()
    }
}

impl Message {
    /// A message from the user.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }

    /// A message from the model.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: Role::System,
            content: content.into(),
        }
    }
}
