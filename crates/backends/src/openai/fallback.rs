//! [`StructuredFallback`]: an OpenAI-compatible server asked for native structured output, falling
//! back (another dialect, a forced tool, the prompt) when the server rejects it, and remembering
//! what worked per base URL and model in a [`FallbackMemory`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::StreamExt as _;
use tracing::warn;

use super::OpenAiCompatible;
use super::dialect::{self, StructuredDialect};
use crate::{
    Backend, BoxFuture, BoxStream, Capabilities, ChatRequest, ChatResponse, Error, OutputMode,
    StreamEvent,
};

/// Called with the provider's name and what was learned when a server is found to need another
/// way than `json_schema`; the CLI persists it and tells the user.
pub type Listener = dyn Fn(&str, &Remembered) + Send + Sync;

/// What was learned about which servers take structured output how, keyed by base URL (without
/// credentials or query) and model. Shared by every [`StructuredFallback`] of a process; seed it
/// from a cache with [`FallbackMemory::with_entries`] and persist it from a listener.
#[derive(Default)]
pub struct FallbackMemory {
    entries: Mutex<BTreeMap<(String, String), StructuredDialect>>,
    listener: Option<Box<Listener>>,
}

/// One remembered fact: at `base_url`, `model` takes structured output as `dialect`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remembered {
    /// The server's base URL, as [`memory_key`] writes it.
    pub base_url: String,
    /// The model.
    pub model: String,
    /// What works.
    pub dialect: StructuredDialect,
}

/// An OpenAI-compatible backend whose native requests fall back when the server rejects them:
///
/// 1. the configured dialect (`json_schema` unless set otherwise);
/// 2. if the rejection says the server takes `json_object` (llama-cpp-python), the
///    [`StructuredDialect::JsonObjectSchema`] dialect: still native;
/// 3. with mode fallback on (the pipeline's automatic mode, the default): the schema as a forced
///    tool, then the schema in the system prompt.
///
/// A "rejection" is an [`Error::BadRequest`]: a 4xx, or a 5xx whose body names `response_format`,
/// `json_schema` or `json_object` (not retried). Other failures (authentication, network, rate
/// limits) return as they are. What worked is remembered per base URL and model; later requests go
/// straight to it, and [`Backend::capabilities`] reports it so automatic mode asks that way itself.
/// Each newly learned fact is logged once (`warn`) and passed to the memory's listener.
///
/// ```
/// use std::sync::Arc;
/// use claij_backends::Backend;
/// use claij_backends::openai::{FallbackMemory, OpenAiCompatible, StructuredDialect, StructuredFallback};
///
/// let memory = Arc::new(FallbackMemory::new());
/// memory.remember("http://127.0.0.1:8080/v1", "smol", StructuredDialect::Tools);
/// let backend = StructuredFallback::new(OpenAiCompatible::new("http://127.0.0.1:8080/v1"), memory);
/// assert!(!backend.capabilities("smol").native_json_schema);
/// assert!(backend.capabilities("smol").tools);
/// assert!(backend.capabilities("other").native_json_schema);
/// ```
pub struct StructuredFallback {
    inner: OpenAiCompatible,
    json_object: OpenAiCompatible,
    memory: Arc<FallbackMemory>,
    base_url: String,
    modes: AtomicBool,
}

impl FallbackMemory {
    /// An empty memory without a listener.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same memory holding `entries` (read from a cache).
    #[must_use]
    pub fn with_entries(self, entries: impl IntoIterator<Item = Remembered>) -> Self {
        {
            let mut map = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
            for entry in entries {
                map.insert((memory_key(&entry.base_url), entry.model), entry.dialect);
            }
        }
        self
    }

    /// The same memory calling `listener` with the provider's name and the new entry whenever it
    /// learns a dialect other than `json_schema` that it did not know.
    #[must_use]
    pub fn with_listener(
        mut self,
        listener: impl Fn(&str, &Remembered) + Send + Sync + 'static,
    ) -> Self {
        self.listener = Some(Box::new(listener));
        self
    }

    /// What works for `model` at `base_url`, if known.
    pub fn get(&self, base_url: &str, model: &str) -> Option<StructuredDialect> {
        let map = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(&(memory_key(base_url), model.to_owned())).copied()
    }

    /// Records that `model` at `base_url` takes structured output as `dialect`; whether that is
    /// news (a different or no previous entry).
    pub fn remember(&self, base_url: &str, model: &str, dialect: StructuredDialect) -> bool {
        let mut map = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let previous = map.insert((memory_key(base_url), model.to_owned()), dialect);
        previous != Some(dialect)
    }

