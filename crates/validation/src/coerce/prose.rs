//! Reading values out of everyday text: enum members named in prose, numbers as people write them
//! (`1,234.5`, `$12`, `12%`, `1/2`, the one number in a sentence), yes/no, null words, aliases.
//!
//! Every reader here finds a value that is written in the text or gives up: an ambiguous text (two
//! members named, two numbers, a negation) yields nothing.

use std::ops::Range;

use serde_json::{Map, Value};

use crate::fix::FixKind;

/// One enum member and the names it may be called by.
pub(super) struct Member<'s> {
    /// The member as the schema writes it.
    pub(super) value: &'s str,
    /// Further names for it: its branch's `title`, `aliases: ...` in its description.
    pub(super) aliases: Vec<String>,
}

/// The one member `text` names, and whether it was named by an alias: whole words, ignoring case and
/// punctuation (`"I'd say **positive**."`, `"cancel order"` for `CancelOrder`). A member whose every
/// mention is part of a longer member's (`Positive` in `Very Positive`) does not count. Two members
/// named: `None`.
///
/// Several members named: the one the text ranks first ([`FixKind::EnumRanked`]), the one named on a
/// list's first item (`1. Billing`) or right after a word that picks one (`Most likely: Billing`,
/// `Answer: Billing`), when that names one member only. A negated mention (`not`, `never`, `n't`,
/// `rather than`, ...) anywhere: `None`, whatever else is named.
pub(super) fn member_in(text: &str, members: &[Member<'_>]) -> Option<(usize, FixKind)> {
    let named = named_members(text, members);
    match named.as_slice() {
        [(index, by_alias)] => Some((
            *index,
            if *by_alias {
                FixKind::EnumAlias
            } else {
                FixKind::EnumFromProse
            },
        )),
        [_, _, ..] => ranked_first(text, members).map(|index| (index, FixKind::EnumRanked)),
        [] => None,
    }
}

/// Words after which the member named next is the one picked (`Most likely: X`, `Answer: X`).
const PICKS: &[&[&str]] = &[
    &["most", "likely"],
    &["most", "probably"],
    &["best", "fit"],
    &["best", "match"],
    &["primary"],
    &["first", "choice"],
    &["top", "choice"],
    &["first", "pick"],
    &["top", "pick"],
    &["answer"],
    &["verdict"],
];

/// How many words may come between a picking word and the member it picks (`answer is X`).
const PICK_REACH: usize = 3;

/// Of the members a text names, the one it ranks first: the one member named on the first item of a
/// numbered list, else the one member named right after a picking word. `None` when neither says.
fn ranked_first(text: &str, members: &[Member<'_>]) -> Option<usize> {
    for line in text.lines() {
        let item = line.trim_start().trim_start_matches(['#', '*', '-', ' ']);
        let Some(rest) = item.strip_prefix('1') else {
            continue;
        };
        if !rest.starts_with(['.', ')', ':']) {
            continue;
        }
        return match named_members(rest, members).as_slice() {
            [(index, _)] => Some(*index),
            _ => None,
        };
    }
    let words = words(text);
    let hits = mentions(&words, members);
    let mut picked: Vec<usize> = Vec::new();
    for pick in PICKS {
        let pick: Vec<String> = pick.iter().map(|w| (*w).to_owned()).collect();
        for span in occurrences(&words, &pick) {
            let first = hits
                .iter()
                .filter(|(_, hit, _)| hit.start >= span.end && hit.start <= span.end + PICK_REACH)
                .min_by_key(|(_, hit, _)| hit.start);
            if let Some((index, _, _)) = first
                && !picked.contains(index)
            {
                picked.push(*index);
            }
        }
    }
    match picked.as_slice() {
        [only] => Some(*only),
        _ => None,
    }
}

/// Every member `text` names, in order of first mention, without repeats (for an array of enums).
pub(super) fn members_in(text: &str, members: &[Member<'_>]) -> Vec<usize> {
    named_members(text, members)
        .into_iter()
        .map(|(index, _)| index)
        .collect()
}

/// Texts longer than this many words name no member: no everyday reply is that long, and matching
/// stays cheap on a hostile one (the check for mentions inside longer ones is quadratic in mentions).
const MAX_WORDS: usize = 2000;

/// `(member, by alias only)` for each member named, in order of first mention.
fn named_members(text: &str, members: &[Member<'_>]) -> Vec<(usize, bool)> {
    let words = words(text);
    if words.len() > MAX_WORDS {
        return Vec::new();
    }
    let kept = mentions(&words, members);
    // "not X", "X rather than Y": what the text means is not a list of mentions.
    if kept.iter().any(|(_, span, _)| negated(&words, span.start)) {
        return Vec::new();
    }
    let mut ordered: Vec<&(usize, Range<usize>, bool)> = kept.iter().collect();
    ordered.sort_by_key(|(_, span, by_alias)| (span.start, *by_alias));
    let mut out: Vec<(usize, bool)> = Vec::new();
    for (index, _, by_alias) in ordered {
        match out.iter_mut().find(|(seen, _)| seen == index) {
            // Named by its own name anywhere: not an alias match.
            Some(entry) => entry.1 &= *by_alias,
            None => out.push((*index, *by_alias)),
        }
    }
    out
}

/// Whether the words just before `start` negate what follows (`not`, `never`, `isn't`, `rather than`).
fn negated(words: &[String], start: usize) -> bool {
    const ONE: &[&str] = &[
        "not", "never", "no", "t", "nor", "neither", "without", "except",
    ];
    const TWO: &[[&str; 2]] = &[["rather", "than"], ["instead", "of"], ["other", "than"]];
    let before = |n: usize| {
        start
            .checked_sub(n)
            .and_then(|i| words.get(i))
            .map(String::as_str)
    };
    before(1).is_some_and(|w| ONE.contains(&w))
        || TWO
            .iter()
            .any(|[a, b]| before(2) == Some(*a) && before(1) == Some(*b))
}

/// `(member, span of words, by alias)` of each mention of a member in `words`, a mention inside a
/// longer mention of another member left out (it is that member's).
fn mentions(words: &[String], members: &[Member<'_>]) -> Vec<(usize, Range<usize>, bool)> {
    // (member, span of words, by alias)
    let mut hits: Vec<(usize, Range<usize>, bool)> = Vec::new();
    for (index, member) in members.iter().enumerate() {
        for name in name_forms(member.value) {
            hits.extend(occurrences(words, &name).map(|span| (index, span, false)));
        }
        for alias in &member.aliases {
            for name in name_forms(alias) {
                hits.extend(occurrences(words, &name).map(|span| (index, span, true)));
            }
        }
    }
    // A mention inside a longer mention of another member is that member's.
    let kept: Vec<&(usize, Range<usize>, bool)> = hits
        .iter()
        .filter(|(index, span, _)| {
            !hits.iter().any(|(other, outer, _)| {
                other != index
                    && outer.start <= span.start
                    && span.end <= outer.end
                    && outer.len() > span.len()
            })
        })
        .collect();
    kept.into_iter().cloned().collect()
}

/// The lowercase alphanumeric words of a text (`"Don't stop!"` gives `don`, `t`, `stop`).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            if w.is_ascii() {
                w.to_ascii_lowercase()
            } else {
                w.chars()
                    .flat_map(char::to_lowercase)
                    .map(unaccented)
                    .collect()
            }
        })
        .collect()
}

/// A lowercase letter without its accent (`é` as `e`), so that `creme brulee` names `Crème Brûlée`.
fn unaccented(c: char) -> char {
    match c {
        'à'..='å' | 'ā' | 'ă' | 'ą' => 'a',
        'ç' | 'ć' | 'č' => 'c',
        'ď' => 'd',
        'è'..='ë' | 'ē' | 'ė' | 'ę' | 'ě' => 'e',
        'ì'..='ï' | 'ī' | 'į' => 'i',
        'ł' | 'ľ' => 'l',
        'ñ' | 'ń' | 'ň' => 'n',
        'ò'..='ö' | 'ø' | 'ō' | 'ő' => 'o',
        'ř' => 'r',
        'ś' | 'š' | 'ş' => 's',
        'ť' | 'ţ' => 't',
        'ù'..='ü' | 'ū' | 'ů' | 'ű' | 'ų' => 'u',
        'ý' | 'ÿ' => 'y',
        'ź' | 'ż' | 'ž' => 'z',
        _ => c,
    }
}

/// The word sequences a name may be written as: its words, and split at camel-case humps too
/// (`CancelOrder` as `cancelorder` and as `cancel order`).
fn name_forms(name: &str) -> Vec<Vec<String>> {
    let plain = words(name);
    let mut humps: Vec<String> = Vec::new();
    for word in name.split(|c: char| !c.is_alphanumeric()) {
        let mut current = String::new();
        let mut previous_lower = false;
        for c in word.chars() {
            if c.is_uppercase() && previous_lower && !current.is_empty() {
                humps.push(std::mem::take(&mut current));
            }
            previous_lower = c.is_lowercase() || c.is_numeric();
            current.extend(c.to_lowercase().map(unaccented));
        }
        if !current.is_empty() {
            humps.push(current);
        }
    }
    let mut forms = Vec::new();
    if !plain.is_empty() {
        forms.push(plain);
    }
    if !humps.is_empty() && !forms.contains(&humps) {
        forms.push(humps);
    }
    forms
}

/// Where `name` occurs in `words`, as word spans.
fn occurrences<'a>(
    words: &'a [String],
    name: &'a [String],
) -> impl Iterator<Item = Range<usize>> + 'a {
    let n = name.len();
    (0..words.len().saturating_sub(n.saturating_sub(1)))
        .filter(move |&i| n > 0 && words.get(i..i + n) == Some(name))
        .map(move |i| i..i + n)
}

