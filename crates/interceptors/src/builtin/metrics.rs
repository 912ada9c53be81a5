//! The `metrics` interceptor: timings of every stage of every call, repairs, coercions, violations,
//! retries, first-try successes per model, usage and cost, kept in a shareable [`MetricsCollector`].
//!
//! **Schema delta:** none. **Prompt text:** none. The interceptor only reads: in `post_response` it
//! takes the [`CallReport`] the pipeline put in the context and adds every [`Attempt`] to its
//! collector.
//!
//! ```
//! use std::sync::Arc;
//! use claij_test_support::Scripted;
//! use claij_interceptors::builtin::metrics::Metrics;
//! use claij_interceptors::{Chain, Config, Context, Pipeline};
//!
//! let metrics = Metrics::new();
//! let collector = metrics.collector().clone(); // the caller keeps a handle
//! let backend = Arc::new(Scripted::replies([
//!     r#"{"answer": "hi"}"#,                        // no `state`: retried
//!     r#"{'answer': 'hi', 'state': 'done',}"#,      // repaired: quotes and a trailing comma
//! ]));
//! let pipeline = Pipeline::new(backend, Config::new("test-model"), Chain::new().with(metrics));
//! futures_executor::block_on(pipeline.ask(&mut Context::default(), "Hello"))?;
//!
//! let snapshot = collector.snapshot();
//! assert_eq!((snapshot.calls, snapshot.attempts, snapshot.retries), (1, 2, 1));
//! assert_eq!(snapshot.first_try, 0);
//! assert_eq!(snapshot.violations["required"], 1);
//! assert!(collector.render().contains("(1 retry)"));
//! # Ok::<(), claij_interceptors::Error>(())
//! ```
//!
//! # What is measured
//!
//! Timings follow the stages of a call, each a [`Timing`] (count, total, min, max):
//!
//! ```text
//! call                 one per call: the sum of its attempts' stages
//! ├─ prompt            per attempt: schema composition and pre_prompt hooks (first), retry prompt (later)
//! ├─ request           per attempt: the backend call (HTTP round trip for remote providers)
//! └─ processing        per attempt with a reply
//!    ├─ extraction     finding JSON in the reply (fences, tags, values in prose)
//!    ├─ repair         parsing the candidates, repairing malformed ones
//!    ├─ coercion       schema-aware coercion of values that failed validation
//!    ├─ validation     validation against the composed schema
//!    └─ check          semantic checks
//! ```
//!
//! Counts: model calls (succeeded, failed, valid on the first try), attempts and retries, verdicts,
//! fixes by [`FixKind`] grouped by stage (extraction, repair, coercion), violations by schema keyword
//! (or check name), errors by kind, usage and cost, an estimate of the input tokens (a token per four
//! bytes of request text), and per model the calls, successes, first tries, attempts, usage and
//! backend latency.
//!
//! A model call is one validation-retry loop with its own attempts ([`Attempt::calls`]): a turn of
//! [`Pipeline::ask`](crate::Pipeline::ask) is one, an agent run makes one per step (each step's call
//! valid on its first attempt counts as a first try), an FSM run one per `llm` state it passes. A
//! fix counts where it made a reply valid: the fixes of a reply that still failed validation stay in
//! that attempt's record ([`Attempt::fixes`]), not in these counts.
//!
//! # Failed calls
//!
//! A call whose retries run out, or whose backend fails, returns an error and never reaches
//! `post_response`. Record it with [`MetricsCollector::record_error`], which takes the attempts from
//! [`Error::attempts`]:
//!
//! ```
//! # use std::sync::Arc;
//! # use claij_test_support::Scripted;
//! # use claij_interceptors::builtin::metrics::Metrics;
//! # use claij_interceptors::{Chain, Config, Context, Pipeline};
//! let metrics = Metrics::new();
//! let collector = metrics.collector().clone();
//! let backend = Arc::new(Scripted::replies(["no json here"]));
//! let mut config = Config::new("test-model");
//! config.max_retries = 0;
//! let pipeline = Pipeline::new(backend, config, Chain::new().with(metrics));
//! if let Err(e) = futures_executor::block_on(pipeline.ask(&mut Context::default(), "Hello")) {
//!     collector.record_error(&e);
//! }
//! let snapshot = collector.snapshot();
//! assert_eq!((snapshot.calls, snapshot.failed), (1, 1));
//! assert_eq!(snapshot.errors["retries_exhausted"], 1);
//! ```
//!
//! Put the interceptor last in the chain: post hooks run in reverse, so it records the call before any
//! other post hook can fail it. One collector may serve several pipelines (clone the [`Metrics`] or
//! pass the collector to [`Metrics::with_collector`]); the same collector twice in one chain counts
//! every call twice.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use claij_backends::{BoxFuture, Usage};
use claij_validation::FixKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::debug;

