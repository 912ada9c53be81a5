//! Integration tests of claij-validation, through its public API only.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod coercion;
mod corpus;
mod repair;
mod validator;

use serde_json::Value;

/// A file of the shared bench fixtures (`../shared/bench`), parsed.
pub fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/bench")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}
