//! `claij schema compose`, `render`, `cost`, and the schema extensions of a conversation or a
//! run's journal ([`claij::extensions`]): `audit` and `rollback`.

use std::io::Write as _;

use anyhow::{Context as _, Result};
use claij::extensions::{self, Audit, Costs, Source};
use claij::schema::{Registry, dialect::Dialect, render};

use crate::exit::Status;
use crate::input;

/// `claij schema` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// Compose schema deltas onto a base schema, checking the result; prints the composed schema
    /// (exit 1 when a delta contradicts another, so that no reply could satisfy the result).
    Compose {
        /// The base schema file.
        base: String,
        /// Schema delta files, applied in order (`{extension_id, added_by, added_at, delta}` or a bare partial schema).
        deltas: Vec<String>,
        /// Print minified JSON.
        #[arg(long)]
        compact: bool,
    },
    /// Render a schema for a prompt or compile it to a provider dialect; what a dialect drops goes to stderr.
    Render {
        /// How to render it.
        #[arg(long = "as", value_enum, default_value_t = Format::Compact)]
        format: Format,
        /// The schema file (`-` for stdin).
        file: String,
    },
    /// Print the audit logs of a conversation (`--session FILE`) or a run's journal (`fsm run
    /// --journal FILE`): every schema delta that shaped its requests (the interceptors' and approved
    /// proposals'), when it was first applied, changed or dropped and who added it; then the
    /// extensions proposed with `--interceptors proposals`: who proposed each, who voted what, when
    /// it was activated, declined, refused or rolled back.
    Audit {
        /// The conversation file or journal.
        file: std::path::PathBuf,
        /// Print `{"applied": [{"state", "active", "audit"}], "extensions": {"active", "audit"}}`
        /// (`state` null for a conversation).
        #[arg(long)]
        json: bool,
    },
    /// A schema's tokens in the prompt (its compact rendering), or each active delta's of a
    /// conversation or journal (`--session`), most expensive first; the share of the context window.
    Cost(CostArgs),
    /// Compact a conversation's or a run's schema extensions now, as `ask --compact-budget` does
    /// before a turn (duplicated fields merged, repeated sub-schemas shared, descriptions that repeat
    /// the name dropped; every reply valid before stays valid); audited, undone by `rollback FILE compaction-N`.
    Compact {
        /// The conversation file (`claij ask|chat --session FILE`) or journal (`fsm run --journal`).
        file: std::path::PathBuf,
        /// The response schema the conversation runs with (as `claij ask --schema`).
        #[arg(long, short, value_name = "FILE")]
        schema: Option<String>,
        /// auto (approved; the registry checks it), ask (the person at the terminal) or never.
        #[arg(long, value_name = "auto|ask|never", default_value = "auto")]
        approve: extensions::OnDemand,
        /// Show the compaction without asking or changing anything.
        #[arg(long)]
        dry_run: bool,
        /// Print the compaction as one JSON object (`null` when there is nothing to compact).
        #[arg(long)]
        json: bool,
    },
    /// Remove a schema extension from a conversation file, checking that the others still compose;
    /// later turns no longer carry it, and the audit log records the removal.
    Rollback {
        /// The conversation file.
        file: std::path::PathBuf,
        /// The extension to remove (`claij schema audit FILE` lists them).
        extension_id: String,
        /// The response schema the conversation runs with (as `claij ask --schema`); default the
        /// base response schema.
        #[arg(long, short, value_name = "FILE")]
        schema: Option<String>,
    },
}

/// `claij schema cost`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct CostArgs {
    /// A bare schema file: its total.
    file: Option<std::path::PathBuf>,
    /// A conversation file or a run's journal: each active schema delta's cost.
    #[arg(long, value_name = "FILE")]
    session: Option<std::path::PathBuf>,
    /// The response schema --session's deltas compose onto (as `claij ask --schema`).
    #[arg(long, short, value_name = "FILE")]
    schema: Option<String>,
    /// o200k_base, cl100k_base, or local (the embedded model's, from its model file).
    #[arg(long, default_value = "o200k_base")]
    tokenizer: String,
    /// The model whose context window the total is a share of (default the configuration's).
    #[arg(long, value_name = "PROVIDER:MODEL")]
    model: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// Output forms of `claij schema render`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Format {
    /// Minified JSON.
    Json,
    /// The compact TypeScript-like form used in prompts.
    Compact,
    /// OpenAI strict structured outputs.
    OpenaiStrict,
    /// Gemini `responseSchema`.
    Gemini,
    /// Anthropic structured outputs.
    Anthropic,
    /// llguidance, the local model's constrained decoder (with runaway bounds).
    Llguidance,
}

