//! The `ClaijFsm` workflow: one run of a machine per workflow key, each action journaled by
//! `ctx.run`, a `human` state a durable promise, a sub-FSM a child workflow, the trail in the
//! workflow's state.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use claij_fsm::{Interrupt, NextAction, Run, Runner, Status, StepRecord, Trail};
use claij_interceptors::ErrorChain;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::types::{Ended, Failure, Machine, Provided, RunRequest, RunResult, RunStatus};
use crate::wiring::Runners;

/// The workflow's service name, as the ingress addresses it (`/ClaijFsm/{run_id}/run`).
pub const WORKFLOW: &str = "ClaijFsm";

/// State keys of a run.
const STATUS: &str = "status";
const REQUEST: &str = "request";
const WAITING: &str = "waiting";
/// The promise the `interrupt` handler resolves.
const INTERRUPT: &str = "interrupt";

/// The workflow (bind it to an endpoint through [`crate::Worker`]).
pub struct ClaijFsm {
    pub(crate) runners: Arc<Runners>,
}

/// What an action inside `ctx.run` produced: the journal keeps it, a replay reads it back.
#[derive(Serialize, Deserialize)]
enum Acted {
    Step(Box<StepRecord>),
    Failed(Failure),
}

#[restate_sdk::workflow(name = "ClaijFsm")]
impl ClaijFsm {
    /// Runs the machine to its end (waiting for people on the way).
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        request: Json<RunRequest>,
    ) -> Result<Json<RunResult>, HandlerError> {
        let request = request.into_inner();
        ctx.set(REQUEST, Json(request.clone()));
        let run_id = ctx.key().to_owned();
        let runner = match self.runners.get(&request.definition).await {
            Ok(runner) => runner,
            Err(error) => {
                let failure = Failure::other(
                    "start",
                    format!("the worker cannot run this machine: {error}"),
                );
                return Ok(Json(RunResult {
                    run_id,
                    ended: Ended::Failed(failure),
                    trail: Trail::default(),
                }));
            }
        };
        let mut driver = Driver {
            ctx: &ctx,
            runner: &runner,
            request: &request,
        };
        driver.drive(run_id).await.map(Json)
    }

    /// Gives the `human` state the run waits in its input (an event out of it; `id` optional with
    /// one exit), checked first: a wrong event is refused (400) and the run waits on.
    #[handler]
    async fn provide(
        &self,
        ctx: SharedWorkflowContext<'_>,
        event: Json<Value>,
    ) -> Result<Json<RunStatus>, HandlerError> {
        let waiting = ctx.get::<String>(WAITING).await?;
        let status = ctx
            .get::<Json<RunStatus>>(STATUS)
            .await?
            .map(Json::into_inner);
        let (Some(promise), Some(status)) = (waiting, status) else {
            return Err(TerminalError::new_with_code(
                409,
                format!("run `{}` is not waiting for input", ctx.key()),
            )
            .into());
        };
        let Some(Json(request)) = ctx.get::<Json<RunRequest>>(REQUEST).await? else {
            return Err(TerminalError::new_with_code(404, "no run").into());
        };
        let runner =
            self.runners.get(&request.definition).await.map_err(|e| {
                TerminalError::new(format!("the worker cannot run this machine: {e}"))
            })?;
        let event = runner
            .check_event(&status.state, event.into_inner())
            .map_err(|e| TerminalError::new_with_code(400, ErrorChain(&e).to_string()))?;
        ctx.resolve_promise(
            &promise,
            Json(Provided {
                event,
                at_ms: now_ms(),
            }),
        );
        Ok(Json(status))
    }

    /// Where the run is, with its trail so far.
    #[handler]
    async fn status(
        &self,
        ctx: SharedWorkflowContext<'_>,
    ) -> Result<Json<RunStatus>, HandlerError> {
        match ctx.get::<Json<RunStatus>>(STATUS).await? {
            Some(status) => Ok(status),
            None => Err(TerminalError::new_with_code(
                404,
                format!("run `{}` has not started", ctx.key()),
            )
            .into()),
        }
    }

    /// Stops the run: at once when it waits for a person, else when its current action ends; the
    /// trail records `[state, "interrupted"]`.
    #[handler]
    async fn interrupt(&self, ctx: SharedWorkflowContext<'_>) -> Result<(), HandlerError> {
        ctx.resolve_promise(INTERRUPT, true);
        Ok(())
    }
}

