//! Unquoted text: keys and values without quotes, URLs, function calls (JSONP, MongoDB), regular
//! expressions.

use serde_json::Value;

use super::RepairError;
use super::chars::{
    is_ident, is_ident_start, is_quote, is_unquoted_delimiter, is_url_char, is_url_start,
    is_ws_byte,
};
use super::parser::Parser;
use crate::FixKind;

impl Parser<'_> {
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
        if let Some(keyword) = self.truncated_keyword(word) {
            return Ok(Some(keyword));
        }
        self.fix(FixKind::UnquotedString, word, format!("{word:?}"));
        Ok(Some(Value::String(word.to_owned())))
    }

    /// `{"done": fals`: a keyword cut off by the end of the text (two letters at least).
    fn truncated_keyword(&mut self, word: &str) -> Option<Value> {
        if word.len() < 2
            || self
                .bytes
                .get(self.i..)
                .is_some_and(|rest| !rest.iter().all(|&b| is_ws_byte(b)))
        {
            return None;
        }
        let (name, value) = [
            ("true", Value::Bool(true)),
            ("false", Value::Bool(false)),
            ("null", Value::Null),
        ]
        .into_iter()
        .find(|(name, _)| name.len() > word.len() && name.starts_with(word))?;
        self.fix(FixKind::Truncation, word, name);
        Some(value)
    }

    /// For an unquoted object value stopped at a comma: a quote later on the line, with no colon
    /// before it, followed by `,` or `}` (the value's end quote, its opening one missing).
    fn closing_quote_of_unquoted(&mut self, from: usize) -> Option<usize> {
        if self.over_budget() {
            return None;
        }
        let mut j = from;
        let found = loop {
            match self.at(j) {
                Some(b'"') => break true,
                None | Some(b'\n' | b':' | b'{' | b'[' | b'}') => break false,
                Some(_) => j += 1,
            }
        };
        self.wasted += j - from;
        (found && matches!(self.at(self.skip_ws_from(j + 1)), Some(b',' | b'}'))).then_some(j)
    }

    /// End of an unquoted word starting at `start`, trailing whitespace excluded.
    fn unquoted_end(&mut self, start: usize, key: bool) -> usize {
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
    fn bracket_group_end(&mut self, open: usize) -> Option<usize> {
        if self.over_budget() {
            return None;
        }
        let opener = self.at(open)?;
        let closer = if opener == b'{' { b'}' } else { b']' };
        let mut depth = 0usize;
        let mut j = open;
        let end = loop {
            match self.at(j) {
                None | Some(b'\n') => break None,
                Some(b) if b == opener => depth += 1,
                Some(b) if b == closer => {
                    depth -= 1;
                    if depth == 0 {
                        break Some(j + 1);
                    }
                }
                Some(_) => {}
            }
            j += 1;
        };
        if end.is_none() {
            // Only a failed search is wasted: a found group is consumed.
            self.wasted += j - open;
        }
        end
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
