//! Backend errors: one variant per way a caller reacts, each saying which provider, status and request.
//!
//! As reqwest's and `std::io`'s: [`Error::kind`] to match on without the fields, and predicates
//! ([`Error::is_timeout`], [`Error::is_retryable`], [`Error::is_rate_limited`]...) for what callers
//! branch on. The errors of the pipeline (`claij_interceptors::Error`) and of the FSM
//! (`claij_fsm::Error`) that wrap a backend error answer the same predicates from it, so
//! [`Error::is_retryable`] stays the one definition of "retryable".

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where a backend error happened: the provider, the HTTP status and the provider's request id.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ErrorContext {
    /// The provider (`openrouter`, `anthropic`, ...).
    pub provider: String,
    /// The HTTP status, when there was a response.
    pub status: Option<u16>,
    /// The provider's request id, when it sent one.
    pub request_id: Option<String>,
    /// How many HTTP requests the call made, retries included (0 when not counted, as for an
    /// error before anything was sent).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub requests: u32,
}

impl ErrorContext {
    /// A context naming only the provider.
    pub fn new(provider: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            ..Self::default()
        }
    }

    /// The same context with an HTTP status.
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// The same context with a request id.
    #[must_use]
    pub fn with_request_id(mut self, id: impl Into<String>) -> Self {
        self.request_id = Some(id.into());
        self
    }

    /// The same context with a count of HTTP requests made.
    #[must_use]
    pub fn with_requests(mut self, requests: u32) -> Self {
        self.requests = requests;
        self
    }
}

impl fmt::Display for ErrorContext {
    /// `openai (HTTP 500, request req-1, after 4 HTTP requests)`; the count shows when retries
    /// made more than one request.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.provider)?;
        let mut parts = Vec::with_capacity(3);
        if let Some(status) = self.status {
            parts.push(format!("HTTP {status}"));
        }
        if let Some(id) = &self.request_id {
            parts.push(format!("request {id}"));
        }
        if self.requests > 1 {
            parts.push(format!("after {} HTTP requests", self.requests));
        }
        if !parts.is_empty() {
            write!(f, " ({})", parts.join(", "))?;
        }
        Ok(())
    }
}

/// Which response-size limit of the HTTP configuration a response reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BodyLimit {
    /// `max_body_bytes`: one response body, or all the bytes of one stream.
    Body,
    /// `max_event_bytes`: one server-sent event of a stream.
    Event,
}

impl BodyLimit {
    /// The setting that sets this limit (`max_body_bytes`, `max_event_bytes`).
    pub fn setting(self) -> &'static str {
        match self {
            BodyLimit::Body => "max_body_bytes",
            BodyLimit::Event => "max_event_bytes",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            BodyLimit::Body => "response body",
            BodyLimit::Event => "server-sent event",
        }
    }
}

/// What kind of failure an [`Error`] is, to match on without its fields.
///
/// One kind per crate, naming its own variants; the meanings shared across claij crates are the
/// predicates on [`Error`] (see `claij_interceptors`' crate docs for why).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Authentication`].
    Authentication,
    /// [`Error::RateLimited`].
    RateLimited,
    /// [`Error::QuotaExhausted`].
    QuotaExhausted,
    /// [`Error::ContextLengthExceeded`].
    ContextLengthExceeded,
    /// [`Error::ModelNotFound`].
    ModelNotFound,
    /// [`Error::Refused`].
    Refused,
    /// [`Error::Overloaded`].
    Overloaded,
    /// [`Error::Server`].
    Server,
    /// [`Error::BadRequest`].
    BadRequest,
    /// [`Error::Timeout`].
    Timeout,
    /// [`Error::Network`].
    Network,
    /// [`Error::Cancelled`].
    Cancelled,
    /// [`Error::MalformedResponse`].
    MalformedResponse,
    /// [`Error::BodyTooLarge`].
    BodyTooLarge,
    /// [`Error::ToolArguments`].
    ToolArguments,
    /// [`Error::Other`].
    Other,
}

