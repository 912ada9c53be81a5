//! A progress line for a model call that takes a while (the local model on a CPU): fed the call's
//! stream events, it says what to show, with the attempt, the prompt being read, the tokens so far
//! and their rate, and the end of the reply as it grows ([`Progress`]). `Watched` (feature
//! `local`) wraps a backend so each call hands the line to the caller's drawing function while it
//! runs, and an empty line when it ends; where the line is drawn is the caller's.
//!
//! ```
//! use std::time::Duration;
//! use claij::backends::{StreamEvent, Usage};
//! use claij::progress::Status;
//!
//! let mut status = Status::new(1);
//! let usage = Usage { input_tokens: 812, ..Usage::default() };
//! status.observe(&StreamEvent::Usage(usage), Duration::ZERO);
//! assert_eq!(
//!     status.line(Duration::from_millis(1200), 0, 80),
//!     "- attempt 1: reading the prompt, 812 tokens... 1.2s"
//! );
//! ```

use std::time::{Duration, Instant};

use claij_backends::{Assembler, ChatResponse, StreamEvent};

use crate::report::rate;

/// The terminal width assumed when `COLUMNS` does not say: a line never wraps, or it could not be
/// redrawn in place.
pub const DEFAULT_WIDTH: usize = 80;

/// The terminal's width from `columns` (the `COLUMNS` variable), else [`DEFAULT_WIDTH`]; from 20
/// to 1000.
#[must_use]
pub fn terminal_width(columns: Option<&str>) -> usize {
    columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .unwrap_or(DEFAULT_WIDTH)
        .clamp(20, 1000)
}

/// How often the line is redrawn while nothing arrives (the elapsed time keeps moving), and at most
/// how often while tokens arrive.
pub const TICK: Duration = Duration::from_millis(120);
/// Characters of the reply kept for the line's tail.
const TAIL: usize = 160;
/// The spinner's frames (ASCII: every terminal shows them).
const FRAMES: [char; 4] = ['-', '\\', '|', '/'];

/// What the line shows: where one call is.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// The attempt (1 for the first call of a turn).
    pub attempt: usize,
    /// The prompt's size in tokens, once the backend says it (the local model does before reading it).
    pub prompt_tokens: Option<u64>,
    /// Pieces of the reply received: the local model sends one per decoding step, so this counts
    /// tokens (a step that the grammar extends with forced tokens counts once).
    pub tokens: u64,
    /// Time from the call's start to the first piece of the reply.
    pub first_token_at: Option<Duration>,
    /// The end of the reply so far, one line (control characters as spaces).
    pub tail: String,
}

impl Status {
    /// A call that has just started.
    #[must_use]
    pub fn new(attempt: usize) -> Self {
        Self {
            attempt,
            prompt_tokens: None,
            tokens: 0,
            first_token_at: None,
            tail: String::new(),
        }
    }

    /// Takes in one event, `at` from the call's start.
    pub fn observe(&mut self, event: &StreamEvent, at: Duration) {
        match event {
            // Before any text, a usage figure is the prompt's size (the local model sends it
            // before reading the prompt).
            StreamEvent::Usage(usage) if self.tokens == 0 && usage.input_tokens > 0 => {
                self.prompt_tokens = Some(usage.input_tokens);
            }
            StreamEvent::Text(text) | StreamEvent::ToolInput(text) if !text.is_empty() => {
                self.tokens += 1;
                self.first_token_at.get_or_insert(at);
            }
            _ => {}
        }
    }

    /// The reply so far, of which the line shows the end.
    pub fn set_tail(&mut self, answer: &str) {
        let start = answer
            .char_indices()
            .rev()
            .nth(TAIL - 1)
            .map_or(0, |(i, _)| i);
        self.tail = answer[start..]
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
    }

