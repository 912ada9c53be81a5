//! The compatibility matrix, put to use: for each model it has measured, the structured-output mode
//! and the retry budget claij chooses, whether it is supported for structured output at all; the
//! prices claij uses ([`prices`]); and `claij models`, which shows each model's prices, their date
//! and source, and what it would choose and why.
//!
//! `cargo xtask integration` merges each run into `$XDG_DATA_HOME/claij/compat-matrix.json` (default
//! `~/.local/share/claij/`): the [`Record`] of each test `claij suite run` printed (the model, whether
//! it passed, was valid on the first try, its retries and the mode it ran in), the newest per model,
//! suite and mode. claij reads the file named by `--matrix`, else that one, from any directory (a
//! `target/` under the current directory is not consulted).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use claij_interceptors::StructuredMode;
use serde_json::{Value, json};

use crate::Status;
use crate::ask::model::DEFAULT_MAX_RETRIES;
use crate::suite::record::{Matrix, Record};

pub(crate) mod prices;

/// Arguments of `claij models`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// The matrix file (default: `$XDG_DATA_HOME/claij/compat-matrix.json`, else
    /// `~/.local/share/claij/compat-matrix.json`, where `cargo xtask integration` merges its runs).
    #[arg(long, value_name = "FILE")]
    matrix: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `claij models` subcommands.
#[derive(Debug, clap::Subcommand)]
enum Command {
    /// The prices claij uses (the configuration's `[models]` over an imported list over the
    /// built-in one), or `--import FILE` a price list (genai-prices, LiteLLM).
    Prices(prices::Args),
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

/// Prints every model's prices, then each measured model's choice (without a matrix, a line on
/// stderr says how to make one).
pub(crate) fn run(args: &Args) -> Result<Status> {
    let settings = crate::config::Settings::load()?;
    if let Some(Command::Prices(prices)) = &args.command {
        return prices::run(prices, &settings);
    }
    let path = args.matrix.clone().or_else(default_path);
    let matrix = match &path {
        Some(path) => read(path)?,
        None => Matrix::default(),
    };
    let choices = choices(&matrix);
    let mut out = std::io::stdout().lock();
    if args.json {
        let list: Vec<Value> = choices
            .iter()
            .map(|c| to_json(c, unsupported(&matrix, &[&c.model]).as_deref()))
            .collect();
        let report = json!({"matrix": path, "models": list, "prices": prices::to_json(&settings)?});
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(Status::Ok);
    }
    let prices = prices::render(&settings)?;
    let Some(path) = path else {
        out.write_all(prices.as_bytes())?;
        out.flush()?;
        writeln!(
            std::io::stderr(),
            "{}",
            no_matrix(crate::config::data_dir().as_deref())
        )?;
        return Ok(Status::Ok);
    };
    writeln!(out, "matrix: {}", path.display())?;
    for choice in &choices {
        let (tests, passed, first) = choice.measured;
        let verdict = match unsupported(&matrix, &[&choice.model]) {
            Some(why) => format!("UNSUPPORTED for structured output: {why}; if used anyway: "),
            None => String::new(),
        };
        writeln!(
            out,
            "{}: {verdict}mode {}, {} retr{} ({passed}/{tests} passed, {first} valid first try): {}",
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
    write!(out, "\n{prices}")?;
    Ok(Status::Ok)
}

/// What `claij models` says when there is no matrix: the command that measures a model and writes
/// one, a command that works as it is printed (the embedded model, offline and free), and where it
/// writes it (`data_dir`, the user's data directory; `None` when neither variable says).
pub(crate) fn no_matrix(data_dir: Option<&Path>) -> String {
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
const MEASURE_LOCAL: &str = "cargo xtask integration --llm local --yes";

/// The matrix claij consults when nothing names one, if there is one: the user's, where `cargo
/// xtask integration` merges its runs (`$XDG_DATA_HOME/claij/compat-matrix.json`, else
/// `~/.local/share/claij/compat-matrix.json`), the same from any directory.
pub(crate) fn default_path() -> Option<PathBuf> {
    let shared = crate::config::data_dir()?.join("compat-matrix.json");
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

/// Why the model (by any of `names`) is unsupported for structured output, if the matrix says so:
/// its retry suite ran and no test of it passed, in any mode, within the retries.
pub(crate) fn unsupported(matrix: &Matrix, names: &[&str]) -> Option<String> {
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
pub(crate) fn mode_name(mode: Option<StructuredMode>) -> &'static str {
    match mode {
        Some(StructuredMode::Native) => "native",
        Some(StructuredMode::Tool) => "tool",
        Some(StructuredMode::Prompted) => "prompted",
        _ => "auto",
    }
}

fn to_json(choice: &Choice, unsupported: Option<&str>) -> Value {
    let (tests, passed, first) = choice.measured;
    json!({
        "model": choice.model,
        "supported": unsupported.is_none(),
        "unsupported": unsupported,
        "mode": mode_name(choice.mode),
        "max_retries": choice.max_retries,
        "why": choice.why,
        "tests": tests, "passed": passed, "valid_first_try": first,
    })
}

#[cfg(test)]
mod tests;
