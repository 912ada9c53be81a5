//! The provider-neutral request.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

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
    /// Tools the model may call natively (where [`Capabilities::tools`](crate::Capabilities::tools)
    /// says the provider takes them); its calls come back in
    /// [`ChatResponse::tool_calls`](crate::ChatResponse::tool_calls).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Whether and which tool the model must call; `None` leaves it to the provider (auto).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

/// A tool the model may call: its name, what it does, and the JSON Schema of its arguments.
///
/// `parameters` is sent as given: the caller compiles it to the provider's tool dialect
/// ([`Capabilities::schema_target`](crate::Capabilities::schema_target) with
/// [`OutputMode::Tool`]) and validates the arguments against the full schema after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name: letters, digits, `_` and `-` (providers refuse others).
    pub name: String,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The JSON Schema of the arguments (an object schema).
    pub parameters: Value,
    /// Ask the provider to enforce `parameters` strictly where it can.
    #[serde(default)]
    pub strict: bool,
}

/// Whether the model must call a tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the providers' default).
    Auto,
    /// The model must call at least one tool.
    Required,
    /// The model must not call any tool.
    None,
    /// The model must call this tool.
    Tool(String),
}

/// One call of a tool by the model: in a response, or in an assistant message of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call (made up, stable, where the provider has none: Gemini); a
    /// tool result answers it with [`Message::tool_result`].
    pub id: String,
    /// The tool called.
    pub name: String,
    /// The arguments, parsed; a JSON string when the model's arguments were not JSON (the raw text,
    /// as it wrote them: malformed, or cut off by the token limit), for the caller to repair (an
    /// agent run repairs them as it does a reply, or says why not). Tools take objects, so a string
    /// is never arguments in their own right.
    pub arguments: Value,
}

/// A structured-output request: the schema the answer must satisfy, and how to ask for it.
///
/// `schema` is sent as given: the caller (the pipeline) compiles it to the provider's
/// [`SchemaDialect`](crate::SchemaDialect) first and validates the reply against the full schema after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructuredOutput {
    /// A name for the schema (providers ask for one): letters, digits, `_` and `-`.
    pub name: String,
    /// The schema to send, already in the provider's dialect, shared and serialized once: a request
    /// (and each retry) holds it without copying it, and adapters splice its text into the body.
    pub schema: SharedJson,
    /// Ask the provider to enforce it strictly where that is an option.
    pub strict: bool,
    /// Native structured output, or the schema as a forced tool.
    #[serde(default)]
    pub mode: OutputMode,
}

/// A JSON value shared between requests and serialized once: cloning it counts a reference, and
/// its compact text ([`SharedJson::raw`]) goes into a request body as it is, so a request carrying
/// a large schema costs what copying its bytes costs, however many attempts send it. It reads as
/// the [`Value`] (`Deref`), compares and (de)serializes as the value.
///
/// ```
/// use claij_backends::SharedJson;
/// use serde_json::json;
///
/// let schema = SharedJson::new(json!({"type": "object", "required": ["answer"]}));
/// let again = schema.clone(); // no copy of the schema
/// assert_eq!(again["required"][0], "answer");
/// assert_eq!(schema.raw().get(), r#"{"type":"object","required":["answer"]}"#);
/// assert_eq!(schema, json!({"type": "object", "required": ["answer"]}));
/// ```
#[derive(Clone)]
pub struct SharedJson(Arc<SharedInner>);

struct SharedInner {
    value: Value,
    raw: Box<RawValue>,
    /// The pre-flight token estimate of `raw`, made on first use.
    tokens: OnceLock<u32>,
}

impl SharedJson {
    /// `value`, serialized now (compact, as `serde_json::to_string` writes it).
    pub fn new(value: Value) -> Self {
        let text = value.to_string();
        // `Value`'s text is always valid JSON; `null` would only stand in if that ever failed.
        let raw = RawValue::from_string(text).unwrap_or_else(|_| RawValue::NULL.to_owned());
        Self(Arc::new(SharedInner {
            value,
            raw,
            tokens: OnceLock::new(),
        }))
    }

    /// The value.
    pub fn value(&self) -> &Value {
        &self.0.value
    }

    /// Its compact JSON text, made once.
    pub fn raw(&self) -> &RawValue {
        &self.0.raw
    }

    /// `estimate` of its text, made once per shared value (the pre-flight check counts a schema's
    /// tokens on every call).
    pub(crate) fn tokens(&self, estimate: impl FnOnce(&str) -> u32) -> u32 {
        *self.0.tokens.get_or_init(|| estimate(self.0.raw.get()))
    }

    /// Whether both are the same shared value (not a copy).
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl Default for SharedJson {
    fn default() -> Self {
        Self::new(Value::Null)
    }
}

impl Deref for SharedJson {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0.value
    }
}

impl AsRef<Value> for SharedJson {
    fn as_ref(&self) -> &Value {
        &self.0.value
    }
}

impl From<Value> for SharedJson {
    fn from(value: Value) -> Self {
        Self::new(value)
    }
}

impl From<SharedJson> for Value {
    fn from(shared: SharedJson) -> Self {
        match Arc::try_unwrap(shared.0) {
            Ok(inner) => inner.value,
            Err(shared) => shared.value.clone(),
        }
    }
}

impl PartialEq for SharedJson {
    fn eq(&self, other: &Self) -> bool {
        Self::ptr_eq(self, other) || self.0.value == other.0.value
    }
}

impl PartialEq<Value> for SharedJson {
    fn eq(&self, other: &Value) -> bool {
        self.0.value == *other
    }
}

impl fmt::Debug for SharedJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0.value, f)
    }
}

impl fmt::Display for SharedJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.raw.get())
    }
}

