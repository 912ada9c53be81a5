//! `cargo xtask integration`: the live suites against real models, with a plan, a cost estimate and
//! a confirmation before anything is sent, then the compatibility matrix.
//!
//! The suites live in the `claij-suite` binary (crates/suite, not shipped: `claij-suite run`),
//! because xtask depends on no claij crate: xtask builds it, runs it once per model and suite, reads
//! one JSON record per test from its stdout, and merges the run into the user's matrix (`store`):
//! `compat-matrix.json` (what `claij models`, `ask` and `chat` read), `compat-matrix.md` and a line
//! of `compat-history.jsonl`.

mod matrix;
mod plan;
mod store;
#[cfg(test)]
mod tests;

use std::io::{BufRead as _, BufReader, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, bail};

use self::matrix::{Matrix, Record};
use self::plan::{Plan, Suite, money};
use crate::cmd::{Cmd, display_path, root};
use crate::metadata::Workspace;

/// Use this claij-suite binary instead of building one (tests point it at a stand-in).
const SUITE_BIN: &str = "CLAIJ_SUITE_BIN";

/// The parsed arguments.
#[derive(Debug, Clone, Default, PartialEq)]
struct Options {
    llms: Vec<String>,
    suites: Vec<String>,
    yes: bool,
    dry_run: bool,
    /// Where the matrix goes; default the user's data directory (`store::data_dir`).
    out: Option<PathBuf>,
    /// Also write the Markdown of the models this run measured here (`docs/compat-matrix.md`).
    markdown: Option<PathBuf>,
    /// `claij-suite run --max-retries` (its default: 1).
    max_retries: Option<u64>,
    /// `claij-suite run --timeout`, seconds per test (its default: 30).
    timeout: Option<u64>,
}

pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    execute(args).map(ExitCode::from)
}

/// [`run`] with the exit code as a number (the tests re-run xtask in a child process).
fn execute(args: &[String]) -> Result<u8> {
    let options = match parse(args) {
        Ok(options) => options,
        Err(message) => {
            crate::usage_error(&message)?;
            return Ok(2);
        }
    };
    let mut plan = match Plan::new(&options.llms, &options.suites) {
        Ok(plan) => plan,
        Err(message) => {
            crate::usage_error(&message)?;
            return Ok(2);
        }
    };
    if let Some(retries) = options.max_retries {
        plan.max_retries = retries;
    }
    match prices(|name| std::env::var_os(name)) {
        Ok(prices) => plan = plan.with_prices(&prices),
        Err(message) => {
            crate::usage_error(&message)?;
            return Ok(2);
        }
    }
    print!("{}", plan::render(&plan));
    std::io::stdout().flush()?;
    if options.dry_run {
        println!("\n--dry-run: nothing was run");
        return Ok(0);
    }
    if plan.spends_money() && !options.yes {
        if !std::io::stdin().is_terminal() {
            eprintln!(
                "xtask: refusing to spend money without confirmation: stdin is not a terminal; pass --yes to spend the estimated {}",
                money(plan.cost())
            );
            return Ok(2);
        }
        if !confirm()? {
            eprintln!("xtask: aborted: nothing was sent");
            return Ok(2);
        }
    }
    let Some(out) = options
        .out
        .clone()
        .or_else(|| store::data_dir(|name| std::env::var_os(name)))
    else {
        bail!("no directory for the matrix: set XDG_DATA_HOME or HOME, or give --out DIR");
    };
    let suite = suite_binary()?;
    let records = run_plan(&suite, &plan, &suite_flags(&options))?;
    let matrix = Matrix::from_records(&records);
    write_matrix(&records, &plan, &options, &out, &command(args))?;
    let failed = matrix.failed();
    let total = matrix.total();
    println!(
        "\nintegration: {}/{} tests passed, {} failed; {}+{} tokens, {}",
        total.passed,
        total.tests,
        failed,
        total.tokens_in,
        total.tokens_out,
        money(total.known_cost())
    );
    Ok(if failed == 0 { 0 } else { 1 })
}

