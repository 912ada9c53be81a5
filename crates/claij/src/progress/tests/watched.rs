//! A watched call: what it draws, in order (feature `local`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use claij_backends::{
    Backend, BoxFuture, BoxStream, Capabilities, ChatRequest, ChatResponse, Error, FinishReason,
    Message, StreamEvent, Usage,
};
use futures_util::StreamExt as _;

use crate::progress::Watched;

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

/// What was drawn, shared with the test: each line after `\r\x1b[2K`, as a terminal draws it.
#[derive(Clone, Default)]
struct Screen(Arc<Mutex<Vec<u8>>>);

impl Screen {
    fn draw(&self) -> impl Fn(&str) + Send + Sync + 'static {
        let screen = self.clone();
        move |line| {
            let mut drawn = screen.0.lock().unwrap();
            drawn.extend_from_slice(format!("\r\x1b[2K{line}").as_bytes());
        }
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
    let (watched, turns) = Watched::new(Arc::new(Streaming(events)), 80, screen.draw());
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
    let (watched, _turns) = Watched::new(Arc::new(Streaming(events.clone())), 80, screen.draw());
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
