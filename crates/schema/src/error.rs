//! The error type of `claij-schema`: every variant says which extension and where.

/// Everything that can go wrong while composing, checking or activating a schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A schema delta is not a JSON object, or one of its keywords has the wrong shape.
    #[error("extension `{extension}`: invalid schema delta at `{pointer}`: {reason}")]
    InvalidDelta {
        /// The extension the delta belongs to.
        extension: String,
        /// JSON pointer into the delta.
        pointer: String,
        /// What is wrong.
        reason: String,
    },
    /// Two extensions define the same `$defs` (or `definitions`) name differently.
    #[error(
        "extension `{second}` redefines `{pointer}`, which extension `{first}` defined differently"
    )]
    DefinitionConflict {
        /// JSON pointer of the definition in the composed schema (`/$defs/Name`).
        pointer: String,
        /// The extension (or `base`) that defined it first.
        first: String,
        /// The extension that tried to redefine it.
        second: String,
    },
    /// A delta declares a different JSON Schema draft than the schema it extends.
    #[error("extension `{extension}` declares `$schema` {found}, but the schema uses {expected}")]
    DraftMismatch {
        /// The extension.
        extension: String,
        /// The draft of the schema being extended.
        expected: String,
        /// The draft the delta declares.
        found: String,
    },
    /// The composed schema is not a valid schema (meta-validation, an unresolvable `$ref`, a bad regex...).
    #[error("{}invalid schema at `{pointer}`: {message}", extension_prefix(.extension))]
    InvalidSchema {
        /// The extension whose delta produced the invalid schema (`None` for a base schema).
        extension: Option<String>,
        /// JSON pointer into the (composed) schema.
        pointer: String,
        /// What the meta-schema or the compiler said.
        message: String,
    },
    /// An extension id is already active with a different delta.
    #[error("extension `{extension}` is already active with a different delta; remove it first")]
    DuplicateExtension {
        /// The extension id.
        extension: String,
    },
    /// No active extension has this id.
    #[error("no active extension `{extension}`")]
    UnknownExtension {
        /// The extension id.
        extension: String,
    },
}

fn extension_prefix(extension: &Option<String>) -> String {
    match extension {
        Some(e) => format!("extension `{e}`: "),
        None => String::new(),
    }
}

/// `Result` with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
