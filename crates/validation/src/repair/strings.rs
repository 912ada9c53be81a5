//! Strings: quoted with any quote style, unterminated, with unescaped quotes inside, concatenated with
//! `+`, escaped as a whole (`\"a\"`), unquoted words and URLs, regular expressions, function calls.

use serde_json::Value;

use super::RepairError;
use super::chars::{
    is_delimiter, is_double_quote_like, is_ident, is_ident_start, is_quote, is_single_quote_like,
    is_unquoted_delimiter, is_url_char, is_url_start, is_ws_byte,
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
enum Pass {
    /// Trust quotes, judging each by what follows it.
    Quotes,
    /// The end quote is missing: stop at the first delimiter.
    Delimiter,
    /// The end quote is missing: stop at this byte offset (a comma found by the first pass).
    StopAt(usize),
}

/// What a quote met inside a string is.
enum Quote {
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
struct QuotedString {
    open_at: usize,
    closing: Closing,
    /// Whether the string is the value of an object member (not a key, not in an array).
    object_value: bool,
    /// Whether it opened with a doubled quote, so closes with one.
    doubled: bool,
    /// How many closing-kind quotes were judged to be content.
    content_quotes: usize,
    fixes_before: usize,
    s: String,
    brackets: Brackets,
}

/// Running count of brackets inside a string, to tell `"a (b") c"` from `"a" )`.
#[derive(Default)]
struct Brackets {
    round: isize,
    square: isize,
    curly: isize,
}

impl Brackets {
    fn count(&mut self, c: char) {
        match c {
            '(' => self.round += 1,
            ')' => self.round -= 1,
            '[' => self.square += 1,
            ']' => self.square -= 1,
            '{' => self.curly += 1,
            '}' => self.curly -= 1,
            _ => {}
        }
    }

    /// Whether closing bracket `c` would close one opened inside the string.
    fn closes_inner(&self, c: char) -> bool {
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
        let mut open_at = start;
        let escaped = self.at(start) == Some(b'\\');
        if escaped {
            open_at += 1;
        }
        let Some(open) = self.char_at(open_at).filter(|&c| is_quote(c)) else {
            return Ok(None);
        };
        let after_open = open_at + open.len_utf8();
        if self
            .bytes
            .get(after_open..)
            .is_some_and(|rest| rest.iter().all(|&b| is_ws_byte(b)))
        {
            // `["` or `{"`: the text was cut right after an opening quote.
            self.i = self.bytes.len();
            self.fix(FixKind::Truncation, open.to_string(), "");
            return Ok(None);
        }
        let mut string = QuotedString {
            open_at,
            closing: Closing::of(open),
            object_value: !self.in_key && self.stack.last() == Some(&b'{'),
            doubled: false,
            content_quotes: 0,
            fixes_before: self.fixes.len(),
            s: String::new(),
            brackets: Brackets::default(),
        };
        if escaped {
            self.fix(FixKind::Unescaped, "\\\"", "\"");
        }
        if open != '"' {
            self.fix(FixKind::QuoteStyle, open.to_string(), "\"");
        }
        self.i = after_open;
        let mut control_fixed = false;
        loop {
            // Plain ASCII runs are copied at once.
            let run = self.i;
            while self
                .cur()
                .is_some_and(|b| b.is_ascii() && !self.is_special_in_string(b, pass))
            {
                self.i += 1;
            }
            if self.i > run {
                string
                    .s
                    .push_str(self.text.get(run..self.i).unwrap_or_default());
                if escaped && self.cur() == Some(b'\\') {
                    self.i += 1;
                }
                continue;
            }
            let Some(c) = self.cur_char() else {
                return self.end_of_text_in_string(string, pass);
            };
            if pass == Pass::StopAt(self.i) {
                trim_spaces(&mut string.s);
                self.fix(FixKind::MissingQuote, "", "\"");
                return Ok(Some(string.s));
            }
            if string.closing.closes(c) {
                // A second pass takes the first quote it meets as the end.
                let decision = if pass == Pass::Quotes {
                    self.judge_quote(&string, c)
                } else {
                    Quote::End
                };
                match decision {
                    Quote::End => {
                        let quote_at = self.i;
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
                        return Ok(Some(string.s));
                    }
                    Quote::Reparse(again) => {
                        return self.reparse(string.open_at, string.fixes_before, again);
                    }
                    Quote::DoubledOpen => {
                        string.doubled = true;
                        self.fix(FixKind::QuoteStyle, format!("{open}{c}"), "\"");
                    }
                    Quote::Content => {
                        self.fix(FixKind::UnescapedQuote, c.to_string(), format!("\\{c}"));
                        string.s.push(c);
                        string.content_quotes += 1;
                    }
                }
                self.i += c.len_utf8();
            } else if pass == Pass::Delimiter
                && (is_unquoted_delimiter(c) || (self.in_key && c == ':'))
            {
                self.take_url(&mut string);
                trim_spaces(&mut string.s);
                self.fix(FixKind::MissingQuote, "", "\"");
                return Ok(Some(string.s));
            } else if c == '\\' {
                self.parse_escape(&mut string.s)?;
            } else {
                if c.is_control() && (c as u32) < 0x20 && !control_fixed {
                    control_fixed = true;
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
            if escaped && self.cur() == Some(b'\\') {
                self.i += 1;
            }
        }
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

    /// The first comma between `from` and `to` that is followed by an object member.
    fn comma_before_member(&mut self, from: usize, to: usize) -> Option<usize> {
        if self.over_budget() {
            return None;
        }
        self.wasted += to.saturating_sub(from);
        let inside = self.bytes.get(from..to)?;
        inside
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == b',')
            .map(|(offset, _)| from + offset)
            .find(|&comma| self.member_follows_at(self.skip_ws_from(comma + 1)))
    }

    /// Decide what the closing-kind quote `c` at the cursor is, from what surrounds it.
    fn judge_quote(&mut self, string: &QuotedString, c: char) -> Quote {
        let quote_at = self.i;
        let after = quote_at + c.len_utf8();
        let next_at = self.scan_ws_comments(after);
        let next = self.char_at(next_at);
        if string.doubled && next == Some(c) && self.quote_ends_here(next_at) {
            return Quote::End;
        }
        if quote_at == string.open_at + c.len_utf8()
            && !string.doubled
            && self.opens_doubled(after, next)
        {
            // `""key""`: a doubled opening quote.
            return Quote::DoubledOpen;
        }
        // `{"a": "answer is {"b": 1}, ok"}`: an object written inside a string value.
        let inline_object = string.object_value && string.brackets.curly > 0;
        let is_end = match next {
            None => true,
            Some('\n') if string.object_value && self.quote_line_follows(next_at) => false,
            Some(n) if is_delimiter(n) => {
                if string.brackets.closes_inner(n) || (n == ':' && inline_object) {
                    false
                } else if n == ',' && string.object_value {
                    self.value_ends_before(next_at + 1)
                } else {
                    true
                }
            }
            Some(n) if is_quote(n) => !self.quote_ends_here(next_at),
            Some(n) => n.is_ascii_digit() && !inline_object,
        };
        if is_end {
            return Quote::End;
        }
        if string.object_value
            && self.is_last_quote(quote_at, c)
            && !self
                .text
                .get(after..)
                .is_some_and(|rest| rest.contains('}'))
        {
            // `{"a": "text" junk`: no quote follows, so this one ends the string.
            return Quote::End;
        }
        if self.stack.last() == Some(&b'[')
            && !self.in_key
            && string.content_quotes == 0
            && next_at > after
            && self.word_then_quote_follows(next_at)
        {
            // `["a" b", "c"]`: the next item lost its opening quote.
            return Quote::End;
        }
        let prev = self.prev_non_ws(quote_at.saturating_sub(1));
        match self.at(prev) {
            // `{"a":"b,"c":1}`: the quote opens the next string; the end quote was before the comma.
            Some(b',') if !string.object_value || self.member_follows_at(quote_at) => {
                Quote::Reparse(Pass::StopAt(prev))
            }
            Some(b',' | b'(' | b'[' | b'{') => Quote::Content,
            Some(b':') if string.object_value => {
                match self.comma_before_member(string.open_at, quote_at) {
                    // `{"a": "first, b: "second"}`: the first string ends before the comma.
                    Some(comma) => Quote::Reparse(Pass::StopAt(comma)),
                    None => Quote::Content,
                }
            }
            Some(b) if is_delimiter(b as char) && !inline_object => Quote::Reparse(Pass::Delimiter),
            _ => Quote::Content,
        }
    }

    /// Whether a quote right after an opening one (at `after`, then `next` past spaces) doubles it.
    fn opens_doubled(&self, after: usize, next: Option<char>) -> bool {
        match self.char_at(after) {
            Some(' ') => next.is_some_and(char::is_alphabetic),
            Some(c) => c.is_alphanumeric(),
            None => false,
        }
    }

    /// At a line break after a quote: whether the next line starts with a quote that ends the value
    /// (`"\n",` then another member): the first quote was content.
    fn quote_line_follows(&mut self, newline_at: usize) -> bool {
        let mut j = newline_at;
        while self.at(j).is_some_and(is_ws_byte) {
            j += 1;
        }
        if self.at(j) != Some(b'"') {
            return false;
        }
        let k = self.scan_ws_comments(j + 1);
        self.at(k) == Some(b',') && {
            let member = self.skip_ws_comments_from(k + 1);
            self.member_follows_at(member)
        }
    }

    /// In an array, after a quote and spaces: a word, then a quote followed by `,` `]` or the end.
    fn word_then_quote_follows(&self, mut j: usize) -> bool {
        let start = j;
        while let Some(b) = self.at(j) {
            if b == b'"' {
                let k = self.skip_ws_from(j + 1);
                return j > start && matches!(self.at(k), None | Some(b',' | b']'));
            }
            if b == b'\n'
                || b == b','
                || b == b']'
                || b == b'['
                || b == b'{'
                || b == b'}'
                || b == b':'
            {
                return false;
            }
            j += 1;
        }
        false
    }

    /// In an object value, whether a comma at `at - 1` ends the value: what follows is another member
    /// (perhaps after a stray word), a closing bracket, an array or object, an ellipsis or the end.
    fn value_ends_before(&mut self, at: usize) -> bool {
        let j = self.skip_ws_comments_from(at);
        match self.at(j) {
            None | Some(b'}' | b']' | b'[' | b'{') => true,
            _ => {
                self.starts_with(j, "...")
                    || self.member_follows_at(j)
                    || self.member_follows_at(self.skip_word(j))
            }
        }
    }

    /// Offset after whitespace (newlines too) and comments from `j`, without moving.
    fn skip_ws_comments_from(&mut self, mut j: usize) -> usize {
        loop {
            let next = self.scan_ws_comments(self.skip_ws_from(j));
            if next == j {
                return j;
            }
            j = next;
        }
    }

    /// Offset after whitespace (newlines too) from `j`.
    pub(super) fn skip_ws_from(&self, mut j: usize) -> usize {
        while self.at(j).is_some_and(is_ws_byte) {
            j += 1;
        }
        j
    }

    /// Offset after a word (letters, digits, `_`) and the spaces after it, from `j`.
    fn skip_word(&self, mut j: usize) -> usize {
        let start = j;
        while self
            .at(j)
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            j += 1;
        }
        if j == start {
            return start;
        }
        self.skip_ws_from(j)
    }

    /// Whether `quote_at` holds the last `c` of the text.
    fn is_last_quote(&self, quote_at: usize, c: char) -> bool {
        let last = if c == '"' {
            self.last_double_quote
        } else {
            self.text.rfind(c)
        };
        last == Some(quote_at)
    }

    /// Whether a raw line break (then only spaces or tabs) comes right before `quote_at`.
    fn raw_newline_before(&self, quote_at: usize) -> bool {
        let mut j = quote_at;
        while j > 0 && matches!(self.at(j - 1), Some(b' ' | b'\t' | b'\r')) {
            j -= 1;
        }
        j > 0 && self.at(j - 1) == Some(b'\n')
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

    /// Whether the quote at `at` is followed only by whitespace and then a delimiter or the end (so a
    /// quote before it is content: `"The TV is 72""`).
    fn quote_ends_here(&self, at: usize) -> bool {
        let mut j = at + self.char_at(at).map_or(1, char::len_utf8);
        while self.at(j).is_some_and(is_ws_byte) {
            j += 1;
        }
        self.char_at(j).is_none_or(is_delimiter)
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

    /// An unquoted object key: a word up to a colon, quote or delimiter.
    pub(super) fn parse_unquoted_key(&mut self) -> Option<String> {
        let start = self.i;
        let end = self.unquoted_end(start, true);
        if end == start {
            return None;
        }
        let key = self.text.get(start..end)?.to_owned();
        self.i = end;
        if self.eat(b'"') {
            self.fix(FixKind::MissingQuote, "", "\"");
        }
        self.fix(FixKind::UnquotedKey, &key, format!("{key:?}"));
        Some(key)
    }

    /// An unquoted value: `undefined` (null), a function call such as JSONP `callback({...})` or
    /// MongoDB's `NumberLong("2")` (its argument), or a word, sentence or URL (a string).
    pub(super) fn parse_unquoted(&mut self) -> Result<Option<Value>, RepairError> {
        let start = self.i;
        if self.cur_char().is_some_and(is_ident_start) {
            let mut j = start;
            while self.char_at(j).is_some_and(is_ident) {
                j += 1;
            }
            let mut k = j;
            while self.at(k).is_some_and(is_ws_byte) {
                k += 1;
            }
            if self.at(k) == Some(b'(') {
                let name = self.excerpt_range(start, k + 1);
                self.fix(FixKind::Jsonp, name, "");
                self.i = k + 1;
                self.stack.push(b'(');
                let value = self.parse_value()?;
                self.stack.pop();
                if self.eat(b')') {
                    self.eat(b';');
                }
                return Ok(Some(value.unwrap_or(Value::Null)));
            }
        }
        let mut end = self.unquoted_end(start, false);
        if end == start {
            return Ok(None);
        }
        if self.stack.last() == Some(&b'{')
            && self.at(end) == Some(b',')
            && let Some(quote) = self.closing_quote_of_unquoted(end)
        {
            // `{"a": b, c, d",}`: the value runs to the quote that closes it.
            end = quote;
        }
        let Some(word) = self.text.get(start..end) else {
            return Ok(None);
        };
        self.i = end;
        if self.eat(b'"') {
            self.fix(FixKind::MissingQuote, "", "\"");
        }
        if word == "undefined" {
            self.fix(FixKind::Literal, word, "null");
            return Ok(Some(Value::Null));
        }
        self.fix(FixKind::UnquotedString, word, format!("{word:?}"));
        Ok(Some(Value::String(word.to_owned())))
    }

    /// For an unquoted object value stopped at a comma: a quote later on the line, with no colon
    /// before it, followed by `,` or `}` (the value's end quote, its opening one missing).
    fn closing_quote_of_unquoted(&self, from: usize) -> Option<usize> {
        let mut j = from;
        loop {
            match self.at(j)? {
                b'"' => break,
                b'\n' | b':' | b'{' | b'[' | b'}' => return None,
                _ => j += 1,
            }
        }
        matches!(self.at(self.skip_ws_from(j + 1)), Some(b',' | b'}')).then_some(j)
    }

    /// End of an unquoted word starting at `start`, trailing whitespace excluded.
    fn unquoted_end(&self, start: usize, key: bool) -> usize {
        let mut i = start;
        while let Some(c) = self.char_at(i) {
            if !key
                && matches!(c, '{' | '[')
                && self
                    .char_at(i.wrapping_sub(1))
                    .is_some_and(char::is_alphanumeric)
            {
                // `words{in brackets}`: brackets glued to a word are part of it.
                if let Some(end) = self.bracket_group_end(i) {
                    i = end;
                    continue;
                }
            }
            if is_unquoted_delimiter(c)
                || is_quote(c)
                || (key && c == ':')
                || (i == start && c == ')')
            {
                break;
            }
            i += c.len_utf8();
        }
        if i > start
            && self.at(i - 1) == Some(b':')
            && self.text.get(start..i + 2).is_some_and(is_url_start)
        {
            while let Some(u) = self.char_at(i).filter(|&u| is_url_char(u)) {
                i += u.len_utf8();
            }
        }
        while i > start && self.at(i - 1).is_some_and(is_ws_byte) {
            i -= 1;
        }
        i
    }

    /// End (exclusive) of the bracket group opening at `open`, closed on the same line.
    fn bracket_group_end(&self, open: usize) -> Option<usize> {
        let opener = self.at(open)?;
        let closer = if opener == b'{' { b'}' } else { b']' };
        let mut depth = 0usize;
        let mut j = open;
        loop {
            match self.at(j)? {
                b'\n' => return None,
                b if b == opener => depth += 1,
                b if b == closer => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(j + 1);
                    }
                }
                _ => {}
            }
            j += 1;
        }
    }

    /// A regular expression literal `/.../` as a string; `None` without a closing slash.
    pub(super) fn parse_regex(&mut self) -> Option<String> {
        if self.cur() != Some(b'/') {
            return None;
        }
        let start = self.i;
        let mut j = start + 1;
        loop {
            match self.at(j)? {
                b'/' if self.at(j - 1) != Some(b'\\') => break,
                b'\n' => return None,
                _ => j += 1,
            }
        }
        let regex = self.text.get(start..=j)?.to_owned();
        self.i = j + 1;
        self.fix(FixKind::UnquotedString, &regex, format!("{regex:?}"));
        Some(regex)
    }
}

/// Drop trailing spaces: they were formatting after a string whose end quote is missing.
fn trim_spaces(s: &mut String) {
    let len = s.trim_end_matches(' ').len();
    s.truncate(len);
}
