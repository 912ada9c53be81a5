//! [`Error`], the front door's one error: what went wrong ([`Error::kind`]), a message that says
//! where (a configuration error names the file, the line and the key path), and the predicates a
//! caller branches on ([`Error::is_timeout`], [`Error::is_retryable`], ...), forwarded to the
//! backend's or the pipeline's error underneath.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

/// What kind of thing failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The settings are invalid: a configuration file (file, line and key path in the message),
    /// settings built in code, or a named configuration file that does not exist.
    Config,
    /// A model name that does not resolve, or a model option that does not fit the model.
    Model,
    /// A provider's key is not set (or is not UTF-8).
    Key,
    /// The provider or the embedded model is not in this build (a feature is off).
    Unavailable,
    /// A cost budget for a model without a known price.
    Unpriced,
    /// A file cannot be read or written.
    Io,
    /// A file's content is not what it should be (a matrix, a price list).
    File,
    /// A session file this claij cannot read or continue.
    Session,
    /// The backend failed (opening it, or a call).
    Backend,
    /// The pipeline failed (validation, retries, a budget, an interceptor).
    Pipeline,
    /// The embedded model cannot be loaded.
    Local,
}

/// The front door's error (boxed: a `Result` stays small).
pub struct Error(Box<Repr>);

struct Repr {
    kind: ErrorKind,
    /// Empty: the inner error's own message, shown as is.
    message: String,
    inner: Option<Inner>,
}

