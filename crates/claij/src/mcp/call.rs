//! One tool call, as `claij mcp call` makes it: [`run`] calls `server.tool` with a timeout of
//! its own, [`text`] is what a person reads of the outcome, [`invalid_output`] says how a
//! structured result breaks the tool's outputSchema.
//!
//! ```
//! use claij::mcp::protocol::CallOutcome;
//! use serde_json::json;
//!
//! let outcome: CallOutcome = serde_json::from_value(json!({
//!     "content": [{"type": "text", "text": "12:00"}],
//!     "structured": {"time": "12:00"},
//!     "is_error": false
//! }))
//! .unwrap();
//! // The structured result repeats the text: it is shown once.
//! assert_eq!(claij::mcp::call::text(&outcome), "12:00\n");
//! assert_eq!(claij::mcp::call::invalid_output("time.now", &outcome), None);
//! ```

use std::time::Duration;

use claij_mcp::{CallFailure, CallOutcome, Services};
use serde_json::Value;

/// A call's arguments from `text` (`claij mcp call --args`): a JSON object.
///
/// # Errors
///
/// Text that is no JSON, or JSON that is no object: what is wrong, for the caller to prefix with
/// where the text came from.
pub fn arguments(text: &str) -> Result<Value, String> {
    let args: Value = serde_json::from_str(text).map_err(|e| format!("is not JSON: {e}"))?;
    if !args.is_object() {
        return Err("must be a JSON object".to_owned());
    }
    Ok(args)
}

/// `server.tool` (or `server.prompt`: `what`) split at its first dot.
///
/// # Errors
///
/// `qualified` has no dot.
pub fn qualified<'a>(qualified: &'a str, what: &str) -> Result<(&'a str, &'a str), String> {
    let parts = qualified.split_once('.');
    parts.ok_or_else(|| format!("`{qualified}` is not `server.{what}`"))
}

/// Calls `tool` of `server` with `args`, waiting at most `timeout` (`None`: the server's
/// `timeout`) when the project allows the tool; otherwise [`Services::call`] refuses it.
///
/// # Errors
///
/// [`claij_mcp::Error::UnknownServer`], and the call's errors (a timeout, a server gone...).
pub async fn run(
    services: &Services,
    server: &str,
    tool: &str,
    args: Value,
    timeout: Option<Duration>,
) -> Result<CallOutcome, claij_mcp::Error> {
    match services.client(server) {
        Some(client) if services.allows(server, tool) => {
            client.call_with_timeout(tool, args, timeout).await
        }
        _ => services.call(server, tool, args).await,
    }
}

/// What a person reads of `outcome`: each content block (text as it is, others described), a
/// line each; the structured result (pretty JSON) only when there is no content, or when it
/// breaks the tool's outputSchema (then the last block, claij's explanation, is left out: the
/// violations, [`invalid_output`], point into the structured result). A tool that returns
/// structured content also returns it as text (MCP asks it to), so printing both would say it
/// twice. Always ends with a line ending.
#[must_use]
pub fn text(outcome: &CallOutcome) -> String {
    let invalid_output = matches!(outcome.failure, Some(CallFailure::InvalidOutput { .. }));
    let blocks = match invalid_output {
        true => &outcome.content[..outcome.content.len().saturating_sub(1)],
        false => &outcome.content[..],
    };
    let mut text = String::new();
    for block in blocks {
        text.push_str(&block.describe());
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    if let Some(structured) = &outcome.structured
        && (blocks.is_empty() || invalid_output)
    {
        text.push_str(&serde_json::to_string_pretty(structured).unwrap_or_default());
        text.push('\n');
    }
    if text.is_empty() {
        // A result with nothing in it still ends with a line, as every result does.
        text.push('\n');
    }
    text
}

/// When the structured result of `tool` (as `server.tool`) breaks its outputSchema: `the
/// structured result of `tool` breaks its outputSchema: POINTER: MESSAGE [SCHEMA POINTER]; ...`
/// (`(root)` for the whole result).
#[must_use]
pub fn invalid_output(tool: &str, outcome: &CallOutcome) -> Option<String> {
    let Some(CallFailure::InvalidOutput { violations }) = &outcome.failure else {
        return None;
    };
    // A violation shows as `POINTER: MESSAGE`.
    let each: Vec<String> = violations
        .iter()
        .map(|v| format!("{v} [{}]", v.schema_pointer))
        .collect();
    Some(format!(
        "the structured result of `{tool}` breaks its outputSchema: {}",
        each.join("; ")
    ))
}

#[cfg(test)]
mod tests;
