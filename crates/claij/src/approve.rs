//! Schema extensions a model proposes, and who decides on them: the one [`Registry`] approved
//! extensions live in, the model `Vote` (the `vote` sub-FSM of `claij_fsm::builtin`; feature `fsm`), and
//! the extensions of a state-machine run (`RunProposals`; feature `fsm`).
//!
//! The registry is shared by every pipeline that holds it (the proposals interceptor is a cheap
//! handle over it) and saved with the conversation (the session file's `extensions`), so every
//! model sees the extended schema on its next request. An approver is any
//! [`Approver`]: a closure, a `Vote` of models,
//! or one of a program's own (a person asked at a terminal).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use claij_backends::BoxFuture;
use claij_interceptors::Context;
use claij_interceptors::builtin::proposals::{Approver, Decision, Proposal, Proposals, Ruling};
use claij_schema::{Registry, SavedRegistry};
use serde_json::Value;

use crate::options::ModelOptions;
use crate::{Claij, Result};

#[cfg(feature = "fsm")]
pub use self::vote::{RemedyDecided, RemedyProposals, RunProposals, Vote, VoteReport, Voter};

/// The registry over `base`, with the extensions and audit log `saved` (composed and checked
/// again), shared.
///
/// # Errors
///
/// When the saved extensions no longer compose onto `base` (the registry's error names the
/// extension), or `base` is not a schema the registry takes.
pub fn registry(
    base: Value,
    saved: Option<&SavedRegistry>,
) -> Result<Arc<Mutex<Registry>>, claij_schema::Error> {
    let registry = match saved {
        None => Registry::new(base)?,
        Some(saved) => Registry::from_saved(SavedRegistry {
            base,
            extensions: saved.extensions.clone(),
            audit: saved.audit.clone(),
            compactions: saved.compactions.clone(),
        })?,
    };
    Ok(Arc::new(Mutex::new(registry)))
}

/// What a person deciding on `proposal` is asked first (the delta follows): a compaction claij
/// worked out ([`crate::extensions::CompactionReport::question`], when `ctx` says it is one), else
/// `The model proposes the schema extension `ID`: REASON`.
#[must_use]
pub fn question(proposal: &Proposal, ctx: &Context) -> String {
    match crate::extensions::CompactionReport::asked(ctx) {
        Some(compaction) => compaction.question(),
        None => format!(
            "The model proposes the schema extension `{}`: {}",
            proposal.extension_id, proposal.reason
        ),
    }
}

/// What a conversation's person at the terminal (`--approve ask`) decides when there is no
/// terminal to ask: decline, saying so.
pub const NO_TERMINAL: &str =
    "no terminal to ask, so declined (--approve vote, auto or never decide without one)";

/// Everything a person deciding on `proposal` is shown before answering: the [`question`], the
/// delta, then `Every later reply will follow it. Accept? [y/N] ` (no newline: the answer follows;
/// [`answered`] reads it).
#[must_use]
pub fn prompt(proposal: &Proposal, ctx: &Context) -> String {
    let delta = serde_json::to_string_pretty(&proposal.delta)
        .unwrap_or_else(|_| proposal.delta.to_string());
    format!(
        "{}\n{delta}\nEvery later reply will follow it. Accept? [y/N] ",
        question(proposal, ctx)
    )
}

/// What a person's answer `line` to the [`prompt`] decides: `y` or `yes` (any case, spaces
/// around) approves; anything else declines, as the person at the terminal.
#[must_use]
pub fn answered(line: &str) -> Decision {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Decision::Approve,
        _ => Decision::reject("declined by the person at the terminal"),
    }
}

/// The registry, locked (a poisoned lock still holds a consistent registry).
pub fn lock(registry: &Mutex<Registry>) -> MutexGuard<'_, Registry> {
    registry.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Told the outcome of each vote ([`Approval::Vote`]).
#[cfg(feature = "fsm")]
pub type OnVote = Box<dyn Fn(&VoteReport) + Send + Sync>;

