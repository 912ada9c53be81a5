//! Integration tests of claij-restate against a real Restate server on loopback (`cargo xtask
//! restate` installs it; without it the tests skip, except under `CI=true`), with workers run as
//! child processes: this test binary again, in [`worker::worker_process`]; [`identity`]: a server
//! that signs its requests and a worker that refuses any other.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

#[path = "../support/mod.rs"]
mod support;

mod identity;
mod runs;
mod worker;
