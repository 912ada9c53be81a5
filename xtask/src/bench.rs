//! `cargo xtask bench`: run every bench target and the embedded model's content-quality prompts
//! ([`quality`]), then summarize `target/criterion` and the reports that give figures
//! (`target/claij/bench-local.md`, `bench-mcp.md`, `bench-quality.md`, `bench-recall.md`), and end with the goals
//! table of issue 18 ([`goals`], also written to `target/claij/bench-goals.md`).
//! `cargo xtask bench --goals` renders that table from the last results without running anything.
//! The local model's bench times `examples/fsm/code-review.json` with a `claij` binary
//! (`CLAIJ_BENCH_FSM`): `$CLAIJ_BIN`, else the release build the quality prompts use.

mod goals;
mod quality;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::cmd::{Cmd, display_path};
use crate::metadata::Workspace;
use crate::{chroma, embed_model, model};

/// One benchmark's result, from `new/estimates.json` and `new/benchmark.json`.
#[derive(Debug, Clone, PartialEq)]
struct Estimate {
    id: String,
    mean_ns: f64,
    throughput: Option<Throughput>,
}

/// How much one iteration processes, as criterion records it in `benchmark.json`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Throughput {
    Bits(f64),
    Bytes(f64),
    BytesDecimal(f64),
    Elements(f64),
    ElementsAndBytes { elements: f64, bytes: f64 },
}

/// Runs `cargo bench` over the bench targets only (so criterion flags never reach a libtest
/// harness), passing `args` to criterion, then the quality prompts (unless `--no-quality`), then
/// prints the results this run wrote. `bench quality [OPTIONS]` runs the quality prompts alone.
pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    if let Some((first, rest)) = args.split_first()
        && first == "quality"
    {
        return quality::run(rest);
    }
    if args.iter().any(|arg| arg == "--goals") {
        if args.len() > 1 {
            eprintln!("xtask: `bench --goals` takes no other argument");
            return Ok(ExitCode::from(2));
        }
        let workspace = Workspace::load()?;
        print_goals(&workspace.target_directory, None)?;
        return Ok(ExitCode::SUCCESS);
    }
    let workspace = Workspace::load()?;
    let criterion_dir = workspace.target_directory.join("criterion");
    // Some filesystems store whole-second mtimes: allow for the truncation.
    let started = SystemTime::now() - Duration::from_secs(2);
    // `cargo xtask bench -- --quick` and `cargo xtask bench --quick` mean the same.
    let args = args.strip_prefix(&["--".to_owned()]).unwrap_or(args);
    let with_quality = !args.iter().any(|arg| arg == "--no-quality");
    let args: Vec<&String> = args.iter().filter(|arg| *arg != "--no-quality").collect();
    // `claij/recall`: the embedded memory store's bench needs its feature; `claij/local` too for
    // the recall@k bench (the embedded sentence model).
    let mut cargo = Cmd::cargo().args([
        "bench",
        "--workspace",
        "--features",
        "claij/recall,claij/local",
        "--bench",
        "*",
    ]);
    match fsm_binary(with_quality, |name| std::env::var_os(name)) {
        FsmBinary::Inherited | FsmBinary::Skip => {}
        FsmBinary::Given(path) => cargo = cargo.env(FSM_VAR, path),
        FsmBinary::Build => {
            Cmd::cargo()
                .args(["build", "--release", "-p", "claij-cli"])
                .run()
                .context("cannot build the claij CLI")?;
            let claij = workspace
                .target_directory
                .join("release")
                .join(format!("claij{}", std::env::consts::EXE_SUFFIX));
            cargo = cargo.env(FSM_VAR, claij);
        }
    }
    // What the benches read, installed as `cargo xtask test` installs it (a failure is said and the
    // bench that needs it says so in turn): the chat and sentence models, the Chroma server.
    for (step, ensured) in [
        ("model", model::ensure()),
        ("embed-model", embed_model::ensure()),
        ("chroma", chroma::ensure()),
    ] {
        if let Err(err) = ensured {
            println!("bench: {step}: {err:#} (the benches that need it say so)");
        }
    }
    cargo = cargo
        .env("CLAIJ_MODEL_DIR", model::model_dir())
        .env("CLAIJ_CHROMA", chroma::server_dir());
    if !args.is_empty() {
        cargo = cargo.arg("--").args(args);
    }
    cargo.run()?;
    if with_quality {
        println!();
        quality::measure(&quality::Options::default(), &workspace)?;
    }

    println!();
    let estimates = read_estimates(&criterion_dir, Some(started));
    if estimates.is_empty() {
        println!(
            "no criterion results written by this run under {}",
            display_path(&criterion_dir)
        );
    } else {
        print!("{}", table(&estimates));
    }
    // Benches that report figures rather than criterion estimates (the local model's, the MCP
    // overhead, the content quality, recall@k) write markdown here.
    for name in [
        "bench-local.md",
        "bench-mcp.md",
        "bench-quality.md",
        "bench-recall.md",
    ] {
        let report = workspace.target_directory.join("claij").join(name);
        let fresh = fs::metadata(&report)
            .and_then(|m| m.modified())
            .is_ok_and(|m| m >= started);
        if fresh && let Ok(text) = fs::read_to_string(&report) {
            print!("\n{text}");
        }
    }
    println!();
    print_goals(&workspace.target_directory, Some(started))?;
    Ok(ExitCode::SUCCESS)
}

