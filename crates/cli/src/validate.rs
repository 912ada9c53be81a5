//! `claij validate`: check an instance against a schema and list every violation.

use std::io::Write as _;

use anyhow::Result;
use claij::validation::Validator;
use serde_json::json;

use crate::exit::Status;
use crate::input;

/// Arguments of `claij validate`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The JSON Schema file.
    #[arg(long, short)]
    schema: String,
    /// The instance file; `-` or nothing reads stdin.
    #[arg(default_value = "-")]
    instance: String,
    /// Print `{"valid", "violations"}` as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Read at most this many bytes of the instance; a longer one is an error (exit 2).
    #[arg(long, value_name = "BYTES", default_value_t = input::MAX_INPUT_BYTES)]
    max_input_bytes: u64,
}

/// Validates; prints violations on stdout.
pub(crate) fn run(args: &Args) -> Result<Status> {
    let schema = input::read_json(&args.schema)?;
    let validator = Validator::new(&schema)
        .map_err(|e| anyhow::anyhow!("{}: {e}", input::name(&args.schema)))?;
    let text = input::read_text_capped(&args.instance, args.max_input_bytes)?;
    let mut out = std::io::stdout().lock();
    let instance = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            // Not JSON at all: the instance is invalid, and `claij repair` may recover it.
            let message = format!("{}: not valid JSON: {e}", input::name(&args.instance));
            if args.json {
                let report = json!({"valid": false, "error": message, "violations": []});
                writeln!(out, "{report}")?;
            } else {
                writeln!(std::io::stderr(), "{message} (try `claij repair`)")?;
            }
            return Ok(Status::Invalid);
        }
    };
    let violations = validator.validate(&instance).err().unwrap_or_default();
    if args.json {
        let report = json!({"valid": violations.is_empty(), "violations": violations});
        writeln!(out, "{report}")?;
    } else if violations.is_empty() {
        writeln!(out, "valid")?;
    } else {
        for v in &violations {
            writeln!(out, "{v}  [{}]", v.schema_pointer)?;
        }
        let n = violations.len();
        writeln!(
            std::io::stderr(),
            "invalid: {n} violation{}",
            if n == 1 { "" } else { "s" }
        )?;
    }
    Ok(if violations.is_empty() {
        Status::Ok
    } else {
        Status::Invalid
    })
}
