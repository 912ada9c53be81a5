//! The compact rendering states the schema: replies written from the rendering alone validate against the
//! full schema, and what the rendering forbids the schema forbids.
//!
//! A small reader parses the rendering back (declarations, object members with `?`, unions, arrays,
//! literals, `// no other keys`, and the constraints its comments state: bounds, lengths, item counts,
//! patterns, formats) into the constraints a model would read from it. From those alone it writes
//! instances (boundary values, every branch and enum value over the seeds), which must validate against the
//! full JSON Schema. Then it breaks each instance one constraint at a time (a required key dropped, an
//! unknown key added to a closed object, a value off the stated bounds or enum, a wrong type): every
//! instance the rendering rejects must be rejected by the schema too.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use claij_schema::compile::compile;
use claij_schema::render::to_compact;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use regex::Regex;
use serde_json::{Map, Value, json};

/// A type as the rendering states it.
#[derive(Debug, Clone)]
enum Ty {
    Any,
    Never,
    /// Any JSON object (`object`).
    AnyObject,
    Bool,
    Null,
    Str(Text),
    Num {
        integer: bool,
        bounds: Bounds,
    },
    Lit(Value),
    /// A declared name, with the constraints its use site adds.
    Ref(String, Vec<Constraint>),
    Obj {
        props: Vec<(String, bool, Ty)>,
        closed: bool,
    },
    Arr {
        item: Box<Ty>,
        min: usize,
        max: Option<usize>,
    },
    Union(Vec<Ty>),
}

#[derive(Debug, Clone, Default)]
struct Text {
    min: usize,
    max: Option<usize>,
    pattern: Option<String>,
    format: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct Bounds {
    low: Option<(f64, bool)>,
    high: Option<(f64, bool)>,
}

/// One constraint a comment states.
#[derive(Debug, Clone)]
enum Constraint {
    Chars(usize, Option<usize>),
    Items(usize, Option<usize>),
    Pattern(String),
    Format(String),
    Numeric(Bounds),
}

/// The parsed rendering: the main type and the declarations.
struct Rendering {
    main: Ty,
    decls: BTreeMap<String, Ty>,
    /// Compiled patterns, by source.
    regexes: RefCell<HashMap<String, Regex>>,
}

// ---------------------------------------------------------------------------------------------------
// Reading the rendering

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Lit(Value),
    Punct(char),
    Comment(String),
    Newline,
}

fn lex(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            toks.push(Tok::Newline);
            i += 1;
        } else if c == ' ' {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            let end = (i..chars.len())
                .find(|&j| chars[j] == '\n')
                .unwrap_or(chars.len());
            let comment: String = chars[i + 2..end].iter().collect();
            toks.push(Tok::Comment(comment.trim().to_owned()));
            i = end;
        } else if c == '"' {
            let mut j = i + 1;
            while chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            let literal: String = chars[i..=j].iter().collect();
            toks.push(Tok::Lit(serde_json::from_str(&literal).unwrap()));
            i = j + 1;
        } else if c.is_ascii_digit() || (c == '-' && chars[i + 1].is_ascii_digit()) {
            let end = (i + 1..chars.len())
                .find(|&j| !(chars[j].is_ascii_alphanumeric() || chars[j] == '.'))
                .unwrap_or(chars.len());
            let literal: String = chars[i..end].iter().collect();
            toks.push(Tok::Lit(serde_json::from_str(&literal).unwrap()));
            i = end;
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let end = (i..chars.len())
                .find(|&j| !(chars[j].is_alphanumeric() || chars[j] == '_' || chars[j] == '$'))
                .unwrap_or(chars.len());
            let word: String = chars[i..end].iter().collect();
            toks.push(match word.as_str() {
                "true" => Tok::Lit(Value::Bool(true)),
                "false" => Tok::Lit(Value::Bool(false)),
                _ => Tok::Word(word),
            });
            i = end;
        } else {
            toks.push(Tok::Punct(c));
            i += 1;
        }
    }
    toks
}

struct Parser {
    toks: Vec<Tok>,
    at: usize,
    /// The comments of the member or declaration being read (a multi-line object's comment comes
    /// right after its `{`).
    sinks: Vec<Vec<String>>,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn next(&mut self) -> Tok {
        let tok = self.toks[self.at].clone();
        self.at += 1;
        tok
    }

    fn expect(&mut self, punct: char) {
        let tok = self.next();
        assert_eq!(tok, Tok::Punct(punct), "at token {}", self.at);
    }

