//! The knobs of a [`Pipeline`](super::Pipeline): [`Config`] and the enums it is made of.

use claij_validation::retry::RetryPrompt;
use serde::{Deserialize, Serialize};

use crate::history::HistoryPolicy;

/// How the schema reaches the model when the backend does not enforce it natively.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchemaFormat {
    /// The compact TypeScript-like rendering (about a third of the JSON's tokens).
    #[default]
    Compact,
    /// Minified JSON Schema.
    Json,
    /// Not written: the system prompt already describes the schema (claij-fsm's state prompts list
    /// each transition's schema).
    Described,
}

/// How the schema reaches the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredMode {
    /// By capabilities: native structured output if the backend has it for the model, else the schema
    /// as a forced tool if it has tools, else the schema in the prompt.
    #[default]
    Auto,
    /// The provider's structured output (`response_format`, `output_config`, `responseSchema`), with the
    /// schema compiled to its dialect; the schema is kept out of the prompt.
    Native,
    /// The schema as one tool the model must call; its arguments are the answer.
    Tool,
    /// The schema in the system prompt only.
    Prompted,
}

/// Whether the system prompt shows an example of a valid reply ([`claij_schema::example()`]: the
/// schema's own `examples`, `const`s and `enum`s, else placeholders, never its descriptions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShowExample {
    /// Where the schema is shown to the model: prompted delivery (not [`SchemaFormat::Described`]),
    /// and a backend whose grammar-constrained decoding (the llguidance dialect: the embedded model)
    /// writes the schema into the prompt itself. Small models need the example most; hosted
    /// structured output is left as it is.
    #[default]
    Auto,
    /// Always, natively delivered schemas included.
    Always,
    /// Never.
    Never,
}

/// How a retry asks again after an invalid reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryForm {
    /// The request so far unchanged (system prompt, history, the user's input), then the invalid
    /// reply as the model's own turn and the correction
    /// ([`RetryPrompt::correction`]) as a new user turn: each retry extends the previous request, so
    /// provider prompt caches and the embedded model's prefix cache hit, and the model sees its reply
    /// as its own (as Instructor and Pydantic AI do).
    #[default]
    Conversation,
    /// The user's input replaced by one message that quotes it, the reply and what was wrong
    /// ([`RetryPrompt::render`]).
    SelfContained,
}

/// The sentence before the example in the system prompt.
pub const EXAMPLE_INTRO: &str = "The form of a valid reply (\"...\" stands for your own words):";

/// The knobs of a [`Pipeline`](super::Pipeline).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// The model id, as the backend knows it.
    pub model: String,
    /// The system prompt interceptors add to.
    pub system: String,
    /// Retries after the first attempt when a reply is invalid (the design's default: 3), or when a
    /// streamed reply broke off with an error that may pass when sent again
    /// ([`claij_backends::Error::is_retryable`]; the request goes again as it was).
    pub max_retries: usize,
    /// How the schema is written into the prompt.
    pub schema_format: SchemaFormat,
    /// Whether the provider enforces the schema.
    pub structured: StructuredMode,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Token limit per attempt.
    pub max_tokens: Option<u32>,
    /// Seed, for providers that sample reproducibly.
    pub seed: Option<u64>,
    /// Bounds of the retry prompt.
    pub retry_prompt: RetryPrompt,
    /// Whether a retry keeps the conversation or sends one self-contained message.
    pub retry_form: RetryForm,
    /// Longest reply, in bytes, that is searched for JSON ([`DEFAULT_MAX_REPLY_BYTES`] by default):
    /// a longer one is a failed attempt (`Verdict::NoJson` naming this limit) and the retry prompt
    /// asks for a shorter reply.
    pub max_reply_bytes: usize,
    /// Whether the system prompt shows an example reply.
    pub example: ShowExample,
    /// How much of [`Context::history`](crate::Context::history) is sent before the user's input
    /// and kept after a turn ([`HistoryPolicy::NONE`] for a caller that sends its own).
    pub history: HistoryPolicy,
}

/// The default [`Config::max_reply_bytes`]: 1 MiB, far more than any structured reply, small enough
/// that extracting and repairing it takes milliseconds.
pub const DEFAULT_MAX_REPLY_BYTES: usize = 1 << 20;

/// The temperature of a retry on a backend that decodes greedily by default (its capabilities'
/// `greedy_default`: the embedded local model) when the call sets no temperature or 0: greedy, the
/// retry would repeat a reply token for token whenever its prompt repeats. Each retry also gets its
/// own seed: the configured one (0 when none) plus the retry's number.
pub const RETRY_TEMPERATURE: f32 = 0.7;

impl Config {
    /// Defaults for `model`: three retries keeping the conversation, compact schema, automatic
    /// structured mode, the default [`HistoryPolicy`].
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            system: String::new(),
            max_retries: 3,
            schema_format: SchemaFormat::Compact,
            structured: StructuredMode::Auto,
            temperature: None,
            max_tokens: None,
            seed: None,
            retry_prompt: RetryPrompt::default(),
            retry_form: RetryForm::Conversation,
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            example: ShowExample::Auto,
            history: HistoryPolicy::default(),
        }
    }
}
