//! `--interceptors proposals` and `--approve`: who decides on a schema extension a model proposes,
//! and the one [`Registry`] approved extensions live in.
//!
//! The registry is shared by every pipeline of the process (the proposals interceptor is a cheap
//! handle over it) and saved with the conversation (`--memory FILE`, key `extensions`), so every
//! model sees the extended schema on its next request, in this run and the next. `--approve` picks the
//! approver: `ask` the person at the terminal, a `vote` of `--voters` (the `vote` sub-FSM of
//! `claij_fsm::builtin`, its ballots printed and kept in the registry's audit log), `auto` (what
//! the registry composes and checks), `never`.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context as _, Result, bail};
use claij_backends::{Backend, BoxFuture};
use claij_fsm::builtin::meta_debug::{self, Remedy, RemedyKind};
use claij_fsm::builtin::vote;
use claij_fsm::{Interrupt, Journal, Outcome, RemedyApprover, Run};
use claij_interceptors::builtin::proposals::{Approver, Decision, Proposal, Proposals, Ruling};
use claij_interceptors::{Config, Context};
use claij_schema::{Ballot, Registry, SavedRegistry};
use serde_json::{Value, json};

use super::{ModelOptions, llm};
use claij::settings::Settings;

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
    pub settings: &'a Settings,
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
                &setup.settings.voters
            } else {
                &options.voters
            };
            let vote = Vote::open(voters, &setup, Arc::clone(&registry))?;
            Proposals::with_registry(vote, registry)
        }
    };
    proposals.set_proposer(setup.proposer);
    Ok(proposals)
}

/// The one registry of the process over `base`, with the extensions and audit log `saved` in
/// `file` (composed and checked again).
///
/// # Errors
///
/// When the saved extensions no longer compose onto `base`, naming the file and the extension.
pub(crate) fn registry(
    base: Value,
    saved: Option<&SavedRegistry>,
    file: Option<&Path>,
) -> Result<Arc<Mutex<Registry>>> {
    let registry = match saved {
        None => Registry::new(base)?,
        Some(saved) => Registry::from_saved(SavedRegistry {
            base,
            extensions: saved.extensions.clone(),
            audit: saved.audit.clone(),
        })
        .with_context(|| {
            format!(
                "{}: the saved schema extensions do not compose with this schema \
                 (`claij schema rollback FILE EXTENSION_ID` removes one)",
                file.map_or_else(
                    || "the conversation".to_owned(),
                    |f| f.display().to_string()
                )
            )
        })?,
    };
    Ok(Arc::new(Mutex::new(registry)))
}

/// The registry, locked (a poisoned lock still holds a consistent registry).
pub(crate) fn lock(registry: &Mutex<Registry>) -> std::sync::MutexGuard<'_, Registry> {
    registry.lock().unwrap_or_else(PoisonError::into_inner)
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

/// `--approve vote`: the vote sub-FSM with one `llm` state per voter.
struct Vote {
    voters: Vec<Voter>,
    /// The shared registry; the vote runs on a copy, so only the proposals interceptor activates.
    registry: Arc<Mutex<Registry>>,
    quiet: bool,
}

/// One voter: its `--voters` name, its backend and knobs.
struct Voter {
    name: String,
    backend: Arc<dyn Backend>,
    config: Config,
}