/// Who decides on a proposed schema extension: what [`Approval::proposals`] builds the proposals
/// interceptor with.
#[derive(Default)]
#[non_exhaustive]
pub enum Approval {
    /// Every proposal is declined (no approver was given).
    #[default]
    Decline,
    /// An approver of the caller's: a closure, a person asked at a terminal.
    Given(Arc<dyn Approver>),
    /// A vote of these models (each as [`Claij::open`] takes it), asked with the proposer's model
    /// options ([`Vote`]); `on_report` is told each vote's outcome.
    #[cfg(feature = "fsm")]
    Vote {
        /// The voters' model names.
        voters: Vec<String>,
        /// Told each vote's outcome.
        on_report: Option<OnVote>,
    },
}

impl Approval {
    /// The approver `approver`.
    pub fn given(approver: impl Approver + 'static) -> Self {
        Approval::Given(Arc::new(approver))
    }

    /// Every proposal approved (the registry still checks it composes).
    pub fn auto() -> Self {
        Self::given(|_: &Proposal, _: &Context| Decision::Approve)
    }

    /// Every proposal declined, for `reason`.
    pub fn never(reason: &'static str) -> Self {
        Self::given(move |_: &Proposal, _: &Context| Decision::reject(reason))
    }

    /// A vote of `voters`, or when none are given of `configured` (the configuration's
    /// `[proposals] voters`); `on_report` told each vote's outcome.
    ///
    /// # Errors
    ///
    /// Neither names a voter: the error says how to name them.
    #[cfg(feature = "fsm")]
    pub fn vote_of(
        voters: &[String],
        configured: &[String],
        on_report: Option<OnVote>,
    ) -> Result<Self> {
        let voters = if voters.is_empty() {
            configured
        } else {
            voters
        };
        if voters.is_empty() {
            return Err(crate::Error::config(
                "--approve vote needs voters: --voters a,b,c (each as --llm takes it), \
                 or `voters = [...]` under [proposals] in the configuration",
            ));
        }
        Ok(Approval::Vote {
            voters: voters.to_vec(),
            on_report,
        })
    }

    /// The proposals interceptor over `registry`, this approver deciding, `proposer` named as who
    /// proposed in the audit log; a vote's models opened from `claij`, asked with `options`.
    ///
    /// # Errors
    ///
    /// As [`Approval::approver`].
    pub fn proposals(
        self,
        claij: &Claij,
        options: &ModelOptions,
        registry: &Arc<Mutex<Registry>>,
        proposer: String,
    ) -> Result<Proposals> {
        let approver = self.approver(claij, options, registry)?;
        Ok(proposals_with(approver, registry, proposer))
    }