use crate::context::Context;
use crate::error::Error;
use crate::interceptor::{BoxError, Interceptor};
use crate::pipeline::{Attempt, CallReport, Verdict};

mod render;

/// The interceptor: adds each successful call's [`CallReport`] to its [`MetricsCollector`].
///
/// Cloning it shares the collector.
#[derive(Debug, Clone, Default)]
pub struct Metrics {
    collector: MetricsCollector,
}

/// A shared, thread-safe tally of calls (an `Arc` inside: clones see the same numbers).
#[derive(Clone, Default)]
pub struct MetricsCollector {
    inner: Arc<Mutex<MetricsSnapshot>>,
}

/// Everything counted so far: serializable, and rendered as text by [`MetricsSnapshot::render`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// Model calls recorded (`succeeded + failed`): validation-retry loops, each with its attempts
    /// (an agent run's steps are a call each).
    pub calls: u64,
    /// Model calls whose last reply was valid.
    pub succeeded: u64,
    /// Model calls that ended without a valid reply (retries exhausted, the backend failed).
    pub failed: u64,
    /// Model calls whose first reply was valid.
    pub first_try: u64,
    /// Attempts over all calls.
    pub attempts: u64,
    /// Retries over all calls (attempts after the first).
    pub retries: u64,
    /// How the attempts' replies fared.
    pub verdicts: VerdictCounts,
    /// Errors recorded, by kind (`retries_exhausted`, `backend`, `hook`, `schema`, `typed`).
    pub errors: BTreeMap<String, u64>,
    /// Time spent per stage.
    pub timings: Timings,
    /// Fixes made while finding JSON in replies that then validated ([`FixKind::Extracted`],
    /// [`FixKind::Unescaped`]).
    pub extractions: BTreeMap<FixKind, u64>,
    /// Fixes made by repair (trailing commas, quotes, truncation, ...) to replies that then
    /// validated, by kind.
    pub repairs: BTreeMap<FixKind, u64>,
    /// Fixes made by coercion (enum case, strings to numbers, ...) to replies that then validated,
    /// by kind.
    pub coercions: BTreeMap<FixKind, u64>,
    /// Violations by keyword (`required`, `enum`, ...; a semantic check's name for its violations).
    pub violations: BTreeMap<String, u64>,
    /// Tokens and cost over all attempts.
    pub usage: Usage,
    /// Input tokens estimated from the text of the requests that got a reply (a token per four
    /// bytes), to compare with `usage.input_tokens`.
    pub estimated_input_tokens: u64,
    /// Per model (as the requests name it).
    pub models: BTreeMap<String, ModelMetrics>,
}

/// How many attempts' replies ended in each [`Verdict`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct VerdictCounts {
    /// Valid.
    pub valid: u64,
    /// JSON violating the schema or a check.
    pub invalid: u64,
    /// No JSON in the reply.
    pub no_json: u64,
    /// The backend failed.
    pub backend_error: u64,
}

/// Time per stage; see the [module docs](self) for how the stages nest.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Timings {
    /// Whole calls: the sum of their attempts' prompt, request and processing times.
    pub call: Timing,
    /// Building each attempt's request: schema and prompts, or the retry prompt.
    pub prompt: Timing,
    /// The backend call of each attempt.
    pub request: Timing,
    /// Processing each reply (the five stages below, and the bookkeeping around them).
    pub processing: Timing,
    /// Finding JSON in the reply.
    pub extraction: Timing,
    /// Parsing and repairing.
    pub repair: Timing,
    /// Coercion.
    pub coercion: Timing,
    /// Validation against the schema.
    pub validation: Timing,
    /// Semantic checks.
    pub check: Timing,
}

/// Durations of one stage: how many, their total, the shortest and the longest.
///
/// Serialized in milliseconds (`{"count": 2, "total_ms": 1.5, "min_ms": 0.5, "max_ms": 1.0}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Timing {
    /// Durations recorded.
    pub count: u64,
    /// Their sum.
    #[serde(rename = "total_ms", with = "millis")]
    pub total: Duration,
    /// The shortest (zero when none).
    #[serde(rename = "min_ms", with = "millis")]
    pub min: Duration,
    /// The longest.
    #[serde(rename = "max_ms", with = "millis")]
    pub max: Duration,
}

/// What one model did.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelMetrics {
    /// The providers it was called through (unknown for calls that ran out of retries).
    pub providers: BTreeSet<String>,
    /// Model calls recorded.
    pub calls: u64,
    /// Model calls whose last reply was valid.
    pub succeeded: u64,
    /// Model calls whose first reply was valid.
    pub first_try: u64,
    /// Attempts over its calls.
    pub attempts: u64,
    /// Tokens and cost.
    pub usage: Usage,
    /// Its backend latency per attempt.
    pub request: Timing,
}

