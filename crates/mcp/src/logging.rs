//! MCP logging: the severity a client asks servers to log at (`logging/setLevel`) and the log
//! messages servers send (`notifications/message`), handed to [`crate::Hooks::on_log`].

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::error::Error;

/// The `tracing` target of the servers' log messages: each is an event there, at the level its
/// severity maps to (`debug` DEBUG, `info` and `notice` INFO, `warning` WARN, `error` and above
/// ERROR), its text the event's message, with fields `server`, `level` (MCP's name) and `logger`.
pub const SERVER_LOG_TARGET: &str = "claij_mcp::server_log";

/// A log severity, as MCP names them (RFC 5424's, least severe first, so `Ord` compares
/// severity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detailed information for debugging.
    Debug,
    /// General information.
    Info,
    /// A normal but significant event.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level's name on the wire (`debug`, `warning`...).
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LogLevel {
    type Err = Error;

    /// A level from its wire name, in any case.
    ///
    /// ```
    /// use claij_mcp::LogLevel;
    /// assert_eq!("Warning".parse::<LogLevel>()?, LogLevel::Warning);
    /// assert!("loud".parse::<LogLevel>().is_err());
    /// # Ok::<(), claij_mcp::Error>(())
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LogLevel::ALL
            .into_iter()
            .find(|level| level.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| Error::UnknownLogLevel {
                given: s.to_owned(),
            })
    }
}

/// A log message from a server (`notifications/message`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LogMessage {
    /// The configured name of the server that sent it.
    pub server: String,
    /// Its severity; a level this client does not know reads as [`LogLevel::Info`].
    pub level: LogLevel,
    /// The server's logger (a component name), if it gave one.
    pub logger: Option<String>,
    /// What it logged: any JSON, most often a string.
    pub data: Value,
}

impl LogMessage {
    /// A message.
    pub fn new(server: impl Into<String>, level: LogLevel, data: Value) -> Self {
        Self {
            server: server.into(),
            level,
            logger: None,
            data,
        }
    }

    /// The message with `logger` set.
    #[must_use]
    pub fn with_logger(mut self, logger: impl Into<String>) -> Self {
        self.logger = Some(logger.into());
        self
    }

    /// Emits the message as a `tracing` event at [`SERVER_LOG_TARGET`].
    pub(crate) fn log(&self) {
        macro_rules! event {
            ($level:expr) => {
                tracing::event!(
                    target: SERVER_LOG_TARGET,
                    $level,
                    server = %self.server,
                    level = %self.level,
                    logger = self.logger.as_deref(),
                    message = %self.text()
                )
            };
        }
        match self.level {
            LogLevel::Debug => event!(tracing::Level::DEBUG),
            LogLevel::Info | LogLevel::Notice => event!(tracing::Level::INFO),
            LogLevel::Warning => event!(tracing::Level::WARN),
            LogLevel::Error | LogLevel::Critical | LogLevel::Alert | LogLevel::Emergency => {
                event!(tracing::Level::ERROR)
            }
        }
    }

    /// The data as one line of text: a string as it is, anything else as compact JSON.
    pub fn text(&self) -> String {
        match &self.data {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    }
}

/// `server: level: [logger] data`, one line, as a person reads it on stderr.
impl fmt::Display for LogMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: ", self.server, self.level)?;
        if let Some(logger) = &self.logger {
            write!(f, "[{logger}] ")?;
        }
        f.write_str(&self.text())
    }
}

#[cfg(test)]
mod tests;
