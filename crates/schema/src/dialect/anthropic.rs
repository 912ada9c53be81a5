//! Anthropic structured outputs (`output_config.format` json_schema, strict tools).

use serde_json::Value;

use super::openai::{Rules, compile_strict};
use super::{Cx, Result};

/// The "JSON Schema limitations" of Anthropic's structured-outputs guide: no numeric bounds, no string
/// lengths, `minItems` only 0 or 1, no `maxItems`, no recursion, a restricted regex dialect.
const ANTHROPIC: Rules = Rules {
    all_required: false,
    root_object: false,
    forbid_recursion: true,
    rename_definitions: false,
    numeric: &[],
    formats: &[
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "uri",
        "ipv4",
        "ipv6",
        "uuid",
    ],
    keep_default: true,
    min_items_cap: Some(1),
    pattern_ok: simple_pattern,
};

pub(super) fn compile(cx: &mut Cx<'_>) -> Result<Value> {
    compile_strict(cx, &ANTHROPIC)
}

/// Largest `{n,m}` bound kept; the guide rejects "complex quantifiers with large ranges" without a number.
const MAX_REPEAT: u64 = 100;

/// Whether a regex avoids what Anthropic rejects: backreferences, lookaround, word boundaries and large
/// `{n,m}` repetitions.
pub(super) fn simple_pattern(pattern: &str) -> bool {
    let bytes = pattern.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                if matches!(bytes.get(i + 1), Some(b'1'..=b'9' | b'b' | b'B' | b'k')) {
                    return false;
                }
                i += 2;
                continue;
            }
            b'(' if pattern[i..].starts_with("(?=")
                || pattern[i..].starts_with("(?!")
                || pattern[i..].starts_with("(?<=")
                || pattern[i..].starts_with("(?<!") =>
            {
                return false;
            }
            b'{' => {
                let end = pattern[i..].find('}').map(|e| i + e);
                if let Some(end) = end {
                    let bounds = &pattern[i + 1..end];
                    let large = bounds
                        .split(',')
                        .filter_map(|b| b.trim().parse::<u64>().ok())
                        .any(|b| b > MAX_REPEAT);
                    if large {
                        return false;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    true
}
