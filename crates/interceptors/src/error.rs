//! The error type of the pipeline: every variant says where (interceptor and stage, attempt, provider).
//!
//! A variant that wraps another error returns it from `source()` and leaves it out of its own message,
//! so a reporter that walks the chain ([`ErrorChain`], anyhow's `{:#}`) says each cause once.
//!
//! As the backends' error, [`Error::kind`] says which variant without its fields, and predicates say
//! what callers branch on. The ones about the call ([`Error::is_timeout`], [`Error::is_retryable`],
//! [`Error::is_rate_limited`]...) are answered by the wrapped [`claij_backends::Error`]: this crate
//! never decides them itself, so "retryable" has one definition
//! ([`claij_backends::Error::is_retryable`]), the one the HTTP retry loop uses.

use claij_validation::Violation;

use crate::budget::BudgetKind;
use crate::interceptor::{BoxError, Stage};
use crate::pipeline::{Attempt, Verdict};

/// Why a request failed.
///
/// Branch on the predicates, which look through [`Error::Backend`] to the backend's error:
///
/// ```
/// use std::time::Duration;
/// use claij_backends::ErrorContext;
/// use claij_interceptors::{Error, ErrorKind};
///
/// let error = Error::Backend {
///     attempts: Vec::new(),
///     source: Box::new(claij_backends::Error::Timeout {
///         context: ErrorContext::new("openai"),
///         after: Duration::from_secs(30),
///     }),
/// };
/// match error.kind() {
///     ErrorKind::RetriesExhausted => println!("no valid reply: rephrase"),
///     ErrorKind::BudgetExceeded => println!("allow more"),
///     _ if error.is_retryable() => println!("try again later"),
///     _ => println!("give up"),
/// }
/// assert!(error.is_timeout() && error.is_retryable() && !error.is_invalid_reply());
/// assert_eq!(error.backend().map(|e| e.kind()), Some(claij_backends::ErrorKind::Timeout));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An interceptor's hook failed (and its policy is [`crate::OnError::Fail`]).
    #[error("interceptor `{interceptor}` failed in {stage}")]
    Hook {
        /// The interceptor.
        interceptor: String,
        /// The hook.
        stage: Stage,
        /// What it returned.
        source: BoxError,
    },
    /// A schema delta was rejected, or the base schema is invalid.
    #[error("{}schema rejected", interceptor_prefix(.interceptor))]
    Schema {
        /// The interceptor whose delta was rejected (`None` for the base schema).
        interceptor: Option<String>,
        /// Why, with the extension and the JSON pointer.
        source: Box<claij_schema::Error>,
    },
    /// The composed schema compiles, but no validator can be built for it (a failure of
    /// claij-validation other than an invalid schema).
    #[error("cannot build the validator of the composed schema")]
    Validator {
        /// What claij-validation returned.
        source: Box<claij_validation::Error>,
    },
    /// The backend failed; the attempts made before (and including) the failing one are kept.
    #[error("attempt {}", .attempts.last().map_or(0, |a| a.number))]
    Backend {
        /// Every attempt, the last one being the failed call; in an agent run, the earlier steps'
        /// first ([`Attempt::calls`] tells the calls apart).
        attempts: Vec<Attempt>,
        /// The backend's error (provider, status, request id).
        source: Box<claij_backends::Error>,
    },
    /// Every attempt produced an invalid reply.
    #[error("{}", .0)]
    RetriesExhausted(Box<Exhausted>),
    /// An agent run ([`crate::Pipeline::run_agent`]) reached a bound of its [`crate::Budget`] before
    /// an answer.
    #[error("the agent run reached its {budget} budget: {used} used of {limit}{}", next_call(.estimate))]
    BudgetExceeded {
        /// Which bound.
        budget: BudgetKind,
        /// The bound (steps, tokens or US dollars).
        limit: f64,
        /// What the run had used when it stopped.
        used: f64,
        /// The estimated cost of the call the run did not make, when that call would have crossed
        /// the cost bound (see [`crate::Budget`]).
        estimate: Option<f64>,
        /// Every attempt of the run's steps.
        attempts: Vec<Attempt>,
    },
    /// An agent run has a cost bound ([`crate::Budget::max_cost_usd`]) but no known price for its
    /// model ([`crate::Budget::price`]): nothing was sent, since no call's cost can be estimated.
    #[error(
        "no price for {provider}:{model}: an agent run with a max_cost_usd budget needs the model's input and output prices (Budget::price)"
    )]
    Unpriced {
        /// The backend's provider.
        provider: String,
        /// The model.
        model: String,
    },
    /// The validated value does not deserialize into the requested Rust type.
    #[error("the valid answer does not fit `{type_name}`: {message}")]
    Typed {
        /// The Rust type asked for.
        type_name: &'static str,
        /// serde's message.
        message: String,
        /// The value.
        value: serde_json::Value,
    },
}

