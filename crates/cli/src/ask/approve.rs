//! `--interceptors proposals` and `--approve`: the flags that pick who decides on a schema extension
//! a model proposes, the person at the terminal, and the vote's ballots on stderr; the registry, the
//! model vote and a run's extensions are the library's ([`claij::approve`]).
//!
//! `--approve` picks the approver: `ask` the person at the terminal, a `vote` of `--voters` (the
//! `vote` sub-FSM of `claij::fsm::engine::builtin`, its ballots printed and kept in the registry's audit
//! log), `auto` (what the registry composes and checks), `never`.

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use anyhow::{Context as _, Result, bail};
use claij::Claij;
use claij::approve::{Approval, RemedyDecided, VoteReport};
use claij::backends::BoxFuture;
use claij::conversation::Builder;
use claij::interceptors::Context;
use claij::interceptors::builtin::proposals::{Approver, Decision, Proposal, Ruling};
use claij::schema::SavedRegistry;
use serde_json::json;

pub(crate) use claij::approve::RunProposals;

use crate::options::ModelOptions;

/// The flags that choose the approver.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ApproveOptions {
    /// Who decides on a schema extension the model proposes (`--interceptors proposals`): `ask` the
    /// person at the terminal (declined without one), a `vote` of `--voters`, `auto` (accepted when
    /// it composes with the schema and passes the registry's checks), `never` (recorded, declined).
    #[arg(long, value_enum, value_name = "WHO", default_value = "ask")]
    pub(crate) approve: Approve,
    /// With `--approve vote`: the voter models, comma-separated, each as `--llm` takes it (an
    /// alias, `local` or `provider:model`); default the configuration's `[proposals] voters`.
    #[arg(long, value_delimiter = ',', value_name = "LLM[,LLM...]")]
    pub(crate) voters: Vec<String>,
}

/// `--approve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Approve {
    /// Show the delta on the terminal and ask y/n; without a terminal, decline.
    Ask,
    /// Run the vote sub-FSM with `--voters`: a majority activates.
    Vote,
    /// Accept what composes and passes the registry's checks.
    Auto,
    /// Record and decline.
    Never,
}

/// The approver `options` choose (`configured`: the configuration's voters), the vote's ballots
/// on stderr unless `quiet`; the flags checked before anything is asked.
///
/// # Errors
///
/// `--voters` without `--approve vote`, or `--approve vote` without voters.
fn approval(options: &ApproveOptions, configured: &[String], quiet: bool) -> Result<Approval> {
    if options.approve != Approve::Vote && !options.voters.is_empty() {
        bail!("--voters is for --approve vote");
    }
    Ok(match options.approve {
        Approve::Ask => Approval::given(Terminal),
        Approve::Auto => Approval::auto(),
        Approve::Never => Approval::never("schema extensions are declined here (--approve never)"),
        Approve::Vote => {
            let on_report = (!quiet).then(|| Box::new(report) as _);
            Approval::vote_of(&options.voters, configured, on_report)?
        }
    })
}

/// `--approve ask`: the person at the terminal.
struct Terminal;

impl Approver for Terminal {
    fn decide<'a>(&'a self, proposal: &'a Proposal, ctx: &'a Context) -> BoxFuture<'a, Ruling> {
        let decision = if person().is_some() {
            ask(proposal, ctx).unwrap_or_else(|e| Decision::reject(format!("cannot ask: {e}")))
        } else {
            Decision::reject(claij::approve::NO_TERMINAL)
        };
        Box::pin(std::future::ready(decision.into()))
    }
}

/// Shows the proposal on stderr and reads y/n from stdin.
fn ask(proposal: &Proposal, ctx: &Context) -> Result<Decision> {
    let mut err = std::io::stderr().lock();
    write!(err, "{}", claij::approve::prompt(proposal, ctx))?;
    err.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(claij::approve::answered(&line))
}

/// The person at the terminal (`--approve ask`), when stdin and stderr are terminals.
pub(crate) fn person() -> Option<&'static dyn Approver> {
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    terminal.then_some(&Terminal)
}

/// A vote's ballots and tally, on stderr (a closed stderr is no reason to stop).
fn report(vote: &VoteReport) {
    let _ = writeln!(std::io::stderr().lock(), "{vote}");
}

/// The approver of a conversation's proposals (`--interceptors proposals`) as `options` say: the
/// flags checked before anything is asked, the vote's ballots on stderr unless `quiet`.
///
/// # Errors
///
/// `--voters` without `--approve vote`, or `--approve vote` without voters.
pub(super) fn for_conversation<'c>(
    builder: Builder<'c>,
    options: &ApproveOptions,
    claij: &Claij,
    quiet: bool,
) -> Result<Builder<'c>> {
    Ok(builder.approval(approval(options, &claij.settings().voters, quiet)?))
}

/// `claij fsm run|resume --interceptors proposals` and the approver flags.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct FsmFlags {
    /// Interceptors of every `llm` state: `proposals` (a reply may propose a schema extension;
    /// `--approve` decides; an approved one joins every state's schema from its next request, and is
    /// recorded in the journal).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "NAME[,NAME...]")]
    interceptors: Vec<FsmInterceptor>,
    #[command(flatten)]
    approve: ApproveOptions,
}

/// The interceptors `claij fsm run --interceptors` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FsmInterceptor {
    /// Every reply may propose a schema extension.
    Proposals,
}

impl FsmFlags {
    /// The run's extensions over `saved` (a resumed journal's) when `--interceptors proposals` is
    /// given, the run has a built-in `vote` state (`votes`: what it activates joins every state's
    /// schema), or `saved` holds some.
    ///
    /// # Errors
    ///
    /// As [`approval`], a voter that does not open, or saved extensions that no longer compose.
    pub(crate) fn open(
        &self,
        saved: Option<SavedRegistry>,
        votes: bool,
        claij: &Claij,
        model: &ModelOptions,
        quiet: bool,
    ) -> Result<Option<RunProposals>> {
        let offered = self.interceptors.contains(&FsmInterceptor::Proposals);
        if !offered && !self.approve.voters.is_empty() {
            bail!("--voters is for --interceptors proposals --approve vote");
        }
        if !offered && !votes && saved.is_none() {
            return Ok(None);
        }
        // Each state composes onto its own output schema; the run's registry checks a delta onto
        // an open object, and each state's pipeline checks it again onto its schema.
        let base = saved
            .as_ref()
            .map_or_else(|| json!({"type": "object"}), |s| s.base.clone());
        let registry = claij::approve::registry(base, saved.as_ref()).context(
            "the journal's saved schema extensions do not compose (`claij schema rollback FILE ID`)",
        )?;
        let proposer = model.llm.clone().unwrap_or_else(|| "fsm".to_owned());
        let proposals = if offered {
            let approval = approval(&self.approve, &claij.settings().voters, quiet)?;
            Some(approval.proposals(claij, &model.to_options(), &registry, proposer)?)
        } else {
            None
        };
        let run = RunProposals::new(proposals, registry);
        Ok(Some(if quiet {
            run
        } else {
            run.on_remedy(remedy_line)
        }))
    }
}

/// What the approver decided on a meta-debugging remedy, on stderr.
fn remedy_line(remedy: &RemedyDecided) {
    let _ = writeln!(std::io::stderr(), "{remedy}");
}
