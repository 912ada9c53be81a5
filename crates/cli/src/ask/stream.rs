//! `--stream`: the value shown while the model writes it. The pipeline streams the reply and hands
//! over the value recovered so far (repaired as if the reply stopped there) whenever it changes;
//! only the final value is validated, and it is printed as without `--stream`. What is shown is
//! the library's ([`claij::partials`]); this module writes it on stdout.
//!
//! - `claij ask` on a terminal ([`Display::Line`]): one line on stdout, redrawn in place, showing
//!   the end of the value so far as compact JSON; cleared before the final value is printed.
//! - `claij ask --stream` off a terminal ([`Display::Lines`]): JSON lines on stdout, nothing else:
//!   `{"partial": VALUE}` for each partial value, then `{"value": VALUE}` for the final one
//!   (written by the report, [`super::report::Form::Final`]), so a reader tells the last line
//!   from the others by its key, whatever the schema's own keys.
//! - `claij chat` ([`Display::Answer`]): the `answer` text written as it grows; when a later value's
//!   answer does not continue what was written (a retry), it starts again on a new line.

use std::io::Write;
use std::sync::{Mutex, PoisonError};

pub(super) use claij::partials::Display;
use claij::partials::Shown;
use serde_json::Value;

/// Shows the partial values of one turn after another on `out`.
pub(super) struct Partials {
    state: Mutex<(claij::partials::Partials, Box<dyn Write + Send>)>,
}

impl Partials {
    /// Partials shown as `display` says on `out`.
    pub(super) fn new(display: Display, out: Box<dyn Write + Send>) -> Self {
        let partials = claij::partials::Partials::new(display);
        Self {
            state: Mutex::new((partials, out)),
        }
    }

    /// How the values are shown.
    pub(super) fn display(&self) -> Display {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.0.display()
    }

    /// Shows `value`, the value so far. Best effort: a failed write never fails the turn.
    pub(super) fn show(&self, value: &Value) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (partials, out) = &mut *state;
        if let Some(shown) = partials.show(value) {
            write(out, &shown);
        }
    }

    /// Ends the turn's display: the line cleared ([`Display::Line`]); the answer text written, if
    /// any ([`Display::Answer`]), returned, so the caller need not write it again.
    pub(super) fn finish(&self) -> String {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (partials, out) = &mut *state;
        let (shown, text) = partials.finish();
        if let Some(shown) = shown {
            write(out, &shown);
        }
        text
    }
}

/// Writes `shown` on `out`: a line redrawn as `\r`, the line cleared, then it.
fn write(out: &mut Box<dyn Write + Send>, shown: &Shown) {
    let _ = match shown {
        Shown::Redraw(line) => write!(out, "\r\x1b[2K{line}"),
        Shown::Append(text) => write!(out, "{text}"),
    };
    let _ = out.flush();
}

#[cfg(test)]
mod tests;
