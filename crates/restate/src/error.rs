//! The errors of claij-restate: each names the URL, run or state it is about, never a header.

/// Why a call to the Restate server, or a worker's wiring, failed.
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
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