enum Inner {
    Io(std::io::Error),
    Backend(claij_backends::Error),
    Pipeline(Box<claij_interceptors::Error>),
    Session(crate::session::SessionError),
    Other(Box<dyn StdError + Send + Sync>),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self::with(kind, message, None)
    }

    fn with(kind: ErrorKind, message: impl Into<String>, inner: Option<Inner>) -> Self {
        Self(Box::new(Repr {
            kind,
            message: message.into(),
            inner,
        }))
    }

    /// An error of `kind` with `message` (a cached error given again).
    pub(crate) fn with_kind(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self::new(kind, message)
    }

    /// Invalid settings; `message` says where (`path:line: key.path: what`).
    pub(crate) fn config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config, message)
    }

    /// A model name or option that does not resolve or fit.
    pub(crate) fn model(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Model, message)
    }

    /// A provider key that is not set.
    pub(crate) fn key(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Key, message)
    }

    /// Something this build does not have.
    pub(crate) fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable, message)
    }

    /// No price for a cost budget.
    pub(crate) fn unpriced(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unpriced, message)
    }

    /// A file whose content is wrong.
    pub(crate) fn file(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::File, message)
    }

    /// A file whose content is wrong, because of `source`.
    pub(crate) fn file_because(
        message: impl Into<String>,
        source: impl StdError + Send + Sync + 'static,
    ) -> Self {
        Self::with(
            ErrorKind::File,
            message,
            Some(Inner::Other(Box::new(source))),
        )
    }

    /// A file that cannot be read or written: `context` names it (`cannot read FILE`), the
    /// operating system's error is the source.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::with(ErrorKind::Io, context, Some(Inner::Io(source)))
    }

    /// A session error with `context` before it.
    pub(crate) fn session(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Session, message)
    }

    /// The embedded model cannot be loaded.
    #[cfg(feature = "local")]
    pub(crate) fn local(source: impl StdError + Send + Sync + 'static) -> Self {
        Self::with(ErrorKind::Local, "", Some(Inner::Other(Box::new(source))))
    }

    /// This error under `message` (`message: this error`), of the same kind.
    pub(crate) fn context(self, message: impl Into<String>) -> Self {
        let kind = self.0.kind;
        Self::with(kind, message, Some(Inner::Other(Box::new(self))))
    }

    /// What kind of thing failed.
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The backend's error underneath (its own or the pipeline's), if any.
    #[must_use]
    pub fn backend(&self) -> Option<&claij_backends::Error> {
        match &self.0.inner {
            Some(Inner::Backend(e)) => Some(e),
            Some(Inner::Pipeline(e)) => e.backend(),
            _ => None,
        }
    }

    /// The pipeline's error underneath, if any.
    #[must_use]
    pub fn pipeline(&self) -> Option<&claij_interceptors::Error> {
        match &self.0.inner {
            Some(Inner::Pipeline(e)) => Some(e),
            _ => None,
        }
    }

    /// The operating system's error underneath a file that cannot be read or written, if any.
    #[must_use]
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match &self.0.inner {
            Some(Inner::Io(e)) => Some(e),
            _ => None,
        }
    }

    /// The session error underneath, if the session file was refused for what it says.
    #[must_use]
    pub fn session_error(&self) -> Option<&crate::session::SessionError> {
        match &self.0.inner {
            Some(Inner::Session(e)) => Some(e),
            _ => None,
        }
    }

    /// Whether the settings are invalid (a file, the environment, or settings built in code).
    #[must_use]
    pub fn is_config(&self) -> bool {
        matches!(self.0.kind, ErrorKind::Config | ErrorKind::Model)
    }

    /// Whether a call timed out.
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        match &self.0.inner {
            Some(Inner::Backend(e)) => e.is_timeout(),
            Some(Inner::Pipeline(e)) => e.is_timeout(),
            Some(Inner::Io(e)) => e.kind() == std::io::ErrorKind::TimedOut,
            _ => false,
        }
    }

    /// Whether a call found no server (connection refused, DNS).
    #[must_use]
    pub fn is_connect(&self) -> bool {
        match &self.0.inner {
            Some(Inner::Backend(e)) => e.is_connect(),
            Some(Inner::Pipeline(e)) => e.is_connect(),
            _ => false,
        }
    }

    /// Whether the provider said too many requests.
    #[must_use]
    pub fn is_rate_limited(&self) -> bool {
        match &self.0.inner {
            Some(Inner::Backend(e)) => e.is_rate_limited(),
            Some(Inner::Pipeline(e)) => e.is_rate_limited(),
            _ => false,
        }
    }

    /// Whether the provider refused the key, or no key was there to send.
    #[must_use]
    pub fn is_auth(&self) -> bool {
        match &self.0.inner {
            Some(Inner::Backend(e)) => e.is_auth(),
            Some(Inner::Pipeline(e)) => e.is_auth(),
            _ => self.0.kind == ErrorKind::Key,
        }
    }

    /// Whether the call was cancelled.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        match &self.0.inner {
            Some(Inner::Backend(e)) => e.is_cancelled(),
            Some(Inner::Pipeline(e)) => e.is_cancelled(),
            _ => false,
        }
    }

    /// Whether the model would not answer: a refusal, a content filter or a blocked prompt, with
    /// the provider's message (`claij_backends::Error::is_refusal`). Sent once: trying again gets
    /// the same answer.
    #[must_use]
    pub fn is_refusal(&self) -> bool {
        match &self.0.inner {
            Some(Inner::Backend(e)) => e.is_refusal(),
            Some(Inner::Pipeline(e)) => e.is_refusal(),
            _ => false,
        }
    }

    /// Whether trying again later may succeed (the backends' one definition).
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match &self.0.inner {
            Some(Inner::Backend(e)) => e.is_retryable(),
            Some(Inner::Pipeline(e)) => e.is_retryable(),
            _ => false,
        }
    }

    /// How long the provider asked to wait before trying again.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        match &self.0.inner {
            Some(Inner::Backend(e)) => e.retry_after(),
            Some(Inner::Pipeline(e)) => e.retry_after(),
            _ => None,
        }
    }

    /// Whether the model's replies never validated (retries exhausted).
    #[must_use]
    pub fn is_invalid_reply(&self) -> bool {
        matches!(&self.0.inner, Some(Inner::Pipeline(e)) if e.is_invalid_reply())
    }

    /// Whether a budget (cost, steps) stopped the run.
    #[must_use]
    pub fn is_budget(&self) -> bool {
        matches!(&self.0.inner, Some(Inner::Pipeline(e)) if e.is_budget())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.message.is_empty() {
            return f.write_str(&self.0.message);
        }
        match &self.0.inner {
            Some(Inner::Io(e)) => fmt::Display::fmt(e, f),
            Some(Inner::Backend(e)) => fmt::Display::fmt(e, f),
            Some(Inner::Pipeline(e)) => fmt::Display::fmt(e, f),
            Some(Inner::Session(e)) => fmt::Display::fmt(e, f),
            Some(Inner::Other(e)) => fmt::Display::fmt(e, f),
            None => f.write_str("error"),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Error");
        debug.field("kind", &self.0.kind);
        if !self.0.message.is_empty() {
            debug.field("message", &self.0.message);
        }
        match &self.0.inner {
            Some(Inner::Io(e)) => debug.field("source", e),
            Some(Inner::Backend(e)) => debug.field("source", e),
            Some(Inner::Pipeline(e)) => debug.field("source", e),
            Some(Inner::Session(e)) => debug.field("source", e),
            Some(Inner::Other(e)) => debug.field("source", e),
            None => &mut debug,
        };
        debug.finish()
    }
}

impl StdError for Error {
    /// With a message of its own, the error underneath; shown as the inner error (no message),
    /// that error's own source.
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        let inner: &(dyn StdError + 'static) = match self.0.inner.as_ref()? {
            Inner::Io(e) => e,
            Inner::Backend(e) => e,
            Inner::Pipeline(e) => e.as_ref(),
            Inner::Session(e) => e,
            Inner::Other(e) => e.as_ref(),
        };
        if self.0.message.is_empty() {
            inner.source()
        } else {
            Some(inner)
        }
    }
}

impl From<claij_backends::Error> for Error {
    fn from(e: claij_backends::Error) -> Self {
        Self::with(ErrorKind::Backend, "", Some(Inner::Backend(e)))
    }
}

impl From<claij_interceptors::Error> for Error {
    fn from(e: claij_interceptors::Error) -> Self {
        Self::with(ErrorKind::Pipeline, "", Some(Inner::Pipeline(Box::new(e))))
    }
}

impl From<crate::session::SessionError> for Error {
    fn from(e: crate::session::SessionError) -> Self {
        Self::with(ErrorKind::Session, "", Some(Inner::Session(e)))
    }
}

#[cfg(test)]
mod tests;
