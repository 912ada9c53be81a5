//! [`HttpBackend`]: any [`Adapter`] over HTTP, with timeouts, retries, cancellation, streaming and a
//! pre-flight check, so each provider only writes its pure wire translations.
//!
//! One call goes: pre-flight check (no IO) → [`Adapter::transform_request`] → `POST base_url + path`
//! with the key in headers marked sensitive → a 2xx body through [`Adapter::transform_response`], any
//! other through [`Adapter::classify_error`]. Failures that may pass (HTTP 429, 500, 502, 503, 504,
//! 529, a broken connection, a timeout) are retried as the [`RetryPolicy`] says; the rest return at
//! once. Every error names the provider, the HTTP status and the request id, and has the key scrubbed
//! from any text the server echoed.
//!
//! Cancellation: dropping the future aborts the request (the connection is closed). To cancel from
//! elsewhere, pass a [`CancelToken`] to [`HttpBackend::complete_with`] or [`HttpBackend::stream_with`],
//! or wrap any backend in [`Cancellable`]; after [`CancelToken::cancel`] the call returns
//! [`Error::Cancelled`] at its next poll, well within 100 ms, also while it waits to retry.
//!
//! Limits: a response body (an error body too) may have at most [`HttpConfig::max_body_bytes`]
//! (32 MiB by default); a stream at most that many bytes in all and
//! [`HttpConfig::max_event_bytes`] (4 MiB) in one event. Bodies are counted while they are read, so
//! an endless or huge response ends in [`Error::BodyTooLarge`] naming the limit, with no more than the
//! limit held in memory. A wait the server asks for is honoured exactly when it fits the retry
//! budget ([`RetryPolicy::max_total`]); otherwise the call fails at once saying so.
//!
//! Gateways: [`HttpConfig::headers`] and [`HttpConfig::query`] are added to every request (a
//! gateway's key such as Helicone's `Helicone-Auth` or Portkey's `x-portkey-api-key`, Azure
//! OpenAI's `api-version`), and [`HttpConfig::auth_header`] puts the key in a header of another name,
//! bare (Azure's `api-key`). A query string in the base URL stays after the adapter's path. Secret
//! values ([`Extra::is_secret`]) are sent as sensitive headers and scrubbed from errors like the key.
//!
//! Cost: every response's [`Usage::cost_usd`](crate::Usage::cost_usd) is filled in from the
//! backend's price table (the built-in [`ModelTable`] unless
//! [`HttpBackend::with_prices`] gives another), unless the provider reported its own (OpenRouter's
//! `usage.cost`), which wins; a model without a known price keeps an unknown cost. A stream's usage
//! events carry the cost of the usage seen so far.
//!
//! Logs (`tracing`): `debug` for request and response sizes, status and latency, `warn` for each
//! retry with its wait. Headers, bodies and keys are never logged.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tracing::debug;

use crate::{
    Adapter, ApiKey, Backend, BoxFuture, BoxStream, Capabilities, ChatRequest, ChatResponse, Error,
    ErrorContext, ModelTable, StreamEvent, Usage,
};

mod cancel;
mod direct;
mod extra;
mod lanes;
mod retry;
mod sse;
mod stream;
mod transport;

pub use cancel::{CancelToken, Cancellable};
pub use extra::{Extra, HeaderProblem, check_header_name, check_header_value, is_secret_name};
pub use retry::RetryPolicy;

/// A check run on every request before anything is sent, such as a token estimate against the
/// model's context window. Return an error (say [`Error::ContextLengthExceeded`]) to stop the call.
pub type Preflight = Arc<dyn Fn(&ChatRequest) -> Result<(), Error> + Send + Sync>;