/// The prices the estimates use: claij's built-in list, and over it the list `claij models prices
/// --import` keeps in the user's data directory, when there is one.
fn prices(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<plan::Prices, String> {
    let prices = plan::Prices::builtin();
    let Some(path) = store::data_dir(var).map(|dir| dir.join("prices.json")) else {
        return Ok(prices);
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => prices.with_imported(&path, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(prices),
        Err(e) => Err(format!(
            "cannot read the imported prices {}: {e}",
            path.display()
        )),
    }
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| {
            args.next()
                .cloned()
                .ok_or_else(|| format!("`{flag}` needs a value"))
        };
        match arg.as_str() {
            "--llm" => options
                .llms
                .extend(value("--llm")?.split(',').map(str::to_owned)),
            "--suite" => options
                .suites
                .extend(value("--suite")?.split(',').map(str::to_owned)),
            "--out" => options.out = Some(PathBuf::from(value("--out")?)),
            "--markdown" => options.markdown = Some(PathBuf::from(value("--markdown")?)),
            "--max-retries" => {
                options.max_retries = Some(number("--max-retries", &value("--max-retries")?, 0)?)
            }
            "--timeout" => options.timeout = Some(number("--timeout", &value("--timeout")?, 1)?),
            "--yes" | "-y" => options.yes = true,
            "--dry-run" => options.dry_run = true,
            other => return Err(format!("`integration` does not take `{other}`")),
        }
    }
    if options.llms.is_empty() {
        return Err("`integration` needs --llm ALIAS (or `local`, or `all`)".to_owned());
    }
    Ok(options)
}

/// A whole number of at least `min` for `flag`.
fn number(flag: &str, text: &str, min: u64) -> Result<u64, String> {
    text.parse::<u64>()
        .ok()
        .filter(|n| *n >= min)
        .ok_or_else(|| format!("`{flag}` needs a whole number of at least {min}, not `{text}`"))
}

/// The flags passed on to every `claij-suite run`.
fn suite_flags(options: &Options) -> Vec<String> {
    let mut flags = Vec::new();
    if let Some(retries) = options.max_retries {
        flags.extend(["--max-retries".to_owned(), retries.to_string()]);
    }
    if let Some(secs) = options.timeout {
        flags.extend(["--timeout".to_owned(), secs.to_string()]);
    }
    flags
}

/// How to measure this again, for the Markdown's header: the arguments, without where this copy
/// went and the confirmation.
fn command(args: &[String]) -> String {
    let mut kept = vec!["cargo xtask integration".to_owned()];
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => {
                args.next();
            }
            "--yes" | "-y" => {}
            _ => kept.push(arg.clone()),
        }
    }
    kept.join(" ")
}

/// Waits for ENTER. Ctrl-C ends the process here (the default SIGINT handler), before anything
/// is built or sent; end of input also aborts.
fn confirm() -> Result<bool> {
    print!("\npress ENTER to run, Ctrl-C to abort: ");
    std::io::stdout().flush()?;
    let mut line = String::new();
    let read = std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("cannot read the confirmation")?;
    Ok(read > 0)
}

/// `$CLAIJ_SUITE_BIN`, or the release build of claij-suite.
fn suite_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(SUITE_BIN) {
        return Ok(PathBuf::from(path));
    }
    Cmd::cargo()
        .args(["build", "--release", "-p", "claij-suite"])
        .run()
        .context("cannot build claij-suite")?;
    let suite = Workspace::load()?
        .target_directory
        .join("release")
        .join(format!("claij-suite{}", std::env::consts::EXE_SUFFIX));
    if !suite.is_file() {
        bail!("the build produced no {}", suite.display());
    }
    Ok(suite)
}