    /// The line, `elapsed` into the call, the spinner at `frame`, shorter than `width`
    /// characters: `- attempt 1: reading the prompt, 812 tokens... 1.2s`, then
    /// `\ attempt 1: 87 tokens, 38 tok/s, 3.1s | "answer": "The capital`.
    #[must_use]
    pub fn line(&self, elapsed: Duration, frame: usize, width: usize) -> String {
        let spinner = FRAMES[frame % FRAMES.len()];
        let attempt = self.attempt;
        let seconds = format!("{:.1}s", elapsed.as_secs_f64());
        let head = match (self.tokens, self.prompt_tokens) {
            (0, None) => format!("{spinner} attempt {attempt}: waiting for the model... {seconds}"),
            (0, Some(n)) => {
                format!("{spinner} attempt {attempt}: reading the prompt, {n} tokens... {seconds}")
            }
            (n, _) => {
                let rate = self
                    .first_token_at
                    // The first token ends the prompt's reading: the rate is of those after it.
                    .and_then(|first| rate(n - 1, elapsed.saturating_sub(first)))
                    .map(|r| format!(", {r}"))
                    .unwrap_or_default();
                format!(
                    "{spinner} attempt {attempt}: {n} {}{rate}, {seconds} | ",
                    if n == 1 { "token" } else { "tokens" }
                )
            }
        };
        let room = width.saturating_sub(1);
        let head_len = head.chars().count();
        if head_len >= room {
            return head.chars().take(room).collect();
        }
        if self.tokens == 0 {
            return head;
        }
        let tail_room = room - head_len;
        let tail_len = self.tail.chars().count();
        let tail: String = self
            .tail
            .chars()
            .skip(tail_len.saturating_sub(tail_room))
            .collect();
        format!("{head}{tail}")
    }
}

/// The phases a line moves through; a change redraws at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Waiting,
    Reading,
    Writing,
}

impl Phase {
    fn of(status: &Status) -> Self {
        match (status.tokens, status.prompt_tokens) {
            (0, None) => Phase::Waiting,
            (0, Some(_)) => Phase::Reading,
            _ => Phase::Writing,
        }
    }
}

/// The line of one call while it runs: what it shows, when it is due to be drawn again, and the
/// reply so far (assembled as the pipeline's streaming path does).
#[derive(Debug)]
pub struct Progress {
    status: Status,
    width: usize,
    started: Instant,
    frame: usize,
    drawn: Phase,
    drawn_at: Instant,
    assembler: Assembler,
}

impl Progress {
    /// Attempt `attempt`, starting now, its lines shorter than `width` characters (20 to 1000).
    #[must_use]
    pub fn new(attempt: usize, width: usize) -> Self {
        let started = Instant::now();
        let status = Status::new(attempt);
        Self {
            drawn: Phase::of(&status),
            status,
            width: width.clamp(20, 1000),
            started,
            frame: 0,
            drawn_at: started,
            assembler: Assembler::default(),
        }
    }

    /// The first line, before any event.
    #[must_use]
    pub fn first(&self) -> String {
        self.status.line(Duration::ZERO, 0, self.width)
    }

    /// Takes in one event of the reply.
    pub fn observe(&mut self, event: StreamEvent) {
        self.status.observe(&event, self.started.elapsed());
        if self.assembler.push(event) {
            self.status.set_tail(self.assembler.answer());
        }
    }

    /// The line to draw again, when its phase changed (at once) or a [`TICK`] passed since it was
    /// last drawn; `None` when the one drawn still stands.
    pub fn redraw(&mut self) -> Option<String> {
        let now = Instant::now();
        let phase = Phase::of(&self.status);
        if phase == self.drawn && now.duration_since(self.drawn_at) < TICK {
            return None;
        }
        self.frame = self.frame.wrapping_add(1);
        self.drawn = phase;
        self.drawn_at = now;
        Some(
            self.status
                .line(now.duration_since(self.started), self.frame, self.width),
        )
    }

    /// What the line shows.
    #[must_use]
    pub fn status(&self) -> &Status {
        &self.status
    }

    /// The reply, assembled from the events observed (taken: a second call gives an empty one).
    pub fn finish(&mut self) -> ChatResponse {
        std::mem::take(&mut self.assembler).finish()
    }
}

#[cfg(feature = "local")]
pub use self::watched::{Turns, Watched};

#[cfg(feature = "local")]
mod watched {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use claij_backends::{
        Backend, BoxFuture, BoxStream, Capabilities, ChatRequest, ChatResponse, Error, StreamEvent,
    };
    use futures_util::StreamExt as _;

