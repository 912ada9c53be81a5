//! The runner: start from an input event, run each state's action, route by the validated event's
//! `id`, record every transition, until a terminal state, a person's turn or an interrupt.

mod actions;
mod applied;
mod extensions;
mod meta_debug;
mod repeats;
mod step;
mod trace;

pub use step::{ContextState, NextAction, StepRecord};

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use claij_backends::{Backend, BoxFuture};
use claij_interceptors::{BoxError, Chain, Config, Context, ErrorChain, Pipeline};
use serde_json::Value;
use tracing::{Instrument as _, Span};

use crate::builtin::meta_debug::{Diagnostics, Remedy, RemedyKind};
use crate::definition::{Action, INTERRUPTED, START, State};
use crate::error::Error;
use crate::fsm::Fsm;
use crate::interrupt::Interrupt;
use crate::journal::{ExistingJournal, Header, Journal, SubDefinition, Suspended};
use crate::schema::id_value;
use crate::trail::{AttemptRecord, Entry, Trail};

/// A registered Rust action: handles the event that entered a `service` (or custom) state and returns
/// the event that leaves it. Its `id` may be left out when the state has a single exit.
pub trait Service: Send + Sync {
    /// Handles one event.
    fn call<'a>(&'a self, call: ServiceCall<'a>) -> BoxFuture<'a, Result<Value, BoxError>>;
}

/// What a service is given.
#[non_exhaustive]
pub struct ServiceCall<'a> {
    /// The state it runs in.
    pub state: &'a State,
    /// The event that entered the state.
    pub event: &'a Value,
    /// The run's trail so far.
    pub trail: &'a Trail,
    /// The run's interrupt handle, to register cleanup for work outside the returned future.
    pub interrupt: &'a Interrupt,
}

/// A synchronous closure as a [`Service`].
pub fn service_fn<F>(f: F) -> impl Service
where
    F: Fn(&ServiceCall<'_>) -> Result<Value, BoxError> + Send + Sync,
{
    struct FnService<F>(F);
    impl<F> Service for FnService<F>
    where
        F: Fn(&ServiceCall<'_>) -> Result<Value, BoxError> + Send + Sync,
    {
        fn call<'a>(&'a self, call: ServiceCall<'a>) -> BoxFuture<'a, Result<Value, BoxError>> {
            let result = (self.0)(&call);
            Box::pin(async move { result })
        }
    }
    FnService(f)
}

/// How a sub-FSM's transitions appear in the parent's trail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TrailMode {
    /// Not at all: only the sub-FSM's result.
    Omit,
    /// The result, carrying every model call the sub-FSM made (usage totals stay whole).
    #[default]
    Summary,
    /// Every transition, its states prefixed with the parent state (`review/chairman`).
    Full,
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Status {
    /// Actions to run.
    Running,
    /// A `human` state waits for [`Runner::provide`].
    Waiting,
    /// In a terminal state.
    Finished,
    /// Stopped by an interrupt (in `interrupted`).
    Interrupted,
}

/// One run of a machine: where it is, the event that brought it there, and the trail.
#[non_exhaustive]
pub struct Run {
    /// The run's id.
    pub id: String,
    /// The current state.
    pub state: String,
    /// The event that entered it.
    pub event: Value,
    /// Every recorded transition.
    pub trail: Trail,
    /// Where the run is.
    pub status: Status,
    /// Interceptor state carried between `llm` states (memory...).
    pub context: Context,
    /// The sub-FSM run a `fsm` state waits in (a `human` state of the sub-FSM).
    suspended: Option<Box<Run>>,
    /// Meta-debugging remedies by state; a prompt remedy's system prompt replaces the state's.
    remedies: BTreeMap<String, Remedy>,
    /// The run's `fsm.run` span: every call of [`Runner::run`] and [`Runner::provide`] on the run
    /// works in it, so a run that waits for a person is still one trace.
    span: Span,
    /// The `fsm` states this run is a sub-FSM run in, each with `/` (`review/`; empty for a
    /// top-level run): its transitions reach the observer with their states so prefixed.
    prefix: String,
    /// This run's own [`Runner::with_max_repeated_calls`], if it was given one.
    max_repeated_calls: Option<usize>,
    /// The schema deltas of each `llm` state's requests and their audit logs ([`Run::applied`]).
    applied: BTreeMap<String, claij_schema::AppliedLog>,
}

/// How a call to [`Runner::run`] ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// A terminal state was reached by `event`.
    Finished {
        /// The terminal state.
        state: String,
        /// The event that entered it.
        event: Value,
    },
    /// A `human` state waits for input.
    Waiting {
        /// The state.
        state: String,
    },
    /// The run was interrupted while in `from`.
    Interrupted {
        /// The state it was in.
        from: String,
    },
}

impl Outcome {
    /// `finished`, `waiting` or `interrupted`.
    fn kind(&self) -> &'static str {
        match self {
            Outcome::Finished { .. } => "finished",
            Outcome::Waiting { .. } => "waiting",
            Outcome::Interrupted { .. } => "interrupted",
        }
    }
}

