//! `claij ask --llm a,b,c --consensus majority|first-valid`: one question to several models at once,
//! each on its own backend and pipeline, answered with the value more than half of them agree on (or
//! the first valid answer); the tally on stderr and in `--json`. The counting is
//! [`claij::interceptors::several`]'s.

use std::io::Write as _;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use claij::consensus::{Consensus, Outcome, Rule as Chosen};
use claij::conversation::Opening;

use super::{Args, Interceptor, Options, report};
use crate::exit::Status;

/// `--consensus` and `--on` (in `claij ask`'s and `claij chat`'s options; chat refuses them).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct ConsensusOptions {
    /// Ask every model of `--llm a,b,c` at once, each on its own backend, and answer with the value
    /// more than half of them agree on (`majority`, compared as canonical JSON: keys sorted, numbers
    /// normalised) or with the first valid answer in the order given (`first-valid`). The tally goes
    /// to stderr (and into `--json`); exit 1 when there is no majority (or no valid answer).
    #[arg(long, value_enum, value_name = "RULE")]
    pub consensus: Option<Rule>,
    /// With `--consensus majority`: compare the answers at this JSON pointer (`/answer`) instead of
    /// the whole value; repeatable (the answers must agree at every one). The answer printed is the
    /// first agreeing model's whole value.
    #[arg(long, value_name = "POINTER", value_parser = claij::consensus::pointer)]
    pub on: Vec<String>,
}

/// `--consensus`: how the answer is chosen among several models'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Rule {
    /// The value more than half of the models asked agree on.
    Majority,
    /// The first valid answer, in the order `--llm` lists the models.
    FirstValid,
}

impl From<Rule> for Chosen {
    fn from(rule: Rule) -> Self {
        match rule {
            Rule::Majority => Chosen::Majority,
            Rule::FirstValid => Chosen::FirstValid,
        }
    }
}

/// Checks the consensus flags against the rest; the models to ask when `--consensus` is given
/// ([`claij::consensus::models`]). Every mistake here is a usage error (exit 2), found before any
/// model is asked.
pub(crate) fn models(options: &Options) -> Result<Option<Vec<String>>> {
    let (flags, memory) = (&options.consensus, options.memory.is_some());
    let llm = options.model.llm.as_deref().unwrap_or_default();
    let proposals = options.interceptors.contains(&Interceptor::Proposals);
    let rule = flags.consensus.map(Chosen::from);
    let checked = claij::consensus::models(llm, rule, !flags.on.is_empty(), memory, proposals);
    checked.map_err(anyhow::Error::msg)
}

/// `claij chat` answers with one model: `--consensus` and several `--llm` models are refused
/// ([`claij::consensus::refuse_in_chat`]).
pub(crate) fn refuse_in_chat(options: &Options) -> Result<()> {
    let (llm, flags) = (options.model.llm.as_deref(), &options.consensus);
    claij::consensus::refuse_in_chat(llm, flags.consensus.is_some(), !flags.on.is_empty())
        .map_err(anyhow::Error::msg)
}

/// Asks every model, prints each one's attempts, the tally and the chosen answer; exit 0 with an
/// answer, 1 without.
pub(crate) fn run(args: &Args, models: &[String], front: &crate::front::Front) -> Result<Status> {
    let options = &args.options;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let claij = front.claij()?;
    front.set_quiet(options.json);
    let services = if options.interceptors.contains(&Interceptor::Mcp) {
        let start = super::start_services(claij, options)?(options.project.clone());
        Some(runtime.block_on(start).map_err(anyhow::Error::from_boxed)?)
    } else {
        None
    };
    let opened = runtime.block_on(open_all(claij, options, models, services.as_ref()));
    let status = opened.and_then(|consensus| {
        let started = Instant::now();
        // Each model starts where `claij ask` without --memory does.
        let outcome = runtime.block_on(consensus.ask(&args.prompt));
        let status = report_all(options, &outcome, started.elapsed());
        runtime.block_on(consensus.close());
        status
    });
    if let Some(services) = &services {
        runtime.block_on(services.close());
    }
    status
}

/// One conversation per model, each with its own backend and interceptors (as `claij ask` opens
/// one), the MCP services shared.
async fn open_all(
    claij: &claij::Claij,
    options: &Options,
    models: &[String],
    services: Option<&claij::mcp::protocol::Services>,
) -> Result<Consensus> {
    let base = super::base_schema(options)?;
    let mut members = Vec::with_capacity(models.len());
    for name in models {
        let mut builder =
            super::configure(claij.conversation(), options, &[], base.clone(), claij)?
                .model(name.clone());
        let (json, prefix) = (options.json, name.clone());
        builder = builder.on_opening(move |opening| match opening {
            // The matrix's choice, per model.
            Opening::Matrix(text) if !json => {
                let _ = report::notice(&format!("{prefix}: {text}"));
            }
            Opening::Warning(text) => {
                let _ = report::notice(text);
            }
            _ => {}
        });
        if let Some(services) = services {
            builder = builder.shared_services(services.clone());
        }
        let conversation = builder
            .open()
            .await
            .with_context(|| format!("--llm {name}"))?;
        members.push((name.clone(), conversation));
    }
    let rule = options.consensus.consensus.unwrap_or(Rule::Majority).into();
    Ok(Consensus::new(members, rule).on(options.consensus.on.clone()))
}

/// Prints what each model did, the tally and the chosen answer (or the `--json` report); the status.
fn report_all(options: &Options, outcome: &Outcome, elapsed: Duration) -> Result<Status> {
    let absent = outcome.tally.absent_pointers();
    // A usage error (exit 2) leaves stdout empty, as every other one does.
    if options.json && absent.is_empty() {
        writeln!(std::io::stdout().lock(), "{}", outcome.to_json(elapsed))?;
    } else if !options.json {
        let mut err = std::io::stderr().lock();
        for line in outcome.lines() {
            writeln!(err, "{line}")?;
        }
    }
    if !absent.is_empty() {
        bail!(
            "--on {}: no valid answer has it (a mistyped pointer?)",
            absent.join(", --on ")
        );
    }
    let Some(value) = outcome.value() else {
        writeln!(std::io::stderr().lock(), "{}", outcome.verdict())?;
        return Ok(Status::Invalid);
    };
    if !options.json {
        writeln!(std::io::stderr().lock(), "{}", outcome.verdict())?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", serde_json::to_string_pretty(value)?)?;
        out.flush()?;
    }
    Ok(Status::Ok)
}
