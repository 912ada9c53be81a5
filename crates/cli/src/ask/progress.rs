//! Progress on a terminal while the local model works: one line on stderr, redrawn in place, with
//! the attempt, the prompt being read, the tokens so far and their rate, and the end of the reply as
//! it grows; cleared once the reply is complete, so what is printed after it stays clean.

#[cfg(test)]
mod tests;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use claij_backends::{
    Assembler, Backend, BoxFuture, BoxStream, Capabilities, ChatRequest, ChatResponse, Error,
    StreamEvent,
};
use futures_util::StreamExt as _;
use tokio::time::Instant;

/// How often the line is redrawn while nothing arrives (the elapsed time keeps moving), and at most
/// how often while tokens arrive.
const TICK: Duration = Duration::from_millis(120);
/// The terminal width assumed when `COLUMNS` does not say: a line never wraps, or it could not be
/// redrawn in place.
const DEFAULT_WIDTH: usize = 80;
/// Characters of the reply kept for the line's tail.
const TAIL: usize = 160;
/// The spinner's frames (ASCII: every terminal shows them).
const FRAMES: [char; 4] = ['-', '\\', '|', '/'];

/// A backend whose calls draw a progress line while they run. The answer is the same as the inner
/// backend's: the call streams and assembles the events as the pipeline's streaming path does.
pub(super) struct Watched {
    inner: Arc<dyn Backend>,
    out: Mutex<Box<dyn Write + Send>>,
    width: usize,
    attempts: Arc<AtomicUsize>,
}

/// Counts the attempts of a turn for the progress line: [`Turns::start`] before each turn.
#[derive(Clone)]
pub(super) struct Turns(Arc<AtomicUsize>);

impl Turns {
    /// The next call is attempt 1 again.
    pub(super) fn start(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

/// What the line shows: where one call is.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Status {
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

/// The terminal's width: `COLUMNS`, else 80, from 20 to 1000.
pub(super) fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .unwrap_or(DEFAULT_WIDTH)
        .clamp(20, 1000)
}

impl Watched {
    /// `inner`, drawing on stderr, `COLUMNS` wide (else 80).
    pub(super) fn stderr(inner: Arc<dyn Backend>) -> (Self, Turns) {
        Self::new(inner, Box::new(std::io::stderr()), terminal_width())
    }

    /// `inner`, drawing on `out` with lines shorter than `width` characters.
    pub(super) fn new(
        inner: Arc<dyn Backend>,
        out: Box<dyn Write + Send>,
        width: usize,
    ) -> (Self, Turns) {
        let attempts = Arc::new(AtomicUsize::new(0));
        let watched = Self {
            inner,
            out: Mutex::new(out),
            width: width.clamp(20, 1000),
            attempts: Arc::clone(&attempts),
        };
        (watched, Turns(attempts))
    }

    /// Writes `\r`, clears the line, then `line` (empty: just clears). Progress is best effort: a
    /// failed write to the terminal never fails the call.
    fn draw(&self, line: &str) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = write!(out, "\r\x1b[2K{line}");
        let _ = out.flush();
    }

    /// The next call's line: the attempt counted, its first frame drawn.
    fn start(&self) -> Line<'_> {
        let attempt = self
            .attempts
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        let started = Instant::now();
        let status = Status::new(attempt);
        let line = Line {
            watched: self,
            drawn: Phase::of(&status),
            status,
            started,
            frame: 0,
            drawn_at: started,
            assembler: Assembler::default(),
        };
        self.draw(&render(&line.status, Duration::ZERO, 0, self.width));
        line
    }

    async fn watch(&self, request: &ChatRequest) -> Result<ChatResponse, Error> {
        let mut line = self.start();
        let mut stream = self.inner.stream(request);
        loop {
            match tokio::time::timeout(TICK, stream.next()).await {
                Err(_) => {}
                Ok(None) => break,
                Ok(Some(event)) => line.observe(event?),
            }
            line.redraw();
        }
        Ok(line.finish())
    }
}