/// Descriptions of at most this many words are a name of their own (`"Production is down"`).
const NAME_WORDS: usize = 12;

/// The names a schema node also goes by: its `title`, and the list after `alias:` or `aliases:` in its
/// description (up to the end of the line or sentence, split at commas, `|` and ` or `); a short
/// description without such a list is a name itself (written out in full to count).
pub(super) fn aliases(node: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(title) = node.get("title").and_then(Value::as_str) {
        out.push(title.to_owned());
    }
    if let Some(description) = node.get("description").and_then(Value::as_str) {
        let lower = description.to_lowercase();
        for key in ["aliases:", "alias:"] {
            let Some(at) = lower.find(key) else { continue };
            let rest = description.get(at + key.len()..).unwrap_or_default();
            let end = rest.find(['\n', '.', ';', ')']).unwrap_or(rest.len());
            let list = rest.get(..end).unwrap_or_default();
            for alias in list.split([',', '|']).flat_map(|a| a.split(" or ")) {
                let alias = alias.trim().trim_matches(['"', '\'', '`']).trim();
                if !alias.is_empty() {
                    out.push(alias.to_owned());
                }
            }
            break;
        }
        let listed = ["aliases:", "alias:"].iter().any(|key| lower.contains(key));
        let count = description
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .take(NAME_WORDS + 1)
            .count();
        let short = (1..=NAME_WORDS).contains(&count);
        if !listed && short {
            out.push(description.trim().trim_end_matches('.').to_owned());
        }
    }
    out
}

