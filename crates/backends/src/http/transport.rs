//! One HTTP request over the wire: send, read, classify; transport failures as typed errors;
//! request ids; the key scrubbed from errors.

use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;
use tracing::debug;

use bytes::Bytes;

use super::lanes::Lease;
use super::{HttpBackend, Prepared, direct, retry};
use crate::redact::MARKER;
use crate::{Adapter, ApiKey, BodyLimit, ChatResponse, Error, ErrorContext, excerpt};

/// Response headers that carry the provider's request id, most specific first: OpenAI and most
/// OpenAI-compatible servers send `x-request-id`, Anthropic `request-id`. Where none is sent, the
/// adapter may use the id in the body.
const REQUEST_ID_HEADERS: [&str; 2] = ["x-request-id", "request-id"];

/// One non-streaming request: the parsed response, or the typed error (key already scrubbed).
pub(super) async fn complete<A: Adapter>(
    backend: &HttpBackend<A>,
    client: &Lease,
    prepared: &Prepared,
    model: &str,
) -> Result<ChatResponse, Error> {
    let provider = backend.adapter.provider();
    let context = ErrorContext::new(provider);
    let started = Instant::now();
    debug!(
        provider,
        model,
        request_bytes = prepared.body.len(),
        "sending request"
    );
    let result = exchange(backend, || send(client, prepared), context)
        .await
        .and_then(|done| {
            debug!(
                provider,
                status = done.status,
                latency_ms = millis(started.elapsed()),
                response_bytes = done.body.len(),
                "response received"
            );
            interpret(
                &backend.adapter,
                done.status,
                done.retry_after,
                &done.body,
                done.context,
            )
        });
    result.map_err(|e| backend.scrub(e))
}

/// One `GET` (a provider's model list): the 2xx body, read under the same limits as a reply
/// (`request_timeout`, `max_body_bytes`); any other status through the adapter's classification.
/// Not retried: the caller keeps what it had on failure.
pub(super) async fn get<A: Adapter>(
    backend: &HttpBackend<A>,
    client: &Lease,
    url: std::sync::Arc<reqwest::Url>,
    headers: HeaderMap,
) -> Result<Vec<u8>, Error> {
    let provider = backend.adapter.provider();
    let context = ErrorContext::new(provider);
    debug!(provider, "sending GET");
    let request = || client.send(reqwest::Method::GET, &url, &headers, Bytes::new());
    let result = exchange(backend, request, context).await.and_then(|done| {
        if (200..300).contains(&done.status) {
            Ok(done.body)
        } else {
            Err(backend.adapter.classify_error(
                done.status,
                done.retry_after,
                &done.body,
                done.context,
            ))
        }
    });
    result.map_err(|e| backend.scrub(e))
}

/// Why a request got no response head, or its body broke off.
#[derive(Debug)]
pub(super) enum Failure {
    /// reqwest's failure (HTTP/1.1, `auto`, or HTTP/2 through a proxy or over TLS).
    Reqwest(reqwest::Error),
    /// No TCP connection (the direct HTTP/2 path).
    Connect(std::io::Error),
    /// No connection within `connect_timeout` (the direct HTTP/2 path).
    ConnectTimeout,
    /// The server did not take HTTP/2's preface.
    Handshake(h2::Error),
    /// The stream or the connection broke: a reset, a GOAWAY, a closed socket.
    H2(h2::Error),
    /// The URL has no host or port, or is not a valid request target.
    Uri,
}

impl Failure {
    /// One line, without the URL (it may carry credentials).
    fn describe(&self) -> String {
        match self {
            Failure::Reqwest(e) => describe(e),
            Failure::Connect(e) => e.to_string(),
            Failure::ConnectTimeout => "the connection timed out".to_owned(),
            Failure::Handshake(e) | Failure::H2(e) => e.to_string(),
            Failure::Uri => "the URL is no valid HTTP/2 request target".to_owned(),
        }
    }
}

