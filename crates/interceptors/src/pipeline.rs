//! The [`Pipeline`]: compose the schema, build the prompts, call the backend, extract, repair, coerce
//! and validate the reply, retry with a precise prompt when it is invalid, then let interceptors act.
//!
//! The validation-retry loop is here; a turn's steps, its hooks and its history in `turn`, an agent
//! run's tools and budget in `agent`; what a call records is in `attempt` ([`Attempt`], [`Verdict`],
//! [`Answer`]), its knobs in `config`, the composed schemas in `prepare`, each attempt's request
//! (delivery, history, retry) in `request` and the strings a dialect's bound cut in `cut`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use claij_backends::{
    Backend, ChatRequest, ChatResponse, FinishReason, Message, ToolCall, ToolSpec, Usage,
};
use claij_validation::{Fix, Outcome, StageTimes, Violation, process_timed};
use serde_json::Value;
use tracing::{Instrument as _, debug, warn};

use crate::chain::Chain;
use crate::context::Context;
use crate::error::{Error, Exhausted};
use crate::failure_log::FailureLog;
use crate::interceptor::{BoxError, Interceptor, OnError, Stage};
use crate::prompts::Prompts;
use crate::schema::Schema;
use crate::tool::Executor;

mod agent;
mod attempt;
mod config;
mod cut;
mod prepare;
mod request;
pub(crate) mod spans;
mod turn;

pub use agent::AgentRun;
pub use attempt::{Answer, Attempt, CallReport, Verdict};
pub use config::{
    Config, DEFAULT_MAX_REPLY_BYTES, EXAMPLE_INTRO, RETRY_TEMPERATURE, RetryForm, SchemaFormat,
    ShowExample, StructuredMode,
};
pub use cut::CutString;
pub use prepare::Prepared;
use prepare::Schemas;
use request::{Delivery, Retry};
use turn::Done;

/// A user check beyond the schema (a chosen index within range, a date in the future...): the
/// violations it returns are fed to the same retry loop as schema violations. The
/// [`Interceptor::check`](crate::Interceptor::check) hook of a [`from_fn`](crate::from_fn) interceptor.
pub type Check = dyn Fn(&Value, &Context) -> Vec<Violation> + Send + Sync;

/// What a call's replies must be: JSON valid against a base schema grown by the chain's deltas, or
/// plain text taken as it is.
#[derive(Debug, Clone)]
pub(crate) enum Base {
    /// The base schema the chain's deltas grow.
    Schema(Arc<Value>),
    /// No schema: the reply's text is the answer, never validated nor retried.
    PlainText,
}

/// What stays the same across the attempts of one call.
#[derive(Clone, Copy)]
struct Call<'a> {
    ctx: &'a Context,
    prompts: &'a Prompts,
    /// `None` for [`Base::PlainText`].
    prepared: Option<&'a Prepared>,
    delivery: &'a Delivery,
    on_partial: Option<&'a (dyn Fn(&Value) + Send + Sync)>,
    /// An agent turn's earlier steps, sent after the user's input.
    steps: &'a [Message],
    /// The tools sent natively (an agent turn's).
    tools: &'a [ToolSpec],
    /// The agent run whose budget admits each model call, and the earlier steps' attempts.
    agent: Option<&'a agent::Agent<'a>>,
    spent: &'a [Attempt],
}

/// What one attempt left: its record, and what the loop goes on with.
struct Tried {
    attempt: Attempt,
    reply: Reply,
}

/// The outcome of one attempt, beside its record.
enum Reply {
    /// The backend failed: the call ends with this error, unless `resend`.
    Failed {
        source: claij_backends::Error,
        /// A stream broke after part of its reply arrived, with an error that may pass when sent
        /// again ([`claij_backends::Error::is_retryable`]): the backend could not send it again
        /// itself (its caller had seen part of it), so the loop does, as its next attempt.
        resend: bool,
    },
    /// The backend replied; the value made of it, when it holds JSON (valid only when the attempt's
    /// verdict is [`Verdict::Valid`]).
    Judged(Option<Value>),
    /// The backend replied with native calls of the tools sent.
    Calls {
        /// What the model wrote beside its calls.
        text: String,
        calls: Vec<ToolCall>,
    },
}

/// What [`Pipeline::judge`] makes of a reply.
struct Judgement {
    verdict: Verdict,
    value: Option<Value>,
    fixes: Vec<Fix>,
    violations: Vec<Violation>,
}

impl Judgement {
    fn no_json(reason: String) -> Self {
        Self {
            verdict: Verdict::NoJson { reason },
            value: None,
            fixes: Vec::new(),
            violations: Vec::new(),
        }
    }
}