    /// Comment lines (a description above a type or member).
    fn skip_comment_lines(&mut self) {
        while let Some(Tok::Comment(_) | Tok::Newline) = self.peek() {
            self.at += 1;
        }
    }

    /// A type with the constraints of the comment ending its line applied.
    fn commented(&mut self) -> Ty {
        self.sinks.push(Vec::new());
        let ty = self.union();
        if let Some(Tok::Comment(c)) = self.peek() {
            let c = c.clone();
            self.at += 1;
            self.sinks.last_mut().unwrap().push(c);
        }
        let comments = self.sinks.pop().unwrap();
        let mut ty = ty;
        for comment in comments {
            for constraint in constraints(&comment) {
                apply(&mut ty, constraint);
            }
        }
        ty
    }

    fn union(&mut self) -> Ty {
        let mut branches = vec![self.postfix()];
        while self.peek() == Some(&Tok::Punct('|')) {
            self.at += 1;
            branches.push(self.postfix());
        }
        if branches.len() == 1 {
            branches.pop().unwrap()
        } else {
            Ty::Union(branches)
        }
    }

    fn postfix(&mut self) -> Ty {
        let mut ty = self.primary();
        while self.peek() == Some(&Tok::Punct('['))
            && self.toks.get(self.at + 1) == Some(&Tok::Punct(']'))
        {
            self.at += 2;
            ty = Ty::Arr {
                item: Box::new(ty),
                min: 0,
                max: None,
            };
        }
        ty
    }

    fn primary(&mut self) -> Ty {
        match self.next() {
            Tok::Lit(value) => Ty::Lit(value),
            Tok::Punct('(') => {
                let ty = self.union();
                self.expect(')');
                ty
            }
            Tok::Punct('{') => self.object(),
            Tok::Word(word) => match word.as_str() {
                "string" => Ty::Str(Text::default()),
                "number" => Ty::Num {
                    integer: false,
                    bounds: Bounds::default(),
                },
                "integer" => Ty::Num {
                    integer: true,
                    bounds: Bounds::default(),
                },
                "boolean" => Ty::Bool,
                "null" => Ty::Null,
                "any" => Ty::Any,
                "never" => Ty::Never,
                "object" => Ty::AnyObject,
                _ => Ty::Ref(word, Vec::new()),
            },
            other => panic!("unexpected {other:?} at token {}", self.at),
        }
    }

    /// Members up to the closing brace; the opening line's comment goes to the enclosing sink.
    fn object(&mut self) -> Ty {
        if let Some(Tok::Comment(c)) = self.peek() {
            let c = c.clone();
            self.at += 1;
            self.sinks.last_mut().unwrap().push(c);
        }
        let mut props = Vec::new();
        let mut closed = false;
        loop {
            match self.next() {
                Tok::Newline => {}
                Tok::Punct('}') => break,
                Tok::Comment(c) => closed |= c == "no other keys",
                Tok::Word(key) => props.push(self.member(key)),
                Tok::Lit(Value::String(key)) => props.push(self.member(key)),
                other => panic!("unexpected {other:?} in an object at token {}", self.at),
            }
        }
        Ty::Obj { props, closed }
    }

    fn member(&mut self, key: String) -> (String, bool, Ty) {
        let optional = self.peek() == Some(&Tok::Punct('?'));
        if optional {
            self.at += 1;
        }
        self.expect(':');
        (key, !optional, self.commented())
    }

    fn document(mut self) -> Rendering {
        self.skip_comment_lines();
        let main = self.commented();
        let mut decls = BTreeMap::new();
        loop {
            self.skip_comment_lines();
            match self.peek() {
                None => break,
                Some(Tok::Word(w)) if w == "type" => {
                    self.at += 1;
                    let Tok::Word(name) = self.next() else {
                        panic!("a declaration without a name at token {}", self.at)
                    };
                    self.expect('=');
                    decls.insert(name, self.commented());
                }
                other => panic!("unexpected {other:?} between declarations"),
            }
        }
        Rendering {
            main,
            decls,
            regexes: RefCell::default(),
        }
    }
}

fn parse(text: &str) -> Rendering {
    let mut toks = lex(text);
    toks.push(Tok::Newline);
    Parser {
        toks,
        at: 0,
        sinks: Vec::new(),
    }
    .document()
}

