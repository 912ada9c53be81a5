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
//! - [`Runner`]: runs a machine. `llm` states ask a model through the claij pipeline (interceptors,
//!   validation, retries; a bail-out transition when the retries run out), `service` and custom states
//!   call a registered [`Service`], `fsm` states run a sub-FSM ([`TrailMode`]), `human` states wait
//!   for [`Runner::provide`]. A run ([`Run`]) ends [`Outcome::Finished`], `Waiting` or `Interrupted`.
//! - Limits, each an error naming it ([`Error::limit`]): transitions per call of [`Runner::run`]
//!   ([`Runner::with_max_transitions`], [`Error::TooManyTransitions`]), and loops: a service call
//!   that repeats an earlier one with the same request and the same result is recorded
//!   ([`Entry::repeats`]) and told to the model, and a repeat beyond
//!   [`Runner::with_max_repeated_calls`] ends the run ([`Error::RepeatedCall`]).
//! - Step by step, for a durable engine that journals each action's result: [`Runner::next_action`]
//!   ([`NextAction`]), [`Runner::act_step`] (a serializable [`StepRecord`]: the event, attempts,
//!   bail-out, remedy and interceptor context) and [`Runner::apply_step`], which rebuilds the same
//!   run from the record without running the action again; [`Runner::run`] is made of the same
//!   pieces.
//! - [`Interrupt`]: stop a run from outside, with cleanup hooks.
//! - [`journal`]: the trail appended to JSONL as it happens ([`Runner::start_journaled`]);
//!   [`Runner::resume`] goes on after the last recorded transition.
//! - [`render`]: DOT, Mermaid and SVG diagrams of a definition.
//! - [`builtin`]: the design's sub-FSMs: the schema-extension vote and meta-debugging.
//! - Spans (`tracing`): a run is an `fsm.run` span (`claij.fsm.id`, `claij.fsm.run_id`, its
//!   `claij.fsm.outcome`), made when the run starts or is resumed and kept by the [`Run`], so the
//!   calls of [`Runner::run`] and [`Runner::provide`] of one run are one trace; each visit to a
//!   state is an `fsm.state` span under it (`claij.fsm.state`, `claij.fsm.transition` as
//!   `from -> to`), holding that state's model calls, service calls and sub-FSM runs. A failure or
//!   an interrupt sets `otel.status_code = "ERROR"` and `otel.status_description` on both.
//!
//! A run end to end, with a scripted model:
//!
//! ```
//! use std::sync::Arc;
//! use claij_test_support::Scripted;
//! use claij_fsm::{Fsm, Interrupt, Outcome, Runner};
//! use claij_interceptors::Config;
//! use serde_json::json;
//!
//! let fsm = Fsm::from_json(r#"{
//!   "id": "greeter",
//!   "states": [{"id": "greet", "action": "llm"}, {"id": "end", "action": "end"}],
//!   "transitions": [
//!     {"id": ["start", "greet"], "schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
//!     {"id": ["greet", "end"], "schema": {"type": "object", "properties": {"greeting": {"type": "string"}}, "required": ["greeting"]}}
//!   ]
//! }"#)?;
//! let model = Scripted::replies([r#"{"greeting": "Hello, Ada"}"#]);
//! let runner = Runner::new(fsm).with_llm(Arc::new(model), Config::new("any-model"));
//! let mut run = runner.start(json!({"name": "Ada"}))?;
//! let rt = tokio::runtime::Builder::new_current_thread().build()?;
//! let outcome = rt.block_on(runner.run(&mut run, &Interrupt::new(), None))?;
//! assert!(matches!(outcome, Outcome::Finished { ref state, .. } if state == "end"));
//! assert_eq!(run.trail.entries.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
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
pub use error::{Error, ErrorKind};
pub use fsm::Fsm;
pub use interrupt::Interrupt;
pub use journal::{Durability, ExistingJournal, Journal};
pub use runner::{
    ContextState, DEFAULT_MAX_REPEATED_CALLS, DEFAULT_MAX_TRANSITIONS, NextAction, Outcome,
    RemedyApprover, Run, Runner, Service, ServiceCall, Status, StepRecord, TrailMode, service_fn,
};
pub use schema::IdStyle;
pub use trail::{AttemptRecord, Entry, Trail, trail_to_messages};
