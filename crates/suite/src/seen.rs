//! A backend wrapper that keeps every request it forwards, so a suite can check what the model was
//! actually sent (which mechanism carried a fact), not only what it answered.

use std::sync::{Arc, Mutex, PoisonError};

use claij_backends::{
    Backend, BoxFuture, BoxStream, Capabilities, ChatRequest, ChatResponse, Error, StreamEvent,
};

/// Forwards every call to `inner` unchanged and keeps a copy of its request, in order.
pub(crate) struct Seen {
    inner: Arc<dyn Backend>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl Seen {
    /// A wrapper around `inner` that has seen nothing yet.
    pub(crate) fn new(inner: Arc<dyn Backend>) -> Self {
        Self {
            inner,
            requests: Mutex::new(Vec::new()),
        }
    }

    /// How many requests were sent so far.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// The requests sent from the `from`-th on (0 for all), oldest first.
    pub(crate) fn since(&self, from: usize) -> Vec<ChatRequest> {
        self.lock()
            .get(from..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ChatRequest>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn keep(&self, request: &ChatRequest) {
        self.lock().push(request.clone());
    }
}

impl Backend for Seen {
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
        self.keep(request);
        self.inner.complete(request)
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest) -> BoxStream<'a, Result<StreamEvent, Error>> {
        self.keep(request);
        self.inner.stream(request)
    }
}
