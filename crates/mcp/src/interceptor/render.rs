//! The prompt text of the MCP interceptor: the services and their tools, and the previous turn's results.

use std::fmt::Write as _;
use std::sync::Arc;

use claij_interceptors::{ToolOrigin, ToolResult};
use serde_json::Value;

use crate::outcome::Content;
use crate::tool::ToolInfo;

/// Longest tool description shown, in characters (about 50 tokens).
const DESCRIPTION_CHARS: usize = 200;

/// The documentation of `tools`, grouped by server (they come server by server); `None` without tools.
pub(super) fn services_section(tools: &[Arc<ToolInfo>], max_calls: usize) -> Option<String> {
    if tools.is_empty() {
        return None;
    }
    let mut out = format!(
        "MCP services: to call their tools, add `mcp_calls` to your reply: a list of calls \
         `{{\"service\": \"<service>\", \"tool\": \"<tool>\", \"args\": {{…}}}}`, at most {max_calls}. \
         They run after your reply, and their results come back to you on the next turn. Call a tool \
         only when you need its result.\n"
    );
    let mut server = None;
    for tool in tools {
        if server != Some(tool.server.as_str()) {
            // A blank line before each service (the introduction ends with a newline).
            let gap = if server.is_none() { "\n" } else { "\n\n" };
            server = Some(tool.server.as_str());
            let _ = write!(out, "{gap}Service `{}`:", tool.server);
        }
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .map(summary)
            .unwrap_or_default();
        if description.is_empty() {
            let _ = write!(out, "\n- {}", tool.name);
        } else {
            let _ = write!(out, "\n- {}: {description}", tool.name);
        }
        let args = claij_schema::to_compact(&tool.normalised_input());
        let _ = write!(out, "\n  args: {}", indent(args.trim_end(), "  "));
    }
    Some(out)
}

/// The previous turn's MCP results (see [`is_mcp`]), as the `tools` interceptor shows its own, each
/// output condensed first ([`condense`]); `None` when there are none.
pub(super) fn results_section(results: &[ToolResult], budget: usize) -> Option<String> {
    let condensed: Vec<ToolResult> = results.iter().filter(|r| is_mcp(r)).map(condense).collect();
    claij_interceptors::builtin::tools::results_section(&condensed, budget)
}

/// Whether a result is one of this interceptor's, by its origin (not its name: another
/// interceptor's tool may be named with a `.` too).
pub(super) fn is_mcp(result: &ToolResult) -> bool {
    matches!(result.origin, ToolOrigin::Mcp { .. })
}

/// A result as the model reads it: an error outcome as `Err` with its text, else the structured
/// result when there is one, else the content's text (non-text blocks described in brackets), instead
/// of the whole `CallToolResult`, whose text often repeats the structured result as escaped JSON.
pub(super) fn condense(result: &ToolResult) -> ToolResult {
    let output = match &result.output {
        Err(message) => Err(message.clone()),
        Ok(mcp) => match mcp.get("content").and_then(Value::as_array) {
            None => Ok(mcp.clone()),
            Some(blocks) => {
                let text = blocks
                    .iter()
                    .map(|block| Content::from_value(block.clone()).describe())
                    .collect::<Vec<_>>()
                    .join("\n");
                if mcp.get("isError").and_then(Value::as_bool) == Some(true) {
                    Err(text)
                } else if let Some(structured) = mcp.get("structuredContent") {
                    Ok(structured.clone())
                } else {
                    Ok(Value::String(text))
                }
            }
        },
    };
    ToolResult {
        name: result.name.clone(),
        args: result.args.clone(),
        output,
        origin: result.origin.clone(),
    }
}

/// A description as the prompt shows it: its first line, cut to its first sentence, at most
/// [`DESCRIPTION_CHARS`] characters (cut at a word, with `…`).
pub(super) fn summary(description: &str) -> String {
    let line = description.trim().lines().next().unwrap_or_default().trim();
    let sentence = first_sentence(line);
    if sentence.chars().count() <= DESCRIPTION_CHARS {
        return sentence.to_owned();
    }
    let end = sentence
        .char_indices()
        .nth(DESCRIPTION_CHARS - 1)
        .map_or(sentence.len(), |(i, _)| i);
    let head = &sentence[..end];
    // Back to the last word boundary, unless that would drop more than half.
    let head = match head.rfind(char::is_whitespace) {
        Some(space) if space > end / 2 => &head[..space],
        _ => head,
    };
    format!("{}…", head.trim_end())
}

/// Up to and including the first `.` that ends a sentence: followed by a space and a capital letter,
/// so `e.g. this` or `v1.2` do not end one.
fn first_sentence(line: &str) -> &str {
    for (i, _) in line.match_indices(". ") {
        if line[i + 2..].chars().next().is_some_and(char::is_uppercase) {
            return &line[..=i];
        }
    }
    line
}

/// Every line after the first indented by `pad`.
fn indent(text: &str, pad: &str) -> String {
    text.replace('\n', &format!("\n{pad}"))
}