    use super::{Progress, TICK};

    /// Given the line to show (empty: clear it).
    type Draw = Box<dyn Fn(&str) + Send + Sync>;

    /// A backend whose calls draw a progress line while they run. The answer is the same as the
    /// inner backend's: the call streams and assembles the events as the pipeline's streaming
    /// path does.
    pub struct Watched {
        inner: Arc<dyn Backend>,
        draw: Draw,
        width: usize,
        attempts: Arc<AtomicUsize>,
    }

    /// Counts the attempts of a turn for the progress line: [`Turns::start`] before each turn.
    #[derive(Debug, Clone)]
    pub struct Turns(Arc<AtomicUsize>);

    impl Turns {
        /// The next call is attempt 1 again.
        pub fn start(&self) {
            self.0.store(0, Ordering::Relaxed);
        }
    }

    impl Watched {
        /// `inner`, each call's lines (shorter than `width` characters) given to `draw` as they
        /// change, then an empty one when the call ends (however it ends: an error, a dropped
        /// future or stream). Drawing is best effort: `draw` cannot fail the call.
        pub fn new(
            inner: Arc<dyn Backend>,
            width: usize,
            draw: impl Fn(&str) + Send + Sync + 'static,
        ) -> (Self, Turns) {
            let attempts = Arc::new(AtomicUsize::new(0));
            let watched = Self {
                inner,
                draw: Box::new(draw),
                width,
                attempts: Arc::clone(&attempts),
            };
            (watched, Turns(attempts))
        }

        /// The next call's line: the attempt counted, its first frame drawn.
        fn start(&self) -> Line<'_> {
            let attempt = self
                .attempts
                .fetch_add(1, Ordering::Relaxed)
                .saturating_add(1);
            let progress = Progress::new(attempt, self.width);
            (self.draw)(&progress.first());
            Line {
                watched: self,
                progress,
            }
        }

        async fn watch(&self, request: &ChatRequest) -> Result<ChatResponse, Error> {
            let mut line = self.start();
            let mut stream = self.inner.stream(request);
            loop {
                match tokio::time::timeout(TICK, stream.next()).await {
                    Err(_) => {}
                    Ok(None) => break,
                    Ok(Some(event)) => line.progress.observe(event?),
                }
                line.redraw();
            }
            Ok(line.progress.finish())
        }
    }

    /// The line of one call while it runs, cleared when dropped.
    struct Line<'a> {
        watched: &'a Watched,
        progress: Progress,
    }

    impl Line<'_> {
        /// Draws the line again when its phase changed, or once a tick passed.
        fn redraw(&mut self) {
            if let Some(line) = self.progress.redraw() {
                (self.watched.draw)(&line);
            }
        }
    }

    impl Drop for Line<'_> {
        fn drop(&mut self) {
            (self.watched.draw)("");
        }
    }

    impl Backend for Watched {
        fn provider(&self) -> &str {
            self.inner.provider()
        }

        fn capabilities(&self, model: &str) -> Capabilities {
            self.inner.capabilities(model)
        }

        fn complete<'a>(
            &'a self,
            request: &'a ChatRequest,
        ) -> BoxFuture<'a, Result<ChatResponse, Error>> {
            Box::pin(self.watch(request))
        }

        /// The inner backend's events, unchanged, the line drawn as they come (and while none
        /// does): a streamed call shows as a whole one does.
        fn stream<'a>(
            &'a self,
            request: &'a ChatRequest,
        ) -> BoxStream<'a, Result<StreamEvent, Error>> {
            let state = (self.inner.stream(request), self.start());
            Box::pin(futures_util::stream::unfold(
                state,
                |(mut inner, mut line)| async move {
                    loop {
                        let next = tokio::time::timeout(TICK, inner.next()).await;
                        let event = match next {
                            Err(_) => None,
                            Ok(None) => return None,
                            Ok(Some(event)) => Some(event),
                        };
                        if let Some(Ok(event)) = &event {
                            line.progress.observe(event.clone());
                        }
                        line.redraw();
                        if let Some(event) = event {
                            return Some((event, (inner, line)));
                        }
                    }
                },
            ))
        }
    }
}

#[cfg(test)]
mod tests;
