//! The [`Pipeline`]: compose the schema, build the prompts, call the backend, extract, repair, coerce
//! and validate the reply, retry with a precise prompt when it is invalid, then let interceptors act.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use claij_backends::{Backend, ChatRequest, ChatResponse, FinishReason, Message, Usage};
use claij_validation::retry::{Failure, RetryPrompt};
use claij_validation::{Fix, Outcome, StageTimes, Violation, process_timed};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::{Instrument as _, debug, info_span, warn};

use crate::chain::Chain;
use crate::context::Context;
use crate::error::{Error, Exhausted};
use crate::failure_log::FailureLog;
use crate::interceptor::{BoxError, OnError, Stage};
use crate::prompts::Prompts;
use crate::schema::Schema;

mod prepare;

pub use prepare::Prepared;
use prepare::Schemas;

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

/// The sentence before the example in the system prompt.
pub const EXAMPLE_INTRO: &str = "The form of a valid reply (\"...\" stands for your own words):";

/// What stays the same across the attempts of one call.
#[derive(Clone, Copy)]
struct Call<'a> {
    ctx: &'a Context,
    prompts: &'a Prompts,
    prepared: Option<&'a Prepared>,
    delivery: &'a Delivery,
    on_partial: Option<&'a (dyn Fn(&Value) + Send + Sync)>,
}

/// How one call delivers the schema: in the prompt, or to the provider in its dialect.
#[derive(Debug, Clone)]
enum Delivery {
    Prompted,
    Provider {
        mode: claij_backends::OutputMode,
        strict: bool,
        compiled: Arc<claij_schema::dialect::Compiled>,
    },
}

/// Below this many bytes a streamed reply is recovered at every event, for smooth partial values.
const PARTIAL_EVERY_EVENT: usize = 4096;

/// The knobs of a [`Pipeline`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// The model id, as the backend knows it.
    pub model: String,
    /// The system prompt interceptors add to.
    pub system: String,
    /// Retries after the first attempt when a reply is invalid (the design's default: 3).
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
    /// Longest reply, in bytes, that is searched for JSON ([`DEFAULT_MAX_REPLY_BYTES`] by default):
    /// a longer one is a failed attempt (`Verdict::NoJson` naming this limit) and the retry prompt
    /// asks for a shorter reply.
    pub max_reply_bytes: usize,
    /// Whether the system prompt shows an example reply.
    pub example: ShowExample,
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
    /// Defaults for `model`: three retries, compact schema, automatic structured mode.
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
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            example: ShowExample::Auto,
        }
    }
}

/// A user check beyond the schema (a chosen index within range, a date in the future...): the
/// violations it returns are fed to the same retry loop as schema violations.
pub type Check = dyn Fn(&Value, &Context) -> Vec<Violation> + Send + Sync;

/// What one attempt sent, got and made of it.
#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    /// 1 for the first attempt.
    pub number: usize,
    /// The request sent.
    pub request: Arc<ChatRequest>,
    /// The reply text (`None` when the backend failed).
    pub raw: Option<String>,
    /// Why generation stopped.
    pub finish_reason: Option<FinishReason>,
    /// How the reply fared.
    pub verdict: Verdict,
    /// What extraction, repair and coercion changed.
    pub fixes: Vec<Fix>,
    /// What was still wrong (schema and semantic checks).
    pub violations: Vec<Violation>,
    /// Tokens and cost of this attempt.
    pub usage: Usage,
    /// Time spent in the backend call.
    pub latency: Duration,
    /// Time spent building the request (prompts, schema).
    pub prepare_time: Duration,
    /// Time spent processing the reply (extract, repair, coerce, validate, checks).
    pub process_time: Duration,
    /// Part of `process_time`: extraction, repair, coercion and validation, each timed.
    pub stage_times: StageTimes,
    /// Part of `process_time`: the semantic checks ([`Pipeline::with_check`]).
    pub check_time: Duration,
    /// The provider's request id.
    pub request_id: Option<String>,
    /// What the provider's schema dialect could not carry (still enforced by local validation).
    pub dialect_losses: Arc<Vec<claij_schema::dialect::Loss>>,
    /// Strings of the reply that reached a `maxLength` the provider's schema dialect added where the
    /// schema set none: probably cut short. [`Attempt::truncation`] names them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cut_strings: Vec<CutString>,
}