/// A response whose head arrived, its body still to read: reqwest's, or one read directly from an
/// HTTP/2 stream ([`direct`]).
#[derive(Debug)]
pub(super) enum Reply {
    Reqwest(reqwest::Response),
    Direct(direct::Reply),
}

impl Reply {
    pub(super) fn status(&self) -> u16 {
        match self {
            Reply::Reqwest(response) => response.status().as_u16(),
            Reply::Direct(reply) => reply.status,
        }
    }

    pub(super) fn headers(&self) -> &HeaderMap {
        match self {
            Reply::Reqwest(response) => response.headers(),
            Reply::Direct(reply) => &reply.headers,
        }
    }

    /// The length the server announced (`content-length`), if any.
    fn content_length(&self) -> Option<u64> {
        match self {
            Reply::Reqwest(response) => response.content_length(),
            Reply::Direct(reply) => reply
                .headers
                .get(reqwest::header::CONTENT_LENGTH)
                .and_then(|value| value.to_str().ok()?.trim().parse().ok()),
        }
    }

    /// The next piece of the body, `None` at its end.
    pub(super) async fn chunk(&mut self) -> Result<Option<Bytes>, Failure> {
        match self {
            Reply::Reqwest(response) => response.chunk().await.map_err(Failure::Reqwest),
            Reply::Direct(reply) => reply.chunk().await,
        }
    }
}

/// A whole answer: its status, the context with the status and request id, the `Retry-After` it
/// asked for, and its body.
struct Exchange {
    status: u16,
    context: ErrorContext,
    retry_after: Option<Duration>,
    body: Vec<u8>,
}

/// Sends the request `request` makes and reads the whole answer, all within `request_timeout` and
/// the body under `max_body_bytes`; transport failures typed (the key not yet scrubbed: the caller
/// does). The request's future is made where it is awaited, so a call's future holds it once (a
/// future passed in would be held in each async frame it passes through).
async fn exchange<A: Adapter, F: Future<Output = Result<Reply, Failure>>>(
    backend: &HttpBackend<A>,
    request: impl FnOnce() -> F,
    context: ErrorContext,
) -> Result<Exchange, Error> {
    let config = &backend.config;
    let whole = async {
        let mut response = request().await.map_err(|e| {
            transport_error(
                &e,
                context.clone(),
                config.connect_timeout,
                config.request_timeout,
            )
        })?;
        let (status, context, retry_after) = read_head(&response, context.clone());
        let body = read_body(&mut response, config, &context).await?;
        Ok(Exchange {
            status,
            context,
            retry_after,
            body,
        })
    };
    match tokio::time::timeout(config.request_timeout, whole).await {
        Err(_) => Err(Error::Timeout {
            context,
            after: config.request_timeout,
        }),
        Ok(result) => result,
    }
}

/// Opens a stream: the response once its status is 2xx, or the typed error for any other status.
pub(super) async fn open_stream<A: Adapter>(
    backend: &HttpBackend<A>,
    client: &Lease,
    prepared: &Prepared,
    model: &str,
) -> Result<(Reply, ErrorContext), Error> {
    let provider = backend.adapter.provider();
    let config = &backend.config;
    let context = ErrorContext::new(provider);
    let started = Instant::now();
    debug!(
        provider,
        model,
        request_bytes = prepared.body.len(),
        "opening stream"
    );
    let exchange = async {
        let mut response = send(client, prepared).await.map_err(|e| {
            transport_error(
                &e,
                context.clone(),
                config.connect_timeout,
                config.request_timeout,
            )
        })?;
        let (status, context, retry_after) = read_head(&response, context.clone());
        debug!(
            provider,
            status,
            latency_ms = millis(started.elapsed()),
            "stream headers received"
        );
        if (200..300).contains(&status) {
            return Ok((response, context));
        }
        let body = read_body(&mut response, config, &context).await?;
        Err(backend
            .adapter
            .classify_error(status, retry_after, &body, context))
    };
    let result = match tokio::time::timeout(config.request_timeout, exchange).await {
        Err(_) => Err(Error::Timeout {
            context,
            after: config.request_timeout,
        }),
        Ok(result) => result,
    };
    result.map_err(|e| backend.scrub(e))
}

