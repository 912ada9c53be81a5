//! The prompt text of the `tools` interceptor: the tools' documentation and the previous turn's results.

use std::fmt::Write as _;

use serde_json::Value;

use crate::context::ToolResult;

/// The documentation of `(name, description, args schema)` tools.
pub(super) fn tools_section(tools: &[(&str, &str, &Value)], max_calls: usize) -> String {
    let mut out = format!(
        "Tools: to call tools, add `tools` to your reply: a list of calls `{{\"name\": \"<tool>\", \
         \"args\": {{…}}}}`, at most {max_calls}. They run after your reply, and their results come \
         back to you on the next turn. Call a tool only when you need its result.\n"
    );
    for (name, description, args) in tools {
        let description = description.trim();
        if description.is_empty() {
            let _ = write!(out, "\n- {name}");
        } else {
            let _ = write!(out, "\n- {name}: {}", indent(description, "  "));
        }
        let args = claij_schema::to_compact(args);
        let _ = write!(out, "\n  args: {}", indent(args.trim_end(), "  "));
    }
    out
}

/// The system-prompt section showing the results of the previous turn's tool calls, in call order, or
/// `None` when there are none.
///
/// Arguments and outputs are written as JSON and cut (with a note of how much was left out) so that
/// together they take at most about `budget` characters: short ones whole, the rest sharing what is
/// left; a last line names the budget when anything was cut.
///
/// ```
/// use claij_interceptors::builtin::tools::results_section;
/// use claij_interceptors::{ToolOrigin, ToolResult};
/// use serde_json::json;
///
/// let result = |name: &str, args, output| ToolResult {
///     name: name.into(),
///     args,
///     output,
///     origin: ToolOrigin::Rust,
/// };
/// let results = [
///     result("add", json!({"a": 1, "b": 2}), Ok(json!(3))),
///     result("fetch", json!({}), Err("timed out after 30s".into())),
/// ];
/// assert_eq!(results_section(&results, 4000).unwrap(), "\
/// Results of the tool calls of your previous reply, in call order:
/// 1. add {\"a\":1,\"b\":2}
///    ok: 3
/// 2. fetch {}
///    error: timed out after 30s");
/// ```
pub fn results_section(results: &[ToolResult], budget: usize) -> Option<String> {
    if results.is_empty() {
        return None;
    }
    // Texts in order: each result's arguments, then its output.
    let texts: Vec<String> = results
        .iter()
        .flat_map(|r| {
            let output = match &r.output {
                Ok(value) => value.to_string(),
                Err(message) => message.clone(),
            };
            [r.args.to_string(), output]
        })
        .collect();
    let lengths: Vec<usize> = texts.iter().map(|t| t.chars().count()).collect();
    let shares = shares(&lengths, budget);
    let mut out = "Results of the tool calls of your previous reply, in call order:".to_owned();
    let any_cut = lengths
        .iter()
        .zip(&shares)
        .any(|(length, share)| share < length);
    for (i, result) in results.iter().enumerate() {
        let args = cut(&texts[2 * i], shares[2 * i]);
        let output = cut(&texts[2 * i + 1], shares[2 * i + 1]);
        let label = if result.output.is_ok() { "ok" } else { "error" };
        let _ = write!(
            out,
            "\n{}. {} {args}\n   {label}: {}",
            i + 1,
            result.name,
            indent(&output, "   ")
        );
    }
    if any_cut {
        let _ = write!(
            out,
            "\n(Cut where marked: the results share a budget of {budget} characters.)"
        );
    }
    Some(out)
}

/// One definition of how a budget is shared, the executor's.
pub(super) use crate::tool::shares;

/// The first `keep` characters of `text`, with a note of how many were cut; all of it when it fits.
pub(super) fn cut(text: &str, keep: usize) -> String {
    let total = text.chars().count();
    if total <= keep {
        return text.to_owned();
    }
    let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    format!("{}… ({} more characters)", &text[..end], total - keep)
}

/// Every line after the first indented by `pad`.
fn indent(text: &str, pad: &str) -> String {
    text.replace('\n', &format!("\n{pad}"))
}
