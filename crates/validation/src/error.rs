//! The error type of `claij-validation`.

/// What can go wrong before an instance can even be validated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The schema itself is invalid; the inner error says where.
    #[error(transparent)]
    Schema(#[from] claij_schema::Error),
}
