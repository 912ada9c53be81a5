//! The errors of claij-fsm: each says which state or transition, and why. A variant that wraps another
//! error returns it from `source()` and leaves it out of its message (walk the chain to print both:
//! `claij_interceptors::ErrorChain`, anyhow's `{:#}`).
//!
//! [`Error::kind`] names the variant; the predicates say what a caller branches on. Those about a
//! model call ([`Error::is_timeout`], [`Error::is_retryable`], [`Error::is_invalid_reply`]...) are
//! answered by the pipeline's error an [`Error::Llm`] wraps, which answers them from the backend's:
//! no layer decides them again, so a backend timeout is `is_timeout()` here too.

use std::path::PathBuf;

use claij_validation::Violation;

use crate::check::DefinitionError;

/// Why a definition cannot be loaded or a run cannot go on.
///
/// Branch on the predicates; those about the model call look through [`Error::Llm`] to the
/// pipeline's error and from there to the backend's:
///
/// ```
/// use std::time::Duration;
/// use claij_fsm::{Error, ErrorKind};
///
/// let timeout = claij_backends::Error::Timeout {
///     context: claij_backends::ErrorContext::new("openai"),
///     after: Duration::from_secs(30),
/// };
/// let error = Error::Llm {
///     state: "review".into(),
///     source: Box::new(claij_interceptors::Error::Backend {
///         attempts: Vec::new(),
///         source: Box::new(timeout),
///     }),
/// };
/// let advice = if error.is_limit() {
///     "allow more transitions"
/// } else if error.is_invalid_reply() {
///     "the model found no valid event: rephrase"
/// } else if error.is_retryable() {
///     "resume the run later"
/// } else {
///     "give up"
/// };
/// assert_eq!(advice, "resume the run later");
/// assert!(error.is_timeout() && error.kind() == ErrorKind::Llm);
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The definition is not valid JSON of the right shape.
    #[error("cannot read the FSM definition")]
    Parse(#[from] serde_json::Error),
    /// The definition is inconsistent.
    #[error(transparent)]
    Definition(#[from] DefinitionError),
    /// An event fits none of the transitions out of a state.
    #[error("invalid event from state `{state}`: {}", summary(.violations))]
    InvalidEvent {
        /// The state the event leaves.
        state: String,
        /// What is wrong with it.
        violations: Vec<Violation>,
    },
    /// A model found no valid event within its retries, and the state has no bail-out transition.
    #[error("state `{state}`")]
    Llm {
        /// The `llm` state.
        state: String,
        /// The pipeline's error (retries exhausted, a backend failure...), with every attempt.
        source: Box<claij_interceptors::Error>,
    },
    /// A service, custom action or sub-FSM failed.
    #[error("state `{state}`: action `{action}` failed: {message}")]
    Action {
        /// The state.
        state: String,
        /// The action.
        action: String,
        /// What went wrong.
        message: String,
    },
    /// A state names a service, action or sub-FSM nobody registered.
    #[error("state `{state}`: no {kind} `{name}` is registered with the runner")]
    Unregistered {
        /// The state.
        state: String,
        /// `service`, `action` or `fsm`.
        kind: &'static str,
        /// The name looked up.
        name: String,
    },
    /// A call of `Runner::run` took its limit of transitions without ending (see
    /// `Runner::with_max_transitions`); the run can go on with another call (or a resume).
    #[error(
        "stopped in state `{state}` after {} of this call without reaching an end (the limit max_transitions; the trail holds {recorded})",
        count(*.limit, "transition")
    )]
    TooManyTransitions {
        /// Where the run is.
        state: String,
        /// The limit: transitions taken in this call.
        limit: usize,
        /// Transitions in the run's trail (with the start's and earlier calls').
        recorded: usize,
    },
    /// A service state was given the same request and gave the same result more often than the
    /// runner allows since the run's last input (see `Runner::with_max_repeated_calls`): the run
    /// loops. The repeated call's transition is recorded (its `repeats` set), so the run can go on
    /// from the state it leads to, with a limit that allows more.
    #[error(
        "state `{state}` repeats itself: {call} got the same result {} since the last input (the limit max_repeated_calls allows {})",
        count(*.repeats + 1, "time"),
        count(*.limit, "repeat")
    )]
    RepeatedCall {
        /// The service state.
        state: String,
        /// The call, short: a JSON-RPC `tools/call`'s tool and arguments, else the request.
        call: String,
        /// How many earlier calls it repeats.
        repeats: usize,
        /// The limit.
        limit: usize,
    },
    /// Input was given to a run that is not waiting for a person.
    #[error("the run is in state `{state}`, which is not waiting for input")]
    NotWaiting {
        /// Where the run is.
        state: String,
    },
    /// The journal cannot be written or read.
    #[error("journal {}", .path.display())]
    Journal {
        /// The journal file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// Another handle holds the journal's lock: a run or resume of the same journal is under way
    /// (in this process or another), and two must not append to one journal.
    #[error("journal {}: another process holds it (a run or resume of this journal is under way)", .path.display())]
    JournalLocked {
        /// The journal file.
        path: PathBuf,
    },
    /// A new run's journal file already holds something (see `journal::ExistingJournal`).
    #[error("journal {} already holds a run", .path.display())]
    JournalExists {
        /// The journal file.
        path: PathBuf,
    },
    /// A state failed in a step that was recorded ([`crate::StepRecord::failure`]) and re-applied:
    /// the original error is known only by its message.
    #[error("state `{state}`: {message}")]
    StepFailed {
        /// The state.
        state: String,
        /// The recorded error, with its causes.
        message: String,
    },
    /// What a state needs cannot be done the way the run is driven (a sub-FSM that waits for a
    /// person, inside a step record, say).
    #[error("state `{state}`: not supported here: {reason}")]
    Unsupported {
        /// The state.
        state: String,
        /// Why.
        reason: String,
    },
    /// A journal line is not what the runner writes.
    #[error("journal {} line {line}: {message}", .path.display())]
    CorruptJournal {
        /// The journal file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// What kind of failure an [`Error`] is, to match on without its fields.
///
/// One kind per crate, naming its own variants; the meanings shared across claij crates are the
/// predicates on [`Error`] (see `claij_interceptors`' crate docs for why). What went wrong inside an
/// [`ErrorKind::Llm`] is its pipeline's error's kind ([`Error::pipeline`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Parse`].
    Parse,
    /// [`Error::Definition`].
    Definition,
    /// [`Error::InvalidEvent`].
    InvalidEvent,
    /// [`Error::Llm`].
    Llm,
    /// [`Error::Action`].
    Action,
    /// [`Error::Unregistered`].
    Unregistered,
    /// [`Error::TooManyTransitions`].
    TooManyTransitions,
    /// [`Error::RepeatedCall`].
    RepeatedCall,
    /// [`Error::NotWaiting`].
    NotWaiting,
    /// [`Error::Journal`].
    Journal,
    /// [`Error::JournalLocked`].
    JournalLocked,
    /// [`Error::JournalExists`].
    JournalExists,
    /// [`Error::StepFailed`].
    StepFailed,
    /// [`Error::Unsupported`].
    Unsupported,
    /// [`Error::CorruptJournal`].
    CorruptJournal,
}

impl Error {
    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Parse(_) => ErrorKind::Parse,
            Error::Definition(_) => ErrorKind::Definition,
            Error::InvalidEvent { .. } => ErrorKind::InvalidEvent,
            Error::Llm { .. } => ErrorKind::Llm,
            Error::Action { .. } => ErrorKind::Action,
            Error::Unregistered { .. } => ErrorKind::Unregistered,
            Error::TooManyTransitions { .. } => ErrorKind::TooManyTransitions,
            Error::RepeatedCall { .. } => ErrorKind::RepeatedCall,
            Error::NotWaiting { .. } => ErrorKind::NotWaiting,
            Error::Journal { .. } => ErrorKind::Journal,
            Error::JournalLocked { .. } => ErrorKind::JournalLocked,
            Error::JournalExists { .. } => ErrorKind::JournalExists,
            Error::StepFailed { .. } => ErrorKind::StepFailed,
            Error::Unsupported { .. } => ErrorKind::Unsupported,
            Error::CorruptJournal { .. } => ErrorKind::CorruptJournal,
        }
    }

    /// The pipeline's error of an `llm` state that failed ([`Error::Llm`]): what the model-call
    /// predicates answer from.
    pub fn pipeline(&self) -> Option<&claij_interceptors::Error> {
        match self {
            Error::Llm { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The backend's error under the pipeline's, when the model call itself failed.
    pub fn backend(&self) -> Option<&claij_backends::Error> {
        self.pipeline().and_then(claij_interceptors::Error::backend)
    }

    /// Whether a model call timed out ([`claij_interceptors::Error::is_timeout`]).
    pub fn is_timeout(&self) -> bool {
        self.pipeline()
            .is_some_and(claij_interceptors::Error::is_timeout)
    }

    /// Whether a model call's connection failed ([`claij_interceptors::Error::is_connect`]).
    pub fn is_connect(&self) -> bool {
        self.pipeline()
            .is_some_and(claij_interceptors::Error::is_connect)
    }

    /// Whether the provider asked to slow down ([`claij_interceptors::Error::is_rate_limited`]).
    pub fn is_rate_limited(&self) -> bool {
        self.pipeline()
            .is_some_and(claij_interceptors::Error::is_rate_limited)
    }

    /// Whether the provider refused the key ([`claij_interceptors::Error::is_auth`]).
    pub fn is_auth(&self) -> bool {
        self.pipeline()
            .is_some_and(claij_interceptors::Error::is_auth)
    }

    /// Whether the account's quota is used up ([`claij_interceptors::Error::is_quota_exhausted`]).
    pub fn is_quota_exhausted(&self) -> bool {
        self.pipeline()
            .is_some_and(claij_interceptors::Error::is_quota_exhausted)
    }

    /// Whether a model call was cancelled ([`claij_interceptors::Error::is_cancelled`]).
    pub fn is_cancelled(&self) -> bool {
        self.pipeline()
            .is_some_and(claij_interceptors::Error::is_cancelled)
    }

    /// Whether the failed model call may pass when made again: the pipeline's answer, which is the
    /// backend's ([`claij_backends::Error::is_retryable`], the one definition).
    pub fn is_retryable(&self) -> bool {
        self.pipeline()
            .is_some_and(claij_interceptors::Error::is_retryable)
    }

    /// How long the provider asked to wait ([`claij_interceptors::Error::retry_after`]).
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        self.pipeline()
            .and_then(claij_interceptors::Error::retry_after)
    }

    /// Whether a reply or an event was never valid: an event that fits no transition
    /// ([`Error::InvalidEvent`]), or a model that found no valid event within its retries
    /// ([`claij_interceptors::Error::is_invalid_reply`] of an [`Error::Llm`]).
    pub fn is_invalid_reply(&self) -> bool {
        match self {
            Error::InvalidEvent { .. } => true,
            _ => self
                .pipeline()
                .is_some_and(claij_interceptors::Error::is_invalid_reply),
        }
    }

    /// Whether an agent run inside a state stopped at its budget
    /// ([`claij_interceptors::Error::is_budget`]).
    pub fn is_budget(&self) -> bool {
        self.pipeline()
            .is_some_and(claij_interceptors::Error::is_budget)
    }

    /// Whether the run stopped at one of the runner's limits ([`Error::limit`] names it).
    pub fn is_limit(&self) -> bool {
        self.limit().is_some()
    }

    /// Whether the journal is the problem: it cannot be read or written, is locked by another run,
    /// already holds a run, or holds a line the runner did not write.
    pub fn is_journal(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::Journal
                | ErrorKind::JournalLocked
                | ErrorKind::JournalExists
                | ErrorKind::CorruptJournal
        )
    }

    /// The name of the runner's limit this error stops at (`max_transitions`,
    /// `max_repeated_calls`), if it is one: a caller names its own setting for it.
    pub fn limit(&self) -> Option<&'static str> {
        match self {
            Error::TooManyTransitions { .. } => Some("max_transitions"),
            Error::RepeatedCall { .. } => Some("max_repeated_calls"),
            _ => None,
        }
    }
}

/// `1 transition`, `5 transitions`.
pub(crate) fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

fn summary(violations: &[Violation]) -> String {
    let shown: Vec<String> = violations
        .iter()
        .take(3)
        .map(|v| {
            let at = if v.instance_pointer.is_empty() {
                "(root)"
            } else {
                v.instance_pointer.as_str()
            };
            format!("{at}: {}", v.message)
        })
        .collect();
    let more = violations.len().saturating_sub(3);
    if more > 0 {
        format!("{}; and {more} more", shown.join("; "))
    } else {
        shown.join("; ")
    }
}

#[cfg(test)]
mod tests;