/// Why a backend call failed. Messages never contain an API key.
///
/// Branch on the predicates (or on [`Error::kind`]) rather than on the variants and their fields:
///
/// ```
/// use std::time::Duration;
/// use claij_backends::{Error, ErrorContext, ErrorKind};
///
/// let error = Error::RateLimited {
///     context: ErrorContext::new("openai").with_status(429),
///     retry_after: Some(Duration::from_secs(2)),
///     message: "slow down".into(),
/// };
/// if error.is_rate_limited() {
///     assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
/// }
/// assert!(error.is_retryable() && !error.is_timeout() && !error.is_auth());
/// assert_eq!((error.kind(), error.status()), (ErrorKind::RateLimited, Some(429)));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The key is missing, wrong or not allowed (401, 403).
    #[error("{context}: authentication failed: {message}")]
    Authentication {
        /// Where.
        context: ErrorContext,
        /// What the provider said.
        message: String,
    },
    /// Too many requests (429); retry after the given time if the provider said.
    #[error("{context}: rate limited{}: {message}", retry_suffix(.retry_after))]
    RateLimited {
        /// Where.
        context: ErrorContext,
        /// How long the provider asked to wait.
        retry_after: Option<Duration>,
        /// What the provider said.
        message: String,
    },
    /// The prompt does not fit the model's context window.
    #[error("{context}: context length exceeded: {message}")]
    ContextLengthExceeded {
        /// Where.
        context: ErrorContext,
        /// What the provider (or the pre-flight estimate) said.
        message: String,
    },
    /// The account's quota or credit is used up (OpenAI's 429 `insufficient_quota`, 402, Anthropic's
    /// billing errors, a Gemini daily quota). Waiting will not help, so it is never retried.
    #[error("{context}: quota exhausted: {message}")]
    QuotaExhausted {
        /// Where.
        context: ErrorContext,
        /// What the provider said.
        message: String,
    },
    /// The provider does not know the model (404).
    #[error("{context}: model `{model}` not found")]
    ModelNotFound {
        /// Where.
        context: ErrorContext,
        /// The model asked for.
        model: String,
    },
    /// The model refused, or a content filter stopped it.
    #[error("{context}: refused: {message}")]
    Refused {
        /// Where.
        context: ErrorContext,
        /// The refusal or filter message.
        message: String,
    },
    /// The provider is overloaded (529, 503); retrying later may work.
    #[error("{context}: overloaded{}: {message}", retry_suffix(.retry_after))]
    Overloaded {
        /// Where.
        context: ErrorContext,
        /// How long the provider asked to wait.
        retry_after: Option<Duration>,
        /// What the provider said.
        message: String,
    },
    /// The provider failed (5xx).
    #[error("{context}: server error: {message}")]
    Server {
        /// Where.
        context: ErrorContext,
        /// What the provider said.
        message: String,
    },
    /// The provider rejected the request as malformed (400, 422).
    #[error("{context}: bad request: {message}")]
    BadRequest {
        /// Where.
        context: ErrorContext,
        /// What the provider said.
        message: String,
    },
    /// No answer in time.
    #[error("{context}: timed out after {}", humanize(*.after))]
    Timeout {
        /// Where.
        context: ErrorContext,
        /// The time limit that ran out.
        after: Duration,
    },
    /// The connection failed (refused, reset, DNS).
    #[error("{context}: network error: {message}")]
    Network {
        /// Where.
        context: ErrorContext,
        /// What failed.
        message: String,
    },
    /// The call was cancelled.
    #[error("{context}: cancelled")]
    Cancelled {
        /// Where.
        context: ErrorContext,
    },
    /// The provider answered something that is not what its API promises.
    #[error("{context}: malformed response: {reason}; body starts {excerpt:?}")]
    MalformedResponse {
        /// Where.
        context: ErrorContext,
        /// What is wrong with it.
        reason: String,
        /// The start of the body.
        excerpt: String,
    },
    /// The response was larger than a limit of the HTTP configuration; reading stopped at the limit,
    /// so no more than `limit` bytes were held. Not retried.
    #[error("{context}: {} too large: over the {} limit of {limit} bytes", .which.noun(), .which.setting())]
    BodyTooLarge {
        /// Where.
        context: ErrorContext,
        /// Which limit.
        which: BodyLimit,
        /// The limit, in bytes.
        limit: u64,
    },
    /// The arguments of a native tool call are not a JSON value (a torn stream, a model that wrote
    /// prose): the call is named, with the start of what arrived. Not retried by the HTTP layer.
    #[error("{context}: arguments of tool call `{id}` ({name}) are not valid JSON: {reason}")]
    ToolArguments {
        /// Where.
        context: ErrorContext,
        /// The call's id.
        id: String,
        /// The tool called.
        name: String,
        /// What the JSON parser said, and the start of the arguments.
        reason: Box<str>,
    },
    /// A scripted or custom backend's own failure.
    #[error("{context}: {message}")]
    Other {
        /// Where.
        context: ErrorContext,
        /// What happened.
        message: String,
    },
}