/// Transitions one call of [`Runner::run`] may take before it stops with
/// [`Error::TooManyTransitions`]: models can loop (a chairman asking the same reviewer forever).
pub const DEFAULT_MAX_TRANSITIONS: usize = 100;

/// Times a service call may repeat an earlier one (same state, same request, same result) since
/// the run's last input before the run stops with [`Error::RepeatedCall`]: the first repeat is
/// told to the model the result goes to, the second ends the run.
pub const DEFAULT_MAX_REPEATED_CALLS: usize = 1;

/// What [`Runner::with_observer`] takes.
type Observer = dyn Fn(&Entry) + Send + Sync;

/// What [`Runner::with_journal_hook`] takes.
type JournalHook = dyn Fn(&Run, &mut Journal) -> Result<(), Error> + Send + Sync;

/// Decides on the schema delta a meta-debugging schema remedy proposes, for
/// [`Runner::with_remedy_approver`]: a person, a vote, a policy.
pub trait RemedyApprover: Send + Sync {
    /// Puts `remedy`'s delta (for the failing `state`) to whoever approves. `Ok(true)` means it is
    /// approved and active: the state's interceptors now give its schema the delta (the approver
    /// activates it where they read it, a shared schema registry, say).
    fn approve<'a>(
        &'a self,
        state: &'a str,
        remedy: &'a Remedy,
    ) -> BoxFuture<'a, Result<bool, BoxError>>;
}

/// Runs one machine. Build it once and run many [`Run`]s; it is `Send + Sync`.
pub struct Runner {
    fsm: Arc<Fsm>,
    llm: Option<(Arc<dyn Backend>, Config)>,
    state_llms: HashMap<String, (Arc<dyn Backend>, Config)>,
    chain: Arc<dyn Fn() -> Chain + Send + Sync>,
    services: HashMap<String, Arc<dyn Service>>,
    subs: HashMap<String, Arc<Runner>>,
    observer: Option<Arc<Observer>>,
    max_transitions: usize,
    max_repeated_calls: usize,
    meta_debug: Option<Arc<Diagnostics>>,
    remedy_approver: Option<Arc<dyn RemedyApprover>>,
    journal_hook: Option<Arc<JournalHook>>,
    pipelines: Mutex<HashMap<String, Arc<Pipeline>>>,
}

impl Runner {
    /// A runner for `fsm`, with no model, services or sub-FSMs yet.
    pub fn new(fsm: impl Into<Arc<Fsm>>) -> Self {
        Self {
            fsm: fsm.into(),
            llm: None,
            state_llms: HashMap::new(),
            chain: Arc::new(Chain::new),
            services: HashMap::new(),
            subs: HashMap::new(),
            observer: None,
            max_transitions: DEFAULT_MAX_TRANSITIONS,
            max_repeated_calls: DEFAULT_MAX_REPEATED_CALLS,
            meta_debug: None,
            remedy_approver: None,
            journal_hook: None,
            pipelines: Mutex::new(HashMap::new()),
        }
    }

    /// `llm` states ask `backend` with `config` (model, retries, structured mode...); the system
    /// prompt is the state's, and a state's `config.model` replaces the model.
    #[must_use]
    pub fn with_llm(mut self, backend: Arc<dyn Backend>, config: Config) -> Self {
        self.llm = Some((backend, config));
        self
    }

    /// The `llm` state `state` asks `backend` with `config` instead of what [`Runner::with_llm`]
    /// gave (its `config.model` is then not consulted: `config` names the model). Each state may
    /// so talk to a model of another provider.
    #[must_use]
    pub fn with_llm_for(
        mut self,
        state: impl Into<String>,
        backend: Arc<dyn Backend>,
        config: Config,
    ) -> Self {
        self.state_llms.insert(state.into(), (backend, config));
        self
    }

    /// The interceptors of every `llm` state, built once per state by `chain`.
    #[must_use]
    pub fn with_interceptors(mut self, chain: impl Fn() -> Chain + Send + Sync + 'static) -> Self {
        self.chain = Arc::new(chain);
        self
    }