/// The whole body, counted as it arrives: more than `max_body_bytes` (announced or sent) is
/// [`Error::BodyTooLarge`], and nothing past the limit is buffered. The response is borrowed, not
/// taken: a future holds an argument it takes twice (as the argument and as the local it binds).
async fn read_body(
    response: &mut Reply,
    config: &super::HttpConfig,
    context: &ErrorContext,
) -> Result<Vec<u8>, Error> {
    let limit = config.max_body_bytes;
    let too_large = || Error::BodyTooLarge {
        context: context.clone(),
        which: BodyLimit::Body,
        limit,
    };
    let announced = response.content_length();
    if announced.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    // Trust a length only as far as the limit; a small start for bodies without one.
    let capacity = announced.unwrap_or(8 * 1024).min(limit);
    let mut body = Vec::with_capacity(usize::try_from(capacity).unwrap_or(0));
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| body_error(&e, context.clone(), config.request_timeout))?
    {
        let total = u64::try_from(body.len().saturating_add(chunk.len())).unwrap_or(u64::MAX);
        if total > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn send<'a>(
    client: &'a Lease,
    prepared: &'a Prepared,
) -> impl Future<Output = Result<Reply, Failure>> + use<'a> {
    client.send(
        reqwest::Method::POST,
        &prepared.url,
        &prepared.headers,
        prepared.body.clone(),
    )
}

/// The status, the context with status and request id, and the parsed `Retry-After`.
fn read_head(response: &Reply, context: ErrorContext) -> (u16, ErrorContext, Option<Duration>) {
    let status = response.status();
    let mut context = context.with_status(status);
    context.request_id = request_id(response.headers());
    (status, context, retry::retry_after(response.headers()))
}

/// A complete response: a 2xx body through the adapter (an empty one is malformed whatever the
/// provider), any other status through its error classification.
fn interpret<A: Adapter>(
    adapter: &A,
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
    context: ErrorContext,
) -> Result<ChatResponse, Error> {
    if !(200..300).contains(&status) {
        return Err(adapter.classify_error(status, retry_after, body, context));
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::MalformedResponse {
            context,
            reason: "the response body is empty".to_owned(),
            excerpt: String::new(),
        });
    }
    let mut response = adapter.transform_response(body, &context)?;
    if response.request_id.is_none() {
        response.request_id = context.request_id;
    }
    Ok(response)
}

/// The provider's request id from the response headers.
pub(super) fn request_id(headers: &HeaderMap) -> Option<String> {
    REQUEST_ID_HEADERS.iter().find_map(|name| {
        let value = headers.get(*name)?.to_str().ok()?.trim();
        (!value.is_empty()).then(|| excerpt(value.as_bytes(), 200))
    })
}

/// A failure to send or to get the response head.
pub(super) fn transport_error(
    error: &Failure,
    context: ErrorContext,
    connect_timeout: Duration,
    request_timeout: Duration,
) -> Error {
    let error = match error {
        Failure::Reqwest(error) => error,
        Failure::ConnectTimeout => {
            return Error::Timeout {
                context,
                after: connect_timeout,
            };
        }
        Failure::Connect(e) => {
            return Error::Network {
                context,
                message: format!("could not connect: {e}"),
            };
        }
        Failure::Handshake(e) => {
            return Error::Network {
                context,
                message: format!("could not connect: the HTTP/2 handshake failed: {e}"),
            };
        }
        Failure::H2(e) => {
            return Error::Network {
                context,
                message: format!("the request failed: {e}"),
            };
        }
        Failure::Uri => {
            return Error::BadRequest {
                context,
                message: "the URL is no valid HTTP/2 request target".to_owned(),
            };
        }
    };
    if error.is_timeout() {
        let after = if error.is_connect() {
            connect_timeout
        } else {
            request_timeout
        };
        return Error::Timeout { context, after };
    }
    let what = if error.is_connect() {
        "could not connect"
    } else {
        "the request failed"
    };
    Error::Network {
        context,
        message: format!("{what}: {}", describe(error)),
    }
}

