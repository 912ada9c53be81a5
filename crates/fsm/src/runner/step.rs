//! Driving a run one action at a time: what comes next ([`NextAction`]), an action's result as data
//! ([`StepRecord`]) and applying it. [`Runner::run`] is built on the same pieces, so an external
//! durable engine that journals the records (Restate, say) and the embedded runner cannot drift.

use std::time::SystemTime;

use claij_interceptors::{Context, ErrorChain, History, MemoryState, ToolResult};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::Span;

use super::{How, Outcome, Run, Runner, Status, Step, repeats, trace};
use crate::builtin::meta_debug::Remedy;
use crate::definition::{Action, INTERRUPTED};
use crate::error::Error;
use crate::interrupt::Interrupt;
use crate::journal::Journal;
use crate::trail::{AttemptRecord, Entry, Trail};

/// What a run does next, from where it stands.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum NextAction {
    /// It is in a terminal state (or `interrupted`): nothing to do.
    End {
        /// The state.
        state: String,
        /// The event that entered it.
        event: Value,
    },
    /// A `human` state waits for [`Runner::provide`].
    Human {
        /// The state.
        state: String,
    },
    /// An `fsm` state: the sub-FSM `name` runs on `input` (the entering event without its `id`);
    /// its final event goes to [`Runner::sub_fsm_step`].
    SubFsm {
        /// The state.
        state: String,
        /// The sub-FSM's name (`config.fsm`).
        name: String,
        /// Its first event.
        input: Value,
    },
    /// Any other state: [`Runner::act_step`] runs its action.
    Act {
        /// The state.
        state: String,
    },
}

/// What one state's action did, as data: serialize it, and [`Runner::apply_step`] on a run in the
/// same place rebuilds the same run (trail, event, status, remedies, interceptor context) without
/// running the action again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StepRecord {
    /// The state the action ran in.
    pub state: String,
    /// The event it produced (its `id` may be missing when the state has one exit).
    pub event: Value,
    /// The model calls that produced it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<AttemptRecord>,
    /// Whether `event` is the bail-out of a state whose retries ran out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bail_out: bool,
    /// Transitions to record before the state's own (a sub-FSM's in trail mode `full`, a
    /// meta-debug run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_entries: Option<Vec<Entry>>,
    /// A meta-debugging remedy to keep for the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<Remedy>,
    /// The interceptor context after the action (`llm` states only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextState>,
    /// The state failed after keeping `remedy`: the error's message, with its causes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// When the action ended: the time of the transition it takes.
    #[serde(with = "claij_schema::rfc3339")]
    pub at: SystemTime,
}

/// The parts of an interceptor [`Context`] that are data (its typed extensions are not: an
/// interceptor that keeps something there across states loses it in a rebuilt run).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ContextState {
    /// What the memory interceptor remembers.
    #[serde(default)]
    pub memory: MemoryState,
    /// Tool results for the next prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolResult>,
    /// Completed turns.
    #[serde(default)]
    pub turn: u64,
    /// The conversation's messages.
    #[serde(default)]
    pub history: History,
}

impl ContextState {
    /// The data of `context`.
    pub fn of(context: &Context) -> Self {
        Self {
            memory: context.memory.clone(),
            tool_results: context.tool_results.clone(),
            turn: context.turn,
            history: context.history.clone(),
        }
    }

    /// Puts this data into `context` (its extensions stay as they are).
    pub fn apply_to(&self, context: &mut Context) {
        context.memory = self.memory.clone();
        context.tool_results = self.tool_results.clone();
        context.turn = self.turn;
        context.history = self.history.clone();
    }
}

impl Runner {
    /// What `run` does next.
    pub fn next_action(&self, run: &Run) -> NextAction {
        if run.state == INTERRUPTED {
            return NextAction::End {
                state: run.state.clone(),
                event: run.event.clone(),
            };
        }
        let state = self.state(&run.state);
        match &state.action {
            Action::End => NextAction::End {
                state: state.id,
                event: run.event.clone(),
            },
            Action::Human => NextAction::Human { state: state.id },
            Action::Fsm => {
                let mut input = run.event.clone();
                if let Value::Object(map) = &mut input {
                    map.remove("id");
                }
                NextAction::SubFsm {
                    name: state.config_str("fsm").unwrap_or_default().to_owned(),
                    state: state.id,
                    input,
                }
            }
            _ => NextAction::Act { state: state.id },
        }
    }

