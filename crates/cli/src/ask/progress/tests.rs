//! Unit tests of the progress line: its rendering, and what a watched call draws, in order.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use claij_backends::{
    Backend, BoxFuture, BoxStream, Capabilities, ChatRequest, ChatResponse, Error, FinishReason,
    Message, StreamEvent, Usage,
};

use futures_util::StreamExt as _;

use super::{Status, Watched, rate, render};

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
    let line = render(status, Duration::from_millis(elapsed_ms), 1, width);
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
fn rates() {
    assert_eq!(
        rate(87, Duration::from_millis(2310)).as_deref(),
        Some("38 tok/s")
    );
    assert_eq!(
        rate(9, Duration::from_secs(2)).as_deref(),
        Some("4.5 tok/s")
    );
    assert_eq!(rate(0, Duration::from_secs(2)), None);
    assert_eq!(rate(5, Duration::from_millis(50)), None);
}

#[test]
fn the_tail_keeps_the_end_of_long_replies_in_whole_characters() {
    let mut status = Status::new(1);
    status.set_tail(&"é".repeat(1000));
    assert_eq!(status.tail.chars().count(), super::TAIL);
}

/// A backend that streams fixed events: the prompt's size first, as the local model does.
struct Streaming(Vec<StreamEvent>);

impl Backend for Streaming {
    fn provider(&self) -> &str {
        "local"
    }

    fn capabilities(&self, _model: &str) -> Capabilities {
        Capabilities::prompted()
    }

    fn complete<'a>(
        &'a self,
        _request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, Error>> {
        panic!("a watched call streams")
    }

    fn stream<'a>(
        &'a self,
        _request: &'a ChatRequest,
    ) -> BoxStream<'a, Result<StreamEvent, Error>> {
        Box::pin(futures_util::stream::iter(
            self.0.clone().into_iter().map(Ok),
        ))
    }
}

/// What was drawn, shared with the test.
#[derive(Clone, Default)]
struct Screen(Arc<Mutex<Vec<u8>>>);

impl Write for Screen {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_watched_call_shows_each_phase_then_clears_and_answers_as_the_backend() {
    let usage = |input, output| Usage {
        input_tokens: input,
        output_tokens: output,
        cost_usd: Some(0.0),
        ..Usage::default()
    };
    let events = vec![
        StreamEvent::Model("SmolLM2".into()),
        StreamEvent::Usage(usage(812, 0)),
        StreamEvent::Text("{\"answer\"".into()),
        StreamEvent::Text(": \"Paris\"}".into()),
        StreamEvent::Usage(usage(812, 2)),
        StreamEvent::Finish(FinishReason::Stop),
    ];
    let screen = Screen::default();
    let (watched, turns) = Watched::new(Arc::new(Streaming(events)), Box::new(screen.clone()), 80);
    let request = ChatRequest::new("local").message(Message::user("Capital of France?"));
    let response = watched.complete(&request).await.unwrap();
    assert_eq!(response.content, "{\"answer\": \"Paris\"}");
    assert_eq!(response.usage.input_tokens, 812);
    assert_eq!(response.usage.output_tokens, 2);
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.model.as_deref(), Some("SmolLM2"));

    let drawn = String::from_utf8(screen.0.lock().unwrap().clone()).unwrap();
    let frames: Vec<&str> = drawn.split("\r\x1b[2K").skip(1).collect();
    let position = |part: &str| {
        frames
            .iter()
            .position(|f| f.contains(part))
            .unwrap_or_else(|| panic!("no frame with {part:?} in {frames:?}"))
    };
    let waiting = position("attempt 1: waiting for the model");
    let reading = position("attempt 1: reading the prompt, 812 tokens");
    let writing = position("attempt 1: 1 token, ");
    assert!(waiting < reading && reading < writing, "{frames:?}");
    assert_eq!(frames.last(), Some(&""), "the line is cleared at the end");

    // The next call of the turn is attempt 2; a new turn starts at 1 again.
    watched.complete(&request).await.unwrap();
    turns.start();
    watched.complete(&request).await.unwrap();
    let drawn = String::from_utf8(screen.0.lock().unwrap().clone()).unwrap();
    let second = drawn.find("attempt 2: waiting").unwrap();
    let again = drawn.rfind("attempt 1: waiting").unwrap();
    assert!(second < again, "{drawn}");
}

/// A streamed call (`--stream` into a pipe, `chat`) draws the same line while its events pass
/// through unchanged, and clears it when the stream ends.
#[tokio::test]
async fn a_watched_stream_shows_the_line_and_passes_every_event_on() {
    let usage = |input, output| Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    };
    let events = vec![
        StreamEvent::Usage(usage(640, 0)),
        StreamEvent::Text("{\"cities\": [\"Lyon\"".into()),
        StreamEvent::Text(", \"Nice\"".into()),
        StreamEvent::Usage(usage(640, 2)),
        StreamEvent::Finish(FinishReason::Length),
    ];
    let screen = Screen::default();
    let (watched, _turns) = Watched::new(
        Arc::new(Streaming(events.clone())),
        Box::new(screen.clone()),
        80,
    );
    let request = ChatRequest::new("local").message(Message::user("Cities?"));
    let passed: Vec<StreamEvent> = watched.stream(&request).map(Result::unwrap).collect().await;
    assert_eq!(passed, events);
    let drawn = String::from_utf8(screen.0.lock().unwrap().clone()).unwrap();
    let frames: Vec<&str> = drawn.split("\r\x1b[2K").skip(1).collect();
    let position = |part: &str| {
        frames
            .iter()
            .position(|f| f.contains(part))
            .unwrap_or_else(|| panic!("no frame with {part:?} in {frames:?}"))
    };
    assert!(
        position("attempt 1: reading the prompt, 640 tokens") < position("attempt 1: 1 token, "),
        "{frames:?}"
    );
    assert!(
        position("{\"cities\": [\"Lyon\"") > 0,
        "the tail shows the reply: {frames:?}"
    );
    assert_eq!(frames.last(), Some(&""), "the line is cleared at the end");
}
