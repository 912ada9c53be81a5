//! Extraction of JSON from LLM replies: code fences, `<json>` tags, prose around brackets, reasoning
//! blocks, a byte order mark, several values, JSON escaped inside a JSON string.
//!
//! [`candidates`] lists every piece of a reply that may be the JSON, most likely first; [`recover`]
//! repairs them in order and returns the first complete value it gets (a cut-off one if none is).
//!
//! ```
//! use claij_validation::extract::recover;
//!
//! let reply = "<think>maybe {\"a\": 0}?</think>Sure! Here it is:\n```json\n{\"a\": 1,}\n```\nAnything else?";
//! let recovered = recover(reply)?;
//! assert_eq!(recovered.value, serde_json::json!({"a": 1}));
//! # Ok::<(), claij_validation::repair::RepairError>(())
//! ```

mod scan;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::Range;

use serde::de::IgnoredAny;
use serde_json::Value;

use crate::repair::{RepairError, Repaired, repair};
use crate::{Fix, FixKind};

/// A piece of a reply that may be the JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate<'a> {
    /// The text to repair: borrowed from the reply when it is one contiguous piece of it.
    pub text: Cow<'a, str>,
    /// Byte range of the reply the text comes from.
    pub span: Range<usize>,
    /// How the text was cut out of the reply ([`FixKind::Extracted`], [`FixKind::Unescaped`]).
    pub fixes: Vec<Fix>,
}

/// Most candidates [`candidates`] lists before the last resort: a reply of 160 KB of `{"a": 1} `
/// would otherwise yield tens of thousands, each repaired and validated in turn. The most preferred
/// ones are kept (tags, fences, then bracketed values, objects first).
pub const MAX_CANDIDATES: usize = 32;

/// The pieces of `reply` that may be its JSON value, in order of preference.
///
/// - A reply that is valid JSON as a whole is the first candidate, borrowed, with no fixes (a JSON
///   string holding JSON is followed by its unescaped content).
/// - `<think>`/`<thinking>` blocks are skipped entirely: JSON in reasoning never wins.
/// - A reply that starts like JSON (`{`, `[`, `"`, after comments) is tried whole first.
/// - Then `<json>` tags, fenced code blocks (```` ``` ```` or `~~~`, json-tagged first), and each
///   bracketed value in the prose (brackets balanced, strings respected; objects before arrays).
/// - Last, the whole reply, for repair to make what it can of it.
///
/// At most [`MAX_CANDIDATES`] come before the whole reply, so the work of repairing them all stays
/// linear in the reply's length (the pieces of one kind do not overlap).
pub fn candidates(reply: &str) -> Vec<Candidate<'_>> {
    let (mut out, last_resort) = ranked(reply);
    out.extend(last_resort);
    out
}

/// Whether a text is prose rather than JSON: not valid JSON, and without a bracket, brace or double
/// quote, so repair could only turn its words into strings (`Sorry, no.` into `["Sorry", "no."]`).
///
/// ```
/// use claij_validation::extract::is_prose;
///
/// assert!(is_prose("Sorry, I can't help with that."));
/// assert!(!is_prose("42"));
/// assert!(!is_prose("{answer: 'yes'}"));
/// ```
pub fn is_prose(text: &str) -> bool {
    !text.contains(['{', '[', '"']) && serde_json::from_str::<Value>(text).is_err()
}

/// Whether `value`, recovered from `reply`, is an empty object or array found inside text that holds
/// more than brackets, commas, whitespace and code fences: noise (`{}` in random bytes or in prose),
/// not an answer. A reply of only `{}` (or `{}{}`, or `[]` in a json fence) is one.
///
/// ```
/// use claij_validation::extract::is_cut_out_empty;
/// use serde_json::json;
///
/// assert!(is_cut_out_empty("noise {} more noise", &json!({})));
/// assert!(!is_cut_out_empty("```json\n[]\n```", &json!([])));
/// assert!(!is_cut_out_empty("the answer: {\"a\": 1}", &json!({"a": 1})));
/// ```
pub fn is_cut_out_empty(reply: &str, value: &Value) -> bool {
    let empty = match value {
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    };
    if !empty {
        return false;
    }
    let mut rest = reply.to_owned();
    for wrapper in ["```json", "```", "~~~json", "~~~", "<json>", "</json>"] {
        rest = rest.replace(wrapper, "");
    }
    rest.chars()
        .any(|c| !(c.is_whitespace() || matches!(c, '{' | '}' | '[' | ']' | ',' | '\u{feff}')))
}

