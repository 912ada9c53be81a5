//! The compatibility matrix, put to use: for each model it has measured, the structured-output mode
//! and the retry budget claij chooses, and `claij models`, which says what it would choose and why.
//!
//! `cargo xtask integration` writes `target/claij/compat-matrix.json`: the
//! [`Record`] of each test `claij suite run` printed (the model, whether
//! it passed, was valid on the first try, its retries and the mode it ran in). claij reads the file named by `--matrix` (for `claij models`), else
//! `target/claij/compat-matrix.json` under the current directory, else
//! `$XDG_DATA_HOME/claij/compat-matrix.json` (default `~/.local/share/claij/`).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use claij_interceptors::StructuredMode;
use serde_json::{Value, json};

use crate::Status;
use crate::suite::record::{Matrix, Record};

/// Arguments of `claij models`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The matrix file (default: `target/claij/compat-matrix.json`, else the user's data directory).
    #[arg(long, value_name = "FILE")]
    matrix: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// What claij uses for one model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Choice {
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
}

/// Prints each measured model's choice.
pub(crate) fn run(args: &Args) -> Result<Status> {
    let Some(path) = args.matrix.clone().or_else(default_path) else {
        anyhow::bail!(
            "no compatibility matrix: run `cargo xtask integration` (it writes target/claij/compat-matrix.json) or give --matrix FILE"
        );
    };
    let matrix = read(&path)?;
    let choices = choices(&matrix);
    let mut out = std::io::stdout().lock();
    if args.json {
        let list: Vec<Value> = choices.iter().map(to_json).collect();
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&json!({"matrix": path, "models": list}))?
        )?;
        return Ok(Status::Ok);
    }
    writeln!(out, "matrix: {}", path.display())?;
    for choice in &choices {
        let (tests, passed, first) = choice.measured;
        writeln!(
            out,
            "{}: mode {}, {} retr{} ({passed}/{tests} passed, {first} valid first try): {}",
            choice.model,
            mode_name(choice.mode),
            choice.max_retries,
            if choice.max_retries == 1 { "y" } else { "ies" },
            choice.why
        )?;
    }
    if choices.is_empty() {
        writeln!(out, "(no model measured)")?;
    }
    Ok(Status::Ok)
}

/// The matrix claij consults when nothing names one: under the current directory, else the user's
/// data directory.
pub(crate) fn default_path() -> Option<PathBuf> {
    let local = PathBuf::from("target/claij/compat-matrix.json");
    if local.is_file() {
        return Some(local);
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    let shared = data.join("claij/compat-matrix.json");
    shared.is_file().then_some(shared)
}

/// Reads a matrix file: its `records`, each a [`Record`] (the error names the file, line and
/// column, and the field).
pub(crate) fn read(path: &Path) -> Result<Matrix> {
    let text = crate::input::read_file_capped(path, crate::input::MAX_INPUT_BYTES, "a matrix file")
        .with_context(|| format!("cannot read {}", path.display()))?;
    let value: Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    serde_json::from_value(value)
        .with_context(|| format!("{}: not a compatibility matrix", path.display()))
}

/// The choice for `model` (its alias or its model id), if the matrix measured it.
pub(crate) fn choice_for(matrix: &Matrix, names: &[&str]) -> Option<Choice> {
    choices(matrix)
        .into_iter()
        .find(|c| names.contains(&c.model.as_str()))
}

/// A choice for every model of the matrix, in the order first seen.
pub(crate) fn choices(matrix: &Matrix) -> Vec<Choice> {
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
    let retries_needed = records.iter().filter(|r| r.passed).map(|r| r.retries).max();
    let (max_retries, retry_why) = match retries_needed {
        None => (3, "no test passed, so the default budget of 3".to_owned()),
        Some(0) if first == tests => (
            1,
            "every test was valid on the first try: one retry in reserve".to_owned(),
        ),
        Some(0) => (
            1,
            "passing tests needed no retry: one in reserve".to_owned(),
        ),
        Some(n) => {
            let budget = usize::try_from(n)
                .unwrap_or(usize::MAX)
                .saturating_add(1)
                .clamp(1, 5);
            (
                budget,
                format!(
                    "passing tests needed up to {n} retr{}: that plus one (at most 5)",
                    if n == 1 { "y" } else { "ies" }
                ),
            )
        }
    };
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
    }
}

/// A mode's name in the records and on the command line (`None`: auto).
pub(crate) fn mode_name(mode: Option<StructuredMode>) -> &'static str {
    match mode {
        Some(StructuredMode::Native) => "native",
        Some(StructuredMode::Tool) => "tool",
        Some(StructuredMode::Prompted) => "prompted",
        _ => "auto",
    }
}

fn to_json(choice: &Choice) -> Value {
    let (tests, passed, first) = choice.measured;
    json!({
        "model": choice.model,
        "mode": mode_name(choice.mode),
        "max_retries": choice.max_retries,
        "why": choice.why,
        "tests": tests, "passed": passed, "valid_first_try": first,
    })
}

#[cfg(test)]
mod tests;
