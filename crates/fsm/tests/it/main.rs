//! Integration tests of claij-fsm through its public API, offline with `Scripted` backends.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod builtin;
mod definitions;
mod envelope;
mod errors;
mod journal;
mod local_model;
mod loops;
mod models;
mod remedies;
mod render;
mod run;
mod spans;
mod steps;
