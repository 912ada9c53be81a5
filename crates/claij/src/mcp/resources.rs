//! A server's resources, as `claij mcp resources` and `claij mcp read` show them: [`list`] gives
//! each started server's resources and resource templates ([`Listed`]: text and JSON), [`read`]
//! reads one resource by URI, at most [`DEFAULT_MAX_RESOURCE_BYTES`] unless told otherwise
//! (`max_resource_bytes`), into [`Contents`]: text as the server sent it, binary (`blob`) decoded
//! from base64.
//!
//! ```
//! use claij::mcp::resources::{Body, Contents, contents};
//! use serde_json::json;
//!
//! // A `resources/read` result: one text part, one binary part (base64 on the wire).
//! let read = json!({"contents": [
//!     {"uri": "demo://a", "mimeType": "text/plain", "text": "hello\n"},
//!     {"uri": "demo://b", "blob": "AAEC"}
//! ]});
//! let parts: Vec<Contents> = contents("demo", "demo://a", &read, 1024).unwrap();
//! assert_eq!(parts[0].body, Body::Text("hello\n".to_owned()));
//! assert_eq!(parts[1].body, Body::Blob(vec![0, 1, 2]));
//! // Over the limit: an error that names it.
//! let error = contents("demo", "demo://a", &read, 8).unwrap_err();
//! assert_eq!(
//!     error.to_string(),
//!     "`demo://a` of mcp server `demo` is 9 bytes, over the limit of 8 bytes (max_resource_bytes)"
//! );
//! ```

use base64::Engine as _;
use claij_mcp::Services;
use serde_json::{Value, json};

use super::Error;

/// The largest resource [`read`] takes by default, in bytes (16 MiB; its text, or its binary
/// parts decoded).
pub const DEFAULT_MAX_RESOURCE_BYTES: usize = 16 << 20;

/// JSON-RPC's "method not found": a server that has no resources (or no templates) may answer it.
const METHOD_NOT_FOUND: i32 = -32601;

/// One server's resources and resource templates, as MCP JSON objects. `Display` is the text
/// listing: a line for the server, one per resource (`URI  NAME (MIME)  DESCRIPTION`) and per
/// template (`TEMPLATE  NAME (MIME)  DESCRIPTION [template]`).
#[derive(Debug, Clone)]
pub struct Listed {
    /// The configured name.
    pub server: String,
    /// Its resources (`uri`, `name`, `mimeType`, `description`...).
    pub resources: Vec<Value>,
    /// Its resource templates (`uriTemplate`, `name`, `mimeType`, `description`...).
    pub templates: Vec<Value>,
}

impl Listed {
    /// The JSON listing: `{"server", "resources": [...], "resourceTemplates": [...]}`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "server": self.server,
            "resources": self.resources,
            "resourceTemplates": self.templates,
        })
    }
}

impl std::fmt::Display for Listed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (resources, templates) = (self.resources.len(), self.templates.len());
        writeln!(
            f,
            "{}: {resources} resource{}, {templates} template{}",
            self.server,
            plural(resources),
            plural(templates)
        )?;
        for resource in &self.resources {
            writeln!(f, "  {}", line(resource, "uri", ""))?;
        }
        for template in &self.templates {
            writeln!(f, "  {}", line(template, "uriTemplate", " [template]"))?;
        }
        Ok(())
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `URI  NAME (MIME)  FIRST LINE OF THE DESCRIPTION` of a resource or template.
fn line(item: &Value, key: &str, tail: &str) -> String {
    let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
    let mut line = format!("{}  {}", text(key), text("name"));
    if let Some(mime) = item.get("mimeType").and_then(Value::as_str) {
        line.push_str(&format!(" ({mime})"));
    }
    let description = text("description").lines().next().unwrap_or("").trim();
    if !description.is_empty() {
        line.push_str(&format!("  {description}"));
    }
    line + tail
}

