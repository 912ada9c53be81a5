//! Scanners over a reply: reasoning blocks, `<json>` tags, code fences and bracketed values in prose.
//! All offsets are byte offsets into the reply.

use std::ops::Range;

/// A fenced code block.
pub(super) struct Fence {
    /// Where its content is.
    pub(super) content: Range<usize>,
    /// Whether its language tag says JSON.
    pub(super) json: bool,
}

/// Opening reasoning tags, then closing ones.
const REASONING_OPEN: &[&str] = &["<think>", "<thinking>"];
const REASONING_CLOSE: &[&str] = &["</think>", "</thinking>"];

/// The parts of `reply` (from `start`) outside reasoning blocks. An unclosed block runs to the end; a
/// closing tag without an opening one ends reasoning that started at the beginning of the reply.
pub(super) fn visible_segments(reply: &str, start: usize) -> Vec<Range<usize>> {
    let tags = reasoning_tags(reply, start);
    let mut tags = tags.iter();
    let mut segments = Vec::new();
    let mut at = start;
    let mut first = tags.clone();
    if let Some(&(close_at, len, false)) = first.next() {
        // `...reasoning</think> {"a": 1}`: some providers drop the opening tag.
        at = close_at + len;
        tags = first;
    }
    loop {
        let Some(&(open_at, open_len, _)) = tags.find(|&&(pos, _, open)| open && pos >= at) else {
            segments.push(at..reply.len());
            break;
        };
        segments.push(at..open_at);
        match tags.find(|&&(pos, _, open)| !open && pos >= open_at + open_len) {
            Some(&(close_at, close_len, _)) => at = close_at + close_len,
            None => break,
        }
    }
    segments.retain(|segment| {
        reply
            .get(segment.clone())
            .is_some_and(|text| !text.trim().is_empty())
    });
    segments
}

/// Reasoning tags from `start`, in order: (offset, length, whether it opens).
fn reasoning_tags(reply: &str, start: usize) -> Vec<(usize, usize, bool)> {
    let bytes = reply.as_bytes();
    let mut tags = Vec::new();
    let mut at = start;
    while let Some(offset) = bytes
        .get(at..)
        .and_then(|rest| rest.iter().position(|&b| b == b'<'))
    {
        let found = at + offset;
        let matches = |tag: &str| {
            bytes
                .get(found..found + tag.len())
                .is_some_and(|window| window.eq_ignore_ascii_case(tag.as_bytes()))
        };
        if let Some(tag) = REASONING_OPEN.iter().find(|tag| matches(tag)) {
            tags.push((found, tag.len(), true));
        } else if let Some(tag) = REASONING_CLOSE.iter().find(|tag| matches(tag)) {
            tags.push((found, tag.len(), false));
        }
        at = found + 1;
    }
    tags
}

/// Whether `text` starts like a JSON document: `{`, `[` or `"`, after whitespace and comments.
pub(super) fn starts_like_json(text: &str) -> bool {
    let mut rest = text.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("/*") {
            rest = after
                .find("*/")
                .map_or("", |end| after.get(end + 2..).unwrap_or_default())
                .trim_start();
        } else if let Some(after) = rest.strip_prefix("//") {
            rest = after
                .find('\n')
                .map_or("", |end| after.get(end..).unwrap_or_default())
                .trim_start();
        } else {
            break;
        }
    }
    rest.starts_with(['{', '[', '"'])
}

/// Contents of `<json>...</json>` tags in `segment` (an unclosed tag runs to the segment's end).
pub(super) fn json_tags(reply: &str, segment: Range<usize>) -> Vec<Range<usize>> {
    let mut pieces = Vec::new();
    let mut at = segment.start;
    while let Some(open) = find_ci(reply, at..segment.end, "<json>") {
        let start = open + "<json>".len();
        let end = find_ci(reply, start..segment.end, "</json>").unwrap_or(segment.end);
        pieces.push(start..end);
        at = end;
        if at >= segment.end {
            break;
        }
    }
    pieces
}

/// Fenced code blocks (```` ``` ```` or `~~~`, three or more) in `segment`, in order.
pub(super) fn fences(reply: &str, segment: Range<usize>) -> Vec<Fence> {
    let bytes = reply.as_bytes();
    let mut out = Vec::new();
    let mut at = segment.start;
    while let Some((open, ticks, mark)) = next_fence_run(bytes, at, segment.end) {
        let after_run = open + ticks;
        let opens = open == segment.start
            || bytes
                .get(open - 1)
                .is_some_and(|&b| b.is_ascii_whitespace() || b == b':' || b == b'>');
        if !opens {
            at = after_run;
            continue;
        }
        let mut start = after_run;
        let mut tag = start;
        while bytes
            .get(tag)
            .is_some_and(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'.' | b'-'))
        {
            tag += 1;
        }
        let language = reply.get(start..tag).unwrap_or_default();
        if !language.is_empty() {
            start = tag;
        }
        let json = language.to_ascii_lowercase().starts_with("json");
        let (end, resume) = match closing_fence(bytes, start, segment.end, mark) {
            Some((close, len)) => (close, close + len),
            None => (segment.end, segment.end),
        };
        out.push(Fence {
            content: start..end,
            json,
        });
        at = resume;
    }
    out
}

