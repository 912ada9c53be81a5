//! Response schemas for LLMs.
//!
//! (crate docs are completed once every module has landed)

pub mod dialect;
pub mod render;