/// Recover the JSON value of an LLM reply: [`repair`] the [`candidates`] in order and return the
/// first complete value (one that needed no [`FixKind::Truncation`]), else the first value; the whole
/// reply, tried last, only counts when nothing else gave a value. The fixes are the extraction fixes
/// followed by the repair fixes.
///
/// A reply that is valid JSON as a whole is returned unchanged, without fixes.
///
/// # Errors
///
/// [`RepairError::Empty`] when the reply is empty (or only reasoning), otherwise the error of the most
/// preferred candidate, positioned in the reply where the candidate is a piece of it.
pub fn recover(reply: &str) -> Result<Repaired, RepairError> {
    if let Ok(value) = serde_json::from_str::<Value>(reply) {
        return Ok(Repaired {
            value,
            fixes: Vec::new(),
        });
    }
    let (preferred, last_resort) = ranked(reply);
    let mut first_value = None;
    let mut first_error = None;
    for candidate in preferred {
        match attempt(reply, candidate) {
            Ok(recovered)
                if !recovered
                    .fixes
                    .iter()
                    .any(|fix| fix.kind == FixKind::Truncation) =>
            {
                return Ok(recovered);
            }
            Ok(recovered) => {
                first_value.get_or_insert(recovered);
            }
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    if let Some(recovered) = first_value {
        return Ok(recovered);
    }
    if let Some(candidate) = last_resort {
        match attempt(reply, candidate) {
            Ok(recovered) => return Ok(recovered),
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    Err(first_error.unwrap_or(RepairError::Empty))
}

/// The reply as plain text, for a schema that asks for a scalar: without byte order mark and reasoning
/// blocks, the content of the fence when the reply is one fenced block, without one pair of surrounding
/// quotes. The fixes say what was cut ([`FixKind::Extracted`]); `None` when nothing is left.
pub(crate) fn bare_text(reply: &str) -> Option<(String, Vec<Fix>)> {
    let bom = if reply.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    };
    let visible = scan::visible_segments(reply, bom);
    let hidden = whole_fixes(reply, &visible);
    let whole = whole_candidate(reply, &visible, &hidden)?;
    let mut fixes = whole.fixes;
    let mut text: &str = whole.text.trim();
    if text.starts_with("```") || text.starts_with("~~~") {
        let fences = scan::fences(text, 0..text.len());
        if let [fence] = fences.as_slice()
            && let (Some(content), Some(rest)) = (
                text.get(fence.content.clone()),
                text.get(fence.content.end..),
            )
            && rest.trim().bytes().all(|b| b == b'`' || b == b'~')
        {
            fixes.push(extracted(
                text.get(..fence.content.start).unwrap_or_default().trim(),
            ));
            text = content.trim();
        }
    }
    if let Some(inner) = unquoted(text) {
        fixes.push(extracted(text.get(..1).unwrap_or_default()));
        text = inner.trim();
    }
    (!text.is_empty()).then(|| (text.to_owned(), fixes))
}

/// The text inside one pair of matching quotes around all of `text`, when the inside holds no such quote.
fn unquoted(text: &str) -> Option<&str> {
    const PAIRS: &[(char, char)] = &[
        ('"', '"'),
        ('\'', '\''),
        ('`', '`'),
        ('\u{201c}', '\u{201d}'),
        ('\u{2018}', '\u{2019}'),
    ];
    let first = text.chars().next()?;
    let (open, close) = PAIRS.iter().find(|(open, _)| *open == first)?;
    let inner = text.strip_prefix(*open)?.strip_suffix(*close)?;
    (!inner.contains([*open, *close])).then_some(inner)
}

/// Repair one candidate: its value with the extraction fixes first, or the error placed in the reply.
fn attempt(reply: &str, candidate: Candidate<'_>) -> Result<Repaired, RepairError> {
    match repair(&candidate.text) {
        Ok(repaired) => {
            let mut fixes = candidate.fixes;
            fixes.extend(repaired.fixes);
            Ok(Repaired {
                value: repaired.value,
                fixes,
            })
        }
        Err(error) => Err(match candidate.text {
            Cow::Borrowed(_) => error.shifted(reply, candidate.span.start),
            Cow::Owned(_) => error,
        }),
    }
}

/// The candidates in order of preference, and apart the whole reply as a last resort (when it was
/// not already tried first because it starts like JSON).
fn ranked(reply: &str) -> (Vec<Candidate<'_>>, Option<Candidate<'_>>) {
    let bom = if reply.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    };
    if let Some(valid) = valid_whole(reply, bom) {
        return (valid, None);
    }
    let visible = scan::visible_segments(reply, bom);
    // What every candidate leaves out (byte order mark, reasoning), computed once.
    let hidden = whole_fixes(reply, &visible);
    let mut out = Vec::new();
    let mut whole =
        whole_candidate(reply, &visible, &hidden).filter(|candidate| !candidate.text.is_empty());
    if let Some(candidate) = whole.take_if(|candidate| scan::starts_like_json(&candidate.text)) {
        // `{"a": 1} Hope this helps!`: valid JSON followed by prose is that JSON, not a repair of all.
        if let Some(first) = visible.first()
            && let Some(span) = scan::leading_valid_value(reply, first.clone())
        {
            out.push(piece_candidate(reply, &hidden, first.clone(), span));
        }
        out.push(candidate);
    }
    // Texts already listed, so that a piece found twice (a fence that is also a bracketed value) is
    // tried once; a set rather than a scan of `out`, which would be quadratic in the pieces.
    let mut seen: HashSet<Cow<'_, str>> =
        out.iter().map(|candidate| candidate.text.clone()).collect();
    for (segment, piece) in pieces(reply, &visible) {
        if out.len() >= MAX_CANDIDATES {
            break;
        }
        let span = trimmed(reply, piece);
        let Some(text) = reply.get(span.clone()) else {
            continue;
        };
        if text.is_empty() || seen.contains(text) {
            continue;
        }
        let before = out.len();
        out.push(piece_candidate(reply, &hidden, segment, span));
        push_unescaped(&mut out);
        for candidate in out.get(before..).unwrap_or_default() {
            seen.insert(candidate.text.clone());
        }
    }
    out.truncate(MAX_CANDIDATES);
    let last_resort = whole.filter(|candidate| !seen.contains(candidate.text.as_ref()));
    (out, last_resort)
}

/// The reply as the only candidate (and its unescaped content) when it is valid JSON.
fn valid_whole(reply: &str, bom: usize) -> Option<Vec<Candidate<'_>>> {
    let body = trimmed(reply, bom..reply.len());
    let text = reply.get(body.clone())?;
    serde_json::from_str::<IgnoredAny>(text).ok()?;
    let fixes = if bom > 0 {
        vec![extracted("\u{feff}")]
    } else {
        Vec::new()
    };
    let mut out = vec![Candidate {
        text: Cow::Borrowed(text),
        span: body,
        fixes,
    }];
    push_unescaped(&mut out);
    Some(out)
}

/// The pieces of the visible segments that may hold JSON, with their segment, in order of preference:
/// `<json>` tags, fences (json-tagged first), then bracketed values in the prose (objects first).
fn pieces(reply: &str, visible: &[Range<usize>]) -> Vec<(Range<usize>, Range<usize>)> {
    let mut pieces = Vec::new();
    for segment in visible {
        for piece in scan::json_tags(reply, segment.clone()) {
            pieces.push((segment.clone(), piece));
        }
    }
    let mut fences = Vec::new();
    for segment in visible {
        fences.extend(
            scan::fences(reply, segment.clone())
                .into_iter()
                .map(|fence| (segment.clone(), fence)),
        );
    }
    fences.sort_by_key(|(_, fence)| !fence.json);
    pieces.extend(
        fences
            .into_iter()
            .map(|(segment, fence)| (segment, fence.content)),
    );
    let mut spans = Vec::new();
    for segment in visible {
        for span in scan::bracket_spans(reply, segment.clone()) {
            spans.push((segment.clone(), span));
        }
    }
    // Objects before arrays: structured output is an object far more often than prose holds one,
    // while `[1]` in prose is usually a citation.
    spans.sort_by_key(|(_, span)| reply.as_bytes().get(span.start) != Some(&b'{'));
    pieces.extend(spans);
    pieces
}

/// A candidate for `span`, cut out of `segment`: the fix shows the text cut around it.
fn piece_candidate<'a>(
    reply: &'a str,
    hidden: &[Fix],
    segment: Range<usize>,
    span: Range<usize>,
) -> Candidate<'a> {
    let mut fixes = hidden.to_vec();
    let before = reply
        .get(segment.start..span.start)
        .unwrap_or_default()
        .trim();
    let after = reply.get(span.end..segment.end).unwrap_or_default().trim();
    if !before.is_empty() || !after.is_empty() {
        let cut = if before.is_empty() { after } else { before };
        fixes.push(extracted(cut));
    }
    let text = reply.get(span.clone()).unwrap_or_default();
    Candidate {
        text: Cow::Borrowed(text),
        span,
        fixes,
    }
}

