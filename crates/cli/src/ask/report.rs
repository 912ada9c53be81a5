//! What `claij ask` prints: the value on stdout, a line per tool or MCP result the turn ran (and for
//! the result of its `eval` code), a line per attempt and a total on stderr; or with `--json` one
//! report on stdout.

use std::io::Write as _;
use std::time::Duration;

use anyhow::Result;
use claij_backends::Usage;
use claij_interceptors::builtin::eval::EvalResult;
use claij_interceptors::{Answer, Attempt, Exhausted, ToolOrigin, ToolResult, Verdict};
use serde_json::{Value, json};

/// A line about how the command runs (which backend was chosen).
pub(super) fn notice(text: &str) -> Result<()> {
    writeln!(std::io::stderr(), "{text}")?;
    Ok(())
}

/// The longest line a tool result gets on stderr, in characters.
const RESULT_LINE: usize = 200;

/// What a turn ran after its reply, for the user to see on that turn (the model sees it on the
/// next).
pub(super) struct Ran<'a> {
    /// The tool and MCP calls, with their results.
    pub calls: Vec<&'a ToolResult>,
    /// With the `eval` interceptor: the result of the reply's code (`None` when it had none).
    pub eval: Option<Option<&'a EvalResult>>,
}

/// How a valid answer is printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// The value, pretty.
    Pretty,
    /// The `--json` report, one line.
    Report,
    /// `{"value": VALUE}` on one line: the last of the JSON lines `--stream` writes off a terminal,
    /// after the `{"partial": VALUE}` ones.
    Final,
}

/// A valid answer: the value on stdout as `form` says, the tool results and the `eval` result the
/// turn ran, the attempts and, when the reply was cut, a warning on stderr; or the `--json` report
/// (with `tool_results`, `eval` when the interceptor runs, and `truncated`).
pub(super) fn answer(answer: &Answer, ran: &Ran<'_>, elapsed: Duration, form: Form) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let cut = answer.attempts.last().and_then(truncation);
    match form {
        Form::Report => {
            let mut report = to_json(Some(&answer.value), &answer.attempts, answer.usage, elapsed);
            if let Value::Object(map) = &mut report {
                map.insert("tool_results".to_owned(), tool_results_json(&ran.calls));
                if let Some(eval) = ran.eval {
                    map.insert("eval".to_owned(), eval.map_or(Value::Null, eval_json));
                }
                map.insert("truncated".to_owned(), Value::Bool(cut.is_some()));
            }
            writeln!(out, "{report}")?;
            return Ok(());
        }
        Form::Final => writeln!(out, "{}", json!({"value": answer.value}))?,
        Form::Pretty => writeln!(out, "{}", serde_json::to_string_pretty(&answer.value)?)?,
    }
    out.flush()?;
    stderr_lines(ran, answer, elapsed)?;
    if let Some(cut) = cut {
        writeln!(std::io::stderr().lock(), "{}", cut_warning(&cut))?;
    }
    Ok(())
}

/// The warning after a valid answer whose reply was cut: valid against the schema, but maybe not
/// all the model meant to say (a list cut short, a string ended early).
pub(crate) fn cut_warning(truncation: &str) -> String {
    format!("warning: {truncation}; the value is valid but may be incomplete")
}

/// What cut the attempt's reply short, with the flag or key that lifts the bound: `the reply was
/// cut at max_tokens (512): --max-tokens raises it`, then each string cut at the bound the schema
/// dialect added (`give the field a maxLength` says how to lift it), joined by `; `.
pub(crate) fn truncation(attempt: &Attempt) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    if attempt.is_truncated() {
        parts.push(match attempt.request.max_tokens {
            Some(n) => format!("the reply was cut at max_tokens ({n}): --max-tokens raises it"),
            None => "the reply was cut at the provider's output token limit: --max-tokens sets one"
                .to_owned(),
        });
    }
    parts.extend(attempt.cut_strings.iter().map(ToString::to_string));
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// What cut the replies of a call that found no valid one: the last reply's [`truncation`], else
/// how many replies the token limit cut (`2 of 4 replies were cut at max_tokens (512): ...`).
pub(crate) fn truncation_of(attempts: &[Attempt]) -> Option<String> {
    if let Some(last) = attempts.last().and_then(truncation) {
        return Some(last);
    }
    let cut: Vec<&Attempt> = attempts.iter().filter(|a| a.is_truncated()).collect();
    let first = cut.first()?;
    let limit = match first.request.max_tokens {
        Some(n) => format!("max_tokens ({n}): --max-tokens raises it"),
        None => "the provider's output token limit: --max-tokens sets one".to_owned(),
    };
    Some(format!(
        "{} of {} replies were cut at {limit}",
        cut.len(),
        attempts.len()
    ))
}

