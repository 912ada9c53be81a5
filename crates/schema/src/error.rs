//! The error type of `claij-schema`: every variant says which extension and where.
//!
//! [`Error::kind`] names the variant, to match on without the fields; each claij crate has its own
//! `ErrorKind` (a shared one would mix a JSON pointer's conflict with an HTTP 429 in one list every
//! crate must match), and the meanings that cross crates are predicates with one name in each
//! (`is_timeout`, `is_retryable`...). Here the one a caller branches on is
//! [`Error::is_conflict`]: two extensions that cannot be active together.

/// Everything that can go wrong while composing, checking or activating a schema.
///
/// Branch on [`Error::kind`] or the predicates:
///
/// ```
/// use claij_schema::{Error, ErrorKind};
///
/// let error = Error::DefinitionConflict {
///     pointer: "/$defs/Item".into(),
///     first: "memory".into(),
///     second: "tools".into(),
/// };
/// if error.is_conflict() {
///     // Leave one of the two extensions out.
/// }
/// assert_eq!(error.kind(), ErrorKind::DefinitionConflict);
/// assert_eq!(error.extension(), Some("tools"));
/// ```
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
    /// A saved compaction does not hold together: its extension is not there, or its delta is not
    /// the compaction of the deltas it replaced (a torn or hand-edited file), or it no longer
    /// replaces what is active.
    #[error("compaction `{extension}`: {reason}")]
    Compaction {
        /// The compaction's extension id.
        extension: String,
        /// What is wrong.
        reason: String,
    },
}

/// What kind of failure an [`Error`] is, to match on without its fields.
///
/// One kind per crate, naming its own variants; the meanings shared across claij crates are the
/// predicates on [`Error`] (see `claij_interceptors`' crate docs for why).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::InvalidDelta`].
    InvalidDelta,
    /// [`Error::DefinitionConflict`].
    DefinitionConflict,
    /// [`Error::Contradiction`].
    Contradiction,
    /// [`Error::DraftMismatch`].
    DraftMismatch,
    /// [`Error::InvalidSchema`].
    InvalidSchema,
    /// [`Error::DuplicateExtension`].
    DuplicateExtension,
    /// [`Error::UnknownExtension`].
    UnknownExtension,
    /// [`Error::Compaction`].
    Compaction,
}

impl Error {
    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidDelta { .. } => ErrorKind::InvalidDelta,
            Error::DefinitionConflict { .. } => ErrorKind::DefinitionConflict,
            Error::Contradiction { .. } => ErrorKind::Contradiction,
            Error::DraftMismatch { .. } => ErrorKind::DraftMismatch,
            Error::InvalidSchema { .. } => ErrorKind::InvalidSchema,
            Error::DuplicateExtension { .. } => ErrorKind::DuplicateExtension,
            Error::UnknownExtension { .. } => ErrorKind::UnknownExtension,
            Error::Compaction { .. } => ErrorKind::Compaction,
        }
    }

    /// Whether two extensions (or one with itself, or with the base) cannot be active together:
    /// a redefined `$defs` name, constraints no value meets, another draft, or an id already
    /// active with another delta. Each alone may be fine.
    pub fn is_conflict(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::DefinitionConflict
                | ErrorKind::Contradiction
                | ErrorKind::DraftMismatch
                | ErrorKind::DuplicateExtension
        )
    }

    /// The extension at fault (the later one of a conflict), when one is: `None` for a base
    /// schema that is invalid by itself.
    pub fn extension(&self) -> Option<&str> {
        match self {
            Error::InvalidDelta { extension, .. }
            | Error::DraftMismatch { extension, .. }
            | Error::DuplicateExtension { extension }
            | Error::UnknownExtension { extension }
            | Error::Compaction { extension, .. } => Some(extension),
            Error::DefinitionConflict { second, .. } | Error::Contradiction { second, .. } => {
                Some(second)
            }
            Error::InvalidSchema { extension, .. } => extension.as_deref(),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `(kind, conflict)` of each variant. No wildcard, so a new variant does not compile here
    /// until it is classified (and sampled).
    fn expected(e: &Error) -> (ErrorKind, bool) {
        match e {
            Error::InvalidDelta { .. } => (ErrorKind::InvalidDelta, false),
            Error::DefinitionConflict { .. } => (ErrorKind::DefinitionConflict, true),
            Error::Contradiction { .. } => (ErrorKind::Contradiction, true),
            Error::DraftMismatch { .. } => (ErrorKind::DraftMismatch, true),
            Error::InvalidSchema { .. } => (ErrorKind::InvalidSchema, false),
            Error::DuplicateExtension { .. } => (ErrorKind::DuplicateExtension, true),
            Error::UnknownExtension { .. } => (ErrorKind::UnknownExtension, false),
            Error::Compaction { .. } => (ErrorKind::Compaction, false),
        }
    }

    #[test]
    fn every_variant_is_classified() {
        let x = || "x".to_owned();
        let samples = [
            Error::InvalidDelta {
                extension: x(),
                pointer: x(),
                reason: x(),
            },
            Error::DefinitionConflict {
                pointer: x(),
                first: "a".into(),
                second: x(),
            },
            Error::Contradiction {
                pointer: x(),
                first: "a".into(),
                second: x(),
                detail: x(),
            },
            Error::DraftMismatch {
                extension: x(),
                expected: x(),
                found: x(),
            },
            Error::InvalidSchema {
                extension: Some(x()),
                pointer: x(),
                message: x(),
            },
            Error::DuplicateExtension { extension: x() },
            Error::UnknownExtension { extension: x() },
            Error::Compaction {
                extension: x(),
                reason: x(),
            },
        ];
        let kinds: std::collections::HashSet<ErrorKind> = samples.iter().map(Error::kind).collect();
        assert_eq!(kinds.len(), 8, "a variant without a sample");
        for e in &samples {
            assert_eq!((e.kind(), e.is_conflict()), expected(e), "{e}");
            assert_eq!(e.extension(), Some("x"), "{e}");
        }
        let base = Error::InvalidSchema {
            extension: None,
            pointer: x(),
            message: x(),
        };
        assert_eq!(base.extension(), None);
    }
}
