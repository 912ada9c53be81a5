//! Numbers (truncated, `.5`, `+1`, `1_000`, leading zeros, `1/3`) and keywords (`True`, `None`,
//! `NaN`, ...).

use serde_json::{Number, Value};

use super::chars::{is_delimiter, is_ident, is_ws};
use super::parser::Parser;
use crate::FixKind;

/// Keywords and what they become; matched only when no identifier character follows.
const KEYWORDS: &[(&str, Value, FixKind)] = &[
    ("true", Value::Bool(true), FixKind::Literal),
    ("false", Value::Bool(false), FixKind::Literal),
    ("null", Value::Null, FixKind::Literal),
    ("None", Value::Null, FixKind::Literal),
    ("NaN", Value::Null, FixKind::Number),
    ("Infinity", Value::Null, FixKind::Number),
    ("-Infinity", Value::Null, FixKind::Number),
    ("+Infinity", Value::Null, FixKind::Number),
];

impl Parser<'_> {
    /// A number at the cursor, repaired where it is truncated or written the JavaScript or Python way.
    /// Something number-like that is not a number (`0.0.1`, `2024-10-18`) is left to the unquoted
    /// string parser; a number with leading zeros (`0789`) becomes a string, as it may be an identifier.
    pub(super) fn parse_number(&mut self) -> Option<Value> {
        let start = self.i;
        let mut num = String::new();
        let mut leading_zero = false;
        if self.cur() == Some(b'+')
            && self
                .at(start + 1)
                .is_some_and(|b| b.is_ascii_digit() || b == b'.')
        {
            self.i += 1;
        } else if self.eat(b'-') {
            num.push('-');
            if !self.is_digit(self.i) && self.at_end_of_number() {
                num.push('0');
            }
        }
        if self.cur() == Some(b'0') && self.is_digit(self.i + 1) {
            leading_zero = true;
        }
        self.digits(&mut num);
        if self.cur() == Some(b'.') {
            if num.is_empty() || num == "-" {
                num.push('0');
            }
            num.push('.');
            self.i += 1;
            if !self.is_digit(self.i) {
                num.push('0');
            }
            self.digits(&mut num);
        }
        if self.i == start {
            return None;
        }
        if matches!(self.cur(), Some(b'e' | b'E')) {
            if num == "-" {
                leading_zero = true;
            }
            num.push('e');
            self.i += 1;
            if let Some(sign @ (b'-' | b'+')) = self.cur() {
                num.push(sign as char);
                self.i += 1;
            }
            if !self.is_digit(self.i) {
                num.push('0');
            }
            self.digits(&mut num);
        }
        if self.cur() == Some(b'/') && self.is_digit(self.i + 1) && !num.contains(['.', 'e']) {
            // `1/3`: a fraction, kept as text.
            self.i += 1;
            self.digits(&mut String::new());
            return self.number_as_string(start);
        }
        // `12345"`: a stray quote after a number.
        let stray_quote = self.cur() == Some(b'"')
            && self
                .char_at(self.i + 1)
                .is_none_or(|c| is_delimiter(c) || is_ws(c));
        if !stray_quote && !self.at_end_of_number() {
            self.i = start;
            return None;
        }
        if stray_quote {
            let number = self.number_value(start, &num, leading_zero);
            self.i += 1;
            self.fix(FixKind::Stray, "\"", "");
            return number;
        }
        self.number_value(start, &num, leading_zero)
    }

    /// The value of the number text `num` read from `start` to the cursor.
    fn number_value(&mut self, start: usize, num: &str, leading_zero: bool) -> Option<Value> {
        if leading_zero {
            return self.number_as_string(start);
        }
        let original = self.text.get(start..self.i).unwrap_or_default();
        // `-0` is zero (serde_json would read a float `-0.0`).
        let num = if num == "-0" { "0" } else { num };
        match num.parse::<Number>() {
            Ok(n) => {
                if num != original {
                    self.fix(FixKind::Number, original, num);
                }
                Some(Value::Number(n))
            }
            Err(_) => {
                // Out of range (`1e999`): JSON cannot hold it.
                self.fix(FixKind::Number, original, "null");
                Some(Value::Null)
            }
        }
    }

    fn number_as_string(&mut self, start: usize) -> Option<Value> {
        let text = self.text.get(start..self.i)?.to_owned();
        self.fix(FixKind::Number, &text, format!("{text:?}"));
        Some(Value::String(text))
    }

    /// Digits into `num`, dropping `_` separators between digits (`1_000`).
    fn digits(&mut self, num: &mut String) {
        while let Some(b) = self.cur() {
            if b.is_ascii_digit() {
                num.push(b as char);
            } else if !(b == b'_'
                && num.ends_with(|c: char| c.is_ascii_digit())
                && self.is_digit(self.i + 1))
            {
                break;
            }
            self.i += 1;
        }
    }

    fn is_digit(&self, at: usize) -> bool {
        self.at(at).is_some_and(|b| b.is_ascii_digit())
    }

    fn at_end_of_number(&self) -> bool {
        self.cur_char().is_none_or(|c| is_delimiter(c) || is_ws(c))
    }

    /// `true`, `false`, `null` in any case, Python's `None`, and `NaN`/`Infinity` (null: JSON has no
    /// such numbers).
    pub(super) fn parse_keyword(&mut self) -> Option<Value> {
        let rest = self.text.get(self.i..)?;
        for (name, value, kind) in KEYWORDS {
            let Some(word) = rest.get(..name.len()) else {
                continue;
            };
            let exact = word == *name;
            let any_case =
                matches!(*name, "true" | "false" | "null") && word.eq_ignore_ascii_case(name);
            if (exact || any_case) && !self.char_at(self.i + name.len()).is_some_and(is_ident) {
                self.i += name.len();
                if word != *name || *kind == FixKind::Number || *name == "None" {
                    self.fix(*kind, word, value.to_string());
                }
                return Some(value.clone());
            }
        }
        None
    }
}
