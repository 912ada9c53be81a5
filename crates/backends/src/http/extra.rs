//! Extra headers and query parameters an [`HttpBackend`](super::HttpBackend) adds to every
//! request (a gateway's key, Azure OpenAI's `api-version`), the checks they pass, and how they
//! join the adapter's URL and headers.

use std::fmt;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::redact::MARKER;

/// A header or query parameter sent with every request, besides what the adapter sets.
///
/// A secret one ([`Extra::secret`], or [`Extra::new`] with a name that looks secret) is sent as a
/// sensitive header, scrubbed from every error like the key, and shown as `***` by `Debug`.
///
/// ```
/// use claij_backends::http::Extra;
///
/// let gateway = Extra::new("Helicone-Auth", "Bearer sk-helicone-0123456789");
/// assert!(gateway.is_secret());
/// assert_eq!(format!("{gateway:?}"), r#"Extra { name: "Helicone-Auth", value: "***" }"#);
/// assert!(!Extra::new("api-version", "2024-10-21").is_secret());
/// assert!(Extra::secret("x-portkey-provider", "openai").is_secret());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Extra {
    name: String,
    value: String,
    secret: bool,
}

/// Why a header cannot be added to the requests ([`check_header_name`], [`check_header_value`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderProblem {
    /// The name is no HTTP header name (empty, spaces, `:` or other characters HTTP forbids).
    InvalidName,
    /// The value has characters HTTP forbids in a header (a line break, a control character).
    InvalidValue,
    /// claij sets this header itself (`Content-Type`, `Content-Length`, `Host`, `User-Agent`, ...).
    Reserved,
}

/// The headers claij or the HTTP stack sets on every request, which an [`Extra`] may not replace.
const RESERVED: [&str; 7] = [
    "content-type",
    "content-length",
    "content-encoding",
    "transfer-encoding",
    "host",
    "connection",
    "user-agent",
];

/// Words of a name (between `-`, `_` and `.`) that say its value is a credential, in lower case.
const SECRET_WORDS: [&str; 9] = [
    "key",
    "apikey",
    "sig",
    "signature",
    "cookie",
    "credential",
    "credentials",
    "passwd",
    "session",
];

/// Ends of a word that say the same (`accesstoken`, `clientsecret`, `password`).
const SECRET_WORD_ENDS: [&str; 3] = ["token", "secret", "password"];

impl Extra {
    /// A header or parameter, secret when its name looks secret ([`is_secret_name`]).
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        let secret = is_secret_name(&name);
        Self {
            name,
            value: value.into(),
            secret,
        }
    }

    /// A header or parameter whose value is secret whatever its name (a value read from the
    /// environment, say).
    pub fn secret(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
            secret: true,
        }
    }

    /// The header's or parameter's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The value itself, for the one place that puts it on a request.
    pub fn expose(&self) -> &str {
        &self.value
    }

    /// Whether the value is secret.
    pub fn is_secret(&self) -> bool {
        self.secret
    }
}

impl fmt::Debug for Extra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = if self.secret { MARKER } else { &self.value };
        f.debug_struct("Extra")
            .field("name", &self.name)
            .field("value", &value)
            .finish()
    }
}

impl fmt::Display for HeaderProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HeaderProblem::InvalidName => "not a valid HTTP header name",
            HeaderProblem::InvalidValue => "the value has characters HTTP forbids in a header",
            HeaderProblem::Reserved => "claij sets this header itself",
        })
    }
}

/// Whether a header or parameter of this name holds a credential, judged by its words (split at
/// `-`, `_` and `.`, any case): one starts with `auth` (`Authorization`, `Helicone-Auth`), is `key`,
/// `apikey`, `sig`, `signature`, `cookie`, `credential(s)`, `passwd` or `session`, or ends with
/// `token`, `secret` or `password` (`x-portkey-api-key` and `api-key` are secret,
/// `x-portkey-provider` and `api-version` are not). It errs towards secrecy.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.split(['-', '_', '.']).any(|word| {
        word.starts_with("auth")
            || SECRET_WORDS.contains(&word)
            || SECRET_WORD_ENDS.iter().any(|end| word.ends_with(end))
    })
}

/// Whether `name` may be added to every request: a valid HTTP header name that claij does not set
/// itself.
///
/// # Errors
///
/// [`HeaderProblem::InvalidName`] or [`HeaderProblem::Reserved`].
pub fn check_header_name(name: &str) -> Result<(), HeaderProblem> {
    let parsed = HeaderName::from_bytes(name.as_bytes()).map_err(|_| HeaderProblem::InvalidName)?;
    if RESERVED.contains(&parsed.as_str()) {
        return Err(HeaderProblem::Reserved);
    }
    Ok(())
}

/// Whether `value` may be sent in a header: visible ASCII, spaces and tabs (and bytes above 127).
///
/// # Errors
///
/// [`HeaderProblem::InvalidValue`].
pub fn check_header_value(value: &str) -> Result<(), HeaderProblem> {
    HeaderValue::from_str(value)
        .map(drop)
        .map_err(|_| HeaderProblem::InvalidValue)
}

/// `base_url` joined with the adapter's `path` (which may carry a query of its own), a query
/// string in `base_url` kept after the path, then `query` appended, encoded.
pub(super) fn url(base_url: &str, path: &str, query: &[Extra]) -> Result<reqwest::Url, String> {
    let (base, base_query) = match base_url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (base_url, None),
    };
    let joined = format!("{}{path}", base.trim_end_matches('/'));
    // The URL is not echoed: a user's base URL may carry credentials.
    let mut url = reqwest::Url::parse(&joined)
        .map_err(|e| format!("the base URL and path make no valid URL ({e})"))?;
    if let Some(extra) = base_query.filter(|q| !q.is_empty()) {
        let merged = match url.query().filter(|q| !q.is_empty()) {
            Some(own) => format!("{own}&{extra}"),
            None => extra.to_owned(),
        };
        url.set_query(Some(&merged));
    }
    if !query.is_empty() {
        let mut pairs = url.query_pairs_mut();
        for param in query {
            pairs.append_pair(&param.name, &param.value);
        }
    }
    Ok(url)
}

/// Adds `extras` to `headers`, secret ones marked sensitive.
pub(super) fn add_headers(headers: &mut HeaderMap, extras: &[Extra]) -> Result<(), String> {
    for extra in extras {
        let name = &extra.name;
        check_header_name(name).map_err(|problem| format!("the `{name}` header: {problem}"))?;
        let parsed = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is no valid header name"))?;
        let mut value = HeaderValue::from_str(&extra.value)
            .map_err(|_| format!("the `{name}` header: {}", HeaderProblem::InvalidValue))?;
        value.set_sensitive(extra.secret);
        if headers.contains_key(&parsed) {
            return Err(format!("the `{name}` header is given twice"));
        }
        headers.insert(parsed, value);
    }
    Ok(())
}

/// The message for a header the adapter sets that an extra header already set.
pub(super) fn clash(name: &str, provider: &str) -> String {
    format!("the `{name}` header is set by claij for {provider} and cannot also be an extra header")
}

#[cfg(test)]
mod tests;
