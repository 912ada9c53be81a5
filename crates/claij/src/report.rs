//! What a turn did, in words and in JSON: a line per attempt and a total ([`Report`]), what cut a
//! reply short ([`truncation`]), a line per tool, MCP or `eval` result the turn ran, the bound that
//! stopped an agent run ([`Over`]), why no reply was valid ([`exhausted_lines`]), that the model
//! would not answer ([`refusal`]). The `claij`
//! command line prints these; a program prints or logs them as it likes.
//!
//! ```
//! use std::time::Duration;
//! use claij::report::{Report, dollars};
//!
//! // No attempt (a budget that stopped the run before its first call): the total alone.
//! let report = Report::of(&[], Duration::from_millis(1500));
//! assert_eq!(report.lines(), ["0 attempts, 0+0 tokens, 1.50s, cost unknown"]);
//! assert_eq!(report.to_json(None)["elapsed_ms"], 1500);
//! assert_eq!(dollars(0.000123), "$0.000123");
//! ```

use std::fmt;
use std::time::Duration;

use claij_backends::Usage;
#[cfg(feature = "eval")]
use claij_interceptors::builtin::eval::EvalResult;
use claij_interceptors::{
    Answer, Attempt, Exhausted, MemoryState, ToolOrigin, ToolResult, Verdict,
};
use serde_json::{Value, json};

/// The longest line a tool or `eval` result gets, in characters.
const RESULT_LINE: usize = 200;

/// The attempts of a turn (or of one model's call), what they used and how long the turn took.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    attempts: &'a [Attempt],
    usage: Usage,
    elapsed: Duration,
}

impl<'a> Report<'a> {
    /// The report of `attempts` that used `usage` in all, over `elapsed`.
    #[must_use]
    pub fn new(attempts: &'a [Attempt], usage: Usage, elapsed: Duration) -> Self {
        Self {
            attempts,
            usage,
            elapsed,
        }
    }

    /// The report of `attempts`, their usage summed, over `elapsed`.
    #[must_use]
    pub fn of(attempts: &'a [Attempt], elapsed: Duration) -> Self {
        Self::new(attempts, attempts.iter().map(|a| a.usage).sum(), elapsed)
    }

    /// A line per attempt ([`attempt_line`]), then the total ([`Report::total`]).
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.attempts.iter().map(attempt_line).collect();
        lines.push(self.total());
        lines
    }

    /// `2 attempts, 412+87 tokens, 2.31s, cost $0.0012` (`cost unknown` when a call's is).
    #[must_use]
    pub fn total(&self) -> String {
        let n = self.attempts.len();
        format!(
            "{n} {}, {}, {}, cost {}",
            plural(n, "attempt"),
            tokens(self.usage),
            seconds(self.elapsed),
            self.usage
                .cost_usd
                .map_or_else(|| "unknown".to_owned(), dollars)
        )
    }

    /// `{"value", "attempts", "usage", "cost_usd", "elapsed_ms"}`: the total `cost_usd` (null when
    /// some call's cost is unknown) beside the usage, and each attempt's verdict, violations, fixes,
    /// usage, cost, latency and finish reason.
    #[must_use]
    pub fn to_json(&self, value: Option<&Value>) -> Value {
        // `+ 0.0`: a sum of nothing is -0.0.
        let cost = self
            .attempts
            .iter()
            .map(|a| a.usage.cost_usd)
            .sum::<Option<f64>>()
            .map(|usd| usd + 0.0);
        let attempts: Vec<Value> = self.attempts.iter().map(attempt_json).collect();
        json!({
            "value": value,
            "attempts": attempts,
            "usage": self.usage,
            "cost_usd": cost,
            "elapsed_ms": millis(self.elapsed),
        })
    }
}

/// The JSON report of a turn that answered `answer` in `elapsed`: [`Report::to_json`] with its
/// value, then `tool_results` (of the calls `ran`, [`tool_results_json`]), `eval` when given (the
/// result of the reply's code, `eval_json`, or null without code), and `truncated` (the last
/// reply was cut at a bound: the value is valid but may be incomplete).
#[must_use]
pub fn answered_json(
    answer: &Answer,
    ran: &[ToolResult],
    eval: Option<Value>,
    elapsed: Duration,
) -> Value {
    let report = Report::new(&answer.attempts, answer.usage, elapsed);
    let mut json = report.to_json(Some(&answer.value));
    if let Value::Object(map) = &mut json {
        map.insert("tool_results".to_owned(), tool_results_json(ran));
        if let Some(eval) = eval {
            map.insert("eval".to_owned(), eval);
        }
        let cut = answer.attempts.last().and_then(truncation).is_some();
        map.insert("truncated".to_owned(), Value::Bool(cut));
    }
    json
}

