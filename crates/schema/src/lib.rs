//! Response schemas for LLMs: a minimal base grown by audited schema deltas, checked, compiled once,
//! translated to provider dialects and rendered compactly for prompts.
//!
//! Every reply claij asks for conforms to a JSON Schema. It starts as [`base`] (`answer` and `state`) and
//! grows as interceptors add [`SchemaDelta`]s through a [`Registry`], which composes them, checks the result
//! against the draft's meta-schema and rolls back any delta that would break it, keeping an [`AuditLog`] of
//! who added, removed or was refused what, and when.
//!
//! ```
//! use claij_schema::{Dialect, Registry, SchemaDelta, to_compact};
//! use serde_json::json;
//!
//! let mut registry = Registry::new(claij_schema::base())?;
//! registry.add(SchemaDelta::new("summary-v1", "memory-interceptor", json!({
//!     "properties": {"summary": {"type": "string", "description": "Key facts to remember"}},
//!     "required": ["summary"],
//! })))?;
//! let schema = registry.active();
//! assert_eq!(schema["required"], json!(["answer", "state", "summary"]));
//!
//! // For a prompt: a third of the tokens of the JSON.
//! assert!(to_compact(schema).contains("summary: string // Key facts to remember"));
//!
//! // For OpenAI strict mode: every object closed, and a report of what the dialect cannot carry.
//! let openai = Dialect::OpenAiStrict.compile(schema)?;
//! assert_eq!(openai.schema["additionalProperties"], json!(false));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What lives where:
//! - [`compose`] merges deltas (properties, required, `$defs`, falling back to `allOf`), deterministic and
//!   idempotent; [`Registry`] adds meta-validation, rollback and the audit log; [`AppliedLog`] keeps
//!   which deltas shaped a conversation's requests, each change recorded once.
//! - [`compile()`] and [`compile_at`] compile with boon (no file or network access, format assertions on);
//!   [`Memo`] shares one compiled form between identical schemas and counts hits and misses.
//! - [`dialect`] compiles to OpenAI strict, Gemini `responseSchema`, Anthropic and llguidance (the embedded
//!   model's grammar engine, with bounds against runaway output), reporting each [`dialect::Loss`]; the
//!   local validator still enforces the full schema.
//! - [`render`] writes minified JSON or the compact TypeScript-like form.
//! - [`compact`] rewrites a schema leaner (duplicated fields merged, repeated sub-schemas shared,
//!   descriptions that repeat the name dropped) accepting exactly the same instances.
//! - [`example()`] builds a valid instance of a schema for a prompt to show (its `examples`, `const`,
//!   `default`, `enum`, else placeholders that are never its descriptions).
//! - [`embed()`] places one schema inside another (a tool's arguments in a reply's schema), hoisting its
//!   definitions to the host's `$defs` and rewriting its references.
//!
//! Draft 2020-12 is the default; draft-07 documents (as MCP servers send) are accepted everywhere.
//!
//! Errors: [`Error`] (composition, meta-validation, registry), each naming the extension and the JSON
//! pointer; [`DialectError`] for schemas a dialect cannot express. This crate has no features and does no
//! IO.

mod applied;
mod base;
pub mod compact;
pub mod compile;
mod compose;
mod delta;
pub mod dialect;
mod embed;
mod error;
pub mod example;
mod memo;
pub mod pointer;
mod registry;
pub mod render;

pub use applied::AppliedLog;
pub use base::{DRAFT_07, DRAFT_2020_12, Draft, base};
pub use compile::{CompiledSchema, check, compile, compile_at};
pub use compose::{BASE, compose};
pub use delta::{SchemaDelta, rfc3339};
pub use dialect::{Dialect, DialectError};
pub use embed::embed;
pub use error::{Error, ErrorKind, Result};
pub use example::{NoExample, example};
pub use memo::{Memo, MemoStats, SchemaHash};
pub use registry::{
    Added, AuditAction, AuditEntry, AuditLog, Ballot, Compaction, CompactionProposal, Registry,
    SavedRegistry,
};
pub use render::{to_compact, to_json};

/// boon, the JSON Schema engine underneath, re-exported for [`CompiledSchema::as_boon`].
pub use boon;