/// A failure while reading the body: the connection broke (or timed out) mid-body.
pub(super) fn body_error(error: &Failure, context: ErrorContext, timeout: Duration) -> Error {
    let Failure::Reqwest(error) = error else {
        return Error::Network {
            context,
            message: format!(
                "the connection broke while reading the response body: {}",
                error.describe()
            ),
        };
    };
    if error.is_timeout() {
        return Error::Timeout {
            context,
            after: timeout,
        };
    }
    Error::Network {
        context,
        message: format!(
            "the connection broke while reading the response body: {}",
            describe(error)
        ),
    }
}

/// An error and its sources as one line, without the URL (it may carry credentials).
pub(super) fn describe(error: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut current: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = current {
        let part = e.to_string();
        let part = strip_url(&part);
        if !part.is_empty() && !text.contains(part.as_str()) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        current = e.source();
    }
    text
}

/// reqwest writes `... for url (http://...)`; the URL goes.
fn strip_url(text: &str) -> String {
    match text.find(" for url (") {
        Some(at) => text[..at].to_owned(),
        None => text.to_owned(),
    }
}

/// `error` with every copy of `key` in its texts replaced by [`MARKER`] ([`ApiKey::scrub`]).
pub(super) fn scrub(error: Error, key: &ApiKey) -> Error {
    let s = |text: String| scrub_text(text, key);
    match error {
        Error::Authentication { context, message } => Error::Authentication {
            context,
            message: s(message),
        },
        Error::RateLimited {
            context,
            retry_after,
            message,
        } => Error::RateLimited {
            context,
            retry_after,
            message: s(message),
        },
        Error::QuotaExhausted { context, message } => Error::QuotaExhausted {
            context,
            message: s(message),
        },
        Error::ContextLengthExceeded { context, message } => Error::ContextLengthExceeded {
            context,
            message: s(message),
        },
        Error::ModelNotFound { context, model } => Error::ModelNotFound {
            context,
            model: s(model),
        },
        Error::Refused { context, message } => Error::Refused {
            context,
            message: s(message),
        },
        Error::Overloaded {
            context,
            retry_after,
            message,
        } => Error::Overloaded {
            context,
            retry_after,
            message: s(message),
        },
        Error::Server { context, message } => Error::Server {
            context,
            message: s(message),
        },
        Error::BadRequest { context, message } => Error::BadRequest {
            context,
            message: s(message),
        },
        Error::Network { context, message } => Error::Network {
            context,
            message: s(message),
        },
        Error::MalformedResponse {
            context,
            reason,
            excerpt,
        } => Error::MalformedResponse {
            context,
            reason: s(reason),
            excerpt: s(excerpt),
        },
        Error::Other { context, message } => Error::Other {
            context,
            message: s(message),
        },
        other => other,
    }
}

/// `text` without `key` or its encoded copies ([`ApiKey::scrub`]), also where an excerpt cut the
/// key short (`...sk-abc12...`).
fn scrub_text(text: String, key: &ApiKey) -> String {
    let secret = key.expose();
    let text = key.scrub(&text);
    // A cut-off key ends the text, before the excerpt's `...`; 6 characters is where a prefix
    // stops being an accident.
    let body = text.strip_suffix("...").unwrap_or(&text);
    let cut = (6..secret.len())
        .rev()
        .filter(|n| secret.is_char_boundary(*n))
        .find(|n| body.ends_with(&secret[..*n]));
    match cut {
        Some(n) => format!("{}{MARKER}{}", &body[..body.len() - n], &text[body.len()..]),
        None => text,
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
