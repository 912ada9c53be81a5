//! Repair of malformed JSON: valid JSON passes through untouched, anything else goes through a tolerant
//! parser that records every change as a [`Fix`].
//!
//! The tolerant parser follows the repair rules of jsonrepair (trailing and missing commas, missing
//! colons and quotes, single and smart quotes, comments, Python and JavaScript literals, truncation,
//! JSONP, ellipses, newline-delimited values, ...) plus a few heuristics for the ways LLMs break JSON.
//! `REPAIR_POLICY.md` lists where claij deliberately decides differently from jsonrepair and json_repair.
//!
//! ```
//! use claij_validation::{FixKind, repair::repair};
//!
//! let repaired = repair("{name: 'Ada', tags: ['math',],}")?;
//! assert_eq!(repaired.value, serde_json::json!({"name": "Ada", "tags": ["math"]}));
//! assert!(repaired.fixes.iter().any(|fix| fix.kind == FixKind::TrailingComma));
//! # Ok::<(), claij_validation::repair::RepairError>(())
//! ```

mod chars;
mod containers;
mod parser;
mod quotes;
mod scalars;
mod strings;
#[cfg(test)]
mod tests;
mod words;

use serde::Serialize;
use serde_json::Value;

use crate::Fix;

/// A value recovered from malformed text, with every change that was needed to get it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Repaired {
    /// The recovered value.
    pub value: Value,
    /// The changes made, in the order they were made; empty when the text was valid JSON.
    pub fixes: Vec<Fix>,
}

/// Why no value could be recovered.
///
/// Positions are byte offsets into the text that was repaired, with a 1-based line and column
/// (counted in characters) for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RepairError {
    /// The text holds nothing but whitespace and comments.
    #[error("empty input: no json value found")]
    Empty,
    /// The text cannot be read as JSON even with repairs.
    #[error("{message} at line {line} column {column} (byte {offset})")]
    Unrecoverable {
        /// Byte offset of the problem.
        offset: usize,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column (in characters) of the problem.
        column: usize,
        /// What is wrong, lowercase.
        message: String,
    },
    /// Arrays, objects or calls are nested deeper than the parser allows.
    #[error("nesting deeper than {limit} levels at line {line} column {column} (byte {offset})")]
    TooDeep {
        /// Byte offset where the limit was reached.
        offset: usize,
        /// 1-based line where the limit was reached.
        line: usize,
        /// 1-based column (in characters) where the limit was reached.
        column: usize,
        /// The nesting limit.
        limit: usize,
    },
}

impl RepairError {
    /// Byte offset of the problem, if it has a position.
    pub fn offset(&self) -> Option<usize> {
        match self {
            Self::Empty => None,
            Self::Unrecoverable { offset, .. } | Self::TooDeep { offset, .. } => Some(*offset),
        }
    }

    /// An `Unrecoverable` error at `offset` in `text`.
    pub(crate) fn unrecoverable(text: &str, offset: usize, message: impl Into<String>) -> Self {
        let (line, column) = line_column(text, offset);
        Self::Unrecoverable {
            offset,
            line,
            column,
            message: message.into(),
        }
    }

    /// A `TooDeep` error at `offset` in `text`.
    pub(crate) fn too_deep(text: &str, offset: usize, limit: usize) -> Self {
        let (line, column) = line_column(text, offset);
        Self::TooDeep {
            offset,
            line,
            column,
            limit,
        }
    }

    /// The same error with its position moved by `base` bytes, recomputed against `whole` (the text
    /// that the repaired text was cut from).
    pub(crate) fn shifted(self, whole: &str, base: usize) -> Self {
        match self {
            Self::Empty => Self::Empty,
            Self::Unrecoverable {
                offset, message, ..
            } => Self::unrecoverable(whole, base + offset, message),
            Self::TooDeep { offset, limit, .. } => Self::too_deep(whole, base + offset, limit),
        }
    }
}

/// Repair `text` into a JSON value.
///
/// Valid JSON is parsed by `serde_json` and returned with no fixes. Anything else goes through the
/// tolerant parser. Never panics, whatever the input; nesting is limited to
/// [`MAX_DEPTH`] levels.
///
/// # Errors
///
/// [`RepairError::Empty`] when there is no value at all, [`RepairError::Unrecoverable`] when the text
/// cannot be read as JSON even with repairs (for example text after a complete value), and
/// [`RepairError::TooDeep`] past the nesting limit.
pub fn repair(text: &str) -> Result<Repaired, RepairError> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return Ok(Repaired {
            value,
            fixes: Vec::new(),
        });
    }
    parser::Parser::new(text).parse_document()
}

/// How deeply arrays, objects and function calls may nest in repaired text.
pub const MAX_DEPTH: usize = 128;

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = text.get(..end).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let column = before
        .get(line_start..)
        .map_or(0, |rest| rest.chars().count())
        + 1;
    (line, column)
}

/// Longest `before`/`after` excerpt kept in a fix, in characters.
const EXCERPT: usize = 40;

/// At most [`EXCERPT`] characters of `s`, with `…` when shortened.
pub(crate) fn excerpt(s: &str) -> String {
    match s.char_indices().nth(EXCERPT) {
        None => s.to_owned(),
        Some((cut, _)) => format!("{}…", s.get(..cut).unwrap_or_default()),
    }
}
