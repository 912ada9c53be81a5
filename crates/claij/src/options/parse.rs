//! The options' values from text (a command line's flags, a form's fields), each checked against
//! its range: a wild value is a [`ParseError`] saying what was expected, never a panic or a runaway
//! loop later. Each parser fits clap's `value_parser`.
//!
//! ```
//! use claij::options::parse;
//! assert_eq!(parse::retries("3"), Ok(3));
//! assert_eq!(
//!     parse::retries("101").unwrap_err().to_string(),
//!     "expected a whole number from 0 to 100"
//! );
//! ```

use std::fmt::Display;
use std::num::NonZeroUsize;
use std::str::FromStr;

use super::{MAX_RETRIES, MAX_TEMPERATURE, MAX_THREADS, MAX_TOKENS, REPLY_BYTES};

/// Text that is not a value in its range: what was expected (`expected a whole number from 0 to
/// 100`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected {expected}")]
pub struct ParseError {
    /// What a value looks like, after `expected `.
    pub expected: String,
}

impl ParseError {
    fn new(expected: impl Into<String>) -> Self {
        Self {
            expected: expected.into(),
        }
    }
}

/// A whole number from `min` to `max` (surrounding whitespace ignored).
///
/// # Errors
///
/// Not a whole number, or out of the range.
pub fn whole<T>(text: &str, min: T, max: T) -> Result<T, ParseError>
where
    T: FromStr + PartialOrd + Display + Copy,
{
    text.trim()
        .parse::<T>()
        .ok()
        .filter(|n| *n >= min && *n <= max)
        .ok_or_else(|| ParseError::new(format!("a whole number from {min} to {max}")))
}

/// Retries after the first attempt: 0 to [`MAX_RETRIES`].
///
/// # Errors
///
/// As [`whole`].
pub fn retries(text: &str) -> Result<usize, ParseError> {
    whole(text, 0, MAX_RETRIES)
}

/// A token limit per attempt: 1 to [`MAX_TOKENS`].
///
/// # Errors
///
/// As [`whole`].
pub fn tokens(text: &str) -> Result<u32, ParseError> {
    whole(text, 1, MAX_TOKENS)
}

/// The local model's threads: 1 to [`MAX_THREADS`].
///
/// # Errors
///
/// As [`whole`].
pub fn threads(text: &str) -> Result<NonZeroUsize, ParseError> {
    whole(text, 1, MAX_THREADS)
        .and_then(|n| NonZeroUsize::new(n).ok_or_else(|| ParseError::new("1 or more")))
}

/// A sampling temperature: a finite number from 0 to [`MAX_TEMPERATURE`].
///
/// # Errors
///
/// Not a number, or out of the range.
pub fn temperature(text: &str) -> Result<f32, ParseError> {
    text.trim()
        .parse::<f32>()
        .ok()
        .filter(|t| (0.0..=MAX_TEMPERATURE).contains(t))
        .ok_or_else(|| ParseError::new(format!("a number from 0 to {MAX_TEMPERATURE}")))
}

/// The longest reply searched for JSON, in bytes: [`REPLY_BYTES`].
///
/// # Errors
///
/// As [`whole`].
pub fn reply_bytes(text: &str) -> Result<usize, ParseError> {
    whole(text, *REPLY_BYTES.start(), *REPLY_BYTES.end())
}

/// A timeout in seconds: a finite number above 0 and at most a day (the bound of a server's
/// `timeout` in an MCP configuration, [`claij_mcp::MAX_TIMEOUT`]; feature `mcp`).
///
/// # Errors
///
/// Not a number, or out of the range.
#[cfg(feature = "mcp")]
pub fn seconds(text: &str) -> Result<std::time::Duration, ParseError> {
    text.trim()
        .parse::<f64>()
        .ok()
        .and_then(claij_mcp::timeout_from_secs)
        .ok_or_else(|| {
            let day = claij_mcp::MAX_TIMEOUT.as_secs();
            ParseError::new(format!("seconds, above 0 and at most {day} (a day)"))
        })
}

#[cfg(test)]
mod tests;
