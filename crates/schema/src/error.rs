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
    /// Two extensions (or one with itself) constrain one place in ways no value can meet: different
    /// types, `const`s or `enum`s, a minimum over a maximum, a required property whose schema is
    /// `false`. The composed schema would reject every reply.
    #[error("{}", contradiction(.pointer, .first, .second, .detail))]
    Contradiction {
        /// JSON pointer of the keyword in the composed schema (`/properties/summary/type`).
        pointer: String,
        /// The extension (or `base`) whose constraint was there first.
        first: String,
        /// The extension whose delta contradicts it (the same as `first` when it contradicts itself).
        second: String,
        /// The two constraints (`type "string" and type "integer"`).
        detail: String,
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

fn contradiction(pointer: &str, first: &str, second: &str, detail: &str) -> String {
    if first == second {
        format!("extension `{second}` contradicts itself at `{pointer}`: {detail}")
    } else {
        format!("extension `{second}` contradicts extension `{first}` at `{pointer}`: {detail}")
    }
}

fn extension_prefix(extension: &Option<String>) -> String {
    match extension {
        Some(e) => format!("extension `{e}`: "),
        None => String::new(),
    }
}

/// `Result` with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
