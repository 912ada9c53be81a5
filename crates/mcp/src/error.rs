//! [`Error`]: what can go wrong talking to MCP servers, saying which server and which request.
//!
//! [`Error::kind`] names the variant; the predicates ([`Error::is_timeout`], [`Error::is_auth`],
//! [`Error::is_connect`]...) carry the names the other claij crates use for the same meaning. There
//! is no `is_retryable` here: "retryable" is defined once, for model calls, by
//! `claij_backends::Error::is_retryable`; whether to call a tool again is the caller's to decide.

use std::time::Duration;

/// An MCP failure that is not the tool's own answer (those are [`crate::CallOutcome`]s with
/// `is_error`). Every variant names the server.
///
/// Branch on the predicates (or [`Error::kind`]) rather than on the variants' fields:
///
/// ```
/// use std::time::Duration;
/// use claij_mcp::{Error, ErrorKind};
///
/// let error = Error::Timeout {
///     server: "files".into(),
///     method: "tools/call read_file".into(),
///     after: Duration::from_secs(30),
/// };
/// let advice = if error.is_auth() {
///     format!("run `claij mcp login {}`", error.server().unwrap_or_default())
/// } else if error.is_timeout() {
///     "raise the timeout".to_owned()
/// } else {
///     error.to_string()
/// };
/// assert_eq!(advice, "raise the timeout");
/// assert_eq!(error.kind(), ErrorKind::Timeout);
/// assert!(!error.is_connect() && !error.is_config());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is not in the `mcpServers` shape, or names something inconsistent.
    #[error("invalid MCP configuration at {pointer}: {message}")]
    Config {
        /// Where in the configuration (a JSON pointer).
        pointer: String,
        /// What is wrong.
        message: String,
    },
    /// A stdio server could not be started.
    #[error("mcp server `{server}`: cannot start `{command}`")]
    Spawn {
        /// The server's name.
        server: String,
        /// The program (never its arguments or environment, which may hold secrets).
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The server was started (or reached) but the protocol handshake failed.
    #[error("mcp server `{server}`: handshake failed: {message}")]
    Handshake {
        /// The server's name.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// The server asks for OAuth 2.1 authorization and the [`Authorizer`](crate::Authorizer)
    /// declined with [`NeedsAuthorization`](crate::NeedsAuthorization): no usable tokens, and no
    /// one to approve now.
    #[error("mcp server `{server}` needs authorization")]
    Unauthorized {
        /// The server's name.
        server: String,
    },
    /// A request got no answer in time.
    #[error("mcp server `{server}`: `{method}` timed out after {}", humanize(*after))]
    Timeout {
        /// The server's name.
        server: String,
        /// The request (`tools/call read_file`, `tools/list`).
        method: String,
        /// The timeout that ran out.
        after: Duration,
    },
    /// The server's process exited or its connection closed; the client is marked dead.
    #[error("mcp server `{server}` is gone: {reason}")]
    Dead {
        /// The server's name.
        server: String,
        /// What was observed (exit, closed stream, failed reconnect).
        reason: String,
    },
    /// A message from the server was over the size limit (`maxMessageBytes` in the configuration,
    /// [`crate::ClientOptions::max_message_bytes`]): the request failed as soon as that was seen.
    #[error(
        "mcp server `{server}`: the answer to `{method}` is {size} bytes or more, over the limit of {limit} bytes (maxMessageBytes)"
    )]
    TooLarge {
        /// The server's name.
        server: String,
        /// The request.
        method: String,
        /// Bytes of the message seen when the request failed (all of it, or as far as it had come).
        size: u64,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The call was cancelled (an FSM interrupt, a dropped future).
    #[error("mcp server `{server}`: `{method}` was cancelled")]
    Cancelled {
        /// The server's name.
        server: String,
        /// The request.
        method: String,
    },
    /// The server answered with a JSON-RPC error to something other than a tool call (those become
    /// outcomes), or with a reply that does not fit the request.
    #[error("mcp server `{server}`: `{method}` failed: {message} (code {code})")]
    Protocol {
        /// The server's name.
        server: String,
        /// The request.
        method: String,
        /// The JSON-RPC error code (0 for an unexpected reply).
        code: i32,
        /// The server's message.
        message: String,
    },
    /// No server of that name is configured (or the active project does not allow it).
    #[error("no mcp server `{server}`; configured: {}", list(known))]
    UnknownServer {
        /// The name asked for.
        server: String,
        /// The servers there are.
        known: Vec<String>,
    },
    /// A log level that is not one of MCP's (`debug` ... `emergency`).
    #[error(
        "unknown MCP log level `{given}`: expected one of debug, info, notice, warning, error, critical, alert, emergency"
    )]
    UnknownLogLevel {
        /// The name given.
        given: String,
    },
    /// A tool name given as `server.tool` without the dot.
    #[error("`{name}` is not a qualified tool name: expected `server.tool`")]
    Unqualified {
        /// The name given.
        name: String,
    },
    /// The authorization response came back with an issuer (`iss`, RFC 9207) other than the
    /// authorization server's, or without one from a server that advertises
    /// `authorization_response_iss_parameter_supported`: the code was not exchanged (a mix-up
    /// attack, or a misconfigured server).
    #[error(
        "mcp server `{server}`: authorization refused: the authorization response {}, not the authorization server's issuer `{expected}` (RFC 9207)",
        match received {
            Some(received) => format!("names the issuer `{received}`"),
            None => "names no issuer (`iss`), which its server says it sends".to_owned(),
        }
    )]
    IssuerMismatch {
        /// The server's name.
        server: String,
        /// The issuer of the authorization server's metadata.
        expected: String,
        /// The `iss` of the authorization response, if it had one.
        received: Option<String>,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of failure an [`Error`] is, to match on without its fields.
///
/// One kind per crate, naming its own variants; the meanings shared across claij crates are the
/// predicates on [`Error`] (see `claij_interceptors`' crate docs for why).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Config`].
    Config,
    /// [`Error::Spawn`].
    Spawn,
    /// [`Error::Handshake`].
    Handshake,
    /// [`Error::Unauthorized`].
    Unauthorized,
    /// [`Error::Timeout`].
    Timeout,
    /// [`Error::Dead`].
    Dead,
    /// [`Error::TooLarge`].
    TooLarge,
    /// [`Error::Cancelled`].
    Cancelled,
    /// [`Error::Protocol`].
    Protocol,
    /// [`Error::UnknownServer`].
    UnknownServer,
    /// [`Error::UnknownLogLevel`].
    UnknownLogLevel,
    /// [`Error::Unqualified`].
    Unqualified,
    /// [`Error::IssuerMismatch`].
    IssuerMismatch,
}

