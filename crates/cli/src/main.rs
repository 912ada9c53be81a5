//! The `claij` binary: ask a model for a validated JSON answer; validate, repair and compose schemas
//! for LLM replies, from the command line.
//!
//! Exit codes: 0 success, 1 the input is invalid (or nothing could be recovered, or `ask` got no valid
//! reply within its retries), 2 usage, IO, configuration or backend error.
//! Every error is one line on stderr saying what and where; the binary never shows a backtrace.
//! Log lines (warnings by default, `-v`, `-q`, `RUST_LOG`) go to stderr too ([`logging`]).

use std::io::Write as _;
use std::num::NonZeroUsize;
use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

use crate::exit::{Status, one_line};

mod args;
mod ask;
mod chat;
mod config;
mod exit;
mod flags;
mod front;
mod fsm;
mod input;
mod logging;
mod mcp;
mod memory;
mod models;
mod options;
mod repair;
mod schema;
mod serve;
mod transitions;
mod validate;

/// Every LLM reply a validated JSON document.
#[derive(Debug, Parser)]
#[command(name = "claij", version, about, long_about = None)]
struct Cli {
    #[command(flatten)]
    global: args::Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Ask a model; the answer is a JSON document valid against the schema (exit 0 valid, 1 no valid
    /// reply within the retries or the model refused, 2 usage, configuration or backend error).
    Ask(ask::Args),
    /// Talk with a model, a turn per line; every reply validated, the memory interceptor on (exit 0,
    /// or 1 when the last turn got no valid reply).
    Chat(chat::Args),
    /// Each model's prices (their date and source) and what the compatibility matrix (`cargo
    /// xtask integration`) makes claij choose for each measured model: structured-output mode and
    /// retry budget, and why; `models prices --import FILE` updates the prices.
    Models(models::Args),
    /// Validate a JSON instance against a schema (exit 0 valid, 1 invalid, 2 usage or IO error).
    Validate(validate::Args),
    /// Recover a JSON value from an LLM reply on stdin: extract, repair, and with --schema coerce and validate.
    Repair(repair::Args),
    /// Compose and render response schemas.
    #[command(subcommand)]
    Schema(schema::Command),
    /// State machines defined as data: check, draw, run and resume them, and answer a run on
    /// Restate that waits for a person.
    #[command(subcommand)]
    Fsm(fsm::Command),
    /// MCP servers: list them and their tools, call a tool, chat with a model over them, log in
    /// to those that ask for OAuth, print a configuration for those `cargo xtask mcp-servers`
    /// installed.
    #[command(subcommand)]
    Mcp(mcp::Command),
    /// The recall memory's store (`[memory.recall]`, `--memory-strategy recall`): list, search
    /// and forget memories.
    #[command(subcommand)]
    Memory(memory::Command),
    /// Show the configuration (`$CLAIJ_CONFIG`, else `~/.config/claij/config.toml`), secrets redacted.
    #[command(subcommand)]
    Config(config::Command),
    /// Serve runs for a durable engine: `claij serve restate` is a Restate worker.
    #[command(subcommand)]
    Serve(serve::Command),
}

fn main() -> ExitCode {
    // A bug must still end in one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(std::io::stderr(), "error: internal error: {info}");
    }));
    let mut command = Cli::command();
    let parsed = command
        .try_get_matches_from_mut(std::env::args_os())
        .and_then(|matches| Ok((Cli::from_arg_matches(&matches)?, matches)));
    let cli = match parsed {
        Ok((cli, matches)) => {
            // A flag the command cannot honour in its mode is refused before anything runs.
            if let Err(line) = flags::check(&command, &matches) {
                let _ = writeln!(std::io::stderr(), "error: {line}");
                return ExitCode::from(2);
            }
            cli
        }
        // `--help` and `--version` print to stdout and exit 0.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "{}", usage_error(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    // Before the exporter starts its threads (see `set_compute_threads`).
    let threads = match &cli.command {
        Command::Ask(args) => args.threads(),
        Command::Chat(args) => args.threads(),
        Command::Fsm(cmd) => cmd.threads(),
        Command::Mcp(cmd) => cmd.threads(),
        Command::Serve(cmd) => cmd.threads(),
        _ => None,
    };
    if let Some(threads) = threads {
        set_compute_threads(threads);
    }
    if cli.global.config.is_some()
        && let Some(name) = cli.command.reads_no_configuration()
    {
        let _ = writeln!(
            std::io::stderr(),
            "error: --config: `claij {name}` reads no configuration"
        );
        return ExitCode::from(2);
    }
    let front = std::sync::Arc::new(front::Front::new(cli.global.config.clone()));
    let log = logging::config(&cli.global, cli.command.log_directives());
    let logging = match logging::install(&cli.global, &log) {
        Ok(logging) => logging,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {}", one_line(&format!("{e:#}")));
            return ExitCode::from(2);
        }
    };
    let code = run(&cli, &front);
    // Every exit after this point passes here: the exporter is flushed (within its bound).
    logging.shutdown();
    code
}