/// A string of a reply as long as a `maxLength` the provider's schema dialect added where the schema
/// set none (a [`LossKind::Tightened`](claij_schema::dialect::LossKind) `maxLength`, e.g. the
/// llguidance dialect's 2000 characters for the local model): the decoder had to end it there, so it
/// is probably cut short. Recognised by its length alone, so a string of exactly that length that
/// ended on its own is flagged too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CutString {
    /// JSON pointer to the string in the reply (`""`: the reply is the string).
    pub pointer: String,
    /// The bound it reached, in characters.
    pub limit: u64,
    /// When the cut fell inside a word: the characters kept so that the string ends after its last
    /// whole word, followed by `…` in the answer (the raw reply keeps what the model wrote). `None`
    /// when it is left as cut (between words, or shortening it would break the schema or a check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<u64>,
}

impl std::fmt::Display for CutString {
    /// `the string at /answer was cut at 2000 characters, the bound ...`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(
            f,
            "the string at {at} was cut at {} characters, the bound the schema dialect adds for the \
             decoder (give the field a maxLength to choose another)",
            self.limit
        )?;
        match self.kept {
            Some(kept) => write!(
                f,
                "; it ends after its last whole word ({kept} characters) and `…`"
            ),
            None => Ok(()),
        }
    }
}

impl Attempt {
    /// Whether the token limit cut the reply off ([`FinishReason::Length`]).
    pub fn is_truncated(&self) -> bool {
        self.finish_reason == Some(FinishReason::Length)
    }

    /// `the reply was cut at max_tokens (N)` (`at the output token limit` when the request set
    /// none, so the provider's applied), when the token limit cut the reply off, then each of
    /// [`Attempt::cut_strings`], joined by `; `.
    pub fn truncation(&self) -> Option<String> {
        let mut parts: Vec<String> = Vec::new();
        if self.is_truncated() {
            parts.push(format!("the reply was cut at {}", self.token_limit()));
        }
        parts.extend(self.cut_strings.iter().map(CutString::to_string));
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// `max_tokens (N)`, or `the output token limit` when the request set none.
    pub(crate) fn token_limit(&self) -> String {
        match self.request.max_tokens {
            Some(n) => format!("max_tokens ({n})"),
            None => "the output token limit".to_owned(),
        }
    }
}

/// How an attempt's reply fared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Valid (after the fixes listed).
    Valid,
    /// JSON, but violating the schema or a check.
    Invalid,
    /// No JSON in the reply.
    NoJson {
        /// Why.
        reason: String,
    },
    /// The backend failed.
    BackendError {
        /// The error.
        message: String,
    },
}

/// A validated answer and how it was obtained. The context passed to `ask` has been updated in place.
#[derive(Debug, Clone, Serialize)]
pub struct Answer<T = Value> {
    /// The value, valid against the composed schema and every check.
    pub value: T,
    /// Every attempt, the last one being the valid reply.
    pub attempts: Vec<Attempt>,
    /// Tokens and cost over all attempts.
    pub usage: Usage,
    /// Hooks that failed under [`OnError::Skip`], as `interceptor/stage: error`.
    pub skipped: Vec<String>,
}

impl<T> Answer<T> {
    /// Retries used (0 when the first reply was valid).
    pub fn retries(&self) -> usize {
        self.attempts.len().saturating_sub(1)
    }

    /// Cost over all attempts, when the backend reports it.
    pub fn cost_usd(&self) -> Option<f64> {
        self.usage.cost_usd
    }
}

/// A request pipeline: one backend and model, a chain of interceptors, a base schema.
///
/// ```
/// use std::sync::Arc;
/// use claij_backends::testing::Scripted;
/// use claij_interceptors::{Chain, Config, Context, Pipeline};
///
/// let backend = Arc::new(Scripted::replies([
///     r#"{"answer": 4}"#,                          // invalid: answer must be a string... coerced to "4"
///     r#"{"answer": "4", "state": "done"}"#,
/// ]));
/// let pipeline = Pipeline::new(backend.clone(), Config::new("test-model"), Chain::new());
/// let mut ctx = Context::default();
/// let answer = futures_executor::block_on(pipeline.ask(&mut ctx, "What is 2+2?"))?;
/// assert_eq!(answer.value["state"], "done");
/// assert_eq!(answer.retries(), 1); // the first reply lacked `state`
/// assert!(backend.requests()[1].messages[0].content.contains("missing required property `state`"));
/// # Ok::<(), claij_interceptors::Error>(())
/// ```
pub struct Pipeline {
    backend: Arc<dyn Backend>,
    config: Config,
    chain: Chain,
    base: Option<Arc<Value>>,
    checks: Vec<(String, Arc<Check>)>,
    schemas: Mutex<Schemas>,
    failure_log: Option<FailureLog>,
}

