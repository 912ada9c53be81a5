//! Streaming: open the response (with the same retries as a complete call), cut its body into
//! server-sent events, and let the adapter say what each one means.

use std::collections::VecDeque;
use std::time::Instant;

use tracing::debug;

use super::sse::{SseEvent, SseParser};
use super::{CancelToken, HttpBackend, retry, transport};
use crate::{Adapter, BodyLimit, BoxStream, ChatRequest, Error, ErrorContext, StreamEvent};

/// Where a stream is.
enum Phase {
    /// Nothing sent yet.
    Start,
    /// Reading the body.
    Body(reqwest::Response),
    /// Finished (by `[DONE]`, the end of the body, or an error).
    Done,
}

struct State<'a, A> {
    backend: &'a HttpBackend<A>,
    request: &'a ChatRequest,
    cancel: Option<CancelToken>,
    phase: Phase,
    parser: SseParser,
    pending: VecDeque<Result<StreamEvent, Error>>,
    context: ErrorContext,
    started: Instant,
    received: usize,
}

/// The events of one streamed call. After an error the stream ends.
pub(super) fn events<'a, A: Adapter>(
    backend: &'a HttpBackend<A>,
    request: &'a ChatRequest,
    cancel: Option<CancelToken>,
) -> BoxStream<'a, Result<StreamEvent, Error>> {
    let state = State {
        backend,
        request,
        cancel,
        phase: Phase::Start,
        parser: SseParser::with_max_event(event_limit(&backend.config)),
        pending: VecDeque::new(),
        context: ErrorContext::new(backend.adapter.provider()),
        started: Instant::now(),
        received: 0,
    };
    Box::pin(futures_util::stream::unfold(
        state,
        |mut state| async move {
            loop {
                if let Some(item) = state.pending.pop_front() {
                    return Some((item, state));
                }
                if matches!(state.phase, Phase::Done) {
                    return None;
                }
                let cancel = state.cancel.clone();
                let context = state.context.clone();
                let step = async {
                    state.advance().await;
                    Ok(())
                };
                let outcome = match &cancel {
                    Some(token) => token.run(context, step).await,
                    None => step.await,
                };
                if let Err(cancelled) = outcome {
                    state.phase = Phase::Done;
                    state.pending.clear();
                    state.pending.push_back(Err(cancelled));
                }
            }
        },
    ))
}

impl<A: Adapter> State<'_, A> {
    /// Moves the stream on by one step: sends the request, or reads one chunk.
    async fn advance(&mut self) {
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Start => self.open().await,
            Phase::Body(response) => self.read(response).await,
            Phase::Done => {}
        }
    }

    async fn open(&mut self) {
        let backend = self.backend;
        let request = self.request;
        let opened = async {
            let prepared = backend.prepare(request, true)?;
            let client = backend.client()?;
            retry::run(&backend.config.retry, &self.context, &request.model, || {
                transport::open_stream(backend, client, &prepared, &request.model)
            })
            .await
        };
        match opened.await {
            Ok((response, context)) => {
                self.context = context;
                self.phase = Phase::Body(response);
            }
            Err(e) => self.fail(backend.finish_error(e, request)),
        }
    }

    async fn read(&mut self, mut response: reqwest::Response) {
        let timeout = self.backend.config.request_timeout;
        match tokio::time::timeout(timeout, response.chunk()).await {
            Err(_) => self.fail(Error::Timeout {
                context: self.context.clone(),
                after: timeout,
            }),
            Ok(Err(e)) => {
                let error = transport::body_error(&e, self.context.clone(), timeout);
                self.fail(self.backend.finish_error(error, self.request));
            }
            Ok(Ok(Some(chunk))) => {
                self.received = self.received.saturating_add(chunk.len());
                let limit = self.backend.config.max_body_bytes;
                if u64::try_from(self.received).unwrap_or(u64::MAX) > limit {
                    // Dropping the response closes the connection.
                    return self.too_large(BodyLimit::Body, limit);
                }
                self.phase = Phase::Body(response);
                for event in self.parser.push(&chunk) {
                    if !self.event(event) {
                        return;
                    }
                }
                if self.parser.overflowed() {
                    let limit =
                        u64::try_from(event_limit(&self.backend.config)).unwrap_or(u64::MAX);
                    self.too_large(BodyLimit::Event, limit);
                }
            }
            Ok(Ok(None)) => {
                if let Some(event) = self.parser.finish() {
                    self.event(event);
                }
                self.finished();
            }
        }
    }

    /// Hands one event to the adapter; false once the stream is over.
    fn event(&mut self, event: SseEvent) -> bool {
        if event.is_done() {
            self.finished();
            return false;
        }
        let adapter = &self.backend.adapter;
        match adapter.stream_event(event.event.as_deref(), &event.data, &self.context) {
            Ok(events) => {
                self.pending.extend(events.into_iter().map(Ok));
                true
            }
            Err(e) => {
                self.fail(self.backend.finish_error(e, self.request));
                false
            }
        }
    }

    fn finished(&mut self) {
        debug!(
            provider = %self.context.provider,
            latency_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            response_bytes = self.received,
            "stream finished"
        );
        self.phase = Phase::Done;
    }

    fn fail(&mut self, error: Error) {
        self.phase = Phase::Done;
        self.pending.push_back(Err(error));
    }

    fn too_large(&mut self, which: BodyLimit, limit: u64) {
        debug!(
            provider = %self.context.provider,
            response_bytes = self.received,
            limit,
            "stream past its size limit"
        );
        self.fail(Error::BodyTooLarge {
            context: self.context.clone(),
            which,
            limit,
        });
    }
}

/// The per-event limit in effect: `max_event_bytes`, at most `max_body_bytes`.
fn event_limit(config: &super::HttpConfig) -> usize {
    let limit = config.max_event_bytes.min(config.max_body_bytes);
    usize::try_from(limit).unwrap_or(usize::MAX)
}