/// A number written the way people write one, with the kind of fix reading it is: `1,234.5` and `+7`
/// ([`FixKind::StringToNumber`]), `$12` and `-€3.50` ([`FixKind::Currency`]), `12%`
/// ([`FixKind::Percent`], the number as written: 12), `1/2` ([`FixKind::Fraction`]).
pub(super) fn number(s: &str) -> Option<(f64, FixKind)> {
    let s = s.trim();
    if let Some(n) = super::parse_number(s) {
        return Some((n, FixKind::StringToNumber));
    }
    if let Some(body) = s.strip_suffix('%') {
        return super::parse_number(body.trim_end()).map(|n| (n, FixKind::Percent));
    }
    let (sign, unsigned) = match s.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, s.strip_prefix('+').unwrap_or(s)),
    };
    if let Some(amount) = unsigned.strip_prefix(['$', '€', '£', '¥']) {
        let amount = amount.trim_start();
        if amount.starts_with(['-', '+']) {
            return None;
        }
        return super::parse_number(amount).map(|n| (sign * n, FixKind::Currency));
    }
    let (top, bottom) = unsigned.split_once('/')?;
    let digits = |t: &str| !t.is_empty() && t.len() <= 15 && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(top) || !digits(bottom) {
        return None;
    }
    let (top, bottom): (f64, f64) = (top.parse().ok()?, bottom.parse().ok()?);
    (bottom != 0.0).then(|| (sign * top / bottom, FixKind::Fraction))
}