    /// The approver itself, for a proposal made outside any reply (a compaction,
    /// [`crate::extensions::compact_conversation`]): a vote's models opened from `claij`, asked
    /// with `options`, voting on a copy of `registry`.
    ///
    /// # Errors
    ///
    /// A vote without voters, or a voter that does not open (naming it: ``voter `NAME` ``).
    pub fn approver(
        self,
        claij: &Claij,
        options: &ModelOptions,
        registry: &Arc<Mutex<Registry>>,
    ) -> Result<Arc<dyn Approver>> {
        #[cfg(not(feature = "fsm"))]
        let _ = (claij, options, registry);
        Ok(match self {
            Approval::Decline => {
                Arc::new(|_: &Proposal, _: &Context| Decision::reject("no approver was given"))
            }
            Approval::Given(approver) => approver,
            #[cfg(feature = "fsm")]
            Approval::Vote { voters, on_report } => {
                if voters.is_empty() {
                    return Err(crate::Error::config("a vote needs voters"));
                }
                let voters = voters
                    .iter()
                    .map(|name| {
                        let opened = claij
                            .open(name)
                            .map_err(|e| e.context(format!("voter `{name}`")))?;
                        let config = options.config(opened.model, &claij.settings().defaults, None);
                        Ok(Voter {
                            name: name.clone(),
                            backend: opened.backend,
                            config,
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                let vote = Vote::new(voters, Arc::clone(registry));
                Arc::new(match on_report {
                    Some(report) => vote.on_report(report),
                    None => vote,
                })
            }
        })
    }
}

/// The proposals interceptor over `registry`, `approver` deciding, `proposer` named as who
/// proposed in the audit log.
pub(crate) fn proposals_with(
    approver: Arc<dyn Approver>,
    registry: &Arc<Mutex<Registry>>,
    proposer: String,
) -> Proposals {
    let proposals = Proposals::with_registry(Shared(approver), Arc::clone(registry));
    proposals.set_proposer(proposer);
    proposals
}

/// An [`Approver`] shared.
struct Shared(Arc<dyn Approver>);

impl Approver for Shared {
    fn decide<'a>(&'a self, proposal: &'a Proposal, ctx: &'a Context) -> BoxFuture<'a, Ruling> {
        self.0.decide(proposal, ctx)
    }
}

#[cfg(feature = "fsm")]
mod vote {
    use std::sync::{Arc, Mutex, PoisonError};

    use claij_backends::{Backend, BoxFuture};
    use claij_fsm::builtin::meta_debug::{self, Remedy, RemedyKind};
    use claij_fsm::builtin::vote;
    use claij_fsm::{Interrupt, Journal, Outcome, RemedyApprover, Run};
    use claij_interceptors::builtin::proposals::{Approver, Decision, Proposal, Proposals, Ruling};
    use claij_interceptors::{Config, Context};
    use claij_schema::{Ballot, Registry, SavedRegistry};
    use serde_json::{Value, json};

    use super::lock;

    /// Told the outcome of each vote.
    type OnReport = Arc<dyn Fn(&VoteReport) + Send + Sync>;

    /// A vote of models on a proposed schema extension: the `vote` sub-FSM with one `llm` state per
    /// voter; a majority activates it.
    pub struct Vote {
        voters: Vec<Voter>,
        /// The shared registry; the vote runs on a copy, so only the proposals interceptor
        /// activates.
        registry: Arc<Mutex<Registry>>,
        on_report: Option<OnReport>,
    }

    /// One voter: its name (as the ballots and the audit log show it), its backend and knobs.
    pub struct Voter {
        /// The voter's name.
        pub name: String,
        /// The model it asks.
        pub backend: Arc<dyn Backend>,
        /// How it asks.
        pub config: Config,
    }

    /// What a vote decided: the tally and each voter's ballot.
    #[derive(Debug, Clone)]
    pub struct VoteReport {
        /// The extension voted on.
        pub extension_id: String,
        /// Votes for.
        pub approve: usize,
        /// Votes against.
        pub reject: usize,
        /// The vote's final state (`activated`, `rejected`...).
        pub state: String,
        /// Each voter's ballot, in the order of the voters.
        pub ballots: Vec<Ballot>,
    }

    impl std::fmt::Display for VoteReport {
        /// `vote on the schema extension `ID`: 2 for, 1 against: activated`, then a line per
        /// ballot: `  VOTER approves: REASON` (or `rejects`).
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(
                f,
                "vote on the schema extension `{}`: {} for, {} against: {}",
                self.extension_id, self.approve, self.reject, self.state
            )?;
            for ballot in &self.ballots {
                let verb = if ballot.approve {
                    "approves"
                } else {
                    "rejects"
                };
                write!(f, "\n  {} {verb}: {}", ballot.voter, ballot.reason)?;
            }
            Ok(())
        }
    }

    impl Vote {
        /// A vote of `voters` over `registry` (the one the proposals interceptor activates in).
        /// Without voters, every vote fails and so declines.
        pub fn new(voters: Vec<Voter>, registry: Arc<Mutex<Registry>>) -> Self {
            Self {
                voters,
                registry,
                on_report: None,
            }
        }

        /// The same, telling `report` the outcome of each vote.
        #[must_use]
        pub fn on_report(mut self, report: impl Fn(&VoteReport) + Send + Sync + 'static) -> Self {
            self.on_report = Some(Arc::new(report));
            self
        }

        /// Runs the vote: the decision its ballots make.
        async fn run(&self, proposal: &Proposal) -> Result<Ruling, String> {
            let scratch = Arc::new(Mutex::new(lock(&self.registry).clone()));
            let names: Vec<&str> = self.voters.iter().map(|v| v.name.as_str()).collect();
            let (first, _) = self
                .voters
                .split_first()
                .ok_or_else(|| "a vote needs voters".to_owned())?;
            let mut runner = vote::runner(
                Arc::clone(&first.backend),
                first.config.clone(),
                &names,
                scratch,
            )
            .map_err(|e| chain(&e))?;
            for (i, voter) in self.voters.iter().enumerate() {
                runner = runner.with_llm_for(
                    format!("{}{}", vote::VOTER_PREFIX, i + 1),
                    Arc::clone(&voter.backend),
                    voter.config.clone(),
                );
            }
            let mut run = runner
                .start(json!({
                    "extension_id": proposal.extension_id,
                    "delta": proposal.delta,
                    "reason": proposal.reason,
                }))
                .map_err(|e| chain(&e))?;
            let outcome = runner
                .run(&mut run, &Interrupt::new(), None)
                .await
                .map_err(|e| chain(&e))?;
            let names: Vec<String> = self.voters.iter().map(|v| v.name.clone()).collect();
            let ballots = vote::ballots(&names, &run.trail);
            let (state, event) = match outcome {
                Outcome::Finished { state, event } => (state, event),
                other => return Err(format!("the vote stopped before its end: {other:?}")),
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
            if let Some(report) = &self.on_report {
                report(&VoteReport {
                    extension_id: proposal.extension_id.clone(),
                    approve: votes.approve,
                    reject: votes.reject,
                    state,
                    ballots: ballots.clone(),
                });
            }
            Ok(Ruling::voted(decision, ballots))
        }
    }

    impl Approver for Vote {
        fn decide<'a>(&'a self, proposal: &'a Proposal, _: &'a Context) -> BoxFuture<'a, Ruling> {
            Box::pin(async move {
                // A failed vote declines: the reason is recorded and shown to the proposer.
                match self.run(proposal).await {
                    Ok(ruling) => ruling,
                    Err(e) => Decision::reject(format!("the vote failed: {e}")).into(),
                }
            })
        }
    }

