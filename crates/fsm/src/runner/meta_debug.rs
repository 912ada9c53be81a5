//! Meta-debugging that acts: an `llm` state out of retries is diagnosed by the meta-debug machine
//! ([`crate::builtin::meta_debug`]), a prompt remedy is verified by asking the state again with it,
//! a schema remedy is put to the remedy approver and, approved, verified the same way (the state's
//! interceptors now extend its schema); either is kept for the rest of the run with its effect.

use std::sync::{Arc, Mutex, PoisonError};

use claij_backends::{Backend, Message};
use claij_interceptors::{Chain, Config, Context, ErrorChain, Exhausted, Pipeline};
use serde_json::Value;

use super::{Outcome, Runner, actions};
use crate::builtin::meta_debug::{self, Diagnostics, Effect, Remedy, RemedyKind, Symptom};
use crate::definition::State;
use crate::error::Error;
use crate::interrupt::Interrupt;
use crate::trail::{AttemptRecord, Entry};

/// Where a state's model calls come from, to build its pipeline with another system prompt.
#[derive(Clone)]
pub(super) struct Recipe {
    pub(super) backend: Arc<dyn Backend>,
    /// The state's configuration, its system prompt included.
    pub(super) config: Config,
    pub(super) chain: Arc<dyn Fn() -> Chain + Send + Sync>,
    pub(super) schema: Option<Value>,
}

impl Recipe {
    /// The state's pipeline, asked with `system` when given.
    pub(super) fn pipeline(&self, system: Option<&str>) -> Pipeline {
        let mut config = self.config.clone();
        if let Some(system) = system {
            system.clone_into(&mut config.system);
        }
        let mut chain = (self.chain)();
        chain.push(actions::history());
        let pipeline = Pipeline::new(Arc::clone(&self.backend), config, chain);
        match &self.schema {
            Some(schema) => pipeline.with_base_schema(schema.clone()),
            None => pipeline.with_plain_text(),
        }
    }
}

/// What meta-debugging a failure came to.
pub(super) struct Diagnosed {
    /// The meta-debug run's transitions, under `{state}/meta-debug/`.
    pub(super) entries: Vec<Entry>,
    /// The remedy, when it was applied (a prompt remedy) or recorded (schema, model).
    pub(super) remedy: Option<Remedy>,
    /// The failing state's valid event, when the attempt with the remedy validated.
    pub(super) answer: Option<Verified>,
}

/// The valid event the attempt with a remedy produced, and the attempts it took.
pub(super) type Verified = (Value, Vec<AttemptRecord>);

/// The history the verification is asked with, as the state's pipeline would see it.
pub(super) struct Asked {
    pub(super) history: Vec<Message>,
    pub(super) input: String,
}

impl Runner {
    /// Runs the meta-debug machine on `state`'s failure (`symptom`); a prompt remedy is verified by
    /// asking the state again (`asked`) with the remedied system prompt, a schema remedy approved by
    /// the remedy approver by asking it again as it is (its interceptors extend its schema).
    pub(super) async fn diagnose(
        &self,
        diagnostics: &Diagnostics,
        state: &State,
        symptom: Symptom,
        recipe: Recipe,
        asked: Asked,
    ) -> Result<Diagnosed, Error> {
        let answer: Arc<Mutex<Option<Verified>>> = Arc::default();
        let slot = Arc::clone(&answer);
        let (history, input) = (Arc::new(asked.history), Arc::new(asked.input));
        let again = (recipe.clone(), Arc::clone(&history), Arc::clone(&input));
        let verify = move |remedy: Remedy| {
            let pipeline = recipe.pipeline(Some(&remedy.system));
            let (history, input, slot) =
                (Arc::clone(&history), Arc::clone(&input), Arc::clone(&slot));
            async move {
                let mut context = Context::default();
                context.insert(actions::History(history.to_vec()));
                match pipeline.ask(&mut context, &input).await {
                    Ok(answer) => {
                        let attempts = answer.attempts.iter().map(AttemptRecord::from).collect();
                        *slot.lock().unwrap_or_else(PoisonError::into_inner) =
                            Some((answer.value, attempts));
                        Ok(true)
                    }
                    Err(claij_interceptors::Error::RetriesExhausted(_)) => Ok(false),
                    Err(e) => Err(e.into()),
                }
            }
        };
        let models: Vec<&str> = diagnostics.models.iter().map(String::as_str).collect();
        let runner = meta_debug::runner(
            Arc::clone(&diagnostics.backend),
            diagnostics.config.clone(),
            &models,
            verify,
        )?;
        tracing::warn!(state = %state.id, model = %symptom.model, "retries exhausted: meta-debugging");
        let mut sub = runner.start(symptom.to_value())?;
        let outcome = Box::pin(runner.run(&mut sub, &Interrupt::new(), None)).await?;
        let prefix = format!("{}/{}", state.id, meta_debug::ID);
        let entries = sub
            .trail
            .entries
            .into_iter()
            .map(|mut e| {
                e.from = format!("{prefix}/{}", e.from);
                e.to = format!("{prefix}/{}", e.to);
                e
            })
            .collect();
        let mut remedy = match &outcome {
            Outcome::Finished { event, .. } => remedy_of(&symptom, event),
            _ => None,
        };
        let mut answer = answer.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(remedy) = &mut remedy {
            match remedy.kind {
                RemedyKind::Prompt => {
                    remedy.effect = Some(if answer.is_some() {
                        Effect::Validated
                    } else {
                        Effect::Invalid
                    });
                }
                RemedyKind::Schema => {
                    let (effect, verified) = self.try_schema(&state.id, remedy, again).await;
                    remedy.effect = effect;
                    answer = verified;
                }
                _ => {}
            }
        }
        tracing::info!(
            state = %state.id,
            remedy = remedy.as_ref().map(|r| r.suggestion.as_str()),
            fixed = answer.is_some(),
            "meta-debugging done"
        );
        Ok(Diagnosed {
            entries,
            remedy,
            answer,
        })
    }
}