impl Vote {
    fn open(names: &[String], setup: &Setup<'_>, registry: Arc<Mutex<Registry>>) -> Result<Self> {
        if names.is_empty() {
            bail!(
                "--approve vote needs voters: --voters a,b,c (each as --llm takes it), or \
                 `voters = [...]` under [proposals] in the configuration"
            );
        }
        let voters = names
            .iter()
            .map(|name| {
                let opened = llm::open(Some(name.as_str()), None, setup.settings)
                    .with_context(|| format!("voter `{name}`"))?;
                let config = setup
                    .model
                    .config(opened.model, &setup.settings.defaults, None);
                Ok(Voter {
                    name: name.clone(),
                    backend: opened.backend,
                    config,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            voters,
            registry,
            quiet: setup.quiet,
        })
    }

    /// Runs the vote; its ballots, and the decision they make.
    async fn run(&self, proposal: &Proposal) -> Result<Ruling> {
        let scratch = Arc::new(Mutex::new(lock(&self.registry).clone()));
        let names: Vec<&str> = self.voters.iter().map(|v| v.name.as_str()).collect();
        let (first, _) = self.voters.split_first().context("a vote needs voters")?;
        let mut runner = vote::runner(
            Arc::clone(&first.backend),
            first.config.clone(),
            &names,
            scratch,
        )?;
        for (i, voter) in self.voters.iter().enumerate() {
            runner = runner.with_llm_for(
                format!("{}{}", vote::VOTER_PREFIX, i + 1),
                Arc::clone(&voter.backend),
                voter.config.clone(),
            );
        }
        let mut run = runner.start(json!({
            "extension_id": proposal.extension_id,
            "delta": proposal.delta,
            "reason": proposal.reason,
        }))?;
        let outcome = runner.run(&mut run, &Interrupt::new(), None).await?;
        let names: Vec<String> = self.voters.iter().map(|v| v.name.clone()).collect();
        let ballots = vote::ballots(&names, &run.trail);
        let (state, event) = match outcome {
            Outcome::Finished { state, event } => (state, event),
            other => bail!("the vote stopped before its end: {other:?}"),
        };
        let votes = vote::Votes::count(&run.trail);
        let decision = if state == "activated" {
            Decision::Approve
        } else if let Some(error) = event.get("error").and_then(Value::as_str) {
            Decision::reject(format!(
                "the voters approved it but the schema registry refused it: {error}"
            ))
        } else {
            Decision::reject(format!(
                "voted down: {} for, {} against",
                votes.approve, votes.reject
            ))
        };
        if !self.quiet {
            self.report(proposal, &ballots, votes, &state)?;
        }
        Ok(Ruling::voted(decision, ballots))
    }

    /// The ballots and the tally, on stderr.
    fn report(
        &self,
        proposal: &Proposal,
        ballots: &[Ballot],
        votes: vote::Votes,
        state: &str,
    ) -> Result<()> {
        let mut err = std::io::stderr().lock();
        writeln!(
            err,
            "vote on the schema extension `{}`: {} for, {} against: {state}",
            proposal.extension_id, votes.approve, votes.reject
        )?;
        for ballot in ballots {
            let verb = if ballot.approve {
                "approves"
            } else {
                "rejects"
            };
            writeln!(err, "  {} {verb}: {}", ballot.voter, ballot.reason)?;
        }
        Ok(())
    }
}

impl Approver for Vote {
    fn decide<'a>(&'a self, proposal: &'a Proposal, _: &'a Context) -> BoxFuture<'a, Ruling> {
        Box::pin(async move {
            // A failed vote declines: the reason is recorded and shown to the proposer.
            match self.run(proposal).await {
                Ok(ruling) => ruling,
                Err(e) => Decision::reject(format!("the vote failed: {e:#}")).into(),
            }
        })
    }
}

/// The proposals interceptor of a conversation and its registry, when `--interceptors proposals`
/// asks for it: the registry over the conversation's base schema with the extensions its file saved.
pub(super) fn for_conversation(
    options: &super::Options,
    base: Option<&Value>,
    saved: Option<&SavedRegistry>,
    settings: &Settings,
    proposer: &str,
) -> Result<(Proposals, Arc<Mutex<Registry>>)> {
    let base = base.cloned().unwrap_or_else(claij_schema::base);
    let registry = registry(base, saved, options.memory.as_deref())?;
    let setup = Setup {
        settings,
        model: &options.model,
        proposer: proposer.to_owned(),
        quiet: options.json,
    };
    let proposals = proposals(&options.approve, &registry, setup)?;
    Ok((proposals, registry))
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

/// The schema extensions of a run, shared by every `llm` state of the machine and its sub-FSMs:
/// with `--interceptors proposals`, the proposals interceptor over the run's one registry; without
/// it (a run with a built-in vote, or resumed with extensions), the registry's extensions alone.
pub(crate) struct RunProposals {
    /// The interceptor, for every state's chain, when models may propose.
    proposals: Option<Proposals>,
    registry: Arc<Mutex<Registry>>,
    /// The registry as the journal last has it (as the run started, at first): a line is written
    /// only when it changed.
    recorded: Arc<Mutex<SavedRegistry>>,
    /// No report on stderr (`--json`).
    quiet: bool,
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
        settings: &Settings,
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
        let recorded = Arc::new(Mutex::new(lock(&registry).to_saved()));
        let proposer = model.llm.clone().unwrap_or_else(|| "fsm".to_owned());
        let setup = Setup {
            settings,
            model,
            proposer,
            quiet,
        };
        let proposals = if offered {
            Some(proposals(&self.approve, &registry, setup)?)
        } else {
            None
        };
        Ok(Some(RunProposals {
            proposals,
            registry,
            recorded,
            quiet,
        }))
    }
}

impl RunProposals {
    /// The run's one registry: what every state's proposals interceptor emits, where the built-in
    /// `vote` sub-FSM activates what its voters approve, and what the journal records.
    pub(crate) fn registry(&self) -> &Arc<Mutex<Registry>> {
        &self.registry
    }

