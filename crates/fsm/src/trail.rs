//! The trail: every transition a run took, with the event that took it and what producing that event
//! cost. It is the run's audit log, its memory for the models, and the one source of usage totals.

use std::time::SystemTime;

use claij_backends::{Message, Usage};
use claij_interceptors::{Attempt, Verdict};
use claij_validation::{Fix, Violation};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::definition::{Action, Definition};

/// The transitions of a run, oldest first.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Trail {
    /// The entries.
    pub entries: Vec<Entry>,
}

/// One transition taken: the *output* transition of the state that produced `event`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Entry {
    /// The state that produced the event.
    pub from: String,
    /// The state the event goes to.
    pub to: String,
    /// The event, valid against the transition's schema.
    pub event: Value,
    /// The attempts of the model call that produced it ([`Entry::calls`]: and of a remedy's
    /// re-ask); empty for other actions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<AttemptRecord>,
    /// The model of an `llm` state that produced the event, as `provider:model` (absent for other
    /// actions, and in journals written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// For the transition out of a `service` (or custom) state: how many earlier calls since the
    /// run's last input (its start or a person's) gave this state the same request and got the
    /// same result (0, left out: none). A run that repeats itself loops; see
    /// `Runner::with_max_repeated_calls`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeats: usize,
    /// When the transition was taken.
    #[serde(with = "claij_schema::rfc3339")]
    pub at: SystemTime,
}

/// What one attempt of a model call did, as the trail keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AttemptRecord {
    /// 1 for the first attempt of its model call.
    pub number: usize,
    /// How the reply fared.
    pub verdict: Verdict,
    /// What was wrong with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<Violation>,
    /// What repair and coercion changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixes: Vec<Fix>,
    /// Tokens and cost.
    #[serde(default)]
    pub usage: Usage,
    /// Time in the backend call, in milliseconds.
    pub latency_ms: u64,
}

impl From<&Attempt> for AttemptRecord {
    fn from(a: &Attempt) -> Self {
        Self {
            number: a.number,
            verdict: a.verdict.clone(),
            violations: a.violations.clone(),
            fixes: a.fixes.clone(),
            usage: a.usage,
            latency_ms: u64::try_from(a.latency.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl Entry {
    /// An entry taken now.
    pub fn new(from: impl Into<String>, to: impl Into<String>, event: Value) -> Self {
        Self {
            from: from.into(),
            to: to.into(),
            event,
            attempts: Vec::new(),
            model: None,
            repeats: 0,
            at: SystemTime::now(),
        }
    }

    /// The same entry with the attempts that produced it.
    #[must_use]
    pub fn with_attempts(mut self, attempts: Vec<AttemptRecord>) -> Self {
        self.attempts = attempts;
        self
    }

    /// Its model calls, each with its attempts (an attempt numbered 1 starts a call).
    pub fn calls(&self) -> impl Iterator<Item = &[AttemptRecord]> {
        self.attempts.chunk_by(|_, next| next.number != 1)
    }

    /// The same entry with the model that produced it (`provider:model`).
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }
}

impl Trail {
    /// The last entry.
    pub fn last(&self) -> Option<&Entry> {
        self.entries.last()
    }

    /// Tokens and cost of every model call of the run.
    pub fn usage(&self) -> Usage {
        self.entries
            .iter()
            .flat_map(|e| &e.attempts)
            .fold(Usage::default(), |total, a| total + a.usage)
    }

    /// Attempts over every model call of the run, retries included.
    pub fn attempts(&self) -> usize {
        self.entries.iter().map(|e| e.attempts.len()).sum()
    }

    /// Model calls made: each `llm` state's call (and a remedy's re-ask after a failed one), each
    /// with its own attempts, numbered from 1.
    pub fn calls(&self) -> usize {
        self.entries.iter().map(|e| e.calls().count()).sum()
    }

    /// Model calls whose first attempt was valid.
    pub fn first_try(&self) -> usize {
        self.entries
            .iter()
            .flat_map(Entry::calls)
            .filter(|call| call.first().is_some_and(|a| a.verdict == Verdict::Valid))
            .count()
    }

    /// The trail as a conversation for a model: each event as a message whose role says what produced
    /// it (an `llm` state: `assistant`; a person, a service or the caller: `user`).
    pub fn to_messages(&self, definition: &Definition) -> Vec<Message> {
        trail_to_messages(definition, &self.entries)
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// [`Trail::to_messages`] over some entries.
pub fn trail_to_messages(definition: &Definition, entries: &[Entry]) -> Vec<Message> {
    entries
        .iter()
        .map(|entry| {
            let text = entry.event.to_string();
            let by_model = definition
                .state(&entry.from)
                .is_some_and(|s| s.action == Action::Llm);
            if by_model {
                Message::assistant(text)
            } else {
                Message::user(text)
            }
        })
        .collect()
}
