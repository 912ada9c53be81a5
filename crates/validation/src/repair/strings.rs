//! Quoted strings: any quote style, unterminated, with unescaped quotes inside, concatenated with
//! `+`, escaped as a whole (`\"a\"`), with invalid escapes and raw control characters.

use super::RepairError;
use super::chars::{
    is_delimiter, is_double_quote_like, is_quote, is_single_quote_like, is_unquoted_delimiter,
    is_url_char, is_url_start, is_ws_byte,
};
use super::parser::Parser;
use crate::FixKind;

/// Which characters may close a string, chosen by the character that opened it.
#[derive(Clone, Copy)]
enum Closing {
    Double,
    Single,
    SingleLike,
    DoubleLike,
}

impl Closing {
    fn of(open: char) -> Self {
        match open {
            '"' => Self::Double,
            '\'' => Self::Single,
            c if is_single_quote_like(c) => Self::SingleLike,
            _ => Self::DoubleLike,
        }
    }

    fn closes(self, c: char) -> bool {
        match self {
            Self::Double => c == '"',
            Self::Single => c == '\'',
            Self::SingleLike => is_single_quote_like(c),
            Self::DoubleLike => is_double_quote_like(c),
        }
    }
}

/// How a pass over a string decides where it ends.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Pass {
    /// Trust quotes, judging each by what follows it.
    Quotes,
    /// The end quote is missing: stop at the first delimiter.
    Delimiter,
    /// The end quote is missing: stop at this byte offset (a comma found by the first pass).
    StopAt(usize),
}

/// What a quote met inside a string is.
pub(super) enum Quote {
    /// It ends the string.
    End,
    /// It is part of the string.
    Content,
    /// It is the second of a doubled opening quote (`""key""`).
    DoubledOpen,
    /// The end quote is missing somewhere before it: parse the string again.
    Reparse(Pass),
}

/// A string being read.
pub(super) struct QuotedString {
    /// Offset of the opening quote.
    pub(super) open_at: usize,
    closing: Closing,
    /// Whether the string was escaped as a whole (`\"a\"`): a backslash follows each character.
    escaped: bool,
    /// Whether the string is the value of an object member (not a key, not in an array).
    pub(super) object_value: bool,
    /// Whether it opened with a doubled quote, so closes with one.
    pub(super) doubled: bool,
    /// How many closing-kind quotes were judged to be content.
    pub(super) content_quotes: usize,
    /// Whether a raw control character was already reported.
    control_fixed: bool,
    fixes_before: usize,
    /// The content so far.
    pub(super) s: String,
    pub(super) brackets: Brackets,
}

/// Running count of brackets inside a string, to tell `"a (b") c"` from `"a" )`.
#[derive(Default)]
pub(super) struct Brackets {
    round: isize,
    square: isize,
    /// Curly brackets opened and not closed.
    pub(super) curly: isize,
    /// Which kinds were ever opened: `(`, `[`, `{`.
    opened: [bool; 3],
}

impl Brackets {
    fn count(&mut self, c: char) {
        match c {
            '(' => {
                self.round += 1;
                self.opened[0] = true;
            }
            ')' => self.round -= 1,
            '[' => {
                self.square += 1;
                self.opened[1] = true;
            }
            ']' => self.square -= 1,
            '{' => {
                self.curly += 1;
                self.opened[2] = true;
            }
            '}' => self.curly -= 1,
            _ => {}
        }
    }

    /// Whether the opening bracket matching closing bracket `c` was met in the string.
    pub(super) fn opened(&self, c: char) -> bool {
        match c {
            ')' => self.opened[0],
            ']' => self.opened[1],
            '}' => self.opened[2],
            _ => false,
        }
    }

    /// Whether closing bracket `c` would close one opened inside the string.
    pub(super) fn closes_inner(&self, c: char) -> bool {
        match c {
            ')' => self.round > 0,
            ']' => self.square > 0,
            '}' => self.curly > 0,
            _ => false,
        }
    }
}