/// Each server of `services` (in name order), with its resources and resource templates. A
/// server that answers "method not found" has none.
///
/// # Errors
///
/// A server's failed request (a timeout, a server gone, another protocol error).
pub async fn list(services: &Services) -> Result<Vec<Listed>, Error> {
    let mut listed = Vec::new();
    for name in services.names() {
        let Some(client) = services.client(name) else {
            continue;
        };
        let resources = none_if_unknown(client.resources().await)?;
        let templates = none_if_unknown(client.resource_templates().await)?;
        listed.push(Listed {
            server: name.to_owned(),
            resources,
            templates,
        });
    }
    Ok(listed)
}

/// A listing, empty when the server does not know the method.
fn none_if_unknown(listed: Result<Vec<Value>, claij_mcp::Error>) -> Result<Vec<Value>, Error> {
    match listed {
        Err(claij_mcp::Error::Protocol { code, .. }) if code == METHOD_NOT_FOUND => Ok(Vec::new()),
        other => Ok(other?),
    }
}

/// One part of a resource that was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// The part's URI (the resource's, or one under it).
    pub uri: String,
    /// Its MIME type, when the server says.
    pub mime_type: Option<String>,
    /// What it holds.
    pub body: Body,
}

/// What a part of a resource holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Text, as the server sent it.
    Text(String),
    /// Binary data, decoded from the base64 the server sent.
    Blob(Vec<u8>),
}

impl Body {
    /// The bytes (text as UTF-8).
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        match self {
            Body::Text(text) => text.as_bytes(),
            Body::Blob(bytes) => bytes,
        }
    }
}

/// Reads the resource `uri` of `server` (a server of `services`), at most `max_bytes` of it.
///
/// # Errors
///
/// No such server ([`claij_mcp::Error::UnknownServer`]); the server's error (an unknown URI is its
/// [`claij_mcp::Error::Protocol`]); what [`contents`] refuses.
pub async fn read(
    services: &Services,
    server: &str,
    uri: &str,
    max_bytes: usize,
) -> Result<(Value, Vec<Contents>), Error> {
    let client = services
        .names()
        .contains(&server)
        .then(|| services.client(server))
        .flatten()
        .ok_or_else(|| claij_mcp::Error::UnknownServer {
            server: server.to_owned(),
            known: services.names().iter().map(|s| (*s).to_owned()).collect(),
        })?;
    let read = client.read_resource(uri).await?;
    let parts = contents(server, uri, &read, max_bytes)?;
    Ok((read, parts))
}

/// The parts of a `resources/read` result (`{"contents": [...]}`) of `uri` from `server`.
///
/// # Errors
///
/// More than `max_bytes` in all ([`Error::ResourceTooLarge`], naming `max_resource_bytes`); a
/// part with neither `text` nor `blob`, or a `blob` that is not base64 ([`Error::Malformed`]).
pub fn contents(
    server: &str,
    uri: &str,
    read: &Value,
    max_bytes: usize,
) -> Result<Vec<Contents>, Error> {
    let malformed = |what: String| Error::Malformed {
        server: server.to_owned(),
        what: format!("`resources/read` of `{uri}`: {what}"),
    };
    let parts = read
        .get("contents")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no `contents` array".to_owned()))?;
    let too_large = |bytes: usize| Error::ResourceTooLarge {
        server: server.to_owned(),
        uri: uri.to_owned(),
        bytes,
        limit: max_bytes,
    };
    // The size before decoding (base64 holds 3 bytes in 4 characters), so nothing over the limit is
    // decoded.
    let on_wire: usize = parts
        .iter()
        .map(|part| match (part.get("text"), part.get("blob")) {
            (Some(Value::String(text)), _) => text.len(),
            (_, Some(Value::String(blob))) => blob.trim().trim_end_matches('=').len() * 3 / 4,
            _ => 0,
        })
        .sum();
    if on_wire > max_bytes {
        return Err(too_large(on_wire));
    }
    let mut all = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let body = match (part.get("text"), part.get("blob")) {
            (Some(Value::String(text)), _) => Body::Text(text.clone()),
            (_, Some(Value::String(blob))) => Body::Blob(
                base64::engine::general_purpose::STANDARD
                    .decode(blob.trim())
                    .map_err(|e| malformed(format!("part {i}'s blob is not base64: {e}")))?,
            ),
            _ => return Err(malformed(format!("part {i} has neither text nor blob"))),
        };
        all.push(Contents {
            uri: part
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or(uri)
                .to_owned(),
            mime_type: part
                .get("mimeType")
                .and_then(Value::as_str)
                .map(str::to_owned),
            body,
        });
    }
    let bytes = all.iter().map(|part| part.body.bytes().len()).sum();
    if bytes > max_bytes {
        return Err(too_large(bytes));
    }
    Ok(all)
}