/// Where and how an [`HttpBackend`] connects.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The API's base URL; the adapter's path is appended (`https://api.openai.com/v1`).
    pub base_url: String,
    /// The longest a TCP and TLS connect may take.
    pub connect_timeout: Duration,
    /// The longest one HTTP request may take, from sending to the last byte of the response. For a
    /// stream: to the response headers, then the longest silence between two chunks.
    pub request_timeout: Duration,
    /// When and how often to retry.
    pub retry: RetryPolicy,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// The most bytes one response body may have (an error body too), and the most one stream may
    /// deliver in all. Reading stops there with [`Error::BodyTooLarge`]; nothing past it is held.
    pub max_body_bytes: u64,
    /// The most bytes one server-sent event of a stream may have (at most `max_body_bytes` takes
    /// effect).
    pub max_event_bytes: u64,
    /// Headers added to every request besides the adapter's, in order. A name the adapter or claij
    /// sets too is refused when the request is prepared ([`Error::BadRequest`]), so nothing is
    /// overridden silently.
    pub headers: Vec<Extra>,
    /// Query parameters appended to every request's URL, encoded, in order.
    pub query: Vec<Extra>,
    /// The header that carries the key, bare (`api-key` for Azure OpenAI); `None`: the adapter's
    /// own (`Authorization: Bearer ...` for OpenAI).
    pub auth_header: Option<String>,
    /// Which HTTP version to speak.
    pub http_version: HttpVersion,
    /// The most calls one HTTP/2 connection carries at once: past it, calls go over another
    /// connection (another lane of the backend's) rather than queue behind the server's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`. HTTP/2 driven directly (`http2` on plain http) also keeps
    /// under the server's limit once it has seen it; through reqwest, set it at or below that
    /// limit. Unused over HTTP/1.1, where each call in flight has a connection of its own.
    pub streams_per_connection: u32,
}

/// Which HTTP version an [`HttpBackend`] speaks ([`HttpConfig::http_version`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum HttpVersion {
    /// `"auto"`: over TLS, HTTP/2 when the server offers it (ALPN), else HTTP/1.1; over plain
    /// `http://`, HTTP/1.1.
    #[default]
    Auto,
    /// `"http1"`: HTTP/1.1 only, never HTTP/2 (one connection per call in flight).
    Http1,
    /// `"http2"`: HTTP/2 only, on plain `http://` too by prior knowledge (h2c: a local server
    /// that speaks it); a server that does not speak HTTP/2 fails the call.
    Http2,
}

impl HttpVersion {
    /// Every version, in the order the configuration lists them.
    pub const ALL: [HttpVersion; 3] = [HttpVersion::Auto, HttpVersion::Http1, HttpVersion::Http2];

    /// The value as the configuration writes it: `auto`, `http1` or `http2`.
    pub fn name(self) -> &'static str {
        match self {
            HttpVersion::Auto => "auto",
            HttpVersion::Http1 => "http1",
            HttpVersion::Http2 => "http2",
        }
    }
}

impl fmt::Display for HttpVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for HttpVersion {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        HttpVersion::ALL
            .into_iter()
            .find(|version| version.name() == text)
            .ok_or_else(|| format!("expected \"auto\", \"http1\" or \"http2\", not {text:?}"))
    }
}

/// The default [`HttpConfig::streams_per_connection`]: 100, the least a server should allow
/// (RFC 9113, section 6.5.2).
pub const DEFAULT_STREAMS_PER_CONNECTION: u32 = 100;

/// The default [`HttpConfig::max_body_bytes`]: 32 MiB, far above any answer a model can write.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 32 * 1024 * 1024;

/// The default [`HttpConfig::max_event_bytes`]: 4 MiB, room for a whole answer sent as one event.
pub const DEFAULT_MAX_EVENT_BYTES: u64 = 4 * 1024 * 1024;

/// A [`Backend`] that drives an [`Adapter`] over HTTP.
///
/// Clones share one connection pool. Provider modules name their instances (`openai::OpenRouter` is
/// `HttpBackend<OpenRouterAdapter>`) and add constructors; any adapter can be used directly:
///
/// ```no_run
/// # #[cfg(feature = "openai")] {
/// use std::time::Duration;
/// use claij_backends::http::{HttpBackend, HttpConfig, RetryPolicy};
/// use claij_backends::openai::CompatibleAdapter;
///
/// let config = HttpConfig::new("http://127.0.0.1:8080/v1")
///     .with_request_timeout(Duration::from_secs(30))
///     .with_retry(RetryPolicy::none());
/// let backend = HttpBackend::from_adapter(CompatibleAdapter::default(), config);
/// # let _ = backend;
/// # }
/// ```
#[derive(Clone)]
pub struct HttpBackend<A> {
    adapter: A,
    key: Option<ApiKey>,
    config: HttpConfig,
    /// The lanes calls go over (reqwest clients, each with its pool, or HTTP/2 connections driven
    /// directly: one over HTTP/1.1; over HTTP/2, one per `streams_per_connection` calls in flight),
    /// opened on first use; clones share them.
    lanes: Arc<lanes::Lanes>,
    preflight: Option<Preflight>,
    /// The prices each response's usage is priced at (this provider's entries); `None`: responses
    /// keep the cost the provider reported, if any.
    prices: Option<Arc<ModelTable>>,
    /// What every request of this backend shares, built on first use and again after a change of
    /// configuration, key or adapter: the headers and the URL of each path.
    fixed: Fixed,
}

