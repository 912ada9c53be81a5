//! Record and replay: a [`Recorder`] backend writes every call to a JSONL cassette, and a [`Replayer`]
//! backend answers from one offline, so a real failure becomes a regression test.
//!
//! Each line of a cassette is one call:
//!
//! ```json
//! {"hash":"…","provider":"openrouter","capabilities":{…},"request":{…},"response":{…}}
//! {"hash":"…","provider":"openrouter","capabilities":{…},"request":{…},"error":{"kind":"rate_limited",…}}
//! ```
//!
//! - `request` is the neutral [`ChatRequest`] as JSON; `response` a [`ChatResponse`]; `error` an
//!   [`Error`] with its variant in `kind` and every field kept, so it replays as the same error.
//! - Keys never reach a cassette: a neutral request carries none, and before a line is written every
//!   string in it is passed through [`redact_text`](crate::redact::redact_text) (and members named
//!   like credentials are blanked: [`redact_value`](crate::redact::redact_value)), so a key echoed in
//!   a prompt, an answer or an error message is written as `***` ([`MARKER`](crate::redact::MARKER)).
//! - `hash` is [`request_hash`]: 128-bit FNV-1a of the scrubbed request's canonical JSON (keys
//!   sorted, no whitespace). Everything in the request counts: model, system prompt, every message and
//!   its role, the structured-output name, schema, strictness and mode, temperature, `max_tokens`,
//!   seed and stop sequences. The [`Replayer`] recomputes it from `request`, so a cassette may be
//!   edited by hand.
//!
//! ```
//! use claij_backends::{Backend, ChatRequest, Message};
//! use claij_backends::cassette::{Recorder, Replayer};
//! use claij_test_support::Scripted;
//!
//! let path = std::env::temp_dir().join(format!("claij-doc-{}.jsonl", std::process::id()));
//! # let _ = std::fs::remove_file(&path);
//! let request = ChatRequest::new("m").message(Message::user("2+2?"));
//!
//! let recorder = Recorder::new(Scripted::replies(["4"]), &path)?;
//! let live = futures_executor::block_on(recorder.complete(&request))?;
//!
//! let replayer = Replayer::open(&path)?;
//! let replayed = futures_executor::block_on(replayer.complete(&request))?;
//! assert_eq!(replayed, live);
//! let other = request.clone().message(Message::user("and 3+3?"));
//! assert!(futures_executor::block_on(replayer.complete(&other)).is_err());
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod entry;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};

use futures_core::Stream;

use crate::{
    Assembler, Backend, BoxFuture, BoxStream, Capabilities, ChatRequest, ChatResponse, Error,
    ErrorContext, StreamEvent,
};

use entry::{Entry, Outcome};

/// A backend that forwards every call to `inner` and appends it, with its response or error, to a
/// JSONL cassette.
///
/// Streams are recorded when they end, as the response they added up to (or the first error, which
/// ends the stream); a stream dropped before its end is not recorded. Writes are synchronous and
/// serialized, a line each. A failed write fails the call with [`Error::Other`] naming the cassette:
/// a recording that silently misses calls would be worse.
pub struct Recorder<B> {
    inner: B,
    path: PathBuf,
    file: Mutex<File>,
}

/// A backend that answers from a cassette, offline, by [`request_hash`].
///
/// Identical requests recorded several times (a retried call) are answered in recorded order, and
/// the last answer again once they run out. A request with no recording gets [`Error::Other`]
/// saying `no recording for request <hash>`. The provider name is the one recorded first
/// (`replay` for an empty cassette), and [`Backend::capabilities`] says what was recorded for the
/// model, so a pipeline builds the same requests it built when recording.
pub struct Replayer {
    source: String,
    provider: String,
    calls: HashMap<String, Recorded>,
    capabilities: HashMap<String, Capabilities>,
    len: usize,
}

/// The answers recorded for one request, and which one comes next.
struct Recorded {
    hash: String,
    outcomes: Vec<Outcome>,
    next: AtomicUsize,
}

/// The stream a [`Recorder`] hands out: the inner stream's events, added up and recorded at the end.
struct Recording<'a, B> {
    recorder: &'a Recorder<B>,
    request: &'a ChatRequest,
    inner: BoxStream<'a, Result<StreamEvent, Error>>,
    assembler: Assembler,
    done: bool,
}

/// The cassette hash of `request`: 32 hex digits of 128-bit FNV-1a over the canonical JSON of the
/// request after [`redact_value`](crate::redact::redact_value). Stable across runs and platforms; not a cryptographic hash (the
/// [`Replayer`] compares whole requests, so a collision cannot answer the wrong one).
pub fn request_hash(request: &ChatRequest) -> String {
    match entry::scrubbed_request(request) {
        Ok(value) => entry::hash(&value),
        // A request always serializes; hash its debug form rather than panic.
        Err(_) => entry::hash_canonical(&format!("{request:?}")),
    }
}

