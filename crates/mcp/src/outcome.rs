//! [`CallOutcome`]: one normalised result of a tool call, whatever the server did.
//!
//! Servers report the same mistake differently: the TypeScript SDK answers an unknown tool with a
//! result flagged `isError`, the Python SDK with a JSON-RPC error `-32602`. claij turns both (and bad
//! arguments caught before sending, and structured output that breaks the tool's `outputSchema`) into
//! the same shape, `{content, structured, is_error}`, plus a [`CallFailure`] saying which case it was, so
//! the caller and the model see one thing.

use std::fmt;

use claij_validation::Violation;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One content block of a result, as MCP sends it (`{"type": "text", "text": "..."}`, images,
/// audio, embedded resources, resource links).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Content(Value);

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content(json!({"type": "text", "text": text.into()}))
    }

    /// A block as received. Anything that is not an object with a `type` is kept, as text of its JSON.
    pub fn from_value(value: Value) -> Self {
        match value {
            Value::Object(ref map) if map.get("type").is_some_and(Value::is_string) => {
                Content(value)
            }
            other => Content::text(other.to_string()),
        }
    }

    /// The block's type: `text`, `image`, `audio`, `resource`, `resource_link`, ...
    pub fn kind(&self) -> &str {
        self.0.get("type").and_then(Value::as_str).unwrap_or("text")
    }

    /// The text of a text block, or of an embedded text resource.
    pub fn as_text(&self) -> Option<&str> {
        match self.kind() {
            "text" => self.0.get("text").and_then(Value::as_str),
            "resource" => self.0.pointer("/resource/text").and_then(Value::as_str),
            _ => None,
        }
    }

    /// The block as JSON.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// A one-line description of a block that is not text (`[image image/png, 1024 bytes of base64]`).
    pub fn describe(&self) -> String {
        if let Some(text) = self.as_text() {
            return text.to_owned();
        }
        let field = |key: &str| self.0.get(key).and_then(Value::as_str);
        match self.kind() {
            kind @ ("image" | "audio") => format!(
                "[{kind} {}, {} bytes of base64]",
                field("mimeType").unwrap_or("?"),
                field("data").map_or(0, str::len)
            ),
            "resource_link" => format!("[resource link {}]", field("uri").unwrap_or("?")),
            "resource" => format!(
                "[resource {}]",
                self.0
                    .pointer("/resource/uri")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            ),
            other => format!("[{other}]"),
        }
    }
}

/// The result of one tool call, normalised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallOutcome {
    /// What the tool returned (or, for a failure, one text block saying what went wrong).
    pub content: Vec<Content>,
    /// The structured result, when the tool gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Whether the call failed in a way the model can react to (a bad argument, an unknown tool,
    /// the tool's own error).
    pub is_error: bool,
    /// Which failure, when `is_error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<CallFailure>,
}

/// Why a call is an error outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallFailure {
    /// The tool ran and reported an error (`isError: true`).
    Tool,
    /// The server has no such tool.
    UnknownTool {
        /// The tools it has.
        available: Vec<String>,
    },
    /// The arguments break the tool's `inputSchema`; the call was not sent.
    InvalidArguments {
        /// Each violation, located in the arguments.
        violations: Vec<Violation>,
    },
    /// The server rejected the call with a JSON-RPC error.
    Rejected {
        /// The JSON-RPC error code (`-32602` invalid params...).
        code: i32,
    },
    /// The tool's `structuredContent` breaks its `outputSchema` (kept, but flagged).
    InvalidOutput {
        /// Each violation, located in the structured result.
        violations: Vec<Violation>,
    },
    /// The active project does not allow this tool; the call was not sent.
    NotAllowed {
        /// The project.
        project: String,
    },
    /// The call could not complete: a timeout, a dead server, a cancellation.
    Transport,
}

impl CallOutcome {
    /// A successful outcome.
    pub fn success(content: Vec<Content>, structured: Option<Value>) -> Self {
        Self {
            content,
            structured,
            is_error: false,
            failure: None,
        }
    }

    /// An error outcome with one text block.
    pub fn failure(failure: CallFailure, message: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(message)],
            structured: None,
            is_error: true,
            failure: Some(failure),
        }
    }

    /// The text of every text block, one per line; other blocks described in brackets.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .map(Content::describe)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The outcome as an MCP `CallToolResult` (`{"content": [...], "structuredContent": ..., "isError": ...}`):
    /// what the MCP FSM feeds back to the model.
    pub fn to_mcp(&self) -> Value {
        let mut out = json!({"content": self.content, "isError": self.is_error});
        if let (Some(structured), Value::Object(map)) = (&self.structured, &mut out) {
            map.insert("structuredContent".to_owned(), structured.clone());
        }
        out
    }
}

impl fmt::Display for CallOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_error {
            f.write_str("error: ")?;
        }
        f.write_str(&self.text())
    }
}

/// Text for an unknown tool, the same whichever server it came from.
pub(crate) fn unknown_tool(server: &str, tool: &str, available: Vec<String>) -> CallOutcome {
    let message = if available.is_empty() {
        format!("unknown tool `{tool}`: server `{server}` has no tools")
    } else {
        format!(
            "unknown tool `{tool}` on server `{server}`; its tools are: {}",
            available.join(", ")
        )
    };
    CallOutcome::failure(CallFailure::UnknownTool { available }, message)
}

/// Text for violations, one per line, each with its pointer.
pub(crate) fn violations_text(what: &str, violations: &[Violation]) -> String {
    let mut text = format!("{what}:");
    for violation in violations {
        let at = if violation.instance_pointer.is_empty() {
            "(root)"
        } else {
            violation.instance_pointer.as_str()
        };
        text.push_str(&format!("\n- at {at}: {}", violation.message));
    }
    text
}
