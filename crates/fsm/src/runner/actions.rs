//! The actions a state runs: a model through the pipeline (with the bail-out), a registered service,
//! a sub-FSM.

use claij_backends::Message;
use claij_interceptors::{Context, ErrorChain, Exhausted, Interceptor};
use serde_json::{Value, json};

use super::meta_debug::{self, Asked, Diagnosed};
use super::{Run, Runner, ServiceCall, Step, TrailMode, repeats};
use crate::builtin::meta_debug::Symptom;
use crate::definition::{Action, State};
use crate::error::Error;
use crate::interrupt::Interrupt;
use crate::schema::id_value;
use crate::trail::{AttemptRecord, Entry, trail_to_messages};

/// The conversation so far, put in the context before each model call.
pub(super) struct History(pub(super) Vec<Message>);

/// The interceptor that replays the trail to the model as the conversation history.
pub(super) fn history() -> impl Interceptor {
    claij_interceptors::from_fn("fsm-trail").pre_prompt(|prompts, ctx: &Context| {
        if let Some(History(messages)) = ctx.get::<History>() {
            prompts.history = messages.clone();
        }
        Ok(())
    })
}

impl Runner {
    pub(super) async fn act(
        &self,
        state: &State,
        run: &mut Run,
        interrupt: &Interrupt,
    ) -> Result<Step, Error> {
        match &state.action {
            Action::Llm => self.ask(state, run).await,
            Action::Fsm => self.run_sub_fsm(state, run, interrupt).await,
            Action::Service => {
                let name = state.config_str("service").unwrap_or(&state.id).to_owned();
                self.service(state, run, interrupt, &name, "service").await
            }
            Action::Custom(name) => {
                let name = name.clone();
                self.service(state, run, interrupt, &name, "action").await
            }
            // Terminal and human states never get here.
            Action::End | Action::Human => Err(Error::NotWaiting {
                state: state.id.clone(),
            }),
        }
    }

    /// The model's event, validated against the state's outputs by the pipeline; when its retries run
    /// out, the bail-out transition if the state has one.
    async fn ask(&self, state: &State, run: &mut Run) -> Result<Step, Error> {
        let pipeline = self
            .pipeline(&state.id, run.remedied_system(&state.id))
            .ok_or_else(|| Error::Unregistered {
                state: state.id.clone(),
                kind: "model",
                name: "llm".into(),
            })?;
        let entries = &run.trail.entries;
        // The event that entered this state is the input, not history: drop it when it was recorded
        // (an `omit` transition into the state leaves it out of the trail).
        let entered = entries
            .last()
            .is_some_and(|last| last.to == state.id && last.event == run.event);
        let earlier = if state.config_str("history") == Some("none") {
            // The state's input says all it needs (a diagnosis of one failure).
            &entries[..0]
        } else if entered {
            &entries[..entries.len() - 1]
        } else {
            &entries[..]
        };
        let history = trail_to_messages(self.fsm.definition(), earlier);
        run.context.insert(History(history.clone()));
        // `config.input: "start"`: the model answers the run's first event (a proposal every voter
        // judges on its own), not whatever entered the state.
        let mut input = match (state.config_str("input"), entries.first()) {
            (Some("start"), Some(first)) => first.event.to_string(),
            _ => run.event.to_string(),
        };
        // A service's result that repeats an earlier call's: said to the model, with the ways on
        // (unless the check is off: a state that polls expects the same result for a while).
        let checked = run.max_repeated_calls.unwrap_or(self.max_repeated_calls) != usize::MAX;
        if let Some(last) = entries
            .last()
            .filter(|last| checked && entered && last.repeats > 0)
        {
            input = format!("{input}\n\n{}", self.repeat_note(state, run, last));
        }
        let asked = pipeline.ask(&mut run.context, &input).await;
        // The trail holds the conversation; a suspended run need not keep a second copy.
        run.context.remove::<History>();
        match asked {
            Ok(answer) => {
                let step = Step {
                    attempts: answer.attempts.iter().map(AttemptRecord::from).collect(),
                    ..Step::event(answer.value)
                };
                let repeated = self
                    .meta_debug
                    .as_ref()
                    .filter(|d| d.watches(state) && !run.remedies.contains_key(&state.id))
                    .and_then(|_| {
                        meta_debug::repeated_failure(
                            &state.id,
                            &run.trail.entries,
                            &answer.attempts,
                        )
                    });
                match repeated {
                    Some((failed, count)) => {
                        self.remedy_repeated(state, step, &failed, count, Asked { history, input })
                            .await
                    }
                    None => Ok(step),
                }
            }
            Err(claij_interceptors::Error::RetriesExhausted(exhausted))
                if self.meta_debug.as_ref().is_some_and(|d| d.watches(state))
                    && !run.remedies.contains_key(&state.id) =>
            {
                self.remedy(state, exhausted, Asked { history, input })
                    .await
            }
            Err(error) => self.failed(state, error, None),
        }
    }

