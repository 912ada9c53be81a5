//! The real server processes the binary's tests start: `claij_test_support::server`, shared with
//! the library crates' server tests.

pub(crate) use claij_test_support::server::{POLL, ServerProcess, WAIT_LIMIT};
