//! `cargo xtask demo`: the claij CLI on the messy replies in `examples/`, offline until a local model lands.

use std::fs;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::cmd::{Cmd, root};
use crate::metadata::Workspace;

const BASE: &str = "examples/schemas/base.json";
const DELTA: &str = "examples/schemas/memory.delta.json";
const MESSY: &str = "examples/replies/messy.txt";
const INVALID: &str = "examples/replies/invalid.json";

pub fn run(args: &[String]) -> Result<ExitCode> {
    let mut profile = "release";
    for arg in args {
        match arg.as_str() {
            "--dev" => profile = "dev",
            other => return crate::usage_error(&format!("`demo` does not take `{other}`")),
        }
    }
    println!(
        "claij demo (offline: no model yet; this shows extraction, repair, coercion and validation of a messy LLM reply)"
    );
    let model = crate::model::ensure()?;
    println!("model: {}", model.display());

    let workspace = Workspace::load()?;
    let mut build = Cmd::cargo().args(["build", "-p", "claij-cli"]);
    if profile == "release" {
        build = build.arg("--release");
    }
    build.run().context("cannot build the claij CLI")?;
    // cargo puts the dev profile in `debug/`.
    let profile_dir = if profile == "dev" { "debug" } else { profile };
    let claij = workspace
        .target_directory
        .join(profile_dir)
        .join(format!("claij{}", std::env::consts::EXE_SUFFIX));
    if !claij.is_file() {
        bail!("the build produced no {}", claij.display());
    }

    let scratch = std::env::temp_dir().join(format!("claij-demo-{}", std::process::id()));
    fs::create_dir_all(&scratch).with_context(|| format!("cannot create {}", scratch.display()))?;
    let result = steps(&claij, &scratch);
    // Best effort: a leftover temp dir is harmless and must not hide the demo's own result.
    let _ = fs::remove_dir_all(&scratch);
    result?;
    println!("\ndemo finished: every step behaved as expected");
    Ok(ExitCode::SUCCESS)
}

fn steps(claij: &Path, scratch: &Path) -> Result<()> {
    section("1. compose the base response schema with a schema delta from an interceptor");
    let composed = claij_cmd(claij)
        .args(["schema", "compose", BASE, DELTA])
        .echo_read()
        .map_err(cli_failure)?;
    serde_json::from_str::<serde_json::Value>(&composed).map_err(|err| {
        cli_failure(anyhow::anyhow!(
            "`claij schema compose` printed something that is not JSON: {err}"
        ))
    })?;
    println!("{}", composed.trim_end());
    let schema = scratch.join("composed.json");
    fs::write(&schema, &composed).with_context(|| format!("cannot write {}", schema.display()))?;

    section(
        "2. extract, repair and coerce a messy reply, then validate it against the composed schema",
    );
    let messy =
        fs::read_to_string(root().join(MESSY)).with_context(|| format!("cannot read {MESSY}"))?;
    println!("the reply, as an LLM might send it ({MESSY}):\n");
    println!("{}\n", messy.trim_end());
    expect_exit(
        claij_cmd(claij)
            .args(["repair", "--schema"])
            .arg(&schema)
            .arg("--json")
            .stdin_file(MESSY),
        0,
        "repaired and valid",
    )?;

    section("3. validate a reply that is wrong in two ways: `state` missing, `answer` a number");
    expect_exit(
        claij_cmd(claij)
            .args(["validate", "--schema"])
            .arg(&schema)
            .arg(INVALID),
        1,
        "invalid, as expected: the violations above are the point of this step",
    )
}

fn claij_cmd(claij: &Path) -> Cmd {
    Cmd::new(claij).shown_as("claij")
}

/// Runs `cmd` and fails unless it exits with `expected`, blaming the CLI for any other exit.
fn expect_exit(cmd: Cmd, expected: i32, meaning: &str) -> Result<()> {
    let status = cmd.status()?;
    match status.code() {
        Some(code) if code == expected => {
            println!("(exit {code}: {meaning})");
            Ok(())
        }
        _ => Err(cli_failure(anyhow::anyhow!(
            "`{cmd}` ended with {status}, expected exit {expected}"
        ))),
    }
}

/// Marks an error as the CLI's: the demo's inputs and steps are fixed, so a surprise is a CLI bug.
fn cli_failure(err: anyhow::Error) -> anyhow::Error {
    err.context(
        "a claij CLI step failed unexpectedly (crates/cli); the demo inputs are in examples/",
    )
}

fn section(title: &str) {
    println!("\n==> {title}");
}