impl Pipeline {
    /// A pipeline answering with the base schema ([`claij_schema::base`]) grown by the chain's deltas.
    pub fn new(backend: Arc<dyn Backend>, config: Config, chain: Chain) -> Self {
        Self {
            backend,
            config,
            chain,
            base: Some(Arc::new(claij_schema::base())),
            checks: Vec::new(),
            schemas: Mutex::new(Schemas::default()),
            failure_log: None,
        }
    }

    /// The same pipeline with another base schema (`None`: plain text answers, no validation).
    #[must_use]
    pub fn with_base_schema(mut self, base: Option<Value>) -> Self {
        self.base = base.map(Arc::new);
        self
    }

    /// The same pipeline with a semantic check, named for the violations' `keyword`.
    #[must_use]
    pub fn with_check(
        mut self,
        name: impl Into<String>,
        check: impl Fn(&Value, &Context) -> Vec<Violation> + Send + Sync + 'static,
    ) -> Self {
        self.checks.push((name.into(), Arc::new(check)));
        self
    }

    /// The same pipeline appending every attempt of a call that needed a retry to a JSONL file.
    #[must_use]
    pub fn with_failure_log(mut self, log: FailureLog) -> Self {
        self.failure_log = Some(log);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The interceptors.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The audit log of the schema registry for the default base schema: every delta added, rejected
    /// or removed, by whom and when.
    pub fn audit(&self) -> claij_schema::AuditLog {
        let schemas = self.schemas.lock().unwrap_or_else(PoisonError::into_inner);
        self.base
            .as_ref()
            .and_then(|b| schemas.audit(b))
            .unwrap_or_default()
    }

    /// Asks `input` and returns a value valid against the composed schema, retrying up to
    /// `max_retries` times; interceptors' `post_response` hooks update `ctx`.
    ///
    /// # Errors
    ///
    /// [`Error::Hook`] or [`Error::Schema`] from an interceptor, [`Error::Backend`] when the backend
    /// fails, [`Error::RetriesExhausted`] with every attempt when no reply was valid.
    pub async fn ask(&self, ctx: &mut Context, input: &str) -> Result<Answer, Error> {
        self.ask_with_base(ctx, input, self.base.clone(), None)
            .await
    }

    /// [`Pipeline::ask`], streaming each attempt's reply from the backend and calling `on_partial` with
    /// the value recovered so far (repaired as if cut off here) whenever it changes. Partial values are
    /// previews: only the final value is validated, and an attempt that turns out invalid is retried.
    ///
    /// # Errors
    ///
    /// As [`Pipeline::ask`].
    pub async fn ask_streaming(
        &self,
        ctx: &mut Context,
        input: &str,
        on_partial: &(dyn Fn(&Value) + Send + Sync),
    ) -> Result<Answer, Error> {
        self.ask_with_base(ctx, input, self.base.clone(), Some(on_partial))
            .await
    }

    /// [`Pipeline::ask`] against another base schema (typed answers use the type's schema).
    pub(crate) async fn ask_with_base(
        &self,
        ctx: &mut Context,
        input: &str,
        base: Option<Arc<Value>>,
        on_partial: Option<&(dyn Fn(&Value) + Send + Sync)>,
    ) -> Result<Answer, Error> {
        let span = info_span!(
            "llm.ask",
            provider = self.backend.provider(),
            model = %self.config.model,
            turn = ctx.turn
        );
        self.run(ctx, input, base, on_partial)
            .instrument(span)
            .await
    }

    async fn run(
        &self,
        ctx: &mut Context,
        input: &str,
        base: Option<Arc<Value>>,
        on_partial: Option<&(dyn Fn(&Value) + Send + Sync)>,
    ) -> Result<Answer, Error> {
        let started = Instant::now();
        let mut skipped = Vec::new();
        let prepared = match &base {
            Some(base) => Some(self.prepare_schema(base, ctx, &mut skipped)?),
            None => None,
        };
        let mut prompts = self.build_prompts(input, ctx, &mut skipped)?;
        let delivery = match &prepared {
            Some(p) => self.delivery(p),
            None => Delivery::Prompted,
        };
        if let Some(prepared) = &prepared
            && self.shows_example(&delivery)
            && let Some(example) = prepared.example()
        {
            prompts.system_push(&format!("{EXAMPLE_INTRO}\n{example}"));
        }
        let first = self.request(&prompts, prepared.as_deref(), &delivery, None);
        let prepare_time = started.elapsed();
        let (value, attempts) = self
            .attempts(
                &Call {
                    ctx,
                    prompts: &prompts,
                    prepared: prepared.as_deref(),
                    delivery: &delivery,
                    on_partial,
                },
                first,
                prepare_time,
            )
            .await?;
        let usage = attempts.iter().map(|a| a.usage).sum();
        ctx.insert(CallReport {
            provider: self.backend.provider().to_owned(),
            model: self.config.model.clone(),
            attempts: attempts.clone(),
        });
        self.post_response(&value, ctx, &mut skipped).await?;
        // A counter restored from a file can stand at its maximum: it stays there, never wraps
        // or panics (the CLI refuses such a session before any request).
        ctx.turn = ctx.turn.saturating_add(1);
        Ok(Answer {
            value,
            attempts,
            usage,
            skipped,
        })
    }

    /// Native, tool or prompted, by the configuration and the backend's capabilities for the model.
    fn delivery(&self, prepared: &Prepared) -> Delivery {
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
        match prepared.dialect(dialect) {
            Ok(compiled) => Delivery::Provider {
                mode,
                strict: target.strict,
                compiled,
            },
            Err(e) => {
                // A schema the dialect cannot express (a recursive one for Gemini) still works prompted.
                warn!(?dialect, error = %e, "schema not expressible in the provider's dialect; prompting instead");
                Delivery::Prompted
            }
        }
    }

    /// Whether this call's system prompt shows an example reply ([`ShowExample`]).
    fn shows_example(&self, delivery: &Delivery) -> bool {
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

    /// Collects the chain's deltas and gets the composed, checked, compiled schema.
    fn prepare_schema(
        &self,
        base: &Arc<Value>,
        ctx: &Context,
        skipped: &mut Vec<String>,
    ) -> Result<Arc<Prepared>, Error> {
        let mut schema = Schema::new(Arc::clone(base));
        for link in self.chain.links() {
            let name = link.interceptor.name();
            let before = schema.deltas().len();
            schema.set_current(name);
            let _span = info_span!("interceptor", name, stage = "pre_schema").entered();
            if let Err(e) = link.interceptor.pre_schema(&mut schema, ctx) {
                schema.truncate(before);
                hook_failed(name, Stage::PreSchema, e, link.on_error, skipped)?;
            }
        }
        let deltas = schema.into_deltas();
        let mut schemas = self.schemas.lock().unwrap_or_else(PoisonError::into_inner);
        schemas.prepare(
            base,
            deltas,
            &self.chain,
            self.config.schema_format,
            skipped,
        )
    }

    fn build_prompts(
        &self,
        input: &str,
        ctx: &Context,
        skipped: &mut Vec<String>,
    ) -> Result<Prompts, Error> {
        let mut prompts = Prompts::new(self.config.system.clone(), input);
        for link in self.chain.links() {
            let name = link.interceptor.name();
            let _span = info_span!("interceptor", name, stage = "pre_prompt").entered();
            let saved = prompts.clone();
            if let Err(e) = link.interceptor.pre_prompt(&mut prompts, ctx) {
                prompts = saved;
                hook_failed(name, Stage::PrePrompt, e, link.on_error, skipped)?;
            }
        }
        Ok(prompts)
    }

    /// The request for an attempt: the prompts, the schema in the system prompt or as structured output,
    /// and for a retry the retry prompt in place of the user's input.
    fn request(
        &self,
        prompts: &Prompts,
        prepared: Option<&Prepared>,
        delivery: &Delivery,
        retry: Option<String>,
    ) -> ChatRequest {
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
        request.messages.extend(prompts.history.iter().cloned());
        request
            .messages
            .push(Message::user(retry.unwrap_or_else(|| prompts.user.clone())));
        if let Delivery::Provider {
            mode,
            strict,
            compiled,
        } = delivery
        {
            request.structured_output = Some(claij_backends::StructuredOutput {
                name: "response".to_owned(),
                schema: compiled.schema.clone(),
                strict: *strict,
                mode: *mode,
            });
        }
        request.temperature = self.config.temperature;
        request.max_tokens = self.config.max_tokens;
        request.seed = self.config.seed;
        request
    }

    /// The validation-retry loop.
    async fn attempts(
        &self,
        call: &Call<'_>,
        first: ChatRequest,
        prepare_time: Duration,
    ) -> Result<(Value, Vec<Attempt>), Error> {
        let Call {
            prompts,
            prepared,
            delivery,
            ..
        } = *call;
        let mut attempts: Vec<Attempt> = Vec::new();
        let mut request = first;
        let mut prepare_time = prepare_time;
        loop {
            let number = attempts.len() + 1;
            let span = info_span!(
                "llm.call",
                provider = self.backend.provider(),
                model = %self.config.model,
                attempt = number
            );
            let sending = Arc::new(std::mem::take(&mut request));
            let done = self
                .attempt(call, number, sending, prepare_time)
                .instrument(span)
                .await;
            let (response, value) = match done {
                Ok((attempt, response, value)) => {
                    attempts.push(attempt);
                    (response, value)
                }
                Err((attempt, source)) => {
                    attempts.push(attempt);
                    self.log_failures(&attempts);
                    return Err(Error::Backend {
                        attempts,
                        source: Box::new(source),
                    });
                }
            };
            let (verdict, violations) = attempts
                .last()
                .map(|a| (a.verdict.clone(), a.violations.clone()))
                .unwrap_or((Verdict::Invalid, Vec::new()));
            if let (Verdict::Valid, Some(value)) = (&verdict, value) {
                if attempts.len() > 1 {
                    self.log_failures(&attempts);
                }
                return Ok((value, attempts));
            }
            if attempts.len() > self.config.max_retries {
                self.log_failures(&attempts);
                let no_json = match verdict {
                    Verdict::NoJson { reason } => Some(reason),
                    _ => None,
                };
                return Err(Error::RetriesExhausted(Box::new(Exhausted {
                    last_response: response.content,
                    violations,
                    no_json,
                    attempts,
                })));
            }
            let retry_started = Instant::now();
            let cut_reason;
            let bytes = response.content.len();
            let failure = match &verdict {
                Verdict::NoJson { .. } if bytes > self.config.max_reply_bytes => {
                    Failure::TooLarge {
                        bytes,
                        limit: self.config.max_reply_bytes,
                    }
                }
                // Cut off before any JSON (a long preamble): say so, so the next reply is shorter.
                Verdict::NoJson { reason } if response.finish_reason == FinishReason::Length => {
                    cut_reason = format!(
                        "{reason}; it was cut off at the output token limit: reply with the JSON \
                         alone, and keep it shorter"
                    );
                    Failure::NoJson(&cut_reason)
                }
                Verdict::NoJson { reason } => Failure::NoJson(reason),
                _ if response.finish_reason == FinishReason::Length => {
                    Failure::Truncated(&violations)
                }
                _ => Failure::Invalid(&violations),
            };
            let text = self
                .config
                .retry_prompt
                .render(&prompts.user, &response.content, failure);
            request = self.request(prompts, prepared, delivery, Some(text));
            self.vary_retry(&mut request, attempts.len() + 1);
            prepare_time = retry_started.elapsed();
        }
    }

    /// Attempt `number` (2 or more) on a backend that decodes greedily by default, with no
    /// temperature or 0 configured, samples at [`RETRY_TEMPERATURE`] with the configured seed (0 when
    /// none) plus `number - 1`: consecutive attempts never send the same request, and with a changed
    /// seed the sampled reply changes too, unless the grammar leaves the model no choice.
    fn vary_retry(&self, request: &mut ChatRequest, number: usize) {
        let greedy = request.temperature.is_none_or(|t| t <= 0.0);
        if greedy && self.backend.capabilities(&self.config.model).greedy_default {
            let retry = u64::try_from(number.saturating_sub(1)).unwrap_or(u64::MAX);
            request.temperature = Some(RETRY_TEMPERATURE);
            request.seed = Some(self.config.seed.unwrap_or(0).wrapping_add(retry));
        }
    }

    /// One attempt, inside its `llm.call` span: the backend call and what was made of the reply.
    async fn attempt(
        &self,
        call: &Call<'_>,
        number: usize,
        request: Arc<ChatRequest>,
        prepare_time: Duration,
    ) -> Result<(Attempt, ChatResponse, Option<Value>), (Attempt, claij_backends::Error)> {
        let Call {
            ctx,
            prepared,
            delivery,
            on_partial,
            ..
        } = *call;
        let dialect_losses = match delivery {
            Delivery::Provider { compiled, .. } => Arc::new(compiled.losses.clone()),
            Delivery::Prompted => Arc::new(Vec::new()),
        };
        let sent = Instant::now();
        let result = match on_partial {
            None => self.backend.complete(&request).await,
            Some(on_partial) => self.streamed(&request, on_partial).await,
        };
        let latency = sent.elapsed();
        let response = match result {
            Ok(r) => r,
            Err(source) => {
                warn!(attempt = number, error = %source, "backend call failed");
                let attempt = Attempt {
                    number,
                    request,
                    raw: None,
                    finish_reason: None,
                    verdict: Verdict::BackendError {
                        message: source.to_string(),
                    },
                    fixes: Vec::new(),
                    violations: Vec::new(),
                    usage: Usage::default(),
                    latency,
                    prepare_time,
                    process_time: Duration::ZERO,
                    stage_times: StageTimes::default(),
                    check_time: Duration::ZERO,
                    request_id: None,
                    dialect_losses,
                    cut_strings: Vec::new(),
                };
                return Err((attempt, source));
            }
        };
        debug!(
            latency_ms = latency.as_millis() as u64,
            input_tokens = response.usage.input_tokens,
            output_tokens = response.usage.output_tokens,
            "llm reply"
        );
        let processing = Instant::now();
        let mut times = Timed::default();
        let (verdict, value, fixes, violations) = self.judge(&response, prepared, ctx, &mut times);
        if !fixes.is_empty() {
            let kinds: std::collections::BTreeSet<String> = fixes
                .iter()
                .map(|f| {
                    serde_json::to_value(f.kind).map_or_else(
                        |_| String::new(),
                        |v| v.as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            let kinds: Vec<String> = kinds.into_iter().collect();
            warn!(n_fixes = fixes.len(), kinds = %kinds.join(","), "reply repaired");
        }
        if verdict != Verdict::Valid {
            warn!(
                n_violations = violations.len(),
                truncated = response.finish_reason == FinishReason::Length,
                "response failed validation"
            );
        }
        let mut cut_strings = value
            .as_ref()
            .map(|v| cut_strings(v, &dialect_losses))
            .unwrap_or_default();
        let value = match (value, prepared) {
            (Some(v), Some(prepared)) if verdict == Verdict::Valid && !cut_strings.is_empty() => {
                Some(self.end_at_words(v, &mut cut_strings, prepared, ctx))
            }
            (value, _) => value,
        };
        if !cut_strings.is_empty() {
            warn!(
                n_strings = cut_strings.len(),
                "strings reached the schema dialect's length bound"
            );
        }
        let attempt = Attempt {
            number,
            request,
            raw: Some(response.content.clone()),
            finish_reason: Some(response.finish_reason.clone()),
            verdict,
            fixes,
            violations,
            usage: response.usage,
            latency,
            prepare_time,
            process_time: processing.elapsed(),
            stage_times: times.stages,
            check_time: times.check,
            request_id: response.request_id.clone(),
            dialect_losses,
            cut_strings,
        };
        Ok((attempt, response, value))
    }

    /// A streamed reply assembled into a response, with partial values shown as the text grows.
    async fn streamed(
        &self,
        request: &ChatRequest,
        on_partial: &(dyn Fn(&Value) + Send + Sync),
    ) -> Result<ChatResponse, claij_backends::Error> {
        use futures_util::StreamExt as _;
        let mut stream = self.backend.stream(request);
        // Text, or the forced tool call's arguments once a call begins (text beside it is not the
        // answer).
        let mut assembler = claij_backends::Assembler::default();
        let mut last: Option<Value> = None;
        let mut recovered_at = 0;
        let mut tool_call = false;
        while let Some(event) = stream.next().await {
            if !assembler.push(event?) {
                continue;
            }
            if assembler.is_tool_call() != tool_call {
                tool_call = true;
                recovered_at = 0;
            }
            // Recovering the whole text at every event is quadratic in the reply: past a few KB,
            // only once it has grown by a quarter (linear in all), never past the limit.
            let answer = assembler.answer();
            let len = answer.len();
            if len > self.config.max_reply_bytes
                || (len > PARTIAL_EVERY_EVENT && len < recovered_at + recovered_at / 4)
            {
                continue;
            }
            recovered_at = len;
            let partial = claij_validation::extract::recover(answer)
                .ok()
                .map(|r| r.value)
                .filter(|v| v.is_object() || v.is_array());
            if let Some(value) = partial
                && last.as_ref() != Some(&value)
            {
                on_partial(&value);
                last = Some(value);
            }
        }
        Ok(assembler.finish())
    }

    /// What to make of a reply: valid, invalid (with violations) or no JSON.
    fn judge(
        &self,
        response: &ChatResponse,
        prepared: Option<&Prepared>,
        ctx: &Context,
        times: &mut Timed,
    ) -> (Verdict, Option<Value>, Vec<Fix>, Vec<Violation>) {
        let Some(prepared) = prepared else {
            // No schema: the text is the answer.
            return (
                Verdict::Valid,
                Some(Value::String(response.content.clone())),
                Vec::new(),
                Vec::new(),
            );
        };
        let bytes = response.content.len();
        if bytes > self.config.max_reply_bytes {
            warn!(
                bytes,
                limit = self.config.max_reply_bytes,
                "reply over max_reply_bytes"
            );
            let reason = format!(
                "the reply is {bytes} bytes, over the limit of {} bytes (max_reply_bytes)",
                self.config.max_reply_bytes
            );
            return (Verdict::NoJson { reason }, None, Vec::new(), Vec::new());
        }
        let (outcome, stages) = process_timed(&response.content, prepared.validator());
        times.stages = stages;
        match outcome {
            Outcome::Valid { value, fixes } => {
                let started = Instant::now();
                let violations = self.check(&value, ctx);
                times.check = started.elapsed();
                if violations.is_empty() {
                    (Verdict::Valid, Some(value), fixes, violations)
                } else {
                    (Verdict::Invalid, Some(value), fixes, violations)
                }
            }
            Outcome::Invalid {
                value,
                violations,
                fixes,
            } => (Verdict::Invalid, Some(value), fixes, violations),
            Outcome::NoJson { reason } => {
                (Verdict::NoJson { reason }, None, Vec::new(), Vec::new())
            }
        }
    }

    /// A valid `value` whose strings in `cut` were cut mid-word by a dialect's bound, with each of them
    /// ended at its last whole word and marked `…` ([`CutString::kept`]), when the result is still
    /// valid and passes the checks; otherwise `value` as it is.
    fn end_at_words(
        &self,
        value: Value,
        cut: &mut [CutString],
        prepared: &Prepared,
        ctx: &Context,
    ) -> Value {
        let mut ended = value.clone();
        let mut kept = Vec::with_capacity(cut.len());
        for string in cut.iter() {
            let shorter = match ended.pointer(&string.pointer) {
                Some(Value::String(s)) => at_last_word(s).map(|n| {
                    let mut short: String = s.chars().take(n).collect();
                    short.push('…');
                    (short, n)
                }),
                _ => None,
            };
            match (shorter, ended.pointer_mut(&string.pointer)) {
                (Some((short, n)), Some(slot)) => {
                    *slot = Value::String(short);
                    kept.push(Some(u64::try_from(n).unwrap_or(u64::MAX)));
                }
                _ => kept.push(None),
            }
        }
        if kept.iter().all(Option::is_none)
            || !prepared.validator().is_valid(&ended)
            || !self.check(&ended, ctx).is_empty()
        {
            return value;
        }
        for (string, kept) in cut.iter_mut().zip(kept) {
            string.kept = kept;
        }
        ended
    }

    fn check(&self, value: &Value, ctx: &Context) -> Vec<Violation> {
        self.checks
            .iter()
            .flat_map(|(name, check)| {
                check(value, ctx).into_iter().map(move |mut v| {
                    if v.keyword.is_empty() {
                        v.keyword.clone_from(name);
                    }
                    v
                })
            })
            .collect()
    }

    async fn post_response(
        &self,
        value: &Value,
        ctx: &mut Context,
        skipped: &mut Vec<String>,
    ) -> Result<(), Error> {
        for link in self.chain.links().iter().rev() {
            let name = link.interceptor.name();
            let span = info_span!("interceptor", name, stage = "post_response");
            // Work done while the future is created belongs to the span too.
            let future = {
                let _entered = span.enter();
                link.interceptor.post_response(value, ctx)
            };
            let result = future.instrument(span).await;
            if let Err(e) = result {
                hook_failed(name, Stage::PostResponse, e, link.on_error, skipped)?;
            }
        }
        Ok(())
    }

    fn log_failures(&self, attempts: &[Attempt]) {
        if let Some(log) = &self.failure_log
            && let Err(e) = log.append(self.backend.provider(), &self.config.model, attempts)
        {
            warn!(error = %e, "cannot append to the failure log");
        }
    }
}

/// What the last call did, put in the context before `post_response` so interceptors (metrics,
/// logging) can see every attempt.
#[derive(Debug, Clone)]
pub struct CallReport {
    /// The provider.
    pub provider: String,
    /// The model.
    pub model: String,
    /// Every attempt of the call.
    pub attempts: Vec<Attempt>,
}

/// How many characters of `s` (cut mid-word) to keep so it ends after its last whole word: before the
/// last run of whitespace, without the punctuation that led into the cut word (`,` `;` `:` `-`), when
/// that keeps at least half of it; `None` when the cut fell between words already or no such boundary
/// exists.
fn at_last_word(s: &str) -> Option<usize> {
    let chars: Vec<char> = s.chars().collect();
    if chars.last().is_none_or(|c| c.is_whitespace()) {
        return None;
    }
    let space = chars.iter().rposition(|c| c.is_whitespace())?;
    let mut end = space;
    while end > 0
        && (chars[end - 1].is_whitespace() || matches!(chars[end - 1], ',' | ';' | ':' | '-'))
    {
        end -= 1;
    }
    (end > 0 && end * 2 >= chars.len()).then_some(end)
}

/// The strings of `value` exactly as long as a `maxLength` a dialect added (`losses`).
fn cut_strings(value: &Value, losses: &[claij_schema::dialect::Loss]) -> Vec<CutString> {
    use claij_schema::dialect::LossKind;
    let limits: Vec<u64> = losses
        .iter()
        .filter(|l| l.change == LossKind::Tightened && l.keyword == "maxLength")
        .filter_map(|l| l.value.as_u64())
        .collect();
    let mut cut = Vec::new();
    if !limits.is_empty() {
        collect_cut(value, &mut String::new(), &limits, &mut cut);
    }
    cut
}

fn collect_cut(value: &Value, pointer: &mut String, limits: &[u64], cut: &mut Vec<CutString>) {
    let children: Box<dyn Iterator<Item = (String, &Value)>> = match value {
        Value::String(s) => {
            let chars = u64::try_from(s.chars().count()).unwrap_or(u64::MAX);
            if limits.contains(&chars) {
                cut.push(CutString {
                    pointer: pointer.clone(),
                    limit: chars,
                    kept: None,
                });
            }
            return;
        }
        Value::Array(items) => Box::new(items.iter().enumerate().map(|(i, v)| (i.to_string(), v))),
        Value::Object(map) => Box::new(
            map.iter()
                .map(|(k, v)| (k.replace('~', "~0").replace('/', "~1"), v)),
        ),
        _ => return,
    };
    for (token, item) in children {
        let len = pointer.len();
        pointer.push('/');
        pointer.push_str(&token);
        collect_cut(item, pointer, limits, cut);
        pointer.truncate(len);
    }
}

/// Where the time of processing one reply went.
#[derive(Default)]
struct Timed {
    stages: StageTimes,
    check: Duration,
}

fn hook_failed(
    interceptor: &str,
    stage: Stage,
    source: BoxError,
    on_error: OnError,
    skipped: &mut Vec<String>,
) -> Result<(), Error> {
    match on_error {
        OnError::Fail => Err(Error::Hook {
            interceptor: interceptor.to_owned(),
            stage,
            source,
        }),
        OnError::Skip => {
            warn!(interceptor, %stage, error = %source, "interceptor failed; skipped");
            skipped.push(format!("{interceptor}/{stage}: {source}"));
            Ok(())
        }
    }
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("provider", &self.backend.provider())
            .field("config", &self.config)
            .field("chain", &self.chain)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