    /// Every entry, ordered by base URL and model.
    pub fn entries(&self) -> Vec<Remembered> {
        let map = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        map.iter()
            .map(|((base_url, model), dialect)| Remembered {
                base_url: base_url.clone(),
                model: model.clone(),
                dialect: *dialect,
            })
            .collect()
    }

    fn learn(&self, provider: &str, base_url: &str, model: &str, dialect: StructuredDialect) {
        if !self.remember(base_url, model, dialect) || dialect == StructuredDialect::JsonSchema {
            return;
        }
        warn!(
            provider,
            model,
            structured_output = dialect.name(),
            "the server rejected structured output as json_schema; using this from now on"
        );
        if let Some(listener) = &self.listener {
            let entry = Remembered {
                base_url: memory_key(base_url),
                model: model.to_owned(),
                dialect,
            };
            listener(provider, &entry);
        }
    }
}

impl std::fmt::Debug for FallbackMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FallbackMemory")
            .field("entries", &self.entries())
            .field("listener", &self.listener.is_some())
            .finish()
    }
}

/// The memory's key for a base URL: without `user:password@`, query or fragment (they may hold
/// secrets, and the memory may be written to a file), and without a trailing `/`.
pub fn memory_key(base_url: &str) -> String {
    let url = base_url.split(['?', '#']).next().unwrap_or(base_url);
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let joined = if scheme.is_empty() {
        format!("{host}{path}")
    } else {
        format!("{scheme}://{host}{path}")
    };
    joined.trim_end_matches('/').to_owned()
}

impl StructuredFallback {
    /// `inner` with fallback, remembering in `memory` (share one per process).
    pub fn new(inner: OpenAiCompatible, memory: Arc<FallbackMemory>) -> Self {
        let mut json_object = inner.clone();
        json_object.adapter_mut().structured = StructuredDialect::JsonObjectSchema;
        let base_url = inner.config().base_url.clone();
        Self {
            inner,
            json_object,
            memory,
            base_url,
            modes: AtomicBool::new(true),
        }
    }

    /// Whether a rejected native request may fall back to a forced tool and then the prompt (on by
    /// default). Turn it off when native output was asked for explicitly: then only other native
    /// dialects are tried, and the rejection is the call's error.
    pub fn set_mode_fallback(&self, on: bool) {
        self.modes.store(on, Ordering::Relaxed);
    }

    /// The backend it wraps.
    pub fn inner(&self) -> &OpenAiCompatible {
        &self.inner
    }

    /// The memory it shares.
    pub fn memory(&self) -> &Arc<FallbackMemory> {
        &self.memory
    }

    fn remembered(&self, model: &str) -> Option<StructuredDialect> {
        self.memory.get(&self.base_url, model)
    }

    fn learn(&self, model: &str, dialect: StructuredDialect) {
        self.memory
            .learn(self.inner.provider(), &self.base_url, model, dialect);
    }

    /// The request as `dialect` asks it, and the backend to send it with; `None` for a dialect
    /// mode fallback may not use now.
    fn route<'a>(
        &'a self,
        request: &ChatRequest,
        dialect: StructuredDialect,
    ) -> Option<(&'a OpenAiCompatible, Option<ChatRequest>)> {
        let modes = self.modes.load(Ordering::Relaxed);
        match dialect {
            StructuredDialect::JsonObjectSchema => Some((&self.json_object, None)),
            StructuredDialect::Tools if modes => Some((&self.inner, Some(as_tool(request)))),
            StructuredDialect::Prompted if modes => Some((&self.inner, Some(as_prompted(request)))),
            _ => None,
        }
    }

    async fn call(&self, request: &ChatRequest) -> Result<ChatResponse, Error> {
        if !is_native(request) {
            return self.inner.complete(request).await;
        }
        let model = request.model.as_str();
        if let Some(dialect) = self.remembered(model)
            && let Some((backend, rewritten)) = self.route(request, dialect)
        {
            return backend
                .complete(rewritten.as_ref().unwrap_or(request))
                .await;
        }
        let error = match self.inner.complete(request).await {
            Ok(response) => {
                self.learn(model, self.inner.adapter().structured);
                return Ok(response);
            }
            Err(error) if dialect::rejects_native(&error) => error,
            Err(error) => return Err(error),
        };
        let mut candidates = Vec::with_capacity(3);
        if dialect::suggests_json_object(&error)
            && self.inner.adapter().structured != StructuredDialect::JsonObjectSchema
        {
            candidates.push(StructuredDialect::JsonObjectSchema);
        }
        if self.inner.adapter().capabilities.tools {
            candidates.push(StructuredDialect::Tools);
        }
        candidates.push(StructuredDialect::Prompted);
        let mut last = error;
        for dialect in candidates {
            let Some((backend, rewritten)) = self.route(request, dialect) else {
                continue;
            };
            match backend
                .complete(rewritten.as_ref().unwrap_or(request))
                .await
            {
                Ok(response) => {
                    self.learn(model, dialect);
                    return Ok(response);
                }
                Err(error) if dialect::rejects_native(&error) => last = error,
                Err(error) => return Err(error),
            }
        }
        Err(last)
    }
}