    /// A service for `service` states naming it (`config.service`, default the state's id), or for a
    /// custom action of that name.
    #[must_use]
    pub fn with_service(
        mut self,
        name: impl Into<String>,
        service: impl Service + 'static,
    ) -> Self {
        self.services.insert(name.into(), Arc::new(service));
        self
    }

    /// A sub-FSM for `fsm` states whose `config.fsm` is its id.
    #[must_use]
    pub fn with_sub_fsm(self, runner: Runner) -> Self {
        let name = runner.fsm.id().to_owned();
        self.with_sub_fsm_named(name, runner)
    }

    /// A sub-FSM for `fsm` states whose `config.fsm` is `name` (a file's path as the definition
    /// wrote it, say).
    #[must_use]
    pub fn with_sub_fsm_named(mut self, name: impl Into<String>, runner: Runner) -> Self {
        self.subs.insert(name.into(), Arc::new(runner));
        self
    }

    /// The sub-FSMs registered, by name, with theirs: what a journal's header records.
    pub fn sub_definitions(&self) -> Vec<SubDefinition> {
        let mut subs: Vec<SubDefinition> = self
            .subs
            .iter()
            .map(|(name, runner)| SubDefinition {
                name: name.clone(),
                definition: runner.fsm.definition().clone(),
                sub_fsms: runner.sub_definitions(),
            })
            .collect();
        subs.sort_by(|a, b| a.name.cmp(&b.name));
        subs
    }

