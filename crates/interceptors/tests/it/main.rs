//! Integration tests of claij-interceptors through its public API, offline with the `Scripted` backend.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod agent;
mod backend_errors;
mod budget;
mod citations;
mod eval;
mod example;
mod fsm_routing;
mod history;
mod local_model;
mod memory;
mod metrics;
mod pipeline;
mod proposals;
mod spans;
mod stacks;
mod tools;