/// The line of one call while it runs: what it shows, and the reply so far (for its tail). Cleared
/// when dropped, however the call ends (an error, a dropped future or stream).
struct Line<'a> {
    watched: &'a Watched,
    status: Status,
    started: Instant,
    frame: usize,
    drawn: Phase,
    drawn_at: Instant,
    assembler: Assembler,
}

impl Line<'_> {
    /// Takes in one event of the reply.
    fn observe(&mut self, event: StreamEvent) {
        self.status.observe(&event, self.started.elapsed());
        if self.assembler.push(event) {
            self.status.set_tail(self.assembler.answer());
        }
    }

    /// Draws the line again when its phase changed, or once a tick passed.
    fn redraw(&mut self) {
        let now = Instant::now();
        let phase = Phase::of(&self.status);
        // A new phase shows at once; within one, the line moves at most every tick.
        if phase != self.drawn || now.duration_since(self.drawn_at) >= TICK {
            self.frame = self.frame.wrapping_add(1);
            self.watched.draw(&render(
                &self.status,
                now.duration_since(self.started),
                self.frame,
                self.watched.width,
            ));
            self.drawn = phase;
            self.drawn_at = now;
        }
    }

    /// The reply, assembled (the line is cleared when `self` goes).
    fn finish(mut self) -> ChatResponse {
        std::mem::take(&mut self.assembler).finish()
    }
}

impl Drop for Line<'_> {
    fn drop(&mut self) {
        self.watched.draw("");
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

impl Status {
    /// A call that has just started.
    pub(super) fn new(attempt: usize) -> Self {
        Self {
            attempt,
            prompt_tokens: None,
            tokens: 0,
            first_token_at: None,
            tail: String::new(),
        }
    }

    /// Takes in one event, `at` from the call's start.
    pub(super) fn observe(&mut self, event: &StreamEvent, at: Duration) {
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
    pub(super) fn set_tail(&mut self, answer: &str) {
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
}

/// The progress line for `status`, `elapsed` into the call, shorter than `width` characters:
/// `- attempt 1: reading the prompt, 812 tokens... 1.2s`, then
/// `\ attempt 1: 87 tokens, 38 tok/s, 3.1s | "answer": "The capital`.
pub(super) fn render(status: &Status, elapsed: Duration, frame: usize, width: usize) -> String {
    let spinner = FRAMES[frame % FRAMES.len()];
    let attempt = status.attempt;
    let seconds = format!("{:.1}s", elapsed.as_secs_f64());
    let head = match (status.tokens, status.prompt_tokens) {
        (0, None) => format!("{spinner} attempt {attempt}: waiting for the model... {seconds}"),
        (0, Some(n)) => {
            format!("{spinner} attempt {attempt}: reading the prompt, {n} tokens... {seconds}")
        }
        (n, _) => {
            let rate = status
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
    if status.tokens == 0 {
        return head;
    }
    let tail_room = room - head_len;
    let tail_len = status.tail.chars().count();
    let tail: String = status
        .tail
        .chars()
        .skip(tail_len.saturating_sub(tail_room))
        .collect();
    format!("{head}{tail}")
}

/// `38 tok/s` for `tokens` over `span`; none over less than a tenth of a second (not a rate yet).
pub(super) fn rate(tokens: u64, span: Duration) -> Option<String> {
    let seconds = span.as_secs_f64();
    if tokens == 0 || seconds < 0.1 {
        return None;
    }
    let per_second = tokens as f64 / seconds;
    Some(if per_second < 10.0 {
        format!("{per_second:.1} tok/s")
    } else {
        format!("{per_second:.0} tok/s")
    })
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

    /// The inner backend's events, unchanged, the line drawn as they come (and while none does):
    /// a streamed call (`--stream` into a pipe, `chat`) shows on the terminal as a whole one does.
    fn stream<'a>(&'a self, request: &'a ChatRequest) -> BoxStream<'a, Result<StreamEvent, Error>> {
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
                        line.observe(event.clone());
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
