//! The errors of claij-fsm: each says which state or transition, and why. A variant that wraps another
//! error returns it from `source()` and leaves it out of its message (walk the chain to print both:
//! `claij_interceptors::ErrorChain`, anyhow's `{:#}`).

use std::path::PathBuf;

use claij_validation::Violation;

use crate::check::DefinitionError;

/// Why a definition cannot be loaded or a run cannot go on.
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

impl Error {
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
