//! Conversations as state machines, defined as data.
//!
//! A state's LLM output is a `oneOf` of the schemas of its outgoing transitions, each requiring its
//! `id` (`["from", "to"]`): the model chooses the edge, the schema checks the choice, and a violation
//! names the branch the model meant, or says which ids are valid. Every step lands in the [`Trail`],
//! which is also what the models see of the conversation so far.
//!
//! ```
//! use claij_fsm::{Definition, Fsm};
//! use serde_json::json;
//!
//! let definition: Definition = serde_json::from_value(json!({
//!     "id": "greeter",
//!     "states": [{"id": "greet", "action": "llm"}, {"id": "end", "action": "end"}],
//!     "transitions": [
//!         {"id": ["start", "greet"], "schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
//!         {"id": ["greet", "end"], "schema": {"type": "object", "properties": {"greeting": {"type": "string"}}, "required": ["greeting"]}}
//!     ]
//! }))?;
//! let fsm = Fsm::new(definition)?;
//! let out = fsm.route("greet", &json!({"id": ["greet", "end"], "greeting": "Hello, Ada"})).unwrap();
//! assert_eq!(out.id.to, "end");
//! let wrong = fsm.route("greet", &json!({"id": ["greet", "nowhere"], "greeting": "?"})).unwrap_err();
//! assert!(wrong[0].message.contains(r#"["greet","end"]"#));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What is here:
//! - [`Definition`] (serde types of a definition file), checked on load by [`check`] into one
//!   [`DefinitionError`] listing every problem with its JSON pointer; [`Fsm`] holds each state's
//!   compiled output schema and prompt.
//! - [`schema`]: event and state output schemas ([`IdStyle`]: `["from", "to"]` or `"from->to"`).
//! - [`prompts`]: what a model is told in a state.
//! - [`Trail`]: the transitions taken, with attempts, usage and time; [`trail_to_messages`].
//! - [`Interrupt`]: stop a run from outside, with cleanup hooks.
//!
//! Errors: [`Error`], saying which state, transition or journal line.

pub mod builtin;
mod check;
pub mod definition;
mod error;
mod fsm;
mod interrupt;
pub mod journal;
pub mod prompts;
pub mod render;
mod runner;
pub mod schema;
mod trail;

pub use check::{DefinitionError, Problem, check};
pub use definition::{Action, Definition, State, Transition, TransitionId};
pub use error::Error;
pub use fsm::Fsm;
pub use interrupt::Interrupt;
pub use journal::{Durability, Journal};
pub use runner::{
    DEFAULT_MAX_TRANSITIONS, Outcome, Run, Runner, Service, ServiceCall, Status, TrailMode,
    service_fn,
};
pub use schema::IdStyle;
pub use trail::{AttemptRecord, Entry, Trail, trail_to_messages};
