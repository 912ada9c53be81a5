//! A scan of `pattern` regexes for the constructs some provider engines reject.

/// Regex constructs that provider engines reject, found by a scan of a `pattern` (ECMA-262 syntax).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct RegexFeatures {
    /// `(?=`, `(?!`, `(?<=`, `(?<!`.
    pub(super) lookaround: bool,
    /// `\1`..`\9`, `\k<name>`.
    pub(super) backreference: bool,
    /// `\b`, `\B`.
    pub(super) word_boundary: bool,
    /// An escaped letter or digit that Rust's regex syntax does not know (`\c`, `\0`, `\Z`, `\A`...);
    /// backreferences and word boundaries are reported apart.
    pub(super) foreign_escape: bool,
    /// The largest bound of a `{n}`, `{n,}` or `{n,m}` repetition (0 without any).
    pub(super) max_repeat: u64,
}

pub(super) fn regex_features(pattern: &str) -> RegexFeatures {
    let mut features = RegexFeatures::default();
    let bytes = pattern.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                match bytes.get(i + 1) {
                    Some(b'1'..=b'9' | b'k') => features.backreference = true,
                    Some(b'b' | b'B') => features.word_boundary = true,
                    Some(c) if c.is_ascii_alphanumeric() && !b"dDwWsStnrfvazpPux".contains(c) => {
                        features.foreign_escape = true;
                    }
                    _ => {}
                }
                i += 2;
                continue;
            }
            // `(` and `{` are ASCII, so `i` is a char boundary here.
            b'(' if ["(?=", "(?!", "(?<=", "(?<!"]
                .iter()
                .any(|p| pattern[i..].starts_with(p)) =>
            {
                features.lookaround = true;
            }
            b'{' => {
                if let Some(end) = pattern[i..].find('}') {
                    let largest = pattern[i + 1..i + end]
                        .split(',')
                        .filter_map(|b| b.trim().parse::<u64>().ok())
                        .max();
                    features.max_repeat = features.max_repeat.max(largest.unwrap_or(0));
                }
            }
            _ => {}
        }
        i += 1;
    }
    features
}