impl Runner {
    /// A schema remedy with a delta, put to the remedy approver; approved, the state asked again
    /// (its interceptors now extend its schema). Its effect (`None` when there is no approver or no
    /// delta), and the valid event when the state's reply validated.
    async fn try_schema(
        &self,
        state: &str,
        remedy: &Remedy,
        (recipe, history, input): (Recipe, Arc<Vec<Message>>, Arc<String>),
    ) -> (Option<Effect>, Option<Verified>) {
        let (Some(approver), Some(_)) = (&self.remedy_approver, &remedy.delta) else {
            return (None, None);
        };
        match approver.approve(state, remedy).await {
            Ok(true) => {}
            Ok(false) => return (Some(Effect::Declined), None),
            Err(error) => {
                tracing::warn!(state, error = %ErrorChain(error.as_ref()), "the schema remedy could not be decided: declined");
                return (Some(Effect::Declined), None);
            }
        }
        let pipeline = recipe.pipeline(None);
        let mut context = Context::default();
        context.insert(actions::History(history.to_vec()));
        match pipeline.ask(&mut context, &input).await {
            Ok(answer) => {
                let attempts = answer.attempts.iter().map(AttemptRecord::from).collect();
                (Some(Effect::Validated), Some((answer.value, attempts)))
            }
            Err(error) => {
                tracing::warn!(state, error = %ErrorChain(&error), "the state still fails with the schema remedy");
                (Some(Effect::Invalid), None)
            }
        }
    }
}

/// The failed attempts of `attempts` (this turn of `state`) when a violation among them (the same
/// keyword at the same schema pointer) failed an attempt of an earlier turn of `state` too: a
/// validation failure that repeats across turns, though each turn found a valid reply in the end.
/// The count is of every failed attempt of the turns it repeats in.
pub(super) fn repeated_failure(
    state: &str,
    trail: &[Entry],
    attempts: &[claij_interceptors::Attempt],
) -> Option<(Exhausted, usize)> {
    let failed: Vec<claij_interceptors::Attempt> = attempts
        .iter()
        .filter(|a| a.verdict == claij_interceptors::Verdict::Invalid)
        .cloned()
        .collect();
    let now: std::collections::HashSet<(&str, &str)> = failed
        .iter()
        .flat_map(|a| &a.violations)
        .map(|v| (v.keyword.as_str(), v.schema_pointer.as_str()))
        .collect();
    let earlier: usize = trail
        .iter()
        .filter(|e| e.from == state)
        .map(|e| {
            let invalid = e
                .attempts
                .iter()
                .filter(|a| a.verdict == claij_interceptors::Verdict::Invalid);
            let repeats = invalid.clone().any(|a| {
                a.violations
                    .iter()
                    .any(|v| now.contains(&(v.keyword.as_str(), v.schema_pointer.as_str())))
            });
            if repeats { invalid.count() } else { 0 }
        })
        .sum();
    (earlier > 0).then(|| {
        let count = earlier + failed.len();
        (Exhausted { attempts: failed }, count)
    })
}

/// The remedy the meta-debug run's final `event` carries, if it got as far as one.
fn remedy_of(symptom: &Symptom, event: &Value) -> Option<Remedy> {
    let kind: RemedyKind = serde_json::from_value(event.get("fix_kind")?.clone()).ok()?;
    let suggestion = event.get("suggestion")?.as_str()?.to_owned();
    let system = match (kind, event.get("system").and_then(Value::as_str)) {
        (RemedyKind::Prompt, Some(system)) => system.to_owned(),
        _ => symptom.system.clone(),
    };
    let remedy = Remedy::new(
        symptom.model.clone(),
        symptom.request.clone(),
        kind,
        suggestion,
        system,
    );
    Some(match event.get("delta") {
        Some(delta) if kind == RemedyKind::Schema => remedy.with_delta(delta.clone()),
        _ => remedy,
    })
}
