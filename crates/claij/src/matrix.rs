//! The compatibility matrix, put to use: for each model it has measured, the structured-output mode
//! and the retry budget claij chooses, and whether it is supported for structured output at all.
//!
//! `cargo xtask integration` merges each run into `$XDG_DATA_HOME/claij/compat-matrix.json` (default
//! `~/.local/share/claij/`): the [`Record`] of each test `claij-suite run` printed (the model, whether
//! it passed, was valid on the first try, its retries and the mode it ran in), the newest per model,
//! suite and mode. claij reads the file the caller names, else that one, from any directory (a
//! `target/` under the current directory is not consulted).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use claij_interceptors::StructuredMode;
use serde_json::Value;

use crate::options::DEFAULT_MAX_RETRIES;

mod record;

pub use self::record::{Matrix, Record};

/// What claij uses for one model.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The model as the matrix names it.
    pub model: String,
    /// The mode to use; `None` keeps `auto`.
    pub mode: Option<StructuredMode>,
    /// Retries after the first attempt.
    pub max_retries: usize,
    /// Why, in a sentence.
    pub why: String,
    /// Tests measured, passed, valid on the first try.
    pub measured: (u64, u64, u64),
    /// The most o200k_base tokens a test's schema rendering took ([`Record::schema_tokens`]);
    /// `None` when no record says.
    pub schema_tokens: Option<u64>,
}

impl Choice {
    /// The choice for people: `MODEL: mode M, N retries (P/T passed, F valid first try): WHY`,
    /// after what makes the model `unsupported` for structured output, when the matrix says so
    /// ([`unsupported`]).
    #[must_use]
    pub fn line(&self, unsupported: Option<&str>) -> String {
        let (tests, passed, first) = self.measured;
        let verdict = match unsupported {
            Some(why) => format!("UNSUPPORTED for structured output: {why}; if used anyway: "),
            None => String::new(),
        };
        let schema = self
            .schema_tokens
            .map_or_else(String::new, |n| format!(", schema up to {n} tokens"));
        format!(
            "{}: {verdict}mode {}, {} retr{} ({passed}/{tests} passed, {first} valid first try{schema}): {}",
            self.model,
            mode_name(self.mode),
            self.max_retries,
            if self.max_retries == 1 { "y" } else { "ies" },
            self.why
        )
    }

    /// The choice as JSON (`model`, `supported`, `unsupported`, `mode`, `max_retries`, `why`,
    /// `tests`, `passed`, `valid_first_try`, `schema_tokens`).
    #[must_use]
    pub fn to_json(&self, unsupported: Option<&str>) -> Value {
        let (tests, passed, first) = self.measured;
        serde_json::json!({
            "model": self.model,
            "supported": unsupported.is_none(),
            "unsupported": unsupported,
            "mode": mode_name(self.mode),
            "max_retries": self.max_retries,
            "why": self.why,
            "tests": tests, "passed": passed, "valid_first_try": first,
            "schema_tokens": self.schema_tokens,
        })
    }
}

/// The matrix claij consults when nothing names one, if there is one: the user's, in claij's
/// data directory `data_dir` ([`crate::settings::Settings::data_dir`]), where `cargo xtask
/// integration` merges its runs (`compat-matrix.json`), the same from any directory.
pub fn default_path(data_dir: Option<&Path>) -> Option<PathBuf> {
    let shared = data_dir?.join("compat-matrix.json");
    shared.is_file().then_some(shared)
}

/// Reads a matrix file: its `records`, each a [`Record`] (the error names the file, line and
/// column, and the field).
///
/// # Errors
///
/// The file cannot be read, is not JSON or not a matrix.
pub fn read(path: &Path) -> Result<Matrix> {
    let text = crate::fs::read_file_capped(path, crate::fs::MAX_INPUT_BYTES, "a matrix file")
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| Error::file_because(format!("{}: not JSON", path.display()), e))?;
    serde_json::from_value(value).map_err(|e| {
        Error::file_because(format!("{}: not a compatibility matrix", path.display()), e)
    })
}

/// What `claij models` prints: the stdout and, when no matrix is found, a line for stderr saying
/// how to make one ([`missing`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    /// The report: each measured model's choice, then the prices (or one JSON object).
    pub out: String,
    /// For stderr, when there is no matrix (never with `json`).
    pub err: Option<String>,
}

