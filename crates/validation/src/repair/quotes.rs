//! Deciding what a quote met inside a string is: its end, part of it, or a sign that its end quote
//! is missing. The judgement looks at what follows and precedes the quote, without moving.

use super::chars::{is_delimiter, is_quote, is_ws_byte};
use super::parser::Parser;
use super::strings::{Pass, Quote, QuotedString};

impl Parser<'_> {
    /// Decide what the closing-kind quote `c` at the cursor is, from what surrounds it.
    pub(super) fn judge_quote(&mut self, string: &QuotedString, c: char) -> Quote {
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
                if string.brackets.closes_inner(n)
                    || (n == ':' && inline_object)
                    || (string.object_value && (n == '{' || n == '['))
                {
                    // `{"a": "print("{}")"}`: nothing can follow a member's value but `,` or `}`.
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
            // `{"a": "print("{}")"}`: a bracket opened and closed inside the string.
            Some(b @ (b'}' | b']' | b')'))
                if string.object_value && string.brackets.opened(b as char) =>
            {
                Quote::Content
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

    /// The first comma between `from` and `to` that is followed by an object member.
    pub(super) fn comma_before_member(&mut self, from: usize, to: usize) -> Option<usize> {
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

    /// Whether `quote_at` holds the last `c` of the text.
    fn is_last_quote(&mut self, quote_at: usize, c: char) -> bool {
        let last = if c == '"' {
            self.last_double_quote
        } else {
            match self.last_other_quote {
                Some((cached, last)) if cached == c => last,
                _ => {
                    let last = self.text.rfind(c);
                    self.last_other_quote = Some((c, last));
                    last
                }
            }
        };
        last == Some(quote_at)
    }

    /// Whether a raw line break (then only spaces or tabs) comes right before `quote_at`.
    pub(super) fn raw_newline_before(&self, quote_at: usize) -> bool {
        let mut j = quote_at;
        while j > 0 && matches!(self.at(j - 1), Some(b' ' | b'\t' | b'\r')) {
            j -= 1;
        }
        j > 0 && self.at(j - 1) == Some(b'\n')
    }

    /// Whether the quote at `at` is followed only by whitespace and then a delimiter or the end (so a
    /// quote before it is content: `"The TV is 72""`).
    pub(super) fn quote_ends_here(&self, at: usize) -> bool {
        let mut j = at + self.char_at(at).map_or(1, char::len_utf8);
        while self.at(j).is_some_and(is_ws_byte) {
            j += 1;
        }
        self.char_at(j).is_none_or(is_delimiter)
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
}