/// The variable that gives the local bench a `claij` binary to time the code-review FSM with.
const FSM_VAR: &str = "CLAIJ_BENCH_FSM";

/// Where the local bench's `claij` binary comes from.
#[derive(Debug, Clone, PartialEq)]
enum FsmBinary {
    /// The caller set `CLAIJ_BENCH_FSM`; the bench inherits it.
    Inherited,
    /// `$CLAIJ_BIN`, the binary the quality prompts run.
    Given(PathBuf),
    /// A release build of this tree, which the quality prompts build anyway.
    Build,
    /// `--no-quality` and no binary named: the FSM row stays "not measured".
    Skip,
}

fn fsm_binary(with_quality: bool, var: impl Fn(&str) -> Option<OsString>) -> FsmBinary {
    if var(FSM_VAR).is_some() {
        FsmBinary::Inherited
    } else if let Some(bin) = var("CLAIJ_BIN") {
        FsmBinary::Given(bin.into())
    } else if with_quality {
        FsmBinary::Build
    } else {
        FsmBinary::Skip
    }
}

/// Prints the goals table from the latest results under `target_dir` (marking those older than
/// `since`, when given) and writes it to `target_dir/claij/bench-goals.md`.
fn print_goals(target_dir: &Path, since: Option<SystemTime>) -> Result<()> {
    let table = goals::render(&goals::Sources::load(target_dir, since));
    print!("{table}");
    let dir = target_dir.join("claij");
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", display_path(&dir)))?;
    let path = dir.join(goals::GOALS_FILE);
    fs::write(&path, &table).with_context(|| format!("cannot write {}", display_path(&path)))?;
    println!("\n(written to {})", display_path(&path));
    Ok(())
}

/// Every result under `criterion_dir` (written at or after `since`, when given), sorted by id.
/// A missing or unreadable directory or file just yields fewer results.
fn read_estimates(criterion_dir: &Path, since: Option<SystemTime>) -> Vec<Estimate> {
    let mut dirs = Vec::new();
    find_new_dirs(criterion_dir, &mut dirs);
    let mut estimates: Vec<Estimate> = dirs
        .iter()
        .filter(|dir| {
            let modified = fs::metadata(dir.join("estimates.json")).and_then(|m| m.modified());
            since.is_none_or(|since| modified.is_ok_and(|m| m >= since))
        })
        .filter_map(|dir| {
            let estimates = fs::read_to_string(dir.join("estimates.json")).ok()?;
            let benchmark = fs::read_to_string(dir.join("benchmark.json")).ok();
            let fallback_id = dir.parent()?.strip_prefix(criterion_dir).ok()?;
            parse_estimate(
                &estimates,
                benchmark.as_deref(),
                &fallback_id.to_string_lossy(),
            )
        })
        .collect();
    estimates.sort_by(|a, b| a.id.cmp(&b.id));
    estimates
}

/// Collects the `new` directories (criterion's latest results) below `dir`.
fn find_new_dirs(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if entry.file_name() == "new" && path.join("estimates.json").is_file() {
            found.push(path);
        } else if entry.file_name() != "report" {
            find_new_dirs(&path, found);
        }
    }
}

