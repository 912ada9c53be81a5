//! Scrubbing: whatever looks like a key, a token or an auth header becomes `***` before it is written.

use std::borrow::Cow;

use serde_json::Value;

/// Key prefixes, each with the fewest key characters that must follow it.
const PREFIXES: &[(&str, usize)] = &[
    ("sk-", 10),  // OpenAI (sk-proj-), OpenRouter (sk-or-v1-), Anthropic (sk-ant-)
    ("AIza", 20), // Google API keys
    ("xai-", 10), // xAI
    ("gsk_", 10), // Groq
];

/// Header (or field) names whose value is a secret.
const HEADERS: &[&str] = &[
    "proxy-authorization",
    "authorization",
    "x-goog-api-key",
    "x-api-key",
    "api-key",
];

/// Query parameters whose value is a secret after `?` or `&`.
const QUERY_PARAMS: &[&str] = &["key", "api_key", "apikey", "access_token", "token"];

/// Parameters whose value is a secret wherever `name=` appears.
const ASSIGNMENTS: &[&str] = &["api_key", "apikey", "access_token"];

/// Authorization schemes kept in front of the scrubbed credential.
const SCHEMES: &[&str] = &["bearer", "basic", "token"];

/// `text` with everything that looks like a secret replaced by `***`:
///
/// - keys by their prefix: `sk-...` (OpenAI, OpenRouter, Anthropic), `AIza...` (Google), `xai-...`,
///   `gsk_...`; the prefix stays (`sk-***`);
/// - `Bearer <token>` (any case);
/// - the value after `Authorization`, `Proxy-Authorization`, `x-api-key`, `x-goog-api-key` or
///   `api-key` and a `:` or `=` (quoted or not, as in a header line or JSON);
/// - query parameters `key=`, `api_key=`, `apikey=`, `access_token=`, `token=` after `?` or `&`,
///   and `api_key=`, `apikey=`, `access_token=` anywhere.
///
/// It errs towards scrubbing: prose such as `Authorization: see below` loses a word.
///
/// ```
/// use claij_backends::cassette::scrub_secrets;
///
/// assert_eq!(
///     scrub_secrets("GET /v1/models?key=AIzaSyA-1234567890abcdefghijk HTTP/1.1"),
///     "GET /v1/models?key=*** HTTP/1.1"
/// );
/// assert_eq!(scrub_secrets("Authorization: Bearer sk-or-v1-0123456789abcdef"), "Authorization: Bearer ***");
/// assert_eq!(scrub_secrets("nothing to hide"), "nothing to hide");
/// ```
pub fn scrub_secrets(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        match secret_at(bytes, i) {
            Some((keep, end)) => {
                out.push_str(&text[copied..keep]);
                out.push_str("***");
                copied = end;
                i = end;
            }
            None => i += 1,
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Scrubs every string in `value`, and replaces the value of any member named like an auth header.
pub(super) fn scrub_value(value: &mut Value) {
    match value {
        Value::String(s) => {
            if let Cow::Owned(scrubbed) = scrub_secrets(s) {
                *s = scrubbed;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub_value),
        Value::Object(map) => {
            for (key, member) in map.iter_mut() {
                let lower = key.to_ascii_lowercase();
                let secret =
                    HEADERS.contains(&lower.as_str()) || ASSIGNMENTS.contains(&lower.as_str());
                if secret && member.is_string() {
                    *member = Value::String("***".into());
                } else {
                    scrub_value(member);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// A secret starting at `i`: `(keep, end)` where `bytes[..keep]` stays and `bytes[keep..end]` is the
/// secret. Both are ASCII positions, so they are char boundaries.
fn secret_at(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    let first = *bytes.get(i)?;
    if !first.is_ascii() {
        return None;
    }
    let boundary = i == 0 || !is_name_byte(bytes[i - 1]);
    if boundary {
        for &(prefix, min) in PREFIXES {
            if bytes[i..].starts_with(prefix.as_bytes()) {
                let start = i + prefix.len();
                let end = run(bytes, start, is_key_byte);
                if end - start >= min {
                    return Some((start, end));
                }
            }
        }
        // Standalone, only a token-like credential counts: "the bearer of bad news" stays.
        if let Some(found) = credential_after_scheme(bytes, i, "bearer", 8) {
            return Some(found);
        }
        for name in HEADERS {
            if starts_with_ignore_case(bytes, i, name)
                && let Some(found) = header_value(bytes, i + name.len())
            {
                return Some(found);
            }
        }
        for name in ASSIGNMENTS {
            if let Some(found) = query_value(bytes, i, name) {
                return Some(found);
            }
        }
    }
    if i > 0 && matches!(bytes[i - 1], b'?' | b'&') {
        for name in QUERY_PARAMS {
            if let Some(found) = query_value(bytes, i, name) {
                return Some(found);
            }
        }
    }
    None
}

/// `<scheme> <credential>` at `i`: the credential (at least `min` token characters) is the secret.
fn credential_after_scheme(
    bytes: &[u8],
    i: usize,
    scheme: &str,
    min: usize,
) -> Option<(usize, usize)> {
    if !starts_with_ignore_case(bytes, i, scheme) {
        return None;
    }
    let spaces = i + scheme.len();
    let start = run(bytes, spaces, |b| b == b' ');
    if start == spaces {
        return None;
    }
    let end = run(bytes, start, is_token_byte);
    (end > start && end - start >= min).then_some((start, end))
}

/// The value after a header name ending at `at`: `"name": "value"`, `name: value`, `name=value`.
fn header_value(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    if bytes.get(at).is_some_and(|&b| is_name_byte(b)) {
        return None; // a longer word, such as `authorizations`
    }
    let mut j = run(bytes, at, |b| b == b'"' || b == b'\'');
    j = run(bytes, j, |b| b == b' ');
    if !matches!(bytes.get(j), Some(b':' | b'=')) {
        return None;
    }
    j = run(bytes, j + 1, |b| b == b' ' || b == b'"' || b == b'\'');
    for scheme in SCHEMES {
        if let Some(found) = credential_after_scheme(bytes, j, scheme, 1) {
            return Some(found);
        }
    }
    let end = run(bytes, j, is_value_byte);
    (end > j).then_some((j, end))
}

/// `name=value` at `i` (the value up to `&`, `#`, whitespace or a quote).
fn query_value(bytes: &[u8], i: usize, name: &str) -> Option<(usize, usize)> {
    if !starts_with_ignore_case(bytes, i, name) || bytes.get(i + name.len()) != Some(&b'=') {
        return None;
    }
    let start = i + name.len() + 1;
    let end = run(bytes, start, |b| is_value_byte(b) && b != b'#');
    (end > start).then_some((start, end))
}

/// The end of the run of bytes from `from` that satisfy `pred`.
fn run(bytes: &[u8], from: usize, pred: impl Fn(u8) -> bool) -> usize {
    let len = bytes
        .get(from..)
        .map_or(0, |rest| rest.iter().take_while(|&&b| pred(b)).count());
    from + len
}

fn starts_with_ignore_case(bytes: &[u8], i: usize, pattern: &str) -> bool {
    bytes
        .get(i..i + pattern.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(pattern.as_bytes()))
}

/// Part of a word or a name: letters, digits, `-`, `_`.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// The characters of a bearer token (RFC 6750's b64token).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// A character of an unquoted value: ASCII, not whitespace, a quote or a separator.
fn is_value_byte(b: u8) -> bool {
    b.is_ascii_graphic()
        && !matches!(
            b,
            b'"' | b'\'' | b',' | b';' | b'&' | b'}' | b']' | b')' | b'<' | b'>'
        )
}