impl Serialize for SharedJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.value.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SharedJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::new)
    }
}

/// A JSON value in a wire struct: a shared one's text spliced in as it is, or a value serialized
/// in place.
#[cfg(feature = "http")]
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(untagged)]
pub(crate) enum JsonRef<'a> {
    /// Serialized text, written verbatim.
    Raw(&'a RawValue),
    /// A value, serialized as the body is.
    Value(&'a Value),
}

#[cfg(feature = "http")]
impl<'a> From<&'a SharedJson> for JsonRef<'a> {
    fn from(shared: &'a SharedJson) -> Self {
        JsonRef::Raw(shared.raw())
    }
}

#[cfg(feature = "http")]
impl<'a> From<&'a Value> for JsonRef<'a> {
    fn from(value: &'a Value) -> Self {
        JsonRef::Value(value)
    }
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
    /// What was said (for a tool result, the result).
    pub content: String,
    /// The tools an assistant message called (the model's turn ended to run them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a [`Role::Tool`] message answers ([`ToolCall::id`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
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
    pub fn structured(
        mut self,
        name: impl Into<String>,
        schema: impl Into<SharedJson>,
        strict: bool,
    ) -> Self {
        self.structured_output = Some(StructuredOutput {
            name: name.into(),
            schema: schema.into(),
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

    /// The same request with one more tool the model may call.
    #[must_use]
    pub fn tool(mut self, tool: ToolSpec) -> Self {
        self.tools.push(tool);
        self
    }

    /// The same request with a tool choice.
    #[must_use]
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// The same request with a stop sequence added.
    #[must_use]
    pub fn stop(mut self, stop: impl Into<String>) -> Self {
        self.stop.push(stop.into());
        self
    }

    /// All the text of the request, for estimates: system prompt, messages (with the arguments
    /// of their tool calls) and tool definitions.
    pub fn text_len(&self) -> usize {
        self.system.as_ref().map_or(0, String::len)
            + self.messages.iter().map(Message::text_len).sum::<usize>()
            + self.tools.iter().map(ToolSpec::text_len).sum::<usize>()
    }
}

impl StructuredOutput {
    /// The name of the answer tool in tool mode, as adapters send it (`[A-Za-z0-9_-]{1,64}`).
    pub fn tool_name(&self) -> String {
        wire_name(&self.name)
    }

    /// Whether `call` is the forced answer tool's call (tool mode), not a tool to run.
    pub fn is_answer_call(&self, call: &ToolCall) -> bool {
        self.mode == OutputMode::Tool && (call.name == self.name || call.name == self.tool_name())
    }
}

/// Why the request's tools cannot be sent: a name providers refuse, two tools of one name (or of
/// the answer tool's), a tool choice naming no tool.
#[cfg(feature = "http")]
pub(crate) fn check_tools(request: &ChatRequest) -> Result<(), String> {
    let answer = request
        .structured_output
        .as_ref()
        .filter(|s| s.mode == OutputMode::Tool)
        .map(StructuredOutput::tool_name);
    let mut seen: Vec<&str> = answer.iter().map(String::as_str).collect();
    for (i, tool) in request.tools.iter().enumerate() {
        if wire_name(&tool.name) != tool.name {
            return Err(format!(
                "tool {i} `{}`: a tool name is 1 to 64 letters, digits, `_` or `-`",
                tool.name
            ));
        }
        if seen.contains(&tool.name.as_str()) {
            return Err(format!("tool {i}: two tools are named `{}`", tool.name));
        }
        seen.push(&tool.name);
    }
    if let Some(ToolChoice::Tool(name)) = &request.tool_choice
        && !seen.contains(&name.as_str())
    {
        return Err(format!(
            "the tool choice names `{name}`, which is not a tool of the request"
        ));
    }
    Ok(())
}

/// A schema or tool name as the providers accept it: `[A-Za-z0-9_-]{1,64}`, others replaced by `_`.
pub(crate) fn wire_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "response".to_owned()
    } else {
        cleaned
    }
}

impl ToolSpec {
    /// A non-strict tool.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
            strict: false,
        }
    }

    /// The same tool, strict or not.
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    fn text_len(&self) -> usize {
        self.name.len() + self.description.len() + self.parameters.to_string().len()
    }
}

impl ToolCall {
    /// A call of `name` with `arguments`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }

    /// The arguments as the text of a provider that takes them as text (OpenAI): the raw text when
    /// they were not JSON, else their JSON.
    #[cfg(any(feature = "openai", feature = "openrouter", feature = "gemini"))]
    pub(crate) fn arguments_text(&self) -> String {
        match &self.arguments {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        }
    }

    /// The arguments for a provider that takes only an object (Anthropic, Gemini): raw text that was
    /// not JSON goes as `{}` (the call's result tells the model what was wrong with it).
    #[cfg(any(feature = "anthropic", feature = "gemini"))]
    pub(crate) fn arguments_object(&self) -> &Value {
        static EMPTY: std::sync::LazyLock<Value> =
            std::sync::LazyLock::new(|| Value::Object(serde_json::Map::new()));
        match &self.arguments {
            Value::String(_) => &EMPTY,
            other => other,
        }
    }
}

impl Message {
    /// A message from `role` with `content`, no tool calls.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A message from the user.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// A message from the model.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// The model's turn that called tools (`content` is any text it wrote beside the calls).
    pub fn assistant_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls: calls,
            ..Self::new(Role::Assistant, content)
        }
    }

    /// The result of the tool call `id`, as text (JSON for a structured result).
    pub fn tool_result(id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(id.into()),
            ..Self::new(Role::Tool, content)
        }
    }

    fn text_len(&self) -> usize {
        self.content.len()
            + self
                .tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments.to_string().len())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests;
