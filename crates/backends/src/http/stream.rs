//! Streaming: open the response (with the same retries as a complete call), cut its body into
//! server-sent events, and let the adapter say what each one means.
//!
//! An error that ends the stream before any of its content (a text, a tool call, a finish) reached
//! the caller is retried like a failed exchange, under the same policy and request count: Anthropic's
//! `event: error` with an `overloaded_error` right after `message_start`, an OpenRouter error chunk,
//! a connection that breaks before the first token. The events that carry no content (the response
//! id, the model, usage) are held back until the first content event, so a retried stream shows
//! nothing of the failed one. Once content was delivered the stream cannot be sent again without the
//! caller seeing it twice: the error ends it, and the caller decides ([`Error::is_retryable`]; the
//! pipeline sends the attempt again).
//!
//! A content filter's finish before any of the answer (OpenAI's `finish_reason: "content_filter"`
//! on an empty stream) ends the stream with [`Error::Refused`], as the same complete reply does.

use std::collections::VecDeque;
use std::time::Instant;

use tracing::{Instrument as _, debug};

use super::lanes::Lease;
use super::retry::Retrier;
use super::sse::{SseEvent, SseParser};
use super::{CancelToken, HttpBackend, Prepared, transport};
use crate::response::CONTENT_FILTERED;
use crate::{
    Adapter, BodyLimit, BoxStream, ChatRequest, Error, ErrorContext, FinishReason, StreamEvent,
};

/// Where a stream is.
enum Phase {
    /// Nothing sent yet.
    Start,
    /// Reading the body.
    Body(transport::Reply),
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
    /// The request, built once for every HTTP request of the stream.
    prepared: Option<Prepared>,
    /// Which HTTP request the stream is on, and the policy's bounds.
    retrier: Retrier<'a>,
    /// The span of the HTTP request whose body is being read.
    span: tracing::Span,
    /// Events without content (id, model, usage) read before any content: delivered with the first
    /// content event, dropped when the request is sent again.
    held: Vec<StreamEvent>,
    /// Whether content reached the caller: from then on the stream cannot be sent again.
    delivered: bool,
    /// The client the stream's requests go through, counted on its lane while the stream lives.
    lease: Option<Lease>,
    /// Whether any of the answer came (text that is not blank, a tool call): a content filter's
    /// finish before it is a refusal, not an empty reply.
    answered: bool,
}

/// What one event of the body did to the stream.
enum Flow {
    /// Read on.
    More,
    /// The stream is over.
    Over,
    /// The stream failed with this error.
    Failed(Error),
}

