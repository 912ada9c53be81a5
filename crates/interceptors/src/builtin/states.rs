//! The `states` interceptor: in a conversation without a state machine, `state` says how the turn
//! ended, one of a small declared set, so a constrained decoder cannot fill it with noise.
//!
//! The base schema's `state` is a free string, meaningful when an FSM routes on it
//! ([`super::fsm_routing`]). Without one, a model (a small one most of all) writes anything there:
//! `France`, `IT,`, `string`. [`States`] declares what `state` may be and what each value means.
//! [`States::conversation`] is the set `claij ask` and `claij chat` use; [`States::with_state`] adds one
//! (an interceptor's own outcome, say `waiting_for_tools`).
//!
//! **Schema delta** (extension [`EXTENSION_ID`]), for the conversation set:
//!
//! ```
//! # use claij_interceptors::builtin::states::States;
//! # use serde_json::json;
//! assert_eq!(States::conversation().delta(), json!({
//!     "properties": {"state": {
//!         "enum": ["answered", "needs_clarification", "cannot_answer"],
//!         "description": "answered: the answer replies to the message; needs_clarification: the \
//!             message is unclear and the answer asks what the user means; cannot_answer: you \
//!             cannot answer and the answer says why"
//!     }},
//!     "required": ["state"]
//! }));
//! ```
//!
//! The base schema defines `state` as a string, so composition keeps both as `{"allOf": [base's,
//! this]}`: an `enum` of strings on top of `type: string` is compatible. Not for use next to
//! [`super::fsm_routing::FsmRouting`]: its `enum` and this one name different states, and composition
//! refuses two contradictory deltas ([`crate::Error::Schema`] naming both extensions).
//!
//! **Prompt text**: none; the schema's description says what each state means. **After the
//! response**: nothing; the state is in the value.
//!
//! ```
//! use std::sync::Arc;
//! use claij_test_support::Scripted;
//! use claij_interceptors::builtin::states::States;
//! use claij_interceptors::{Chain, Config, Context, Pipeline};
//!
//! let backend = Arc::new(Scripted::replies([
//!     r#"{"answer": "Paris.", "state": "France"}"#, // not a declared state: retried
//!     r#"{"answer": "Paris.", "state": "answered"}"#,
//! ]));
//! let chain = Chain::new().with(States::conversation());
//! let pipeline = Pipeline::new(backend, Config::new("test-model"), chain);
//! let answer = futures_executor::block_on(pipeline.ask(&mut Context::default(), "Capital of France?"))?;
//! assert_eq!(answer.retries(), 1);
//! assert_eq!(answer.value["state"], "answered");
//! # Ok::<(), claij_interceptors::Error>(())
//! ```

use serde_json::{Value, json};

use crate::context::Context;
use crate::interceptor::{BoxError, Interceptor};
use crate::schema::Schema;

/// The interceptor's name.
pub const NAME: &str = "states";

/// The extension id of its schema delta.
pub const EXTENSION_ID: &str = "states-v1";

/// The states of [`States::conversation`], with what each means.
pub const CONVERSATION: [(&str, &str); 3] = [
    ("answered", "the answer replies to the message"),
    (
        "needs_clarification",
        "the message is unclear and the answer asks what the user means",
    ),
    ("cannot_answer", "you cannot answer and the answer says why"),
];

/// The interceptor: `state` is one of the declared states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct States {
    /// Name and meaning, in the order the model sees them (the first is the example's).
    states: Vec<(String, String)>,
}

impl States {
    /// The states of a conversation without a state machine ([`CONVERSATION`]).
    pub fn conversation() -> Self {
        Self {
            states: CONVERSATION
                .iter()
                .map(|(name, meaning)| ((*name).to_owned(), (*meaning).to_owned()))
                .collect(),
        }
    }

    /// The same set with one more state (a state already declared gets the new meaning, in place).
    #[must_use]
    pub fn with_state(mut self, name: impl Into<String>, meaning: impl Into<String>) -> Self {
        let (name, meaning) = (name.into(), meaning.into());
        match self.states.iter_mut().find(|(n, _)| *n == name) {
            Some(existing) => existing.1 = meaning,
            None => self.states.push((name, meaning)),
        }
        self
    }

    /// The declared states' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.states.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// The schema delta: `state` one of the names, described by their meanings.
    pub fn delta(&self) -> Value {
        let description: Vec<String> = self
            .states
            .iter()
            .map(|(name, meaning)| format!("{name}: {meaning}"))
            .collect();
        json!({
            "properties": {"state": {
                "enum": self.names(),
                "description": description.join("; "),
            }},
            "required": ["state"],
        })
    }
}

impl Interceptor for States {
    fn name(&self) -> &str {
        NAME
    }

    fn pre_schema(&self, schema: &mut Schema, _ctx: &Context) -> Result<(), BoxError> {
        if !self.states.is_empty() {
            schema.extend(EXTENSION_ID, self.delta());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
