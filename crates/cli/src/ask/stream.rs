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
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Mutex};

    use serde_json::json;

    use super::{Display, Partials};

    /// A writer whose bytes the test reads.
    #[derive(Clone, Default)]
    struct Screen(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Screen {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Screen {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn shown(display: Display, values: &[serde_json::Value]) -> (String, String) {
        let screen = Screen::default();
        let partials = Partials::new(display, Box::new(screen.clone()));
        for value in values {
            partials.show(value);
        }
        let finished = partials.finish();
        (screen.text(), finished)
    }

    #[test]
    fn the_answer_grows_and_a_retry_starts_a_new_line() {
        let values = [
            json!({"answer": "Par"}),
            json!({"answer": "Paris", "state": "ans"}),
            json!({"state": "done"}),
            json!({"answer": "Lyon"}),
            json!({"answer": "Lyon é"}),
        ];
        assert_eq!(
            shown(Display::Answer, &values),
            ("Paris\nLyon é".to_owned(), "Lyon é".to_owned())
        );
    }

    #[test]
    fn lines_show_each_value() {
        let values = [json!({"a": "x"}), json!({"a": "xy"})];
        assert_eq!(
            shown(Display::Lines, &values),
            (
                "{\"partial\":{\"a\":\"x\"}}\n{\"partial\":{\"a\":\"xy\"}}\n".to_owned(),
                String::new()
            )
        );
    }

    #[test]
    fn one_line_keeps_the_end_and_is_cleared() {
        let values = [json!({"a": "x"}), json!({"answer": "a\nlong answer"})];
        let (text, finished) = shown(Display::Line(12), &values);
        assert_eq!(text, "\r\x1b[2K{\"a\":\"x\"}\r\x1b[2K…g answer\"}\r\x1b[2K");
        assert_eq!(finished, "");
    }
}
