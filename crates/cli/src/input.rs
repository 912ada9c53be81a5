//! Reading schemas, deltas and instances from files or stdin, with errors that name the file; every
//! read is bounded (`yes | claij repair` or a path to `/dev/zero` ends in an error naming the limit).

use std::io;
use std::path::Path;

use anyhow::{Context as _, Result};
use claij::schema::SchemaDelta;
use serde_json::Value;

/// Default bound of an input: stdin, an instance, a schema or a delta file, 64 MiB (`repair` and
/// `validate` take `--max-input-bytes` for their input).
pub(crate) use claij::fs::MAX_INPUT_BYTES;
use claij::fs::read_capped;

/// What the limit of an input is called in errors.
const INPUT_LIMIT: &str = "an input (--max-input-bytes)";

/// The text of a file, or of stdin for `-`, at most [`MAX_INPUT_BYTES`].
pub(crate) fn read_text(path: &str) -> Result<String> {
    read_text_capped(path, MAX_INPUT_BYTES)
}

/// The text of a file, or of stdin for `-`, at most `limit` bytes.
pub(crate) fn read_text_capped(path: &str, limit: u64) -> Result<String> {
    let bytes = read_bytes(path, limit)?;
    String::from_utf8(bytes).with_context(|| format!("cannot read {}: invalid UTF-8", name(path)))
}

/// Stdin as text, invalid UTF-8 replaced (an LLM reply with a stray byte is still worth recovering),
/// at most `limit` bytes.
pub(crate) fn read_stdin_lossy(limit: u64) -> Result<String> {
    let bytes = read_bytes("-", limit)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Where a text came from, for messages.
pub(crate) fn name(path: &str) -> &str {
    if path == "-" { "stdin" } else { path }
}

/// A JSON document from a file or stdin; a parse error names the file, line and column.
pub(crate) fn read_json(path: &str) -> Result<Value> {
    let text = read_text(path)?;
    parse_json(&text, name(path))
}

/// Parses JSON text, naming its source in the error.
pub(crate) fn parse_json(text: &str, source: &str) -> Result<Value> {
    serde_json::from_str(text).with_context(|| format!("{source}: invalid JSON"))
}

/// A schema delta from a file ([`claij::extensions::delta_of_file`]): a bare partial schema is
/// added by `cli`.
pub(crate) fn read_delta(path: &str) -> Result<SchemaDelta> {
    let value = read_json(path)?;
    claij::extensions::delta_of_file(value, Path::new(path), "cli")
        .map_err(|e| anyhow::anyhow!("{}: {e}", name(path)))
}

/// The bytes of a file, or of stdin for `-`, at most `limit`.
fn read_bytes(path: &str, limit: u64) -> Result<Vec<u8>> {
    let read = if path == "-" {
        read_capped(io::stdin().lock(), limit, INPUT_LIMIT)
    } else {
        std::fs::File::open(path).and_then(|file| read_capped(file, limit, INPUT_LIMIT))
    };
    read.with_context(|| format!("cannot read {}", name(path)))
}
