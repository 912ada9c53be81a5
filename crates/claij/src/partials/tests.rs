//! What partial values show: the answer as it grows (a retry on a new line), JSON lines, one line
//! cut to its width and cleared at the end.

use serde_json::json;

use super::{Display, Partials, Shown};

fn shown(display: Display, values: &[serde_json::Value]) -> (Vec<Shown>, String) {
    let mut partials = Partials::new(display);
    let mut shown: Vec<Shown> = values.iter().filter_map(|v| partials.show(v)).collect();
    let (last, text) = partials.finish();
    shown.extend(last);
    (shown, text)
}

fn append(text: &str) -> Shown {
    Shown::Append(text.to_owned())
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
    let expected = [append("Par"), append("is"), append("\nLyon"), append(" é")];
    assert_eq!(
        shown(Display::Answer, &values),
        (expected.to_vec(), "Lyon é".to_owned())
    );
}

#[test]
fn lines_show_each_value() {
    let values = [json!({"a": "x"}), json!({"a": "xy"})];
    let expected = [
        append("{\"partial\":{\"a\":\"x\"}}\n"),
        append("{\"partial\":{\"a\":\"xy\"}}\n"),
    ];
    assert_eq!(
        shown(Display::Lines, &values),
        (expected.to_vec(), String::new())
    );
}

#[test]
fn one_line_keeps_the_end_and_is_cleared() {
    let values = [json!({"a": "x"}), json!({"answer": "a\nlong answer"})];
    let redraw = |line: &str| Shown::Redraw(line.to_owned());
    let expected = [redraw("{\"a\":\"x\"}"), redraw("…g answer\"}"), redraw("")];
    assert_eq!(
        shown(Display::Line(12), &values),
        (expected.to_vec(), String::new())
    );
    // Nothing drawn: nothing to clear.
    assert_eq!(
        Partials::new(Display::Line(12)).finish(),
        (None, String::new())
    );
}

#[test]
fn the_display_is_chosen_by_the_command_and_the_terminal() {
    assert_eq!(Display::choose(false, false, false, Some(80)), None);
    assert_eq!(Display::choose(false, true, false, None), None);
    assert_eq!(
        Display::choose(true, false, false, Some(80)),
        Some(Display::Line(80))
    );
    assert_eq!(
        Display::choose(true, false, true, None),
        Some(Display::Lines)
    );
    assert_eq!(
        Display::choose(true, true, false, None),
        Some(Display::Answer)
    );
    assert_eq!(Display::choose(true, true, true, Some(80)), None);
}