    /// Told each remedy meta-debugging put to the approver, and what was decided.
    type OnRemedy = Arc<dyn Fn(&RemedyDecided) + Send + Sync>;

    /// A meta-debugging schema remedy the approver decided on.
    #[derive(Debug, Clone)]
    pub struct RemedyDecided {
        /// The state meta-debugging diagnosed.
        pub state: String,
        /// The extension the remedy proposed.
        pub extension_id: String,
        /// The decision.
        pub decision: Decision,
    }

    impl std::fmt::Display for RemedyDecided {
        /// `meta-debugging of `STATE` proposes the schema extension `ID`: activated` (or
        /// `declined: REASON`, `deferred`).
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let decided = match &self.decision {
                Decision::Approve => "activated".to_owned(),
                Decision::Reject { reason } => format!("declined: {reason}"),
                Decision::Defer => "deferred".to_owned(),
            };
            write!(
                f,
                "meta-debugging of `{}` proposes the schema extension `{}`: {decided}",
                self.state, self.extension_id
            )
        }
    }

    /// The schema extensions of a state-machine run, shared by every `llm` state of the machine and
    /// its sub-FSMs: with proposals, the proposals interceptor over the run's one registry; without
    /// (a run with a built-in vote, or resumed with extensions), the registry's extensions alone.
    pub struct RunProposals {
        /// The interceptor, for every state's chain, when models may propose.
        proposals: Option<Proposals>,
        registry: Arc<Mutex<Registry>>,
        /// The registry as the journal last has it (as the run started, at first): a line is
        /// written only when it changed.
        recorded: Arc<Mutex<SavedRegistry>>,
        on_remedy: Option<OnRemedy>,
    }

    impl RunProposals {
        /// The run's extensions in `registry`; `proposals` when models may propose.
        pub fn new(proposals: Option<Proposals>, registry: Arc<Mutex<Registry>>) -> Self {
            let recorded = Arc::new(Mutex::new(lock(&registry).to_saved()));
            Self {
                proposals,
                registry,
                recorded,
                on_remedy: None,
            }
        }

        /// The same, telling `decided` each meta-debugging remedy put to the approver.
        #[must_use]
        pub fn on_remedy(
            mut self,
            decided: impl Fn(&RemedyDecided) + Send + Sync + 'static,
        ) -> Self {
            self.on_remedy = Some(Arc::new(decided));
            self
        }

        /// The run's one registry: what every state's proposals interceptor emits, where the
        /// built-in `vote` sub-FSM activates what its voters approve, and what the journal records.
        pub fn registry(&self) -> &Arc<Mutex<Registry>> {
            &self.registry
        }

        /// The chain of every `llm` state: the shared proposals interceptor, or without one an
        /// `extensions` interceptor adding the registry's extensions to the state's schema (either
        /// skipped, with the previous schema, when a state's pipeline refuses a delta).
        pub fn chain(&self) -> impl Fn() -> claij_interceptors::Chain + Send + Sync + 'static {
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

        /// The runner's journal hook: after each line the runner journals (a transition, a remedy,
        /// a suspended sub-FSM run), the run's extensions are appended when they changed since the
        /// journal last recorded them, so a run killed at any point after an approval keeps it.
        pub fn journal_hook(
            &self,
        ) -> impl Fn(&Run, &mut Journal) -> Result<(), claij_fsm::Error> + Send + Sync + 'static
        {
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

        /// The runner's remedy approver, when models may propose: meta-debugging's schema
        /// remedies go to the approver as proposals by `meta-debug`.
        pub fn remedy_approver(&self) -> Option<RemedyProposals> {
            Some(RemedyProposals {
                proposals: self.proposals.clone()?,
                registry: Arc::clone(&self.registry),
                on_remedy: self.on_remedy.clone(),
            })
        }
    }

    /// A meta-debugging schema remedy's delta put to the run's approver, as a proposal by
    /// `meta-debug` (one decided before is not asked again: approved when the registry holds it).
    pub struct RemedyProposals {
        proposals: Proposals,
        registry: Arc<Mutex<Registry>>,
        on_remedy: Option<OnRemedy>,
    }

    impl RemedyApprover for RemedyProposals {
        fn approve<'a>(
            &'a self,
            state: &'a str,
            remedy: &'a Remedy,
        ) -> BoxFuture<'a, Result<bool, claij_interceptors::BoxError>> {
            Box::pin(async move {
                let proposal =
                    remedy_proposal(state, remedy).ok_or("the remedy proposes no delta")?;
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
                if let Some(decided) = &self.on_remedy {
                    decided(&RemedyDecided {
                        state: state.to_owned(),
                        extension_id: id,
                        decision: record.decision.clone(),
                    });
                }
                Ok(record.decision == Decision::Approve)
            })
        }
    }

    /// The interceptor that adds `registry`'s extensions to a state's schema, for runs whose
    /// models do not propose.
    fn extensions(registry: Arc<Mutex<Registry>>) -> impl claij_interceptors::Interceptor {
        claij_interceptors::from_fn("extensions").pre_schema(move |schema, _| {
            for extension in lock(&registry).extensions() {
                schema.extend(extension.extension_id.clone(), extension.delta.clone());
            }
            Ok(())
        })
    }

    /// An error and its sources, `outer: inner: ...`.
    fn chain(error: &dyn std::error::Error) -> String {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(e) = source {
            text.push_str(": ");
            text.push_str(&e.to_string());
            source = e.source();
        }
        text
    }

    /// The proposal a schema remedy of `state` makes, when it carries a delta: the extension
    /// `meta-debug-STATE-v1` (the state's id in lowercase letters, digits and dashes), for the
    /// reason the diagnostic model suggested.
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
}
