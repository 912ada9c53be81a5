//! What `claij ask` prints: the value on stdout, a line per tool or MCP result the turn ran (and for
//! the result of its `eval` code), a line per attempt and a total on stderr; or with `--json` one
//! report on stdout. The lines and the report are the library's ([`claij::report`]).

use std::io::Write as _;
use std::time::Duration;

use anyhow::Result;
use claij::interceptors::builtin::eval::EvalResult;
use claij::interceptors::{Answer, Exhausted, ToolResult};
use claij::report::{self, Over, Report};
use serde_json::{Value, json};

/// A line about how the command runs (which backend was chosen).
pub(super) fn notice(text: &str) -> Result<()> {
    writeln!(std::io::stderr(), "{text}")?;
    Ok(())
}

/// What a turn ran after its reply, for the user to see on that turn (the model sees it on the
/// next).
pub(super) struct Ran<'a> {
    /// The tool and MCP calls, with their results.
    pub calls: &'a [ToolResult],
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
    if form == Form::Report {
        let eval = ran.eval.map(|e| e.map_or(Value::Null, report::eval_json));
        let json = report::answered_json(answer, ran.calls, eval, elapsed);
        writeln!(out, "{json}")?;
        return Ok(());
    }
    match form {
        Form::Final => writeln!(out, "{}", json!({"value": answer.value}))?,
        _ => writeln!(out, "{}", serde_json::to_string_pretty(&answer.value)?)?,
    }
    out.flush()?;
    stderr_lines(ran, answer, elapsed)?;
    if let Some(cut) = answer.attempts.last().and_then(report::truncation) {
        writeln!(std::io::stderr().lock(), "{}", report::cut_warning(&cut))?;
    }
    Ok(())
}

/// A standard response for people (a terminal): the rendered answer and sources on stdout, the
/// tool results and the attempts on stderr.
pub(super) fn rendered(answer: &Answer, ran: &Ran<'_>, elapsed: Duration) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{}",
        claij::interceptors::builtin::citations::render_for_people(&answer.value).trim_end()
    )?;
    out.flush()?;
    stderr_lines(ran, answer, elapsed)
}

/// The tool results and the `eval` result, then the attempts and the total, on stderr.
fn stderr_lines(ran: &Ran<'_>, answer: &Answer, elapsed: Duration) -> Result<()> {
    let mut err = std::io::stderr().lock();
    for line in report::answered_lines(ran.calls, ran.eval.flatten(), answer, elapsed) {
        writeln!(err, "{line}")?;
    }
    Ok(())
}

/// Retries exhausted: the attempts (or the `--json` report, with a null value), then the last reply's
/// violations on stderr, one a line.
pub(super) fn exhausted(exhausted: &Exhausted, elapsed: Duration, json: bool) -> Result<()> {
    let report = Report::of(&exhausted.attempts, elapsed);
    let mut err = std::io::stderr().lock();
    if json {
        let json = report::unanswered_json(&report, None);
        writeln!(std::io::stdout().lock(), "{json}")?;
    } else {
        for line in report.lines() {
            writeln!(err, "{line}")?;
        }
    }
    for line in report::exhausted_lines(exhausted) {
        writeln!(err, "{line}")?;
    }
    Ok(())
}

/// An agent run stopped by its budget: the attempts and a line saying which bound on stderr, or
/// the `--json` report with a null value and `budget_exceeded`.
pub(super) fn over_budget(
    over: &Over,
    attempts: &[claij::interceptors::Attempt],
    elapsed: Duration,
    json: bool,
) -> Result<()> {
    let report = Report::of(attempts, elapsed);
    if json {
        let json = report::unanswered_json(&report, Some(over));
        writeln!(std::io::stdout().lock(), "{json}")?;
        return Ok(());
    }
    let mut err = std::io::stderr().lock();
    for line in report.lines() {
        writeln!(err, "{line}")?;
    }
    writeln!(err, "{over}")?;
    Ok(())
}