/// Runs every (model, suite), printing a line per test as it finishes, with a running total.
fn run_plan(suite_bin: &Path, plan: &Plan, flags: &[String]) -> Result<Vec<Record>> {
    let mut records = Vec::new();
    let total = plan.tests();
    let started = Instant::now();
    // The run's cost so far; unknown once a test's is (a model without a price).
    let (mut tokens, mut cost) = (0, Some(0.0));
    for model in &plan.models {
        for suite in &plan.suites {
            run_suite(suite_bin, &model.name, suite, flags, |record| {
                tokens += record.tokens_in + record.tokens_out;
                cost = cost.zip(record.cost).map(|(a, b)| a + b);
                let done = records.len() + 1;
                println!(
                    "{} [{done}/{total}] {} {}/{}: {} ({} attempts, {} retries, {}+{} tokens, {}, {:.1}s; run so far: {tokens} tokens, {}, {})",
                    progress_bar(done, total),
                    record.model,
                    record.suite,
                    record.test,
                    if record.passed { "pass" } else { "FAIL" },
                    record.attempts,
                    record.retries,
                    record.tokens_in,
                    record.tokens_out,
                    money(record.cost),
                    record.elapsed_ms as f64 / 1000.0,
                    money(cost),
                    crate::test::format_duration(started.elapsed()),
                );
                if !record.passed {
                    println!("        {}", record.detail);
                }
                records.push(record.clone());
            })?;
        }
    }
    Ok(records)
}

/// `|#####---------------|`: how much of the run is done, 20 characters wide.
fn progress_bar(done: usize, total: u64) -> String {
    const WIDTH: u64 = 20;
    let filled = (done as u64 * WIDTH)
        .checked_div(total)
        .unwrap_or(WIDTH)
        .min(WIDTH);
    format!(
        "|{}{}|",
        "#".repeat(filled as usize),
        "-".repeat((WIDTH - filled) as usize)
    )
}

/// `claij-suite run --llm MODEL --suite SUITE`: calls `each` per record as it arrives; a test
/// that printed no record (claij-suite failed first) becomes a failed record naming the exit status.
fn run_suite(
    suite_bin: &Path,
    model: &str,
    suite: &Suite,
    flags: &[String],
    mut each: impl FnMut(&Record),
) -> Result<()> {
    println!(
        "\n==> {model} {}: {} (running...)",
        suite.name,
        suite.tests.join(", ")
    );
    let mut child = Command::new(suite_bin)
        .args(["run", "--llm", model, "--suite", suite.name])
        .args(flags)
        .env("CLAIJ_MODEL_DIR", crate::model::model_dir())
        .env("CLAIJ_MCP_SERVERS", crate::mcp_servers::servers_dir())
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {}", suite_bin.display()))?;
    let mut seen = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line.context("cannot read claij-suite's output")?;
            if line.trim().is_empty() {
                continue;
            }
            match Record::parse(&line) {
                Ok(record) => {
                    seen.push(record.test.clone());
                    each(&record);
                }
                Err(why) => println!("        (ignored a line of claij-suite's output: {why})"),
            }
        }
    }
    let status = child.wait().context("cannot wait for claij-suite")?;
    for test in suite.tests {
        if !seen.iter().any(|t| t == test) {
            each(&Record::missing(
                model,
                suite.name,
                test,
                &format!("claij-suite run ended ({status}) without a result for this test"),
            ));
        }
    }
    Ok(())
}

/// Merges the run into the matrix in `dir` (and writes `--markdown`'s copy), then shows it.
fn write_matrix(
    records: &[Record],
    plan: &Plan,
    options: &Options,
    dir: &Path,
    command: &str,
) -> Result<()> {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let at = matrix::utc(secs);
    let stored = store::store(records, dir, &at, command)?;
    println!(
        "\nmatrix: {} and {} ({} model(s), merged with earlier runs); history: {}",
        display_path(&stored.json),
        display_path(&stored.markdown),
        stored.matrix.models.len(),
        display_path(&stored.history)
    );
    if let Some(path) = &options.markdown {
        // Only this run's models (with what earlier runs measured of them): a committed table
        // shows what its command measures, not whatever else this machine has measured.
        let ours: Vec<Record> = stored
            .matrix
            .records
            .iter()
            .filter(|r| plan.models.iter().any(|m| m.name == r.model))
            .cloned()
            .collect();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        store::write_atomic(path, &Matrix::from_records(&ours).to_markdown(&at, command))?;
        println!("markdown: {}", display_path(path));
    }
    print!("{}", stored.matrix.to_markdown(&at, command));
    Ok(())
}