/// The parts of a request that do not change between calls: the static headers (content type,
/// extra headers, the key) and the URL of each adapter path, parsed once.
#[derive(Clone, Default)]
struct Fixed {
    headers: Arc<OnceLock<Result<FixedHeaders, String>>>,
    urls: Arc<Mutex<HashMap<String, Arc<reqwest::Url>>>>,
}

/// The content type and extra headers, then the key's headers (sent after the adapter's).
#[derive(Clone)]
struct FixedHeaders {
    base: HeaderMap,
    auth: Vec<(HeaderName, HeaderValue)>,
    /// `base` and `auth` together: the headers of every call to which the adapter adds none,
    /// shared by those calls rather than copied into each.
    all: Arc<HeaderMap>,
}

/// The most adapter paths whose URL is kept (Gemini has one per model and way of calling).
const MAX_CACHED_URLS: usize = 64;

/// A request ready to send: built once per call, sent once per HTTP request (retries share the
/// body's bytes).
struct Prepared {
    /// Shared with the backend's cache of URLs (a call in flight holds no copy).
    url: Arc<reqwest::Url>,
    headers: Arc<HeaderMap>,
    body: bytes::Bytes,
}

impl HttpConfig {
    /// Defaults for `base_url`: connect within 10 s, each request within 300 s, the default
    /// [`RetryPolicy`], `claij/<version>` as the user agent, bodies up to
    /// [`DEFAULT_MAX_BODY_BYTES`] and events up to [`DEFAULT_MAX_EVENT_BYTES`].
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(300),
            retry: RetryPolicy::default(),
            user_agent: concat!("claij/", env!("CARGO_PKG_VERSION")).to_owned(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            headers: Vec::new(),
            query: Vec::new(),
            auth_header: None,
            http_version: HttpVersion::Auto,
            streams_per_connection: DEFAULT_STREAMS_PER_CONNECTION,
        }
    }

    /// The same configuration speaking `version`.
    #[must_use]
    pub fn with_http_version(mut self, version: HttpVersion) -> Self {
        self.http_version = version;
        self
    }

    /// The same configuration with another [`HttpConfig::streams_per_connection`] (0 counts as 1).
    #[must_use]
    pub fn with_streams_per_connection(mut self, streams: u32) -> Self {
        self.streams_per_connection = streams;
        self
    }

    /// Whether a connection may speak HTTP/2: `http2`, or `auto` over TLS.
    fn may_speak_http2(&self) -> bool {
        match self.http_version {
            HttpVersion::Http1 => false,
            HttpVersion::Http2 => true,
            HttpVersion::Auto => self
                .base_url
                .get(..8)
                .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://")),
        }
    }

    /// The same configuration adding a header to every request, secret when its name looks secret
    /// ([`Extra::new`]).
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push(Extra::new(name, value));
        self
    }

    /// The same configuration adding `extra` ([`Extra::secret`] for a secret value) to
    /// [`HttpConfig::headers`].
    #[must_use]
    pub fn with_extra_header(mut self, extra: Extra) -> Self {
        self.headers.push(extra);
        self
    }

    /// The same configuration adding a query parameter to every request, secret when its name
    /// looks secret ([`Extra::new`]).
    #[must_use]
    pub fn with_query(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.query.push(Extra::new(name, value));
        self
    }

    /// The same configuration adding `extra` to [`HttpConfig::query`].
    #[must_use]
    pub fn with_extra_query(mut self, extra: Extra) -> Self {
        self.query.push(extra);
        self
    }

    /// The same configuration sending the key bare in the header `name` instead of the adapter's
    /// auth headers (Azure OpenAI: `api-key`).
    #[must_use]
    pub fn with_auth_header(mut self, name: impl Into<String>) -> Self {
        self.auth_header = Some(name.into());
        self
    }

    /// The same configuration with another limit on a response body (and on a whole stream).
    #[must_use]
    pub fn with_max_body_bytes(mut self, limit: u64) -> Self {
        self.max_body_bytes = limit;
        self
    }

    /// The same configuration with another limit on one server-sent event.
    #[must_use]
    pub fn with_max_event_bytes(mut self, limit: u64) -> Self {
        self.max_event_bytes = limit;
        self
    }

    /// The same configuration with another base URL.
    #[must_use]
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// The same configuration with another connect timeout.
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The same configuration with another per-request timeout.
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The same configuration with another retry policy.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The same configuration with another user agent.
    #[must_use]
    pub fn with_user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = user_agent.into();
        self
    }
}