/// The reply without reasoning blocks and byte order mark: borrowed when that is one piece.
fn whole_candidate<'a>(
    reply: &'a str,
    visible: &[Range<usize>],
    hidden: &[Fix],
) -> Option<Candidate<'a>> {
    let first = visible.first()?.start;
    let last = visible.last()?.end;
    let fixes = hidden.to_vec();
    if let [only] = visible {
        let span = trimmed(reply, only.clone());
        let text = reply.get(span.clone())?;
        return Some(Candidate {
            text: Cow::Borrowed(text),
            span,
            fixes,
        });
    }
    let mut text = String::new();
    for segment in visible {
        let piece = reply.get(segment.clone()).unwrap_or_default().trim();
        if !piece.is_empty() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(piece);
        }
    }
    Some(Candidate {
        text: Cow::Owned(text),
        span: first..last,
        fixes,
    })
}

/// Fixes for what was left out of every candidate: a byte order mark, reasoning blocks.
fn whole_fixes(reply: &str, visible: &[Range<usize>]) -> Vec<Fix> {
    let mut fixes = Vec::new();
    let mut at = 0;
    for segment in visible
        .iter()
        .chain(std::iter::once(&(reply.len()..reply.len())))
    {
        if let Some(gap) = reply.get(at..segment.start)
            && !gap.trim().is_empty()
        {
            fixes.push(extracted(gap.trim()));
        }
        at = segment.end;
    }
    fixes
}

