//! claij, the crate to add first: a model named `provider:model` (or an alias of the
//! configuration) resolved to a ready pipeline, asked for an answer that is a JSON document valid
//! against a schema; the settings, sessions, interceptors, consensus and state-machine runs the
//! `claij` command line is built on.
//!
//! Features: `openai`, `openrouter`, `anthropic`, `gemini` (default), `local` (the embedded
//! model), `fsm`, `mcp`, `restate`, `otel`.
