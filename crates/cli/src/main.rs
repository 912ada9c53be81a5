//! The `claij` binary: validate, repair and compose schemas for LLM replies, from the command line.
//!
//! Exit codes: 0 success, 1 the input is invalid (or nothing could be recovered), 2 usage or IO error.
//! Every error is one line on stderr saying what and where; the binary never shows a backtrace.

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod input;
mod repair;
mod schema;
mod validate;

/// Every LLM reply a validated JSON document.
#[derive(Debug, Parser)]
#[command(name = "claij", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate a JSON instance against a schema (exit 0 valid, 1 invalid, 2 usage or IO error).
    Validate(validate::Args),
    /// Recover a JSON value from an LLM reply on stdin: extract, repair, and with --schema coerce and validate.
    Repair(repair::Args),
    /// Compose and render response schemas.
    #[command(subcommand)]
    Schema(schema::Command),
}

/// How a command ended, when it did not fail outright.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    /// The input was read but is invalid (exit 1).
    Invalid,
}

fn main() -> ExitCode {
    // A bug must still end in one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(std::io::stderr(), "error: internal error: {info}");
    }));
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Validate(args) => validate::run(&args),
        Command::Repair(args) => repair::run(&args),
        Command::Schema(cmd) => schema::run(&cmd),
    };
    match result {
        Ok(Status::Ok) => ExitCode::SUCCESS,
        Ok(Status::Invalid) => ExitCode::from(1),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {}", one_line(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}

/// Errors are one line: newlines inside (from a library's message) are folded.
fn one_line(s: &str) -> String {
    s.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
