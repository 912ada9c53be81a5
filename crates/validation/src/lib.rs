//! Validate LLM replies against a JSON Schema.
//!
//! (crate docs are completed once every module has landed)

pub mod coerce;
pub mod extract;
mod fix;
pub mod repair;

pub use fix::{Fix, FixKind};