    /// Runs the action of the state `run` is in (a model with all its attempts and the bail-out,
    /// meta-debugging, a service; an `fsm` state's sub-FSM embedded) and returns what it did,
    /// without taking the transition: [`Runner::apply_step`] does. The run's interceptor context
    /// is changed by the call (the record carries it too).
    ///
    /// # Errors
    ///
    /// As [`Runner::run`] for the action; [`Error::Unsupported`] when a sub-FSM run waits for a
    /// person (a record cannot carry a waiting run: drive [`NextAction::SubFsm`] instead), or the
    /// state has no action to run.
    pub async fn act_step(
        &self,
        run: &mut Run,
        interrupt: &Interrupt,
    ) -> Result<StepRecord, Error> {
        let state = self.state(&run.state);
        if matches!(state.action, Action::End | Action::Human) || run.state == INTERRUPTED {
            return Err(Error::Unsupported {
                state: state.id,
                reason: "the state has no action to run".into(),
            });
        }
        let step = self.act(&state, run, interrupt).await?;
        if step.suspended.is_some() {
            return Err(Error::Unsupported {
                state: state.id,
                reason: "its sub-FSM waits for a person, which a step record cannot carry; \
                         run the sub-FSM on its own (NextAction::SubFsm)"
                    .into(),
            });
        }
        let (mut record, error) = self.record_of(run, step);
        record.failure = error.map(|e| ErrorChain(&e).to_string());
        Ok(record)
    }

    /// Takes the transition `record` says (recording it in the trail, keeping its remedy and
    /// context): `Some` when the run then stops, finished or waiting for a person.
    ///
    /// # Errors
    ///
    /// [`Error::StepFailed`] for a record of a failed state (its remedy kept first),
    /// [`Error::InvalidEvent`] when its event fits no transition, [`Error::Unsupported`] when the
    /// record is of another state than the run's, [`Error::RepeatedCall`] when a service's call
    /// repeats earlier ones beyond the limit (its transition recorded first).
    pub fn apply_step(&self, run: &mut Run, record: StepRecord) -> Result<Option<Outcome>, Error> {
        self.apply(run, record, None, None, None)?;
        Ok(self.stop_of(run))
    }

    /// The step of `fsm` state `state` whose sub-FSM ended in `event` with `trail` (the sub-FSM's
    /// own trail), as the embedded runner makes it: the event leaves by the first transition that
    /// accepts it, the sub-FSM's transitions appear as the state's `config.trail` says.
    ///
    /// # Errors
    ///
    /// [`Error::Action`] when the result fits no transition out of the state.
    pub fn sub_fsm_step(
        &self,
        state: &str,
        event: Value,
        trail: &Trail,
        at: SystemTime,
    ) -> Result<StepRecord, Error> {
        let state = self.state(state);
        let step = self.sub_result(&state, event, trail)?;
        let (mut record, _) = self.record_split(&state.id, step, None);
        record.at = at;
        Ok(record)
    }

    /// Records that `run` was interrupted (the transition to `interrupted`).
    ///
    /// # Errors
    ///
    /// None today without a journal; kept for the journal's.
    pub fn interrupt_run(&self, run: &mut Run) -> Result<Outcome, Error> {
        self.interrupted(run, None)
    }

    /// `input` as the event out of `state` it would be (its `id` added when the state has one
    /// exit), or why it fits no transition: to check a person's input before it is given.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidEvent`].
    pub fn check_event(&self, state: &str, input: Value) -> Result<Value, Error> {
        let event = self.with_id(state, input);
        self.route(state, &event)?;
        Ok(event)
    }

    /// The transitions one call of [`Runner::run`] may take.
    pub fn max_transitions(&self) -> usize {
        self.max_transitions
    }

    /// The repeats of a service call a run may make (see [`Runner::with_max_repeated_calls`]).
    pub fn max_repeated_calls(&self) -> usize {
        self.max_repeated_calls
    }

    /// The runner of the sub-FSM registered as `name`.
    pub fn sub_fsm(&self, name: &str) -> Option<&std::sync::Arc<Runner>> {
        self.subs.get(name)
    }