/// Why the interceptor could not record a call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// `post_response` ran without the pipeline's [`CallReport`] in the context.
    #[error("no call report in the context: the metrics interceptor runs inside a pipeline")]
    NoReport,
}

impl Metrics {
    /// The interceptor with a fresh collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// The interceptor adding to an existing collector (one tally for several pipelines).
    pub fn with_collector(collector: MetricsCollector) -> Self {
        Self { collector }
    }

    /// Its collector; clone it to keep a handle after the interceptor moves into a chain.
    pub fn collector(&self) -> &MetricsCollector {
        &self.collector
    }
}

impl Interceptor for Metrics {
    fn name(&self) -> &str {
        "metrics"
    }

    fn post_response<'a>(
        &'a self,
        _response: &'a Value,
        ctx: &'a mut Context,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        // The work happens when the future is polled, inside the pipeline's `interceptor` span.
        Box::pin(async move {
            let report = ctx.get::<CallReport>().ok_or(MetricsError::NoReport)?;
            self.collector.record_call(report);
            Ok(())
        })
    }
}

impl MetricsCollector {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a successful turn's model calls (the interceptor does this in `post_response`): one, or
    /// an agent run's steps.
    pub fn record_call(&self, report: &CallReport) {
        report.attempts.iter().for_each(log_attempt);
        let mut tally = self.lock();
        for call in Attempt::calls(&report.attempts) {
            tally.add_call(Some(&report.provider), &report.model, call);
        }
    }

    /// Adds what a failed turn did: the model calls of an error with attempts
    /// ([`Error::RetriesExhausted`], [`Error::Backend`], [`Error::BudgetExceeded`]: an agent run's
    /// earlier steps included), each a success or a failure as its last reply was valid or not; and
    /// the error, by kind.
    ///
    /// Errors after the value was valid ([`Error::Typed`], a failing `post_response` hook) count
    /// only by kind: the interceptor has recorded the call if its own hook ran.
    pub fn record_error(&self, error: &Error) {
        let attempts = error.attempts();
        attempts.iter().for_each(log_attempt);
        let provider = match error {
            Error::Backend { source, .. } => Some(source.context().provider.as_str()),
            _ => None,
        };
        let mut tally = self.lock();
        *tally
            .errors
            .entry(error_kind(error).to_owned())
            .or_default() += 1;
        for call in Attempt::calls(attempts) {
            if let Some(first) = call.first() {
                let model = first.request.model.clone();
                tally.add_call(provider, &model, call);
            }
        }
    }

    /// A copy of the numbers so far.
    pub fn snapshot(&self) -> MetricsSnapshot {
        self.lock().clone()
    }

    /// The numbers so far, as a text summary (see [`MetricsSnapshot::render`]).
    pub fn render(&self) -> String {
        self.lock().render()
    }

    /// Returns the numbers so far and starts again from zero (for periodic reports).
    pub fn take(&self) -> MetricsSnapshot {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MetricsSnapshot> {
        // A panic while holding the lock leaves counts, not invariants: keep using them.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for MetricsCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tally = self.lock();
        f.debug_struct("MetricsCollector")
            .field("calls", &tally.calls)
            .field("attempts", &tally.attempts)
            .finish_non_exhaustive()
    }
}

impl MetricsSnapshot {
    /// The share of model calls valid on the first try (`None` before any call).
    pub fn first_try_rate(&self) -> Option<f64> {
        (self.calls > 0).then(|| self.first_try as f64 / self.calls as f64)
    }

    /// Fixes of every stage, by kind.
    pub fn fixes(&self) -> BTreeMap<FixKind, u64> {
        let mut all = self.extractions.clone();
        for (kind, n) in self.repairs.iter().chain(&self.coercions) {
            *all.entry(*kind).or_default() += n;
        }
        all
    }

    /// Adds one model call: its attempts, succeeded when the last one is valid.
    fn add_call(&mut self, provider: Option<&str>, model: &str, attempts: &[Attempt]) {
        let valid = |a: Option<&Attempt>| a.is_some_and(|a| a.verdict == Verdict::Valid);
        let succeeded = valid(attempts.last());
        let first_try = valid(attempts.first());
        let n = attempts.len() as u64;
        self.calls += 1;
        self.attempts += n;
        self.retries += n.saturating_sub(1);
        if succeeded {
            self.succeeded += 1;
        } else {
            self.failed += 1;
        }
        self.first_try += u64::from(first_try);
        let mut call = Duration::ZERO;
        for attempt in attempts {
            call += attempt.prepare_time + attempt.latency + attempt.process_time;
            self.add_attempt(attempt);
        }
        self.timings.call.record(call);

        let entry = self.models.entry(model.to_owned()).or_default();
        if let Some(provider) = provider {
            entry.providers.insert(provider.to_owned());
        }
        entry.calls += 1;
        entry.succeeded += u64::from(succeeded);
        entry.first_try += u64::from(first_try);
        entry.attempts += n;
        for attempt in attempts {
            entry.usage += attempt.usage;
            entry.request.record(attempt.latency);
        }
    }

