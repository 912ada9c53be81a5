//! The retry policy: which failures are retried, how long to wait (exponential backoff with jitter,
//! or the server's `Retry-After`), and the bounds on requests and total time.

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use tokio::time::Instant;
use tracing::field::Empty;
use tracing::{Instrument as _, debug_span, warn};

use crate::error::humanize;
use crate::{Error, ErrorContext};

/// When and how often a failed HTTP request is sent again.
///
/// Retried: what [`Error::is_retryable`] calls retryable, the one definition the pipeline uses too:
/// a rate limit, an overloaded provider, a server error (not a 501), a broken connection, a timeout,
/// whether the status line says it (429, 500, 502, 503, 504, 529) or an error arrives inside a 200
/// body, or in a stream before any of its content (Anthropic's `overloaded_error` event, an
/// OpenRouter error chunk). Never retried: anything else (400, 401, 403, 404, 422, a malformed or
/// oversized body, a refusal), nor an exhausted quota whatever its status
/// ([`Error::QuotaExhausted`], such as OpenAI's 429 `insufficient_quota`).
/// The wait before request `n + 1` is `initial_backoff * 2^(n-1)`, at most `max_backoff`, less a
/// random part of up to `jitter` of it.
///
/// A wait the server asks for (`Retry-After`, `retry-after-ms`, Gemini's `RetryInfo`) is waited
/// exactly, however long, when it fits in what is left of the retry budget, `max_total`; when it does
/// not, the call fails at once with the server's error, its `retry_after` set and its message saying
/// the wait and the budget (`the server asks to wait 86400.0 s, more than the retry budget of
/// 120.0 s`). No retry starts once the call has run for `max_total`, or would pass it while waiting.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// HTTP requests in all, the first included (1 means no retry).
    pub max_requests: u32,
    /// The wait before the first retry.
    pub initial_backoff: Duration,
    /// The longest single backoff. A wait the server asks for is not capped by it, only by
    /// `max_total`.
    pub max_backoff: Duration,
    /// The retry budget: the longest a call may take with all its requests and waits.
    pub max_total: Duration,
    /// The share of each backoff, from 0.0 to 1.0, taken off at random so clients do not retry in step.
    pub jitter: f64,
}

impl Default for RetryPolicy {
    /// Four requests, backoff from 500 ms up to 30 s, two minutes in all, half the backoff jittered.
    fn default() -> Self {
        Self {
            max_requests: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_total: Duration::from_secs(120),
            jitter: 0.5,
        }
    }
}

impl RetryPolicy {
    /// One request, no retry.
    pub fn none() -> Self {
        Self {
            max_requests: 1,
            ..Self::default()
        }
    }

    /// The same policy with another number of requests.
    #[must_use]
    pub fn with_max_requests(mut self, requests: u32) -> Self {
        self.max_requests = requests;
        self
    }

    /// The same policy with other backoff bounds.
    #[must_use]
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// The same policy with another retry budget (the bound on the whole call).
    #[must_use]
    pub fn with_max_total(mut self, max_total: Duration) -> Self {
        self.max_total = max_total;
        self
    }

    /// The same policy with another jitter (clamped to 0.0..=1.0).
    #[must_use]
    pub fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// The backoff after failed request `request` (1 for the first), for a `random` draw in `[0, 1)`.
    pub fn backoff(&self, request: u32, random: f64) -> Duration {
        let doublings = request.saturating_sub(1).min(31);
        let full = self
            .initial_backoff
            .saturating_mul(1u32 << doublings)
            .min(self.max_backoff);
        let jitter = if self.jitter.is_finite() {
            self.jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        full.mul_f64(1.0 - jitter * random.clamp(0.0, 1.0))
    }

    /// What to do after `error` on request `request`, `elapsed` into the call.
    pub(crate) fn next(&self, error: &Error, request: u32, elapsed: Duration) -> Next {
        if request >= self.max_requests || !error.is_retryable() {
            return Next::Stop;
        }
        let left = self.max_total.saturating_sub(elapsed);
        match error.retry_after() {
            Some(wait) if wait < left => Next::Retry(wait),
            Some(wait) => Next::TooLong {
                wait,
                budget: self.max_total,
                left,
            },
            None => {
                let wait = self.backoff(request, random_unit());
                if wait < left {
                    Next::Retry(wait)
                } else {
                    Next::Stop
                }
            }
        }
    }
}

/// The retry decision after a failed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Wait this long, then send again.
    Retry(Duration),
    /// Return the error as it is.
    Stop,
    /// The server asks for a wait past the budget: return its error at once, saying so.
    TooLong {
        /// The wait the server asks for.
        wait: Duration,
        /// The whole retry budget (`max_total`).
        budget: Duration,
        /// What is left of it.
        left: Duration,
    },
}

/// Runs `send` until it succeeds, fails for good, or the policy gives up. The error returned counts
/// the HTTP requests made (`ErrorContext::requests`). Each request runs in an
/// `http.request{provider,model,request}` span (numbered from 1, see `request_span`): `attempt` is
/// the pipeline's word for a validation attempt, which may make several HTTP requests.
pub(crate) async fn run<T, F, Fut>(
    policy: &RetryPolicy,
    context: &ErrorContext,
    model: &str,
    mut send: F,
) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut retrier = Retrier::new(policy, context, model);
    loop {
        let span = retrier.span();
        match send().instrument(span.clone()).await {
            Ok(value) => return Ok(value),
            Err(error) => retrier.failed(&span, error).await?,
        }
    }
}

