//! The client's spans, named and filled as an OpenTelemetry layer reads them (`otel.name`,
//! `otel.kind`, `otel.status_code`) and after the GenAI semantic conventions for tool execution:
//! `mcp.connect` for a connection's start, `mcp.call` for a tool call (under the caller's span: a
//! state of an FSM run, an agent's tool step), `mcp.session` for the life of a connection (its own
//! trace, linked to the `mcp.connect` that opened it), under which rmcp's loop runs. A request a
//! server makes (sampling, elicitation) is an `mcp.server_request` span under the `mcp.call` it
//! came during when that call is the only one in flight (over stdio nothing says which call it
//! belongs to), else under the session.
//!
//! Content (a call's arguments and result) is recorded only when the `claij::content` target is
//! enabled at TRACE, as the CLI's `--otel-capture-content` does.

use serde_json::Value;
use tracing::field::Empty;
use tracing::{Level, Span};

use crate::outcome::{CallFailure, CallOutcome};

/// The target whose TRACE level opts in to recording content.
const CONTENT_TARGET: &str = "claij::content";

/// The longest status description or recorded content, in characters.
const MAX_TEXT: usize = 4000;

/// The span of one tool call, a child of the current span.
pub(crate) fn call(server: &str, tool: &str) -> Span {
    tracing::info_span!(
        "mcp.call",
        "otel.name" = format!("execute_tool {tool}"),
        "otel.kind" = "client",
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = tool,
        "claij.mcp.server" = server,
        "claij.mcp.tool" = tool,
        "gen_ai.tool.call.arguments" = Empty,
        "gen_ai.tool.call.result" = Empty,
        "error.type" = Empty,
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
    )
}

/// The span of a connection's start (the process or HTTP session, the protocol start, the tool
/// list), a child of the current span.
pub(crate) fn connect(server: &str) -> Span {
    tracing::info_span!(
        "mcp.connect",
        "otel.name" = format!("connect {server}"),
        "otel.kind" = "client",
        "claij.mcp.server" = server,
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
    )
}

/// The span a connection's service loop lives in: a root of its own, for a connection outlives the
/// call or run that opened it (a child span would keep its parent open), linked to the current
/// span (the `mcp.connect` that opened it).
pub(crate) fn session(server: &str) -> Span {
    let span = tracing::info_span!(
        parent: None,
        "mcp.session",
        "otel.name" = format!("session {server}"),
        "otel.kind" = "client",
        "claij.mcp.server" = server,
    );
    span.follows_from(Span::current().id());
    span
}

/// Whether content may be recorded here.
pub(crate) fn content_enabled() -> bool {
    tracing::enabled!(target: CONTENT_TARGET, Level::TRACE)
}

/// Records a call's arguments (only when `content` is enabled).
pub(crate) fn arguments(span: &Span, args: &Value) {
    span.record("gen_ai.tool.call.arguments", bounded(&args.to_string()));
}

/// Records how a call ended: an error outcome marks the span failed, saying which failure (never
/// the tool's own text: that is content, recorded as the result only when `content`).
pub(crate) fn outcome(span: &Span, outcome: &CallOutcome, content: bool) {
    if content {
        span.record(
            "gen_ai.tool.call.result",
            bounded(&outcome.to_mcp().to_string()),
        );
    }
    if !outcome.is_error {
        return;
    }
    let (kind, description) = match &outcome.failure {
        Some(CallFailure::Tool) | None => ("tool", "the tool reported an error".to_owned()),
        Some(CallFailure::UnknownTool { .. }) => {
            ("unknown_tool", "the server has no such tool".to_owned())
        }
        Some(CallFailure::InvalidArguments { violations }) => (
            "invalid_arguments",
            format!(
                "the arguments break the tool's inputSchema ({} violations)",
                violations.len()
            ),
        ),
        Some(CallFailure::Rejected { code }) => (
            "rejected",
            format!("the server rejected the call (error {code})"),
        ),
        Some(CallFailure::InvalidOutput { violations }) => (
            "invalid_output",
            format!(
                "the structured result breaks the tool's outputSchema ({} violations)",
                violations.len()
            ),
        ),
        Some(CallFailure::NotAllowed { project }) => (
            "not_allowed",
            format!("project `{project}` does not allow the tool"),
        ),
        Some(CallFailure::Transport) => ("transport", "the call could not complete".to_owned()),
    };
    span.record("error.type", kind);
    fail(span, &description);
}

/// Marks `span` failed with `description` (the code first: an OpenTelemetry layer reads a
/// description as an error status of its own, and a later bare code would clear it).
pub(crate) fn fail(span: &Span, description: &str) {
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", bounded(description));
}

fn bounded(text: &str) -> &str {
    match text.char_indices().nth(MAX_TEXT) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}