/// Below this many bytes a streamed reply is recovered at every event, for smooth partial values.
const PARTIAL_EVERY_EVENT: usize = 4096;

/// A request pipeline: one backend and model, a chain of interceptors, a base schema.
///
/// ```
/// use std::sync::Arc;
/// use claij_test_support::Scripted;
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
/// // The retry keeps the conversation: the question, the invalid reply, then what to fix.
/// let retry = &backend.requests()[1].messages;
/// assert_eq!(retry[1].content, r#"{"answer": 4}"#);
/// assert!(retry[2].content.contains("missing required property `state`"));
/// # Ok::<(), claij_interceptors::Error>(())
/// ```
pub struct Pipeline {
    backend: Arc<dyn Backend>,
    config: Config,
    chain: Chain,
    base: Base,
    /// Checks added with [`Pipeline::with_check`], run after the chain's own.
    checks: Vec<Arc<dyn Interceptor>>,
    schemas: Mutex<Schemas>,
    failure_log: Option<FailureLog>,
    /// The tools an agent run calls ([`Pipeline::with_tools`]).
    tools: Vec<Executor>,
}

impl Pipeline {
    /// A pipeline answering with the base schema ([`claij_schema::base`]) grown by the chain's deltas.
    pub fn new(backend: Arc<dyn Backend>, config: Config, chain: Chain) -> Self {
        Self {
            backend,
            config,
            chain,
            base: Base::Schema(Arc::new(claij_schema::base())),
            checks: Vec::new(),
            schemas: Mutex::new(Schemas::default()),
            failure_log: None,
            tools: Vec::new(),
        }
    }

    /// The same pipeline with tools an agent run ([`Pipeline::run_agent`]) lets the model call,
    /// run by `executor` (see [`crate::tool`]): natively where the backend takes tools, else through
    /// the reply's field of the interceptor in the chain that offers them (the `tools` or `mcp`
    /// interceptor: give it the same executor, [`Tools::executor`](crate::builtin::tools::Tools::executor)).
    /// Called again, it adds another executor; the first one offering a name runs its calls.
    #[must_use]
    pub fn with_tools(mut self, executor: Executor) -> Self {
        self.tools.push(executor);
        self
    }

    /// The tools given with [`Pipeline::with_tools`].
    pub fn tools(&self) -> &[Executor] {
        &self.tools
    }

    /// The same pipeline with another base schema.
    #[must_use]
    pub fn with_base_schema(mut self, base: Value) -> Self {
        self.base = Base::Schema(Arc::new(base));
        self
    }

    /// The same pipeline answering in plain text: the reply's text is the answer, with no schema, no
    /// validation and no retry (`pre_schema` hooks and checks do not run).
    #[must_use]
    pub fn with_plain_text(mut self) -> Self {
        self.base = Base::PlainText;
        self
    }

    /// The same pipeline with a semantic check, named for the violations' `keyword`: a shorthand for
    /// an interceptor with only a [`check`](Interceptor::check) hook, run after the chain's checks.
    #[must_use]
    pub fn with_check(
        mut self,
        name: impl Into<String>,
        check: impl Fn(&Value, &Context) -> Vec<Violation> + Send + Sync + 'static,
    ) -> Self {
        self.checks
            .push(Arc::new(crate::from_fn(name).check(check)));
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
        match &self.base {
            Base::Schema(base) => schemas.audit(base).unwrap_or_default(),
            Base::PlainText => claij_schema::AuditLog::default(),
        }
    }

    /// The schema deltas the last request on the default base schema was composed of, in order, each
    /// with the interceptor that added it and when this pipeline first composed it (none before the
    /// first request, or for plain text): what a conversation's [`claij_schema::AppliedLog`] records
    /// after each turn, so a saved conversation audits every delta that shaped its requests.
    pub fn applied(&self) -> Vec<claij_schema::SchemaDelta> {
        let schemas = self.schemas.lock().unwrap_or_else(PoisonError::into_inner);
        match &self.base {
            Base::Schema(base) => schemas.applied(base),
            Base::PlainText => Vec::new(),
        }
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
        base: Base,
        on_partial: Option<&(dyn Fn(&Value) + Send + Sync)>,
    ) -> Result<Answer, Error> {
        let span = spans::ask(self.backend.provider(), &self.config.model, ctx.turn, false);
        // The span is read back from the awaited future, not cloned beside it: one span per call
        // in flight, not two.
        let mut turn = std::pin::pin!(
            self.run(ctx, input, base, on_partial, None)
                .instrument(span)
        );
        let ran = turn.as_mut().await;
        if let Err(e) = &ran {
            spans::fail_with(turn.span(), e);
        }
        ran.map(|ran| ran.answer)
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
            let _span = spans::interceptor(name, "pre_schema").entered();
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
        prompts.history = ctx.history.window(&self.config.history).to_vec();
        for link in self.chain.links() {
            let name = link.interceptor.name();
            let _span = spans::interceptor(name, "pre_prompt").entered();
            let saved = prompts.clone();
            if let Err(e) = link.interceptor.pre_prompt(&mut prompts, ctx) {
                prompts = saved;
                hook_failed(name, Stage::PrePrompt, e, link.on_error, skipped)?;
            }
        }
        Ok(prompts)
    }