    /// Calls `observer` with every transition as it is taken (recorded or `omit`), e.g. to print
    /// progress. The transitions of a sub-FSM run this runner's machine runs (as its own observer
    /// sees them) come with their states prefixed by the `fsm` states they run in
    /// (`review/chairman`), as trail mode `full` records them.
    #[must_use]
    pub fn with_observer(mut self, observer: impl Fn(&Entry) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// At most `limit` transitions per call of [`Runner::run`] (default [`DEFAULT_MAX_TRANSITIONS`]).
    #[must_use]
    pub fn with_max_transitions(mut self, limit: usize) -> Self {
        self.max_transitions = limit;
        self
    }

    /// Loop detection: a `service` (or custom) state given the same request as an earlier call
    /// since the run's last input (its start, a person's input), which then gives the same
    /// result, repeats it. Its transition records the count ([`Entry::repeats`]); the `llm` state
    /// the result goes to is told in its next prompt that the call was made before, with that
    /// result, and how to go on instead; a repeat beyond `limit` (default
    /// [`DEFAULT_MAX_REPEATED_CALLS`]) ends the run with [`Error::RepeatedCall`] once the
    /// transition is recorded. Requests and results are compared without the event's `id` and
    /// without a JSON-RPC `message.id` (a model numbering its calls repeats itself all the same).
    /// `usize::MAX` turns the check off (a state that polls until something changes): repeats are
    /// still recorded, but nobody is told and the run goes on.
    #[must_use]
    pub fn with_max_repeated_calls(mut self, limit: usize) -> Self {
        self.max_repeated_calls = limit;
        self
    }

    /// Meta-debugging that acts: when a watched `llm` state runs out of retries, the meta-debug
    /// machine diagnoses the failure with `diagnostics`' models; a prompt remedy is tried at once
    /// (the state asked again with it: its valid event goes on, else the bail-out or the error as
    /// without it) and kept for the state for the rest of the run; a schema remedy is tried so too
    /// when [`Runner::with_remedy_approver`] approves it. The meta-debug run's transitions are
    /// recorded under `{state}/meta-debug/` (unless the state fails with no bail-out), its last
    /// one saying whether the remedy was applied and fixed the state; the remedy with its effect in
    /// [`Run::remedies`] and the journal, before the error when there is one. Every attempt of the
    /// state asked again joins the state's own transition, valid or not (the bail-out's).
    #[must_use]
    pub fn with_meta_debug(mut self, diagnostics: Diagnostics) -> Self {
        self.meta_debug = Some(Arc::new(diagnostics));
        self
    }

    /// Meta-debugging's schema remedies that propose a delta go to `approver` as soon as they are
    /// diagnosed (in the meta-debug machine's `verify` step, which ends in `unfixed` with
    /// `applied: false` when it is declined); an approved one is verified as a prompt remedy is (the failing state asked again,
    /// its schema now extended by the state's interceptors), and the remedy records its
    /// [`Effect`](crate::builtin::meta_debug::Effect). Without one, a schema remedy is only
    /// recorded.
    #[must_use]
    pub fn with_remedy_approver(mut self, approver: impl RemedyApprover + 'static) -> Self {
        self.remedy_approver = Some(Arc::new(approver));
        self
    }

    /// Calls `hook` with the run and its journal after each line [`Runner::run`] and
    /// [`Runner::provide`] append to the journal (a transition, a remedy, a suspended sub-FSM run),
    /// the run's trail, remedies or suspended run already holding it (a transition's `state` may
    /// not be updated yet): to journal alongside what changed with it (a schema registry an
    /// approval extended, say), so a process killed after that line keeps it. Its error stops the
    /// run as the journal's would.
    #[must_use]
    pub fn with_journal_hook(
        mut self,
        hook: impl Fn(&Run, &mut Journal) -> Result<(), Error> + Send + Sync + 'static,
    ) -> Self {
        self.journal_hook = Some(Arc::new(hook));
        self
    }

    /// The machine.
    pub fn fsm(&self) -> &Arc<Fsm> {
        &self.fsm
    }

    /// Starts a run from `input`, which must fit a transition out of `start` (its `id` may be left out
    /// when there is only one).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidEvent`] naming what is wrong with the input.
    pub fn start(&self, input: Value) -> Result<Run, Error> {
        self.start_with_id(new_run_id(), input)
    }

    /// [`Runner::start`] with the run's id given (a durable engine's workflow key, say).
    ///
    /// # Errors
    ///
    /// As [`Runner::start`].
    pub fn start_with_id(&self, id: impl Into<String>, input: Value) -> Result<Run, Error> {
        self.start_in(id.into(), input, String::new())
    }

    /// [`Runner::start_with_id`] for a run whose transitions reach the observer prefixed.
    fn start_in(&self, id: String, input: Value, prefix: String) -> Result<Run, Error> {
        let mut run = Run {
            span: trace::run_span(self.fsm.id(), &id, false),
            id,
            state: START.to_owned(),
            event: Value::Null,
            trail: Trail::default(),
            status: Status::Running,
            context: Context::default(),
            suspended: None,
            remedies: BTreeMap::new(),
            prefix,
            max_repeated_calls: None,
            applied: BTreeMap::new(),
        };
        let event = self.with_id(START, input);
        let to = self.route(START, &event)?;
        self.advance(&mut run, to, event, How::now(), None)?;
        Ok(run)
    }

    /// [`Runner::start`], journaling to `path`. The journal is locked before anything happens and
    /// stays locked while the returned [`Journal`] lives; `existing` says whether a journal that
    /// already holds something is refused (left as it was) or started over.
    ///
    /// # Errors
    ///
    /// As [`Runner::start`], [`Error::Journal`], [`Error::JournalLocked`] when another handle holds
    /// the journal, [`Error::JournalExists`] when it is not empty and `existing` refuses.
    pub fn start_journaled(
        &self,
        input: Value,
        path: &std::path::Path,
        existing: ExistingJournal,
    ) -> Result<(Run, Journal), Error> {
        let mut journal = Journal::open_new(path, existing)?;
        let run = self.start(input)?;
        let header = Header {
            run_id: run.id.clone(),
            fsm: self.fsm.id().to_owned(),
            started_at: SystemTime::now(),
            definition: Some(self.fsm.definition().clone()),
            sub_fsms: self.sub_definitions(),
        };
        journal.begin(&header)?;
        for entry in &run.trail.entries {
            journal.record(entry)?;
        }
        Ok((run, journal))
    }

    /// Picks up the run journaled at `path` where its last recorded transition left it; no action
    /// that completed is run again. The journal is locked first (and stays locked while the returned
    /// [`Journal`] lives), and a torn last line is cut away before anything is appended (see
    /// [`crate::journal`]).
    ///
    /// # Errors
    ///
    /// The journal's errors ([`Error::JournalLocked`] when another handle holds it), or
    /// [`Error::CorruptJournal`] when it belongs to another machine or is empty, or waits in a
    /// sub-FSM this runner does not have.
    pub fn resume(&self, path: &std::path::Path) -> Result<(Run, Journal), Error> {
        let (journal, resumed) = Journal::resume_suspended(path)?;
        let (header, entries, suspended) = (resumed.header, resumed.entries, resumed.suspended);
        let corrupt = |message: String| Error::CorruptJournal {
            path: path.to_owned(),
            line: 1,
            message,
        };
        if header.fsm != self.fsm.id() {
            return Err(corrupt(format!(
                "the journal is of FSM `{}`, not `{}`",
                header.fsm,
                self.fsm.id()
            )));
        }
        let last = entries
            .last()
            .ok_or_else(|| corrupt("no transition recorded".into()))?;
        let state = last.to.clone();
        let event = last.event.clone();
        let span = trace::run_span(self.fsm.id(), &header.run_id, true);
        let mut run = Run {
            status: self.status_in(&state),
            id: header.run_id,
            span,
            state,
            event,
            trail: Trail { entries },
            context: Context::default(),
            suspended: None,
            remedies: resumed.remedies.into_iter().collect(),
            prefix: String::new(),
            max_repeated_calls: None,
            applied: resumed.applied,
        };
        if let Some(suspended) = suspended.filter(|s| s.in_state == run.state) {
            run.suspended = Some(Box::new(
                self.restore(&suspended, &run.span, "")
                    .ok_or_else(|| corrupt(format!("no sub-FSM runs state `{}`", run.state)))?,
            ));
            // Given its input but not yet run on, the sub-FSM run makes the parent's state run again.
            run.status = match suspended.status {
                Status::Waiting => Status::Waiting,
                _ => Status::Running,
            };
        }
        Ok((run, journal))
    }

    /// Runs until a terminal state, a person's turn or an interrupt, in the run's `fsm.run` span
    /// (each state visited in an `fsm.state` span under it; an error or an interrupt marks both
    /// failed).
    ///
    /// # Errors
    ///
    /// A model that found no valid event and no bail-out ([`Error::Llm`]), a failed or missing
    /// action, an invalid event from a service, the journal.
    pub async fn run(
        &self,
        run: &mut Run,
        interrupt: &Interrupt,
        journal: Option<&mut Journal>,
    ) -> Result<Outcome, Error> {
        let span = run.span.clone();
        let result = self
            .run_in_span(run, interrupt, journal)
            .instrument(span.clone())
            .await;
        match &result {
            Ok(outcome) => {
                span.record("claij.fsm.outcome", outcome.kind());
                if let Outcome::Interrupted { from } = outcome {
                    trace::fail(&span, &format!("interrupted in state `{from}`"));
                }
            }
            Err(error) => {
                span.record("claij.fsm.outcome", "error");
                trace::fail(&span, &ErrorChain(error).to_string());
            }
        }
        result
    }

    async fn run_in_span(
        &self,
        run: &mut Run,
        interrupt: &Interrupt,
        mut journal: Option<&mut Journal>,
    ) -> Result<Outcome, Error> {
        let mut taken = 0;
        loop {
            if interrupt.is_interrupted() {
                return self.interrupted(run, journal.as_deref_mut());
            }
            if taken == self.max_transitions && !self.state(&run.state).is_terminal() {
                return Err(Error::TooManyTransitions {
                    state: run.state.clone(),
                    limit: self.max_transitions,
                    recorded: run.trail.entries.len(),
                });
            }
            taken += 1;
            if let Some(outcome) = self.stop_of(run) {
                return Ok(outcome);
            }
            let state = self.state(&run.state);
            let span = trace::state_span(&run.span, &state);
            let visited = self
                .visit(&state, run, interrupt, journal.as_deref_mut(), &span)
                .instrument(span.clone())
                .await;
            match visited {
                Ok(None) => {}
                Ok(Some(outcome)) => {
                    if matches!(outcome, Outcome::Interrupted { .. }) {
                        trace::fail(&span, "interrupted");
                    }
                    return Ok(outcome);
                }
                Err(error) => {
                    trace::fail(&span, &ErrorChain(&error).to_string());
                    return Err(error);
                }
            }
        }
    }

    /// One visit to an action state: its action, then the transition its event takes (recorded in
    /// `span`). `Some` ends the call of [`Runner::run`]: the run waits or was interrupted.
    async fn visit(
        &self,
        state: &State,
        run: &mut Run,
        interrupt: &Interrupt,
        mut journal: Option<&mut Journal>,
        span: &Span,
    ) -> Result<Option<Outcome>, Error> {
        let step = tokio::select! {
            biased;
            () = interrupt.interrupted() => None,
            step = self.act(state, run, interrupt) => Some(step),
        };
        let Some(step) = step else {
            trace::transition(span, &state.id, INTERRUPTED, false);
            return self.interrupted(run, journal).map(Some);
        };
        let mut step = step?;
        if let Some(child) = step.suspended.take() {
            run.status = Status::Waiting;
            run.suspended = Some(child);
            if let (Some(journal), Some(child)) = (journal.as_deref_mut(), run.suspended.as_deref())
            {
                journal.record_suspended(&snapshot(&run.state, child))?;
                self.journaled(run, journal)?;
            }
            return Ok(Some(Outcome::Waiting {
                state: run.waiting_in(),
            }));
        }
        // The step as the data a durable engine would journal, applied as it would apply it.
        let (record, error) = self.record_of(run, step);
        self.apply(run, record, error, journal, Some(span))?;
        Ok(None)
    }

    /// Gives a waiting `human` state its input (an event out of that state; `id` optional with one
    /// exit), then the caller runs on. When the run waits inside a sub-FSM, the input goes to the
    /// sub-FSM's `human` state.
    ///
    /// # Errors
    ///
    /// [`Error::NotWaiting`], [`Error::InvalidEvent`], the journal.
    pub fn provide(
        &self,
        run: &mut Run,
        input: Value,
        mut journal: Option<&mut Journal>,
    ) -> Result<(), Error> {
        if let Some(mut child_run) = run.suspended.take() {
            let provided = match self.sub_runner(&run.state) {
                Some(child) => child.provide(&mut child_run, input, None),
                None => Err(Error::NotWaiting {
                    state: run.state.clone(),
                }),
            };
            let provided = provided.and_then(|()| match journal.as_deref_mut() {
                Some(journal) => journal.record_suspended(&snapshot(&run.state, &child_run)),
                None => Ok(()),
            });
            if provided.is_ok() {
                run.status = Status::Running;
            }
            run.suspended = Some(child_run);
            provided?;
            return match journal {
                Some(journal) => self.journaled(run, journal),
                None => Ok(()),
            };
        }
        let state = self.state(&run.state);
        if state.action != Action::Human {
            return Err(Error::NotWaiting {
                state: run.state.clone(),
            });
        }
        // The person's turn is a visit too, short as it is here.
        let span = trace::state_span(&run.span, &state);
        let _entered = span.enter();
        let event = self.with_id(&run.state, input);
        let to = self.route(&run.state, &event).inspect_err(|error| {
            trace::fail(&span, &ErrorChain(error).to_string());
        })?;
        trace::transition(&span, &run.state, &to, false);
        self.advance(run, to, event, How::now(), journal)
            .inspect_err(|error| trace::fail(&span, &ErrorChain(error).to_string()))
    }

    /// The runner of the sub-FSM that `fsm` state `state` names.
    fn sub_runner(&self, state: &str) -> Option<&Arc<Runner>> {
        let state = self.fsm.definition().state(state)?;
        self.subs.get(state.config_str("fsm")?)
    }

    /// A suspended sub-FSM run as it was recorded, with the runs it waits in; its span is a child
    /// of `parent`, the span of the run it waits in, whose prefix is `prefix`.
    fn restore(&self, suspended: &Suspended, parent: &Span, prefix: &str) -> Option<Run> {
        let child = self.sub_runner(&suspended.in_state)?;
        let span = parent.in_scope(|| trace::run_span(child.fsm.id(), &suspended.run_id, true));
        let prefix = format!("{prefix}{}/", suspended.in_state);
        let sub = match &suspended.sub {
            Some(sub) => Some(Box::new(child.restore(sub, &span, &prefix)?)),
            None => None,
        };
        Some(Run {
            span,
            id: suspended.run_id.clone(),
            state: suspended.state.clone(),
            event: suspended.event.clone(),
            trail: suspended.trail.clone(),
            status: suspended.status,
            context: Context::default(),
            suspended: sub,
            remedies: BTreeMap::new(),
            prefix,
            max_repeated_calls: None,
            applied: BTreeMap::new(),
        })
    }

    fn state(&self, id: &str) -> State {
        self.fsm
            .definition()
            .state(id)
            .unwrap_or_else(|| State::new(id, Action::End))
    }

    fn status_in(&self, state: &str) -> Status {
        match self.state(state).action {
            _ if state == INTERRUPTED => Status::Interrupted,
            Action::End => Status::Finished,
            Action::Human => Status::Waiting,
            _ => Status::Running,
        }
    }

    /// Where `event` goes from `state`, or why it cannot.
    fn route(&self, state: &str, event: &Value) -> Result<String, Error> {
        self.fsm
            .route(state, event)
            .map(|t| t.id.to.clone())
            .map_err(|violations| Error::InvalidEvent {
                state: state.to_owned(),
                violations,
            })
    }

    /// `event` with the id of `state`'s only exit added when it has none.
    fn with_id(&self, state: &str, mut event: Value) -> Value {
        let mut exits = self.fsm.definition().outgoing(state);
        if let (Some(only), None) = (exits.next(), exits.next())
            && let Value::Object(map) = &mut event
            && !map.contains_key("id")
        {
            let mut with = serde_json::Map::new();
            with.insert("id".into(), id_value(only, self.fsm.id_style()));
            with.extend(std::mem::take(map));
            *map = with;
        }
        event
    }

    /// Takes the transition to `to` with `event`: recorded unless the transition is `omit`.
    fn advance(
        &self,
        run: &mut Run,
        to: String,
        event: Value,
        how: How,
        journal: Option<&mut Journal>,
    ) -> Result<(), Error> {
        let How {
            attempts,
            bail_out,
            at,
            repeats,
        } = how;
        let omit = self
            .fsm
            .definition()
            .transition(&run.state, &to)
            .is_some_and(|t| t.omit);
        // Which model answered: only an `llm` state's own calls (a sub-FSM's carry no one model).
        let model = if !attempts.is_empty() && self.state(&run.state).action == Action::Llm {
            self.model_of(&run.state)
        } else {
            None
        };
        let mut entry =
            Entry::new(run.state.clone(), to.clone(), event.clone()).with_attempts(attempts);
        entry.model = model;
        entry.at = at;
        entry.repeats = repeats;
        if bail_out {
            tracing::warn!(from = %run.state, to = %to, "bail-out transition");
        } else if repeats > 0 {
            // Told to the model (or ending the run, which says so): no warning.
            tracing::info!(from = %run.state, to = %to, repeats, "transition of a repeated call");
        } else {
            tracing::info!(from = %run.state, to = %to, "transition");
        }
        self.observe(run, &entry);
        if !omit {
            self.record(run, &entry, journal)?;
        }
        run.state = to;
        run.event = event;
        run.status = self.status_in(&run.state);
        Ok(())
    }

    /// Shows `entry` of `run` to the observer, its states prefixed as `run`'s are.
    fn observe(&self, run: &Run, entry: &Entry) {
        let Some(observer) = &self.observer else {
            return;
        };
        if run.prefix.is_empty() {
            return observer(entry);
        }
        let mut prefixed = entry.clone();
        prefixed.from = format!("{}{}", run.prefix, entry.from);
        prefixed.to = format!("{}{}", run.prefix, entry.to);
        observer(&prefixed);
    }

    /// Appends `entry` to the trail and the journal (then the journal hook).
    fn record(
        &self,
        run: &mut Run,
        entry: &Entry,
        journal: Option<&mut Journal>,
    ) -> Result<(), Error> {
        let Some(journal) = journal else {
            run.trail.entries.push(entry.clone());
            return self.note_applied(run, &entry.from, None);
        };
        journal.record(entry)?;
        run.trail.entries.push(entry.clone());
        self.note_applied(run, &entry.from, Some(journal))?;
        self.journaled(run, journal)
    }

    /// Calls the journal hook, if any, after a line was appended to `journal`.
    fn journaled(&self, run: &Run, journal: &mut Journal) -> Result<(), Error> {
        match &self.journal_hook {
            Some(hook) => hook(run, journal),
            None => Ok(()),
        }
    }

    /// Records the move to `interrupted`.
    fn interrupted(&self, run: &mut Run, journal: Option<&mut Journal>) -> Result<Outcome, Error> {
        let from = run.state.clone();
        let event = serde_json::json!({"id": [from, INTERRUPTED], "interrupted": true});
        let entry = Entry::new(from.clone(), INTERRUPTED, event.clone());
        self.observe(run, &entry);
        self.record(run, &entry, journal)?;
        run.state = INTERRUPTED.to_owned();
        run.event = event;
        run.status = Status::Interrupted;
        tracing::info!(from = %from, "run interrupted");
        Ok(Outcome::Interrupted { from })
    }

    /// The backend and configuration `state` asks: its own ([`Runner::with_llm_for`]), else the
    /// runner's with the state's `config.model`, if any, as the model.
    fn llm_of(&self, state: &str) -> Option<(Arc<dyn Backend>, Config)> {
        if let Some((backend, config)) = self.state_llms.get(state) {
            return Some((Arc::clone(backend), config.clone()));
        }
        let (backend, config) = self.llm.as_ref()?;
        let mut config = config.clone();
        // A state may name its own model (voters in a vote, a diagnostic model in meta-debug).
        if let Some(model) = self
            .fsm
            .definition()
            .state(state)
            .and_then(|s| s.config_str("model").map(str::to_owned))
        {
            config.model = model;
        }
        Some((Arc::clone(backend), config))
    }

    /// `provider:model` of the model an `llm` state asks, for the trail.
    fn model_of(&self, state: &str) -> Option<String> {
        let (backend, config) = self.llm_of(state)?;
        Some(format!("{}:{}", backend.provider(), config.model))
    }

    /// The pipeline of `state`, asked with `system` (a remedied prompt) when given.
    fn pipeline(&self, state: &str, system: Option<&str>) -> Option<Arc<Pipeline>> {
        let key = match system {
            Some(system) => format!("{state}\n{system}"),
            None => state.to_owned(),
        };
        let mut pipelines = self
            .pipelines
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = pipelines.get(&key) {
            return Some(Arc::clone(p));
        }
        let pipeline = Arc::new(self.recipe(state)?.pipeline(system));
        pipelines.insert(key, Arc::clone(&pipeline));
        Some(pipeline)
    }

    /// What `state`'s pipeline is built from.
    fn recipe(&self, state: &str) -> Option<meta_debug::Recipe> {
        let (backend, mut config) = self.llm_of(state)?;
        // The state prompt lists every transition's schema already.
        config.schema_format = claij_interceptors::SchemaFormat::Described;
        let prompt = self.fsm.prompt(state).unwrap_or_default();
        config.system = if config.system.is_empty() {
            prompt.to_owned()
        } else {
            format!("{}\n\n{prompt}", config.system)
        };
        Some(meta_debug::Recipe {
            backend,
            config,
            chain: Arc::clone(&self.chain),
            schema: self.fsm.output_schema(state).cloned(),
        })
    }
}

impl Run {
    /// The meta-debugging remedies of the run, by state (see [`Runner::with_meta_debug`]).
    pub fn remedies(&self) -> &BTreeMap<String, Remedy> {
        &self.remedies
    }