impl Error {
    /// Where it happened.
    pub fn context(&self) -> &ErrorContext {
        match self {
            Error::Authentication { context, .. }
            | Error::RateLimited { context, .. }
            | Error::ContextLengthExceeded { context, .. }
            | Error::ModelNotFound { context, .. }
            | Error::Refused { context, .. }
            | Error::Overloaded { context, .. }
            | Error::Server { context, .. }
            | Error::BadRequest { context, .. }
            | Error::Timeout { context, .. }
            | Error::Network { context, .. }
            | Error::Cancelled { context }
            | Error::MalformedResponse { context, .. }
            | Error::QuotaExhausted { context, .. }
            | Error::BodyTooLarge { context, .. }
            | Error::ToolArguments { context, .. }
            | Error::Other { context, .. } => context,
        }
    }

    /// Where it happened, to fill in what only the caller knows (the request count).
    #[cfg(feature = "http")]
    pub(crate) fn context_mut(&mut self) -> &mut ErrorContext {
        match self {
            Error::Authentication { context, .. }
            | Error::RateLimited { context, .. }
            | Error::ContextLengthExceeded { context, .. }
            | Error::ModelNotFound { context, .. }
            | Error::Refused { context, .. }
            | Error::Overloaded { context, .. }
            | Error::Server { context, .. }
            | Error::BadRequest { context, .. }
            | Error::Timeout { context, .. }
            | Error::Network { context, .. }
            | Error::Cancelled { context }
            | Error::MalformedResponse { context, .. }
            | Error::QuotaExhausted { context, .. }
            | Error::BodyTooLarge { context, .. }
            | Error::ToolArguments { context, .. }
            | Error::Other { context, .. } => context,
        }
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Authentication { .. } => ErrorKind::Authentication,
            Error::RateLimited { .. } => ErrorKind::RateLimited,
            Error::QuotaExhausted { .. } => ErrorKind::QuotaExhausted,
            Error::ContextLengthExceeded { .. } => ErrorKind::ContextLengthExceeded,
            Error::ModelNotFound { .. } => ErrorKind::ModelNotFound,
            Error::Refused { .. } => ErrorKind::Refused,
            Error::Overloaded { .. } => ErrorKind::Overloaded,
            Error::Server { .. } => ErrorKind::Server,
            Error::BadRequest { .. } => ErrorKind::BadRequest,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::Network { .. } => ErrorKind::Network,
            Error::Cancelled { .. } => ErrorKind::Cancelled,
            Error::MalformedResponse { .. } => ErrorKind::MalformedResponse,
            Error::BodyTooLarge { .. } => ErrorKind::BodyTooLarge,
            Error::ToolArguments { .. } => ErrorKind::ToolArguments,
            Error::Other { .. } => ErrorKind::Other,
        }
    }

    /// Whether sending the same request again, later, may succeed: the one definition the HTTP
    /// retry loop (`http::RetryPolicy`, feature `http`) and the pipeline both use.
    ///
    /// By kind: a rate limit, an overloaded provider, a timeout and a broken connection are
    /// retryable wherever they arrive (an HTTP status, a 200 body, an event of a stream); a server
    /// error is, unless its HTTP status blames the request (a 4xx other than 408 Request Timeout
    /// and 425 Too Early) or says the server cannot serve it at all (501 Not Implemented, 505, 506,
    /// 508, 510, 511). Never retryable: what the request itself caused or
    /// what waiting cannot change (authentication, an exhausted quota, a bad request, an unknown
    /// model, a prompt over the context window, a refusal, a malformed or oversized response,
    /// unreadable tool arguments, a cancellation, a custom backend's own failure).
    ///
    /// ```
    /// use claij_backends::{Error, ErrorContext};
    ///
    /// let server = |status| Error::Server {
    ///     context: ErrorContext::new("openai").with_status(status),
    ///     message: String::new(),
    /// };
    /// assert!(server(502).is_retryable());
    /// assert!(!server(501).is_retryable());
    /// // Anthropic's overload inside a 200 body is retried like a 529.
    /// let overloaded = Error::Overloaded {
    ///     context: ErrorContext::new("anthropic").with_status(200),
    ///     retry_after: None,
    ///     message: "Overloaded".into(),
    /// };
    /// assert!(overloaded.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::RateLimited { .. }
            | Error::Overloaded { .. }
            | Error::Timeout { .. }
            | Error::Network { .. } => true,
            Error::Server { context, .. } => context.status.is_none_or(is_transient_status),
            Error::Authentication { .. }
            | Error::QuotaExhausted { .. }
            | Error::ContextLengthExceeded { .. }
            | Error::ModelNotFound { .. }
            | Error::Refused { .. }
            | Error::BadRequest { .. }
            | Error::Cancelled { .. }
            | Error::MalformedResponse { .. }
            | Error::BodyTooLarge { .. }
            | Error::ToolArguments { .. }
            | Error::Other { .. } => false,
        }
    }

    /// Whether no answer came in time ([`Error::Timeout`]).
    pub fn is_timeout(&self) -> bool {
        self.kind() == ErrorKind::Timeout
    }

    /// Whether the connection failed: refused, reset, DNS ([`Error::Network`]).
    pub fn is_connect(&self) -> bool {
        self.kind() == ErrorKind::Network
    }

    /// Whether the provider asked to slow down ([`Error::RateLimited`]; see
    /// [`Error::retry_after`]). An exhausted quota is not a rate limit: see
    /// [`Error::is_quota_exhausted`].
    pub fn is_rate_limited(&self) -> bool {
        self.kind() == ErrorKind::RateLimited
    }

    /// Whether the key is missing, wrong or not allowed ([`Error::Authentication`]).
    pub fn is_auth(&self) -> bool {
        self.kind() == ErrorKind::Authentication
    }

    /// Whether the account's quota or credit is used up ([`Error::QuotaExhausted`]).
    pub fn is_quota_exhausted(&self) -> bool {
        self.kind() == ErrorKind::QuotaExhausted
    }

    /// Whether the call was cancelled ([`Error::Cancelled`]).
    pub fn is_cancelled(&self) -> bool {
        self.kind() == ErrorKind::Cancelled
    }

    /// Whether the model would not answer ([`Error::Refused`]): a refusal, a content filter, a
    /// blocked prompt or a withheld candidate, with the provider's message. Never retryable: the same
    /// request gets the same answer.
    pub fn is_refusal(&self) -> bool {
        self.kind() == ErrorKind::Refused
    }

    /// The HTTP status, when there was a response (as reqwest's `Error::status`).
    pub fn status(&self) -> Option<u16> {
        self.context().status
    }

    /// How long the provider asked to wait before retrying.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::RateLimited { retry_after, .. } | Error::Overloaded { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }

    /// The arguments of the tool call `id` of `name` were not JSON: `arguments` as received.
    pub fn tool_arguments(
        context: &ErrorContext,
        id: &str,
        name: &str,
        arguments: &str,
        error: &serde_json::Error,
    ) -> Self {
        Error::ToolArguments {
            context: context.clone(),
            id: id.to_owned(),
            name: name.to_owned(),
            reason: format!(
                "{error}; they start {:?}",
                crate::excerpt(arguments.as_bytes(), 120)
            )
            .into(),
        }
    }

    /// A failure of a custom backend.
    pub fn other(provider: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Other {
            context: ErrorContext::new(provider),
            message: message.into(),
        }
    }
}

