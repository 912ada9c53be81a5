//! The `mcp_calls` schema delta: one `oneOf` branch per allowed tool, its arguments embedded.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tracing::warn;

use crate::tool::ToolInfo;

/// The delta offering `tools` (see [`super::McpInterceptor`]); `None` without tools.
pub(super) fn schema_delta(tools: &[Arc<ToolInfo>], max_calls: usize) -> Option<Value> {
    if tools.is_empty() {
        return None;
    }
    let mut defs = Map::new();
    let branches: Vec<Value> = tools
        .iter()
        .map(|tool| {
            json!({
                "type": "object",
                "properties": {
                    "service": {"const": tool.server},
                    "tool": {"const": tool.name},
                    "args": embed_args(tool, &mut defs),
                },
                "required": ["service", "tool", "args"],
                "additionalProperties": false,
            })
        })
        .collect();
    let mut delta = Map::new();
    delta.insert(
        "properties".to_owned(),
        json!({"mcp_calls": {
            "type": "array",
            "description": "Calls to tools of the MCP services, run after this reply; their results \
                come back to you on the next turn. Omit when you need no tool",
            "maxItems": max_calls,
            "items": {"oneOf": branches},
        }}),
    );
    if !defs.is_empty() {
        delta.insert("$defs".to_owned(), Value::Object(defs));
    }
    Some(Value::Object(delta))
}

/// The `args` schema of a tool's branch, its definitions added to `defs`.
///
/// The prefix is `<server>.<tool>`; should a tool's definitions land on a name another tool already
/// took (`a` defining `b` and a tool `a.b` on the same server), the prefix gets a `#2`, `#3`... suffix.
fn embed_args(tool: &ToolInfo, defs: &mut Map<String, Value>) -> Value {
    let schema = tool.normalised_input();
    if let Err(err) = claij_schema::check(&schema) {
        warn!(
            server = tool.server,
            tool = tool.name,
            error = %err,
            "tool input schema does not compile on its own; offered as any object"
        );
        return json!({"type": "object"});
    }
    let qualified = tool.qualified();
    for n in 1_usize.. {
        let prefix = if n == 1 {
            qualified.clone()
        } else {
            format!("{qualified}#{n}")
        };
        let (args, hoisted) = claij_schema::embed(&prefix, &schema);
        if hoisted.keys().all(|k| !defs.contains_key(k)) {
            defs.extend(hoisted);
            return args;
        }
    }
    // `defs` is finite, so some suffix above is free.
    json!({"type": "object"})
}