/// The JSON report of a turn with no answer: [`Report::to_json`] with a null value, no
/// `tool_results` (no reply was valid, so no call ran), and `budget_exceeded` ([`Over::to_json`])
/// when a budget stopped it.
#[must_use]
pub fn unanswered_json(report: &Report<'_>, over: Option<&Over>) -> Value {
    let mut json = report.to_json(None);
    if let Value::Object(map) = &mut json {
        map.insert("tool_results".to_owned(), json!([]));
        if let Some(over) = over {
            map.insert("budget_exceeded".to_owned(), over.to_json());
        }
    }
    json
}

/// `attempt 1: valid, in 1.23s, 456+78 tokens[, 63 tok/s][, $cost][; the reply was cut at
/// max_tokens (N): --max-tokens raises it]`.
#[must_use]
pub fn attempt_line(attempt: &Attempt) -> String {
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
#[must_use]
pub fn attempt_stats(latency: Duration, usage: Usage) -> String {
    let mut stats = format!("in {}, {}", seconds(latency), tokens(usage));
    if let Some(rate) = rate(usage.output_tokens, latency) {
        stats.push_str(", ");
        stats.push_str(&rate);
    }
    stats
}

/// `38 tok/s` for `tokens` over `span`; none over less than a tenth of a second (not a rate yet).
#[must_use]
pub fn rate(tokens: u64, span: Duration) -> Option<String> {
    let seconds = span.as_secs_f64();
    if tokens == 0 || seconds < 0.1 {
        return None;
    }
    let per_second = tokens as f64 / seconds;
    Some(if per_second < 10.0 {
        format!("{per_second:.1} tok/s")
    } else {
        format!("{per_second:.0} tok/s")
    })
}

/// What cut the attempt's reply short, with the flag or key that lifts the bound: `the reply was
/// cut at max_tokens (512): --max-tokens raises it`, then each string cut at the bound the schema
/// dialect added (`give the field a maxLength` says how to lift it), joined by `; `.
#[must_use]
pub fn truncation(attempt: &Attempt) -> Option<String> {
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
#[must_use]
pub fn truncation_of(attempts: &[Attempt]) -> Option<String> {
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

/// The warning after a valid answer whose reply was cut ([`truncation`]): valid against the
/// schema, but maybe not all the model meant to say (a list cut short, a string ended early).
#[must_use]
pub fn cut_warning(truncation: &str) -> String {
    format!("warning: {truncation}; the value is valid but may be incomplete")
}

/// One line for a tool or MCP call a turn ran: `tool now {}: ok: "2026-…"` (`mcp` for an MCP
/// server's tool), at most 200 characters, cut with `…`.
#[must_use]
pub fn tool_line(result: &ToolResult) -> String {
    let kind = match &result.origin {
        ToolOrigin::Rust => "tool",
        ToolOrigin::Mcp { .. } => "mcp",
        _ => "call",
    };
    let outcome = match &result.output {
        Ok(value) => format!("ok: {value}"),
        Err(message) => format!("error: {message}"),
    };
    cut_line(&format!(
        "{kind} {} {}: {outcome}",
        result.name, result.args
    ))
}

/// `tool_results` of a JSON report: `{name, args, origin, output}` for a call that succeeded,
/// `{name, args, origin, error}` for one that failed, whole.
#[must_use]
pub fn tool_results_json(ran: &[ToolResult]) -> Value {
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

/// What people see after a valid answer, besides the value: a line per tool or MCP result the turn
/// ran ([`tool_line`]), one for its `eval` result ([`eval_line`]; feature `eval`), then a line per
/// attempt and the total ([`Report::lines`]).
#[must_use]
pub fn answered_lines(
    calls: &[ToolResult],
    #[cfg(feature = "eval")] eval: Option<&EvalResult>,
    answer: &Answer,
    elapsed: Duration,
) -> Vec<String> {
    let mut lines: Vec<String> = calls.iter().map(tool_line).collect();
    #[cfg(feature = "eval")]
    lines.extend(eval.map(eval_line));
    lines.extend(Report::new(&answer.attempts, answer.usage, elapsed).lines());
    lines
}

/// What `claij chat` shows people after a valid turn ([`chat_turn`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatTurn {
    /// For stdout: the answer (its `answer` text, the standard response rendered, else the value),
    /// each line ended; after streamed text, the end of its line and the answer only if it differs.
    pub out: String,
    /// For stderr, a line each: the state, the remembered summary, a line per tool or MCP result
    /// ([`tool_line`]), the `eval` result ([`eval_line`]), a cut reply's warning ([`cut_warning`]),
    /// and `[turn N · total]`.
    pub err: Vec<String>,
}

/// What a chat shows after the valid `answer` of turn `turn`: `streamed` is the answer text the
/// partial values already wrote (empty when none did), `calls` the tool and MCP results the turn
/// ran, `eval` its `eval` result (feature `eval`), `elapsed` its time.
#[must_use]
pub fn chat_turn(
    answer: &Answer,
    streamed: &str,
    calls: &[ToolResult],
    #[cfg(feature = "eval")] eval: Option<&EvalResult>,
    turn: u64,
    elapsed: Duration,
) -> ChatTurn {
    let value = &answer.value;
    let text = value.get("answer").and_then(Value::as_str);
    let mut out = if streamed.is_empty() { "" } else { "\n" }.to_owned();
    if value.get("metadata").is_some() {
        let rendered = claij_interceptors::builtin::citations::render_for_people(value);
        out.push_str(&format!("{}\n", rendered.trim_end()));
    } else if streamed.is_empty() || text != Some(streamed) {
        out.push_str(&text.map_or_else(|| format!("{value:#}\n"), |text| format!("{text}\n")));
    }
    let said = |key: &str| value.get(key).and_then(Value::as_str);
    let mut err: Vec<String> = said("state")
        .map(|s| format!("  state: {s}"))
        .into_iter()
        .collect();
    err.extend(said("summary").map(|s| format!("  remembered: {s}")));
    err.extend(
        calls
            .iter()
            .map(|result| format!("  {}", tool_line(result))),
    );
    #[cfg(feature = "eval")]
    err.extend(eval.map(|result| format!("  {}", eval_line(result))));
    let cut = answer.attempts.last().and_then(truncation);
    err.extend(cut.map(|cut| format!("  {}", cut_warning(&cut))));
    let total = Report::new(&answer.attempts, answer.usage, elapsed).total();
    err.push(format!("  [turn {turn} · {total}]"));
    ChatTurn { out, err }
}

/// One line for the result of a reply's `eval` code: `eval "6 * 7": ok: 42`, then `, printed:`
/// and what it printed as a JSON string when it printed something; at most 200 characters, cut
/// with `…`.
#[cfg(feature = "eval")]
#[must_use]
pub fn eval_line(result: &EvalResult) -> String {
    let outcome = match &result.outcome {
        Ok(value) => format!("ok: {value}"),
        Err(e) => format!("error: {e}"),
    };
    let printed = if result.output.is_empty() {
        String::new()
    } else {
        format!(", printed: {}", Value::String(result.output.clone()))
    };
    cut_line(&format!(
        "eval {}: {outcome}{printed}",
        Value::String(result.code.clone())
    ))
}

/// `eval` of a JSON report: `{code, value, printed}` when the code gave a value, `{code, error,
/// printed}` when it failed, whole.
#[cfg(feature = "eval")]
#[must_use]
pub fn eval_json(result: &EvalResult) -> Value {
    let mut one = json!({"code": result.code, "printed": result.output});
    if let Value::Object(map) = &mut one {
        match &result.outcome {
            Ok(value) => map.insert("value".to_owned(), value.clone()),
            Err(e) => map.insert("error".to_owned(), Value::String(e.to_string())),
        };
    }
    one
}

/// Why no reply of the failed call was valid: `no valid reply after 3 attempts (what cut them):
/// the last held no JSON: why`, or `...; the last one's violations:` then one indented line per
/// violation.
#[must_use]
pub fn exhausted_lines(exhausted: &Exhausted) -> Vec<String> {
    // The failed model call's (an agent run's earlier steps are among the attempt lines).
    let n = exhausted.last_call().len();
    // A reply cut at the token limit is the likely cause: name it first.
    let cut = truncation_of(exhausted.last_call())
        .map(|t| format!(" ({t})"))
        .unwrap_or_default();
    let attempts = plural(n, "attempt");
    match exhausted.no_json() {
        Some(reason) => vec![format!(
            "no valid reply after {n} {attempts}{cut}: the last held no JSON: {}",
            one_line(reason)
        )],
        None => std::iter::once(format!(
            "no valid reply after {n} {attempts}{cut}; the last one's violations:"
        ))
        .chain(
            exhausted
                .violations()
                .iter()
                .map(|v| format!("  {}", one_line(&v.to_string()))),
        )
        .collect(),
    }
}

/// The line that says the model would not answer (a refusal, a content filter, a blocked prompt):
/// `error: PROVIDER (HTTP STATUS): refused: MESSAGE`, the provider's message as it sent it; `None`
/// for any other error. Such a reply was sent once, never retried (see [`crate::Error::is_refusal`]).
///
/// ```
/// use claij::{Error, backends::{self, ErrorContext}};
///
/// let refused = Error::from(backends::Error::Refused {
///     context: ErrorContext::new("gemini").with_status(200),
///     message: "finish reason SAFETY: Blocked\nfor safety.".into(),
/// });
/// assert_eq!(
///     claij::report::refusal(&refused).as_deref(),
///     Some("error: gemini (HTTP 200): refused: finish reason SAFETY: Blocked for safety.")
/// );
/// ```
#[must_use]
pub fn refusal(error: &crate::Error) -> Option<String> {
    let refused = error.backend().filter(|e| e.is_refusal())?;
    Some(format!("error: {}", one_line(&refused.to_string())))
}

/// What `claij chat` says of a turn that ended without a valid reply, on one line, before it goes
/// on with the next: the provider's refusal as [`refusal`] says it, `  (no valid reply after N
/// attempts[: the cut]; ask again or rephrase)`, or `  (BUDGET; ask again, or allow more)`; `None`
/// for any other error (it ends the chat).
#[must_use]
pub fn turn_failure(error: &crate::Error) -> Option<String> {
    if let Some(line) = refusal(error) {
        return Some(line);
    }
    match error.pipeline()? {
        claij_interceptors::Error::RetriesExhausted(exhausted) => {
            let n = exhausted.attempts.len();
            let cut = truncation_of(&exhausted.attempts)
                .map(|t| format!(": {t}"))
                .unwrap_or_default();
            let attempts = if n == 1 { "attempt" } else { "attempts" };
            Some(format!(
                "  (no valid reply after {n} {attempts}{cut}; ask again or rephrase)"
            ))
        }
        stopped => Over::of(stopped).map(|over| format!("  ({over}; ask again, or allow more)")),
    }
}

/// What the memory interceptor keeps: `remembered:`, then `  1. SUMMARY` per summary and
/// `  insights: INSIGHTS`; `(nothing remembered yet)` when it keeps nothing.
#[must_use]
pub fn remembered(memory: &MemoryState) -> String {
    if memory.is_empty() {
        return "(nothing remembered yet)".to_owned();
    }
    let mut text = String::from("remembered:");
    for (i, summary) in memory.summaries.iter().enumerate() {
        text.push_str(&format!("\n  {}. {summary}", i + 1));
    }
    if let Some(insights) = &memory.insights {
        text.push_str(&format!("\n  insights: {insights}"));
    }
    text
}

/// What the recall memory keeps for this conversation, when it is the memory in use (`None` when
/// not): its session id, and the memories recalled for the last turn, most similar first, with
/// their similarity and age.
#[must_use]
pub fn recalled(ctx: &claij_interceptors::Context) -> Option<String> {
    use claij_interceptors::builtin::recall::{RecallSession, Recalled, age};
    let session = ctx.get::<RecallSession>()?;
    let id = &session.session_id;
    let mut text =
        format!("recall memory, session {id} (`claij memory list --session {id}` lists it):");
    let recalled = ctx.get::<Recalled>();
    let hits = recalled.map(|r| r.hits.as_slice()).unwrap_or_default();
    if hits.is_empty() {
        text.push_str(
            "
  (nothing recalled for the last turn)",
        );
    }
    for (i, hit) in hits.iter().enumerate() {
        let at = recalled.and_then(|r| r.at).unwrap_or(hit.record.created_at);
        let when = age(at, hit.record.created_at);
        text.push_str(&format!(
            "
  {}. ({when}, similarity {:.2}) {}",
            i + 1,
            hit.similarity,
            hit.record.text.trim()
        ));
    }
    Some(text)
}

/// An agent run's budget that ran out: which bound (`max_steps`, `max_tokens`, `max_cost_usd`),
/// the bound, what was used, and the estimated cost of the call it did not make. Shown as
/// `no answer within the agent run's max_steps budget (3 of 3 used)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Over {
    /// The bound's name.
    pub budget: String,
    /// The bound (steps, tokens or US dollars).
    pub limit: f64,
    /// What the run had used.
    pub used: f64,
    /// The estimated cost of the call that would have crossed the cost bound.
    pub estimate: Option<f64>,
}

impl Over {
    /// The budget that stopped the run, if `error` says a budget did.
    #[must_use]
    pub fn of(error: &claij_interceptors::Error) -> Option<Self> {
        match error {
            claij_interceptors::Error::BudgetExceeded {
                budget,
                limit,
                used,
                estimate,
                ..
            } => Some(Self {
                budget: budget.to_string(),
                limit: *limit,
                used: *used,
                estimate: *estimate,
            }),
            _ => None,
        }
    }

    /// `budget_exceeded` of a JSON report: `{budget, limit, used}`, and `next_call_estimate` when
    /// the cost bound stopped the run before a call.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut json = json!({"budget": self.budget, "limit": self.limit, "used": self.used});
        if let (Some(estimate), Value::Object(map)) = (self.estimate, &mut json) {
            map.insert("next_call_estimate".to_owned(), json!(estimate));
        }
        json
    }
}

impl fmt::Display for Over {
    /// `no answer within the agent run's max_steps budget (3 of 3 used)`; for a call the cost
    /// budget did not make, `... max_cost_usd budget ($0.00004 of $0.0001 used; the next call,
    /// estimated at $0.0001, would cross it)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.estimate {
            Some(estimate) => write!(
                f,
                "no answer within the agent run's {} budget ({} of {} used; the next call, estimated at {}, would cross it)",
                self.budget,
                dollars(self.used),
                dollars(self.limit),
                dollars(estimate)
            ),
            None => write!(
                f,
                "no answer within the agent run's {} budget ({} of {} used)",
                self.budget, self.used, self.limit
            ),
        }
    }
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

