//! Test support for claij's crates (`publish = false`, a dev-dependency only): [`Scripted`], a
//! backend that answers from a script and records every request, for offline tests; [`is_ci`], the
//! one definition of "this is a CI run" the workspace's tests share; [`local_model_or_skip`], how a
//! model test finds the embedded model (a failure under CI when it is missing); [`lookup`], an
//! environment of a test's own; [`spans::SpanCapture`], a `tracing` layer that records spans and
//! events; [`net`], free loopback ports and the sockets a process listens on, for tests that start
//! real servers; [`secrets`], every form of a secret the redaction rules remove; [`harness`], a
//! binary of the workspace run as its integration tests run it; [`mcp`], where the tests find
//! the MCP test servers and the conformance suite; [`server`], a real server process a test starts
//! and waits on; and [`chroma`], a Chroma vector database server started from its cache.
//!
//! ```
//! use claij_backends::{Backend, ChatRequest, Message};
//! use claij_test_support::{Scripted, is_ci, lookup};
//!
//! let backend = Scripted::replies([r#"{"answer": "4", "state": "done"}"#]);
//! let request = ChatRequest::new("any-model").message(Message::user("What is 2+2?"));
//! let response = futures_executor::block_on(backend.complete(&request))?;
//! assert_eq!(response.content, r#"{"answer": "4", "state": "done"}"#);
//! assert_eq!(backend.requests()[0].messages[0].content, "What is 2+2?");
//! assert!(is_ci(lookup(&[("CI", "true")])));
//! # Ok::<(), claij_backends::Error>(())
//! ```
//!
//! It depends on claij-backends (without its adapters) and never on claij-local, so claij-backends'
//! tree, dev-dependencies included, holds no candle: the model's path comes from the caller.

pub mod chroma;
pub mod harness;
pub mod mcp;
mod model;
pub mod net;
pub mod secrets;
pub mod server;
pub mod spans;

pub use model::local_model_or_skip;

use std::collections::VecDeque;
use std::ffi::OsString;
use std::sync::{Arc, Mutex, PoisonError};

use claij_backends::{
    Backend, BoxFuture, Capabilities, ChatRequest, ChatResponse, Error, ErrorContext, Usage,
};

type Responder = dyn Fn(&ChatRequest, usize) -> Result<ChatResponse, Error> + Send + Sync;

/// A backend that replies from a list (in order) or a closure, and records every request it gets.
///
/// Each reply gets a made-up [`Usage`] (a token per four bytes) unless the scripted response has one.
/// A list that runs out answers with [`Error::Other`], so a test that calls too often fails clearly.
///
/// ```
/// use claij_backends::{Backend, ChatRequest, ChatResponse, FinishReason};
/// use claij_test_support::Scripted;
///
/// let backend = Scripted::new([
///     Ok(ChatResponse::text("{\"answer\": ").finish_reason(FinishReason::Length)),
///     Ok(ChatResponse::text("{\"answer\": \"ok\", \"state\": \"done\"}")),
/// ]);
/// let first = futures_executor::block_on(backend.complete(&ChatRequest::new("m")))?;
/// assert_eq!(first.finish_reason, FinishReason::Length);
/// assert_eq!(backend.calls(), 1);
/// # Ok::<(), claij_backends::Error>(())
/// ```
#[derive(Clone)]
pub struct Scripted {
    inner: Arc<Inner>,
}

struct Inner {
    script: Script,
    capabilities: Capabilities,
    provider: String,
    requests: Mutex<Vec<ChatRequest>>,
}

enum Script {
    List(Mutex<VecDeque<Result<ChatResponse, Error>>>),
    Closure(Box<Responder>),
}

impl Scripted {
    /// Replies from a list, in order.
    pub fn new(replies: impl IntoIterator<Item = Result<ChatResponse, Error>>) -> Self {
        Self::with_script(Script::List(Mutex::new(replies.into_iter().collect())))
    }

    /// Text replies, in order, each finishing normally.
    pub fn replies<S: Into<String>>(replies: impl IntoIterator<Item = S>) -> Self {
        Self::new(replies.into_iter().map(|r| Ok(ChatResponse::text(r))))
    }