    /// The validation-retry loop.
    ///
    /// The request to send is held as an `Arc` (one pointer, not the request's 216 bytes) across
    /// each call's wait: this future is part of every call in flight.
    async fn attempts(
        &self,
        call: &Call<'_>,
        first: Arc<ChatRequest>,
        prepare_time: Duration,
    ) -> Result<(Done, Vec<Attempt>), Error> {
        let prompts = call.prompts;
        let mut attempts: Vec<Attempt> = Vec::new();
        // A conversation retry's earlier replies and corrections.
        let mut exchanges = Vec::new();
        let mut next = first;
        let mut prepare_time = prepare_time;
        loop {
            let number = attempts.len() + 1;
            let sending = next;
            if let Some(agent) = call.agent {
                agent.admit_call(call.spent, &attempts, &sending)?;
            }
            let provider = self.backend.provider();
            let model = self.config.model.as_str();
            let span = spans::call(provider, model, number, &sending, call.prepared);
            let mut trying = std::pin::pin!(
                self.attempt(call, number, sending, prepare_time)
                    .instrument(span)
            );
            let Tried { attempt, reply } = trying.as_mut().await;
            spans::record_attempt(trying.span(), &attempt);
            spans::attempt_metrics(provider, model, &attempt);
            let value = match reply {
                Reply::Judged(value) => value,
                Reply::Calls { text, calls } => {
                    attempts.push(attempt);
                    spans::call_metrics(provider, model, &attempts);
                    return Ok((Done::Calls { text, calls }, attempts));
                }
                Reply::Failed { source, resend }
                    if resend && attempts.len() < self.config.max_retries =>
                {
                    warn!(
                        attempt = number,
                        error = %source,
                        "the reply's stream broke; sending the request again"
                    );
                    next = Arc::new(ChatRequest::clone(&attempt.request));
                    attempts.push(attempt);
                    prepare_time = Duration::ZERO;
                    continue;
                }
                Reply::Failed { source, .. } => {
                    attempts.push(attempt);
                    spans::call_metrics(provider, model, &attempts);
                    self.log_failures(&attempts);
                    return Err(Error::Backend {
                        attempts,
                        source: Box::new(source),
                    });
                }
            };
            if let (Verdict::Valid, Some(value)) = (&attempt.verdict, value) {
                attempts.push(attempt);
                spans::call_metrics(provider, model, &attempts);
                if attempts.len() > 1 {
                    self.log_failures(&attempts);
                }
                return Ok((Done::Value(value), attempts));
            }
            if attempts.len() >= self.config.max_retries {
                attempts.push(attempt);
                spans::call_metrics(provider, model, &attempts);
                self.log_failures(&attempts);
                return Err(Error::RetriesExhausted(Box::new(Exhausted { attempts })));
            }
            let retry_started = Instant::now();
            let retry = self.retry(prompts, &attempt, &mut exchanges);
            let mut request = self.request(call, retry);
            attempts.push(attempt);
            self.vary_retry(&mut request, attempts.len() + 1);
            next = Arc::new(request);
            prepare_time = retry_started.elapsed();
        }
    }