fn parse_estimate(estimates: &str, benchmark: Option<&str>, fallback_id: &str) -> Option<Estimate> {
    let estimates: Value = serde_json::from_str(estimates).ok()?;
    let mean_ns = estimates["mean"]["point_estimate"].as_f64()?;
    let benchmark: Value = benchmark
        .and_then(|b| serde_json::from_str(b).ok())
        .unwrap_or(Value::Null);
    let id = benchmark["full_id"]
        .as_str()
        .map_or_else(|| fallback_id.replace('\\', "/"), str::to_owned);
    Some(Estimate {
        id,
        mean_ns,
        throughput: parse_throughput(&benchmark["throughput"]),
    })
}

/// criterion serializes its `Throughput` enum externally tagged: `{"Bytes": 1024}`.
fn parse_throughput(value: &Value) -> Option<Throughput> {
    let (kind, amount) = value.as_object()?.iter().next()?;
    let throughput = match kind.as_str() {
        "Bits" => Throughput::Bits(amount.as_f64()?),
        "Bytes" => Throughput::Bytes(amount.as_f64()?),
        "BytesDecimal" => Throughput::BytesDecimal(amount.as_f64()?),
        "Elements" => Throughput::Elements(amount.as_f64()?),
        "ElementsAndBytes" => Throughput::ElementsAndBytes {
            elements: amount["elements"].as_f64()?,
            bytes: amount["bytes"].as_f64()?,
        },
        _ => return None,
    };
    Some(throughput)
}

/// The summary table: benchmark id, mean time, throughput.
fn table(estimates: &[Estimate]) -> String {
    let rows: Vec<[String; 3]> = estimates
        .iter()
        .map(|e| {
            let throughput = e
                .throughput
                .map_or_else(String::new, |t| format_throughput(t, e.mean_ns));
            [e.id.clone(), format_time(e.mean_ns), throughput]
        })
        .collect();
    let header = [
        "benchmark".to_owned(),
        "mean".to_owned(),
        "throughput".to_owned(),
    ];
    let width = |col: usize| {
        std::iter::once(&header)
            .chain(&rows)
            .map(|row| row[col].chars().count())
            .max()
            .unwrap_or(0)
    };
    let (id_width, mean_width) = (width(0), width(1));
    std::iter::once(&header)
        .chain(&rows)
        .map(|[id, mean, throughput]| {
            let line = format!("{id:<id_width$}  {mean:>mean_width$}  {throughput}");
            format!("{}\n", line.trim_end())
        })
        .collect()
}

/// A time in nanoseconds with the unit scaled to keep three or four significant digits.
fn format_time(ns: f64) -> String {
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    format!("{} {unit}", significant(value))
}

fn format_throughput(throughput: Throughput, mean_ns: f64) -> String {
    let per_second = |amount: f64| amount * 1e9 / mean_ns;
    match throughput {
        Throughput::Bits(bits) => scale(per_second(bits), 1000.0, ["b/s", "Kb/s", "Mb/s", "Gb/s"]),
        Throughput::Bytes(bytes) => scale(
            per_second(bytes),
            1024.0,
            ["B/s", "KiB/s", "MiB/s", "GiB/s"],
        ),
        Throughput::BytesDecimal(bytes) => {
            scale(per_second(bytes), 1000.0, ["B/s", "KB/s", "MB/s", "GB/s"])
        }
        Throughput::Elements(elements) => scale(
            per_second(elements),
            1000.0,
            ["elem/s", "Kelem/s", "Melem/s", "Gelem/s"],
        ),
        Throughput::ElementsAndBytes { elements, bytes } => format!(
            "{}, {}",
            format_throughput(Throughput::Elements(elements), mean_ns),
            format_throughput(Throughput::Bytes(bytes), mean_ns)
        ),
    }
}

fn scale(mut value: f64, step: f64, units: [&str; 4]) -> String {
    let mut unit = 0;
    while value >= step && unit + 1 < units.len() {
        value /= step;
        unit += 1;
    }
    format!("{} {}", significant(value), units[unit])
}

/// Like criterion's own output: more decimals for small numbers.
fn significant(value: f64) -> String {
    if value < 10.0 {
        format!("{value:.3}")
    } else if value < 100.0 {
        format!("{value:.2}")
    } else if value < 1000.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    }
}
