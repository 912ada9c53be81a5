//! [`ApiKey`]: a provider key that never shows itself in logs, errors or debug output.

use std::fmt;

use crate::redact::{MARKER, redact_secret};

/// A secret API key. `Debug` and `Display` print `ApiKey(***)`; only [`ApiKey::expose`] gives the text.
///
/// ```
/// use claij_backends::ApiKey;
///
/// let key = ApiKey::new("sk-live-1234567890");
/// assert_eq!(format!("{key:?} {key}"), "ApiKey(***) ***");
/// assert_eq!(key.expose(), "sk-live-1234567890");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key (surrounding whitespace removed: keys pasted from files often carry a newline).
    pub fn new(key: impl Into<String>) -> Self {
        let key = key.into();
        Self(key.trim().to_owned())
    }

    /// The key itself, for the one place that puts it on a request.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the key is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every copy of this key replaced by `***` (for messages that might echo it): the
    /// key itself and, for a key of 8 bytes or more, its base64 and percent-encoded copies (see
    /// [`redact_secret`]). A key shorter than 4 bytes is left alone: it would match ordinary text.
    ///
    /// ```
    /// use claij_backends::ApiKey;
    ///
    /// let key = ApiKey::new("sk-live-1234567890");
    /// assert_eq!(key.scrub("bad key sk-live-1234567890"), "bad key ***");
    /// // base64("sk-live-1234567890"), as in a Basic header
    /// assert_eq!(key.scrub("Basic c2stbGl2ZS0xMjM0NTY3ODkw"), "Basic ***");
    /// ```
    pub fn scrub(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_owned();
        }
        redact_secret(text, &self.0).into_owned()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({MARKER})")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MARKER)
    }
}
