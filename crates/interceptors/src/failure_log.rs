//! The failure log: every attempt of a call that needed a retry, appended to a JSONL file, so real
//! failures become regression cases.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use claij_backends::redact::redact_value;
use serde_json::json;

use crate::pipeline::Attempt;

/// Replaces anything that looks like a secret, in every string of a value, by the one marker (`***`);
/// the rules are [`claij_backends::redact`]'s, the same as for cassettes and errors.
pub use claij_backends::redact::redact_value as redact;

/// Appends failed calls to a JSONL file, one line per attempt, with anything that looks like a key
/// redacted ([`redact_value`]: every form [`claij_backends::redact`] knows).
#[derive(Debug)]
pub struct FailureLog {
    path: PathBuf,
    lock: Mutex<()>,
}

impl FailureLog {
    /// A log appending to `path` (created when missing).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    /// Appends one line per attempt.
    ///
    /// # Errors
    ///
    /// The IO error opening or writing the file.
    pub fn append(&self, provider: &str, model: &str, attempts: &[Attempt]) -> std::io::Result<()> {
        let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let at = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
        for attempt in attempts {
            let mut line = json!({
                "at": at,
                "provider": provider,
                "model": model,
                "attempt": attempt,
            });
            redact_value(&mut line);
            writeln!(file, "{line}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
