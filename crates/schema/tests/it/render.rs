//! Prompt rendering: snapshots of the compact form, and its token budget against minified JSON.

use claij_schema::render::{to_compact, to_json};
use serde_json::Value;

/// A schema of the repository's bench fixtures (`fixtures/bench`).
fn bench(name: &str) -> Value {
    crate::fixture::json(&format!("fixtures/bench/{name}"))
}

fn tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len()
}

/// The share of the minified JSON's o200k tokens the compact form may take: a quarter on the 40-tool bench
/// schema (issue 32), half on the small one (three bare strings leave little to save).
#[test]
#[allow(clippy::print_stdout)] // the figures are worth seeing with --nocapture
fn compact_is_at_most_a_quarter_of_minified_json_on_big_and_half_on_small() {
    for (name, percent) in [("small.json", 50), ("big.json", 25)] {
        let schema = bench(name);
        let minified = tokens(&to_json(&schema));
        let compact = tokens(&to_compact(&schema));
        println!(
            "{name}: minified {minified} tokens, compact {compact} tokens ({:.1}%)",
            100.0 * compact as f64 / minified as f64
        );
        assert!(
            compact * 100 <= minified * percent,
            "{name}: compact {compact} > {percent}% of minified {minified}"
        );
    }
}

#[test]
fn big_minified_matches_the_published_figure() {
    assert_eq!(tokens(&to_json(&bench("big.json"))), 14_489);
}

#[test]
fn snapshot_small() {
    insta::assert_snapshot!(to_compact(&bench("small.json")));
}

#[test]
fn snapshot_big() {
    insta::assert_snapshot!(to_compact(&bench("big.json")));
}

/// Hand-written schemas for what the benchmark schemas lack: draft-07 `definitions`, recursion, tuples,
/// maps, keys that need quoting, exclusive bounds, multi-line descriptions, keywords without a compact form.
#[test]
fn snapshot_hand_written() {
    let schemas = [
        (
            "draft07-shapes",
            serde_json::json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "description": "A drawing.\nShapes are drawn in order.",
                "properties": {
                    "shapes": {"type": "array", "items": {"oneOf": [{"$ref": "#/definitions/Circle"}, {"$ref": "#/definitions/Square"}]}, "minItems": 1},
                    "label": {"type": ["string", "null"], "minLength": 1, "maxLength": 40},
                    "meta": {"type": "object", "additionalProperties": {"type": "string"}},
                    "origin": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}]},
                    "content-type": {"const": "image/svg+xml"},
                    "code": {"type": "string", "not": {"const": "xx"}},
                },
                "required": ["shapes", "content-type"],
                "definitions": {
                    "Circle": {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "exclusiveMinimum": 0}}, "required": ["kind", "r"]},
                    "Square": {"allOf": [{"$ref": "#/definitions/Base"}, {"properties": {"kind": {"const": "square"}}, "required": ["kind"]}]},
                    "Base": {"type": "object", "properties": {"side": {"type": "integer", "multipleOf": 2}}, "required": ["side"]},
                },
            }),
        ),
        (
            "tree",
            serde_json::json!({
                "type": "object",
                "properties": {"root": {"$ref": "#/$defs/Node"}},
                "required": ["root"],
                "$defs": {"Node": {"type": "object", "properties": {
                    "value": {"type": "string", "description": "Label shown for the node"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}, "maxItems": 8},
                }, "required": ["value"]}},
            }),
        ),
    ];
    for (name, schema) in schemas {
        insta::assert_snapshot!(name, to_compact(&schema));
    }
}