    fn add_attempt(&mut self, attempt: &Attempt) {
        self.usage += attempt.usage;
        let t = &mut self.timings;
        t.prompt.record(attempt.prepare_time);
        t.request.record(attempt.latency);
        match &attempt.verdict {
            Verdict::Valid => self.verdicts.valid += 1,
            Verdict::Invalid => self.verdicts.invalid += 1,
            Verdict::NoJson { .. } => self.verdicts.no_json += 1,
            Verdict::BackendError { .. } => {
                self.verdicts.backend_error += 1;
                return; // no reply: nothing processed
            }
        }
        self.estimated_input_tokens += (attempt.request.text_len() / 4) as u64;
        t.processing.record(attempt.process_time);
        t.extraction.record(attempt.stage_times.extraction);
        t.repair.record(attempt.stage_times.repair);
        t.coercion.record(attempt.stage_times.coercion);
        t.validation.record(attempt.stage_times.validation);
        t.check.record(attempt.check_time);
        // A reply that still failed keeps its fixes in its own record: they repaired nothing.
        let fixes = match attempt.verdict {
            Verdict::Valid => attempt.fixes.as_slice(),
            _ => &[],
        };
        for fix in fixes {
            let group = match stage_of(fix.kind) {
                FixStage::Extraction => &mut self.extractions,
                FixStage::Repair => &mut self.repairs,
                FixStage::Coercion => &mut self.coercions,
            };
            *group.entry(fix.kind).or_default() += 1;
        }
        for violation in &attempt.violations {
            *self
                .violations
                .entry(violation.keyword.clone())
                .or_default() += 1;
        }
    }
}

impl Timing {
    /// Adds one duration.
    pub fn record(&mut self, duration: Duration) {
        self.min = if self.count == 0 {
            duration
        } else {
            self.min.min(duration)
        };
        self.max = self.max.max(duration);
        self.total += duration;
        self.count += 1;
    }

    /// The mean duration (zero when none).
    pub fn mean(&self) -> Duration {
        match u32::try_from(self.count) {
            Ok(0) => Duration::ZERO,
            Ok(n) => self.total / n,
            Err(_) => Duration::from_secs_f64(self.total.as_secs_f64() / self.count as f64),
        }
    }
}

/// The stage a fix belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FixStage {
    Extraction,
    Repair,
    Coercion,
}

fn stage_of(kind: FixKind) -> FixStage {
    if kind.is_extraction() {
        FixStage::Extraction
    } else if kind.is_coercion() {
        FixStage::Coercion
    } else {
        FixStage::Repair
    }
}

fn error_kind(error: &Error) -> &'static str {
    match error {
        Error::Hook { .. } => "hook",
        Error::Schema { .. } => "schema",
        Error::Validator { .. } => "validator",
        Error::Backend { .. } => "backend",
        Error::RetriesExhausted(_) => "retries_exhausted",
        Error::BudgetExceeded { .. } => "budget_exceeded",
        Error::Unpriced { .. } => "unpriced",
        Error::Typed { .. } => "typed",
    }
}

/// Logs an attempt's stage timings (`debug`); the pipeline itself warns about repairs.
fn log_attempt(attempt: &Attempt) {
    let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    debug!(
        attempt = attempt.number,
        prompt_us = micros(attempt.prepare_time),
        request_us = micros(attempt.latency),
        process_us = micros(attempt.process_time),
        extraction_us = micros(attempt.stage_times.extraction),
        repair_us = micros(attempt.stage_times.repair),
        coercion_us = micros(attempt.stage_times.coercion),
        validation_us = micros(attempt.stage_times.validation),
        check_us = micros(attempt.check_time),
        request_bytes = attempt.request.text_len(),
        reply_bytes = attempt.raw.as_ref().map_or(0, String::len),
        "attempt timings"
    );
}

/// The snake_case name of a fix kind, as serialized.
fn kind_name(kind: FixKind) -> String {
    match serde_json::to_value(kind) {
        Ok(Value::String(s)) => s,
        _ => format!("{kind:?}"),
    }
}

/// `Duration` as (fractional) milliseconds.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        Duration::try_from_secs_f64(ms / 1000.0).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests;