/// The one number in a piece of prose (`"about 42 people"`), read by [`number`]. Two numbers, a number
/// glued to letters (`4o`, `42kg`), or one that does not read (a date): `None`.
pub(super) fn number_in(text: &str) -> Option<f64> {
    let numeric = |c: char| {
        c.is_ascii_digit() || matches!(c, '.' | ',' | '$' | '€' | '£' | '¥' | '%' | '/' | '-' | '+')
    };
    let mut found: Option<&str> = None;
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        // Widen to the whole run of number characters around the digit.
        let head = rest.get(..start).unwrap_or_default();
        let lead = head.len() - head.trim_end_matches(numeric).len();
        let begin = start - lead;
        let tail = rest.get(start..).unwrap_or_default();
        let end = start + tail.find(|c: char| !numeric(c)).unwrap_or(tail.len());
        let glued = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
        if glued(rest.get(..begin).and_then(|h| h.chars().next_back()))
            || glued(rest.get(end..).and_then(|t| t.chars().next()))
            || found.is_some()
        {
            return None;
        }
        let token = rest.get(begin..end).unwrap_or_default();
        // A sentence's full stop or comma after the number is not part of it.
        found = Some(token.trim_end_matches(['.', ',']));
        rest = rest.get(end..).unwrap_or_default();
    }
    number(found?).map(|(n, _)| n)
}

/// A boolean said in prose: a first word of yes/no/true/false (`"Yes, it is."`, `"No, that's not
/// true."`) not followed by its opposite (`"yes and no"`), or else the words `true` or `false` alone in the text with no negation (`not`, `never`, `n't`...).
pub(super) fn boolean_in(text: &str) -> Option<bool> {
    let words = words(text);
    let has = |word: &str| words.iter().skip(1).any(|w| w == word);
    // The first word answers, unless its opposite follows (`"yes and no"`, `"true or false"`).
    match words.first().map(String::as_str) {
        Some("yes") => return (!has("no")).then_some(true),
        Some("true") => return (!has("false")).then_some(true),
        Some("no") => return (!has("yes")).then_some(false),
        Some("false") => return (!has("true")).then_some(false),
        _ => {}
    }
    const NEGATIONS: &[&str] = &[
        "not", "never", "neither", "nor", "t", "cannot", "isnt", "no",
    ];
    if words.iter().any(|w| NEGATIONS.contains(&w.as_str())) {
        return None;
    }
    let says_true = words.iter().any(|w| w == "true");
    let says_false = words.iter().any(|w| w == "false");
    match (says_true, says_false) {
        (true, false) => Some(true),
        (false, true) => Some(false),
        _ => None,
    }
}