/// The next run of three or more `mark` (back tick or tilde) in `from..end`: (offset, length, mark).
fn next_fence_run(bytes: &[u8], from: usize, end: usize) -> Option<(usize, usize, u8)> {
    let mut i = from;
    while i < end {
        let b = *bytes.get(i)?;
        if b == b'`' || b == b'~' {
            let len = run_len(bytes, i, end, b);
            if len >= 3 {
                return Some((i, len, b));
            }
            i += len;
        } else {
            i += 1;
        }
    }
    None
}

fn run_len(bytes: &[u8], at: usize, end: usize, mark: u8) -> usize {
    bytes
        .get(at..end)
        .map_or(0, |rest| rest.iter().take_while(|&&b| b == mark).count())
}

/// The closing fence for content starting at `from`: preferably a run at the start of a line, else
/// the first run (inline fences like ```` ```{"a": 1}``` ````).
fn closing_fence(bytes: &[u8], from: usize, end: usize, mark: u8) -> Option<(usize, usize)> {
    let mut first = None;
    let mut at = from;
    // Look a few runs ahead for one at the start of a line, not through the whole reply (many inline
    // fences would make that quadratic).
    let mut budget = 16;
    while let Some((run, len, found)) = next_fence_run(bytes, at, end) {
        budget -= 1;
        if budget == 0 {
            break;
        }
        if found == mark {
            let mut k = run;
            while k > from && matches!(bytes.get(k - 1), Some(b' ' | b'\t')) {
                k -= 1;
            }
            if k > from && bytes.get(k - 1) == Some(&b'\n') {
                return Some((run, len));
            }
            first.get_or_insert((run, len));
        }
        at = run + len;
    }
    first
}

/// Bracketed values (`{...}` or `[...]`, balanced, strings respected) in the prose of `segment`, in
/// order. Brackets that do not open JSON-looking content (`[1]` citations aside) are skipped, and the
/// scan looks inside them instead.
pub(super) fn bracket_spans(reply: &str, segment: Range<usize>) -> Vec<Range<usize>> {
    let bytes = reply.as_bytes();
    let mut out = Vec::new();
    let mut i = segment.start;
    while i < segment.end {
        let Some(&b) = bytes.get(i) else { break };
        if (b == b'{' || b == b'[') && opens_json(reply, i) {
            let end = balanced_end(bytes, i, segment.end);
            out.push(i..end);
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// Whether the bracket at `at` opens something that looks like JSON rather than prose.
fn opens_json(reply: &str, at: usize) -> bool {
    let Some(rest) = reply.get(at + 1..) else {
        return false;
    };
    let open = reply.as_bytes().get(at).copied();
    let inner = rest.trim_start();
    let Some(first) = inner.chars().next() else {
        return true;
    };
    if matches!(first, '"' | '\'' | '\u{201c}' | '\u{2018}' | '{' | '[')
        || (first == '\\' && inner.get(1..).is_some_and(|after| after.starts_with('"')))
    {
        return true;
    }
    if open == Some(b'{') {
        if first == '}' {
            return true;
        }
        // `{name: ...}`: an unquoted key.
        let word = inner
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(inner.len());
        return word > 0
            && inner
                .get(word..)
                .is_some_and(|after| after.trim_start().starts_with(':'));
    }
    if first == ']' || first == '-' || first == '.' || first.is_ascii_digit() {
        return true;
    }
    ["true", "false", "null", "True", "False", "None"]
        .iter()
        .any(|keyword| {
            inner
                .strip_prefix(keyword)
                .is_some_and(|after| after.trim_start().starts_with([',', ']']))
        })
}

/// The bracketed value that opens `segment`, when it is valid JSON and prose (not another value)
/// follows it.
pub(super) fn leading_valid_value(reply: &str, segment: Range<usize>) -> Option<Range<usize>> {
    let text = reply.get(segment.clone())?;
    let start = segment.start + (text.len() - text.trim_start().len());
    if !matches!(reply.as_bytes().get(start), Some(b'{' | b'[')) {
        return None;
    }
    let end = balanced_end(reply.as_bytes(), start, segment.end);
    let rest = reply.get(end..segment.end)?.trim_start();
    if rest.is_empty() || rest.starts_with(['{', '[', ',', '/', '#']) {
        return None;
    }
    serde_json::from_str::<serde::de::IgnoredAny>(reply.get(start..end)?).ok()?;
    Some(start..end)
}

/// End (exclusive) of the bracketed value opening at `open`: after its matching closer, or `end`.
fn balanced_end(bytes: &[u8], open: usize, end: usize) -> usize {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut i = open;
    while i < end {
        let Some(&b) = bytes.get(i) else { break };
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                // `{\"a\": 1}`: JSON escaped in a string; its quotes are not strings.
                b'\\' => i += 1,
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return i + 1;
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
    end
}

/// First offset of `needle` (ASCII, any case) in `reply[within]`.
fn find_ci(reply: &str, within: Range<usize>, needle: &str) -> Option<usize> {
    let bytes = reply.as_bytes().get(..within.end)?;
    let needle = needle.as_bytes();
    let first = *needle.first()?;
    let mut at = within.start;
    while let Some(offset) = bytes
        .get(at..)?
        .iter()
        .position(|&b| b.eq_ignore_ascii_case(&first))
    {
        let found = at + offset;
        if bytes
            .get(found..found + needle.len())
            .is_some_and(|window| window.eq_ignore_ascii_case(needle))
        {
            return Some(found);
        }
        at = found + 1;
    }
    None
}