impl<A: Adapter> HttpBackend<A> {
    /// A backend for `adapter`, without a key (add one with [`HttpBackend::with_key`]).
    ///
    /// It checks every request against the built-in [`ModelTable`] before sending: a prompt that
    /// cannot fit the model's context window fails with [`Error::ContextLengthExceeded`] and costs
    /// nothing. Replace the check with [`HttpBackend::with_preflight`] (your own table) or drop it
    /// with [`HttpBackend::without_preflight`]. It prices every response from the same table;
    /// [`HttpBackend::with_prices`] gives another.
    pub fn from_adapter(adapter: A, config: HttpConfig) -> Self {
        let table = ModelTable::builtin().of_provider(adapter.provider());
        let check = table.preflight_check(adapter.provider());
        Self {
            adapter,
            key: None,
            lanes: Arc::new(lanes::Lanes::new(&config)),
            config,
            preflight: Some(Arc::new(check)),
            prices: Some(Arc::new(table)),
            fixed: Fixed::default(),
        }
    }

    /// The same backend pricing each response's usage from `table` (its entries for this
    /// backend's provider, found with [`ModelTable::price_for`]): a cost the provider reported is
    /// kept, a model without a price keeps an unknown cost.
    ///
    /// ```
    /// # #[cfg(feature = "openai")] {
    /// use claij_backends::{ApiKey, ModelTable, Price, openai::OpenAi};
    ///
    /// let mut table = ModelTable::builtin();
    /// table.set_price("openai", "gpt-4o-mini", Price::new(0.15, 0.60));
    /// let backend = OpenAi::new(ApiKey::new("sk-...")).with_prices(&table);
    /// # let _ = backend;
    /// # }
    /// ```
    #[must_use]
    pub fn with_prices(mut self, table: &ModelTable) -> Self {
        self.prices = Some(Arc::new(table.of_provider(self.adapter.provider())));
        self
    }

    /// The same backend leaving every response's cost as the provider reported it (unknown, but
    /// for OpenRouter's).
    #[must_use]
    pub fn without_prices(mut self) -> Self {
        self.prices = None;
        self
    }

    /// The same backend without a pre-flight check.
    #[must_use]
    pub fn without_preflight(mut self) -> Self {
        self.preflight = None;
        self
    }

    /// The same backend sending `key` (an empty key sends no auth headers).
    #[must_use]
    pub fn with_key(mut self, key: ApiKey) -> Self {
        self.key = (!key.is_empty()).then_some(key);
        self.fixed = Fixed::default();
        self
    }

    /// The same backend with another configuration, base URL included.
    #[must_use]
    pub fn with_config(mut self, config: HttpConfig) -> Self {
        self.lanes = Arc::new(lanes::Lanes::new(&config));
        self.config = config;
        self.fixed = Fixed::default();
        self
    }