/// Runs the command with the process's front door; its exit code.
fn run(cli: &Cli, front: &std::sync::Arc<front::Front>) -> ExitCode {
    let result = match &cli.command {
        Command::Ask(args) => ask::run(args, front),
        Command::Chat(args) => chat::run(args, front),
        Command::Models(args) => models::run(args, front),
        Command::Validate(args) => validate::run(args),
        Command::Repair(args) => repair::run(args),
        Command::Schema(cmd) => schema::run(cmd, front),
        Command::Fsm(cmd) => fsm::run(cmd, front),
        Command::Mcp(cmd) => mcp::run(cmd, front),
        Command::Config(cmd) => config::run(cmd, front),
        Command::Memory(cmd) => memory::run(cmd, front),
        Command::Serve(cmd) => serve::run(cmd, front),
    };
    match result {
        Ok(Status::Ok) => ExitCode::SUCCESS,
        Ok(Status::Invalid) => ExitCode::from(1),
        Ok(Status::Signalled(signal)) => {
            let _ = writeln!(std::io::stderr(), "error: stopped by {}", signal.name());
            ExitCode::from(signal.exit_code())
        }
        Err(e) => {
            // `{:#}`: the error and each of its causes, `outer: inner: ...` (claij's errors leave
            // their source out of their own message, so each cause is said once).
            let _ = writeln!(std::io::stderr(), "error: {}", one_line(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}

impl Command {
    /// The command's name when it reads no configuration file, so `--config` is refused.
    fn reads_no_configuration(&self) -> Option<&'static str> {
        match self {
            Command::Validate(_) => Some("validate"),
            Command::Repair(_) => Some("repair"),
            Command::Schema(schema::Command::Cost(_)) => None,
            Command::Schema(_) => Some("schema"),
            Command::Fsm(cmd) => cmd.reads_no_configuration(),
            Command::Mcp(cmd) => cmd.reads_no_configuration(),
            Command::Ask(_)
            | Command::Chat(_)
            | Command::Models(_)
            | Command::Config(_)
            | Command::Memory(_)
            | Command::Serve(_) => None,
        }
    }

    /// Log filter directives a command's flags add: `--mcp-log-level` shows the servers' messages
    /// (they send only those at the level asked for and above).
    fn log_directives(&self) -> Vec<String> {
        match self {
            Command::Mcp(cmd) if cmd.mcp_log_level().is_some() => {
                vec![format!("{}=trace", claij::mcp::protocol::SERVER_LOG_TARGET)]
            }
            _ => Vec::new(),
        }
    }
}

/// Sets the thread count of the local model's compute pools. The environment is the only way in:
/// candle sizes its process-wide rayon pools (`candle_core::utils`) from `RAYON_NUM_THREADS` and
/// `CANDLE_NUM_THREADS` once, at their first use, and takes no count per model; so the library
/// cannot be given it, and the binary sets the variables before any thread starts.
#[allow(unsafe_code)]
fn set_compute_threads(threads: NonZeroUsize) {
    let threads = threads.to_string();
    // SAFETY: `set_var` is unsound only while another thread may read or write the environment. This
    // runs at the start of the synchronous `main`, right after argument parsing: the process has a
    // single thread (no runtime yet: `ask` builds its tokio runtime, and the model its threads, later).
    unsafe {
        std::env::set_var("CANDLE_NUM_THREADS", &threads);
        std::env::set_var("RAYON_NUM_THREADS", &threads);
    }
}

/// clap's error as one line: its first paragraph, folded (the usage and the `--help` tip dropped).
fn usage_error(rendered: &str) -> String {
    let first = rendered.split("\n\n").next().unwrap_or(rendered);
    one_line(first)
}