    /// What `state` is told when the result of a repeated call (`last`, out of a service state)
    /// entered it.
    fn repeat_note(&self, state: &State, run: &Run, last: &Entry) -> String {
        let exits: Vec<String> = self
            .fsm
            .definition()
            .outgoing(&state.id)
            .filter(|t| t.id.to != last.from)
            .map(|t| id_value(t, self.fsm.id_style()).to_string())
            .collect();
        let limit = run.max_repeated_calls.unwrap_or(self.max_repeated_calls);
        repeats::note(&last.from, last.repeats, &exits, last.repeats >= limit)
    }

    /// Meta-debugs `state`'s failure: the state's event when the remedy made it valid, else the
    /// bail-out or the error, with the meta-debug run's transitions and the remedy either way.
    async fn remedy(
        &self,
        state: &State,
        exhausted: Box<Exhausted>,
        asked: Asked,
    ) -> Result<Step, Error> {
        let (Some(diagnostics), Some(recipe)) = (&self.meta_debug, self.recipe(&state.id)) else {
            return self.failed(
                state,
                claij_interceptors::Error::RetriesExhausted(exhausted),
                None,
            );
        };
        let diagnosed = self
            .diagnose(
                diagnostics,
                state,
                Symptom::from_exhausted(recipe.config.model.clone(), &exhausted),
                recipe,
                asked,
            )
            .await?;
        match diagnosed.answer {
            Some(event) => {
                let mut attempts: Vec<AttemptRecord> =
                    exhausted.attempts.iter().map(AttemptRecord::from).collect();
                attempts.extend(diagnosed.attempts);
                Ok(Step {
                    attempts,
                    sub_entries: Some(diagnosed.entries),
                    remedy: diagnosed.remedy,
                    ..Step::event(event)
                })
            }
            None => self.failed(
                state,
                claij_interceptors::Error::RetriesExhausted(exhausted),
                Some(diagnosed),
            ),
        }
    }

    /// Meta-debugs a validation failure that repeats across turns of `state`, though this turn's
    /// `step` is valid: the remedy's effect is whether the state's first attempt with it validates;
    /// `step` goes on either way, with the meta-debug run's transitions and the remedy.
    async fn remedy_repeated(
        &self,
        state: &State,
        mut step: Step,
        failed: &Exhausted,
        count: usize,
        asked: Asked,
    ) -> Result<Step, Error> {
        let (Some(diagnostics), Some(mut recipe)) = (&self.meta_debug, self.recipe(&state.id))
        else {
            return Ok(step);
        };
        tracing::warn!(state = %state.id, failed = count, "a validation failure repeats across turns");
        let mut symptom = Symptom::from_exhausted(recipe.config.model.clone(), failed);
        symptom.attempts = count;
        // The effect to know: does the first attempt validate now?
        recipe.config.max_retries = 0;
        let diagnosed = self
            .diagnose(diagnostics, state, symptom, recipe, asked)
            .await?;
        // The verification's calls count, though this turn's event is already chosen.
        step.attempts.extend(diagnosed.attempts);
        step.sub_entries = Some(diagnosed.entries);
        step.remedy = diagnosed.remedy;
        Ok(step)
    }

    /// The bail-out for a model call that failed, or the error; with what meta-debugging did (the
    /// re-ask's attempts after the failed ones; with no bail-out, a step carrying the remedy and the
    /// error, so the remedy is kept first).
    fn failed(
        &self,
        state: &State,
        error: claij_interceptors::Error,
        diagnosed: Option<Diagnosed>,
    ) -> Result<Step, Error> {
        let (sub_entries, remedy, tried) = match diagnosed {
            Some(d) => (Some(d.entries), d.remedy, d.attempts),
            None => (None, None, Vec::new()),
        };
        let mut attempts: Vec<AttemptRecord> = match &error {
            claij_interceptors::Error::RetriesExhausted(exhausted) => {
                exhausted.attempts.iter().map(AttemptRecord::from).collect()
            }
            claij_interceptors::Error::Backend { attempts, .. } => {
                attempts.iter().map(AttemptRecord::from).collect()
            }
            _ => Vec::new(),
        };
        attempts.extend(tried);
        let bails = matches!(
            error,
            claij_interceptors::Error::RetriesExhausted(_)
                | claij_interceptors::Error::Backend { .. }
        );
        match self.bail_out(&state.id, &ErrorChain(&error).to_string()) {
            Some(event) if bails => Ok(Step {
                attempts,
                bail_out: true,
                sub_entries,
                remedy,
                ..Step::event(event)
            }),
            _ => {
                let error = Error::Llm {
                    state: state.id.clone(),
                    source: Box::new(error),
                };
                match remedy {
                    Some(remedy) => Ok(Step {
                        remedy: Some(remedy),
                        error: Some(error),
                        ..Step::event(Value::Null)
                    }),
                    None => Err(error),
                }
            }
        }
    }