/// The constraints of one comment: its `;`-separated parts that state one (`each: ` marks an item's).
fn constraints(comment: &str) -> Vec<Constraint> {
    let number = |s: &str| s.trim().parse::<f64>().ok();
    let count = |s: &str| s.trim().parse::<usize>().ok();
    let mut out = Vec::new();
    for part in comment.split("; ").flat_map(|p| p.split(", ")) {
        let part = part.trim().trim_start_matches("each: ");
        let (body, unit) = match part.rsplit_once(' ') {
            Some((body, unit @ ("chars" | "items" | "keys"))) => (body, Some(unit)),
            _ => (part, None),
        };
        let range = if let Some(n) = body.strip_prefix("exactly ").and_then(count) {
            Some((Some(n as f64), Some(n as f64)))
        } else if let Some((lo, hi)) = body.split_once("..=") {
            number(lo)
                .zip(number(hi))
                .map(|(lo, hi)| (Some(lo), Some(hi)))
        } else if let Some(lo) = body.strip_prefix('≥').and_then(number) {
            Some((Some(lo), None))
        } else {
            body.strip_prefix('≤')
                .and_then(number)
                .map(|hi| (None, Some(hi)))
        };
        match (unit, range) {
            (Some("chars"), Some((lo, hi))) => out.push(Constraint::Chars(
                lo.unwrap_or(0.0) as usize,
                hi.map(|h| h as usize),
            )),
            (Some("items"), Some((lo, hi))) => out.push(Constraint::Items(
                lo.unwrap_or(0.0) as usize,
                hi.map(|h| h as usize),
            )),
            (None, Some((lo, hi))) => out.push(Constraint::Numeric(Bounds {
                low: lo.map(|l| (l, false)),
                high: hi.map(|h| (h, false)),
            })),
            _ => {
                if let Some(pattern) = part.strip_prefix("pattern ") {
                    out.push(Constraint::Pattern(pattern.to_owned()));
                } else if let Some(format) = part.strip_prefix("format ") {
                    out.push(Constraint::Format(format.to_owned()));
                } else if let Some(lo) = part.strip_prefix('>').and_then(number) {
                    out.push(Constraint::Numeric(Bounds {
                        low: Some((lo, true)),
                        high: None,
                    }));
                } else if let Some(hi) = part.strip_prefix('<').and_then(number) {
                    out.push(Constraint::Numeric(Bounds {
                        low: None,
                        high: Some((hi, true)),
                    }));
                }
            }
        }
    }
    out
}

/// Puts a constraint on the part of `ty` it is about: item counts on the outermost array, lengths,
/// patterns and formats on strings, bounds on numbers (through arrays and unions).
fn apply(ty: &mut Ty, constraint: Constraint) -> bool {
    match (ty, &constraint) {
        (Ty::Arr { min, max, .. }, Constraint::Items(lo, hi)) => {
            (*min, *max) = (*lo, *hi);
            true
        }
        (Ty::Str(text), Constraint::Chars(lo, hi)) => {
            (text.min, text.max) = (*lo, *hi);
            true
        }
        (Ty::Str(text), Constraint::Pattern(p)) => {
            text.pattern = Some(p.clone());
            true
        }
        (Ty::Str(text), Constraint::Format(f)) => {
            text.format = Some(f.clone());
            true
        }
        (Ty::Num { bounds, .. }, Constraint::Numeric(b)) => {
            bounds.low = b.low.or(bounds.low);
            bounds.high = b.high.or(bounds.high);
            true
        }
        (Ty::Ref(_, site), _) => {
            site.push(constraint);
            true
        }
        (Ty::Arr { item, .. }, _) => apply(item, constraint),
        (Ty::Union(branches), _) => {
            let mut any = false;
            for branch in branches {
                any |= apply(branch, constraint.clone());
            }
            any
        }
        _ => false,
    }
}