/// Milliseconds, saturating.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// What `claij schema render --as DIALECT` says of `dialect`'s compilation, on stderr: that it
/// dropped nothing, or each change the local validator still enforces, one a line.
#[must_use]
pub fn dialect_losses(
    dialect: claij_schema::dialect::Dialect,
    losses: &[claij_schema::dialect::Loss],
) -> String {
    if losses.is_empty() {
        return format!("{dialect}: nothing dropped");
    }
    let mut text = format!(
        "{dialect}: {} change(s) the local validator still enforces:",
        losses.len()
    );
    for loss in losses {
        text.push_str("\n  ");
        text.push_str(&loss.to_string());
    }
    text
}

/// `$0` for nothing, else six decimals without trailing zeros (`$0.000123`), and below a
/// millionth of a dollar `$2.0e-7`.
#[must_use]
pub fn dollars(cost: f64) -> String {
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

/// `word`, with an `s` unless `n` is 1.
pub(crate) fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}

/// `text` on one line: its lines trimmed, the empty ones dropped, joined by a space.
pub(crate) fn one_line(text: &str) -> String {
    text.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` on one line, at most [`RESULT_LINE`] characters, cut with `…`.
fn cut_line(text: &str) -> String {
    let line = one_line(text);
    if line.chars().count() <= RESULT_LINE {
        return line;
    }
    let mut cut: String = line.chars().take(RESULT_LINE - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests;
