//! Redaction: the one set of rules that keeps keys, tokens, auth headers and URL credentials out of
//! cassettes, failure logs, errors and printed configurations.
//!
//! Everything secret becomes [`MARKER`]. [`redact_text`] scrubs free text by the form of what it
//! finds; [`redact_url`] keeps only what identifies a server; [`redact_urls_in`] does that to every
//! URL of a message; [`redact_value`] walks JSON; [`redact_secret`] removes one known secret with its
//! base64 and URL-encoded copies. All of them take time linear in the text (left-to-right scans,
//! no backtracking regex) and never panic, whatever the input. The workspace's test support
//! (`claij_test_support::secrets`) lists every form the rules remove, for property tests of the
//! places that redact.
//!
//! ```
//! use claij_backends::redact::{redact_text, redact_url, MARKER};
//!
//! assert_eq!(MARKER, "***");
//! assert_eq!(redact_text("Authorization: Bearer sk-or-v1-0123456789abcdef"), "Authorization: Bearer ***");
//! assert_eq!(redact_text("GET /v1/models?key=AIzaSyA-1234567890abcdefghijk"), "GET /v1/models?key=***");
//! assert_eq!(redact_url("https://me:pw@proxy.example/v1?key=k"), "https://***@proxy.example/v1?***");
//! assert_eq!(redact_text("nothing to hide"), "nothing to hide");
//! ```

use std::borrow::Cow;

use serde_json::Value;

/// What stands in for a secret, everywhere.
pub const MARKER: &str = "***";

/// A known secret shorter than this is matched only as itself: its encoded fragments would be too
/// short to be told from ordinary text.
const MIN_ENCODED_SECRET: usize = 8;

/// Key prefixes, each with the fewest key characters that must follow it. The prefix stays in the
/// output (`sk-***`): it says which provider's key it was, and is no secret.
const PREFIXES: &[(&str, usize)] = &[
    // OpenAI (sk-proj-), OpenRouter (sk-or-v1-), Anthropic (sk-ant-api03-)
    ("sk-", 10),
    // Google API keys (AIza and 35 more)
    ("AIza", 16),
    ("xai-", 10),
    // Groq
    ("gsk_", 10),
    // Perplexity, NVIDIA
    ("pplx-", 10),
    ("nvapi-", 10),
    // Hugging Face, Replicate
    ("hf_", 16),
    ("r8_", 16),
    // GitHub (classic and fine-grained), GitLab
    ("ghp_", 16),
    ("github_pat_", 16),
    ("glpat-", 16),
];

/// Names whose value is a credential: headers, JSON members, `name: value` and `name=value` in
/// text. Matched in any case, `_` and `-` alike (`X_API_KEY` is `x-api-key`).
const CREDENTIAL_NAMES: &[&str] = &[
    "proxy-authorization",
    "authorization",
    "x-goog-api-key",
    "x-api-key",
    "api-key",
    "apikey",
    "access-token",
    "refresh-token",
    "client-secret",
    "password",
];

/// Query parameters whose value is a secret after `?` or `&`.
const QUERY_PARAMS: &[&str] = &["key", "api_key", "apikey", "access_token", "token"];

/// Authorization schemes kept in front of the redacted credential.
const SCHEMES: &[&str] = &["bearer", "basic", "token"];

