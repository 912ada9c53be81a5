//! Backend errors: one variant per way a caller reacts, each saying which provider, status and request.

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
}

impl ErrorContext {
    /// A context naming only the provider.
    pub fn provider(provider: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            ..Self::default()
        }
    }

    /// The same context with an HTTP status.
    #[must_use]
    pub fn status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// The same context with a request id.
    #[must_use]
    pub fn request_id(mut self, id: impl Into<String>) -> Self {
        self.request_id = Some(id.into());
        self
    }
}

impl fmt::Display for ErrorContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.provider)?;
        match (self.status, &self.request_id) {
            (Some(s), Some(id)) => write!(f, " (HTTP {s}, request {id})"),
            (Some(s), None) => write!(f, " (HTTP {s})"),
            (None, Some(id)) => write!(f, " (request {id})"),
            (None, None) => Ok(()),
        }
    }
}

/// Why a backend call failed. Messages never contain an API key.
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
            | Error::Other { context, .. } => context,
        }
    }

    /// Whether trying the same request again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::RateLimited { .. }
                | Error::Overloaded { .. }
                | Error::Server { .. }
                | Error::Timeout { .. }
                | Error::Network { .. }
        )
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

    /// A failure of a custom backend.
    pub fn other(provider: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Other {
            context: ErrorContext::provider(provider),
            message: message.into(),
        }
    }
}

fn retry_suffix(after: &Option<Duration>) -> String {
    after.map_or_else(String::new, |d| format!(" (retry after {})", humanize(d)))
}

fn humanize(d: Duration) -> String {
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
            context: ErrorContext::provider("openrouter")
                .status(429)
                .request_id("req-1"),
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
            context: ErrorContext::provider("local"),
            after: Duration::from_millis(250),
        };
        assert_eq!(t.to_string(), "local: timed out after 250 ms");
        assert!(!Error::other("x", "y").is_retryable());
    }
}