/// `claij models`: each model's choice in the matrix at `path` (none: the user's, when there is
/// one), then the prices `settings` give ([`crate::prices::render`]); with `json` one object
/// `{"matrix", "models": [Choice::to_json], "prices"}`.
///
/// # Errors
///
/// The matrix cannot be read; the prices cannot be read.
pub fn shown(
    settings: &crate::settings::Settings,
    path: Option<PathBuf>,
    json: bool,
) -> Result<Shown> {
    let path = path.or_else(|| default_path(settings.data_dir.as_deref()));
    let matrix = match &path {
        Some(path) => read(path)?,
        None => Matrix::default(),
    };
    let choices = choices(&matrix);
    if json {
        let list: Vec<Value> = choices
            .iter()
            .map(|c| c.to_json(unsupported(&matrix, &[&c.model]).as_deref()))
            .collect();
        let prices = crate::prices::to_json(settings)?;
        let report = serde_json::json!({"matrix": path, "models": list, "prices": prices});
        let out = serde_json::to_string_pretty(&report).unwrap_or_default() + "\n";
        return Ok(Shown { out, err: None });
    }
    let prices = crate::prices::render(settings)?;
    let Some(path) = path else {
        let err = Some(missing(settings.data_dir.as_deref()));
        return Ok(Shown { out: prices, err });
    };
    let mut out = format!("matrix: {}\n", path.display());
    for choice in &choices {
        let unsupported = unsupported(&matrix, &[&choice.model]);
        out.push_str(&choice.line(unsupported.as_deref()));
        out.push('\n');
    }
    if choices.is_empty() {
        out.push_str("(no model measured)\n");
    }
    out.push('\n');
    out.push_str(&prices);
    Ok(Shown { out, err: None })
}

/// The choice for `model` (its alias or its model id), if the matrix measured it.
pub fn choice_for(matrix: &Matrix, names: &[&str]) -> Option<Choice> {
    choices(matrix)
        .into_iter()
        .find(|c| names.contains(&c.model.as_str()))
}

/// Why the model (by any of `names`) is unsupported for structured output, if the matrix says so:
/// its retry suite ran and no test of it passed, in any mode, within the retries.
pub fn unsupported(matrix: &Matrix, names: &[&str]) -> Option<String> {
    let retry: Vec<&Record> = matrix
        .records
        .iter()
        .filter(|r| r.suite == RETRY_SUITE && names.contains(&r.model.as_str()))
        .collect();
    if retry.is_empty() || retry.iter().any(|r| r.passed) {
        return None;
    }
    let mut modes: Vec<&str> = Vec::new();
    for r in &retry {
        if !modes.contains(&r.mode.as_str()) {
            modes.push(&r.mode);
        }
    }
    let last = retry
        .iter()
        .filter_map(|r| r.at.as_deref())
        .max()
        .map_or_else(String::new, |at| format!(", measured {at}"));
    Some(format!(
        "its retry suite never passed (0/{} in {} mode{}{last}; {})",
        retry.len(),
        modes.join(", "),
        if modes.len() == 1 { "" } else { "s" },
        retry[0].detail
    ))
}

/// The suite whose result decides support and the retry budget.
const RETRY_SUITE: &str = "retry";

/// A choice for every model of the matrix, in the order first seen.
pub fn choices(matrix: &Matrix) -> Vec<Choice> {
    let mut models: Vec<&str> = Vec::new();
    for record in &matrix.records {
        if !models.contains(&record.model.as_str()) {
            models.push(&record.model);
        }
    }
    models
        .into_iter()
        .map(|model| {
            let mine: Vec<&Record> = matrix.records.iter().filter(|r| r.model == model).collect();
            choose(model, &mine)
        })
        .collect()
}