impl Rendering {
    /// A declared type with its use site's constraints.
    fn resolve(&self, name: &str, site: &[Constraint]) -> Cow<'_, Ty> {
        let declared = self
            .decls
            .get(name)
            .unwrap_or_else(|| panic!("`{name}` is used but not declared"));
        if site.is_empty() {
            return Cow::Borrowed(declared);
        }
        let mut ty = declared.clone();
        for constraint in site {
            apply(&mut ty, constraint.clone());
        }
        Cow::Owned(ty)
    }

    fn matches(&self, pattern: &str, text: &str) -> bool {
        let mut regexes = self.regexes.borrow_mut();
        regexes
            .entry(pattern.to_owned())
            .or_insert_with(|| Regex::new(pattern).unwrap())
            .is_match(text)
    }

    // -----------------------------------------------------------------------------------------------
    // Writing instances from the rendering

    fn generate(&self, ty: &Ty, rng: &mut Rng, depth: usize) -> Value {
        match ty {
            Ty::Any => json!("anything"),
            Ty::Never => panic!("the rendering admits nothing here"),
            Ty::AnyObject => json!({}),
            Ty::Bool => Value::Bool(rng.below(2) == 1),
            Ty::Null => Value::Null,
            Ty::Lit(value) => value.clone(),
            Ty::Ref(name, site) => self.generate(&self.resolve(name, site), rng, depth + 1),
            Ty::Str(text) => self.generate_text(text, rng),
            Ty::Num { integer, bounds } => generate_number(*integer, bounds, rng),
            Ty::Obj { props, .. } => {
                let mut map = Map::new();
                for (key, required, ty) in props {
                    if *required || (depth < 12 && rng.below(2) == 1) {
                        map.insert(key.clone(), self.generate(ty, rng, depth + 1));
                    }
                }
                Value::Object(map)
            }
            Ty::Arr { item, min, max } => {
                let top = if depth < 12 { min + 2 } else { *min };
                let top = max.map_or(top, |max| top.min(max));
                let len = min + rng.below(top - min + 1);
                Value::Array(
                    (0..len)
                        .map(|_| self.generate(item, rng, depth + 1))
                        .collect(),
                )
            }
            Ty::Union(branches) => {
                let branch = &branches[rng.below(branches.len())];
                self.generate(branch, rng, depth + 1)
            }
        }
    }

    // -----------------------------------------------------------------------------------------------
    // Checking an instance against the rendering

    fn accepts(&self, ty: &Ty, value: &Value) -> bool {
        match (ty, value) {
            (Ty::Any, _) => true,
            (Ty::Never, _) => false,
            (Ty::AnyObject, v) => v.is_object(),
            (Ty::Bool, v) => v.is_boolean(),
            (Ty::Null, v) => v.is_null(),
            (Ty::Lit(lit), v) => same_json(lit, v),
            (Ty::Ref(name, site), v) => self.accepts(&self.resolve(name, site), v),
            (Ty::Str(text), Value::String(s)) => {
                let len = s.chars().count();
                len >= text.min
                    && text.max.is_none_or(|max| len <= max)
                    && text.pattern.as_ref().is_none_or(|p| self.matches(p, s))
            }
            (Ty::Num { integer, bounds }, Value::Number(n)) => {
                let x = n.as_f64().unwrap();
                (!integer || x.fract() == 0.0)
                    && bounds
                        .low
                        .is_none_or(|(lo, ex)| if ex { x > lo } else { x >= lo })
                    && bounds
                        .high
                        .is_none_or(|(hi, ex)| if ex { x < hi } else { x <= hi })
            }
            (Ty::Obj { props, closed }, Value::Object(map)) => {
                props.iter().all(|(key, required, ty)| match map.get(key) {
                    Some(v) => self.accepts(ty, v),
                    None => !required,
                }) && (!closed || map.keys().all(|k| props.iter().any(|(p, _, _)| p == k)))
            }
            (Ty::Arr { item, min, max }, Value::Array(items)) => {
                items.len() >= *min
                    && max.is_none_or(|max| items.len() <= max)
                    && items.iter().all(|v| self.accepts(item, v))
            }
            (Ty::Union(branches), v) => branches.iter().any(|b| self.accepts(b, v)),
            _ => false,
        }
    }

    // -----------------------------------------------------------------------------------------------
    // Breaking an instance one stated constraint at a time

    /// Instances that differ from `value` at one place, where `ty` is what the rendering says goes there,
    /// each with whether the rendering states the constraint it tests exactly (`true`: a key dropped or
    /// unlisted, a count, a bound, a length, a literal of the schema), so both must judge it alike;
    /// `false` for wrong types, which the rendering need not decide alone (a `format` it only names).
    fn breakages(&self, ty: &Ty, value: &Value, pool: &[Value], out: &mut Vec<(Value, bool)>) {
        let nested =
            |inner: &Ty, v: &Value, wrap: &dyn Fn(Value) -> Value, out: &mut Vec<(Value, bool)>| {
                let mut found = Vec::new();
                self.breakages(inner, v, pool, &mut found);
                out.extend(found.into_iter().map(|(b, strict)| (wrap(b), strict)));
            };
        match (ty, value) {
            (Ty::Ref(name, site), v) => {
                return self.breakages(&self.resolve(name, site), v, pool, out);
            }
            (Ty::Union(branches), v) => {
                // Break within the branch the value takes.
                if let Some(branch) = branches.iter().find(|b| self.accepts(b, v)) {
                    return self.breakages(branch, v, pool, out);
                }
            }
            (Ty::Lit(_), _) => out.extend(pool.iter().map(|lit| (lit.clone(), true))),
            (Ty::Obj { props, .. }, Value::Object(map)) => {
                for (key, _, ty) in props {
                    let mut dropped = map.clone();
                    dropped.shift_remove(key);
                    out.push((Value::Object(dropped), true));
                    if let Some(v) = map.get(key) {
                        let wrap = |b: Value| {
                            let mut broken = map.clone();
                            broken.insert(key.clone(), b);
                            Value::Object(broken)
                        };
                        nested(ty, v, &wrap, out);
                    }
                }
                let mut unlisted = map.clone();
                unlisted.insert("zz_unlisted".to_owned(), json!(1));
                out.push((Value::Object(unlisted), true));
            }
            (Ty::Arr { item, min, max }, Value::Array(items)) => {
                if let (Some(max), Some(first)) = (max, items.first()) {
                    out.push((Value::Array(vec![first.clone(); max + 1]), true));
                }
                if *min > 0 {
                    out.push((Value::Array(items[..min - 1].to_vec()), true));
                }
                if let Some(first) = items.first() {
                    let wrap = |b: Value| {
                        let mut broken = items.clone();
                        broken[0] = b;
                        Value::Array(broken)
                    };
                    nested(item, first, &wrap, out);
                }
            }
            (Ty::Str(text), _) => {
                let strict = text.pattern.is_none() && text.format.is_none();
                out.push((json!("x".repeat(text.min.saturating_sub(1))), strict));
                if let Some(max) = text.max {
                    out.push((json!("x".repeat(max + 1)), strict));
                }
            }
            (Ty::Num { bounds, .. }, _) => {
                for (bound, step) in [(bounds.low, -1.0), (bounds.high, 1.0)] {
                    if let Some((x, _)) = bound {
                        out.push((json!(x + step), true));
                        out.push((json!(x), true));
                    }
                }
            }
            _ => {}
        }
        let wrong_types = [
            json!("zz"),
            json!(7),
            json!(0.5),
            json!(true),
            json!(null),
            json!([]),
            json!({}),
        ];
        out.extend(wrong_types.into_iter().map(|v| (v, false)));
    }
}

fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

impl Rendering {
    fn generate_text(&self, text: &Text, rng: &mut Rng) -> Value {
        if let Some(pattern) = &text.pattern {
            // A pattern stated whole (`^…$`) is generated from its body; the strategy is unanchored.
            let body = pattern.trim_start_matches('^').trim_end_matches('$');
            let strategy = proptest::string::string_regex(body).unwrap();
            let mut runner = TestRunner::new_with_rng(
                proptest::test_runner::Config::default(),
                proptest::test_runner::TestRng::from_seed(
                    proptest::test_runner::RngAlgorithm::ChaCha,
                    &[rng.below(250) as u8; 32],
                ),
            );
            let raw = strategy.new_tree(&mut runner).unwrap().current();
            // Engines disagree on what `\s` covers beyond ASCII (ECMA-262's set against Unicode's), which
            // is no matter of the rendering: other characters become `a` when the pattern still matches.
            let plain: String = raw
                .chars()
                .map(|c| if c.is_ascii_graphic() { c } else { 'a' })
                .collect();
            return json!(if self.matches(pattern, &plain) {
                plain
            } else {
                raw
            });
        }
        match text.format.as_deref() {
            Some("date-time") => return json!("2024-05-01T12:30:00Z"),
            Some("date") => return json!("2024-05-01"),
            Some("email") => return json!("ada@example.com"),
            Some("uri") => return json!("https://example.com/a"),
            _ => {}
        }
        let top = text.max.unwrap_or(text.min + 8);
        let len = [text.min, top, (text.min + top) / 2][rng.below(3)];
        json!("a".repeat(len))
    }
}