/// Whether a string says "no value": `null`, `None`, `N/A`, `nil` (any case, a full stop allowed).
pub(super) fn is_null_word(s: &str) -> bool {
    let s = s.trim().trim_end_matches('.').trim();
    ["null", "none", "n/a", "nil"]
        .iter()
        .any(|w| s.eq_ignore_ascii_case(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members<'a>(values: &[&'a str]) -> Vec<Member<'a>> {
        values
            .iter()
            .map(|value| Member {
                value,
                aliases: Vec::new(),
            })
            .collect()
    }

    #[track_caller]
    fn check_member(text: &str, values: &[&str], expected: Option<&str>) {
        let members = members(values);
        let got = member_in(text, &members).map(|(i, _)| values[i]);
        assert_eq!(got, expected, "{text:?}");
    }

    #[test]
    fn members_named_in_prose() {
        let sentiments = ["Positive", "Negative", "Neutral"];
        check_member("I'd say **positive**.", &sentiments, Some("Positive"));
        check_member("POSITIVE!!!", &sentiments, Some("Positive"));
        check_member("positive, not negative", &sentiments, None);
        check_member("positivity", &sentiments, None);
        check_member("no idea", &sentiments, None);
        let orders = ["CancelOrder", "TechnicalSupport"];
        check_member("cancel order please", &orders, Some("CancelOrder"));
        check_member("cancel_order", &orders, Some("CancelOrder"));
        check_member("It's a cancelorder.", &orders, Some("CancelOrder"));
        check_member("cancel", &orders, None);
        // A member inside a longer member's mention is that member's.
        let graded = ["Positive", "Very Positive"];
        check_member("very positive", &graded, Some("Very Positive"));
        check_member("positive", &graded, Some("Positive"));
        check_member("positive, or very positive", &graded, None);
        // Accents are not needed, either way.
        let desserts = ["Crème Brûlée", "Café"];
        check_member("creme brulee please", &desserts, Some("Crème Brûlée"));
        check_member("CAFÉ", &["Cafe", "Tea"], Some("Cafe"));
        // A negated mention: nothing, whatever else is named.
        check_member("not positive", &sentiments, None);
        check_member("It isn't negative.", &sentiments, None);
        check_member("neutral rather than negative", &sentiments, None);
        // Several named: the one ranked first, when the text ranks them.
        check_member("1. Neutral\n2. Positive", &sentiments, Some("Neutral"));
        check_member(
            "Ranked:\n 1) negative\n 2) neutral",
            &sentiments,
            Some("Negative"),
        );
        check_member("1. Neutral or positive\n2. Negative", &sentiments, None);
        check_member(
            "Most likely: negative. Less likely: neutral.",
            &sentiments,
            Some("Negative"),
        );
        check_member(
            "Answer: positive (neutral is possible)",
            &sentiments,
            Some("Positive"),
        );
        check_member(
            "Answer: positive. Most likely: negative.",
            &sentiments,
            None,
        );
        check_member("positive and negative", &sentiments, None);
        // A hostile text: no match, and quickly.
        check_member(&"very positive ".repeat(100_000), &graded, None);
    }

    #[test]
    fn members_by_alias() {
        let members = vec![
            Member {
                value: "Positive",
                aliases: vec!["good".into(), "happy".into()],
            },
            Member {
                value: "Negative",
                aliases: vec!["bad".into()],
            },
        ];
        assert_eq!(
            member_in("Pretty good overall", &members),
            Some((0, FixKind::EnumAlias))
        );
        assert_eq!(
            member_in("positive and good", &members),
            Some((0, FixKind::EnumFromProse))
        );
        assert_eq!(member_in("good and bad", &members), None);
        assert_eq!(members_in("bad, then good, then bad", &members), [1, 0]);
        assert!(members_in("good, not bad", &members).is_empty());
    }

    #[test]
    fn aliases_from_schema() {
        let node = serde_json::json!({"title": "Thumbs up", "description": "A happy reply. Aliases: good, great | fine or ok."});
        let Value::Object(node) = node else { panic!() };
        assert_eq!(aliases(&node), ["Thumbs up", "good", "great", "fine", "ok"]);
        let node =
            serde_json::json!({"description": "Aliases: good, 'great' | fine or ok. Not: bad"});
        let Value::Object(node) = node else { panic!() };
        assert_eq!(aliases(&node), ["good", "great", "fine", "ok"]);
        // A short description is a name; a long one is not.
        let node = serde_json::json!({"description": "Production is down."});
        let Value::Object(node) = node else { panic!() };
        assert_eq!(aliases(&node), ["Production is down"]);
        let node = serde_json::json!({"description": "word ".repeat(NAME_WORDS + 1)});
        let Value::Object(node) = node else { panic!() };
        assert!(aliases(&node).is_empty());
        check_member(
            "First choice: neutral. Second: positive.",
            &["Positive", "Neutral"],
            Some("Neutral"),
        );
    }

    #[test]
    fn numbers_as_written() {
        use FixKind::*;
        assert_eq!(number("1,234.5"), Some((1234.5, StringToNumber)));
        assert_eq!(number("$12"), Some((12.0, Currency)));
        assert_eq!(number("-$1,000"), Some((-1000.0, Currency)));
        assert_eq!(number("€ 3.50"), Some((3.5, Currency)));
        assert_eq!(number("12%"), Some((12.0, Percent)));
        assert_eq!(number("12.5 %"), Some((12.5, Percent)));
        assert_eq!(number("1/2"), Some((0.5, Fraction)));
        assert_eq!(number("-3/4"), Some((-0.75, Fraction)));
        for bad in [
            "1/0", "$", "%", "$-5", "1/2/3", "a/b", "12%%", "1,23", "$x", "/2",
        ] {
            assert_eq!(number(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_one_number_in_prose() {
        assert_eq!(number_in("About 42 people came."), Some(42.0));
        assert_eq!(number_in("It costs $1,234.50, tax included"), Some(1234.5));
        assert_eq!(number_in("roughly 12% of them"), Some(12.0));
        assert_eq!(number_in("-7"), Some(-7.0));
        // Two numbers, a number glued to letters, a date: nothing.
        assert_eq!(number_in("between 3 and 5"), None);
        assert_eq!(number_in("GPT-4o"), None);
        assert_eq!(number_in("42kg"), None);
        assert_eq!(number_in("on 2024-01-05"), None);
        assert_eq!(number_in("none at all"), None);
    }

    #[test]
    fn booleans_in_prose() {
        assert_eq!(boolean_in("Yes, it is."), Some(true));
        assert_eq!(boolean_in("No - never."), Some(false));
        assert_eq!(boolean_in("TRUE"), Some(true));
        assert_eq!(boolean_in("That statement is false."), Some(false));
        assert_eq!(boolean_in("It is not true"), None);
        assert_eq!(boolean_in("isn't true"), None);
        assert_eq!(boolean_in("true or false"), None);
        assert_eq!(boolean_in("Yes and no."), None);
        assert_eq!(boolean_in("No, that's not true."), Some(false));
        assert_eq!(boolean_in("maybe"), None);
        assert_eq!(boolean_in("yesterday"), None);
    }

    /// Texts of words the readers look for, and of anything at all.
    fn texts() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let vocabulary = prop::sample::select(vec![
            "red",
            "Dark",
            "green",
            "BLUE",
            "darkgreen",
            "not",
            "yes",
            "No",
            "true",
            "false",
            "1",
            "$2",
            "3/4",
            "12%",
            "1,234.5",
            "4o",
            "and",
            ",",
            ".",
            "n't",
            "-",
        ]);
        prop_oneof![
            prop::collection::vec(vocabulary, 0..8).prop_map(|words| words.join(" ")),
            "\\PC{0,60}",
        ]
    }

    proptest::proptest! {
        /// Nothing is invented: a member found is named in the text, a number found is written in it,
        /// and no text panics a reader.
        #[test]
        fn readers_only_find_what_is_written(text in texts()) {
            let values = ["Red", "Dark Green", "Blue"];
            let members = members(&values);
            if let Some((i, _)) = member_in(&text, &members) {
                let wanted = words(values[i]);
                let found = words(&text);
                proptest::prop_assert!(found.windows(wanted.len()).any(|w| w == wanted.as_slice()));
            }
            if number_in(&text).is_some() {
                proptest::prop_assert!(text.bytes().any(|b| b.is_ascii_digit()));
            }
            if let Some(b) = boolean_in(&text) {
                let said = words(&text);
                let says = |w: &str| said.iter().any(|s| s == w);
                let answer = if b {
                    says("yes") || says("true")
                } else {
                    says("no") || says("false")
                };
                proptest::prop_assert!(answer);
            }
            let _ = number(&text);
            let _ = is_null_word(&text);
        }
    }

    #[test]
    fn null_words() {
        for word in ["null", "None", "N/A", "n/a.", " NIL "] {
            assert!(is_null_word(word), "{word}");
        }
        for word in ["", "nothing", "0", "NA", "nullable"] {
            assert!(!is_null_word(word), "{word}");
        }
    }
}