/// The events of one streamed call. After an error the stream ends.
pub(super) fn events<'a, A: Adapter>(
    backend: &'a HttpBackend<A>,
    request: &'a ChatRequest,
    cancel: Option<CancelToken>,
) -> BoxStream<'a, Result<StreamEvent, Error>> {
    let context = ErrorContext::new(backend.adapter.provider());
    let state = State {
        backend,
        request,
        cancel,
        phase: Phase::Start,
        parser: SseParser::with_max_event(event_limit(&backend.config)),
        pending: VecDeque::new(),
        retrier: Retrier::new(&backend.config.retry, &context, &request.model),
        context,
        started: Instant::now(),
        received: 0,
        prepared: None,
        span: tracing::Span::none(),
        held: Vec::new(),
        delivered: false,
        answered: false,
        lease: None,
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
        let prepared = match self.prepared.take() {
            Some(prepared) => Ok(prepared),
            None => backend.prepare(request, true),
        };
        let lease = match self.lease.take() {
            Some(lease) => Ok(lease),
            None => backend.client(),
        };
        let opened = match (prepared, lease) {
            (Ok(prepared), Ok(lease)) => {
                let opened = self.open_with(&lease, &prepared).await;
                self.prepared = Some(prepared);
                self.lease = Some(lease);
                opened
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
        match opened {
            Ok((response, context)) => {
                self.context = context;
                self.phase = Phase::Body(response);
            }
            Err(e) => self.fail(backend.finish_error(e, request)),
        }
    }

    /// Sends the request until a 2xx response opens the stream, as the retry policy allows.
    async fn open_with(
        &mut self,
        client: &Lease,
        prepared: &Prepared,
    ) -> Result<(transport::Reply, ErrorContext), Error> {
        let model = &self.request.model;
        loop {
            let span = self.retrier.span();
            let sent = transport::open_stream(self.backend, client, prepared, model)
                .instrument(span.clone())
                .await;
            match sent {
                Ok(opened) => {
                    self.span = span;
                    return Ok(opened);
                }
                Err(error) => self.retrier.failed(&span, error).await?,
            }
        }
    }

    async fn read(&mut self, mut response: transport::Reply) {
        let timeout = self.backend.config.request_timeout;
        let flow = match tokio::time::timeout(timeout, response.chunk()).await {
            Err(_) => Flow::Failed(Error::Timeout {
                context: self.context.clone(),
                after: timeout,
            }),
            Ok(Err(e)) => Flow::Failed(transport::body_error(&e, self.context.clone(), timeout)),
            Ok(Ok(Some(chunk))) => {
                self.received = self.received.saturating_add(chunk.len());
                let limit = self.backend.config.max_body_bytes;
                if u64::try_from(self.received).unwrap_or(u64::MAX) > limit {
                    // Dropping the response closes the connection.
                    return self.too_large(BodyLimit::Body, limit);
                }
                self.phase = Phase::Body(response);
                let mut flow = Flow::More;
                for event in self.parser.push(&chunk) {
                    flow = self.event(event);
                    if !matches!(flow, Flow::More) {
                        break;
                    }
                }
                if matches!(flow, Flow::More) && self.parser.overflowed() {
                    let limit =
                        u64::try_from(event_limit(&self.backend.config)).unwrap_or(u64::MAX);
                    return self.too_large(BodyLimit::Event, limit);
                }
                flow
            }
            Ok(Ok(None)) => match self.parser.finish().map(|event| self.event(event)) {
                Some(Flow::Failed(error)) => Flow::Failed(error),
                _ => Flow::Over,
            },
        };
        match flow {
            Flow::More => {}
            Flow::Over => self.finished(),
            Flow::Failed(error) => self.failed(error).await,
        }
    }

    /// Hands one event to the adapter.
    fn event(&mut self, event: SseEvent) -> Flow {
        if event.is_done() {
            return Flow::Over;
        }
        let adapter = &self.backend.adapter;
        match adapter.stream_event(event.event.as_deref(), &event.data, &self.context) {
            Ok(events) => {
                for event in events {
                    match &event {
                        StreamEvent::Text(text) if text.trim().is_empty() => {}
                        StreamEvent::Finish(FinishReason::ContentFilter) if !self.answered => {
                            return Flow::Failed(Error::Refused {
                                context: self.context.clone(),
                                message: CONTENT_FILTERED.to_owned(),
                            });
                        }
                        StreamEvent::Text(_)
                        | StreamEvent::ToolInput(_)
                        | StreamEvent::ToolCall { .. }
                        | StreamEvent::ToolCallInput { .. } => self.answered = true,
                        _ => {}
                    }
                    self.deliver(event);
                }
                Flow::More
            }
            Err(e) => Flow::Failed(e),
        }
    }

    /// An event for the caller: held back while the stream has shown no content.
    fn deliver(&mut self, event: StreamEvent) {
        let content = !matches!(
            event,
            StreamEvent::ResponseId(_) | StreamEvent::Model(_) | StreamEvent::Usage(_)
        );
        if !self.delivered && !content {
            self.held.push(event);
            return;
        }
        if !self.delivered {
            self.delivered = true;
            self.pending.extend(self.held.drain(..).map(Ok));
        }
        self.pending.push_back(Ok(event));
    }

    /// The stream failed: sent again when nothing of it reached the caller and the retry policy
    /// allows, else ended with the error.
    async fn failed(&mut self, error: Error) {
        self.phase = Phase::Done;
        if self.delivered {
            let mut error = error;
            error.context_mut().requests = self.retrier.request();
            return self.fail(self.backend.finish_error(error, self.request));
        }
        let span = self.span.clone();
        match self.retrier.failed(&span, error).await {
            Ok(()) => {
                self.held.clear();
                self.received = 0;
                self.parser = SseParser::with_max_event(event_limit(&self.backend.config));
                self.context = ErrorContext::new(self.backend.adapter.provider());
                self.phase = Phase::Start;
            }
            Err(error) => self.fail(self.backend.finish_error(error, self.request)),
        }
    }

    fn finished(&mut self) {
        // A stream with no content ends with what it held.
        self.pending.extend(self.held.drain(..).map(Ok));
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
