//! JSON pointers (RFC 6901): building them from path segments and resolving them.

use std::borrow::Cow;

use serde_json::Value;

/// Escapes one reference token (`~` becomes `~0`, `/` becomes `~1`).
pub fn escape(token: &str) -> Cow<'_, str> {
    if token.contains(['~', '/']) {
        Cow::Owned(token.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(token)
    }
}

/// Appends one reference token to a pointer: `push("/a", "b/c")` is `/a/b~1c`.
pub fn push(pointer: &str, token: &str) -> String {
    let token = escape(token);
    let mut out = String::with_capacity(pointer.len() + token.len() + 1);
    out.push_str(pointer);
    out.push('/');
    out.push_str(&token);
    out
}

/// Joins reference tokens into a pointer: `from_tokens(["a", "0"])` is `/a/0`.
pub fn from_tokens<I, S>(tokens: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut out = String::new();
    for token in tokens {
        out.push('/');
        out.push_str(&escape(token.as_ref()));
    }
    out
}

/// Resolves a pointer in a value, like [`Value::pointer`], also accepting the URI fragment form
/// (`#/a/b`, with percent-encoding; a malformed escape is taken literally).
pub fn resolve<'v>(value: &'v Value, pointer: &str) -> Option<&'v Value> {
    let pointer = pointer.strip_prefix('#').unwrap_or(pointer);
    match percent_decode(pointer) {
        Some(decoded) => value.pointer(&decoded),
        None => value.pointer(pointer),
    }
}

/// Decodes the `%XX` escapes of a URI fragment (`/$defs/a%20b` is `/$defs/a b`); `None` when an
/// escape is malformed or the bytes are not UTF-8.
///
/// ```
/// use claij_schema::pointer::percent_decode;
///
/// assert_eq!(percent_decode("/$defs/a%20b").as_deref(), Some("/$defs/a b"));
/// assert_eq!(percent_decode("/a%2"), None);
/// ```
pub fn percent_decode(fragment: &str) -> Option<String> {
    if !fragment.contains('%') {
        return Some(fragment.to_owned());
    }
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = fragment.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn escapes_and_resolves() {
        assert_eq!(push("", "a/b~c"), "/a~1b~0c");
        assert_eq!(from_tokens(["x", "0"]), "/x/0");
        let v = json!({"a/b": {"c d": [1, 2]}});
        assert_eq!(resolve(&v, "#/a~1b/c%20d/1"), Some(&json!(2)));
        assert_eq!(resolve(&v, "/a~1b/c d/0"), Some(&json!(1)));
        assert_eq!(resolve(&v, "/missing"), None);
        assert_eq!(resolve(&v, "#/a~1b/%zz"), None);
    }
}
