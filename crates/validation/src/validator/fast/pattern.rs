//! `pattern`s matched without a regex engine when they are a plain sequence: `^call_[a-z0-9]{4,32}$`,
//! `^[A-Z]{2}$`, `^[^@\s]+@[^@\s]+$`.
//!
//! A [`Sequence`] is an anchored list of character sets, each repeated between a minimum and a
//! maximum number of times. It is matched greedily, one pass, no backtracking, which gives the
//! regex's verdict only when no repeated item could give a character back to what follows it; the
//! compiler checks that (each variable item's set is disjoint from the sets of the items that may
//! take the next character) and leaves any other pattern to the regex. Only what reads the same in
//! ECMA 262 and in the `regex` crate is accepted: literals, escaped punctuation, `\d` `\w` `\s` and
//! their negations as ECMA defines them, simple classes, the quantifiers `? * + {n} {n,} {n,m}`.

use regex::Regex;

use super::SPACE;

/// A set of characters: ASCII as a bitmap, the rest as ranges; `negated` complements both.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Set {
    ascii: u128,
    ranges: Vec<(char, char)>,
    negated: bool,
}

impl Set {
    fn empty() -> Set {
        Set {
            ascii: 0,
            ranges: Vec::new(),
            negated: false,
        }
    }

    fn add(&mut self, lo: char, hi: char) {
        for c in lo..=hi.min('\u{7f}') {
            self.ascii |= 1 << (c as u32);
        }
        if hi > '\u{7f}' {
            self.ranges.push((lo.max('\u{80}'), hi));
        }
    }

    fn add_str(&mut self, chars: &str) {
        for c in chars.chars() {
            self.add(c, c);
        }
    }

    #[inline]
    fn contains(&self, c: char) -> bool {
        let within = if (c as u32) < 128 {
            self.ascii & (1 << (c as u32)) != 0
        } else {
            self.ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c))
        };
        within != self.negated
    }

    /// [`Set::contains`] for an ASCII byte.
    #[inline]
    fn contains_ascii(&self, b: u8) -> bool {
        (b < 128 && self.ascii & (1 << b) != 0) != self.negated
    }

    /// Whether no character is in both (false when it cannot tell cheaply).
    fn disjoint(&self, other: &Set) -> bool {
        match (self.negated, other.negated) {
            (false, false) => {
                self.ascii & other.ascii == 0
                    && self
                        .ranges
                        .iter()
                        .all(|(a, b)| other.ranges.iter().all(|(c, d)| b < c || d < a))
            }
            (false, true) => self.within_complement_of(other),
            (true, false) => other.within_complement_of(self),
            (true, true) => false,
        }
    }

    /// Whether every character of `self` (not negated) is one `negated` excludes.
    fn within_complement_of(&self, negated: &Set) -> bool {
        let excluded = Set {
            negated: false,
            ..negated.clone()
        };
        self.ascii & !excluded.ascii == 0
            && self.ranges.iter().all(|(lo, hi)| {
                (*hi as u32) - (*lo as u32) < 256 && (*lo..=*hi).all(|c| excluded.contains(c))
            })
    }
}

/// One item: a set repeated `min..=max` times.
#[derive(Debug, Clone, PartialEq)]
struct Item {
    set: Set,
    min: usize,
    max: usize,
    /// By byte: [`IN`] when the ASCII character is in `set` ([`Set::contains_ascii`]), [`OUT`]
    /// when not, [`OTHER`] for a byte of a non-ASCII character: one load per byte.
    bytes: [u8; 256],
}

/// [`Item::bytes`]' values.
const OUT: u8 = 0;
const IN: u8 = 1;
const OTHER: u8 = 2;

impl Item {
    fn new(set: Set, min: usize, max: usize) -> Item {
        let mut bytes = [OTHER; 256];
        for (b, class) in (0u8..128).zip(bytes.iter_mut()) {
            *class = if set.contains_ascii(b) { IN } else { OUT };
        }
        Item {
            set,
            min,
            max,
            bytes,
        }
    }
}

/// An anchored sequence (`^...`, with `$` or not), matched greedily.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sequence {
    /// The ASCII characters the pattern starts with, one each (`call_` of `^call_[a-z0-9]+$`):
    /// compared at once, before the items.
    prefix: String,
    items: Vec<Item>,
    /// Ends with `$`: the whole string must be consumed.
    end: bool,
}

