//! Validate LLM replies against a JSON Schema: find the JSON in the prose, repair it, coerce it towards
//! the schema, validate it, and when it still fails, tell the model exactly what to fix.
//!
//! ```
//! use claij_validation::{Outcome, Validator, process, retry::{Failure, RetryPrompt}};
//!
//! let validator = Validator::new(&claij_schema::base())?;
//!
//! // A typical reply: prose, a fence, single quotes, a trailing comma.
//! let reply = "Here you go:\n```json\n{'answer': 'Paris', 'state': 'done',}\n```";
//! let Outcome::Valid { value, fixes } = process(reply, &validator) else { panic!() };
//! assert_eq!(value["answer"], "Paris");
//! assert!(!fixes.is_empty()); // every change is recorded
//!
//! // An invalid one: the violations say where, and the retry prompt says what to fix.
//! let outcome = process(r#"{"answer": 42}"#, &validator);
//! let violations = outcome.violations();
//! assert_eq!(violations[0].to_string(), "(root): missing required property `state`");
//! let prompt = RetryPrompt::default().render("Capital of France?", r#"{"answer": 42}"#, Failure::Invalid(violations));
//! assert!(prompt.contains("Focus specifically on fixing"));
//! # Ok::<(), claij_validation::Error>(())
//! ```
//!
//! The stages, each usable alone:
//! - [`extract`]: the JSON in a reply (fences, `<json>` tags, prose, `<think>` blocks, several values,
//!   JSON escaped in a string);
//! - [`repair`]: malformed JSON made valid (quotes, commas, comments, literals, truncation, ...), with
//!   valid JSON passed through untouched;
//! - [`coerce`]: the value nudged towards the schema (`"5"` to 5, a value to a one-element array, enum
//!   case), never inventing a value;
//! - [`Validator`]: boon underneath, every [`Violation`] located by JSON pointer; discriminated unions
//!   dispatched on their tag so a violation names the branch the model chose;
//! - [`process`]: all of the above, ending in an [`Outcome`];
//! - [`retry`]: the prompt for the next attempt.
//!
//! Every change made on the way is a [`Fix`] returned with the value. Nothing here panics on any input,
//! reads the environment, or does IO; the crate depends on no async runtime or HTTP stack, so it can be
//! used on its own. It has no features.
//!
//! Errors: [`Error::Schema`] when the schema itself is invalid; [`repair::RepairError`] when nothing can
//! be recovered. An invalid reply is not an error but an [`Outcome`].

pub mod coerce;
mod error;
pub mod extract;
mod fix;
mod outcome;
pub mod repair;
pub mod retry;
mod validator;
mod violation;

pub use error::{Error, ErrorKind};
pub use fix::{Fix, FixKind};
pub use outcome::{Outcome, StageTimes, process, process_timed};
pub use validator::{FastPath, Validator};
pub use violation::Violation;