/// One invocation of `run`: the replay of the journal up to where it ends, then new work.
struct Driver<'a, 'ctx> {
    ctx: &'a WorkflowContext<'ctx>,
    runner: &'a Arc<Runner>,
    request: &'a RunRequest,
}

impl Driver<'_, '_> {
    async fn drive(&mut self, run_id: String) -> Result<RunResult, HandlerError> {
        let started = self.clock("start").await?;
        let mut run = match self
            .runner
            .start_with_id(run_id.clone(), self.request.input.clone())
        {
            Ok(run) => run,
            Err(error) => return Ok(self.failed(&run_id, "start", &Trail::default(), &error)),
        };
        stamp(&mut run, 0, started);
        if let Some(limit) = self.request.options.max_repeated_calls {
            run.set_max_repeated_calls(limit);
        }
        self.publish(&run, None, None, None);
        let limit = self
            .request
            .options
            .max_transitions
            .unwrap_or_else(|| self.runner.max_transitions());
        let mut taken = 0;
        let mut subs = 0;
        loop {
            // An interrupt, or Restate's cancel of this invocation (seen at the next step).
            match self.ctx.peek_promise::<bool>(INTERRUPT).await {
                Ok(None) => {}
                Ok(Some(_)) => return self.interrupted(&mut run).await,
                Err(error) if is_cancel(&error) => return self.interrupted(&mut run).await,
                Err(error) => return Err(error.into()),
            }
            let next = self.runner.next_action(&run);
            if taken == limit && !matches!(next, NextAction::End { .. }) {
                let error = claij_fsm::Error::TooManyTransitions {
                    state: run.state.clone(),
                    limit,
                    recorded: run.trail.entries.len(),
                };
                return Ok(self.failed(&run.id, &run.state.clone(), &run.trail, &error));
            }
            taken += 1;
            match next {
                NextAction::End { state, event } => {
                    run.status = Status::Finished;
                    self.publish(&run, None, None, None);
                    return Ok(RunResult {
                        run_id: run.id,
                        ended: Ended::Finished { state, event },
                        trail: run.trail,
                    });
                }
                NextAction::Human { state } => {
                    if let Some(result) = self.wait_for_person(&mut run, &state).await? {
                        return Ok(result);
                    }
                    // A person's input starts a new count, as `Runner::run` called again does.
                    taken = 0;
                }
                NextAction::SubFsm { state, name, input } => {
                    subs += 1;
                    if let Some(result) = self.sub_fsm(&mut run, &state, &name, input, subs).await?
                    {
                        return Ok(result);
                    }
                }
                NextAction::Act { state } => {
                    if let Some(result) = self.act(&mut run, &state, taken).await? {
                        return Ok(result);
                    }
                }
                // A variant this driver does not know: refuse by name rather than guess.
                other => {
                    let failure = Failure::other(
                        run.state.clone(),
                        format!("not supported on Restate: {other:?}"),
                    );
                    return Ok(self.fail(&run, failure));
                }
            }
        }
    }

