//! Character classes the tolerant parser decides on (delimiters, quotes, whitespace, identifiers).

/// Characters that end a value: a quote followed by one of these is a real end quote.
pub(super) fn is_delimiter(c: char) -> bool {
    matches!(
        c,
        ',' | ':' | '[' | ']' | '/' | '{' | '}' | '(' | ')' | '\n' | '+'
    )
}

/// Characters that end an unquoted string (`:` and parentheses may appear inside one).
pub(super) fn is_unquoted_delimiter(c: char) -> bool {
    matches!(c, ',' | '[' | ']' | '/' | '{' | '}' | '\n' | '+')
}

/// `"` and the typographic double quotes.
pub(super) fn is_double_quote_like(c: char) -> bool {
    matches!(c, '"' | '\u{201c}' | '\u{201d}')
}

/// `'`, the typographic single quotes, the back tick and the acute accent.
pub(super) fn is_single_quote_like(c: char) -> bool {
    matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '`' | '\u{b4}')
}

/// Any character that can open or close a string.
pub(super) fn is_quote(c: char) -> bool {
    is_double_quote_like(c) || is_single_quote_like(c)
}

/// JSON whitespace.
pub(super) fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\n' | '\t' | '\r')
}

/// JSON whitespace as a byte.
pub(super) fn is_ws_byte(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\t' | b'\r')
}

/// Unicode spaces that are not JSON whitespace but that models and editors emit between tokens.
pub(super) fn is_special_ws(c: char) -> bool {
    matches!(
        c,
        '\u{a0}' | '\u{180e}' | '\u{2000}'
            ..='\u{200b}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// First character of a JavaScript-ish identifier (function names, JSONP callbacks).
pub(super) fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$'
}

/// Later characters of a JavaScript-ish identifier.
pub(super) fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// Whether a value can start with this character (used to decide that a colon or comma is missing).
pub(super) fn is_value_start(c: char) -> bool {
    is_quote(c) || c == '[' || c == '{' || c == '-' || c == '_' || c.is_ascii_alphanumeric()
}

/// Characters allowed in an unquoted URL, except `[`, `]` and `,` which matter to JSON.
pub(super) fn is_url_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            '-' | '.'
                | '_'
                | '~'
                | ':'
                | '/'
                | '?'
                | '#'
                | '@'
                | '!'
                | '$'
                | '&'
                | '\''
                | '('
                | ')'
                | '*'
                | '+'
                | ';'
                | '='
        )
}

/// Whether `s` is exactly a URL scheme followed by `://` (`https://`, `ftp://`, ...).
pub(super) fn is_url_start(s: &str) -> bool {
    s.strip_suffix("://").is_some_and(|scheme| {
        matches!(
            scheme,
            "http" | "https" | "ftp" | "mailto" | "file" | "data" | "irc"
        )
    })
}
