//! The errors of claij-restate: each names the URL, run or state it is about, never a header.
//!
//! [`Error::kind`] names the variant; the predicates ([`Error::is_timeout`], [`Error::is_connect`],
//! [`Error::status`]) use the names of the other claij crates and of reqwest, whose error an
//! [`Error::Http`] wraps and answers them from. There is no `is_retryable`: "retryable" is defined
//! once, for model calls (`claij_backends::Error::is_retryable`); a run journals its own retries.

/// Why a call to the Restate server, or a worker's wiring, failed.
///
/// Branch on the predicates (or [`Error::kind`]):
///
/// ```
/// use std::time::Duration;
/// use claij_restate::{Error, ErrorKind};
///
/// let error = Error::Timeout { run: "run-1".into(), waited: Duration::from_secs(600) };
/// let advice = match error.kind() {
///     ErrorKind::Timeout => "follow the run again by its id",
///     _ if error.is_connect() => "is the Restate server up?",
///     _ if error.status() == Some(404) => "no such run",
///     _ => "give up",
/// };
/// assert_eq!(advice, "follow the run again by its id");
/// assert!(error.is_timeout());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server could not be reached, or the request did not complete in time.
    #[error("{method} {url}: the request failed")]
    Http {
        /// `GET`, `POST`.
        method: &'static str,
        /// The URL (the server's, with the path: never a secret).
        url: String,
        /// The HTTP client's error.
        source: reqwest::Error,
    },
    /// The server answered with an error status.
    #[error("{method} {url}: status {status}: {message}")]
    Status {
        /// `GET`, `POST`.
        method: &'static str,
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the body the server sent (at most [`crate::client::Limits::error_body`] bytes).
        message: String,
    },
    /// A response body was larger than the limit.
    #[error("{url}: the response is larger than {limit} bytes")]
    TooLarge {
        /// The URL.
        url: String,
        /// The limit.
        limit: usize,
    },
    /// A response body was not the JSON expected.
    #[error("{url}: unexpected response")]
    Decode {
        /// The URL.
        url: String,
        /// Why it does not decode.
        source: serde_json::Error,
    },
    /// A run did not end within the time allowed ([`crate::Limits::run_timeout`]); it goes on on the
    /// server.
    #[error(
        "run `{run}`: no result after {waited:?}, the limit run_timeout (the run goes on on the server; follow it again by its id)"
    )]
    Timeout {
        /// The run id.
        run: String,
        /// How long the client waited.
        waited: std::time::Duration,
    },
    /// A run waits for input in another state than the one named, or in none.
    #[error("run `{run}` is not waiting for input{}", .state.as_ref().map(|s| format!(" (it is in `{s}`)")).unwrap_or_default())]
    NotWaiting {
        /// The run id.
        run: String,
        /// Where it is, when known.
        state: Option<String>,
    },
    /// A URL given to the client cannot be used.
    #[error("bad URL `{url}`: {message}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// The worker's endpoint could not be served.
    #[error("cannot serve on {bind}")]
    Serve {
        /// The address.
        bind: std::net::SocketAddr,
        /// The IO error.
        source: std::io::Error,
    },
    /// A request-identity public key that restate-sdk does not take.
    #[error("{key} is not a Restate request-identity public key (publickeyv1_...): {reason}")]
    IdentityKey {
        /// The key, quoted, when it looks like one (else its length only: never a secret).
        key: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// What kind of failure an [`Error`] is, to match on without its fields.
///
/// One kind per crate, naming its own variants; the meanings shared across claij crates are the
/// predicates on [`Error`] (see `claij_interceptors`' crate docs for why).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Http`].
    Http,
    /// [`Error::Status`].
    Status,
    /// [`Error::TooLarge`].
    TooLarge,
    /// [`Error::Decode`].
    Decode,
    /// [`Error::Timeout`].
    Timeout,
    /// [`Error::NotWaiting`].
    NotWaiting,
    /// [`Error::Url`].
    Url,
    /// [`Error::Serve`].
    Serve,
    /// [`Error::IdentityKey`].
    IdentityKey,
}