    /// The system prompt a prompt remedy gave `state`, if any.
    fn remedied_system(&self, state: &str) -> Option<&str> {
        self.remedies
            .get(state)
            .filter(|r| r.kind == RemedyKind::Prompt)
            .map(|r| r.system.as_str())
    }

    /// This run stops at a repeat of a service call beyond `limit` rather than at its runner's
    /// [`Runner::with_max_repeated_calls`] (a run request's own limit, say).
    pub fn set_max_repeated_calls(&mut self, limit: usize) {
        self.max_repeated_calls = Some(limit);
    }

    /// The sub-FSM run this run waits in, if it waits in one.
    pub fn suspended(&self) -> Option<&Run> {
        self.suspended.as_deref()
    }

    /// The state it waits in, with the `fsm` states it waits through: `review/approve`.
    pub fn waiting_in(&self) -> String {
        match &self.suspended {
            Some(sub) => format!("{}/{}", self.state, sub.waiting_in()),
            None => self.state.clone(),
        }
    }
}

/// What an action produced.
struct Step {
    event: Value,
    attempts: Vec<AttemptRecord>,
    bail_out: bool,
    /// A sub-FSM's transitions to record first (trail mode `full`).
    sub_entries: Option<Vec<Entry>>,
    /// A sub-FSM run that waits for a person: the parent waits with it.
    suspended: Option<Box<Run>>,
    /// A meta-debugging remedy for the state, to keep for the rest of the run.
    remedy: Option<Remedy>,
    /// The state failed (no bail-out): the run stops with this error once `remedy` is kept.
    error: Option<Error>,
}

impl Step {
    fn event(event: Value) -> Self {
        Self {
            event,
            attempts: Vec::new(),
            bail_out: false,
            sub_entries: None,
            suspended: None,
            remedy: None,
            error: None,
        }
    }
}

/// How a transition was taken: the model calls that chose it, whether it is a bail-out, when, and
/// how many earlier calls a service's repeats.
struct How {
    attempts: Vec<AttemptRecord>,
    bail_out: bool,
    at: SystemTime,
    repeats: usize,
}

impl How {
    /// Taken now, without a model (a start, a person's input).
    fn now() -> Self {
        Self {
            attempts: Vec::new(),
            bail_out: false,
            at: SystemTime::now(),
            repeats: 0,
        }
    }
}

/// A sub-FSM run as the journal keeps it.
fn snapshot(in_state: &str, run: &Run) -> Suspended {
    Suspended {
        in_state: in_state.to_owned(),
        run_id: run.id.clone(),
        state: run.state.clone(),
        event: run.event.clone(),
        trail: run.trail.clone(),
        status: run.status,
        sub: run
            .suspended
            .as_deref()
            .map(|sub| Box::new(snapshot(&run.state, sub))),
    }
}

fn new_run_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "run-{nanos:x}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("id", &self.id)
            .field("state", &self.state)
            .field("status", &self.status)
            .field("transitions", &self.trail.entries.len())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("fsm", &self.fsm.id())
            .field("services", &self.services.keys().collect::<Vec<_>>())
            .field("sub_fsms", &self.subs.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}
