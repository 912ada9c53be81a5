//! [`CancelToken`]: cancel calls from elsewhere; [`Cancellable`]: any backend, cancellable by a token.

use std::future::Future;
use std::sync::Arc;

use futures_util::StreamExt as _;
use tokio::sync::watch;

use crate::{
    Backend, BoxFuture, BoxStream, Capabilities, ChatRequest, ChatResponse, Error, ErrorContext,
    StreamEvent,
};

/// A handle that cancels the calls started with it. Clones share the state: cancel one, cancel all.
///
/// A call running under a cancelled token returns [`Error::Cancelled`] at its next poll (the request
/// in flight is dropped, closing its connection); a call started with an already cancelled token
/// sends nothing. A token stays cancelled.
///
/// ```
/// use claij_backends::http::CancelToken;
///
/// let token = CancelToken::new();
/// let handle = token.clone();
/// assert!(!token.is_cancelled());
/// handle.cancel();
/// assert!(token.is_cancelled());
/// ```
#[derive(Debug, Clone)]
pub struct CancelToken {
    state: Arc<watch::Sender<bool>>,
}

/// A backend whose calls end with [`Error::Cancelled`] once its token is cancelled. It works with
/// any backend, so a pipeline holding `Arc<dyn Backend>` can be stopped from outside.
///
/// ```no_run
/// # #[cfg(feature = "openrouter")] {
/// use claij_backends::http::{CancelToken, Cancellable};
/// use claij_backends::{ApiKey, openai::OpenRouter};
///
/// let token = CancelToken::new();
/// let backend = Cancellable::new(OpenRouter::new(ApiKey::new("sk-or-...")), token.clone());
/// // ... hand `backend` to a pipeline; from another task:
/// token.cancel();
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Cancellable<B> {
    inner: B,
    token: CancelToken,
}

impl CancelToken {
    /// A token not cancelled yet.
    pub fn new() -> Self {
        Self {
            state: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Cancels every call running or started under this token (or a clone of it).
    pub fn cancel(&self) {
        self.state.send_replace(true);
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        *self.state.borrow()
    }

    /// Completes once the token is cancelled.
    pub async fn cancelled(&self) {
        let mut changes = self.state.subscribe();
        // The sender lives as long as `self`, so this only ends by cancellation.
        let _ = changes.wait_for(|cancelled| *cancelled).await;
    }

    /// `work`'s output, or [`Error::Cancelled`] in `context` once the token is cancelled (then `work`
    /// is dropped).
    pub async fn run<T>(
        &self,
        context: ErrorContext,
        work: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        if self.is_cancelled() {
            return Err(Error::Cancelled { context });
        }
        tokio::select! {
            biased;
            () = self.cancelled() => Err(Error::Cancelled { context }),
            result = work => result,
        }
    }
}

impl Default for CancelToken {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Backend> Cancellable<B> {
    /// `inner`, cancelled by `token`.
    pub fn new(inner: B, token: CancelToken) -> Self {
        Self { inner, token }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// The token.
    pub fn token(&self) -> &CancelToken {
        &self.token
    }
}

impl<B: Backend> Backend for Cancellable<B> {
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
        let context = ErrorContext::new(self.inner.provider());
        Box::pin(self.token.run(context, self.inner.complete(request)))
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest) -> BoxStream<'a, Result<StreamEvent, Error>> {
        let state = (self.inner.stream(request), self.token.clone(), false);
        let provider = self.inner.provider();
        Box::pin(futures_util::stream::unfold(
            state,
            move |(mut inner, token, done)| async move {
                if done {
                    return None;
                }
                let context = ErrorContext::new(provider);
                let next = token.run(context, async { Ok(inner.next().await) }).await;
                match next {
                    Ok(Some(item)) => Some((item, (inner, token, false))),
                    Ok(None) => None,
                    Err(cancelled) => Some((Err(cancelled), (inner, token, true))),
                }
            },
        ))
    }
}