impl Error {
    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Http { .. } => ErrorKind::Http,
            Error::Status { .. } => ErrorKind::Status,
            Error::TooLarge { .. } => ErrorKind::TooLarge,
            Error::Decode { .. } => ErrorKind::Decode,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::NotWaiting { .. } => ErrorKind::NotWaiting,
            Error::Url { .. } => ErrorKind::Url,
            Error::Serve { .. } => ErrorKind::Serve,
            Error::IdentityKey { .. } => ErrorKind::IdentityKey,
        }
    }

    /// Whether something did not finish in time: a run within `run_timeout` ([`Error::Timeout`]),
    /// or a request ([`Error::Http`] whose reqwest error `is_timeout()`).
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Timeout { .. } => true,
            Error::Http { source, .. } => source.is_timeout(),
            _ => false,
        }
    }

    /// Whether the server could not be reached ([`Error::Http`] whose reqwest error
    /// `is_connect()`).
    pub fn is_connect(&self) -> bool {
        matches!(self, Error::Http { source, .. } if source.is_connect())
    }

    /// Whether a response was over its size limit ([`Error::TooLarge`]).
    pub fn is_too_large(&self) -> bool {
        self.kind() == ErrorKind::TooLarge
    }

    /// The HTTP status the server answered with, when it answered with an error.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Status { status, .. } => Some(*status),
            Error::Http { source, .. } => source.status().map(|s| s.as_u16()),
            _ => None,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// `(kind, [timeout, connect, too large], status)` of each variant, `Http`'s as its reqwest
    /// error says (a request that could not be built: none). No wildcard, so a new variant does
    /// not compile here until it is classified (and sampled).
    fn expected(e: &Error) -> (ErrorKind, [bool; 3], Option<u16>) {
        match e {
            Error::Http { .. } => (ErrorKind::Http, [false; 3], None),
            Error::Status { status, .. } => (ErrorKind::Status, [false; 3], Some(*status)),
            Error::TooLarge { .. } => (ErrorKind::TooLarge, [false, false, true], None),
            Error::Decode { .. } => (ErrorKind::Decode, [false; 3], None),
            Error::Timeout { .. } => (ErrorKind::Timeout, [true, false, false], None),
            Error::NotWaiting { .. } => (ErrorKind::NotWaiting, [false; 3], None),
            Error::Url { .. } => (ErrorKind::Url, [false; 3], None),
            Error::Serve { .. } => (ErrorKind::Serve, [false; 3], None),
            Error::IdentityKey { .. } => (ErrorKind::IdentityKey, [false; 3], None),
        }
    }

    #[tokio::test]
    async fn every_variant_is_classified() {
        let s = || "s".to_owned();
        // A request that cannot be built: a reqwest error without any network.
        let http = reqwest::Client::new()
            .get("http://")
            .send()
            .await
            .unwrap_err();
        let samples = vec![
            Error::Http {
                method: "GET",
                url: s(),
                source: http,
            },
            Error::Status {
                method: "GET",
                url: s(),
                status: 404,
                message: s(),
            },
            Error::TooLarge { url: s(), limit: 1 },
            Error::Decode {
                url: s(),
                source: serde_json::from_str::<u8>("x").unwrap_err(),
            },
            Error::Timeout {
                run: s(),
                waited: std::time::Duration::from_secs(1),
            },
            Error::NotWaiting {
                run: s(),
                state: None,
            },
            Error::Url {
                url: s(),
                message: s(),
            },
            Error::Serve {
                bind: std::net::SocketAddr::from(([127, 0, 0, 1], 1)),
                source: std::io::Error::other("in use"),
            },
            Error::IdentityKey {
                key: s(),
                reason: s(),
            },
        ];
        let kinds: std::collections::HashSet<ErrorKind> = samples.iter().map(Error::kind).collect();
        assert_eq!(kinds.len(), 9, "a variant without a sample");
        for e in &samples {
            let got = [e.is_timeout(), e.is_connect(), e.is_too_large()];
            assert_eq!((e.kind(), got, e.status()), expected(e), "{e}");
        }
    }

    /// A request to a port nobody listens on is `is_connect()`, as reqwest says.
    #[tokio::test]
    async fn a_refused_connection_is_is_connect() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}/");
        let source = reqwest::Client::new().get(&url).send().await.unwrap_err();
        let e = Error::Http {
            method: "GET",
            url,
            source,
        };
        assert!(e.is_connect() && !e.is_timeout(), "{e:?}");
    }
}
