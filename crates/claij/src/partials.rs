//! Partial values shown while a model writes its reply ([`Builder::on_partial`] hands over the
//! value recovered so far, not validated): [`Partials`] says what to show for each one, and when
//! the turn ends, as one of three [`Display`]s; where it is written is the caller's.
//!
//! - [`Display::Line`]: one line, redrawn in place, showing the end of the value so far as
//!   compact JSON; cleared before the final value is shown.
//! - [`Display::Lines`]: a JSON line per value, `{"partial": VALUE}`, so a reader tells them from
//!   the final `{"value": VALUE}` by their key, whatever the schema's own keys.
//! - [`Display::Answer`]: the `answer` text as it grows; when a later value's answer does not
//!   continue what was shown (a retry), it starts again on a new line.
//!
//! ```
//! use claij::partials::{Display, Partials, Shown};
//! use serde_json::json;
//!
//! let mut partials = Partials::new(Display::Answer);
//! assert_eq!(partials.show(&json!({"answer": "Par"})), Some(Shown::Append("Par".into())));
//! assert_eq!(partials.show(&json!({"answer": "Paris"})), Some(Shown::Append("is".into())));
//! // A retry: its answer does not continue the one shown.
//! assert_eq!(partials.show(&json!({"answer": "Lyon"})), Some(Shown::Append("\nLyon".into())));
//! assert_eq!(partials.finish(), (None, "Lyon".to_owned()));
//! ```
//!
//! [`Builder::on_partial`]: crate::conversation::Builder::on_partial

use serde_json::Value;

/// How partial values are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Display {
    /// One line redrawn in place, shorter than this many characters.
    Line(usize),
    /// A line per partial value, `{"partial": VALUE}`.
    Lines,
    /// The `answer` text as it grows.
    Answer,
}

impl Display {
    /// How a turn's partial values are shown, if they are (`on`: streaming asked for, or by
    /// default on a terminal, and no JSON report): a chat writes the answer as it grows (not the
    /// `standard` response, which is rendered whole); otherwise one line on a terminal of
    /// `terminal` columns (`None`: no terminal), else JSON lines.
    #[must_use]
    pub fn choose(on: bool, chat: bool, standard: bool, terminal: Option<usize>) -> Option<Self> {
        if !on || (chat && standard) {
            return None;
        }
        Some(match (chat, terminal) {
            (true, _) => Self::Answer,
            (false, Some(width)) => Self::Line(width),
            (false, None) => Self::Lines,
        })
    }
}

/// What to show for a partial value, or when the turn ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// Clear the line, then show this one in its place (empty: just clear it).
    Redraw(String),
    /// Write this after what is shown.
    Append(String),
}

/// The partial values of one turn after another, as a [`Display`] shows them.
#[derive(Debug, Clone)]
pub struct Partials {
    display: Display,
    /// What is shown of this turn: the drawn line, or the answer text written.
    shown: String,
}

impl Partials {
    /// Partial values shown as `display` says.
    #[must_use]
    pub fn new(display: Display) -> Self {
        Self {
            display,
            shown: String::new(),
        }
    }

    /// How the values are shown.
    #[must_use]
    pub fn display(&self) -> Display {
        self.display
    }

    /// What to show for `value`, the value so far (`None`: nothing, an answer-less value with
    /// [`Display::Answer`]).
    pub fn show(&mut self, value: &Value) -> Option<Shown> {
        match self.display {
            Display::Line(width) => {
                self.shown = tail(&value.to_string(), width.saturating_sub(1));
                Some(Shown::Redraw(self.shown.clone()))
            }
            Display::Lines => Some(Shown::Append(format!(
                "{}\n",
                serde_json::json!({"partial": value})
            ))),
            Display::Answer => {
                let answer = value.get("answer").and_then(Value::as_str)?;
                let more = match answer.strip_prefix(self.shown.as_str()) {
                    Some(more) => more.to_owned(),
                    None => format!("\n{answer}"),
                };
                answer.clone_into(&mut self.shown);
                Some(Shown::Append(more))
            }
        }
    }

    /// Ends the turn: what to show then (the line cleared, with [`Display::Line`] when one was
    /// drawn), and the answer text shown, if any ([`Display::Answer`]), so the caller need not
    /// show it again.
    pub fn finish(&mut self) -> (Option<Shown>, String) {
        let shown = std::mem::take(&mut self.shown);
        match self.display {
            Display::Line(_) if !shown.is_empty() => {
                (Some(Shown::Redraw(String::new())), String::new())
            }
            _ => (None, shown),
        }
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
