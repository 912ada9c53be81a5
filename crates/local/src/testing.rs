//! Test support (feature `testing`): how a test finds the embedded model, shared by every crate's
//! model tests.

use claij_backends::testing::is_ci;

use crate::{DEFAULT_MODEL_FILE, model_dir};

/// The embedded model's file in the cache `cargo xtask model` fills ([`model_dir`] with
/// [`DEFAULT_MODEL_FILE`]), for a test that runs it: `None` after saying on stderr that `test` is
/// skipped when the file is missing. `var` looks up the environment (pass `std::env::var_os`: the
/// library reads none itself).
///
/// # Panics
///
/// When the file is missing under CI ([`is_ci`]): there a skipped model test would hide a failure.
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
pub fn local_model_or_skip(
    test: &str,
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Option<std::path::PathBuf> {
    let path = model_dir(&var).join(DEFAULT_MODEL_FILE);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        !is_ci(&var),
        "{test}: CI is set and the model is missing at {}: run `cargo xtask model`",
        path.display()
    );
    eprintln!(
        "{test}: skipped: no model at {} (run `cargo xtask model`)",
        path.display()
    );
    None
}

#[cfg(test)]
mod tests;