/// After a candidate that is a JSON string holding a JSON object or array, add that JSON unescaped.
fn push_unescaped(out: &mut Vec<Candidate<'_>>) {
    let Some(last) = out.last() else { return };
    if !last.text.starts_with('"') {
        return;
    }
    let Ok(inner) = serde_json::from_str::<String>(&last.text) else {
        return;
    };
    let content = inner.trim();
    if !(content.starts_with('{') || content.starts_with('[')) {
        return;
    }
    if serde_json::from_str::<IgnoredAny>(content).is_err() {
        return;
    }
    let mut fixes = last.fixes.clone();
    fixes.push(Fix {
        pointer: String::new(),
        kind: FixKind::Unescaped,
        before: crate::repair::excerpt(&last.text),
        after: crate::repair::excerpt(content),
    });
    let candidate = Candidate {
        text: Cow::Owned(content.to_owned()),
        span: last.span.clone(),
        fixes,
    };
    out.push(candidate);
}

/// `range` without surrounding whitespace.
fn trimmed(reply: &str, range: Range<usize>) -> Range<usize> {
    let Some(text) = reply.get(range.clone()) else {
        return range.start..range.start;
    };
    let start = range.start + (text.len() - text.trim_start().len());
    let end = range.end - (text.len() - text.trim_end().len());
    start..end.max(start)
}

fn extracted(cut: &str) -> Fix {
    Fix {
        pointer: String::new(),
        kind: FixKind::Extracted,
        before: crate::repair::excerpt(cut),
        after: String::new(),
    }
}