    /// The state's action, journaled: a replay reads the record instead of calling the model.
    async fn act(
        &self,
        run: &mut Run,
        state: &str,
        taken: usize,
    ) -> Result<Option<RunResult>, HandlerError> {
        let mut fork = run.fork();
        let runner = Arc::clone(self.runner);
        let in_state = state.to_owned();
        let acted = self
            .ctx
            .run(move || async move {
                let acted = match runner.act_step(&mut fork, &Interrupt::new()).await {
                    // Through JSON, so the first run applies exactly what a replay will read.
                    Ok(record) => Acted::Step(Box::new(serde_json::from_value(
                        serde_json::to_value(&record)?,
                    )?)),
                    Err(error) => Acted::Failed(Failure::of(in_state, &error)),
                };
                Ok(Json(acted))
            })
            .name(format!("{state} #{taken}"))
            .await;
        // Interrupted or cancelled while the action ran: as the embedded runner drops the action
        // in flight, its result is not applied and the run stops in this state.
        let acted = match acted {
            Ok(Json(acted)) => acted,
            Err(error) if is_cancel(&error) => return self.interrupted(run).await.map(Some),
            Err(error) => return Err(error.into()),
        };
        match self.ctx.peek_promise::<bool>(INTERRUPT).await {
            Ok(None) => {}
            Ok(Some(_)) => return self.interrupted(run).await.map(Some),
            Err(error) if is_cancel(&error) => return self.interrupted(run).await.map(Some),
            Err(error) => return Err(error.into()),
        }
        match acted {
            Acted::Step(record) => match self.runner.apply_step(run, *record) {
                Ok(_) => {
                    self.publish(run, None, None, None);
                    Ok(None)
                }
                Err(error) => Ok(Some(self.failed(&run.id, state, &run.trail, &error))),
            },
            Acted::Failed(failure) => Ok(Some(self.fail(run, failure))),
        }
    }

    /// Waits on the state's promise (named by the state and how often the run entered it) until
    /// `provide` resolves it, or the run is interrupted or cancelled.
    async fn wait_for_person(
        &self,
        run: &mut Run,
        state: &str,
    ) -> Result<Option<RunResult>, HandlerError> {
        let visits = run.trail.entries.iter().filter(|e| e.to == state).count();
        let promise = format!("human/{state}/{visits}");
        run.status = Status::Waiting;
        self.ctx.set(WAITING, promise.clone());
        self.publish(run, Some(state.to_owned()), None, None);
        let provided: Option<Provided> = restate_sdk::select! {
            provided = self.ctx.promise::<Json<Provided>>(&promise) => Some(provided?.into_inner()),
            _ = self.ctx.promise::<bool>(INTERRUPT) => None,
            on_cancel => None
        };
        self.ctx.clear(WAITING);
        let Some(provided) = provided else {
            return self.interrupted(run).await.map(Some);
        };
        let before = run.trail.entries.len();
        if let Err(error) = self.runner.provide(run, provided.event, None) {
            return Ok(Some(self.failed(&run.id, state, &run.trail, &error)));
        }
        stamp(run, before, provided.at_ms);
        self.publish(run, None, None, None);
        Ok(None)
    }

    /// Runs the sub-FSM `name` as a child workflow keyed `{run}/{state}/{n}`; its end leaves the
    /// state as the embedded runner would make it.
    async fn sub_fsm(
        &self,
        run: &mut Run,
        state: &str,
        name: &str,
        input: Value,
        n: usize,
    ) -> Result<Option<RunResult>, HandlerError> {
        let Some(sub) = self
            .runner
            .sub_definitions()
            .into_iter()
            .find(|s| s.name == name)
        else {
            let error = claij_fsm::Error::Unregistered {
                state: state.to_owned(),
                kind: "fsm",
                name: name.to_owned(),
            };
            return Ok(Some(self.failed(&run.id, state, &run.trail, &error)));
        };
        let child_key = format!("{}/{state}/{n}", run.id);
        let child = RunRequest {
            definition: Machine::inline(sub.definition, sub.sub_fsms),
            input,
            options: self.request.options.clone(),
        };
        self.publish(run, None, Some(child_key.clone()), None);
        let result = self
            .ctx
            .workflow_client::<ClaijFsmClient>(child_key.clone())
            .run(Json(child))
            .call()
            .await;
        let Json(result) = match result {
            Ok(result) => result,
            Err(error) if is_cancel(&error) => return self.interrupted(run).await.map(Some),
            Err(error) => return Err(error.into()),
        };
        let failed = |message: String| claij_fsm::Error::Action {
            state: state.to_owned(),
            action: format!("fsm {name}"),
            message,
        };
        let event = match result.ended {
            Ended::Finished { event, .. } => event,
            Ended::Interrupted { .. } => {
                match self.ctx.peek_promise::<bool>(INTERRUPT).await {
                    Ok(Some(_)) => return self.interrupted(run).await.map(Some),
                    Err(error) if is_cancel(&error) => {
                        return self.interrupted(run).await.map(Some);
                    }
                    Ok(None) => {}
                    Err(error) => return Err(error.into()),
                }
                let error = failed("interrupted".into());
                return Ok(Some(self.failed(&run.id, state, &run.trail, &error)));
            }
            Ended::Failed(failure) => {
                let error = failed(failure.error);
                return Ok(Some(self.failed(&run.id, state, &run.trail, &error)));
            }
        };
        let at = self.clock(state).await?;
        let step = self
            .runner
            .sub_fsm_step(state, event, &result.trail, from_ms(at))
            .and_then(|record| self.runner.apply_step(run, record));
        if let Err(error) = step {
            return Ok(Some(self.failed(&run.id, state, &run.trail, &error)));
        }
        self.publish(run, None, None, None);
        Ok(None)
    }

