//! claij, the crate to add first: a model named `provider:model` (or an alias of the
//! configuration) resolved to a ready pipeline, asked for an answer that is a JSON document valid
//! against a schema; the settings, sessions, interceptors, consensus and state-machine runs the
//! `claij` command line is built on.
//!
//! Features: `openai`, `openrouter`, `anthropic`, `gemini` (default), `local` (the embedded
//! model), `fsm`, `mcp`, `restate`, `otel`.

pub mod approve;
pub mod fallback;
pub mod fs;
pub mod matrix;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod model;
pub mod options;
pub mod prices;
pub mod session;
pub mod settings;
#[cfg(feature = "otel")]
pub mod telemetry;
pub mod tools;

/// `s` on one line: its lines trimmed, empty ones dropped, joined by a space.
pub(crate) fn one_line(s: &str) -> String {
    s.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