impl Error {
    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Config { .. } => ErrorKind::Config,
            Error::Spawn { .. } => ErrorKind::Spawn,
            Error::Handshake { .. } => ErrorKind::Handshake,
            Error::Unauthorized { .. } => ErrorKind::Unauthorized,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::Dead { .. } => ErrorKind::Dead,
            Error::TooLarge { .. } => ErrorKind::TooLarge,
            Error::Cancelled { .. } => ErrorKind::Cancelled,
            Error::Protocol { .. } => ErrorKind::Protocol,
            Error::UnknownServer { .. } => ErrorKind::UnknownServer,
            Error::UnknownLogLevel { .. } => ErrorKind::UnknownLogLevel,
            Error::Unqualified { .. } => ErrorKind::Unqualified,
            Error::IssuerMismatch { .. } => ErrorKind::IssuerMismatch,
        }
    }

    /// Whether a request got no answer in time ([`Error::Timeout`]).
    pub fn is_timeout(&self) -> bool {
        self.kind() == ErrorKind::Timeout
    }

    /// Whether the server could not be reached or is gone: it would not start, its handshake
    /// (its authorization included) failed, or its process or connection ended ([`Error::Spawn`],
    /// [`Error::Handshake`], [`Error::IssuerMismatch`], [`Error::Dead`]).
    pub fn is_connect(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::Spawn | ErrorKind::Handshake | ErrorKind::IssuerMismatch | ErrorKind::Dead
        )
    }

    /// Whether the server needs authorization nobody gave ([`Error::Unauthorized`]).
    pub fn is_auth(&self) -> bool {
        self.kind() == ErrorKind::Unauthorized
    }

    /// Whether the request was cancelled ([`Error::Cancelled`]).
    pub fn is_cancelled(&self) -> bool {
        self.kind() == ErrorKind::Cancelled
    }

    /// Whether an answer was over `maxMessageBytes` ([`Error::TooLarge`]).
    pub fn is_too_large(&self) -> bool {
        self.kind() == ErrorKind::TooLarge
    }

    /// Whether what was asked for is not in the configuration or not well formed: the
    /// configuration itself, an unknown server, log level, or a tool name without its server
    /// ([`Error::Config`], [`Error::UnknownServer`], [`Error::UnknownLogLevel`],
    /// [`Error::Unqualified`]).
    pub fn is_config(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::Config
                | ErrorKind::UnknownServer
                | ErrorKind::UnknownLogLevel
                | ErrorKind::Unqualified
        )
    }

    /// The server the error concerns, when there is one.
    pub fn server(&self) -> Option<&str> {
        match self {
            Error::Spawn { server, .. }
            | Error::Handshake { server, .. }
            | Error::Unauthorized { server }
            | Error::Timeout { server, .. }
            | Error::Dead { server, .. }
            | Error::Cancelled { server, .. }
            | Error::TooLarge { server, .. }
            | Error::Protocol { server, .. }
            | Error::IssuerMismatch { server, .. }
            | Error::UnknownServer { server, .. } => Some(server),
            Error::Config { .. } | Error::Unqualified { .. } | Error::UnknownLogLevel { .. } => {
                None
            }
        }
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

pub(crate) fn humanize(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// `(kind, [timeout, connect, auth, cancelled, too large, config])` of each variant. No
    /// wildcard, so a new variant does not compile here until it is classified (and sampled).
    fn expected(e: &Error) -> (ErrorKind, [bool; 6]) {
        use ErrorKind as K;
        let f = false;
        match e {
            Error::Config { .. } => (K::Config, [f, f, f, f, f, true]),
            Error::Spawn { .. } => (K::Spawn, [f, true, f, f, f, f]),
            Error::Handshake { .. } => (K::Handshake, [f, true, f, f, f, f]),
            Error::Unauthorized { .. } => (K::Unauthorized, [f, f, true, f, f, f]),
            Error::Timeout { .. } => (K::Timeout, [true, f, f, f, f, f]),
            Error::Dead { .. } => (K::Dead, [f, true, f, f, f, f]),
            Error::TooLarge { .. } => (K::TooLarge, [f, f, f, f, true, f]),
            Error::Cancelled { .. } => (K::Cancelled, [f, f, f, true, f, f]),
            Error::Protocol { .. } => (K::Protocol, [f; 6]),
            Error::UnknownServer { .. } => (K::UnknownServer, [f, f, f, f, f, true]),
            Error::UnknownLogLevel { .. } => (K::UnknownLogLevel, [f, f, f, f, f, true]),
            Error::Unqualified { .. } => (K::Unqualified, [f, f, f, f, f, true]),
            Error::IssuerMismatch { .. } => (K::IssuerMismatch, [f, true, f, f, f, f]),
        }
    }

    #[test]
    fn every_variant_is_classified() {
        let s = || "s".to_owned();
        let samples = vec![
            Error::Config {
                pointer: s(),
                message: s(),
            },
            Error::Spawn {
                server: s(),
                command: s(),
                source: std::io::Error::other("x"),
            },
            Error::Handshake {
                server: s(),
                message: s(),
            },
            Error::Unauthorized { server: s() },
            Error::Timeout {
                server: s(),
                method: s(),
                after: Duration::from_secs(1),
            },
            Error::Dead {
                server: s(),
                reason: s(),
            },
            Error::TooLarge {
                server: s(),
                method: s(),
                size: 2,
                limit: 1,
            },
            Error::Cancelled {
                server: s(),
                method: s(),
            },
            Error::Protocol {
                server: s(),
                method: s(),
                code: 1,
                message: s(),
            },
            Error::UnknownServer {
                server: s(),
                known: Vec::new(),
            },
            Error::UnknownLogLevel { given: s() },
            Error::Unqualified { name: s() },
            Error::IssuerMismatch {
                server: s(),
                expected: s(),
                received: None,
            },
        ];
        let kinds: std::collections::HashSet<ErrorKind> = samples.iter().map(Error::kind).collect();
        assert_eq!(kinds.len(), 13, "a variant without a sample");
        for e in &samples {
            let got = [
                e.is_timeout(),
                e.is_connect(),
                e.is_auth(),
                e.is_cancelled(),
                e.is_too_large(),
                e.is_config(),
            ];
            assert_eq!((e.kind(), got), expected(e), "{e}");
        }
    }

    #[test]
    fn an_issuer_mismatch_names_both_issuers_or_the_missing_one() {
        let mismatch = Error::IssuerMismatch {
            server: "files".to_owned(),
            expected: "http://127.0.0.1:1".to_owned(),
            received: Some("https://evil.example.com".to_owned()),
        };
        assert_eq!(
            mismatch.to_string(),
            "mcp server `files`: authorization refused: the authorization response names the issuer \
             `https://evil.example.com`, not the authorization server's issuer `http://127.0.0.1:1` \
             (RFC 9207)"
        );
        let missing = Error::IssuerMismatch {
            server: "files".to_owned(),
            expected: "http://127.0.0.1:1".to_owned(),
            received: None,
        };
        assert!(
            missing.to_string().contains("names no issuer (`iss`)"),
            "{missing}"
        );
        assert_eq!(missing.server(), Some("files"));
    }
}