    async fn interrupted(&self, run: &mut Run) -> Result<RunResult, HandlerError> {
        let from = run.state.clone();
        let at = match self.clock_or_cancel("interrupt").await {
            Ok(at) => at,
            // Cancelled again: the time of the last transition (what a replay also takes).
            Err(error) if is_cancel(&error) => run
                .trail
                .entries
                .last()
                .and_then(|e| e.at.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            Err(error) => return Err(error.into()),
        };
        let before = run.trail.entries.len();
        // Without a journal, recording cannot fail.
        let _ = self.runner.interrupt_run(run);
        stamp(run, before, at);
        self.publish(run, None, None, None);
        Ok(RunResult {
            run_id: run.id.clone(),
            ended: Ended::Interrupted { from },
            trail: run.trail.clone(),
        })
    }

    /// The current time, journaled (a replay gets the same).
    async fn clock(&self, what: &str) -> Result<u64, HandlerError> {
        Ok(self.clock_or_cancel(what).await?)
    }

    /// [`Driver::clock`], with Restate's cancellation as it comes.
    async fn clock_or_cancel(&self, what: &str) -> Result<u64, TerminalError> {
        self.ctx
            .run(|| async { Ok(now_ms()) })
            .name(format!("clock {what}"))
            .await
    }

    fn failed(
        &self,
        run_id: &str,
        state: &str,
        trail: &Trail,
        error: &claij_fsm::Error,
    ) -> RunResult {
        let failure = Failure::of(state, error);
        let status = RunStatus {
            run_id: run_id.to_owned(),
            fsm: self.runner.fsm().id().to_owned(),
            state: state.to_owned(),
            status: Status::Running,
            waiting_in: None,
            sub_run: None,
            failure: Some(failure.clone()),
            trail: trail.clone(),
        };
        self.ctx.set(STATUS, Json(status));
        RunResult {
            run_id: run_id.to_owned(),
            ended: Ended::Failed(failure),
            trail: trail.clone(),
        }
    }

    fn fail(&self, run: &Run, failure: Failure) -> RunResult {
        self.publish(run, None, None, Some(failure.clone()));
        RunResult {
            run_id: run.id.clone(),
            ended: Ended::Failed(failure),
            trail: run.trail.clone(),
        }
    }

    /// The run's status, for the `status` handler (after every transition).
    fn publish(
        &self,
        run: &Run,
        waiting_in: Option<String>,
        sub_run: Option<String>,
        failure: Option<Failure>,
    ) {
        let status = RunStatus {
            run_id: run.id.clone(),
            fsm: self.runner.fsm().id().to_owned(),
            state: run.state.clone(),
            status: run.status,
            waiting_in,
            sub_run,
            failure,
            trail: run.trail.clone(),
        };
        self.ctx.set(STATUS, Json(status));
    }
}

/// Gives the transitions recorded after the first `before` the journaled time `at_ms` (a replay
/// makes the same trail).
/// Whether a durable step failed because Restate cancelled the invocation (its 409 `cancelled`;
/// the steps here fail terminally for no other reason).
fn is_cancel(error: &TerminalError) -> bool {
    error.code() == 409
}

fn stamp(run: &mut Run, before: usize, at_ms: u64) {
    for entry in run.trail.entries.iter_mut().skip(before) {
        entry.at = from_ms(at_ms);
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn from_ms(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}