/// The rule: the mode with the best first-try validity (when the matrix measured several), and a
/// retry budget that covers the retries passing tests needed, plus one.
fn choose(model: &str, records: &[&Record]) -> Choice {
    let count =
        |rs: &[&Record], flag: fn(&Record) -> bool| rs.iter().filter(|r| flag(r)).count() as u64;
    let tests = records.len() as u64;
    let passed = count(records, |r| r.passed);
    let first = count(records, |r| r.valid_first_try);
    let mut by_mode: Vec<(StructuredMode, u64, u64)> = Vec::new();
    for mode in [
        StructuredMode::Native,
        StructuredMode::Tool,
        StructuredMode::Prompted,
    ] {
        let of_mode: Vec<&Record> = records
            .iter()
            .copied()
            .filter(|r| r.mode == mode_name(Some(mode)))
            .collect();
        if !of_mode.is_empty() {
            by_mode.push((
                mode,
                count(&of_mode, |r| r.valid_first_try),
                of_mode.len() as u64,
            ));
        }
    }
    // Best first-try rate; on a tie the earlier of native, tool, prompted.
    let best = by_mode.iter().copied().reduce(|best, next| {
        if next.1 * best.2 > best.1 * next.2 {
            next
        } else {
            best
        }
    });
    let (max_retries, retry_why) = retry_budget(records);
    let (mode, mode_why) = match best {
        Some((mode, valid, of)) if by_mode.len() > 1 => (
            Some(mode),
            format!(
                "{} was valid first try most often ({valid}/{of})",
                mode_name(Some(mode))
            ),
        ),
        Some((mode, valid, of)) => (
            Some(mode),
            format!(
                "only {} was measured ({valid}/{of} first try)",
                mode_name(Some(mode))
            ),
        ),
        None => (None, "the matrix did not compare modes, so auto".to_owned()),
    };
    Choice {
        model: model.to_owned(),
        mode,
        max_retries,
        why: format!("{mode_why}; {retry_why}"),
        measured: (tests, passed, first),
        schema_tokens: records.iter().filter_map(|r| r.schema_tokens).max(),
    }
}

/// The retry budget, from the evidence: the retry suite's tests where a retry actually happened and
/// the reply then passed (a test valid on its first try says nothing about retries; other suites
/// measure other things). Their most retries, plus one, at most 5.
fn retry_budget(records: &[&Record]) -> (usize, String) {
    let retry: Vec<&Record> = records
        .iter()
        .copied()
        .filter(|r| r.suite == RETRY_SUITE)
        .collect();
    let recovered = retry
        .iter()
        .filter(|r| r.passed && r.retries > 0)
        .map(|r| r.retries)
        .max();
    let default = DEFAULT_MAX_RETRIES;
    match recovered {
        Some(n) => {
            let budget = usize::try_from(n)
                .unwrap_or(usize::MAX)
                .saturating_add(1)
                .clamp(1, 5);
            (
                budget,
                format!(
                    "retry-suite tests that retried passed after up to {n} retr{}: that plus one (at most 5)",
                    if n == 1 { "y" } else { "ies" }
                ),
            )
        }
        None if retry.is_empty() => (
            default,
            format!("the retry suite was not measured, so the default budget of {default}"),
        ),
        None if !retry.iter().any(|r| r.passed) => (
            default,
            format!("no retry-suite test passed, so the default budget of {default}"),
        ),
        None if retry.iter().all(|r| r.valid_first_try) => (
            1,
            "every retry-suite test was valid on the first try: one retry in reserve".to_owned(),
        ),
        None => (
            1,
            "passing retry-suite tests needed no retry: one in reserve".to_owned(),
        ),
    }
}

/// A mode's name in the records and on the command line (`None`: auto).
pub fn mode_name(mode: Option<StructuredMode>) -> &'static str {
    match mode {
        Some(StructuredMode::Native) => "native",
        Some(StructuredMode::Tool) => "tool",
        Some(StructuredMode::Prompted) => "prompted",
        _ => "auto",
    }
}

/// What `claij models` says when there is no matrix: the command that measures a model and writes
/// one, a command that works as it is printed (the embedded model, offline and free), and where it
/// writes it (`data_dir`, the user's data directory; `None` when neither variable says).
#[must_use]
pub fn missing(data_dir: Option<&Path>) -> String {
    let written = data_dir.map_or_else(
        || {
            "$XDG_DATA_HOME/claij/compat-matrix.json, else ~/.local/share/claij/compat-matrix.json"
                .to_owned()
        },
        |dir| dir.join("compat-matrix.json").display().to_string(),
    );
    format!(
        "no compatibility matrix yet: in claij's repository, `{MEASURE_LOCAL}` measures the embedded \
         model (offline, free; `--llm MODEL` for another) and writes {written}; or give --matrix FILE"
    )
}

/// The command that measures the embedded model into the user's matrix.
pub const MEASURE_LOCAL: &str = "cargo xtask integration --llm local --yes";

#[cfg(test)]
mod tests;