/// Where one call is in its retries: the request it is on (from 1) and when it started. [`run`]
/// drives it for a whole exchange; a stream keeps one to retry an error that arrives in its body
/// before any of its content.
pub(crate) struct Retrier<'a> {
    policy: &'a RetryPolicy,
    context: ErrorContext,
    model: &'a str,
    // tokio's clock, so tests can run the waits on a paused clock.
    started: Instant,
    request: u32,
}

impl<'a> Retrier<'a> {
    /// At the first request of a call to `context`'s provider.
    pub(crate) fn new(policy: &'a RetryPolicy, context: &ErrorContext, model: &'a str) -> Self {
        Self {
            policy,
            context: context.clone(),
            model,
            started: Instant::now(),
            request: 1,
        }
    }

    /// The number of the request in flight (1 for the first).
    pub(crate) fn request(&self) -> u32 {
        self.request
    }

    /// The span of the request in flight.
    pub(crate) fn span(&self) -> tracing::Span {
        request_span(&self.context, self.model, self.request)
    }

    /// The request in flight (its `span`) failed with `error`: after the wait the policy asks for,
    /// `Ok` to send the next one; or the error to return, counting the requests made (and saying so
    /// when the server's wait is past the retry budget).
    pub(crate) async fn failed(&mut self, span: &tracing::Span, error: Error) -> Result<(), Error> {
        record_failure(span, &error);
        let n = self.request;
        let mut error = error;
        let wait = match self.policy.next(&error, n, self.started.elapsed()) {
            Next::Retry(wait) => wait,
            Next::Stop => {
                error.context_mut().requests = n;
                return Err(error);
            }
            Next::TooLong { wait, budget, left } => {
                let mut error = past_budget(error, wait, budget, left);
                error.context_mut().requests = n;
                return Err(error);
            }
        };
        warn!(
            provider = %self.context.provider,
            model = self.model,
            request = n,
            of = self.policy.max_requests,
            status = error.context().status,
            wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            error = %error,
            "retrying after a failed request"
        );
        tokio::time::sleep(wait).await;
        self.request += 1;
        Ok(())
    }
}

/// The span of HTTP request `n` of a call: `provider`, `model`, `request` for the logs, and for an
/// OpenTelemetry exporter a client span with HTTP's semantic-convention fields
/// (`http.request.resend_count` from the second request on; on failure the status, `error.type` and
/// an error status).
fn request_span(context: &ErrorContext, model: &str, n: u32) -> tracing::Span {
    // `request` last: log lines end with the request's number.
    debug_span!(
        "http.request",
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        http.request.resend_count = n.checked_sub(1).filter(|r| *r > 0).map(i64::from),
        http.response.status_code = Empty,
        error.type = Empty,
        provider = %context.provider,
        model,
        request = n,
    )
}

/// A failed request on its span (the error's message is secret-free; redacted again all the same).
fn record_failure(span: &tracing::Span, error: &Error) {
    if span.is_disabled() {
        return;
    }
    if let Some(status) = error.context().status {
        span.record("http.response.status_code", i64::from(status));
    }
    span.record("error.type", format!("{:?}", error.kind()));
    span.record("otel.status_code", "ERROR");
    span.record(
        "otel.status_description",
        crate::redact::redact_text(&error.to_string()).as_ref(),
    );
}

/// `error` (rate limited or overloaded) with its message saying the server's wait is past the budget.
fn past_budget(error: Error, wait: Duration, budget: Duration, left: Duration) -> Error {
    let left = if budget.saturating_sub(left) < Duration::from_millis(100) {
        String::new()
    } else {
        format!(" ({} left)", humanize(left))
    };
    let note = format!(
        "the server asks to wait {}, more than the retry budget of {}{left}",
        humanize(wait),
        humanize(budget)
    );
    let join = |message: String| {
        if message.is_empty() {
            note.clone()
        } else {
            format!("{note}; {message}")
        }
    };
    match error {
        Error::RateLimited {
            context,
            retry_after,
            message,
        } => Error::RateLimited {
            context,
            retry_after,
            message: join(message),
        },
        Error::Overloaded {
            context,
            retry_after,
            message,
        } => Error::Overloaded {
            context,
            retry_after,
            message: join(message),
        },
        other => other,
    }
}

/// The server's requested wait: `retry-after-ms` (milliseconds, as OpenAI sends), else `Retry-After`
/// (seconds or an HTTP date).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    text("retry-after-ms")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map(|ms| Duration::from_secs_f64(ms.min(86_400_000.0) / 1000.0))
        .or_else(|| text("retry-after").and_then(|v| parse_retry_after(v, SystemTime::now())))
}

/// A `Retry-After` value: delay seconds, or an HTTP date (a past date means now).
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::from_secs_f64(seconds.min(86_400.0)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A random number in `[0, 1)`, good enough for jitter (std's hasher keys are random per instance).
fn random_unit() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0x5eed);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}
