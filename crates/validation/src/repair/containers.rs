//! Objects, arrays, Python tuples and sets, and the commas, colons and brackets between their parts.

use serde_json::{Map, Value};

use super::RepairError;
use super::chars::{is_quote, is_value_start};
use super::parser::Parser;
use crate::FixKind;

/// What stands where an object key should be.
enum Key {
    /// A key (quoted or not).
    Found { key: String, quoted: bool },
    /// Something skipped (a stray quote or colon): look again.
    Skipped,
    /// An array merged into the previous member's array.
    Merged,
    /// The end of the members.
    End,
}

/// Items of an array, tuple or set, and whether a comma separated any of them.
struct Items {
    values: Vec<Value>,
    comma: bool,
}

impl Parser<'_> {
    /// Parse an object at `{` (or a Python set literal `{'a', 'b'}` as an array).
    pub(super) fn parse_object(&mut self) -> Result<Value, RepairError> {
        if let Some(set) = self.try_parse_set()? {
            return Ok(set);
        }
        self.i += 1;
        self.stack.push(b'{');
        self.skip_ws_comments(true);
        self.skip_leading_comma();
        let mut map = Map::new();
        self.parse_members(&mut map, true)?;
        self.stack.pop();
        Ok(Value::Object(map))
    }

    /// Parse `key: value` members into `map` up to and including the closing brace (inserted when
    /// missing). The object's `{` must be on the stack.
    pub(super) fn parse_members(
        &mut self,
        map: &mut Map<String, Value>,
        mut initial: bool,
    ) -> Result<(), RepairError> {
        while let Some(c) = self.cur() {
            if c == b'}' || c == b']' {
                break;
            }
            let comma = !initial && self.eat(b',');
            if !initial {
                self.skip_ws_comments(true);
            }
            self.skip_ellipsis();
            let (key, quoted) = match self.parse_key(map, comma)? {
                Key::Found { key, quoted } => (key, quoted),
                Key::Skipped => continue,
                Key::Merged => {
                    initial = false;
                    continue;
                }
                Key::End => break,
            };
            if !initial && !comma {
                self.fix(FixKind::MissingComma, "", ",");
            }
            self.skip_ws_comments(true);
            if !quoted && self.is_junk_before_member(map) {
                // `{"a": 1, COMMENT "b": 2}`: a stray word, not a key.
                self.fix(FixKind::Stray, &key, "");
                initial = true;
                continue;
            }
            if !self.parse_member_value(map, key)? {
                break;
            }
            initial = false;
        }
        match self.cur() {
            Some(b'}') => self.i += 1,
            Some(b']') if !self.in_array() => {
                self.i += 1;
                self.fix(FixKind::MissingBracket, "]", "}");
            }
            None => self.fix(FixKind::Truncation, "", "}"),
            Some(_) => self.fix(FixKind::MissingBracket, "", "}"),
        }
        Ok(())
    }

    /// The key of the next member, or what stands where it should be.
    fn parse_key(&mut self, map: &mut Map<String, Value>, comma: bool) -> Result<Key, RepairError> {
        if self.cur() == Some(b'"')
            && matches!(self.at(self.skip_ws_from(self.i + 1)), Some(b',' | b'}'))
        {
            // `"a": "b"\n",`: a stray quote where a key should be.
            self.i += 1;
            self.fix(FixKind::Stray, "\"", "");
            self.skip_ws_comments(true);
            return Ok(Key::Skipped);
        }
        self.in_key = true;
        let key = self.parse_string();
        self.in_key = false;
        if let Some(key) = key? {
            return Ok(Key::Found { key, quoted: true });
        }
        if let Some(key) = self.parse_unquoted_key() {
            return Ok(Key::Found { key, quoted: false });
        }
        if self.merge_into_previous_array(map)? {
            return Ok(Key::Merged);
        }
        if self.cur() == Some(b':') && self.empty_member_follows() {
            return Ok(Key::Skipped);
        }
        if matches!(self.cur(), None | Some(b'}' | b'{' | b']' | b'[')) {
            if comma {
                self.fix(FixKind::TrailingComma, ",", "");
            }
            return Ok(Key::End);
        }
        Err(self.error("object key expected"))
    }

    /// The colon and value of member `key`, inserted into `map`; false when the text ends instead.
    fn parse_member_value(
        &mut self,
        map: &mut Map<String, Value>,
        key: String,
    ) -> Result<bool, RepairError> {
        let colon = self.eat(b':');
        let truncated = self.i >= self.bytes.len();
        if truncated && !colon {
            // `{"a": 1, "b`: a key cut off by the end of the text has no value to keep.
            self.fix(FixKind::Truncation, &key, "");
            return Ok(false);
        }
        if !colon {
            if self.cur_char().is_some_and(is_value_start) {
                self.fix(FixKind::MissingColon, "", ":");
            } else {
                return Err(self.error("colon expected"));
            }
        }
        self.push_key(&key);
        let value = match self.parse_value()? {
            Some(value) => value,
            None if colon || truncated => {
                self.fix(FixKind::MissingValue, "", "null");
                Value::Null
            }
            None => return Err(self.error("colon expected")),
        };
        self.pop_step();
        if !(truncated && value.is_null() && map.contains_key(&key)) {
            map.insert(key, value);
        }
        Ok(true)
    }

    /// `{"a": [1], [2]}`: an array where a key should be, after a member whose value is an array, is
    /// the rest of that array (closed too early). True if merged.
    fn merge_into_previous_array(
        &mut self,
        map: &mut Map<String, Value>,
    ) -> Result<bool, RepairError> {
        if self.cur() != Some(b'[') {
            return Ok(false);
        }
        let Some((key, Value::Array(_))) = map.iter().next_back() else {
            return Ok(false);
        };
        self.push_key(key);
        self.fix(FixKind::Stray, "], [", ", ");
        let more = self.parse_array()?;
        self.pop_step();
        if let (Some(Value::Array(items)), Value::Array(more)) =
            (map.values_mut().next_back(), more)
        {
            items.extend(more);
        }
        Ok(true)
    }

    /// `{:}`: a colon with neither key nor value; skipped (true) when only `}` follows it.
    fn empty_member_follows(&mut self) -> bool {
        let mut j = self.i + 1;
        while self.at(j).is_some_and(|b| b.is_ascii_whitespace()) {
            j += 1;
        }
        if self.at(j) != Some(b'}') {
            return false;
        }
        self.i = j;
        self.fix(FixKind::Stray, ":", "");
        true
    }

    /// Whether the unquoted word just read is junk rather than a key: it is followed by a quoted key
    /// and a colon, or it dangles before the closing brace of a non-empty object.
    fn is_junk_before_member(&self, map: &Map<String, Value>) -> bool {
        match self.cur_char() {
            Some(c) if is_quote(c) => self.member_follows(),
            Some('}') => !map.is_empty(),
            _ => false,
        }
    }

    /// Parse an array at `[`.
    pub(super) fn parse_array(&mut self) -> Result<Value, RepairError> {
        self.i += 1;
        self.stack.push(b'[');
        self.skip_ws_comments(true);
        self.skip_leading_comma();
        let items = self.parse_items(b']')?;
        match self.cur() {
            Some(b']') => self.i += 1,
            Some(b'}') if self.in_object() => {
                self.i += 1;
                self.fix(FixKind::MissingBracket, "}", "]");
            }
            Some(b')') if !self.stack.contains(&b'(') => {
                self.i += 1;
                self.fix(FixKind::MissingBracket, ")", "]");
            }
            None => self.fix(FixKind::Truncation, "", "]"),
            Some(_) => self.fix(FixKind::MissingBracket, "", "]"),
        }
        self.stack.pop();
        Ok(Value::Array(items.values))
    }

    /// Parse a Python tuple at `(`: `(1, 2)` is an array, `(1)` just its value.
    pub(super) fn parse_tuple(&mut self) -> Result<Value, RepairError> {
        self.i += 1;
        self.stack.push(b'(');
        self.skip_ws_comments(true);
        let mut items = self.parse_items(b')')?;
        if self.cur() == Some(b')') {
            self.i += 1;
        } else {
            self.fix(FixKind::Truncation, "", ")");
        }
        self.stack.pop();
        if items.values.len() == 1
            && !items.comma
            && let Some(only) = items.values.pop()
        {
            self.fix(FixKind::Literal, "(…)", "…");
            return Ok(only);
        }
        self.fix(FixKind::Literal, "(…)", "[…]");
        Ok(Value::Array(items.values))
    }

    /// `{'a', 'b'}`: a Python set, read as an array when it is closed by `}`; otherwise nothing moves.
    fn try_parse_set(&mut self) -> Result<Option<Value>, RepairError> {
        if !self.set_follows(self.i + 1) {
            return Ok(None);
        }
        let (start, fixes) = (self.i, self.fixes.len());
        self.i += 1;
        // A set is an array closed by `}`, not an object: its strings are not object values.
        self.stack.push(b'<');
        let items = self.parse_items(b'}');
        self.stack.pop();
        match items {
            Ok(items) if self.cur() == Some(b'}') => {
                self.i += 1;
                self.fix(FixKind::Literal, "{…}", "[…]");
                Ok(Some(Value::Array(items.values)))
            }
            _ => {
                self.i = start;
                self.fixes.truncate(fixes);
                Ok(None)
            }
        }
    }

    /// Whether a set literal starts at `j` (just after `{`): a quoted string, then a comma.
    fn set_follows(&self, j: usize) -> bool {
        let j = self.skip_ws_from(j);
        let Some(quote @ (b'"' | b'\'')) = self.at(j) else {
            return false;
        };
        let mut k = j + 1;
        loop {
            match self.at(k) {
                None | Some(b'\n') => return false,
                Some(b'\\') => k += 2,
                Some(b) if b == quote => break,
                Some(_) => k += 1,
            }
        }
        self.at(self.skip_ws_from(k + 1)) == Some(b',')
    }

    /// Items up to (not including) `closer`, a closer of an enclosing container, or something that is
    /// not a value. Stray closing brackets nobody claims are dropped.
    fn parse_items(&mut self, closer: u8) -> Result<Items, RepairError> {
        let mut items = Items {
            values: Vec::new(),
            comma: false,
        };
        let mut initial = true;
        while let Some(c) = self.cur() {
            if c == closer {
                break;
            }
            if self.is_stray_closer(c, closer) {
                self.i += 1;
                self.fix(FixKind::Stray, (c as char).to_string(), "");
                self.skip_ws_comments(true);
                continue;
            }
            if matches!(c, b'}' | b']' | b')') {
                break;
            }
            let comma = !initial && self.eat(b',');
            items.comma |= comma;
            self.skip_ellipsis();
            self.push_index(items.values.len());
            let value = self.parse_value()?;
            let Some(value) = value else {
                self.pop_step();
                if comma {
                    self.fix(FixKind::TrailingComma, ",", "");
                }
                match self.cur() {
                    Some(c) if self.is_stray_closer(c, closer) => continue,
                    _ => break,
                }
            };
            let value = match value {
                Value::String(key) if closer == b']' && self.cur() == Some(b':') => {
                    self.parse_member_as_object(key)?
                }
                value => value,
            };
            self.pop_step();
            if !initial && !comma {
                self.fix(FixKind::MissingComma, "", ",");
            }
            items.values.push(value);
            initial = false;
        }
        Ok(items)
    }

    /// Whether closing bracket `c` belongs to no open container (inside one closed by `closer`).
    fn is_stray_closer(&self, c: u8, closer: u8) -> bool {
        match c {
            b'}' => closer != b'}' && !self.in_object(),
            b']' => closer != b']' && !self.in_array(),
            b')' => closer != b')' && !self.stack.contains(&b'('),
            _ => false,
        }
    }

    /// `["key": "value"]`: an array item followed by a colon starts an object whose `{` is missing.
    fn parse_member_as_object(&mut self, key: String) -> Result<Value, RepairError> {
        self.fix(FixKind::MissingBracket, "", "{");
        self.i += 1;
        self.stack.push(b'{');
        self.push_key(&key);
        let value = self.parse_value()?.unwrap_or_else(|| {
            self.fix(FixKind::MissingValue, "", "null");
            Value::Null
        });
        self.pop_step();
        let mut map = Map::new();
        map.insert(key, value);
        self.parse_members(&mut map, false)?;
        self.stack.pop();
        Ok(Value::Object(map))
    }

    fn skip_leading_comma(&mut self) {
        if self.eat(b',') {
            self.fix(FixKind::Stray, ",", "");
            self.skip_ws_comments(true);
        }
    }

    /// Skip an ellipsis placeholder (`...` or `…`) and the comma after it.
    fn skip_ellipsis(&mut self) {
        self.skip_ws_comments(true);
        let len = if self.starts_with(self.i, "...") {
            3
        } else if self.starts_with(self.i, "\u{2026}") {
            '\u{2026}'.len_utf8()
        } else {
            return;
        };
        self.i += len;
        self.fix(FixKind::Ellipsis, "...", "");
        self.skip_ws_comments(true);
        self.eat(b',');
        self.skip_ws_comments(true);
    }
}