/// Whether a server error with this HTTP status may pass when sent again: not a 4xx (the request is
/// at fault) except 408 Request Timeout and 425 Too Early, nor a 5xx that says the server cannot
/// serve the request however often it is sent (Not Implemented, HTTP Version Not Supported, Variant
/// Also Negotiates, Loop Detected, Not Extended, Network Authentication Required). Any other status,
/// a 2xx with an error inside it included, leaves it to the kind.
fn is_transient_status(status: u16) -> bool {
    match status {
        408 | 425 => true,
        400..=499 | 501 | 505 | 506 | 508 | 510 | 511 => false,
        _ => true,
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn retry_suffix(after: &Option<Duration>) -> String {
    after.map_or_else(String::new, |d| format!(" (retry after {})", humanize(d)))
}

pub(crate) fn humanize(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_where() {
        let e = Error::RateLimited {
            context: ErrorContext::new("openrouter")
                .with_status(429)
                .with_request_id("req-1"),
            retry_after: Some(Duration::from_secs(3)),
            message: "slow down".into(),
        };
        assert_eq!(
            e.to_string(),
            "openrouter (HTTP 429, request req-1): rate limited (retry after 3.0 s): slow down"
        );
        assert!(e.is_retryable());
        assert_eq!(e.retry_after(), Some(Duration::from_secs(3)));
        let t = Error::Timeout {
            context: ErrorContext::new("local"),
            after: Duration::from_millis(250),
        };
        assert_eq!(t.to_string(), "local: timed out after 250 ms");
        assert!(!Error::other("x", "y").is_retryable());
    }

    #[test]
    fn contexts_count_requests_past_the_first() {
        let check = |context: ErrorContext, expected: &str| {
            assert_eq!(context.to_string(), expected);
        };
        let base = || ErrorContext::new("openai");
        check(base(), "openai");
        check(base().with_requests(1), "openai");
        check(base().with_requests(4), "openai (after 4 HTTP requests)");
        check(
            base().with_status(500).with_requests(4),
            "openai (HTTP 500, after 4 HTTP requests)",
        );
        check(
            base()
                .with_status(500)
                .with_request_id("r")
                .with_requests(2),
            "openai (HTTP 500, request r, after 2 HTTP requests)",
        );
        // The count is not written when unknown, so older cassettes read the same.
        let json = serde_json::to_string(&base()).unwrap_or_default();
        assert!(!json.contains("requests"), "{json}");
        let back: ErrorContext =
            serde_json::from_str(r#"{"provider": "openai", "status": null, "request_id": null}"#)
                .unwrap_or_default();
        assert_eq!(back, base());
    }

    #[test]
    fn new_kinds_say_what_and_which_limit() {
        let quota = Error::QuotaExhausted {
            context: ErrorContext::new("openai").with_status(429),
            message: "You exceeded your current quota".into(),
        };
        assert_eq!(quota.kind(), ErrorKind::QuotaExhausted);
        assert!(!quota.is_retryable());
        assert_eq!(
            quota.to_string(),
            "openai (HTTP 429): quota exhausted: You exceeded your current quota"
        );
        let big = Error::BodyTooLarge {
            context: ErrorContext::new("gemini").with_status(200),
            which: BodyLimit::Event,
            limit: 4096,
        };
        assert_eq!(big.kind(), ErrorKind::BodyTooLarge);
        assert!(!big.is_retryable());
        assert_eq!(
            big.to_string(),
            "gemini (HTTP 200): server-sent event too large: over the max_event_bytes limit of 4096 bytes"
        );
    }

    /// What each variant answers: `(kind, timeout, connect, rate limited, auth, quota, cancelled,
    /// retryable)`. The match has no wildcard, so a new variant does not compile here until it is
    /// classified (and sampled in [`every_variant`]).
    fn expected(e: &Error) -> (ErrorKind, [bool; 7]) {
        use ErrorKind as K;
        let f = false;
        match e {
            Error::Authentication { .. } => (K::Authentication, [f, f, f, true, f, f, f]),
            Error::RateLimited { .. } => (K::RateLimited, [f, f, true, f, f, f, true]),
            Error::QuotaExhausted { .. } => (K::QuotaExhausted, [f, f, f, f, true, f, f]),
            Error::ContextLengthExceeded { .. } => (K::ContextLengthExceeded, [f; 7]),
            Error::ModelNotFound { .. } => (K::ModelNotFound, [f; 7]),
            Error::Refused { .. } => (K::Refused, [f; 7]),
            Error::Overloaded { .. } => (K::Overloaded, [f, f, f, f, f, f, true]),
            Error::Server { context, .. } => {
                (K::Server, [f, f, f, f, f, f, context.status != Some(501)])
            }
            Error::BadRequest { .. } => (K::BadRequest, [f; 7]),
            Error::Timeout { .. } => (K::Timeout, [true, f, f, f, f, f, true]),
            Error::Network { .. } => (K::Network, [f, true, f, f, f, f, true]),
            Error::Cancelled { .. } => (K::Cancelled, [f, f, f, f, f, true, f]),
            Error::MalformedResponse { .. } => (K::MalformedResponse, [f; 7]),
            Error::BodyTooLarge { .. } => (K::BodyTooLarge, [f; 7]),
            Error::ToolArguments { .. } => (K::ToolArguments, [f; 7]),
            Error::Other { .. } => (K::Other, [f; 7]),
        }
    }

    /// One error of every variant (a server error twice: transient and not).
    fn every_variant() -> Vec<Error> {
        let c = || ErrorContext::new("p").with_status(500);
        let m = String::new;
        vec![
            Error::Authentication {
                context: c(),
                message: m(),
            },
            Error::RateLimited {
                context: c(),
                retry_after: None,
                message: m(),
            },
            Error::QuotaExhausted {
                context: c(),
                message: m(),
            },
            Error::ContextLengthExceeded {
                context: c(),
                message: m(),
            },
            Error::ModelNotFound {
                context: c(),
                model: m(),
            },
            Error::Refused {
                context: c(),
                message: m(),
            },
            Error::Overloaded {
                context: c(),
                retry_after: None,
                message: m(),
            },
            Error::Server {
                context: c(),
                message: m(),
            },
            Error::Server {
                context: c().with_status(501),
                message: m(),
            },
            Error::BadRequest {
                context: c(),
                message: m(),
            },
            Error::Timeout {
                context: c(),
                after: Duration::from_secs(1),
            },
            Error::Network {
                context: c(),
                message: m(),
            },
            Error::Cancelled { context: c() },
            Error::MalformedResponse {
                context: c(),
                reason: m(),
                excerpt: m(),
            },
            Error::BodyTooLarge {
                context: c(),
                which: BodyLimit::Body,
                limit: 1,
            },
            Error::ToolArguments {
                context: c(),
                id: m(),
                name: m(),
                reason: "".into(),
            },
            Error::Other {
                context: c(),
                message: m(),
            },
        ]
    }

    #[test]
    fn every_variant_is_classified() {
        let samples = every_variant();
        let kinds: std::collections::HashSet<ErrorKind> = samples.iter().map(Error::kind).collect();
        assert_eq!(
            kinds.len(),
            16,
            "a variant without a sample, or two of one kind"
        );
        for e in &samples {
            let got = [
                e.is_timeout(),
                e.is_connect(),
                e.is_rate_limited(),
                e.is_auth(),
                e.is_quota_exhausted(),
                e.is_cancelled(),
                e.is_retryable(),
            ];
            assert_eq!((e.kind(), got), expected(e), "{e:?}");
            assert_eq!(e.status(), e.context().status);
        }
    }
}
