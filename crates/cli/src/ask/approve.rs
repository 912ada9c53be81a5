//! `--interceptors proposals` and `--approve`: the flags that pick who decides on a schema extension
//! a model proposes, the person at the terminal, and the vote's ballots on stderr; the registry, the
//! model vote and a run's extensions are the library's ([`claij::approve`]).
//!
//! `--approve` picks the approver: `ask` the person at the terminal, a `vote` of `--voters` (the
//! `vote` sub-FSM of `claij_fsm::builtin`, its ballots printed and kept in the registry's audit
//! log), `auto` (what the registry composes and checks), `never`.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context as _, Result, bail};
use claij::approve::{RemedyDecided, Vote, VoteReport, Voter};
use claij::conversation::Builder;
use claij_backends::BoxFuture;
use claij_interceptors::Context;
use claij_interceptors::builtin::proposals::{Approver, Decision, Proposal, Proposals, Ruling};
use claij_schema::{Registry, SavedRegistry};
use serde_json::{Value, json};

pub(crate) use claij::approve::RunProposals;

use crate::options::ModelOptions;
use claij::Claij;
use claij::model as llm;

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

/// What building the approver needs besides its flags.
pub(crate) struct Setup<'a> {
    /// The configuration voters are resolved with.
    pub claij: &'a Claij,
    /// The model knobs voters are asked with.
    pub model: &'a ModelOptions,
    /// Who the audit log says proposed: the conversation's model.
    pub proposer: String,
    /// No vote report on stderr (`--json`).
    pub quiet: bool,
}

/// The proposals interceptor for `options`, keeping approved extensions in `registry`.
///
/// # Errors
///
/// `--approve vote` without voters, `--voters` without it, or a voter that does not open.
pub(crate) fn proposals(
    options: &ApproveOptions,
    registry: &Arc<Mutex<Registry>>,
    setup: Setup<'_>,
) -> Result<Proposals> {
    if options.approve != Approve::Vote && !options.voters.is_empty() {
        bail!("--voters is for --approve vote");
    }
    let registry = Arc::clone(registry);
    let proposals = match options.approve {
        Approve::Ask => Proposals::with_registry(Terminal, registry),
        Approve::Auto => {
            Proposals::with_registry(|_: &Proposal, _: &Context| Decision::Approve, registry)
        }
        Approve::Never => Proposals::with_registry(
            |_: &Proposal, _: &Context| {
                Decision::reject("schema extensions are declined here (--approve never)")
            },
            registry,
        ),
        Approve::Vote => {
            let voters = if options.voters.is_empty() {
                &setup.claij.settings().voters
            } else {
                &options.voters
            };
            let vote = Vote::new(open_voters(voters, &setup)?, Arc::clone(&registry));
            let vote = if setup.quiet {
                vote
            } else {
                vote.on_report(report)
            };
            Proposals::with_registry(vote, registry)
        }
    };
    proposals.set_proposer(setup.proposer);
    Ok(proposals)
}

/// A vote without voters.
const NEEDS_VOTERS: &str = "--approve vote needs voters: --voters a,b,c (each as --llm takes it), \
     or `voters = [...]` under [proposals] in the configuration";

/// The voters `names` name, opened.
fn open_voters(names: &[String], setup: &Setup<'_>) -> Result<Vec<Voter>> {
    if names.is_empty() {
        bail!(NEEDS_VOTERS);
    }
    names
        .iter()
        .map(|name| {
            let opened = llm::open(Some(name.as_str()), None, setup.claij)
                .with_context(|| format!("voter `{name}`"))?;
            let config = setup
                .model
                .config(opened.model, &setup.claij.settings().defaults, None);
            Ok(Voter {
                name: name.clone(),
                backend: opened.backend,
                config,
            })
        })
        .collect()
}

/// The registry over `base` with the extensions and audit log `saved` in `file`
/// ([`claij::approve::registry`]).
///
/// # Errors
///
/// When the saved extensions no longer compose onto `base`, naming the file and the extension.
pub(crate) fn registry(
    base: Value,
    saved: Option<&SavedRegistry>,
    file: Option<&Path>,
) -> Result<Arc<Mutex<Registry>>> {
    claij::approve::registry(base, saved).with_context(|| {
        format!(
            "{}: the saved schema extensions do not compose with this schema \
             (`claij schema rollback FILE EXTENSION_ID` removes one)",
            file.map_or_else(
                || "the conversation".to_owned(),
                |f| f.display().to_string()
            )
        )
    })
}

/// `--approve ask`: the person at the terminal.
struct Terminal;

impl Approver for Terminal {
    fn decide<'a>(&'a self, proposal: &'a Proposal, _: &'a Context) -> BoxFuture<'a, Ruling> {
        let decision = if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
            ask(proposal).unwrap_or_else(|e| Decision::reject(format!("cannot ask: {e}")))
        } else {
            Decision::reject(
                "no terminal to ask, so declined (--approve vote, auto or never decide without one)",
            )
        };
        Box::pin(std::future::ready(decision.into()))
    }
}

/// Shows the proposal on stderr and reads y/n from stdin.
fn ask(proposal: &Proposal) -> Result<Decision> {
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "The model proposes the schema extension `{}`: {}",
        proposal.extension_id, proposal.reason
    )?;
    writeln!(err, "{}", serde_json::to_string_pretty(&proposal.delta)?)?;
    write!(err, "Every later reply will follow it. Accept? [y/N] ")?;
    err.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Decision::Approve,
        _ => Decision::reject("declined by the person at the terminal"),
    })
}

/// A vote's ballots and tally, on stderr (a closed stderr is no reason to stop).
fn report(vote: &VoteReport) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "vote on the schema extension `{}`: {} for, {} against: {}",
        vote.extension_id, vote.approve, vote.reject, vote.state
    );
    for ballot in &vote.ballots {
        let verb = if ballot.approve {
            "approves"
        } else {
            "rejects"
        };
        let _ = writeln!(err, "  {} {verb}: {}", ballot.voter, ballot.reason);
    }
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
    if options.approve != Approve::Vote && !options.voters.is_empty() {
        bail!("--voters is for --approve vote");
    }
    Ok(match options.approve {
        Approve::Ask => builder.approver(Terminal),
        Approve::Auto => builder.approver(|_: &Proposal, _: &Context| Decision::Approve),
        Approve::Never => builder.approver(|_: &Proposal, _: &Context| {
            Decision::reject("schema extensions are declined here (--approve never)")
        }),
        Approve::Vote => {
            let voters = if options.voters.is_empty() {
                claij.settings().voters.clone()
            } else {
                options.voters.clone()
            };
            if voters.is_empty() {
                bail!(NEEDS_VOTERS);
            }
            let report: Option<claij::conversation::OnVote> =
                (!quiet).then(|| Box::new(report) as _);
            builder.vote(voters, report)
        }
    })
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
    /// As [`proposals`], or saved extensions that no longer compose.
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
        let registry = registry(base, saved.as_ref(), None)?;
        let proposer = model.llm.clone().unwrap_or_else(|| "fsm".to_owned());
        let setup = Setup {
            claij,
            model,
            proposer,
            quiet,
        };
        let proposals = if offered {
            Some(proposals(&self.approve, &registry, setup)?)
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
    let decided = match &remedy.decision {
        Decision::Approve => "activated".to_owned(),
        Decision::Reject { reason } => format!("declined: {reason}"),
        Decision::Defer => "deferred".to_owned(),
    };
    let _ = writeln!(
        std::io::stderr(),
        "meta-debugging of `{}` proposes the schema extension `{}`: {decided}",
        remedy.state,
        remedy.extension_id
    );
}