/// A standard response for people (a terminal): the rendered answer and sources on stdout, the
/// tool results and the attempts on stderr.
pub(super) fn rendered(answer: &Answer, ran: &Ran<'_>, elapsed: Duration) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{}",
        claij_interceptors::builtin::citations::render_for_people(&answer.value).trim_end()
    )?;
    out.flush()?;
    stderr_lines(ran, answer, elapsed)
}

/// The tool results and the `eval` result, then the attempts and the total, on stderr.
fn stderr_lines(ran: &Ran<'_>, answer: &Answer, elapsed: Duration) -> Result<()> {
    let mut err = std::io::stderr().lock();
    for result in &ran.calls {
        writeln!(err, "{}", tool_result_line(result))?;
    }
    if let Some(Some(result)) = ran.eval {
        writeln!(err, "{}", eval_line(result))?;
    }
    for line in attempt_lines(&answer.attempts, answer.usage, elapsed) {
        writeln!(err, "{line}")?;
    }
    Ok(())
}

/// One line for a tool or MCP call the turn ran: `tool now {}: ok: "2026-…"` (`mcp` for an MCP
/// server's tool), at most [`RESULT_LINE`] characters, cut with `…`.
pub(super) fn tool_result_line(result: &ToolResult) -> String {
    let kind = match &result.origin {
        ToolOrigin::Rust => "tool",
        ToolOrigin::Mcp { .. } => "mcp",
        _ => "call",
    };
    let outcome = match &result.output {
        Ok(value) => format!("ok: {value}"),
        Err(message) => format!("error: {message}"),
    };
    let line = crate::exit::one_line(&format!(
        "{kind} {} {}: {outcome}",
        result.name, result.args
    ));
    if line.chars().count() <= RESULT_LINE {
        return line;
    }
    let mut cut: String = line.chars().take(RESULT_LINE - 1).collect();
    cut.push('…');
    cut
}

/// One line for the result of a reply's `eval` code: `eval "6 * 7": ok: 42`, then `, printed:`
/// and what it printed as a JSON string when it printed something; at most [`RESULT_LINE`]
/// characters, cut with `…`.
pub(super) fn eval_line(result: &EvalResult) -> String {
    let outcome = match &result.outcome {
        Ok(value) => format!("ok: {value}"),
        Err(e) => format!("error: {e}"),
    };
    let printed = if result.output.is_empty() {
        String::new()
    } else {
        format!(", printed: {}", Value::String(result.output.clone()))
    };
    let line = crate::exit::one_line(&format!(
        "eval {}: {outcome}{printed}",
        Value::String(result.code.clone())
    ));
    if line.chars().count() <= RESULT_LINE {
        return line;
    }
    let mut cut: String = line.chars().take(RESULT_LINE - 1).collect();
    cut.push('…');
    cut
}

/// The `--json` report's `eval`: `{code, value, printed}` when the code gave a value, `{code,
/// error, printed}` when it failed, whole.
fn eval_json(result: &EvalResult) -> Value {
    let mut one = json!({"code": result.code, "printed": result.output});
    if let Value::Object(map) = &mut one {
        match &result.outcome {
            Ok(value) => map.insert("value".to_owned(), value.clone()),
            Err(e) => map.insert("error".to_owned(), Value::String(e.to_string())),
        };
    }
    one
}

/// The `--json` report's `tool_results`: `{name, args, origin, output}` for a call that succeeded,
/// `{name, args, origin, error}` for one that failed, whole.
pub(super) fn tool_results_json(ran: &[&ToolResult]) -> Value {
    ran.iter()
        .map(|result| {
            let mut one = json!({
                "name": result.name,
                "args": result.args,
                "origin": result.origin,
            });
            if let Value::Object(map) = &mut one {
                match &result.output {
                    Ok(value) => map.insert("output".to_owned(), value.clone()),
                    Err(message) => map.insert("error".to_owned(), Value::String(message.clone())),
                };
            }
            one
        })
        .collect()
}