    /// Replies computed from the request and the call's index (0 for the first call).
    pub fn from_fn(
        f: impl Fn(&ChatRequest, usize) -> Result<ChatResponse, Error> + Send + Sync + 'static,
    ) -> Self {
        Self::with_script(Script::Closure(Box::new(f)))
    }

    fn with_script(script: Script) -> Self {
        Self {
            inner: Arc::new(Inner {
                script,
                capabilities: Capabilities::prompted(),
                provider: "scripted".to_owned(),
                requests: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The same backend reporting other capabilities (for example native JSON Schema support).
    ///
    /// # Panics
    ///
    /// Never; call it before sharing the backend (a shared backend keeps its capabilities).
    #[must_use]
    pub fn with_capabilities(self, capabilities: Capabilities) -> Self {
        self.map_inner(|inner| inner.capabilities = capabilities)
    }

    /// The same backend under another provider name.
    #[must_use]
    pub fn with_provider(self, provider: impl Into<String>) -> Self {
        let provider = provider.into();
        self.map_inner(|inner| inner.provider = provider)
    }

    fn map_inner(self, f: impl FnOnce(&mut Inner)) -> Self {
        match Arc::try_unwrap(self.inner) {
            Ok(mut inner) => {
                f(&mut inner);
                Self {
                    inner: Arc::new(inner),
                }
            }
            // Already shared: leave it as it is rather than fork the script.
            Err(inner) => Self { inner },
        }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.inner
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many requests were received.
    pub fn calls(&self) -> usize {
        self.inner
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    fn answer(&self, request: &ChatRequest) -> Result<ChatResponse, Error> {
        let index = {
            let mut requests = self
                .inner
                .requests
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            requests.push(request.clone());
            requests.len() - 1
        };
        let reply = match &self.inner.script {
            Script::List(list) => list
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front()
                .unwrap_or_else(|| {
                    Err(Error::Other {
                        context: ErrorContext::new(self.inner.provider.clone()),
                        message: format!("the script has no reply for call {}", index + 1),
                    })
                }),
            Script::Closure(f) => f(request, index),
        };
        reply.map(|mut response| {
            if response.usage == Usage::default() {
                response.usage = Usage {
                    input_tokens: (request.text_len() / 4) as u64,
                    output_tokens: (response.content.len() / 4) as u64,
                    ..Usage::default()
                };
            }
            response
        })
    }
}

impl Backend for Scripted {
    fn provider(&self) -> &str {
        &self.inner.provider
    }

    fn capabilities(&self, _model: &str) -> Capabilities {
        self.inner.capabilities
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, Error>> {
        let reply = self.answer(request);
        Box::pin(std::future::ready(reply))
    }
}

impl std::fmt::Debug for Scripted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripted")
            .field("provider", &self.inner.provider)
            .field("calls", &self.calls())
            .finish_non_exhaustive()
    }
}

/// Whether `CI` (looked up with `var`, say `std::env::var_os`) says this is a CI run: `true` (in any
/// case) or `1`, as CI services set it. Under CI a test that needs something missing (the model, the
/// MCP servers) fails instead of skipping.
///
/// ```
/// use claij_test_support::is_ci;
/// assert!(is_ci(|_| Some("true".into())));
/// assert!(!is_ci(|_| Some("false".into())));
/// assert!(!is_ci(|_| None));
/// ```
pub fn is_ci(var: impl Fn(&str) -> Option<OsString>) -> bool {
    var("CI").is_some_and(|value| value.eq_ignore_ascii_case("true") || value == "1")
}

/// A variable lookup that knows only `vars` (the first of a repeated name wins), for code that
/// takes its environment as a lookup (`var`) rather than reading the process's.
///
/// ```
/// use claij_test_support::lookup;
///
/// let var = lookup(&[("CI", "1"), ("HOME", "/home/ada")]);
/// assert_eq!(var("HOME"), Some("/home/ada".into()));
/// assert_eq!(var("PATH"), None);
/// ```
pub fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + Clone + use<> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| {
        vars.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| OsString::from(v))
    }
}

#[cfg(test)]
mod tests;