impl Sequence {
    /// The sequence `pattern` (ECMA 262, as a schema writes it) is, when it is one that greedy
    /// matching decides exactly; `None` leaves it to the regex.
    pub(super) fn parse(pattern: &str) -> Option<Sequence> {
        let body = pattern.strip_prefix('^')?;
        let (body, end) = match body.strip_suffix('$') {
            Some(rest) if !rest.ends_with('\\') => (rest, true),
            Some(_) => return None,
            None => (body, false),
        };
        let mut chars = body.chars().peekable();
        let mut items: Vec<Item> = Vec::new();
        while let Some(c) = chars.next() {
            let set = match c {
                '\\' => escape(chars.next()?, false)?,
                '[' => class(&mut chars)?,
                '.' | '^' | '$' | '(' | ')' | '|' | '*' | '+' | '?' | '{' | '}' | ']' => {
                    return None;
                }
                literal => {
                    let mut set = Set::empty();
                    set.add(literal, literal);
                    set
                }
            };
            let (min, max) = match chars.peek() {
                Some('?') => (0, 1),
                Some('*') => (0, usize::MAX),
                Some('+') => (1, usize::MAX),
                Some('{') => {
                    chars.next();
                    let mut spec = String::new();
                    loop {
                        match chars.next()? {
                            '}' => break,
                            c => spec.push(c),
                        }
                    }
                    let (min, max) = match spec.split_once(',') {
                        None => {
                            let n = spec.parse().ok()?;
                            (n, n)
                        }
                        Some((min, "")) => (min.parse().ok()?, usize::MAX),
                        Some((min, max)) => (min.parse().ok()?, max.parse().ok()?),
                    };
                    if min > max || !spec.chars().all(|c| c.is_ascii_digit() || c == ',') {
                        return None;
                    }
                    items.push(Item::new(set, min, max));
                    if matches!(chars.peek(), Some('?' | '*' | '+' | '{')) {
                        return None;
                    }
                    continue;
                }
                _ => (1, 1),
            };
            if (min, max) != (1, 1) {
                chars.next();
                // Lazy or possessive forms, or a quantified quantifier.
                if matches!(chars.peek(), Some('?' | '*' | '+' | '{')) {
                    return None;
                }
            }
            items.push(Item::new(set, min, max));
        }
        // A variable item must not be able to give a character to the items that may take the next
        // one: those up to and including the next one that must take at least one.
        for (i, item) in items.iter().enumerate() {
            if item.min == item.max {
                continue;
            }
            for next in &items[i + 1..] {
                if !item.set.disjoint(&next.set) {
                    return None;
                }
                if next.min > 0 {
                    break;
                }
            }
        }
        let literal = |item: &Item| {
            let one = item.set.ascii.count_ones() == 1;
            (item.min, item.max) == (1, 1) && !item.set.negated && item.set.ranges.is_empty() && one
        };
        let lead = items.iter().take_while(|item| literal(item)).count();
        let prefix = items
            .drain(..lead)
            .map(|item| char::from(item.set.ascii.trailing_zeros() as u8))
            .collect();
        Some(Sequence { prefix, items, end })
    }

    /// Whether `s` matches: each item takes as many characters as it can, up to its maximum.
    pub(super) fn is_match(&self, s: &str) -> bool {
        let n = self.prefix.len();
        let (Some(head), Some(s)) = (s.as_bytes().get(..n), s.get(n..)) else {
            return false;
        };
        if !super::same_bytes(head, self.prefix.as_bytes()) {
            return false;
        }
        match self.is_match_ascii(s.as_bytes()) {
            Some(verdict) => verdict,
            None => self.is_match_chars(s),
        }
    }

    /// [`Sequence::is_match`] after the prefix, character by character.
    #[cold]
    fn is_match_chars(&self, s: &str) -> bool {
        let mut chars = s.chars();
        let mut pending = None;
        for item in &self.items {
            let mut taken = 0;
            while taken < item.max {
                let Some(c) = pending.take().or_else(|| chars.next()) else {
                    break;
                };
                if !item.set.contains(c) {
                    pending = Some(c);
                    break;
                }
                taken += 1;
            }
            if taken < item.min {
                return false;
            }
        }
        !self.end || (pending.is_none() && chars.next().is_none())
    }
}

