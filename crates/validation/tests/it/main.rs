//! Integration tests of claij-validation, through its public API only.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

#[path = "../../../../fixtures/fixture.rs"]
mod fixtures;

mod coercion;
mod corpus;
mod repair;
mod schema_aligned;
mod validator;

use serde_json::Value;

/// A file of the repository's bench fixtures (`fixtures/bench`), parsed.
pub fn fixture(name: &str) -> Value {
    fixtures::json(&format!("fixtures/bench/{name}"))
}

/// As [`fixture`], or the message naming the file (for a `LazyLock`: see [`fixtures::loaded`]).
pub(crate) fn try_fixture(name: &str) -> Result<Value, String> {
    fixtures::try_json(&format!("fixtures/bench/{name}"))
}
