//! `cargo xtask demo`: a two-turn conversation with the embedded model through `claij ask`, every
//! answer a validated JSON document; then what the CLI does with a messy reply from `examples/`.

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
/// The conversation: a fact on turn 1, a question about it on turn 2 (answered from memory).
const TURNS: [&str; 2] = [
    "Remember: my favourite colour is blue.",
    "What is my favourite colour?",
];

pub fn run(args: &[String]) -> Result<ExitCode> {
    let mut profile = "release";
    for arg in args {
        match arg.as_str() {
            "--dev" => profile = "dev",
            other => return crate::usage_error(&format!("`demo` does not take `{other}`")),
        }
    }
    println!(
        "claij demo: two turns with a small model running here (SmolLM2-135M, offline, no key), each answer \
         a validated JSON document, the second recalling the first; then what claij does with a messy reply"
    );
    let model = crate::model::ensure()?;
    println!("model: {}", model.display());
    let model_dir = model
        .parent()
        .map(Path::to_path_buf)
        .with_context(|| format!("{} has no directory", model.display()))?;

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
    let result = conversation(&claij, &model_dir, &scratch)
        .and_then(|all_valid| messy_reply(&claij, &scratch).map(|()| all_valid));
    // Best effort: a leftover temp dir is harmless and must not hide the demo's own result.
    let _ = fs::remove_dir_all(&scratch);
    if result? {
        println!("\ndemo finished: every step behaved as expected");
    } else {
        println!("\ndemo finished, but the model gave no valid answer on a turn (see above)");
    }
    Ok(ExitCode::SUCCESS)
}

/// The two turns through `claij ask` on the local model, one memory file carrying the conversation.
/// Returns whether both answers were valid: a 135M model may still miss one within its retries
/// (exit 1), which the demo shows rather than hides.
fn conversation(claij: &Path, model_dir: &Path, scratch: &Path) -> Result<bool> {
    let memory = scratch.join("memory.json");
    let mut all_valid = true;
    for (i, prompt) in TURNS.iter().enumerate() {
        section(&format!(
            "{}. turn {}: {prompt}{}",
            i + 1,
            i + 1,
            if i == 0 {
                ""
            } else {
                " (the memory interceptor recalls turn 1's summary)"
            }
        ));
        let ask = claij_cmd(claij)
            .args([
                "ask",
                prompt,
                "--llm",
                "local",
                "--interceptors",
                "memory",
                "--memory",
            ])
            .arg(&memory)
            .env("CLAIJ_MODEL_DIR", model_dir);
        let status = ask.status()?;
        match status.code() {
            Some(0) => println!("(exit 0: the answer above is valid against the schema)"),
            Some(1) => {
                all_valid = false;
                println!(
                    "(exit 1: no valid answer within the retries; the violations above are what claij fed back)"
                );
            }
            _ => {
                return Err(cli_failure(anyhow::anyhow!(
                    "`{ask}` ended with {status}, expected exit 0 (or 1)"
                )));
            }
        }
    }
    let remembered =
        fs::read_to_string(&memory).with_context(|| format!("cannot read {}", memory.display()))?;
    println!(
        "\nthe memory file after the conversation:\n{}",
        remembered.trim_end()
    );
    Ok(all_valid)
}

/// What claij does with a reply a hosted model might send: prose, a code fence, single quotes.
fn messy_reply(claij: &Path, scratch: &Path) -> Result<()> {
    section("3. a messy reply: extract, repair and coerce it, then validate it");
    let composed = claij_cmd(claij)
        .args(["schema", "compose", BASE, DELTA])
        .echo_read()
        .map_err(cli_failure)?;
    serde_json::from_str::<serde_json::Value>(&composed).map_err(|err| {
        cli_failure(anyhow::anyhow!(
            "`claij schema compose` printed something that is not JSON: {err}"
        ))
    })?;
    println!("(the base schema plus the memory delta, as the pipeline composes it)");
    let schema = scratch.join("composed.json");
    fs::write(&schema, &composed).with_context(|| format!("cannot write {}", schema.display()))?;
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

    section("4. validate a reply that is wrong in two ways: `state` missing, `answer` a number");
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