impl Sequence {
    /// [`Sequence::is_match`] after the prefix, byte by byte while the bytes read are ASCII (a
    /// character each, so the verdict is the character walk's); `None` at the first other byte read.
    #[inline]
    fn is_match_ascii(&self, bytes: &[u8]) -> Option<bool> {
        let mut at: usize = 0;
        for item in &self.items {
            let limit = bytes.len().min(at.saturating_add(item.max));
            let window = bytes.get(at..limit).unwrap_or_default();
            let taken = window
                .iter()
                .position(|b| item.bytes[usize::from(*b)] != IN)
                .unwrap_or(window.len());
            if window
                .get(taken)
                .is_some_and(|b| item.bytes[usize::from(*b)] == OTHER)
            {
                return None;
            }
            at += taken;
            if taken < item.min {
                return Some(false);
            }
        }
        Some(!self.end || at == bytes.len())
    }
}

/// The set an escape outside (`in_class` false) or inside a class stands for; `None` for any escape
/// whose meaning is not plain.
fn escape(c: char, in_class: bool) -> Option<Set> {
    let mut set = Set::empty();
    match c {
        'd' | 'D' => set.add('0', '9'),
        'w' | 'W' => {
            set.add('a', 'z');
            set.add('A', 'Z');
            set.add('0', '9');
            set.add('_', '_');
        }
        's' | 'S' => set.add_str(SPACE),
        c if c.is_ascii_punctuation() => {
            set.add(c, c);
            return Some(set);
        }
        _ => return None,
    }
    if c.is_ascii_uppercase() {
        if in_class {
            return None;
        }
        set.negated = true;
    }
    Some(set)
}

/// A `[...]` class after its `[`: literals, ranges, `\d` `\w` `\s`, escaped punctuation.
fn class(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<Set> {
    let mut set = Set::empty();
    if chars.peek() == Some(&'^') {
        chars.next();
        set.negated = true;
    }
    // `[]` and `[^]` mean different things in ECMA 262 and in the regex crate.
    if chars.peek() == Some(&']') {
        return None;
    }
    let mut previous: Option<char> = None;
    let mut at_start = true;
    loop {
        let c = chars.next()?;
        let first = std::mem::replace(&mut at_start, false);
        match c {
            ']' => return Some(set),
            // Nested classes and set operations (`&&`, `--`, `~~`) are the regex crate's own.
            '[' | '&' | '~' => return None,
            '\\' => {
                let next = chars.next()?;
                let escaped = escape(next, true)?;
                previous = next.is_ascii_punctuation().then_some(next);
                set.ascii |= escaped.ascii;
                set.ranges.extend(escaped.ranges);
            }
            // A `-` is a literal first or last, a range between two characters, and else not plain.
            '-' if chars.peek() == Some(&']') || first => {
                set.add('-', '-');
                previous = None;
            }
            '-' => {
                let lo = previous.take()?;
                let hi = match chars.next()? {
                    '\\' => {
                        let h = chars.next()?;
                        h.is_ascii_punctuation().then_some(h)?
                    }
                    '[' | ']' | '&' | '~' | '-' => return None,
                    h => h,
                };
                if hi < lo {
                    return None;
                }
                set.add(lo, hi);
            }
            literal => {
                set.add(literal, literal);
                previous = Some(literal);
            }
        }
    }
}

/// A compiled `pattern`: a [`Sequence`] when the pattern is one, else the regex.
#[derive(Debug)]
pub(super) enum Matcher {
    Sequence(Sequence),
    Regex(Regex),
}

impl Matcher {
    /// The matcher of an ECMA 262 `pattern` whose regex translation is `regex`: the regex decides
    /// what the pattern means, the sequence only stands in for it where it agrees by construction.
    pub(super) fn new(pattern: &str, regex: Regex) -> Matcher {
        match Sequence::parse(pattern) {
            Some(sequence) => Matcher::Sequence(sequence),
            None => Matcher::Regex(regex),
        }
    }

    #[inline]
    pub(super) fn is_match(&self, s: &str) -> bool {
        match self {
            Matcher::Sequence(sequence) => sequence.is_match(s),
            Matcher::Regex(regex) => regex.is_match(s),
        }
    }
}

#[cfg(test)]
mod tests;
