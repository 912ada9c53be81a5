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
/// (`#/a/b`, with percent-encoding).
pub fn resolve<'v>(value: &'v Value, pointer: &str) -> Option<&'v Value> {
    let pointer = pointer.strip_prefix('#').unwrap_or(pointer);
    if pointer.contains('%') {
        value.pointer(&percent_decode(pointer))
    } else {
        value.pointer(pointer)
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = match (bytes.get(i), bytes.get(i + 1), bytes.get(i + 2)) {
            (Some(b'%'), Some(h), Some(l)) => hex(*h).zip(hex(*l)).map(|(h, l)| h * 16 + l),
            _ => None,
        };
        match decoded {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.extend(bytes.get(i));
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
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
