//! MCP logging on the wire: `logging/setLevel` (up to 2025-11-25), the per-request log level of
//! 2026-07-28 (SEP-2575: a server logs during a request only when its `_meta` asks), and a server's
//! `notifications/message` turned into a [`LogMessage`].
#![allow(deprecated)] // SEP-2577 deprecates logging in 2026-07-28; servers of both eras log

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, RequestMetaObject, SetLevelRequestParams,
};
use serde_json::Value;

use super::{Connection, Wait};
use crate::error::Error;
use crate::logging::{LogLevel, LogMessage};

/// The first revision where the log level goes with each request and `logging/setLevel` is gone.
const PER_REQUEST_LEVEL: &str = "2026-07-28";

impl Connection {
    /// Whether the negotiated revision asks for log messages per request (2026-07-28 and later;
    /// revisions are dates, so they compare as strings).
    pub(crate) fn logs_per_request(&self) -> bool {
        self.protocol_version.as_str() >= PER_REQUEST_LEVEL
    }

    /// Puts the client's log level in a request's `_meta`, on a revision that asks for it there.
    pub(super) fn stamp_log_level(&self, meta: &mut Option<RequestMetaObject>) {
        if !self.logs_per_request() {
            return;
        }
        if let Some(level) = self.answerer.log_level() {
            meta.get_or_insert_with(RequestMetaObject::new)
                .set_log_level(wire_level(level));
        }
    }

    /// Whether the server declared the `logging` capability.
    pub(crate) fn supports_logging(&self) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|info| info.capabilities.logging.is_some())
    }

    /// `logging/setLevel`: the server sends log messages at `level` and above.
    pub(crate) async fn set_log_level(&self, level: LogLevel, wait: Wait) -> Result<(), Error> {
        let params = SetLevelRequestParams::new(wire_level(level));
        self.bounded("logging/setLevel", wait, self.peer.set_level(params))
            .await
    }
}

/// claij's view of a `notifications/message` from `server`.
pub(super) fn log_message(server: &str, params: LoggingMessageNotificationParam) -> LogMessage {
    let level = serde_json::to_value(params.level)
        .ok()
        .as_ref()
        .and_then(Value::as_str)
        .and_then(|name| name.parse().ok())
        .unwrap_or(LogLevel::Info);
    let mut message = LogMessage::new(server, level, params.data);
    message.logger = params.logger;
    message
}

fn wire_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}