    /// The chain of every `llm` state: the shared proposals interceptor, or without one an
    /// `extensions` interceptor adding the registry's extensions to the state's schema (either
    /// skipped, with the previous schema, when a state's pipeline refuses a delta).
    pub(crate) fn chain(&self) -> impl Fn() -> claij_interceptors::Chain + Send + Sync + 'static {
        let proposals = self.proposals.clone();
        let registry = Arc::clone(&self.registry);
        move || {
            let chain = claij_interceptors::Chain::new();
            let skip = claij_interceptors::OnError::Skip;
            match &proposals {
                Some(proposals) => chain.with_policy(proposals.clone(), skip),
                None => chain.with_policy(extensions(Arc::clone(&registry)), skip),
            }
        }
    }

    /// The runner's journal hook: after each line the runner journals (a transition, a remedy, a
    /// suspended sub-FSM run), the run's extensions are appended when they changed since the journal
    /// last recorded them, so a run killed at any point after an approval keeps it.
    pub(crate) fn journal_hook(
        &self,
    ) -> impl Fn(&Run, &mut Journal) -> Result<(), claij_fsm::Error> + Send + Sync + 'static {
        let registry = Arc::clone(&self.registry);
        let recorded = Arc::clone(&self.recorded);
        move |_: &Run, journal: &mut Journal| {
            let saved = lock(&registry).to_saved();
            let mut recorded = recorded.lock().unwrap_or_else(PoisonError::into_inner);
            if saved != *recorded {
                journal.record_extensions(&saved)?;
                *recorded = saved;
            }
            Ok(())
        }
    }

    /// The runner's remedy approver, when models may propose (`--interceptors proposals`):
    /// meta-debugging's schema remedies go to `--approve` as proposals by `meta-debug`.
    pub(crate) fn remedy_approver(&self) -> Option<RemedyProposals> {
        Some(RemedyProposals {
            proposals: self.proposals.clone()?,
            registry: Arc::clone(&self.registry),
            quiet: self.quiet,
        })
    }
}

/// A meta-debugging schema remedy's delta put to the run's approver, as a proposal by `meta-debug`
/// (one decided before is not asked again: approved when the registry holds it).
pub(crate) struct RemedyProposals {
    proposals: Proposals,
    registry: Arc<Mutex<Registry>>,
    /// No report on stderr (`--json`).
    quiet: bool,
}

impl RemedyApprover for RemedyProposals {
    fn approve<'a>(
        &'a self,
        state: &'a str,
        remedy: &'a Remedy,
    ) -> BoxFuture<'a, Result<bool, claij_interceptors::BoxError>> {
        Box::pin(async move {
            let proposal = remedy_proposal(state, remedy).ok_or("the remedy proposes no delta")?;
            let id = proposal.extension_id.clone();
            let record = self
                .proposals
                .propose(proposal, meta_debug::ID, &mut Context::default())
                .await;
            let Some(record) = record else {
                return Ok(lock(&self.registry)
                    .extensions()
                    .iter()
                    .any(|e| e.extension_id == id));
            };
            let decided = match &record.decision {
                Decision::Approve => "activated".to_owned(),
                Decision::Reject { reason } => format!("declined: {reason}"),
                Decision::Defer => "deferred".to_owned(),
            };
            if !self.quiet {
                let _ = writeln!(
                    std::io::stderr(),
                    "meta-debugging of `{state}` proposes the schema extension `{id}`: {decided}"
                );
            }
            Ok(record.decision == Decision::Approve)
        })
    }
}

/// The interceptor that adds `registry`'s extensions to a state's schema, for runs whose models do
/// not propose.
fn extensions(registry: Arc<Mutex<Registry>>) -> impl claij_interceptors::Interceptor {
    claij_interceptors::from_fn("extensions").pre_schema(move |schema, _| {
        for extension in lock(&registry).extensions() {
            schema.extend(extension.extension_id.clone(), extension.delta.clone());
        }
        Ok(())
    })
}

/// The proposal a schema remedy of `state` makes, when it carries a delta: the extension
/// `meta-debug-STATE-v1` (the state's id in lowercase letters, digits and dashes), for the reason
/// the diagnostic model suggested.
fn remedy_proposal(state: &str, remedy: &Remedy) -> Option<Proposal> {
    let delta = remedy
        .delta
        .as_ref()
        .filter(|_| remedy.kind == RemedyKind::Schema)?;
    let slug: String = state
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    Some(Proposal {
        extension_id: format!("{}-{}-v1", meta_debug::ID, slug.trim_matches('-')),
        reason: remedy.suggestion.clone(),
        delta: delta.clone(),
    })
}
