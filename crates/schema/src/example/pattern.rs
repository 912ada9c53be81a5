//! A string matching a simple regular expression: literals, `.`, escapes (`\d`, `\w`, `\s`, `\.`),
//! classes (`[A-Z0-9_]`, `[^@\s]`), groups (`(...)`, `(?:...)`) with alternatives (the first is
//! taken) and quantifiers (`?`, `*`, `+`, `{n}`, `{n,}`, `{n,m}`; the least count is used). Anchors
//! are skipped. Anything else (lookaround, backreferences, `\p{...}`) has no sample.

/// Most characters a sample may have (a `{100000}` has none).
const MAX_CHARS: usize = 1_000;

/// A string the pattern matches, or `None` when it uses what this module does not handle. The
/// caller validates the result: a sample is a best effort.
pub(super) fn sample(pattern: &str) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut parser = Parser {
        chars: &chars,
        at: 0,
    };
    let out = parser.alternatives(0)?;
    (parser.at == chars.len() && out.chars().count() <= MAX_CHARS).then_some(out)
}

/// Characters tried, in order, for a class that excludes some (`[^@\s]`, `\S`, `.`).
const PREFERRED: [char; 8] = ['a', 'x', 'A', '0', '_', '-', 'b', '1'];

struct Parser<'a> {
    chars: &'a [char],
    at: usize,
}

/// One matchable item: a character it matches.
impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    /// `a|b|c` up to a `)` or the end: the first alternative's sample.
    fn alternatives(&mut self, depth: usize) -> Option<String> {
        if depth > 32 {
            return None;
        }
        let first = self.sequence(depth)?;
        while self.peek() == Some('|') {
            self.at += 1;
            self.sequence(depth)?;
        }
        Some(first)
    }

    fn sequence(&mut self, depth: usize) -> Option<String> {
        let mut out = String::new();
        while let Some(c) = self.peek() {
            let atom = match c {
                '|' | ')' => break,
                '^' | '$' => {
                    self.at += 1;
                    continue;
                }
                '(' => {
                    self.at += 1;
                    if self.peek() == Some('?') {
                        // Only the non-capturing group `(?:`.
                        if self.chars.get(self.at + 1) != Some(&':') {
                            return None;
                        }
                        self.at += 2;
                    }
                    let inner = self.alternatives(depth + 1)?;
                    if self.peek() != Some(')') {
                        return None;
                    }
                    self.at += 1;
                    inner
                }
                '[' => self.class()?.to_string(),
                '\\' => {
                    self.at += 1;
                    let escaped = self.peek()?;
                    self.at += 1;
                    escape(escaped)?.to_string()
                }
                '.' => {
                    self.at += 1;
                    'a'.to_string()
                }
                '*' | '+' | '?' | '{' => return None,
                c => {
                    self.at += 1;
                    c.to_string()
                }
            };
            let times = self.quantifier()?;
            if out.len() + atom.len().saturating_mul(times) > MAX_CHARS * 4 {
                return None;
            }
            out.push_str(&atom.repeat(times));
        }
        Some(out)
    }

    /// The least count of the quantifier after an atom (1 without one).
    fn quantifier(&mut self) -> Option<usize> {
        let times = match self.peek() {
            Some('?' | '*') => {
                self.at += 1;
                0
            }
            Some('+') => {
                self.at += 1;
                1
            }
            Some('{') => {
                let close = self.chars[self.at..].iter().position(|c| *c == '}')? + self.at;
                let inside: String = self.chars[self.at + 1..close].iter().collect();
                let least = inside.split(',').next()?.trim();
                let n: usize = least.parse().ok()?;
                self.at = close + 1;
                n
            }
            _ => return Some(1),
        };
        // A lazy or possessive marker changes nothing here.
        if matches!(self.peek(), Some('?' | '+')) {
            self.at += 1;
        }
        Some(times)
    }

    /// `[...]`: the first character it allows.
    fn class(&mut self) -> Option<char> {
        self.at += 1; // `[`
        let negated = self.peek() == Some('^');
        if negated {
            self.at += 1;
        }
        let mut members: Vec<Member> = Vec::new();
        let mut first = true;
        loop {
            let c = self.peek()?;
            self.at += 1;
            if c == ']' && !first {
                break;
            }
            first = false;
            let start = if c == '\\' {
                let escaped = self.peek()?;
                self.at += 1;
                match class_escape(escaped) {
                    Some(member) => {
                        members.push(member);
                        continue;
                    }
                    None => literal_escape(escaped)?,
                }
            } else if c == '[' {
                return None; // POSIX classes and set operations
            } else {
                c
            };
            if self.peek() == Some('-') && self.chars.get(self.at + 1).is_some_and(|c| *c != ']') {
                self.at += 1;
                let mut end = self.peek()?;
                self.at += 1;
                if end == '\\' {
                    end = literal_escape(self.peek()?)?;
                    self.at += 1;
                }
                members.push(Member::Range(start, end));
            } else {
                members.push(Member::Range(start, start));
            }
        }
        if negated {
            PREFERRED
                .into_iter()
                .find(|c| !members.iter().any(|m| m.matches(*c)))
        } else {
            members.first().map(Member::sample)
        }
    }
}

/// What a class holds.
enum Member {
    Range(char, char),
    Digit,
    Word,
    Space,
    NotDigit,
    NotWord,
    NotSpace,
}

impl Member {
    fn matches(&self, c: char) -> bool {
        match self {
            Member::Range(a, b) => (*a..=*b).contains(&c),
            Member::Digit => c.is_ascii_digit(),
            Member::Word => c.is_ascii_alphanumeric() || c == '_',
            Member::Space => c.is_whitespace(),
            Member::NotDigit => !c.is_ascii_digit(),
            Member::NotWord => !(c.is_ascii_alphanumeric() || c == '_'),
            Member::NotSpace => !c.is_whitespace(),
        }
    }

    fn sample(&self) -> char {
        match self {
            Member::Range(a, _) => *a,
            Member::Digit => '0',
            Member::Word | Member::NotDigit | Member::NotSpace => 'a',
            Member::Space => ' ',
            Member::NotWord => '-',
        }
    }
}

/// `\d`, `\w`, `\s` and their negations.
fn class_escape(c: char) -> Option<Member> {
    Some(match c {
        'd' => Member::Digit,
        'w' => Member::Word,
        's' => Member::Space,
        'D' => Member::NotDigit,
        'W' => Member::NotWord,
        'S' => Member::NotSpace,
        _ => return None,
    })
}

/// An escaped character standing for itself (`\.`, `\-`), or a control escape (`\n`, `\t`).
fn literal_escape(c: char) -> Option<char> {
    match c {
        'n' => Some('\n'),
        't' => Some('\t'),
        'r' => Some('\r'),
        c if c.is_ascii_alphanumeric() => None,
        c => Some(c),
    }
}

/// An escape outside a class: a class escape's sample, or the literal.
fn escape(c: char) -> Option<char> {
    match class_escape(c) {
        Some(member) => Some(member.sample()),
        None => literal_escape(c),
    }
}