/// What kind of failure an [`Error`] is, to match on without its fields. What kind of backend
/// failure an [`ErrorKind::Backend`] is, is [`Error::backend`]'s [`claij_backends::Error::kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Hook`].
    Hook,
    /// [`Error::Schema`].
    Schema,
    /// [`Error::Validator`].
    Validator,
    /// [`Error::Backend`].
    Backend,
    /// [`Error::RetriesExhausted`].
    RetriesExhausted,
    /// [`Error::BudgetExceeded`].
    BudgetExceeded,
    /// [`Error::Unpriced`].
    Unpriced,
    /// [`Error::Typed`].
    Typed,
}

/// What is known when retries run out: every attempt, the last one's reply, verdict and violations
/// saying what was wrong in the end.
#[derive(Debug)]
pub struct Exhausted {
    /// Every attempt, in order (at least one): the failed model call's, after an agent run's
    /// earlier steps' ([`Exhausted::last_call`] is the failed call's alone).
    pub attempts: Vec<Attempt>,
}

impl std::fmt::Display for Exhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no valid reply after {} attempts; last: ",
            self.last_call().len()
        )?;
        let violations = self.violations();
        match (self.no_json(), violations.first()) {
            (Some(reason), _) => write!(f, "{reason}"),
            (None, Some(first)) if violations.len() > 1 => {
                write!(f, "{first} (and {} more)", violations.len() - 1)
            }
            (None, Some(first)) => write!(f, "{first}"),
            (None, None) => write!(f, "invalid"),
        }?;
        match self.truncation() {
            Some(truncation) => write!(f, "; {truncation}"),
            None => Ok(()),
        }
    }
}

impl Exhausted {
    /// The attempts of the model call that found no valid reply (an agent run's last step's).
    pub fn last_call(&self) -> &[Attempt] {
        Attempt::calls(&self.attempts).last().unwrap_or_default()
    }

    /// The last attempt.
    pub fn last(&self) -> Option<&Attempt> {
        self.attempts.last()
    }

    /// What was wrong with the last reply (empty when it held no JSON).
    pub fn violations(&self) -> &[Violation] {
        self.last().map_or(&[], |a| a.violations.as_slice())
    }

    /// The last reply as the model sent it.
    pub fn last_response(&self) -> &str {
        self.last()
            .and_then(|a| a.raw.as_deref())
            .unwrap_or_default()
    }

    /// Why the last reply failed, when it held no JSON.
    pub fn no_json(&self) -> Option<&str> {
        match self.last().map(|a| &a.verdict) {
            Some(Verdict::NoJson { reason }) => Some(reason),
            _ => None,
        }
    }

    /// What the token limit did, when it cut replies off: `the reply was cut at max_tokens (N)`
    /// for the last, else `K of N replies were cut at max_tokens (N)`.
    pub fn truncation(&self) -> Option<String> {
        if let Some(last) = self.attempts.last().and_then(Attempt::truncation) {
            return Some(last);
        }
        let call = self.last_call();
        let cut: Vec<&Attempt> = call.iter().filter(|a| a.is_truncated()).collect();
        let first = cut.first()?;
        Some(format!(
            "{} of {} replies were cut at {}",
            cut.len(),
            call.len(),
            first.token_limit()
        ))
    }
}

/// An error and its causes on one line, `outer: inner: innermost`, each cause said once (claij's
/// errors leave their source out of their own message).
///
/// ```
/// use claij_interceptors::{Error, ErrorChain, Stage};
///
/// let error = Error::Hook { interceptor: "memory".into(), stage: Stage::PrePrompt, source: "store down".into() };
/// assert_eq!(error.to_string(), "interceptor `memory` failed in pre_prompt");
/// assert_eq!(ErrorChain(&error).to_string(), "interceptor `memory` failed in pre_prompt: store down");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(error) = cause {
            write!(f, ": {error}")?;
            cause = error.source();
        }
        Ok(())
    }
}