    /// `{id, error, bail_out: true}` for the first transition out of `state` into a terminal state
    /// whose schema accepts it.
    fn bail_out(&self, state: &str, error: &str) -> Option<Value> {
        self.fsm
            .definition()
            .outgoing(state)
            .filter(|t| {
                self.fsm
                    .definition()
                    .state(&t.id.to)
                    .is_some_and(|s| s.is_terminal())
            })
            .map(|t| json!({"id": id_value(t, self.fsm.id_style()), "error": error, "bail_out": true}))
            .find(|event| self.fsm.route(state, event).is_ok())
    }

    async fn service(
        &self,
        state: &State,
        run: &Run,
        interrupt: &Interrupt,
        name: &str,
        kind: &'static str,
    ) -> Result<Step, Error> {
        let service = self.services.get(name).ok_or_else(|| Error::Unregistered {
            state: state.id.clone(),
            kind,
            name: name.to_owned(),
        })?;
        let call = ServiceCall {
            state,
            event: &run.event,
            trail: &run.trail,
            interrupt,
        };
        let event = service.call(call).await.map_err(|e| Error::Action {
            state: state.id.clone(),
            action: name.to_owned(),
            message: e.to_string(),
        })?;
        Ok(Step::event(event))
    }

    /// Runs the sub-FSM named by `config.fsm` on the event that entered the state (or goes on with
    /// the run of it that waited for a person); its final event (without its `id`) leaves the state
    /// by the first transition whose schema accepts it. When it waits for a person, so does the
    /// parent, keeping the sub-FSM run.
    async fn run_sub_fsm(
        &self,
        state: &State,
        run: &mut Run,
        interrupt: &Interrupt,
    ) -> Result<Step, Error> {
        let name = state.config_str("fsm").unwrap_or_default();
        let failed = |message: String| Error::Action {
            state: state.id.clone(),
            action: format!("fsm {name}"),
            message,
        };
        let child = self.subs.get(name).ok_or_else(|| Error::Unregistered {
            state: state.id.clone(),
            kind: "fsm",
            name: name.to_owned(),
        })?;
        let mut sub = match run.suspended.take() {
            Some(sub) => *sub,
            None => {
                let mut input = run.event.clone();
                if let Value::Object(map) = &mut input {
                    map.remove("id");
                }
                let prefix = format!("{}{}/", run.prefix, state.id);
                child
                    .start_in(super::new_run_id(), input, prefix)
                    .map_err(|e| failed(ErrorChain(&e).to_string()))?
            }
        };
        let outcome = Box::pin(child.run(&mut sub, interrupt, None))
            .await
            .map_err(|e| failed(ErrorChain(&e).to_string()))?;
        let result = match outcome {
            super::Outcome::Finished { event, .. } => event,
            super::Outcome::Interrupted { .. } => return Err(failed("interrupted".into())),
            super::Outcome::Waiting { .. } => {
                return Ok(Step {
                    suspended: Some(Box::new(sub)),
                    ..Step::event(Value::Null)
                });
            }
        };
        self.sub_result(state, result, &sub.trail)
    }

    /// The step of `fsm` state `state` whose sub-FSM ended with `result`, its trail `trail`.
    pub(super) fn sub_result(
        &self,
        state: &State,
        mut result: Value,
        trail: &crate::trail::Trail,
    ) -> Result<Step, Error> {
        let name = state.config_str("fsm").unwrap_or_default();
        let failed = |message: String| Error::Action {
            state: state.id.clone(),
            action: format!("fsm {name}"),
            message,
        };
        let mode = match state.config_str("trail") {
            Some("omit") => TrailMode::Omit,
            Some("full") => TrailMode::Full,
            _ => TrailMode::Summary,
        };
        if let Value::Object(map) = &mut result {
            map.remove("id");
        }
        let event = self
            .fsm
            .definition()
            .outgoing(&state.id)
            .map(|t| {
                let mut event = json!({"id": id_value(t, self.fsm.id_style())});
                if let (Value::Object(with), Value::Object(fields)) = (&mut event, &result) {
                    with.extend(fields.clone());
                }
                event
            })
            .find(|event| self.fsm.route(&state.id, event).is_ok())
            .ok_or_else(|| {
                failed(format!(
                    "its result {result} fits no transition out of `{}`",
                    state.id
                ))
            })?;
        let (attempts, sub_entries) = match mode {
            TrailMode::Omit => (Vec::new(), None),
            TrailMode::Summary => (
                trail
                    .entries
                    .iter()
                    .flat_map(|e| e.attempts.clone())
                    .collect(),
                None,
            ),
            TrailMode::Full => {
                let prefixed = trail
                    .entries
                    .iter()
                    .map(|e| {
                        let mut e: Entry = e.clone();
                        e.from = format!("{}/{}", state.id, e.from);
                        e.to = format!("{}/{}", state.id, e.to);
                        e
                    })
                    .collect();
                (Vec::new(), Some(prefixed))
            }
        };
        Ok(Step {
            attempts,
            sub_entries,
            ..Step::event(event)
        })
    }
}
