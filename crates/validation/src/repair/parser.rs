//! The tolerant parser's state: cursor, whitespace and comment skipping, fix recording, the document root.

use std::fmt::Write as _;

use serde_json::Value;

use super::chars::{is_special_ws, is_value_start, is_ws_byte};
use super::{MAX_DEPTH, RepairError, Repaired, excerpt};
use crate::{Fix, FixKind};

/// Cursor over the text plus everything recorded on the way.
pub(super) struct Parser<'a> {
    pub(super) text: &'a str,
    pub(super) bytes: &'a [u8],
    /// Byte offset of the cursor, always on a character boundary.
    pub(super) i: usize,
    pub(super) fixes: Vec<Fix>,
    /// JSON pointer of the value being built, kept up to date as containers are entered and left.
    pub(super) pointer: String,
    /// Length of `pointer` before each step, innermost last.
    pointer_steps: Vec<usize>,
    /// Kinds of the open containers (`{`, `[`, `(`, or `<` for a Python set), innermost last.
    pub(super) stack: Vec<u8>,
    /// Whether the last whitespace skip crossed a newline.
    pub(super) ws_newline: bool,
    /// Whether an object key is being parsed.
    pub(super) in_key: bool,
    /// Offset of the last `"` in the text: a quote there cannot be followed by a closing one.
    pub(super) last_double_quote: Option<usize>,
    /// The same for the last other quote character asked about.
    pub(super) last_other_quote: Option<(char, Option<usize>)>,
    /// Bytes scanned speculatively (strings parsed again, look-ahead); past a budget the parser stops
    /// speculating so that repair stays linear on adversarial input.
    pub(super) wasted: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            i: 0,
            fixes: Vec::new(),
            pointer: String::new(),
            pointer_steps: Vec::new(),
            stack: Vec::new(),
            ws_newline: false,
            in_key: false,
            last_double_quote: None,
            last_other_quote: None,
            wasted: 0,
        }
    }

    /// Parse the whole text as one value (or several newline-delimited ones).
    pub(super) fn parse_document(mut self) -> Result<Repaired, RepairError> {
        self.cut_trailing_fence();
        self.last_double_quote = self.text.rfind('"');
        self.skip_fence(true);
        let fixes_before = self.fixes.len();
        let Some(first) = self.parse_value()? else {
            return Err(match self.cur_char() {
                None => RepairError::Empty,
                Some(c) => self.error(format!("unexpected character {c:?}")),
            });
        };
        let mut newline = self.ws_newline;
        if self.skip_fence(false) {
            newline |= self.ws_newline;
        }
        let mut value = first;
        let comma = self.eat(b',');
        if comma {
            self.skip_ws_comments(true);
        }
        if comma && value.is_object() && self.member_follows() {
            // `{"a": 1}, "b": 2}`: the object was closed too early.
            self.fix(FixKind::Stray, "}, ", ", ");
            if let Value::Object(map) = &mut value {
                self.stack.push(b'{');
                self.parse_members(map, false)?;
                self.stack.pop();
            }
        } else if self.more_values_follow(&value, comma, newline) {
            let adjacent = !comma && !newline;
            value = self.parse_more_values(value, fixes_before, adjacent)?;
        } else if comma {
            self.fix(FixKind::TrailingComma, ",", "");
        }
        while let Some(b'}' | b']') = self.cur() {
            let at = self.i;
            self.i += 1;
            self.fix(FixKind::Stray, self.excerpt_range(at, at + 1), "");
            self.skip_ws_comments(true);
        }
        self.skip_fence(false);
        match self.cur_char() {
            None => Ok(Repaired {
                value,
                fixes: self.fixes,
            }),
            Some(c) => Err(self.error(format!("unexpected character {c:?} after the json value"))),
        }
    }

    /// Whether another top-level value follows the first: newline-delimited JSON (or values separated
    /// by commas), or objects and arrays written back to back.
    fn more_values_follow(&self, first: &Value, comma: bool, newline: bool) -> bool {
        let Some(next) = self.cur_char() else {
            return false;
        };
        let container = first.is_object() || first.is_array();
        if container && next != '{' && next != '[' {
            // Prose or a stray word after a complete object is not a second value: leave it to the
            // caller (extraction).
            return false;
        }
        let adjacent = matches!(
            self.i.checked_sub(1).and_then(|at| self.at(at)),
            Some(b'}' | b']')
        );
        if container && adjacent && (next == '{' || next == '[') {
            // `[]{"a": 1}`: values written back to back.
            return true;
        }
        is_value_start(next) && (comma || newline)
    }

    /// Collect the top-level values after `first` into an array.
    fn parse_more_values(
        &mut self,
        first: Value,
        fixes_before: usize,
        adjacent: bool,
    ) -> Result<Value, RepairError> {
        for fix in self.fixes.iter_mut().skip(fixes_before) {
            fix.pointer.insert_str(0, "/0");
        }
        // Kept up to date rather than recomputed per item: `{}{}{}…` has one item per two bytes.
        let mut all_containers = first.is_object() || first.is_array();
        let mut items = vec![first];
        loop {
            let comma = self.eat(b',');
            if comma {
                self.skip_ws_comments(true);
            }
            if all_containers && !matches!(self.cur(), Some(b'{' | b'[')) {
                break;
            }
            self.push_index(items.len());
            let item = self.parse_value()?;
            self.pop_step();
            match item {
                Some(item) => {
                    all_containers &= item.is_object() || item.is_array();
                    items.push(item);
                }
                None => break,
            }
        }
        self.fix(FixKind::Ndjson, "several top-level values", "one array");
        // An empty object or array next to real values is noise (`{"a": 1}, {}`). All-empty values
        // stay when they were delimited (newline-delimited JSON); written back to back (`[]{}`), the
        // first one is the value.
        if items.iter().any(|item| !is_empty_container(item)) {
            items.retain(|item| !is_empty_container(item));
        } else if adjacent {
            items.truncate(1);
        }
        if items.len() == 1
            && let Some(only) = items.pop()
        {
            return Ok(only);
        }
        Ok(Value::Array(items))
    }

    /// Whether the cursor is at an object member (`"key":` or `key:`), looking ahead without moving.
    pub(super) fn member_follows(&self) -> bool {
        self.member_follows_at(self.i)
    }

    /// Whether an object member (`"key":`, `key:`, or `"key" "value"` missing its colon) starts at `j`.
    pub(super) fn member_follows_at(&self, mut j: usize) -> bool {
        let quoted = match self.char_at(j) {
            Some(q @ ('"' | '\'')) => {
                j += 1;
                loop {
                    match self.at(j) {
                        // A key cut off by the end of the text still starts a member.
                        None => return true,
                        Some(b'\n') => return false,
                        Some(b'\\') => j += 2,
                        Some(b) => {
                            j += 1;
                            if b == q as u8 {
                                break;
                            }
                        }
                    }
                }
                true
            }
            Some(c) if c.is_ascii_alphanumeric() || c == '_' => {
                while self
                    .at(j)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    j += 1;
                }
                if self.at(j).is_none() {
                    return true;
                }
                // `b":` lost its opening quote.
                if self.at(j) == Some(b'"') {
                    j += 1;
                }
                false
            }
            _ => return false,
        };
        while self.at(j).is_some_and(is_ws_byte) {
            j += 1;
        }
        self.at(j) == Some(b':') || (quoted && self.at(j) == Some(b'"'))
    }

    /// Parse one value with the whitespace and comments around it; `None` if no value starts here.
    pub(super) fn parse_value(&mut self) -> Result<Option<Value>, RepairError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(RepairError::too_deep(self.text, self.i, MAX_DEPTH));
        }
        self.skip_ws_comments(true);
        let value = match self.cur() {
            Some(b'{') => Some(self.parse_object()?),
            Some(b'[') => Some(self.parse_array()?),
            Some(b'(') => Some(self.parse_tuple()?),
            Some(b')') => None,
            _ => self.parse_scalar()?,
        };
        self.skip_ws_comments(true);
        Ok(value)
    }

    fn parse_scalar(&mut self) -> Result<Option<Value>, RepairError> {
        if let Some(s) = self.parse_string()? {
            return Ok(Some(Value::String(s)));
        }
        if let Some(n) = self.parse_number() {
            return Ok(Some(n));
        }
        if let Some(k) = self.parse_keyword() {
            return Ok(Some(k));
        }
        if let Some(u) = self.parse_unquoted()? {
            return Ok(Some(u));
        }
        Ok(self.parse_regex().map(Value::String))
    }

    // --- cursor ---

    pub(super) fn at(&self, i: usize) -> Option<u8> {
        self.bytes.get(i).copied()
    }

    pub(super) fn cur(&self) -> Option<u8> {
        self.at(self.i)
    }

    pub(super) fn char_at(&self, i: usize) -> Option<char> {
        self.text.get(i..).and_then(|rest| rest.chars().next())
    }

    pub(super) fn cur_char(&self) -> Option<char> {
        self.char_at(self.i)
    }

    pub(super) fn eat(&mut self, b: u8) -> bool {
        if self.cur() == Some(b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn starts_with(&self, at: usize, s: &str) -> bool {
        self.bytes
            .get(at..)
            .is_some_and(|rest| rest.starts_with(s.as_bytes()))
    }

    /// Index of the last non-whitespace byte at or before `i` (stops at 0).
    pub(super) fn prev_non_ws(&self, mut i: usize) -> usize {
        while i > 0 && self.at(i).is_some_and(is_ws_byte) {
            i -= 1;
        }
        i
    }

    // --- whitespace, comments, fences ---

    /// Skip whitespace (newlines too if `skip_newline`) and comments; true if anything was skipped.
    pub(super) fn skip_ws_comments(&mut self, skip_newline: bool) -> bool {
        let start = self.i;
        self.ws_newline = false;
        loop {
            self.skip_ws(skip_newline);
            let at = self.i;
            match (self.cur(), self.at(at + 1)) {
                (Some(b'/'), Some(b'*')) => {
                    self.i = self
                        .find_from(at + 2, "*/")
                        .map_or(self.bytes.len(), |end| end + 2);
                }
                (Some(b'/'), Some(b'/')) => self.i = self.line_end(at, false),
                (Some(b'#'), _) => self.i = self.line_end(at, !self.stack.is_empty()),
                _ => break,
            }
            self.fix(FixKind::Comment, self.excerpt_range(at, self.i), "");
        }
        self.i > start
    }

    fn skip_ws(&mut self, skip_newline: bool) {
        while let Some(b) = self.cur() {
            match b {
                b' ' | b'\t' | b'\r' => self.i += 1,
                b'\n' if skip_newline => {
                    self.ws_newline = true;
                    self.i += 1;
                }
                0x80.. => match self.cur_char() {
                    Some(c) if is_special_ws(c) => {
                        self.fix(FixKind::Stray, c.to_string(), " ");
                        self.i += c.len_utf8();
                    }
                    _ => break,
                },
                _ => break,
            }
        }
    }

    /// Where whitespace and `//` or `/* */` comments starting at `from` end, without moving; newlines
    /// are not skipped. Used to judge whether a quote ends its string.
    pub(super) fn scan_ws_comments(&mut self, from: usize) -> usize {
        let mut j = from;
        loop {
            while self
                .at(j)
                .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r'))
            {
                j += 1;
            }
            if self.over_budget() || self.at(j) != Some(b'/') {
                return j;
            }
            let end = match self.at(j + 1) {
                Some(b'*') => self
                    .find_from(j + 2, "*/")
                    .map_or(self.bytes.len(), |end| end + 2),
                Some(b'/') => self.line_end(j, false),
                _ => return j,
            };
            self.wasted += end - j;
            j = end;
        }
    }

    /// End of a line comment starting at `at`: the next newline, or also a closing bracket for `#`
    /// comments inside a container (json_repair's rule).
    fn line_end(&self, at: usize, stop_at_closer: bool) -> usize {
        let rest = self.bytes.get(at..).unwrap_or_default();
        let len = rest
            .iter()
            .position(|&b| b == b'\n' || b == b'\r' || (stop_at_closer && (b == b']' || b == b'}')))
            .unwrap_or(rest.len());
        at + len
    }

    pub(super) fn find_from(&self, from: usize, needle: &str) -> Option<usize> {
        self.text
            .get(from..)
            .and_then(|rest| rest.find(needle))
            .map(|at| from + at)
    }

    /// Skip a Markdown fence around the value: at the start ```` ``` ````, ```` [``` ```` or
    /// ```` {``` ```` and a language tag, at the end ```` ``` ````, ```` ```] ```` or ```` ```} ````.
    fn skip_fence(&mut self, opening: bool) -> bool {
        self.skip_ws(true);
        let at = self.i;
        let mut j = at;
        let bracket = if opening {
            matches!(self.cur(), Some(b'[' | b'{'))
        } else {
            false
        };
        if bracket {
            j += 1;
        }
        let ticks = self
            .bytes
            .get(j..)
            .map_or(0, |rest| rest.iter().take_while(|&&b| b == b'`').count());
        if ticks < 3 {
            return false;
        }
        j += ticks;
        if opening {
            while self
                .at(j)
                .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
            {
                j += 1;
            }
        } else if matches!(self.at(j), Some(b']' | b'}')) {
            j += 1;
        }
        self.i = j;
        self.fix(FixKind::Extracted, self.excerpt_range(at, j), "");
        self.skip_ws_comments(true);
        true
    }

    /// Treat a closing fence at the very end of the text as the end of the text, so that an
    /// unterminated string before it does not swallow it (`{"a": "b```).
    fn cut_trailing_fence(&mut self) {
        let trimmed = self.text.trim_end_matches([' ', '\n', '\t', '\r']);
        if let Some(cut) = trimmed.strip_suffix("```") {
            let cut = cut.trim_end_matches('`');
            if !cut.trim().is_empty() {
                self.fix(FixKind::Extracted, "```", "");
                self.text = cut;
                self.bytes = cut.as_bytes();
            }
        }
    }

    // --- fixes and errors ---

    /// Enter member `key` of the object being built.
    pub(super) fn push_key(&mut self, key: &str) {
        self.pointer_steps.push(self.pointer.len());
        self.pointer.push('/');
        for c in key.chars() {
            match c {
                '~' => self.pointer.push_str("~0"),
                '/' => self.pointer.push_str("~1"),
                c => self.pointer.push(c),
            }
        }
    }

    /// Enter item `index` of the array being built.
    pub(super) fn push_index(&mut self, index: usize) {
        self.pointer_steps.push(self.pointer.len());
        let _ = write!(self.pointer, "/{index}");
    }

    /// Leave the member or item entered last.
    pub(super) fn pop_step(&mut self) {
        if let Some(len) = self.pointer_steps.pop() {
            self.pointer.truncate(len);
        }
    }

    /// Record a fix of the value being built.
    pub(super) fn fix(&mut self, kind: FixKind, before: impl AsRef<str>, after: impl AsRef<str>) {
        let fix = Fix {
            pointer: self.pointer.clone(),
            kind,
            before: excerpt(before.as_ref()),
            after: excerpt(after.as_ref()),
        };
        self.fixes.push(fix);
    }

    /// The text from `at` up to a short excerpt's length.
    pub(super) fn excerpt_from(&self, at: usize) -> String {
        self.text.get(at..).map(excerpt).unwrap_or_default()
    }

    /// The text between two offsets (shortened).
    pub(super) fn excerpt_range(&self, from: usize, to: usize) -> String {
        self.text.get(from..to).map(excerpt).unwrap_or_default()
    }

    pub(super) fn error(&self, message: impl Into<String>) -> RepairError {
        RepairError::unrecoverable(self.text, self.i, message)
    }

    pub(super) fn over_budget(&self) -> bool {
        self.wasted > self.bytes.len().saturating_mul(4).saturating_add(1 << 16)
    }

    /// Whether an object encloses the innermost container.
    pub(super) fn in_object(&self) -> bool {
        self.stack.iter().rev().skip(1).any(|&kind| kind == b'{')
    }

    /// Whether an array encloses the innermost container.
    pub(super) fn in_array(&self) -> bool {
        self.stack.iter().rev().skip(1).any(|&kind| kind == b'[')
    }
}

fn is_empty_container(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}