fn generate_number(integer: bool, bounds: &Bounds, rng: &mut Rng) -> Value {
    let step = if integer { 1.0 } else { 0.25 };
    let lo = bounds.low.map(|(lo, ex)| if ex { lo + step } else { lo });
    let hi = bounds.high.map(|(hi, ex)| if ex { hi - step } else { hi });
    let (lo, hi) = match (lo, hi) {
        (Some(lo), Some(hi)) => (lo, hi),
        (Some(lo), None) => (lo, lo + 10.0),
        (None, Some(hi)) => (hi - 10.0, hi),
        (None, None) => (-3.0, 3.0),
    };
    let x = [lo, hi, ((lo + hi) / 2.0 / step).floor() * step][rng.below(3)];
    if integer { json!(x as i64) } else { json!(x) }
}

/// A tiny deterministic generator (xorshift), one per seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// Every `const` and `enum` value in a schema: the values a rendering that dropped one would forbid.
fn literal_pool(schema: &Value, out: &mut Vec<Value>) {
    match schema {
        Value::Object(map) => {
            if let Some(c) = map.get("const") {
                out.push(c.clone());
            }
            if let Some(Value::Array(values)) = map.get("enum") {
                out.extend(values.iter().cloned());
            }
            for (key, value) in map {
                if !matches!(key.as_str(), "const" | "enum" | "default" | "examples") {
                    literal_pool(value, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| literal_pool(v, out)),
        _ => {}
    }
}

/// The schemas the check runs on: the bench schemas, the quality prompts' schemas and a recursive one.
fn schemas() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = ["small.json", "big.json"]
        .into_iter()
        .map(|name| {
            (
                name.to_owned(),
                crate::fixture::json(&format!("fixtures/bench/{name}")),
            )
        })
        .collect();
    let quality = crate::fixture::json("xtask/src/bench/quality.json");
    for (name, schema) in quality["schemas"].as_object().unwrap() {
        out.push((format!("quality {name}"), schema.clone()));
    }
    out.push((
        "tree".to_owned(),
        json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "required": ["root"],
            "additionalProperties": false,
            "$defs": {"Node": {"type": "object", "properties": {
                "value": {"type": "string", "description": "Label shown for the node", "minLength": 1},
                "weight": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}, "maxItems": 3},
            }, "required": ["value"], "additionalProperties": false}},
        }),
    ));
    out
}

const SEEDS: u64 = 200;

/// Instances written from the rendering alone validate against the full schema.
#[test]
fn instances_written_from_the_rendering_validate_against_the_schema() {
    for (name, schema) in schemas() {
        let rendering = parse(&to_compact(&schema));
        let compiled = compile(&schema).unwrap();
        let (schemas, index) = compiled.as_boon();
        for seed in 1..=SEEDS {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let instance = rendering.generate(&rendering.main, &mut rng, 0);
            assert!(
                rendering.accepts(&rendering.main, &instance),
                "{name}: the reader rejects its own instance {instance}"
            );
            if let Err(err) = schemas.validate(&instance, index) {
                panic!(
                    "{name}, seed {seed}: written from the rendering, rejected by the schema: {err}\n{instance}"
                );
            }
        }
    }
}

/// What the rendering forbids (a required key missing, an unlisted key in a closed object, a value off
/// the stated bounds, lengths, counts or enum, a wrong type) the schema forbids; and for the constraints the
/// rendering states exactly (keys, `no other keys`, bounds, lengths, counts, literals), what it allows the
/// schema allows.
#[test]
fn what_the_rendering_forbids_the_schema_forbids() {
    for (name, schema) in schemas() {
        let rendering = parse(&to_compact(&schema));
        let compiled = compile(&schema).unwrap();
        let (schemas, index) = compiled.as_boon();
        let mut pool = Vec::new();
        literal_pool(&schema, &mut pool);
        let mut checked = 0;
        for seed in 1..=SEEDS / 10 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let instance = rendering.generate(&rendering.main, &mut rng, 0);
            let mut broken = Vec::new();
            rendering.breakages(&rendering.main, &instance, &pool, &mut broken);
            for (candidate, strict) in broken {
                let stated = rendering.accepts(&rendering.main, &candidate);
                let valid = schemas.validate(&candidate, index).is_ok();
                if !stated {
                    checked += 1;
                    assert!(
                        !valid,
                        "{name}: the rendering forbids it, the schema accepts it: {candidate}"
                    );
                } else if strict {
                    assert!(
                        valid,
                        "{name}: the rendering allows it, the schema forbids it: {candidate}"
                    );
                }
            }
        }
        assert!(
            checked > 20,
            "{name}: only {checked} broken instances checked"
        );
    }
}
