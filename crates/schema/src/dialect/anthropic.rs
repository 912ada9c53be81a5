//! Anthropic structured outputs (`output_config.format` json_schema, strict tools).

use serde_json::Value;

use super::openai::{Rules, compile_strict};
use super::{Cx, Result, regex_features};

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
    let features = regex_features(pattern);
    !features.lookaround
        && !features.backreference
        && !features.word_boundary
        && features.max_repeat <= MAX_REPEAT
}