    /// One attempt, inside its `llm.call` span: the backend call and what was made of the reply.
    async fn attempt(
        &self,
        call: &Call<'_>,
        number: usize,
        request: Arc<ChatRequest>,
        prepare_time: Duration,
    ) -> Tried {
        let Call {
            ctx,
            prepared,
            delivery,
            on_partial,
            ..
        } = *call;
        let dialect_losses = match delivery {
            Delivery::Provider { losses, .. } => Arc::clone(losses),
            Delivery::Prompted => Arc::new(Vec::new()),
        };
        let sent = Instant::now();
        let result = match on_partial {
            None => self
                .backend
                .complete(&request)
                .await
                .map_err(|e| (e, false)),
            // Boxed: a streamed reply's state (its assembler, the last partial value) would
            // otherwise sit in every call's future, streamed or not.
            Some(on_partial) => {
                Box::pin(self.streamed(&request, on_partial, delivery.envelope())).await
            }
        };
        let latency = sent.elapsed();
        let mut response = match result {
            Ok(r) => r,
            Err((source, shown)) => {
                // Returned in `Error::Backend`: the caller says it (a warning would say it twice).
                debug!(attempt = number, error = %source, "backend call failed");
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
                let resend = shown && source.is_retryable();
                return Tried {
                    attempt,
                    reply: Reply::Failed { source, resend },
                };
            }
        };
        let native_calls: Vec<ToolCall> = if call.tools.is_empty() {
            Vec::new()
        } else {
            response
                .calls_to_run(&request)
                .into_iter()
                .cloned()
                .collect()
        };
        if let Some(property) = delivery.envelope()
            && native_calls.is_empty()
            && let Some(inner) = request::unwrap_envelope(&response.content, property)
        {
            // The root was sent wrapped: validation, the journal and the trail see the value inside.
            response.content = inner;
        }
        spans::record_response(&tracing::Span::current(), &response);
        debug!(
            latency_ms = latency.as_millis() as u64,
            input_tokens = response.usage.input_tokens,
            output_tokens = response.usage.output_tokens,
            "llm reply"
        );
        let processing = Instant::now();
        let mut times = Timed::default();
        let Judgement {
            verdict,
            value,
            fixes,
            violations,
        } = if native_calls.is_empty() {
            self.judge(&response.content, prepared, ctx, &mut times)
        } else {
            // The step asks for tools: its calls' arguments are checked when they run.
            Judgement {
                verdict: Verdict::Valid,
                value: None,
                fixes: Vec::new(),
                violations: Vec::new(),
            }
        };
        if verdict == Verdict::Valid {
            log_fixes(number, &fixes);
        } else {
            // Attempts in all: the first and `max_retries` retries. What repair changed in a reply
            // that still failed is part of this failure, not a repair of its own.
            let of = self.config.max_retries.saturating_add(1);
            let why = match &verdict {
                Verdict::NoJson { reason } => reason.as_str(),
                _ => "violations",
            };
            let truncated = response.finish_reason == FinishReason::Length;
            let fixed = (!fixes.is_empty()).then(|| fix_counts(&fixes));
            let fixes = fixed.as_deref();
            if number < of {
                warn!(
                    attempt = number,
                    of,
                    why,
                    n_violations = violations.len(),
                    truncated,
                    fixes,
                    "reply failed validation; retrying"
                );
            } else {
                warn!(
                    attempt = number,
                    of,
                    why,
                    n_violations = violations.len(),
                    truncated,
                    fixes,
                    "reply failed validation; no retries left"
                );
            }
        }
        let mut cut_strings = value
            .as_ref()
            .map(|v| cut::cut_strings(v, &dialect_losses))
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
            // Moved, not copied: the attempt keeps the one copy of the reply.
            raw: Some(std::mem::take(&mut response.content)),
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
            request_id: response.request_id.take(),
            dialect_losses,
            cut_strings,
        };
        let reply = if native_calls.is_empty() {
            Reply::Judged(value)
        } else {
            // What the model wrote beside its calls: the content holds the first call's arguments.
            Reply::Calls {
                text: response.text,
                calls: native_calls,
            }
        };
        Tried { attempt, reply }
    }

    /// A streamed reply assembled into a response, with partial values shown as the text grows; or
    /// the backend's error, and whether part of the reply had arrived before it.
    async fn streamed(
        &self,
        request: &ChatRequest,
        on_partial: &(dyn Fn(&Value) + Send + Sync),
        envelope: Option<&str>,
    ) -> Result<ChatResponse, (claij_backends::Error, bool)> {
        use futures_util::StreamExt as _;
        let mut stream = self.backend.stream(request);
        // Text, or the forced tool call's arguments once a call begins (text beside it is not the
        // answer).
        let mut assembler = claij_backends::Assembler::default();
        let mut last: Option<Value> = None;
        let mut recovered_at = 0;
        let mut tool_call = false;
        // Where the model may call tools (an agent's, sent natively; never beside a forced output
        // tool), a call's arguments are not the answer.
        let calls_are_tools = !request.tools.is_empty();
        let mut shown = false;
        while let Some(event) = stream.next().await {
            let event = event.map_err(|e| (e, shown))?;
            shown = true;
            if !assembler.push(event) || (calls_are_tools && assembler.is_tool_call()) {
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
                .and_then(|v| match envelope {
                    // A partial envelope shows the partial value inside it.
                    Some(property) => request::unwrap_value(v, property),
                    None => Some(v),
                })
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
        content: &str,
        prepared: Option<&Prepared>,
        ctx: &Context,
        times: &mut Timed,
    ) -> Judgement {
        let Some(prepared) = prepared else {
            // Plain text: the text is the answer.
            return Judgement {
                verdict: Verdict::Valid,
                value: Some(Value::String(content.to_owned())),
                fixes: Vec::new(),
                violations: Vec::new(),
            };
        };
        let bytes = content.len();
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
            return Judgement::no_json(reason);
        }
        let (outcome, stages) = process_timed(content, prepared.validator());
        times.stages = stages;
        match outcome {
            Outcome::Valid { value, fixes } => {
                let started = Instant::now();
                let violations = self.check(&value, ctx);
                times.check = started.elapsed();
                let verdict = if violations.is_empty() {
                    Verdict::Valid
                } else {
                    Verdict::Invalid
                };
                Judgement {
                    verdict,
                    value: Some(value),
                    fixes,
                    violations,
                }
            }
            Outcome::Invalid {
                value,
                violations,
                fixes,
            } => Judgement {
                verdict: Verdict::Invalid,
                value: Some(value),
                fixes,
                violations,
            },
            Outcome::NoJson { reason } => Judgement::no_json(reason),
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
                Some(Value::String(s)) => cut::at_last_word(s).map(|n| {
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

    /// The violations of every interceptor's [`check`](Interceptor::check) hook, the chain's in
    /// insertion order then [`Pipeline::with_check`]'s, each named by its interceptor when it names
    /// no keyword.
    fn check(&self, value: &Value, ctx: &Context) -> Vec<Violation> {
        let chained = self.chain.links().iter().map(|link| &link.interceptor);
        let mut violations = Vec::new();
        for interceptor in chained.chain(&self.checks) {
            let name = interceptor.name();
            let _span = spans::interceptor(name, "check").entered();
            violations.extend(interceptor.check(value, ctx).into_iter().map(|mut v| {
                if v.keyword.is_empty() {
                    name.clone_into(&mut v.keyword);
                }
                v
            }));
        }
        violations
    }

    /// The chain's [`Interceptor::pre_request`] hooks, in insertion order: the names of those that
    /// failed and were skipped ([`OnError::Skip`]).
    async fn pre_request(&self, input: &str, ctx: &mut Context) -> Result<Vec<String>, Error> {
        let mut skipped = Vec::new();
        for link in self.chain.links() {
            let name = link.interceptor.name();
            let span = spans::interceptor(name, "pre_request");
            let future = {
                let _entered = span.enter();
                link.interceptor.pre_request(input, ctx)
            };
            if let Err(e) = future.instrument(span).await {
                hook_failed(name, Stage::PreRequest, e, link.on_error, &mut skipped)?;
            }
        }
        Ok(skipped)
    }

    async fn post_response(
        &self,
        value: &Value,
        ctx: &mut Context,
        skipped: &mut Vec<String>,
    ) -> Result<(), Error> {
        for link in self.chain.links().iter().rev() {
            let name = link.interceptor.name();
            let span = spans::interceptor(name, "post_response");
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

/// Where the time of processing one reply went.
#[derive(Default)]
struct Timed {
    stages: StageTimes,
    check: Duration,
}

/// What made a valid reply valid: `reply repaired` (a warning) with its fixes, or `reply extracted`
/// (information: JSON cut out of a fence or prose is well-formed, not worth a warning on every call).
fn log_fixes(attempt: usize, fixes: &[Fix]) {
    if fixes.is_empty() {
        return;
    }
    if fixes.iter().all(|f| f.kind.is_extraction()) {
        tracing::info!(attempt, fixes = %fix_counts(fixes), "reply extracted");
    } else {
        warn!(attempt, fixes = %fix_counts(fixes), "reply repaired");
    }
}

/// Fixes by kind, `kind:n` comma-separated in kind order (`extracted:1,trailing_comma:2`).
fn fix_counts(fixes: &[Fix]) -> String {
    let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for fix in fixes {
        let kind = serde_json::to_value(fix.kind).map_or_else(
            |_| format!("{:?}", fix.kind),
            |v| v.as_str().unwrap_or_default().to_owned(),
        );
        *counts.entry(kind).or_default() += 1;
    }
    counts
        .iter()
        .map(|(kind, n)| format!("{kind}:{n}"))
        .collect::<Vec<_>>()
        .join(",")
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