impl<B: Backend> Recorder<B> {
    /// Records `inner`'s calls to the cassette at `path`, appending (the file is created if missing).
    ///
    /// # Errors
    ///
    /// The IO error when the file cannot be opened for appending.
    pub fn new(inner: B, path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Self {
            inner,
            path,
            file: Mutex::new(file),
        })
    }

    /// The cassette's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The recorded backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// The recorded backend, recording over.
    pub fn into_inner(self) -> B {
        self.inner
    }

    /// Appends one call to the cassette.
    fn record(
        &self,
        request: &ChatRequest,
        outcome: Result<&ChatResponse, &Error>,
    ) -> Result<(), Error> {
        let provider = self.inner.provider();
        let capabilities = self.inner.capabilities(&request.model);
        let fail = |message: String| Error::Other {
            context: ErrorContext::new(provider),
            message: format!(
                "could not record to cassette {}: {message}",
                self.path.display()
            ),
        };
        let line = entry::line(provider, capabilities, request, outcome)
            .map_err(|e| fail(e.to_string()))?;
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|e| fail(e.to_string()))
    }
}

impl<B: Backend> Backend for Recorder<B> {
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
        Box::pin(async move {
            let outcome = self.inner.complete(request).await;
            self.record(request, outcome.as_ref())?;
            outcome
        })
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest) -> BoxStream<'a, Result<StreamEvent, Error>> {
        Box::pin(Recording {
            recorder: self,
            request,
            inner: self.inner.stream(request),
            assembler: Assembler::default(),
            done: false,
        })
    }
}

impl<B> std::fmt::Debug for Recorder<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> Stream for Recording<'_, B> {
    type Item = Result<StreamEvent, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        match this.inner.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(event))) => {
                this.assembler.push(event.clone());
                Poll::Ready(Some(Ok(event)))
            }
            Poll::Ready(Some(Err(error))) => {
                this.done = true;
                let recorded = this.recorder.record(this.request, Err(&error));
                Poll::Ready(Some(Err(recorded.err().unwrap_or(error))))
            }
            Poll::Ready(None) => {
                this.done = true;
                let response = std::mem::take(&mut this.assembler).finish();
                let recorded = this.recorder.record(this.request, Ok(&response));
                Poll::Ready(recorded.err().map(Err))
            }
        }
    }
}

impl Replayer {
    /// A replayer for the cassette at `path`.
    ///
    /// # Errors
    ///
    /// The IO error when the file cannot be read; [`io::ErrorKind::InvalidData`] naming the path and
    /// line when a line is not a cassette entry.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)?;
        Self::parse(&text, &path.display().to_string())
    }

    /// A replayer for a cassette's text; `source` names it in errors (a path, `inline`, ...).
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidData`] naming `source` and the line when a line is not a cassette entry.
    pub fn from_jsonl(text: &str, source: impl Into<String>) -> io::Result<Self> {
        Self::parse(text, &source.into())
    }

    fn parse(text: &str, source: &str) -> io::Result<Self> {
        let mut replayer = Replayer {
            source: source.to_owned(),
            provider: String::new(),
            calls: HashMap::new(),
            capabilities: HashMap::new(),
            len: 0,
        };
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let entry: Entry = serde_json::from_str(line).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{source}:{}: {e}", n + 1),
                )
            })?;
            replayer.add(entry);
        }
        if replayer.provider.is_empty() {
            replayer.provider = "replay".to_owned();
        }
        Ok(replayer)
    }

    fn add(&mut self, entry: Entry) {
        if self.provider.is_empty() {
            self.provider = entry.provider;
        }
        if let Some(model) = entry.request.get("model").and_then(|m| m.as_str()) {
            self.capabilities
                .insert(model.to_owned(), entry.capabilities);
        }
        let canonical = entry::canonical(&entry.request);
        self.calls
            .entry(canonical)
            .or_insert_with_key(|canonical| Recorded {
                hash: entry::hash_canonical(canonical),
                outcomes: Vec::new(),
                next: AtomicUsize::new(0),
            })
            .outcomes
            .push(entry.outcome);
        self.len += 1;
    }

    /// The same replayer under another provider name.
    #[must_use]
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = provider.into();
        self
    }

    /// How many calls the cassette holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the cassette holds no call.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The recorded answer for `request`.
    fn answer(&self, request: &ChatRequest) -> Result<ChatResponse, Error> {
        let miss = |hash: String| Error::Other {
            context: ErrorContext::new(self.provider.clone()),
            message: format!(
                "no recording for request {hash} (model `{}`) in {}",
                request.model, self.source
            ),
        };
        let scrubbed = entry::scrubbed_request(request).map_err(|e| miss(e.to_string()))?;
        let canonical = entry::canonical(&scrubbed);
        let Some(recorded) = self.calls.get(&canonical) else {
            return Err(miss(entry::hash_canonical(&canonical)));
        };
        let index = recorded.next.fetch_add(1, Ordering::Relaxed);
        let last = recorded.outcomes.len().saturating_sub(1);
        match recorded.outcomes.get(index.min(last)) {
            Some(Outcome::Response(response)) => Ok(response.clone()),
            Some(Outcome::Error(error)) => Err(error.clone().into()),
            None => Err(miss(recorded.hash.clone())),
        }
    }
}

impl Backend for Replayer {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn capabilities(&self, model: &str) -> Capabilities {
        self.capabilities
            .get(model)
            .copied()
            .unwrap_or_else(Capabilities::prompted)
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, Error>> {
        Box::pin(std::future::ready(self.answer(request)))
    }
}

impl std::fmt::Debug for Replayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replayer")
            .field("source", &self.source)
            .field("provider", &self.provider)
            .field("calls", &self.len)
            .finish_non_exhaustive()
    }
}
