//! Unit tests of the partial values' display: the answer as it grows, JSON lines, one line.

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