    /// The same backend talking to another base URL (a proxy, a local server, a test double).
    #[must_use]
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.config.base_url = base_url.into();
        self.lanes = Arc::new(lanes::Lanes::new(&self.config));
        self.fixed = Fixed::default();
        self
    }

    /// The same backend running `check` on every request before sending it; an error from the check
    /// is the call's error, and nothing is sent. The model table's token estimate is one:
    ///
    /// ```
    /// # #[cfg(feature = "openai")] {
    /// use std::sync::Arc;
    /// use claij_backends::{ApiKey, ModelTable, openai::OpenAi};
    ///
    /// let table = ModelTable::builtin();
    /// let backend = OpenAi::new(ApiKey::new("sk-..."))
    ///     .with_preflight(Arc::new(table.preflight_check("openai")));
    /// # let _ = backend;
    /// # }
    /// ```
    #[must_use]
    pub fn with_preflight(mut self, check: Preflight) -> Self {
        self.preflight = Some(check);
        self
    }

    /// The adapter.
    pub fn adapter(&self) -> &A {
        &self.adapter
    }

    /// The adapter, to change its settings (provider modules use it for their `with_*` methods).
    pub fn adapter_mut(&mut self) -> &mut A {
        self.fixed = Fixed::default();
        &mut self.adapter
    }

    /// The configuration.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// Like [`Backend::complete`], but returns [`Error::Cancelled`] as soon as `cancel` is cancelled
    /// (the request in flight is dropped, closing its connection).
    pub fn complete_with<'a>(
        &'a self,
        request: &'a ChatRequest,
        cancel: &'a CancelToken,
    ) -> BoxFuture<'a, Result<ChatResponse, Error>> {
        let context = ErrorContext::new(self.adapter.provider());
        Box::pin(cancel.run(context, self.call(request)))
    }

    /// Like [`Backend::stream`], but the stream ends with [`Error::Cancelled`] as soon as `cancel` is
    /// cancelled.
    pub fn stream_with<'a>(
        &'a self,
        request: &'a ChatRequest,
        cancel: &CancelToken,
    ) -> BoxStream<'a, Result<StreamEvent, Error>> {
        self.priced_stream(
            stream::events(self, request, Some(cancel.clone())),
            &request.model,
        )
    }

    async fn call(&self, request: &ChatRequest) -> Result<ChatResponse, Error> {
        let prepared = self.prepare(request, false)?;
        let client = self.client()?;
        let context = ErrorContext::new(self.adapter.provider());
        let result = retry::run(&self.config.retry, &context, &request.model, || {
            transport::complete(self, &client, &prepared, &request.model)
        })
        .await;
        let mut response = result.map_err(|e| self.finish_error(e, request))?;
        response.usage = self.priced(response.usage, &request.model);
        Ok(response)
    }

    /// `GET base_url + path` with the backend's headers and key, under its limits (connect and
    /// request timeouts, `max_body_bytes`), once: the 2xx body, else the typed error (a non-2xx
    /// classified as the adapter classifies a reply's). For a provider's model list.
    ///
    /// # Errors
    ///
    /// As a call's: [`Error::Network`], [`Error::Timeout`], [`Error::BodyTooLarge`],
    /// [`Error::Authentication`], ...
    pub async fn get(&self, path: &str) -> Result<Vec<u8>, Error> {
        let provider = self.adapter.provider();
        let bad = |message: String| Error::BadRequest {
            context: ErrorContext::new(provider),
            message,
        };
        let url = self.url(path).map_err(bad)?;
        let fixed = self
            .fixed
            .headers
            .get_or_init(|| self.fixed_headers())
            .as_ref()
            .map_err(|e| bad(e.clone()))?;
        let mut headers = fixed.base.clone();
        headers.remove(CONTENT_TYPE);
        for (name, value) in &fixed.auth {
            headers.insert(name.clone(), value.clone());
        }
        let client = self.client()?;
        transport::get(self, &client, url, headers).await
    }

    /// [`HttpBackend::get`] from synchronous code, inside an async runtime or not: on a thread of
    /// its own with a runtime and an HTTP client of its own (a client's connections belong to the
    /// runtime that made them), so the calling thread waits at most the request timeout.
    ///
    /// # Errors
    ///
    /// As [`HttpBackend::get`]'s; [`Error::Network`] when the thread or its runtime cannot start.
    pub fn get_blocking(&self, path: &str) -> Result<Vec<u8>, Error>
    where
        A: Clone,
    {
        let provider = self.adapter.provider().to_owned();
        let failed = |what: String| Error::Network {
            context: ErrorContext::new(&provider),
            message: what,
        };
        let fresh = Self {
            adapter: self.adapter.clone(),
            key: self.key.clone(),
            config: self.config.clone(),
            lanes: Arc::new(lanes::Lanes::new(&self.config)),
            preflight: None,
            prices: None,
            fixed: Fixed::default(),
        };
        std::thread::scope(|scope| {
            let thread = std::thread::Builder::new()
                .name("claij-get".to_owned())
                .spawn_scoped(scope, || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| failed(format!("cannot start a runtime for the GET: {e}")))?;
                    runtime.block_on(fresh.get(path))
                })
                .map_err(|e| failed(format!("cannot start a thread for the GET: {e}")))?;
            thread
                .join()
                .unwrap_or_else(|_| Err(failed("the GET's thread panicked".to_owned())))
        })
    }

    /// `usage` with its cost from the price table, unless the provider reported one.
    fn priced(&self, usage: Usage, model: &str) -> Usage {
        match &self.prices {
            Some(table) => usage.with_cost_for(table, self.adapter.provider(), model),
            None => usage,
        }
    }

    /// `events` with each usage event priced: the usage seen so far (events may split it, input
    /// first and output last) at the table's price, unless the provider reported a cost.
    fn priced_stream<'a>(
        &'a self,
        events: BoxStream<'a, Result<StreamEvent, Error>>,
        model: &'a str,
    ) -> BoxStream<'a, Result<StreamEvent, Error>> {
        use futures_util::StreamExt as _;
        if self.prices.is_none() {
            return events;
        }
        let mut seen = Usage::default();
        Box::pin(events.map(move |event| match event {
            Ok(StreamEvent::Usage(usage)) => {
                // `seen` keeps only what the provider reported, its cost included.
                crate::response::merge_usage(&mut seen, usage);
                Ok(StreamEvent::Usage(self.priced(seen, model)))
            }
            other => other,
        }))
    }

    /// Pre-flight, translation and everything about the HTTP request that does not change between
    /// requests.
    fn prepare(&self, request: &ChatRequest, stream: bool) -> Result<Prepared, Error> {
        let provider = self.adapter.provider();
        if let Some(check) = &self.preflight {
            check(request)
                .inspect_err(|e| debug!(provider, error = %e, "pre-flight check failed"))?;
        }
        let wire = self.adapter.transform_request(request, stream)?;
        let bad = |message: String| Error::BadRequest {
            context: ErrorContext::new(provider),
            message,
        };
        let url = self.url(&wire.path).map_err(bad)?;
        let fixed = self
            .fixed
            .headers
            .get_or_init(|| self.fixed_headers())
            .as_ref()
            .map_err(|e| bad(e.clone()))?;
        let mut body = wire.body;
        // A call holds its body to its end (retries resend it): no spare capacity held with it.
        body.shrink_to_fit();
        if wire.headers.is_empty() {
            return Ok(Prepared {
                url,
                headers: fixed.all.clone(),
                body: bytes::Bytes::from(body),
            });
        }
        let mut headers = fixed.base.clone();
        headers.reserve(wire.headers.len() + fixed.auth.len());
        // What the adapter sets is never replaced by an extra header, nor silently kept.
        for (name, value) in &wire.headers {
            let value = HeaderValue::from_str(value)
                .map_err(|_| bad(format!("the `{name}` header has characters HTTP forbids")))?;
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| bad(format!("`{name}` is no valid header name")))?;
            if headers.contains_key(&name) {
                return Err(bad(extra::clash(name.as_str(), provider)));
            }
            headers.insert(name, value);
        }
        for (name, value) in &fixed.auth {
            if headers.contains_key(name) {
                return Err(bad(extra::clash(name.as_str(), provider)));
            }
            headers.insert(name.clone(), value.clone());
        }
        Ok(Prepared {
            url,
            headers: Arc::new(headers),
            body: bytes::Bytes::from(body),
        })
    }

    /// The URL for an adapter's `path`, parsed once per path.
    fn url(&self, path: &str) -> Result<Arc<reqwest::Url>, String> {
        let mut urls = self
            .fixed
            .urls
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(url) = urls.get(path) {
            return Ok(url.clone());
        }
        let url = Arc::new(extra::url(&self.config.base_url, path, &self.config.query)?);
        if urls.len() >= MAX_CACHED_URLS {
            urls.clear();
        }
        urls.insert(path.to_owned(), url.clone());
        Ok(url)
    }

    /// The headers every request of this backend sends: the content type, the extra headers and
    /// the key (marked sensitive); built once ([`Fixed`]).
    fn fixed_headers(&self) -> Result<FixedHeaders, String> {
        let mut base = HeaderMap::with_capacity(self.config.headers.len() + 4);
        base.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        extra::add_headers(&mut base, &self.config.headers)?;
        let mut fixed = FixedHeaders {
            all: Arc::new(base.clone()),
            base,
            auth: Vec::new(),
        };
        let Some(key) = &self.key else {
            return Ok(fixed);
        };
        let auth = match &self.config.auth_header {
            Some(name) => {
                extra::check_header_name(name)
                    .map_err(|problem| format!("the `{name}` header: {problem}"))?;
                vec![(name.clone(), key.expose().to_owned())]
            }
            None => self
                .adapter
                .auth_headers(key)
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value))
                .collect(),
        };
        for (name, value) in auth {
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| "the API key has characters HTTP forbids".to_owned())?;
            value.set_sensitive(true);
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("`{name}` is no valid header name"))?;
            if fixed.base.contains_key(&name) {
                return Err(extra::clash(name.as_str(), self.adapter.provider()));
            }
            fixed.auth.push((name, value));
        }
        let mut all = fixed.base.clone();
        for (name, value) in &fixed.auth {
            all.insert(name.clone(), value.clone());
        }
        fixed.all = Arc::new(all);
        Ok(fixed)
    }

    /// A client for one call, from the least-loaded lane ([`lanes`]); the call holds it to its end.
    fn client(&self) -> Result<lanes::Lease, Error> {
        self.lanes.lease().map_err(|e| Error::Network {
            context: ErrorContext::new(self.adapter.provider()),
            message: format!("cannot build the HTTP client: {}", transport::describe(&e)),
        })
    }

    /// `error` with the key and every secret extra header or parameter scrubbed from its texts.
    fn scrub(&self, error: Error) -> Error {
        let mut error = match &self.key {
            Some(key) => transport::scrub(error, key),
            None => error,
        };
        let secrets = self.config.headers.iter().chain(&self.config.query);
        for extra in secrets.filter(|extra| extra.is_secret()) {
            error = transport::scrub(error, &ApiKey::new(extra.expose()));
        }
        error
    }

    /// An error as the caller sees it: the secrets scrubbed from every text, the model filled in.
    fn finish_error(&self, error: Error, request: &ChatRequest) -> Error {
        let error = match error {
            Error::ModelNotFound { context, model } if model.is_empty() => Error::ModelNotFound {
                context,
                model: request.model.clone(),
            },
            other => other,
        };
        self.scrub(error)
    }
}

impl<A: Adapter> Backend for HttpBackend<A> {
    fn provider(&self) -> &str {
        self.adapter.provider()
    }

    fn capabilities(&self, model: &str) -> Capabilities {
        self.adapter.capabilities(model)
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, Error>> {
        Box::pin(self.call(request))
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest) -> BoxStream<'a, Result<StreamEvent, Error>> {
        self.priced_stream(stream::events(self, request, None), &request.model)
    }
}

impl<A: Adapter> fmt::Debug for HttpBackend<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpBackend")
            .field("provider", &self.adapter.provider())
            .field("key", &self.key)
            .field("request_timeout", &self.config.request_timeout)
            .field("retry", &self.config.retry)
            .field("max_body_bytes", &self.config.max_body_bytes)
            .field("headers", &self.config.headers)
            .field("query", &self.config.query)
            .field("auth_header", &self.config.auth_header)
            .field("http_version", &self.config.http_version)
            .field(
                "streams_per_connection",
                &self.config.streams_per_connection,
            )
            .field("preflight", &self.preflight.is_some())
            .field("prices", &self.prices.as_ref().map(|t| t.len()))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
