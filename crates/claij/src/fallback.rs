//! What OpenAI-compatible servers were found to take for structured output, remembered across runs
//! in `structured-output.json` in the claij cache, so a server that rejects `json_schema` costs one
//! rejected request per base URL and model, not one per run.
//!
//! The file, `$XDG_CACHE_HOME/claij/structured-output.json` (else `~/.cache/claij/...`):
//!
//! ```json
//! {"version": 1, "servers": [
//!   {"base_url": "http://127.0.0.1:8080/v1", "model": "smol", "structured_output": "tools"}]}
//! ```
//!
//! Base URLs are stored without user info, query or fragment. A missing, unreadable, oversized
//! (over [`MAX_BYTES`]) or malformed file counts as empty and is rewritten on the next lesson; delete
//! it to forget, or set `structured_output` in the provider's entry, which takes precedence.

use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use claij_backends::openai::{FallbackMemory, Remembered, StructuredDialect};
use serde_json::{Value, json};

/// The file's name in the claij cache.
pub const FILE_NAME: &str = "structured-output.json";

/// The most bytes read from the file; a bigger one is ignored (and replaced on the next lesson).
pub const MAX_BYTES: u64 = 256 * 1024;

/// The most servers the file keeps; the oldest entries (first in the file) go first.
pub const MAX_ENTRIES: usize = 1000;

/// `$XDG_CACHE_HOME/claij/structured-output.json` (an absolute `XDG_CACHE_HOME`), else
/// `$HOME/.cache/claij/structured-output.json`; `None` without either. Empty variables count as unset.
pub fn path(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = set("XDG_CACHE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| set("HOME").map(|home| home.join(".cache")))?;
    Some(base.join("claij").join(FILE_NAME))
}

/// A memory seeded from `path`'s file (none: this run only), saving each lesson to it and telling
/// it to `tell` as a line for people ([`notice`]). [`crate::Claij`] keeps one per value.
pub fn open(
    path: Option<PathBuf>,
    tell: impl Fn(String) + Send + Sync + 'static,
) -> FallbackMemory {
    let entries = path.as_deref().map(read).unwrap_or_default();
    FallbackMemory::new()
        .with_entries(entries)
        .with_listener(move |provider, entry| {
            let saved = match &path {
                Some(path) => match save(path, entry) {
                    Ok(()) => format!("remembered in {}", path.display()),
                    Err(e) => format!("not remembered: cannot write {}: {e}", path.display()),
                },
                None => "for this run only: no cache directory".to_owned(),
            };
            tell(notice(provider, entry, &saved));
        })
}

/// The line telling the user what was learned.
pub fn notice(provider: &str, entry: &Remembered, saved: &str) -> String {
    format!(
        "{provider} rejected native structured output (json_schema) for {}: using {} from now on \
         ({saved}; set structured_output in [providers.{provider}] to choose)",
        entry.model, entry.dialect
    )
}

/// The entries of the file at `path`; none when it is missing, too big or malformed.
pub fn read(path: &Path) -> Vec<Remembered> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let mut text = String::new();
    if file.take(MAX_BYTES + 1).read_to_string(&mut text).is_err() || text.len() as u64 > MAX_BYTES
    {
        return Vec::new();
    }
    parse(&text)
}

/// The entries of the file's text; entries that are not `{base_url, model, structured_output}`
/// with a known dialect are skipped, and anything else gives none.
pub fn parse(text: &str) -> Vec<Remembered> {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    if value["version"] != 1 {
        return Vec::new();
    }
    let Some(servers) = value["servers"].as_array() else {
        return Vec::new();
    };
    servers
        .iter()
        .filter_map(|server| {
            Some(Remembered {
                base_url: server["base_url"].as_str()?.to_owned(),
                model: server["model"].as_str()?.to_owned(),
                dialect: server["structured_output"]
                    .as_str()?
                    .parse::<StructuredDialect>()
                    .ok()?,
            })
        })
        .collect()
}

/// The file's text for `entries`.
pub fn render(entries: &[Remembered]) -> String {
    let servers: Vec<Value> = entries
        .iter()
        .map(|e| {
            json!({"base_url": e.base_url, "model": e.model, "structured_output": e.dialect.name()})
        })
        .collect();
    let text = serde_json::to_string_pretty(&json!({"version": 1, "servers": servers}))
        .unwrap_or_default();
    text + "\n"
}

/// Adds (or replaces) `entry` in the file, re-reading it first (another run may have added to it),
/// written to a temp file and renamed so a reader never sees half of it.
fn save(path: &Path, entry: &Remembered) -> io::Result<()> {
    let mut entries = read(path);
    entries.retain(|e| !(e.base_url == entry.base_url && e.model == entry.model));
    entries.push(entry.clone());
    let excess = entries.len().saturating_sub(MAX_ENTRIES);
    entries.drain(..excess);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::fs::write_atomic(path, render(&entries).as_bytes(), None)
}

#[cfg(test)]
mod tests;
