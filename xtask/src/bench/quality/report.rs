//! What `cargo xtask bench quality` writes: the markdown table and the JSON report.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use super::{EXCERPT_CHARS, Outcome, Score, excerpt, ms_to_s};

/// `3/4 (75.0%)`; `0/0 (n/a)` for nothing.
pub(super) fn share(part: usize, whole: usize) -> String {
    if whole == 0 {
        format!("{part}/{whole} (n/a)")
    } else {
        format!(
            "{part}/{whole} ({:.1}%)",
            part as f64 * 100.0 / whole as f64
        )
    }
}

fn ratio(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// `text` safe in a markdown table cell.
pub(super) fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The report: the figures, the states seen, a row per category and per prompt.
pub(super) fn markdown(score: &Score, outcomes: &[Outcome], claij: &str) -> String {
    let mut md = format!(
        "## Content quality of the embedded model (`claij ask --llm local --json`, {} prompts)\n\n",
        score.prompts
    );
    let _ = writeln!(md, "claij: `{claij}`\n");
    md.push_str("| measure | value |\n|---|---|\n");
    let n = score.prompts;
    let per_prompt = |total: u64| if n == 0 { 0.0 } else { total as f64 / n as f64 };
    let rows = [
        (
            "content right (valid and every check passes)",
            share(score.right, n),
        ),
        ("valid", share(score.valid, n)),
        (
            "string values ending in `,` (all strings of the valid replies)",
            share(score.comma_strings, score.strings),
        ),
        (
            "`state` in {answered, needs_clarification, cannot_answer} (valid replies with a `state`)",
            share(score.sensible_states, score.with_state),
        ),
        ("replies flagged truncated", share(score.truncated, n)),
        (
            "attempts per prompt (mean)",
            format!("{:.2}", per_prompt(score.attempts)),
        ),
        (
            "time per prompt (mean, whole process)",
            format!("{:.1} s", per_prompt(score.wall_ms) / 1000.0),
        ),
        (
            "tokens per prompt (mean, prompt + output, all attempts)",
            format!(
                "{:.0} + {:.0}",
                per_prompt(score.input_tokens),
                per_prompt(score.output_tokens)
            ),
        ),
        (
            "output tokens per second (claij's turn time)",
            score
                .tokens_per_second()
                .map_or_else(|| "n/a".to_owned(), |t| format!("{t:.1}")),
        ),
        (
            "prompt + output tokens per second (claij's turn time)",
            score
                .all_tokens_per_second()
                .map_or_else(|| "n/a".to_owned(), |t| format!("{t:.1}")),
        ),
    ];
    for (measure, value) in rows {
        let _ = writeln!(md, "| {measure} | {value} |");
    }
    let states: Vec<String> = score
        .states
        .iter()
        .map(|(state, count)| format!("`{}` ×{count}", cell(&excerpt(state, 40))))
        .collect();
    let _ = writeln!(
        md,
        "\ndistinct `state` values: {}\n",
        if states.is_empty() {
            "none".to_owned()
        } else {
            states.join(", ")
        }
    );
    md.push_str("| category | prompts | right | valid |\n|---|---|---|---|\n");
    for (category, [prompts, right, valid]) in &score.categories {
        let _ = writeln!(
            md,
            "| {category} | {prompts} | {} | {} |",
            share(*right, *prompts),
            share(*valid, *prompts)
        );
    }
    md.push_str("\n| prompt | verdict | right | attempts | time | failed checks | reply |\n|---|---|---|---|---|---|---|\n");
    for o in outcomes {
        let reply = o
            .value
            .as_ref()
            .map(|v| format!("`{}`", excerpt(&v.to_string(), EXCERPT_CHARS)))
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "| {} | {}{} | {} | {} | {:.1} s | {} | {} |",
            o.id,
            cell(&excerpt(&o.verdict_text(), 60)),
            if o.truncated { ", truncated" } else { "" },
            if o.is_right() { "yes" } else { "no" },
            o.attempts,
            ms_to_s(o.wall_ms),
            cell(&o.failed_checks.join("; ")),
            cell(&reply),
        );
    }
    md
}

/// The same figures and every outcome, for comparing runs by program.
pub(super) fn report_json(score: &Score, outcomes: &[Outcome], claij: &str) -> Value {
    let outcomes: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            json!({
                "id": o.id,
                "category": o.category,
                "verdict": o.verdict_text(),
                "right": o.is_right(),
                "failed_checks": o.failed_checks,
                "truncated": o.truncated,
                "attempts": o.attempts,
                "input_tokens": o.input_tokens,
                "output_tokens": o.output_tokens,
                "elapsed_ms": o.elapsed_ms,
                "wall_ms": o.wall_ms,
                "value": o.value,
            })
        })
        .collect();
    let categories: Map<String, Value> = score
        .categories
        .iter()
        .map(|(name, [prompts, right, valid])| {
            (
                name.clone(),
                json!({"prompts": prompts, "right": right, "valid": valid}),
            )
        })
        .collect();
    json!({
        "claij": claij,
        "prompts": score.prompts,
        "right": score.right,
        "valid": score.valid,
        "right_share": ratio(score.right, score.prompts),
        "valid_share": ratio(score.valid, score.prompts),
        "strings": score.strings,
        "comma_strings": score.comma_strings,
        "comma_share": ratio(score.comma_strings, score.strings),
        "with_state": score.with_state,
        "sensible_states": score.sensible_states,
        "sensible_state_share": ratio(score.sensible_states, score.with_state),
        "states": score.states,
        "truncated": score.truncated,
        "truncated_share": ratio(score.truncated, score.prompts),
        "attempts": score.attempts,
        "input_tokens": score.input_tokens,
        "output_tokens": score.output_tokens,
        "elapsed_ms": score.elapsed_ms,
        "wall_ms": score.wall_ms,
        "tokens_per_second": score.tokens_per_second(),
        "all_tokens_per_second": score.all_tokens_per_second(),
        "categories": categories,
        "outcomes": outcomes,
    })
}
