//! Unit tests of the progress line's rendering, and of a watched call (`watched`).

use std::time::Duration;

use super::{Status, TAIL};

#[cfg(feature = "local")]
mod watched;

fn status(prompt_tokens: Option<u64>, tokens: u64, first: Option<u64>, tail: &str) -> Status {
    let mut status = Status::new(2);
    status.prompt_tokens = prompt_tokens;
    status.tokens = tokens;
    status.first_token_at = first.map(Duration::from_millis);
    status.set_tail(tail);
    status
}

#[track_caller]
fn check(status: &Status, elapsed_ms: u64, width: usize, expected: &str) {
    let line = status.line(Duration::from_millis(elapsed_ms), 1, width);
    assert_eq!(line, expected);
    assert!(line.chars().count() < width, "{line}");
}

#[test]
fn lines() {
    check(
        &status(None, 0, None, ""),
        400,
        80,
        "\\ attempt 2: waiting for the model... 0.4s",
    );
    check(
        &status(Some(812), 0, None, ""),
        1234,
        80,
        "\\ attempt 2: reading the prompt, 812 tokens... 1.2s",
    );
    // 76 tokens in the 2 s after the first: 38 tok/s; the tail is cut to the width.
    check(
        &status(
            Some(812),
            77,
            Some(1000),
            "{\"answer\": \"The capital of France is Paris",
        ),
        3000,
        60,
        "\\ attempt 2: 77 tokens, 38 tok/s, 3.0s | of France is Paris",
    );
    // One token is no rate yet, however long after it; control characters in the reply never
    // reach the terminal.
    check(
        &status(None, 1, Some(1000), "{\n\t\"a\x1b[2J"),
        2100,
        80,
        "\\ attempt 2: 1 token, 2.1s | {  \"a [2J",
    );
    // A terminal too narrow for the head: the head, cut.
    check(
        &status(Some(812), 0, None, ""),
        0,
        20,
        "\\ attempt 2: readin",
    );
}

#[test]
fn the_tail_keeps_the_end_of_long_replies_in_whole_characters() {
    let mut status = Status::new(1);
    status.set_tail(&"é".repeat(1000));
    assert_eq!(status.tail.chars().count(), TAIL);
}

#[test]
fn the_terminal_width_is_columns_within_bounds_else_80() {
    use super::terminal_width;
    assert_eq!(terminal_width(None), 80);
    assert_eq!(terminal_width(Some(" 132 ")), 132);
    assert_eq!(terminal_width(Some("wide")), 80);
    assert_eq!(terminal_width(Some("5")), 20);
    assert_eq!(terminal_width(Some("99999")), 1000);
}