impl Error {
    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Hook { .. } => ErrorKind::Hook,
            Error::Schema { .. } => ErrorKind::Schema,
            Error::Validator { .. } => ErrorKind::Validator,
            Error::Backend { .. } => ErrorKind::Backend,
            Error::RetriesExhausted(_) => ErrorKind::RetriesExhausted,
            Error::BudgetExceeded { .. } => ErrorKind::BudgetExceeded,
            Error::Unpriced { .. } => ErrorKind::Unpriced,
            Error::Typed { .. } => ErrorKind::Typed,
        }
    }

    /// The backend's error, when the backend failed ([`Error::Backend`]): what the call predicates
    /// below answer from. A hook's error is its own, even when the hook called a model.
    pub fn backend(&self) -> Option<&claij_backends::Error> {
        match self {
            Error::Backend { source, .. } => Some(source),
            _ => None,
        }
    }

    /// Whether the backend's call timed out ([`claij_backends::Error::is_timeout`]).
    pub fn is_timeout(&self) -> bool {
        self.backend()
            .is_some_and(claij_backends::Error::is_timeout)
    }

    /// Whether the backend's connection failed ([`claij_backends::Error::is_connect`]).
    pub fn is_connect(&self) -> bool {
        self.backend()
            .is_some_and(claij_backends::Error::is_connect)
    }

    /// Whether the provider asked to slow down ([`claij_backends::Error::is_rate_limited`]).
    pub fn is_rate_limited(&self) -> bool {
        self.backend()
            .is_some_and(claij_backends::Error::is_rate_limited)
    }

    /// Whether the provider refused the key ([`claij_backends::Error::is_auth`]).
    pub fn is_auth(&self) -> bool {
        self.backend().is_some_and(claij_backends::Error::is_auth)
    }

    /// Whether the account's quota is used up ([`claij_backends::Error::is_quota_exhausted`]).
    pub fn is_quota_exhausted(&self) -> bool {
        self.backend()
            .is_some_and(claij_backends::Error::is_quota_exhausted)
    }

    /// Whether the model would not answer ([`claij_backends::Error::is_refusal`]): a refusal, a
    /// content filter or a blocked prompt, with the provider's message. The call ends at once:
    /// neither the HTTP layer nor the pipeline's validation retries send it again.
    pub fn is_refusal(&self) -> bool {
        self.backend()
            .is_some_and(claij_backends::Error::is_refusal)
    }

    /// Whether the backend's call was cancelled ([`claij_backends::Error::is_cancelled`]).
    pub fn is_cancelled(&self) -> bool {
        self.backend()
            .is_some_and(claij_backends::Error::is_cancelled)
    }

    /// Whether the same request, sent again later, may succeed: the backend's answer
    /// ([`claij_backends::Error::is_retryable`], the one definition), false for every failure
    /// that is not the backend's (an invalid reply after every retry, a hook, a budget).
    pub fn is_retryable(&self) -> bool {
        self.backend()
            .is_some_and(claij_backends::Error::is_retryable)
    }

    /// How long the provider asked to wait ([`claij_backends::Error::retry_after`]).
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        self.backend().and_then(claij_backends::Error::retry_after)
    }

    /// The HTTP status of the backend's failed call, when it had a response.
    pub fn status(&self) -> Option<u16> {
        self.backend().and_then(claij_backends::Error::status)
    }

    /// Whether every attempt's reply was invalid ([`Error::RetriesExhausted`]): the model answered,
    /// but never a valid document.
    pub fn is_invalid_reply(&self) -> bool {
        self.kind() == ErrorKind::RetriesExhausted
    }

    /// Whether an agent run stopped at a bound of its [`crate::Budget`] ([`Error::BudgetExceeded`];
    /// a cost bound without a price is [`Error::Unpriced`], a configuration error, not this).
    pub fn is_budget(&self) -> bool {
        self.kind() == ErrorKind::BudgetExceeded
    }

    /// The same error after an agent run's `earlier` steps: their attempts before its own, so a
    /// failure at a later step still says what the run did (and spent).
    pub(crate) fn after_steps(mut self, earlier: &[Attempt]) -> Self {
        let attempts = match &mut self {
            Error::Backend { attempts, .. } => attempts,
            Error::RetriesExhausted(exhausted) => &mut exhausted.attempts,
            _ => return self,
        };
        attempts.splice(0..0, earlier.iter().cloned());
        self
    }

    /// The attempts made, when the failure happened after calling the backend (an agent run's
    /// every step's; [`Attempt::calls`] tells its model calls apart).
    pub fn attempts(&self) -> &[Attempt] {
        match self {
            Error::Backend { attempts, .. } => attempts,
            Error::RetriesExhausted(e) => &e.attempts,
            Error::BudgetExceeded { attempts, .. } => attempts,
            _ => &[],
        }
    }
}

/// `, and its next call was estimated at 0.00004`, for a run stopped before a call.
fn next_call(estimate: &Option<f64>) -> String {
    estimate.map_or_else(String::new, |usd| {
        format!(", and its next call was estimated at {usd}")
    })
}

fn interceptor_prefix(interceptor: &Option<String>) -> String {
    interceptor
        .as_ref()
        .map_or_else(String::new, |i| format!("interceptor `{i}`: "))
}

#[cfg(test)]
mod tests;
