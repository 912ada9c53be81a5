//! Snapshot tests of the retry prompt: prompts are product, every change to them is reviewed.

use serde_json::json;

use super::*;
use crate::Validator;

fn violations(schema: serde_json::Value, instance: serde_json::Value) -> Vec<Violation> {
    Validator::new(&schema)
        .unwrap()
        .validate(&instance)
        .unwrap_err()
}

#[test]
fn invalid_reply() {
    let v = violations(claij_schema::base(), json!({"answer": 42, "mood": "ok"}));
    insta::assert_snapshot!(RetryPrompt::default().render(
        "What is the capital of France?",
        "{\"answer\": 42, \"mood\": \"ok\"}",
        Failure::Invalid(&v),
    ));
}

#[test]
fn unknown_union_value_and_nested_errors() {
    let schema = json!({
        "type": "object", "required": ["calls"],
        "properties": {"calls": {"type": "array", "items": {"oneOf": [
            {"type": "object", "required": ["tool", "q"], "properties": {"tool": {"const": "search"}, "q": {"type": "string"}}},
            {"type": "object", "required": ["tool", "n"], "properties": {"tool": {"const": "count"}, "n": {"type": "integer", "minimum": 0}}}
        ]}}}
    });
    let v = violations(
        schema,
        json!({"calls": [{"tool": "serch", "q": "x"}, {"tool": "count", "n": -1}, {"tool": "count", "n": -1}]}),
    );
    insta::assert_snapshot!(RetryPrompt::default().render(
        "Find x.",
        "(reply)",
        Failure::Invalid(&v)
    ));
}

#[test]
fn no_json_and_truncation_bounds() {
    let long_reply = "I think ".repeat(500);
    insta::assert_snapshot!(
        RetryPrompt {
            max_response_chars: 60,
            ..RetryPrompt::default()
        }
        .render(
            "Say hi.",
            &long_reply,
            Failure::NoJson("the reply contains no JSON value")
        )
    );
}

#[test]
fn truncated_reply_and_violation_bound() {
    let v = violations(
        json!({"type": "array", "items": {"type": "integer"}}),
        json!(["a", "b", "c", "d"]),
    );
    insta::assert_snapshot!(
        RetryPrompt {
            max_violations: 2,
            ..RetryPrompt::default()
        }
        .render(
            "List numbers.",
            "[\"a\", \"b\", \"c\", \"d\"",
            Failure::Truncated(&v)
        )
    );
}

#[test]
fn reply_over_the_size_limit() {
    let huge = "{}".repeat(3_000);
    insta::assert_snapshot!(
        RetryPrompt {
            max_response_chars: 40,
            ..RetryPrompt::default()
        }
        .render(
            "List the planets.",
            &huge,
            Failure::TooLarge {
                bytes: huge.len(),
                limit: 4096
            }
        )
    );
}

/// The correction of a conversation retry: what was wrong and what to fix, with neither the request
/// nor the reply quoted (the conversation holds both).
#[test]
fn corrections() {
    let v = violations(claij_schema::base(), json!({"answer": 42, "mood": "ok"}));
    let prompt = RetryPrompt::default();
    let corrections = [
        prompt.correction(Failure::Invalid(&v)),
        prompt.correction(Failure::NoJson("the reply contains no JSON value")),
        prompt.correction(Failure::Truncated(&v)),
        prompt.correction(Failure::TooLarge {
            bytes: 6000,
            limit: 4096,
        }),
    ];
    insta::assert_snapshot!(corrections.join("\n\n----\n\n"));
}
