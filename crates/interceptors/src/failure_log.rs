//! The failure log: every attempt of a call that needed a retry, appended to a JSONL file, so real
//! failures become regression cases.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::SystemTime;

use regex::Regex;
use serde_json::{Value, json};

use crate::pipeline::Attempt;

/// Appends failed calls to a JSONL file, one line per attempt, with anything that looks like a key
/// redacted.
#[derive(Debug)]
pub struct FailureLog {
    path: PathBuf,
    lock: Mutex<()>,
}

/// Strings that look like credentials: provider key formats and bearer tokens.
static SECRET: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(sk-[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{20,}|(?i:bearer)\s+[A-Za-z0-9._\-]{8,}|xai-[A-Za-z0-9]{16,})",
    )
    .ok()
});

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
            redact(&mut line);
            writeln!(file, "{line}")?;
        }
        Ok(())
    }
}

/// Replaces anything that looks like a key, in every string of `value`.
pub fn redact(value: &mut Value) {
    match value {
        Value::String(s) => {
            if let Some(re) = SECRET.as_ref()
                && re.is_match(s)
            {
                *s = re.replace_all(s, "[REDACTED]").into_owned();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        Value::Object(map) => map.values_mut().for_each(redact),
        _ => {}
    }
}
