//! End-to-end tests of the `claij-suite` binary (the suites `cargo xtask integration` runs) against
//! a mock OpenRouter: exit codes, the JSON records on stdout, stderr.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use claij_test_support::harness::{Files, Run, assert_one_line_error};

mod conformance;
mod conformance_next;
mod local_model;
mod openrouter;
mod suite;

fn claij_suite(args: &[&str], stdin: &str) -> Run {
    claij_suite_env(args, stdin, &[])
}

/// Runs `claij-suite` with environment changes: `(name, Some(value))` sets, `(name, None)` removes
/// ([`claij_test_support::harness::run`]: no developer's configuration or data unless named).
fn claij_suite_env(args: &[&str], stdin: &str, env: &[(&str, Option<&str>)]) -> Run {
    claij_test_support::harness::run(env!("CARGO_BIN_EXE_claij-suite"), args, stdin, env)
}