/// Retries exhausted: the attempts (or the `--json` report, with a null value), then the last reply's
/// violations on stderr, one a line.
pub(super) fn exhausted(exhausted: &Exhausted, elapsed: Duration, json: bool) -> Result<()> {
    let usage = exhausted.attempts.iter().map(|a| a.usage).sum();
    let mut err = std::io::stderr().lock();
    if json {
        let mut report = to_json(None, &exhausted.attempts, usage, elapsed);
        if let Value::Object(map) = &mut report {
            // No reply was valid: no call ran.
            map.insert("tool_results".to_owned(), json!([]));
        }
        writeln!(std::io::stdout().lock(), "{report}")?;
    } else {
        for line in attempt_lines(&exhausted.attempts, usage, elapsed) {
            writeln!(err, "{line}")?;
        }
    }
    // The failed model call's (an agent run's earlier steps are among the attempt lines).
    let n = exhausted.last_call().len();
    // A reply cut at the token limit is the likely cause: name it first.
    let cut = truncation_of(exhausted.last_call())
        .map(|t| format!(" ({t})"))
        .unwrap_or_default();
    match exhausted.no_json() {
        Some(reason) => writeln!(
            err,
            "no valid reply after {n} {}{cut}: the last held no JSON: {}",
            plural(n, "attempt"),
            crate::exit::one_line(reason)
        )?,
        None => {
            writeln!(
                err,
                "no valid reply after {n} {}{cut}; the last one's violations:",
                plural(n, "attempt")
            )?;
            for v in exhausted.violations() {
                writeln!(err, "  {}", crate::exit::one_line(&v.to_string()))?;
            }
        }
    }
    Ok(())
}

/// An agent run's budget that ran out: which bound (`max_steps`, `max_tokens`, `max_cost_usd`),
/// the bound, what was used, and the estimated cost of the call it did not make.
pub(crate) struct Over {
    pub budget: String,
    pub limit: f64,
    pub used: f64,
    pub estimate: Option<f64>,
}

/// An agent run stopped by its budget: the attempts and a line saying which bound on stderr, or
/// the `--json` report with a null value and `budget_exceeded`.
pub(super) fn over_budget(
    over: &Over,
    attempts: &[Attempt],
    elapsed: Duration,
    json: bool,
) -> Result<()> {
    let usage = attempts.iter().map(|a| a.usage).sum();
    if json {
        let mut report = to_json(None, attempts, usage, elapsed);
        if let Value::Object(map) = &mut report {
            map.insert("tool_results".to_owned(), json!([]));
            map.insert("budget_exceeded".to_owned(), over_json(over));
        }
        writeln!(std::io::stdout().lock(), "{report}")?;
        return Ok(());
    }
    let mut err = std::io::stderr().lock();
    for line in attempt_lines(attempts, usage, elapsed) {
        writeln!(err, "{line}")?;
    }
    writeln!(err, "{}", over_line(over))?;
    Ok(())
}

/// The `--json` report's `budget_exceeded`: `{budget, limit, used}`, and `next_call_estimate` when
/// the cost bound stopped the run before a call.
fn over_json(over: &Over) -> Value {
    let mut json = json!({"budget": over.budget, "limit": over.limit, "used": over.used});
    if let (Some(estimate), Value::Object(map)) = (over.estimate, &mut json) {
        map.insert("next_call_estimate".to_owned(), json!(estimate));
    }
    json
}

/// `no answer within the agent run's max_steps budget (3 of 3 used)`; for a call the cost budget
/// did not make, `... max_cost_usd budget ($0.00004 of $0.0001 used; the next call, estimated at
/// $0.0001, would cross it)`.
pub(crate) fn over_line(over: &Over) -> String {
    match over.estimate {
        Some(estimate) => format!(
            "no answer within the agent run's {} budget ({} of {} used; the next call, estimated at {}, would cross it)",
            over.budget,
            dollars(over.used),
            dollars(over.limit),
            dollars(estimate)
        ),
        None => format!(
            "no answer within the agent run's {} budget ({} of {} used)",
            over.budget, over.used, over.limit
        ),
    }
}

/// The total line alone: attempts, tokens, time, cost.
pub(super) fn total_line(attempts: &[Attempt], usage: Usage, elapsed: Duration) -> String {
    attempt_lines(attempts, usage, elapsed)
        .pop()
        .unwrap_or_default()
}

/// A line per attempt, then the total.
pub(super) fn attempt_lines(attempts: &[Attempt], usage: Usage, elapsed: Duration) -> Vec<String> {
    let mut lines: Vec<String> = attempts.iter().map(attempt_line).collect();
    let n = attempts.len();
    lines.push(format!(
        "{n} {}, {}, {}, cost {}",
        plural(n, "attempt"),
        tokens(usage),
        seconds(elapsed),
        usage.cost_usd.map_or_else(|| "unknown".to_owned(), dollars)
    ));
    lines
}

