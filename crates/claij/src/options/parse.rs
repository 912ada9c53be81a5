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

/// The most transitions an FSM run may be allowed.
pub const MAX_TRANSITIONS: usize = 1_000_000;

/// The largest budget of one reply's tool (and MCP) results, in characters (about a quarter of a
/// million tokens); the default is [`crate::tools::DEFAULT_RESULT_BUDGET`].
pub const MAX_RESULT_BUDGET: usize = 1_000_000;

/// The most messages of a conversation's history that may be kept.
pub const MAX_HISTORY_MESSAGES: usize = 100_000;
/// The most estimated tokens a conversation's history may keep (the widest context windows).
pub const MAX_HISTORY_TOKENS: usize = 10_000_000;

/// The most steps an agent run may be allowed.
pub const MAX_STEPS: usize = 1000;
/// The largest budget of an agent run, in US dollars.
pub const MAX_BUDGET_USD: f64 = 1_000_000.0;

/// The transitions an FSM run may take: 1 to [`MAX_TRANSITIONS`].
///
/// # Errors
///
/// As [`whole`].
pub fn transitions(text: &str) -> Result<usize, ParseError> {
    whole(text, 1, MAX_TRANSITIONS)
}

/// The repeats of one service call an FSM run allows: 0 to [`MAX_TRANSITIONS`] (a run cannot
/// repeat more), or `off` (`usize::MAX`: the check is off).
///
/// # Errors
///
/// Not a whole number in the range, nor `off`.
pub fn repeated_calls(text: &str) -> Result<usize, ParseError> {
    if text.trim() == "off" {
        return Ok(usize::MAX);
    }
    whole(text, 0, MAX_TRANSITIONS).map_err(|_| {
        ParseError::new(format!(
            "a whole number from 0 to {MAX_TRANSITIONS}, or off"
        ))
    })
}

/// The size limit on one message from an MCP server, in bytes (the range of a server's
/// `maxMessageBytes`; feature `mcp`).
///
/// # Errors
///
/// As [`whole`].
#[cfg(feature = "mcp")]
pub fn message_bytes(text: &str) -> Result<usize, ParseError> {
    let range = claij_mcp::MESSAGE_BYTES;
    whole(text, *range.start(), *range.end())
}

/// The characters of one reply's tool and MCP results shown to the model: 0 to
/// [`MAX_RESULT_BUDGET`].
///
/// # Errors
///
/// As [`whole`].
pub fn result_budget(text: &str) -> Result<usize, ParseError> {
    whole(text, 0, MAX_RESULT_BUDGET)
}

/// The most messages of history sent before each turn: 0 (none) to [`MAX_HISTORY_MESSAGES`].
///
/// # Errors
///
/// As [`whole`].
pub fn history_messages(text: &str) -> Result<usize, ParseError> {
    whole(text, 0, MAX_HISTORY_MESSAGES)
}

/// The most estimated tokens of that history: 0 (none) to [`MAX_HISTORY_TOKENS`].
///
/// # Errors
///
/// As [`whole`].
pub fn history_tokens(text: &str) -> Result<usize, ParseError> {
    whole(text, 0, MAX_HISTORY_TOKENS)
}

/// The steps of an agent run: 1 to [`MAX_STEPS`].
///
/// # Errors
///
/// As [`whole`].
pub fn steps(text: &str) -> Result<usize, ParseError> {
    whole(text, 1, MAX_STEPS)
}

/// An agent run's budget in US dollars: a finite number above 0 and at most [`MAX_BUDGET_USD`].
///
/// # Errors
///
/// Not a number, or out of the range.
pub fn dollars(text: &str) -> Result<f64, ParseError> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|usd| *usd > 0.0 && *usd <= MAX_BUDGET_USD)
        .ok_or_else(|| ParseError::new(format!("US dollars, above 0 and at most {MAX_BUDGET_USD}")))
}

#[cfg(test)]
mod tests;
