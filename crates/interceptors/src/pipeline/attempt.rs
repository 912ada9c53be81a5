//! What a call leaves behind: each [`Attempt`] with its [`Verdict`], and the [`Answer`].

use std::sync::Arc;
use std::time::Duration;

use claij_backends::{ChatRequest, FinishReason, Usage};
use claij_validation::{Fix, StageTimes, Violation};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::CutString;

/// What one attempt sent, got and made of it.
#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    /// 1 for the first attempt of its model call.
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
    /// Part of `process_time`: the semantic checks ([`Pipeline::with_check`](super::Pipeline::with_check)).
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

impl Attempt {
    /// The model calls `attempts` hold, in order, each with its own attempts: a call's attempts are
    /// numbered from 1, so each attempt numbered 1 starts the next call. An agent run's answer holds
    /// a call per step, an FSM state's entry the state's call (and a remedy's re-ask after it).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use claij_test_support::Scripted;
    /// # use claij_interceptors::{Attempt, Chain, Config, Context, Pipeline};
    /// let backend = Arc::new(Scripted::replies([r#"{"answer": 4}"#, r#"{"answer": "4", "state": "done"}"#]));
    /// let pipeline = Pipeline::new(backend, Config::new("m"), Chain::new());
    /// let answer = futures_executor::block_on(pipeline.ask(&mut Context::default(), "2+2?"))?;
    /// let calls: Vec<&[Attempt]> = Attempt::calls(&answer.attempts).collect();
    /// assert_eq!(calls.len(), 1);
    /// assert_eq!(calls[0].len(), 2); // one call, valid on its second attempt
    /// # Ok::<(), claij_interceptors::Error>(())
    /// ```
    pub fn calls(attempts: &[Attempt]) -> impl Iterator<Item = &[Attempt]> {
        attempts.chunk_by(|_, next| next.number != 1)
    }

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
    /// Every attempt, the last one being the valid reply; an agent run's are every step's, each
    /// step's call numbering its own from 1 ([`Attempt::calls`]).
    pub attempts: Vec<Attempt>,
    /// Tokens and cost over all attempts.
    pub usage: Usage,
    /// Hooks that failed under [`OnError::Skip`](crate::OnError::Skip), as `interceptor/stage: error`.
    pub skipped: Vec<String>,
}

impl<T> Answer<T> {
    /// Retries used over the answer's model calls (0 when each call's first reply was valid; an
    /// agent run makes a call per step).
    pub fn retries(&self) -> usize {
        self.attempts
            .len()
            .saturating_sub(Attempt::calls(&self.attempts).count())
    }

    /// Cost over all attempts, when the backend reports it.
    pub fn cost_usd(&self) -> Option<f64> {
        self.usage.cost_usd
    }
}

/// What the call did, in the context while `post_response` hooks run so interceptors (metrics,
/// logging) can see every attempt; the pipeline takes it back for the [`Answer`] (the attempts are
/// moved, not copied), so it is not in the context before or after a call.
#[derive(Debug, Clone)]
pub struct CallReport {
    /// The provider.
    pub provider: String,
    /// The model.
    pub model: String,
    /// Every attempt of the turn: one model call's, or an agent run's steps' ([`Attempt::calls`]).
    pub attempts: Vec<Attempt>,
}