/// `attempt 1: valid, in 1.23s, 456+78 tokens[, 63 tok/s][, $cost][; the reply was cut at
/// max_tokens (N): --max-tokens raises it]`.
pub(super) fn attempt_line(attempt: &Attempt) -> String {
    let verdict = match &attempt.verdict {
        Verdict::Valid => "valid".to_owned(),
        Verdict::Invalid => {
            let n = attempt.violations.len();
            format!("invalid ({n} {})", plural(n, "violation"))
        }
        Verdict::NoJson { reason } => format!("no JSON ({reason})"),
        Verdict::BackendError { .. } => "backend error".to_owned(),
    };
    let mut line = format!(
        "attempt {}: {verdict}, {}",
        attempt.number,
        attempt_stats(attempt.latency, attempt.usage)
    );
    if let Some(cost) = attempt.usage.cost_usd {
        line.push_str(", ");
        line.push_str(&dollars(cost));
    }
    if let Some(truncation) = truncation(attempt) {
        line.push_str("; ");
        line.push_str(&truncation);
    }
    line
}

/// `in 2.31s, 412+87 tokens (300 cached), 38 tok/s`: the attempt's time, its tokens (with those the
/// provider's prompt cache served, when it says), and the rate it generated at (output tokens over
/// the whole call; none under a tenth of a second or without output).
pub(super) fn attempt_stats(latency: Duration, usage: Usage) -> String {
    let mut stats = format!("in {}, {}", seconds(latency), tokens(usage));
    if let Some(rate) = super::progress::rate(usage.output_tokens, latency) {
        stats.push_str(", ");
        stats.push_str(&rate);
    }
    stats
}

/// The `--json` report: the total `cost_usd` (null when some call's cost is unknown) beside the
/// usage, and each attempt's.
pub(super) fn to_json(
    value: Option<&Value>,
    attempts: &[Attempt],
    usage: Usage,
    elapsed: Duration,
) -> Value {
    // `+ 0.0`: a sum of nothing is -0.0.
    let cost = attempts
        .iter()
        .map(|a| a.usage.cost_usd)
        .sum::<Option<f64>>()
        .map(|usd| usd + 0.0);
    let attempts: Vec<Value> = attempts.iter().map(attempt_json).collect();
    json!({
        "value": value,
        "attempts": attempts,
        "usage": usage,
        "cost_usd": cost,
        "elapsed_ms": millis(elapsed),
    })
}

fn attempt_json(attempt: &Attempt) -> Value {
    let (verdict, reason) = match &attempt.verdict {
        Verdict::Valid => ("valid", None),
        Verdict::Invalid => ("invalid", None),
        Verdict::NoJson { reason } => ("no_json", Some(reason)),
        Verdict::BackendError { message } => ("backend_error", Some(message)),
    };
    let mut report = json!({
        "number": attempt.number,
        "verdict": verdict,
        "violations": attempt.violations,
        "fixes": attempt.fixes,
        "usage": attempt.usage,
        "cost_usd": attempt.usage.cost_usd,
        "latency_ms": millis(attempt.latency),
        "finish_reason": attempt.finish_reason,
    });
    if let (Some(reason), Value::Object(map)) = (reason, &mut report) {
        map.insert("reason".to_owned(), Value::String(reason.clone()));
    }
    // Strings that reached the bound the schema dialect adds (probably cut short).
    if let (false, Value::Object(map)) = (attempt.cut_strings.is_empty(), &mut report) {
        map.insert("cut_strings".to_owned(), json!(attempt.cut_strings));
    }
    report
}

/// `412+87 tokens` (input and output), `412+87 tokens (300 cached)` when the provider served some
/// of the input from its prompt cache.
fn tokens(usage: Usage) -> String {
    let counts = format!("{}+{} tokens", usage.input_tokens, usage.output_tokens);
    if usage.cached_tokens == 0 {
        return counts;
    }
    format!("{counts} ({} cached)", usage.cached_tokens)
}

fn seconds(duration: Duration) -> String {
    format!("{:.2}s", duration.as_secs_f64())
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `$0` for nothing, else six decimals without trailing zeros (`$0.000123`).
pub(super) fn dollars(cost: f64) -> String {
    if cost == 0.0 {
        return "$0".to_owned();
    }
    let text = format!("{cost:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "0" {
        // Less than a millionth of a dollar.
        return format!("${cost:.1e}");
    }
    format!("${text}")
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}