impl Parser<'_> {
    /// A quoted string at the cursor (with any `+` concatenations after it); `None` if no quote here.
    pub(super) fn parse_string(&mut self) -> Result<Option<String>, RepairError> {
        let first = if self.over_budget() {
            Pass::Delimiter
        } else {
            Pass::Quotes
        };
        let Some(mut s) = self.parse_quoted(self.i, first)? else {
            return Ok(None);
        };
        self.parse_concatenation(&mut s)?;
        Ok(Some(s))
    }

    /// One quoted string starting at `start` (a quote, or a backslash and a quote). `None` if no quote
    /// is there, or if the text ends right after an opening quote (nothing was started).
    fn parse_quoted(&mut self, start: usize, pass: Pass) -> Result<Option<String>, RepairError> {
        let Some(mut string) = self.open_string(start) else {
            return Ok(None);
        };
        loop {
            if self.copy_plain_run(&mut string, pass) {
                continue;
            }
            let Some(c) = self.cur_char() else {
                return self.end_of_text_in_string(string, pass);
            };
            if pass == Pass::StopAt(self.i) {
                return Ok(Some(self.close_missing_quote(string)));
            }
            if string.closing.closes(c) {
                match self.closing_quote(&mut string, c, pass) {
                    Quote::End => return Ok(Some(string.s)),
                    Quote::Reparse(again) => {
                        return self.reparse(string.open_at, string.fixes_before, again);
                    }
                    Quote::Content | Quote::DoubledOpen => {}
                }
            } else if pass == Pass::Delimiter
                && (is_unquoted_delimiter(c) || (self.in_key && c == ':'))
            {
                self.take_url(&mut string);
                return Ok(Some(self.close_missing_quote(string)));
            } else if c == '\\' {
                self.parse_escape(&mut string.s)?;
            } else {
                self.push_char(&mut string, c);
            }
            if string.escaped && self.cur() == Some(b'\\') {
                self.i += 1;
            }
        }
    }

    /// Open the string at `start`: its quote, the fixes its style needs.
    fn open_string(&mut self, start: usize) -> Option<QuotedString> {
        let escaped = self.at(start) == Some(b'\\');
        let open_at = if escaped { start + 1 } else { start };
        let open = self.char_at(open_at).filter(|&c| is_quote(c))?;
        let after_open = open_at + open.len_utf8();
        if self
            .bytes
            .get(after_open..)
            .is_some_and(|rest| rest.iter().all(|&b| is_ws_byte(b)))
        {
            // `["` or `{"`: the text was cut right after an opening quote.
            self.i = self.bytes.len();
            self.fix(FixKind::Truncation, open.encode_utf8(&mut [0; 4]), "");
            return None;
        }
        let string = QuotedString {
            open_at,
            closing: Closing::of(open),
            escaped,
            object_value: !self.in_key && self.stack.last() == Some(&b'{'),
            doubled: false,
            content_quotes: 0,
            control_fixed: false,
            fixes_before: self.fixes.len(),
            s: String::new(),
            brackets: Brackets::default(),
        };
        if escaped {
            self.fix(FixKind::Unescaped, "\\\"", "\"");
        }
        if open != '"' {
            self.fix(FixKind::QuoteStyle, open.encode_utf8(&mut [0; 4]), "\"");
        }
        self.i = after_open;
        Some(string)
    }

    /// Copy a run of plain ASCII characters at once; true if there was one.
    fn copy_plain_run(&mut self, string: &mut QuotedString, pass: Pass) -> bool {
        let run = self.i;
        while self
            .cur()
            .is_some_and(|b| b.is_ascii() && !self.is_special_in_string(b, pass))
        {
            self.i += 1;
        }
        if self.i == run {
            return false;
        }
        string
            .s
            .push_str(self.text.get(run..self.i).unwrap_or_default());
        if string.escaped && self.cur() == Some(b'\\') {
            self.i += 1;
        }
        true
    }

    /// A character that needs a look: a control character (escaped) or a bracket (counted).
    fn push_char(&mut self, string: &mut QuotedString, c: char) {
        if c.is_control() && (c as u32) < 0x20 && !string.control_fixed {
            string.control_fixed = true;
            self.fix(
                FixKind::StringEscape,
                format!("{c:?}"),
                c.escape_default().to_string(),
            );
        }
        string.s.push(c);
        string.brackets.count(c);
        self.i += c.len_utf8();
    }

    /// A quote of the closing kind at the cursor: judge it (a second pass takes it as the end) and
    /// act on the judgement.
    fn closing_quote(&mut self, string: &mut QuotedString, c: char, pass: Pass) -> Quote {
        let judgement = if pass == Pass::Quotes {
            self.judge_quote(string, c)
        } else {
            Quote::End
        };
        let quote_at = self.i;
        match judgement {
            Quote::End => {
                self.i += c.len_utf8();
                if self.raw_newline_before(quote_at) {
                    // A string written over several lines: its last line break was formatting.
                    let len = string.s.trim_end_matches([' ', '\t', '\r', '\n']).len();
                    string.s.truncate(len);
                }
                if string.doubled && self.char_at(self.i) == Some(c) {
                    self.i += c.len_utf8();
                    self.fix(FixKind::QuoteStyle, format!("{c}{c}"), "\"");
                }
                self.skip_ws_comments(false);
            }
            Quote::Reparse(_) => {}
            Quote::DoubledOpen => {
                string.doubled = true;
                self.i += c.len_utf8();
                self.fix(FixKind::QuoteStyle, format!("{c}{c}"), "\"");
            }
            Quote::Content => {
                self.fix(
                    FixKind::UnescapedQuote,
                    c.encode_utf8(&mut [0; 4]),
                    format!("\\{c}"),
                );
                string.s.push(c);
                string.content_quotes += 1;
                self.i += c.len_utf8();
            }
        }
        judgement
    }

    /// End a string whose end quote is missing here.
    fn close_missing_quote(&mut self, mut string: QuotedString) -> String {
        trim_spaces(&mut string.s);
        self.fix(FixKind::MissingQuote, "", "\"");
        string.s
    }

    /// Whether ASCII byte `b` needs a decision inside a string (so cannot be copied with a run).
    fn is_special_in_string(&self, b: u8, pass: Pass) -> bool {
        match b {
            b'"'
            | b'\''
            | b'`'
            | b'\\'
            | b'('
            | b')'
            | b'['
            | b']'
            | b'{'
            | b'}'
            | 0..=0x1f
            | 0x7f => true,
            b',' | b'/' | b'+' => pass != Pass::Quotes,
            b':' => self.in_key && pass == Pass::Delimiter,
            _ => false,
        }
    }

    /// The text ended inside a string.
    fn end_of_text_in_string(
        &mut self,
        mut string: QuotedString,
        pass: Pass,
    ) -> Result<Option<String>, RepairError> {
        let prev = self.prev_non_ws(self.i.saturating_sub(1));
        let prev_byte = self.at(prev);
        if pass == Pass::Quotes
            && string.object_value
            && prev_byte == Some(b'}')
            && prev > string.open_at
        {
            if let Some(comma) = self.comma_before_member(string.open_at, prev) {
                // `{"a": "first, b: 1}`: the string ends before the comma of the next member.
                return self.reparse(string.open_at, string.fixes_before, Pass::StopAt(comma));
            }
            if string.content_quotes % 2 == 1 {
                // `{"a": "b" junk}`: the one quote taken for content was the end quote.
                return self.reparse(string.open_at, string.fixes_before, Pass::Delimiter);
            }
            // `{"a": "b}`: the string ends before the object's closing brace.
            let kept = self
                .text
                .get(string.open_at..prev)
                .map_or(0, |before| before.len());
            let drop = self.i - prev;
            let len = string.s.len().saturating_sub(drop);
            if kept > 0 && string.s.is_char_boundary(len) {
                string.s.truncate(len);
                trim_spaces(&mut string.s);
                self.i = prev;
                self.fix(FixKind::MissingQuote, "", "\"");
                return Ok(Some(string.s));
            }
        }
        if pass == Pass::Quotes && prev_byte.is_some_and(|b| is_delimiter(b as char)) {
            // `["hello]`: the end quote belongs before the delimiter.
            return self.reparse(string.open_at, string.fixes_before, Pass::Delimiter);
        }
        trim_spaces(&mut string.s);
        self.fix(FixKind::Truncation, "", "\"");
        Ok(Some(string.s))
    }

    /// `"https://...`: an URL whose end quote is missing runs on past `/` (which is a delimiter).
    fn take_url(&mut self, string: &mut QuotedString) {
        let scheme_start = string.open_at + self.char_at(string.open_at).map_or(1, char::len_utf8);
        let is_url = self.at(self.i.wrapping_sub(1)) == Some(b':')
            && self
                .text
                .get(scheme_start..self.i + 2)
                .is_some_and(is_url_start);
        if is_url {
            while let Some(u) = self.cur_char().filter(|&u| is_url_char(u)) {
                string.s.push(u);
                self.i += u.len_utf8();
            }
        }
    }

    /// Give up on a pass over a string and parse it again from its opening quote.
    fn reparse(
        &mut self,
        open_at: usize,
        fixes_before: usize,
        pass: Pass,
    ) -> Result<Option<String>, RepairError> {
        self.wasted += self.i.saturating_sub(open_at);
        self.fixes.truncate(fixes_before);
        self.parse_quoted(open_at, pass)
    }

    /// An escape sequence at the cursor (a backslash): decoded into `s`; invalid ones are repaired.
    fn parse_escape(&mut self, s: &mut String) -> Result<(), RepairError> {
        let Some(e) = self.char_at(self.i + 1) else {
            self.i += 1;
            self.fix(FixKind::Truncation, "\\", "");
            return Ok(());
        };
        let decoded = match e {
            '"' | '\\' | '/' => e,
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'u' => return self.parse_unicode_escape(s),
            '\n' => {
                self.fix(FixKind::StringEscape, "\\\n", "\\n");
                '\n'
            }
            q if is_quote(q) || matches!(q, '\u{201e}' | '\u{201a}') => {
                self.fix(FixKind::StringEscape, format!("\\{q}"), q.to_string());
                q
            }
            other => {
                // `\d` in a regular expression: keep the backslash, the model meant it.
                self.fix(
                    FixKind::StringEscape,
                    format!("\\{other}"),
                    format!("\\\\{other}"),
                );
                s.push('\\');
                other
            }
        };
        s.push(decoded);
        self.i += 1 + e.len_utf8();
        Ok(())
    }

    /// `\uXXXX` (and a surrogate pair `\uD83D\uDE00`) at the cursor.
    fn parse_unicode_escape(&mut self, s: &mut String) -> Result<(), RepairError> {
        let hex = |p: &Self, at: usize| -> (usize, u32) {
            let mut n = 0;
            let mut code = 0;
            while n < 4 {
                match p.at(at + n).and_then(|b| (b as char).to_digit(16)) {
                    Some(d) => code = code * 16 + d,
                    None => break,
                }
                n += 1;
            }
            (n, code)
        };
        let (n, code) = hex(self, self.i + 2);
        if n < 4 {
            if self.i + 2 + n >= self.bytes.len() {
                // Truncated escape at the end of the text: drop it.
                self.fix(FixKind::Truncation, self.excerpt_from(self.i), "");
                self.i = self.bytes.len();
                return Ok(());
            }
            let bad = self.excerpt_range(self.i, (self.i + 6).min(self.bytes.len()));
            return Err(self.error(format!("invalid unicode escape {bad:?}")));
        }
        self.i += 6;
        if (0xD800..0xDC00).contains(&code) && self.starts_with(self.i, "\\u") {
            let (m, low) = hex(self, self.i + 2);
            if m == 4 && (0xDC00..0xE000).contains(&low) {
                self.i += 6;
                let combined = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                s.push(char::from_u32(combined).unwrap_or('\u{fffd}'));
                return Ok(());
            }
        }
        match char::from_u32(code) {
            Some(c) => s.push(c),
            None => {
                self.fix(FixKind::StringEscape, format!("\\u{code:04x}"), "\u{fffd}");
                s.push('\u{fffd}');
            }
        }
        Ok(())
    }

    /// `"a" + "b"`: join strings concatenated with `+`.
    fn parse_concatenation(&mut self, s: &mut String) -> Result<(), RepairError> {
        let mark = self.i;
        self.skip_ws_comments(true);
        if self.cur() != Some(b'+') {
            // Only whitespace was skipped: the caller skips it again anyway.
            self.i = mark;
            return Ok(());
        }
        while self.eat(b'+') {
            self.skip_ws_comments(true);
            let first = if self.over_budget() {
                Pass::Delimiter
            } else {
                Pass::Quotes
            };
            match self.parse_quoted(self.i, first)? {
                Some(next) => {
                    self.fix(FixKind::StringConcatenation, "\" + \"", "");
                    s.push_str(&next);
                }
                None => self.fix(FixKind::Stray, "+", ""),
            }
            self.skip_ws_comments(true);
        }
        Ok(())
    }
}

/// Drop trailing spaces: they were formatting after a string whose end quote is missing.
fn trim_spaces(s: &mut String) {
    let len = s.trim_end_matches(' ').len();
    s.truncate(len);
}
