//! `claij repair`: recover the JSON value from an LLM reply on stdin.

use std::io::Write as _;

use anyhow::Result;
use claij::validation::{Outcome, Validator, extract, process};
use serde_json::json;

use crate::exit::Status;
use crate::input;

/// Arguments of `claij repair`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Coerce towards this schema and require the result to validate against it.
    #[arg(long, short)]
    schema: Option<String>,
    /// Print `{"value", "fixes"}` instead of the bare value.
    #[arg(long)]
    json: bool,
    /// Read at most this many bytes of stdin; a longer reply is an error (exit 2).
    #[arg(long, value_name = "BYTES", default_value_t = input::MAX_INPUT_BYTES)]
    max_input_bytes: u64,
}

/// Reads stdin, recovers, prints compact JSON on stdout; failures on stderr with exit 1: `no JSON
/// found: ...` when the reply holds no value (prose, or only an empty `{}` or `[]` cut out of other
/// text, as random bytes may hold).
pub(crate) fn run(args: &Args) -> Result<Status> {
    let validator = match &args.schema {
        Some(path) => {
            let schema = input::read_json(path)?;
            let v = Validator::new(&schema)
                .map_err(|e| anyhow::anyhow!("{}: {e}", input::name(path)))?;
            Some(v)
        }
        None => None,
    };
    let reply = input::read_stdin_lossy(args.max_input_bytes)?;
    let mut err = std::io::stderr().lock();
    let (value, fixes) = match &validator {
        None => match extract::recover(&reply) {
            Ok(_) if extract::is_prose(&reply) => {
                writeln!(
                    err,
                    "no JSON found: the reply is prose without a JSON value"
                )?;
                return Ok(Status::Invalid);
            }
            Ok(r) if extract::is_cut_out_empty(&reply, &r.value) => {
                writeln!(
                    err,
                    "no JSON found: only an empty {} cut out of text that is not JSON",
                    r.value
                )?;
                return Ok(Status::Invalid);
            }
            Ok(r) => (r.value, r.fixes),
            Err(e) => {
                writeln!(err, "no JSON found: {e}")?;
                return Ok(Status::Invalid);
            }
        },
        Some(validator) => match process(&reply, validator) {
            Outcome::Valid { value, fixes } => (value, fixes),
            Outcome::Invalid { violations, .. } => {
                writeln!(err, "recovered JSON is invalid against the schema:")?;
                for v in &violations {
                    writeln!(err, "  {v}")?;
                }
                return Ok(Status::Invalid);
            }
            Outcome::NoJson { reason } => {
                writeln!(err, "no JSON found: {reason}")?;
                return Ok(Status::Invalid);
            }
        },
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", json!({"value": value, "fixes": fixes}))?;
    } else {
        writeln!(out, "{value}")?;
    }
    Ok(Status::Ok)
}
