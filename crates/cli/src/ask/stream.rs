//! `--stream`: the value shown while the model writes it. The pipeline streams the reply and hands
//! over the value recovered so far (repaired as if the reply stopped there) whenever it changes;
//! only the final value is validated, and it is printed as without `--stream`.
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

use serde_json::Value;

/// How partial values are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Display {
    /// One line redrawn in place, this many characters wide.
    Line(usize),
    /// A line per partial value, `{"partial": VALUE}`.
    Lines,
    /// The `answer` text as it grows.
    Answer,
}

/// Shows the partial values of one turn after another on `out`.
pub(super) struct Partials {
    display: Display,
    state: Mutex<State>,
}

struct State {
    out: Box<dyn Write + Send>,
    /// What is on the screen of this turn: the drawn line, or the answer text written.
    shown: String,
}

impl Partials {
    /// Partials shown as `display` says on `out`.
    pub(super) fn new(display: Display, out: Box<dyn Write + Send>) -> Self {
        Self {
            display,
            state: Mutex::new(State {
                out,
                shown: String::new(),
            }),
        }
    }

    /// How the values are shown.
    pub(super) fn display(&self) -> Display {
        self.display
    }

    /// Shows `value`, the value so far. Best effort: a failed write never fails the turn.
    pub(super) fn show(&self, value: &Value) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let State { out, shown } = &mut *state;
        let _ = match self.display {
            Display::Line(width) => {
                let line = tail(&value.to_string(), width.saturating_sub(1));
                *shown = line;
                write!(out, "\r\x1b[2K{shown}")
            }
            Display::Lines => writeln!(out, "{}", serde_json::json!({"partial": value})),
            Display::Answer => {
                let Some(answer) = value.get("answer").and_then(Value::as_str) else {
                    return;
                };
                let written = match answer.strip_prefix(shown.as_str()) {
                    Some(more) => write!(out, "{more}"),
                    None => write!(out, "\n{answer}"),
                };
                answer.clone_into(shown);
                written
            }
        };
        let _ = out.flush();
    }

    /// Ends the turn's display: the line cleared ([`Display::Line`]); the answer text written, if
    /// any ([`Display::Answer`]), returned, so the caller need not write it again.
    pub(super) fn finish(&self) -> String {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let shown = std::mem::take(&mut state.shown);
        if let Display::Line(_) = self.display
            && !shown.is_empty()
        {
            let _ = write!(state.out, "\r\x1b[2K");
            let _ = state.out.flush();
            return String::new();
        }
        shown
    }
}

/// The last `room` characters of `text`, control characters as spaces, with `…` in front when cut.
fn tail(text: &str, room: usize) -> String {
    let clean: Vec<char> = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if clean.len() <= room {
        return clean.into_iter().collect();
    }
    let keep = room.saturating_sub(1);
    std::iter::once('…')
        .chain(clean[clean.len() - keep..].iter().copied())
        .collect()
}

#[cfg(test)]
mod tests;
