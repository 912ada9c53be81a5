//! Reading schemas, deltas and instances from files or stdin, with errors that name the file.

use std::io::Read as _;
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use claij_schema::SchemaDelta;
use serde_json::Value;

/// The text of a file, or of stdin for `-`.
pub fn read_text(path: &str) -> Result<String> {
    if path == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read stdin")?;
        return Ok(text);
    }
    std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))
}

/// Stdin as text, invalid UTF-8 replaced (an LLM reply with a stray byte is still worth recovering).
pub fn read_stdin_lossy() -> Result<String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .context("cannot read stdin")?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Where a text came from, for messages.
pub fn name(path: &str) -> &str {
    if path == "-" { "stdin" } else { path }
}

/// A JSON document from a file or stdin; a parse error names the file, line and column.
pub fn read_json(path: &str) -> Result<Value> {
    let text = read_text(path)?;
    parse_json(&text, name(path))
}

/// Parses JSON text, naming its source in the error.
pub fn parse_json(text: &str, source: &str) -> Result<Value> {
    serde_json::from_str(text).with_context(|| format!("{source}: invalid JSON"))
}

/// A schema delta from a file: either a full `{extension_id, added_by, added_at, delta}` document or a
/// bare partial schema (then the extension is named after the file and added by `cli`).
pub fn read_delta(path: &str) -> Result<SchemaDelta> {
    let value = read_json(path)?;
    let is_document = value.get("extension_id").is_some() && value.get("delta").is_some();
    if is_document {
        return serde_json::from_value(value)
            .with_context(|| format!("{}: invalid schema delta document", name(path)));
    }
    if !value.is_object() {
        bail!("{}: a schema delta must be a JSON object", name(path));
    }
    let id = Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("delta")
        .trim_end_matches(".delta")
        .to_owned();
    Ok(SchemaDelta::new(id, "cli", value))
}
