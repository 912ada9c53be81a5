//! [`Error`]: what can go wrong talking to MCP servers, saying which server and which request.

use std::time::Duration;

/// An MCP failure that is not the tool's own answer (those are [`crate::CallOutcome`]s with
/// `is_error`). Every variant names the server.
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
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
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
