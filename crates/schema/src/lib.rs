//! Response schemas for LLMs.
//!
//! (crate docs are completed once every module has landed)

mod base;
pub mod compile;
mod compose;
mod delta;
pub mod dialect;
mod error;
mod memo;
pub mod pointer;
mod registry;
pub mod render;

pub use base::{DRAFT_07, DRAFT_2020_12, Draft, base};
pub use compile::{CompiledSchema, check, compile, compile_at};
pub use compose::{BASE, compose};
pub use delta::{SchemaDelta, rfc3339};
pub use dialect::{Dialect, DialectError};
pub use error::{Error, Result};
pub use memo::{Memo, MemoStats, SchemaHash};
pub use registry::{Added, AuditAction, AuditEntry, AuditLog, Registry};
pub use render::{to_compact, to_json};

/// boon, the JSON Schema engine underneath, re-exported for [`CompiledSchema::as_boon`].
pub use boon;