    /// `Some` when `run` stops where it is: finished, or waiting for a person.
    pub(super) fn stop_of(&self, run: &mut Run) -> Option<Outcome> {
        match self.next_action(run) {
            NextAction::End { state, event } => {
                run.status = Status::Finished;
                Some(Outcome::Finished { state, event })
            }
            NextAction::Human { state } => {
                run.status = Status::Waiting;
                Some(Outcome::Waiting { state })
            }
            _ => None,
        }
    }

    /// `step` of the state `run` is in as a record, and the error it ends in, if any.
    pub(super) fn record_of(&self, run: &Run, step: Step) -> (StepRecord, Option<Error>) {
        let context =
            (self.state(&run.state).action == Action::Llm).then(|| ContextState::of(&run.context));
        self.record_split(&run.state, step, context)
    }

    fn record_split(
        &self,
        state: &str,
        step: Step,
        context: Option<ContextState>,
    ) -> (StepRecord, Option<Error>) {
        let record = StepRecord {
            state: state.to_owned(),
            event: step.event,
            attempts: step.attempts,
            bail_out: step.bail_out,
            sub_entries: step.sub_entries,
            remedy: step.remedy,
            context,
            failure: None,
            at: SystemTime::now(),
        };
        (record, step.error)
    }

    /// Applies `record` to `run`: keeps its remedy (journaled), its context, then fails with
    /// `error` (or the recorded failure), else records its entries and takes its transition.
    pub(super) fn apply(
        &self,
        run: &mut Run,
        record: StepRecord,
        error: Option<Error>,
        mut journal: Option<&mut Journal>,
        span: Option<&Span>,
    ) -> Result<(), Error> {
        if record.state != run.state {
            return Err(Error::Unsupported {
                state: run.state.clone(),
                reason: format!("the step record is of state `{}`", record.state),
            });
        }
        if let Some(remedy) = record.remedy {
            run.remedies.insert(run.state.clone(), remedy.clone());
            if let Some(journal) = journal.as_deref_mut() {
                journal.record_remedy(&run.state, &remedy)?;
                self.journaled(run, journal)?;
            }
        }
        if let Some(context) = &record.context {
            context.apply_to(&mut run.context);
        }
        if let Some(error) = error {
            // The remedy is kept; the diagnosis's transitions are not, or a resumed run would
            // stand in the meta-debug machine.
            return Err(error);
        }
        if let Some(message) = record.failure {
            return Err(Error::StepFailed {
                state: run.state.clone(),
                message,
            });
        }
        if let Some(sub_entries) = record.sub_entries {
            for entry in sub_entries {
                self.record(run, &entry, journal.as_deref_mut())?;
            }
        }
        let event = self.with_id(&run.state, record.event);
        let to = self.route(&run.state, &event)?;
        if let Some(span) = span {
            trace::transition(span, &run.state, &to, record.bail_out);
        }
        // Decided from the trail alone, so a rebuilt run decides the same.
        let state = self.state(&run.state);
        let repeats = if repeats::is_call(&state.action) {
            repeats::count(&state.id, &run.trail.entries, &run.event, &event, |id| {
                self.state(id).action
            })
        } else {
            0
        };
        let looped = (repeats > 0).then(|| repeats::describe(&run.event));
        let (from, limit) = (
            run.state.clone(),
            run.max_repeated_calls.unwrap_or(self.max_repeated_calls),
        );
        self.advance(
            run,
            to,
            event,
            How {
                attempts: record.attempts,
                bail_out: record.bail_out,
                at: record.at,
                repeats,
            },
            journal,
        )?;
        match looped {
            Some(call) if repeats > limit => Err(Error::RepeatedCall {
                state: from,
                call,
                repeats,
                limit,
            }),
            _ => Ok(()),
        }
    }
}

impl Run {
    /// A copy of the run to act on elsewhere (a closure that must own its data): the same place,
    /// trail, remedies and the data of its context (not the context's typed extensions, nor a
    /// sub-FSM run it waits in).
    pub fn fork(&self) -> Run {
        let mut context = Context::default();
        ContextState::of(&self.context).apply_to(&mut context);
        Run {
            id: self.id.clone(),
            state: self.state.clone(),
            event: self.event.clone(),
            trail: self.trail.clone(),
            status: self.status,
            context,
            suspended: None,
            remedies: self.remedies.clone(),
            span: self.span.clone(),
            prefix: self.prefix.clone(),
            max_repeated_calls: self.max_repeated_calls,
            applied: self.applied.clone(),
        }
    }
}
