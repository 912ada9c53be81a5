//! The built-in interceptors, each documented with its schema delta and prompt text.

pub mod citations;
pub mod eval;
pub mod fsm_routing;
pub mod memory;
pub mod metrics;
pub mod proposals;
pub mod recall;
pub mod states;
pub mod tools;