/// The largest `max_bytes` [`read`] takes (1 GiB, the largest message a server may send).
pub const MAX_RESOURCE_BYTES: usize = 1 << 30;

/// The bytes of `parts`, one after the other (text as UTF-8, binary decoded): what `claij mcp read
/// --out` writes.
#[must_use]
pub fn bytes(parts: &[Contents]) -> Vec<u8> {
    parts
        .iter()
        .flat_map(|part| part.body.bytes())
        .copied()
        .collect()
}

/// What a person reads of `parts`: text as it is, binary as base64 (standard alphabet, padded), a
/// line ending after each part that has none.
#[must_use]
pub fn text(parts: &[Contents]) -> String {
    let mut text = String::new();
    for part in parts {
        match &part.body {
            Body::Text(body) => text.push_str(body),
            Body::Blob(bytes) => {
                text.push_str(&base64::engine::general_purpose::STANDARD.encode(bytes));
            }
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The limit counts the decoded bytes (a blob's, not its base64's), and the exact size passes.
    #[test]
    fn the_limit_counts_decoded_bytes_and_the_exact_size_passes() {
        // 6 bytes of binary, 8 characters of base64.
        let read = json!({"contents": [{"uri": "u", "blob": "AAECAwQF"}]});
        let parts = contents("s", "u", &read, 6).unwrap();
        assert_eq!(parts[0].body, Body::Blob(vec![0, 1, 2, 3, 4, 5]));
        let error = contents("s", "u", &read, 5).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("is 6 bytes, over the limit of 5 bytes"),
            "{error}"
        );
        assert_eq!(error.kind(), crate::mcp::ErrorKind::ResourceTooLarge);
    }

    #[test]
    fn a_broken_blob_or_a_part_without_a_body_is_malformed() {
        let bad = json!({"contents": [{"uri": "u", "blob": "not base64!"}]});
        let error = contents("s", "u", &bad, 1024).unwrap_err();
        assert_eq!(error.kind(), crate::mcp::ErrorKind::Malformed);
        assert!(
            error.to_string().contains("part 0's blob is not base64"),
            "{error}"
        );
        let empty = json!({"contents": [{"uri": "u"}]});
        let error = contents("s", "u", &empty, 1024).unwrap_err();
        assert!(
            error.to_string().contains("neither text nor blob"),
            "{error}"
        );
        let error = contents("s", "u", &json!({}), 1024).unwrap_err();
        assert!(error.to_string().contains("no `contents` array"), "{error}");
    }

    #[test]
    fn text_shows_binary_as_base64_and_ends_each_part() {
        let parts = [
            Contents {
                uri: "a".into(),
                mime_type: None,
                body: Body::Text("no newline".into()),
            },
            Contents {
                uri: "b".into(),
                mime_type: None,
                body: Body::Blob(vec![0, 1, 2]),
            },
        ];
        assert_eq!(text(&parts), "no newline\nAAEC\n");
    }
}
