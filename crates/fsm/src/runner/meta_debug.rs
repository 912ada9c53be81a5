//! Meta-debugging that acts: an `llm` state out of retries is diagnosed by the meta-debug machine
//! ([`crate::builtin::meta_debug`]), a prompt remedy is verified by asking the state again with it,
//! a schema remedy is put to the remedy approver by the machine's `verify` step and, approved,
//! verified the same way (the state's interceptors now extend its schema); either is kept for the
//! rest of the run with its effect, and every attempt of the re-ask joins the state's trail entry.

use std::sync::{Arc, Mutex, PoisonError};

use claij_backends::{Backend, Message};
use claij_interceptors::{
    BoxError, Chain, Config, Context, ErrorChain, Exhausted, HistoryPolicy, Pipeline,
};
use serde_json::Value;

use super::{Outcome, RemedyApprover, Runner, actions, extensions};
use crate::builtin::meta_debug::{self, Diagnostics, Effect, Remedy, RemedyKind, Symptom, Verdict};
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
    /// The state's pipeline, asked with `system` when given. It keeps no message history in the
    /// run's context: the `fsm-trail` hook sends the trail as the conversation.
    pub(super) fn pipeline(&self, system: Option<&str>) -> Pipeline {
        let mut config = self.config.clone();
        if let Some(system) = system {
            system.clone_into(&mut config.system);
        }
        config.history = HistoryPolicy::NONE;
        let mut chain = (self.chain)();
        chain.push(actions::history());
        // Last, to see every delta the chain adds.
        chain.push(extensions::extensions());
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
    pub(super) answer: Option<Value>,
    /// Every attempt of asking the state again with the remedy, valid or not.
    pub(super) attempts: Vec<AttemptRecord>,
}

/// The history the verification is asked with, as the state's pipeline would see it.
pub(super) struct Asked {
    pub(super) history: Vec<Message>,
    pub(super) input: String,
}

/// What the verification did, kept for after the meta-debug run.
#[derive(Default)]
struct Tried {
    effect: Option<Effect>,
    answer: Option<Value>,
    attempts: Vec<AttemptRecord>,
}

/// What the verification needs to ask the failing state again, or to put a schema remedy to the
/// approver first.
struct Again {
    state: String,
    recipe: Recipe,
    history: Vec<Message>,
    input: String,
    approver: Option<Arc<dyn RemedyApprover>>,
}

impl Runner {
    /// Runs the meta-debug machine on `state`'s failure (`symptom`); its `verify` step asks the
    /// state again (`asked`) with a prompt remedy's system prompt, or with a schema remedy once the
    /// remedy approver approves it (the state's interceptors then extend its schema).
    pub(super) async fn diagnose(
        &self,
        diagnostics: &Diagnostics,
        state: &State,
        symptom: Symptom,
        recipe: Recipe,
        asked: Asked,
    ) -> Result<Diagnosed, Error> {
        let tried: Arc<Mutex<Tried>> = Arc::default();
        let again = Arc::new(Again {
            state: state.id.clone(),
            recipe,
            history: asked.history,
            input: asked.input,
            approver: self.remedy_approver.clone(),
        });
        let slot = Arc::clone(&tried);
        let verify = move |remedy: Remedy| {
            let (again, slot) = (Arc::clone(&again), Arc::clone(&slot));
            async move { again.verify(remedy, &slot).await }
        };
        let models: Vec<&str> = diagnostics.models.iter().map(String::as_str).collect();
        let runner = meta_debug::runner_with(
            Arc::clone(&diagnostics.backend),
            diagnostics.config.clone(),
            &models,
            verify,
            self.remedy_approver.is_some(),
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
        let tried = std::mem::take(&mut *tried.lock().unwrap_or_else(PoisonError::into_inner));
        if let Some(remedy) = &mut remedy {
            remedy.effect = match (remedy.kind, tried.effect) {
                // A prompt remedy is always tried; one whose verification never ran did not help.
                (RemedyKind::Prompt, effect) => Some(effect.unwrap_or(Effect::Invalid)),
                (_, effect) => effect,
            };
        }
        tracing::info!(
            state = %state.id,
            remedy = remedy.as_ref().map(|r| r.suggestion.as_str()),
            fixed = tried.answer.is_some(),
            "meta-debugging done"
        );
        Ok(Diagnosed {
            entries,
            remedy,
            answer: tried.answer,
            attempts: tried.attempts,
        })
    }
}

impl Again {
    /// The `verify` step: a schema remedy put to the approver first (declined, not applied), then
    /// the state asked again with the remedy; what happened is kept in `slot`.
    async fn verify(&self, remedy: Remedy, slot: &Mutex<Tried>) -> Result<Verdict, BoxError> {
        let keep = |tried: Tried| *slot.lock().unwrap_or_else(PoisonError::into_inner) = tried;
        let system = match remedy.kind {
            RemedyKind::Prompt => Some(remedy.system.as_str()),
            _ => {
                let approved = match &self.approver {
                    Some(approver) => approver
                        .approve(&self.state, &remedy)
                        .await
                        .unwrap_or_else(|error| {
                            tracing::warn!(state = %self.state, error = %ErrorChain(error.as_ref()), "the schema remedy could not be decided: declined");
                            false
                        }),
                    None => false,
                };
                if !approved {
                    keep(Tried {
                        effect: Some(Effect::Declined),
                        ..Tried::default()
                    });
                    return Ok(Verdict::NotApplied);
                }
                None
            }
        };
        // With a schema remedy, the state's own prompt: its interceptors now extend its schema.
        let pipeline = self.recipe.pipeline(system);
        let mut context = Context::default();
        context.insert(actions::History(self.history.clone()));
        let records = |attempts: &[claij_interceptors::Attempt]| {
            attempts.iter().map(AttemptRecord::from).collect()
        };
        match pipeline.ask(&mut context, &self.input).await {
            Ok(answer) => {
                keep(Tried {
                    effect: Some(Effect::Validated),
                    attempts: records(&answer.attempts),
                    answer: Some(answer.value),
                });
                Ok(Verdict::Fixed)
            }
            Err(error) => {
                tracing::warn!(state = %self.state, error = %ErrorChain(&error), "the state still fails with the remedy");
                let attempts = match &error {
                    claij_interceptors::Error::RetriesExhausted(exhausted) => {
                        records(&exhausted.attempts)
                    }
                    claij_interceptors::Error::Backend { attempts, .. } => records(attempts),
                    _ => Vec::new(),
                };
                keep(Tried {
                    effect: Some(Effect::Invalid),
                    attempts,
                    answer: None,
                });
                match error {
                    claij_interceptors::Error::RetriesExhausted(_) => Ok(Verdict::Unfixed),
                    other => Err(other.into()),
                }
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

#[cfg(test)]
mod tests;
