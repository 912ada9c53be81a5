//! Validate LLM replies against a JSON Schema.
//!
//! (crate docs are completed once every module has landed)

pub mod coerce;
mod error;
pub mod extract;
mod fix;
pub mod repair;
pub mod retry;
mod validator;
mod violation;

pub use error::Error;
pub use fix::{Fix, FixKind};
pub use validator::Validator;
pub use violation::Violation;
