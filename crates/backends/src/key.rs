//! [`ApiKey`]: a provider key that never shows itself in logs, errors or debug output.

use std::fmt;

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

    /// Replaces every occurrence of this key in `text` with `***` (for messages that might echo it).
    pub fn scrub(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_owned();
        }
        text.replace(&self.0, "***")
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}
