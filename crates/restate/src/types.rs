//! What goes over the wire between clients, the server and workers: a run's request, its status
//! while it runs, its result.

use claij_fsm::journal::SubDefinition;
use claij_fsm::{Definition, Status, Trail};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The machine a run runs: its definition (with its sub-FSMs), or a name the worker knows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
// Built once per run and sent: the size is no cost, and boxing would change the public pattern.
#[allow(clippy::large_enum_variant)]
pub enum Machine {
    /// The definition itself.
    Inline {
        /// The machine.
        definition: Definition,
        /// Its sub-FSMs, by the names its `fsm` states use.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        sub_fsms: Vec<SubDefinition>,
    },
    /// A machine the worker's wiring knows by name.
    Named(String),
}

impl Machine {
    /// `definition` with its sub-FSMs.
    pub fn inline(definition: Definition, sub_fsms: Vec<SubDefinition>) -> Self {
        Machine::Inline {
            definition,
            sub_fsms,
        }
    }
}

/// What the workflow's `run` handler takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunRequest {
    /// The machine.
    pub definition: Machine,
    /// The first event.
    pub input: Value,
    /// Options of the run.
    #[serde(default)]
    pub options: RunOptions,
}

impl RunRequest {
    /// A run of `definition` from `input`, with default options.
    pub fn new(definition: Machine, input: Value) -> Self {
        Self {
            definition,
            input,
            options: RunOptions::default(),
        }
    }
}

/// Options of a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunOptions {
    /// At most this many transitions (default: the runner's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_transitions: Option<usize>,
    /// At most this many repeats of a service call (default: the runner's; see
    /// `claij_fsm::Runner::with_max_repeated_calls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repeated_calls: Option<usize>,
}

/// A run while it runs (the workflow's `status` handler), and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunStatus {
    /// The run id (the workflow key).
    pub run_id: String,
    /// The machine's id.
    pub fsm: String,
    /// The state it is in.
    pub state: String,
    /// Where it is.
    pub status: Status,
    /// The state it waits for input in, with the `fsm` states it waits through
    /// (`review/approve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_in: Option<String>,
    /// The run id of the sub-FSM run it waits on, if any (its own status says more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_run: Option<String>,
    /// Why it failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// Every recorded transition.
    pub trail: Trail,
}

/// How a run ended: the workflow's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunResult {
    /// The run id.
    pub run_id: String,
    /// How it ended.
    pub ended: Ended,
    /// Every recorded transition.
    pub trail: Trail,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Ended {
    /// In a terminal state.
    Finished {
        /// The state.
        state: String,
        /// The event that entered it.
        event: Value,
    },
    /// Interrupted while in `from`.
    Interrupted {
        /// The state it was in.
        from: String,
    },
    /// A state failed.
    Failed(Failure),
}

/// A state's failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Failure {
    /// The state.
    pub state: String,
    /// The error with its causes.
    pub error: String,
    /// What kind of failure.
    pub kind: FailureKind,
    /// The runner's limit the run stopped at (`max_transitions`, `max_repeated_calls`; see
    /// `claij_fsm::Error::limit`), if it stopped at one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
}

impl Failure {
    /// The failure of `state` in `error`.
    pub fn of(state: impl Into<String>, error: &claij_fsm::Error) -> Self {
        Self {
            state: state.into(),
            error: claij_interceptors::ErrorChain(error).to_string(),
            kind: FailureKind::of(error),
            limit: error.limit().map(str::to_owned),
        }
    }

    /// A failure of `state` that is no error of the runner's (the wiring, a driver's refusal).
    pub fn other(state: impl Into<String>, error: impl Into<String>) -> Self {
        Self {
            state: state.into(),
            error: error.into(),
            kind: FailureKind::Error,
            limit: None,
        }
    }
}

/// What kind of failure: the CLI's exit code follows it, as for an embedded run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureKind {
    /// The model found no valid event, an event fits no transition, the run looped.
    Invalid,
    /// Anything else: a backend, a service, the wiring.
    Error,
}

impl FailureKind {
    /// The kind of `error`.
    pub fn of(error: &claij_fsm::Error) -> Self {
        match error {
            claij_fsm::Error::Llm { source, .. }
                if matches!(**source, claij_interceptors::Error::RetriesExhausted(_)) =>
            {
                FailureKind::Invalid
            }
            claij_fsm::Error::InvalidEvent { .. }
            | claij_fsm::Error::TooManyTransitions { .. }
            | claij_fsm::Error::RepeatedCall { .. } => FailureKind::Invalid,
            _ => FailureKind::Error,
        }
    }
}

/// A person's input for a waiting state, as the `provide` handler resolves the state's promise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Provided {
    /// The event (its `id` added).
    pub(crate) event: Value,
    /// When it was given, in milliseconds since the epoch.
    pub(crate) at_ms: u64,
}