/// `text` with everything that looks like a secret replaced by [`MARKER`]:
///
/// - keys by their prefix: `sk-...` (OpenAI, OpenRouter `sk-or-`, Anthropic `sk-ant-`), `AIza...`
///   (Google), `xai-`, `gsk_` (Groq), `pplx-`, `nvapi-`, `hf_`, `r8_`, `ghp_`, `github_pat_`,
///   `glpat-`; the prefix stays (`sk-***`);
/// - `Bearer <token>` (any case);
/// - the value after a credential's name (`Authorization`, `Proxy-Authorization`, `x-api-key`,
///   `x-goog-api-key`, `api-key`, `apikey`, `access-token`, `refresh-token`, `client-secret`,
///   `password`; any case, `_` or `-`) and a `:` or `=`, quoted or not, as in a header line, JSON or
///   an assignment; after its scheme (`Bearer`, `Basic`, `token`) if it has one;
/// - query parameters `key=`, `api_key=`, `apikey=`, `access_token=`, `token=` after `?` or `&`;
/// - the user info of a URL (`https://user:password@host` becomes `https://***@host`).
///
/// It errs towards redacting: prose such as `Authorization: see below` loses a word. Text with
/// nothing to redact is borrowed back unchanged, and redacting twice changes nothing more.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        match secret_at(bytes, i) {
            Some((keep, end)) => {
                out.push_str(&text[copied..keep]);
                out.push_str(MARKER);
                copied = end;
                i = end.max(i + 1);
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

/// `url` with only what identifies the server left: the user info becomes [`MARKER`], so does the
/// whole query string and the fragment (any parameter may be a token), and key-like forms in the
/// path are redacted as [`redact_text`] does.
///
/// ```
/// use claij_backends::redact::redact_url;
///
/// assert_eq!(redact_url("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1");
/// assert_eq!(redact_url("https://h.example/mcp?token=t#top"), "https://h.example/mcp?***#***");
/// assert_eq!(redact_url("https://h.example/bot/sk-0123456789abcdef/x"), "https://h.example/bot/sk-***/x");
/// ```
pub fn redact_url(url: &str) -> String {
    let (base, query, fragment) = split_url(url);
    let mut out = redact_text(base).into_owned();
    if query {
        out.push('?');
        out.push_str(MARKER);
    }
    if fragment {
        out.push('#');
        out.push_str(MARKER);
    }
    out
}

/// `text` (a message from an HTTP stack or a server, which quotes the URL it failed on) with every
/// `http://` or `https://` URL reduced as [`redact_url`] does, and the rest redacted as
/// [`redact_text`] does.
///
/// ```
/// use claij_backends::redact::redact_urls_in;
///
/// assert_eq!(
///     redact_urls_in("error sending request for url (http://127.0.0.1:4/mcp?sig=abc)"),
///     "error sending request for url (http://127.0.0.1:4/mcp?***)"
/// );
/// ```
pub fn redact_urls_in(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut rest = text;
    let mut changed = false;
    while let Some(start) = find_url(rest) {
        let url = &rest[start..];
        let end = url
            .find(|c: char| c.is_whitespace() || matches!(c, ')' | '"' | '\'' | '<' | '>' | ']'))
            .unwrap_or(url.len());
        let redacted = redact_url(&url[..end]);
        changed |= redacted != url[..end];
        out.push_str(&redact_text(&rest[..start]));
        out.push_str(&redacted);
        rest = &url[end..];
    }
    if !changed {
        return redact_text(text);
    }
    out.push_str(&redact_text(rest));
    Cow::Owned(out)
}

/// Redacts `value` in place: a string member named like a credential (the names [`redact_text`]
/// knows: `authorization`, `x-api-key`, `api_key`, `access_token`, `password`, ...; any case, `_`
/// or `-`) becomes [`MARKER`], and every other string is passed through [`redact_text`]. It walks
/// with a stack of its own, so any depth is fine.
///
/// ```
/// use claij_backends::redact::redact_value;
/// use serde_json::json;
///
/// let mut value = json!({"headers": {"X-Api-Key": "k"}, "text": ["Bearer abcdefgh12345678"]});
/// redact_value(&mut value);
/// assert_eq!(value, json!({"headers": {"X-Api-Key": "***"}, "text": ["Bearer ***"]}));
/// ```
pub fn redact_value(value: &mut Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(s) => {
                if let Cow::Owned(redacted) = redact_text(s) {
                    *s = redacted;
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(map) => {
                for (name, member) in map.iter_mut() {
                    if member.is_string() && is_secret_member(name) {
                        *member = Value::String(MARKER.to_owned());
                    } else {
                        stack.push(member);
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// `text` with every copy of one known `secret` (the key an adapter holds) replaced by [`MARKER`]:
/// the secret itself, its percent-encoded form, and its base64 encodings (standard and URL-safe
/// alphabets, also as part of a longer encoded value such as `Basic base64(user:key)`, where the
/// characters that carry only the secret's bits are replaced). A secret shorter than 8 bytes is
/// matched only as itself; an empty one matches nothing.
///
/// ```
/// use claij_backends::redact::redact_secret;
///
/// let key = "live-key-1234567890";
/// assert_eq!(redact_secret("bad key live-key-1234567890", key), "bad key ***");
/// // base64("user:live-key-1234567890")
/// assert_eq!(redact_secret("Basic dXNlcjpsaXZlLWtleS0xMjM0NTY3ODkw", key), "Basic dXNlcjp***");
/// ```
pub fn redact_secret<'a>(text: &'a str, secret: &str) -> Cow<'a, str> {
    if secret.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut forms = vec![secret.to_owned()];
    if secret.len() >= MIN_ENCODED_SECRET {
        forms.push(percent_encode(secret));
        for alphabet in [STANDARD, URL_SAFE] {
            forms.push(base64(secret.as_bytes(), alphabet, true));
            for offset in 0..3 {
                forms.push(base64_core(secret.as_bytes(), offset, alphabet));
            }
        }
    }
    // Longer forms first, so a whole encoding goes before a fragment of it.
    forms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    forms.dedup();
    let mut out = Cow::Borrowed(text);
    for form in forms.iter().filter(|form| !form.is_empty()) {
        if out.contains(form.as_str()) {
            out = Cow::Owned(out.replace(form.as_str(), MARKER));
        }
    }
    out
}

/// Whether a JSON member of this name holds a credential.
fn is_secret_member(name: &str) -> bool {
    CREDENTIAL_NAMES
        .iter()
        .any(|n| n.len() == name.len() && starts_with_name(name.as_bytes(), 0, n))
}

/// `url` without its query string and fragment, and whether it had each.
fn split_url(url: &str) -> (&str, bool, bool) {
    let (rest, fragment) = match url.split_once('#') {
        Some((rest, _)) => (rest, true),
        None => (url, false),
    };
    match rest.split_once('?') {
        Some((base, _)) => (base, true, fragment),
        None => (rest, false, fragment),
    }
}

/// Where the first `http://` or `https://` of `text` starts.
fn find_url(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    text.match_indices(['h', 'H']).map(|(i, _)| i).find(|&i| {
        starts_with_ignore_case(bytes, i, "http://")
            || starts_with_ignore_case(bytes, i, "https://")
    })
}

/// A secret starting at `i`: `(keep, end)` where `bytes[..keep]` stays and `bytes[keep..end]` is the
/// secret. Both are ASCII positions, so they are char boundaries.
fn secret_at(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    let first = *bytes.get(i)?;
    if !first.is_ascii() {
        return None;
    }
    if first == b':' {
        return userinfo(bytes, i);
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
        for name in CREDENTIAL_NAMES {
            if starts_with_name(bytes, i, name)
                && let Some(found) = header_value(bytes, i + name.len())
            {
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

/// The user info of a URL whose `://` starts at `i`: everything of the authority up to its last `@`.
fn userinfo(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    if bytes.get(i..i + 3) != Some(b"://") {
        return None;
    }
    let start = i + 3;
    // The authority ends at the path, query or fragment, or where the URL ends in text.
    let end = run(bytes, start, |b| {
        b.is_ascii_graphic()
            && !matches!(
                b,
                b'/' | b'?' | b'#' | b'"' | b'\'' | b'<' | b'>' | b'\\' | b'`'
            )
    });
    let at = bytes[start..end].iter().rposition(|&b| b == b'@')?;
    (at > 0 && &bytes[start..start + at] != MARKER.as_bytes()).then_some((start, start + at))
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
    (end > start && end - start >= min && &bytes[start..end] != MARKER.as_bytes())
        .then_some((start, end))
}

/// The value after a header name ending at `at`: `"name": "value"`, `name: value`, `name=value`.
fn header_value(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    if bytes.get(at).is_some_and(|&b| is_name_byte(b)) {
        return None; // a longer word, such as `authorizations`
    }
    // Quotes may be escaped: JSON text inside a JSON string (`{\"x-api-key\": \"...\"}`).
    let mut j = run(bytes, at, |b| matches!(b, b'"' | b'\'' | b'\\'));
    j = run(bytes, j, |b| b == b' ');
    if !matches!(bytes.get(j), Some(b':' | b'=')) {
        return None;
    }
    j = run(bytes, j + 1, |b| matches!(b, b' ' | b'"' | b'\'' | b'\\'));
    for scheme in SCHEMES {
        // The scheme stays, whatever follows it (already redacted, or nothing).
        if starts_with_ignore_case(bytes, j, scheme) && bytes.get(j + scheme.len()) == Some(&b' ') {
            return credential_after_scheme(bytes, j, scheme, 1);
        }
    }
    let end = run(bytes, j, is_value_byte);
    (end > j && &bytes[j..end] != MARKER.as_bytes()).then_some((j, end))
}

/// `name=value` at `i` (the value up to `&`, `#`, whitespace or a quote).
fn query_value(bytes: &[u8], i: usize, name: &str) -> Option<(usize, usize)> {
    if !starts_with_ignore_case(bytes, i, name) || bytes.get(i + name.len()) != Some(&b'=') {
        return None;
    }
    let start = i + name.len() + 1;
    let end = run(bytes, start, |b| is_value_byte(b) && b != b'#');
    (end > start && &bytes[start..end] != MARKER.as_bytes()).then_some((start, end))
}

/// The end of the run of bytes from `from` that satisfy `pred`.
fn run(bytes: &[u8], from: usize, pred: impl Fn(u8) -> bool) -> usize {
    let len = bytes
        .get(from..)
        .map_or(0, |rest| rest.iter().take_while(|&&b| pred(b)).count());
    from + len
}

/// Whether `bytes[i..]` starts with the credential name `name`, in any case, `_` for `-`.
fn starts_with_name(bytes: &[u8], i: usize, name: &str) -> bool {
    bytes.get(i..i + name.len()).is_some_and(|s| {
        s.iter()
            .zip(name.bytes())
            .all(|(&b, n)| b.to_ascii_lowercase() == n || (b == b'_' && n == b'-'))
    })
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

/// A character of an unquoted value: ASCII, not whitespace, a quote (or the `\\` escaping one) or a
/// separator.
fn is_value_byte(b: u8) -> bool {
    b.is_ascii_graphic()
        && !matches!(
            b,
            b'"' | b'\'' | b'\\' | b',' | b';' | b'&' | b'}' | b']' | b')' | b'<' | b'>'
        )
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `bytes` in base64 with `alphabet`, padded with `=` when `pad`.
fn base64(bytes: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for k in 0..4 {
            if k < chars {
                out.push(char::from(alphabet[((n >> (18 - 6 * k)) & 63) as usize]));
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// The base64 characters that carry only `secret`'s bits when it sits `offset` (0, 1 or 2) bytes
/// into a 3-byte group of a longer encoded value: the same in every such value.
fn base64_core(secret: &[u8], offset: usize, alphabet: &[u8; 64]) -> String {
    let mut shifted = vec![0; offset];
    shifted.extend_from_slice(secret);
    let encoded = base64(&shifted, alphabet, false);
    // Character k covers bits [6k, 6k + 6); the secret's bits are [8 * offset, 8 * (offset + len)).
    let first = (8 * offset).div_ceil(6);
    let last = 8 * (offset + secret.len()) / 6;
    encoded.get(first..last).unwrap_or_default().to_owned()
}

/// `text` percent-encoded as a query value (unreserved characters kept).
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
