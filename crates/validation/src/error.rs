//! The error type of `claij-validation`.
//!
//! Its one variant wraps a schema error, so [`Error::kind`] says so and [`Error::schema`] gives the
//! schema error, whose own `kind()` says more. A kind enum of its own (not `claij_schema`'s) leaves
//! room for failures that are not the schema's.

/// What can go wrong before an instance can even be validated.
///
/// ```
/// use claij_validation::{Error, ErrorKind};
///
/// let error = Error::Schema(claij_schema::Error::InvalidSchema {
///     extension: None,
///     pointer: "/properties/age/minimum".into(),
///     message: "\"ten\" is not of type \"number\"".into(),
/// });
/// match error.kind() {
///     ErrorKind::Schema => {
///         let schema = error.schema().map(claij_schema::Error::kind);
///         assert_eq!(schema, Some(claij_schema::ErrorKind::InvalidSchema));
///     }
///     _ => unreachable!("one kind so far"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The schema itself is invalid; the inner error says where.
    #[error(transparent)]
    Schema(#[from] claij_schema::Error),
}

/// What kind of failure an [`Error`] is, to match on without its fields.
///
/// One kind per crate, naming its own variants; the meanings shared across claij crates are the
/// predicates on [`Error`] (see `claij_interceptors`' crate docs for why).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Schema`].
    Schema,
}

impl Error {
    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Schema(_) => ErrorKind::Schema,
        }
    }

    /// The schema's error, when the schema is at fault ([`Error::Schema`]).
    pub fn schema(&self) -> Option<&claij_schema::Error> {
        match self {
            Error::Schema(e) => Some(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_is_classified() {
        let inner = claij_schema::Error::UnknownExtension {
            extension: "x".into(),
        };
        let e = Error::Schema(inner.clone());
        // No wildcard: a new variant does not compile here until it is classified.
        let expected = match &e {
            Error::Schema(_) => ErrorKind::Schema,
        };
        assert_eq!(e.kind(), expected);
        assert_eq!(e.schema(), Some(&inner));
    }
}