/// Runs a `claij schema` subcommand.
pub(crate) fn run(cmd: &Command, front: &crate::front::Front) -> Result<Status> {
    let mut out = std::io::stdout().lock();
    match cmd {
        Command::Cost(args) => {
            let base = args.schema.as_deref().map(input::read_json).transpose()?;
            let (session, file) = (args.session.as_deref(), args.file.as_deref());
            let source = Source::of(session, file, base.as_ref()).map_err(anyhow::Error::msg)?;
            let (claij, model) = (front.claij()?, args.model.as_deref());
            let costs = Costs::measure(claij, source, &args.tokenizer, model)?;
            if args.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&costs.to_json())?)?;
            } else {
                writeln!(out, "{costs}")?;
            }
        }
        Command::Audit { file, json } => {
            let audit = Audit::read(file)?;
            if *json {
                writeln!(out, "{}", serde_json::to_string_pretty(&audit.to_json())?)?;
            } else {
                writeln!(out, "{audit}")?;
            }
        }
        Command::Rollback {
            file,
            extension_id,
            schema,
        } => {
            let base = read_base(schema.as_deref())?;
            let registry = extensions::rollback(file, extension_id, base, waiting)?;
            writeln!(
                std::io::stderr(),
                "rolled back `{extension_id}`; {} extension(s) still active, composed and checked",
                registry.extensions().len()
            )?;
        }
        Command::Compact {
            file,
            schema,
            approve,
            dry_run,
            json,
        } => {
            let base = read_base(schema.as_deref())?;
            let person = crate::ask::approve::person();
            match extensions::compact_file(file, base, *approve, person, *dry_run, waiting)? {
                Some(report) if *json => writeln!(out, "{:#}", report.to_json())?,
                Some(report) => writeln!(out, "{report}")?,
                None if *json => writeln!(out, "null")?,
                None => writeln!(std::io::stderr(), "{}: nothing to compact", file.display())?,
            }
        }
        Command::Compose {
            base,
            deltas,
            compact,
        } => {
            let base_schema = input::read_json(base)?;
            let mut registry =
                Registry::new(base_schema).with_context(|| input::name(base).to_owned())?;
            for path in deltas {
                let delta = input::read_delta(path)?;
                match registry.add(delta) {
                    Ok(_) => {}
                    // A schema no reply can satisfy: the deltas are wrong, not the command (exit 1).
                    Err(e @ claij::schema::Error::Contradiction { .. }) => {
                        writeln!(std::io::stderr(), "{}: {e}", input::name(path))?;
                        return Ok(Status::Invalid);
                    }
                    Err(e) => return Err(e).with_context(|| input::name(path).to_owned()),
                }
            }
            let schema = registry.active();
            if *compact {
                writeln!(out, "{schema}")?;
            } else {
                writeln!(out, "{}", serde_json::to_string_pretty(schema)?)?;
            }
        }
        Command::Render { format, file } => {
            let schema = input::read_json(file)?;
            claij::schema::check(&schema).with_context(|| input::name(file).to_owned())?;
            let dialect = match format {
                Format::Json => {
                    writeln!(out, "{}", render::to_json(&schema))?;
                    return Ok(Status::Ok);
                }
                Format::Compact => {
                    writeln!(out, "{}", render::to_compact(&schema))?;
                    return Ok(Status::Ok);
                }
                Format::OpenaiStrict => Dialect::OpenAiStrict,
                Format::Gemini => Dialect::Gemini,
                Format::Anthropic => Dialect::Anthropic,
                Format::Llguidance => Dialect::Llguidance,
            };
            let compiled = dialect
                .compile(&schema)
                .with_context(|| format!("{}: cannot compile to {dialect}", input::name(file)))?;
            writeln!(out, "{}", serde_json::to_string_pretty(&compiled.schema)?)?;
            let losses = claij::report::dialect_losses(dialect, &compiled.losses);
            writeln!(std::io::stderr(), "{losses}")?;
        }
    }
    Ok(Status::Ok)
}

/// `--schema FILE`, read (named as errors name it).
fn read_base(path: Option<&str>) -> Result<Option<(&str, serde_json::Value)>> {
    path.map(|p| Ok((input::name(p), input::read_json(p)?)))
        .transpose()
}

/// Told that another process holds the conversation's lock.
fn waiting(opening: &claij::conversation::Opening) {
    let _ = writeln!(std::io::stderr(), "{opening}");
}
