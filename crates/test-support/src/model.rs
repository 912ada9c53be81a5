//! How a test finds the embedded model, shared by every crate's model tests: the path comes from
//! the caller (claij-local's `model_dir` and `DEFAULT_MODEL_FILE`), so this crate needs no candle.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::is_ci;

/// The embedded model's file at `model` (for the cache `cargo xtask model` fills, pass
/// `claij_local::model_dir(var).join(claij_local::DEFAULT_MODEL_FILE)`), for a test that runs it:
/// `None` after saying on stderr that `test` is skipped when the file is missing. `var` looks up the
/// environment (pass `std::env::var_os`), for [`is_ci`].
///
/// ```
/// use claij_test_support::{local_model_or_skip, lookup};
///
/// let missing = std::env::temp_dir().join("claij-test-support-doc").join("model.gguf");
/// assert_eq!(local_model_or_skip("doc", &missing, lookup(&[("CI", "false")])), None);
/// ```
///
/// # Panics
///
/// When the file is missing under CI ([`is_ci`]): there a skipped model test would hide a failure.
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
pub fn local_model_or_skip(
    test: &str,
    model: impl Into<PathBuf>,
    var: impl Fn(&str) -> Option<OsString>,
) -> Option<PathBuf> {
    let path = model.into();
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