impl Backend for StructuredFallback {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn capabilities(&self, model: &str) -> Capabilities {
        let base = self.inner.capabilities(model);
        match self.remembered(model) {
            Some(dialect) => dialect.capabilities(base),
            None => base,
        }
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, Error>> {
        Box::pin(self.call(request))
    }

    /// Streams once the way to ask is known; the first native request to a server is sent whole
    /// (a rejection must be seen before anything is streamed), its answer given as a few events.
    fn stream<'a>(&'a self, request: &'a ChatRequest) -> BoxStream<'a, Result<StreamEvent, Error>> {
        if !is_native(request) {
            return self.inner.stream(request);
        }
        match self.remembered(&request.model) {
            Some(StructuredDialect::JsonSchema) => return self.inner.stream(request),
            Some(dialect) => {
                if let Some((backend, rewritten)) = self.route(request, dialect) {
                    return match rewritten {
                        None => backend.stream(request),
                        Some(rewritten) => owned_stream(backend, rewritten),
                    };
                }
            }
            None => {}
        }
        let events = async move {
            let events: Vec<Result<StreamEvent, Error>> = match self.call(request).await {
                Ok(response) => response_events(response),
                Err(e) => vec![Err(e)],
            };
            futures_util::stream::iter(events)
        };
        Box::pin(futures_util::stream::once(events).flatten())
    }
}

impl std::fmt::Debug for StructuredFallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuredFallback")
            .field("inner", &self.inner)
            .field("mode_fallback", &self.modes.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

fn is_native(request: &ChatRequest) -> bool {
    request
        .structured_output
        .as_ref()
        .is_some_and(|s| s.mode == OutputMode::Native)
}

/// The same request with the schema as a forced tool.
fn as_tool(request: &ChatRequest) -> ChatRequest {
    let mut request = request.clone();
    if let Some(structured) = &mut request.structured_output {
        structured.mode = OutputMode::Tool;
    }
    request
}

/// What the system prompt says when the schema moves into it.
const PROMPTED_INSTRUCTION: &str =
    "Reply with only a JSON value, no prose and no code fence, valid against this JSON Schema:";

/// The same request without structured output, the schema (minified) at the end of the system
/// prompt.
fn as_prompted(request: &ChatRequest) -> ChatRequest {
    let mut request = request.clone();
    if let Some(structured) = request.structured_output.take() {
        let mut system = request.system.take().unwrap_or_default();
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(PROMPTED_INSTRUCTION);
        system.push('\n');
        system.push_str(&structured.schema.to_string());
        request.system = Some(system);
    }
    request
}

/// `backend`'s stream for a request this call made, so owns: collected while both live, then
/// replayed (only the retries of the call that learned a fallback get here; later calls ask that
/// way themselves and stream directly).
fn owned_stream(
    backend: &OpenAiCompatible,
    request: ChatRequest,
) -> BoxStream<'_, Result<StreamEvent, Error>> {
    let events = async move {
        let events: Vec<Result<StreamEvent, Error>> = backend.stream(&request).collect().await;
        futures_util::stream::iter(events)
    };
    Box::pin(futures_util::stream::once(events).flatten())
}

/// A whole response as stream events.
fn response_events(response: ChatResponse) -> Vec<Result<StreamEvent, Error>> {
    let mut out = Vec::with_capacity(4);
    if let Some(model) = response.model {
        out.push(Ok(StreamEvent::Model(model)));
    }
    out.push(Ok(StreamEvent::Text(response.content)));
    out.push(Ok(StreamEvent::Usage(response.usage)));
    out.push(Ok(StreamEvent::Finish(response.finish_reason)));
    out
}

#[cfg(test)]
mod tests;
