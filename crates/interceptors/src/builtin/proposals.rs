//! The `proposals` interceptor: a reply may propose a new response field; an [`Approver`] decides,
//! and approved fields join the schema of every later request.
//!
//! This is the design's LLM-driven schema evolution. A reply may carry `proposed_extension`
//! (`extension_id`, `reason`, `delta`). [`Proposals`] checks its shape (a delta may only add
//! `properties` and `required` names, so a proposal cannot retype the root or close the schema), asks
//! its [`Approver`], and records the [`Decision`] on itself ([`Proposals::log`]) and in the context
//! ([`ProposalLog`]). From the next request on, its `pre_schema` emits every approved delta, under the
//! proposal's `extension_id`, so the pipeline's schema registry checks, audits and, when the delta
//! breaks the schema, rolls it back. Put the interceptor in the chain with
//! [`OnError::Skip`](crate::OnError::Skip): a broken delta is then recorded in `Answer::skipped` and
//! as `rejected` in `Pipeline::audit`, and the request goes on with the previous schema. (With
//! `OnError::Fail`, the default, a broken approved delta fails every later request.)
//!
//! The approver is the seam for the vote sub-FSM: it gets the proposal and the context and returns a
//! future, so a vote among several models can run inside it; its [`Ruling`] carries the ballots.
//!
//! With [`Proposals::with_registry`] the approved extensions live in a shared
//! [`claij_schema::Registry`] instead of the interceptor's own list: an approved delta is added there
//! (by the proposer, [`Proposals::set_proposer`], with the ballots), so the registry composes and
//! checks it first and a delta it refuses is rejected with the registry's reason, shown to the
//! proposer like any rejection; a declined one is recorded as declined. Every pipeline holding a
//! clone of the interceptor, and every process that restores the registry
//! ([`claij_schema::SavedRegistry`]), then asks with the same extended schema, and the registry's
//! audit log says who proposed what, who voted what, and when each extension was activated or removed. [`Decision::Defer`] leaves the proposal
//! pending until [`Proposals::resolve`] settles it, for approval outside the conversation (a person, a
//! vote run later). [`Proposals::propose`] puts a proposal made outside any reply (meta-debugging's
//! schema remedy) to the same approver, recorded under its own proposer. [`Proposals::withdraw`] removes an approved extension (the registry records the
//! removal): the way out of a delta that composes but that models cannot satisfy, which would
//! otherwise exhaust the retries of every later request.
//!
//! # Schema delta
//!
//! Extension `proposals-v1` ([`EXTENSION`], [`delta`]); `proposed_extension` is optional:
//!
//! ```
//! # use claij_interceptors::builtin::proposals::delta;
//! # use serde_json::json;
//! assert_eq!(delta(), json!({"properties": {"proposed_extension": {
//!     "type": "object",
//!     "description": "Leave this out unless a new response field would clearly help in later turns, \
//!         for example to report your confidence or a detail the schema has no place for. A proposal is \
//!         reviewed; if approved, every later reply must follow it.",
//!     "required": ["extension_id", "reason", "delta"],
//!     "properties": {
//!         "extension_id": {
//!             "type": "string",
//!             "pattern": "^[a-z0-9][a-z0-9._-]*$",
//!             "maxLength": 64,
//!             "description": "A short lowercase id ending in a version, like confidence-v1"
//!         },
//!         "reason": {"type": "string", "description": "Why the field would help, in one sentence"},
//!         "delta": {
//!             "type": "object",
//!             "description": "The JSON Schema to merge into the response schema, like {\"properties\": \
//!                 {\"confidence\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 1, \
//!                 \"description\": \"How sure you are\"}}, \"required\": [\"confidence\"]}: each new field \
//!                 with a description under `properties`; under `required`, those every reply must fill in",
//!             "required": ["properties"],
//!             "additionalProperties": false,
//!             "properties": {
//!                 "properties": {
//!                     "type": "object",
//!                     "minProperties": 1,
//!                     "patternProperties": {"^[A-Za-z_][A-Za-z0-9_]*$": {"type": "object"}},
//!                     "additionalProperties": false
//!                 },
//!                 "required": {"type": "array", "items": {"type": "string"}}
//!             }
//!         }
//!     }
//! }}}));
//! ```
//!
//! # Prompt
//!
//! Nothing until a proposal is rejected; then the last ten rejections, so the model does not propose
//! them again:
//!
//! ```text
//! Schema extensions you proposed that were declined; do not propose them again:
//! - `confidence-v1`: not needed for this assistant
//! ```
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use claij_test_support::Scripted;
//! use claij_interceptors::builtin::proposals::{Decision, Proposal, Proposals};
//! use claij_interceptors::{Chain, Config, Context, OnError, Pipeline};
//!
//! let proposals = Proposals::new(|p: &Proposal, _: &Context| {
//!     if p.extension_id.starts_with("confidence") { Decision::Approve } else { Decision::reject("not now") }
//! });
//! let backend = Arc::new(Scripted::replies([
//!     r#"{"answer": "Paris", "state": "chat", "proposed_extension": {"extension_id": "confidence-v1",
//!         "reason": "to say how sure I am",
//!         "delta": {"properties": {"confidence": {"type": "number", "minimum": 0, "maximum": 1}}}}}"#,
//!     r#"{"answer": "Rome", "state": "chat", "confidence": 0.9}"#,
//! ]));
//! let chain = Chain::new().with_policy(proposals.clone(), OnError::Skip);
//! let pipeline = Pipeline::new(backend.clone(), Config::new("m"), chain);
//! let mut ctx = Context::default();
//! futures_executor::block_on(pipeline.ask(&mut ctx, "Capital of France?"))?;
//! futures_executor::block_on(pipeline.ask(&mut ctx, "Capital of Italy?"))?;
//! assert_eq!(proposals.approved()[0].extension_id, "confidence-v1");
//! assert!(backend.requests()[1].system.as_deref().unwrap_or_default().contains("confidence?: number"));
//! # Ok::<(), claij_interceptors::Error>(())
//! ```

use std::fmt::Write as _;
use std::future::ready;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use claij_backends::BoxFuture;
use claij_schema::{AuditAction, Ballot, Registry, SchemaDelta};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tracing::{debug, info};

use crate::context::Context;
use crate::interceptor::{BoxError, Interceptor};
use crate::prompts::Prompts;
use crate::schema::Schema;

/// The extension id of the `proposed_extension` field.
pub const EXTENSION: &str = "proposals-v1";

/// How many rejections the prompt lists (the latest).
const PROMPTED_REJECTIONS: usize = 10;

/// The proposals interceptor. Its name is `proposals`.
///
/// A cheap handle: clones share the approver and the ledger, so keep one to read the log after
/// putting another in the chain. The ledger is shared by every conversation of the pipeline, as the
/// design wants (all models see the same schema).
#[derive(Clone)]
pub struct Proposals {
    inner: Arc<Inner>,
}

/// A proposed schema extension, as the model wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// The id it is activated under (`confidence-v1`).
    pub extension_id: String,
    /// Why the model wants it.
    #[serde(default)]
    pub reason: String,
    /// The schema delta: `properties` and optionally `required`.
    pub delta: Value,
}

/// What an [`Approver`] decides about a [`Proposal`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Activate it from the next request on.
    Approve,
    /// Refuse it.
    Reject {
        /// Why (shown to the model so it does not propose it again).
        reason: String,
    },
    /// Keep it pending until [`Proposals::resolve`] settles it.
    Defer,
}

/// What an [`Approver`] returns: its [`Decision`] and, when a vote made it, the ballots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruling {
    /// What was decided.
    pub decision: Decision,
    /// The ballots cast, in order; empty unless a vote decided.
    pub ballots: Vec<Ballot>,
}

/// Decides about proposals: the seam for a person, a policy or a vote among models.
///
/// Closures `Fn(&Proposal, &Context) -> Decision` are approvers; implement the trait for decisions
/// that need to wait (a vote sub-FSM calling other models).
pub trait Approver: Send + Sync {
    /// Decides about `proposal`, made in the conversation `ctx`.
    fn decide<'a>(&'a self, proposal: &'a Proposal, ctx: &'a Context) -> BoxFuture<'a, Ruling>;
}

/// One decision about a proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The turn the proposal was made on.
    pub turn: u64,
    /// The proposal.
    pub proposal: Proposal,
    /// What was decided.
    #[serde(flatten)]
    pub decision: Decision,
    /// The ballots of the vote that decided, if one did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ballots: Vec<Ballot>,
}

/// The decisions about proposals made in one conversation, oldest first (kept in the [`Context`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProposalLog(pub Vec<Record>);

struct Inner {
    approver: Box<dyn Approver>,
    ledger: Mutex<Ledger>,
}

#[derive(Debug)]
struct Ledger {
    /// Where approved extensions live when shared ([`Proposals::with_registry`]).
    registry: Option<Arc<Mutex<Registry>>>,
    /// Who the registry says proposed (`added_by`).
    proposer: String,
    /// Every decision, oldest first.
    records: Vec<Record>,
    /// Approved and not withdrawn, in approval order (the order their deltas are composed).
    approved: Vec<Proposal>,
    /// Deferred, with the turn they were made on.
    pending: Vec<(u64, Proposal)>,
}

/// Whether a proposal is new, seen before, or taken.
enum Novelty {
    New,
    Seen,
    Taken(String),
}

impl Decision {
    /// A rejection with a reason.
    pub fn reject(reason: impl Into<String>) -> Self {
        Self::Reject {
            reason: reason.into(),
        }
    }
}

impl Ruling {
    /// A decision with the ballots that made it.
    pub fn voted(decision: Decision, ballots: Vec<Ballot>) -> Self {
        Self { decision, ballots }
    }
}

impl From<Decision> for Ruling {
    fn from(decision: Decision) -> Self {
        Self {
            decision,
            ballots: Vec::new(),
        }
    }
}

impl<F> Approver for F
where
    F: Fn(&Proposal, &Context) -> Decision + Send + Sync,
{
    fn decide<'a>(&'a self, proposal: &'a Proposal, ctx: &'a Context) -> BoxFuture<'a, Ruling> {
        Box::pin(ready(self(proposal, ctx).into()))
    }
}

impl Proposals {
    /// A proposals interceptor deciding through `approver`, keeping approved extensions itself.
    pub fn new(approver: impl Approver + 'static) -> Self {
        Self::build(approver, None)
    }

    /// A proposals interceptor deciding through `approver` whose approved extensions live in
    /// `registry`, shared with whoever else holds it: the registry checks each approved delta before
    /// it is active and audits every decision; what is active there (restored from a file, or rolled
    /// back) is what `pre_schema` emits. Give it a registry over the pipeline's base schema.
    pub fn with_registry(
        approver: impl Approver + 'static,
        registry: Arc<Mutex<Registry>>,
    ) -> Self {
        Self::build(approver, Some(registry))
    }

    fn build(approver: impl Approver + 'static, registry: Option<Arc<Mutex<Registry>>>) -> Self {
        Self {
            inner: Arc::new(Inner {
                approver: Box::new(approver),
                ledger: Mutex::new(Ledger {
                    registry,
                    ..Ledger::default()
                }),
            }),
        }
    }

    /// Who the registry's audit log says proposed the extensions approved from now on (default
    /// `model`): the model the conversation talks to.
    pub fn set_proposer(&self, proposer: impl Into<String>) {
        self.ledger().proposer = proposer.into();
    }

    /// Every decision, oldest first.
    pub fn log(&self) -> Vec<Record> {
        self.ledger().records.clone()
    }

    /// The approved proposals still active, in the order their deltas are emitted (with a registry,
    /// its extensions; the reason is empty for one this interceptor did not approve).
    pub fn approved(&self) -> Vec<Proposal> {
        self.ledger().approved()
    }

    /// The rejections, oldest first.
    pub fn rejected(&self) -> Vec<Record> {
        self.ledger()
            .records
            .iter()
            .filter(|r| matches!(r.decision, Decision::Reject { .. }))
            .cloned()
            .collect()
    }

    /// The proposals waiting for [`Proposals::resolve`].
    pub fn pending(&self) -> Vec<Proposal> {
        self.ledger()
            .pending
            .iter()
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// Settles a pending proposal; returns the record added, or `None` when no proposal with that id
    /// is pending or the decision is [`Decision::Defer`].
    pub fn resolve(&self, extension_id: &str, decision: Decision) -> Option<Record> {
        if decision == Decision::Defer {
            return None;
        }
        let mut ledger = self.ledger();
        let index = ledger
            .pending
            .iter()
            .position(|(_, p)| p.extension_id == extension_id)?;
        let (turn, proposal) = ledger.pending.remove(index);
        Some(ledger.decide(turn, proposal, decision.into()))
    }

    /// Removes an approved extension: later requests no longer carry it. Returns it, or `None` when
    /// none with that id is approved.
    pub fn withdraw(&self, extension_id: &str) -> Option<Proposal> {
        let mut ledger = self.ledger();
        let found = ledger
            .approved()
            .into_iter()
            .find(|p| p.extension_id == extension_id)?;
        ledger.approved.retain(|p| p.extension_id != extension_id);
        if let Some(registry) = &ledger.registry {
            lock(registry).remove(extension_id, "withdrawn").ok()?;
        }
        Some(found)
    }

    /// Puts `proposal`, made outside a reply by `proposer` (meta-debugging's schema remedy, say), to
    /// the approver as a reply's proposal is put: vetted, decided, and recorded in [`Proposals::log`],
    /// in `ctx`'s [`ProposalLog`] and, with a registry, in its audit log under `proposer`. Returns the
    /// record, or `None` when the same proposal was decided before (nothing is asked again).
    pub async fn propose(
        &self,
        proposal: Proposal,
        proposer: &str,
        ctx: &mut Context,
    ) -> Option<Record> {
        self.submit(proposal, Some(proposer), ctx).await
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.inner
            .ledger
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Vets, decides and records the reply's proposal, if it has one.
    async fn consider(&self, response: &Value, ctx: &mut Context) {
        let Some(raw) = response.get("proposed_extension").filter(|v| !v.is_null()) else {
            return;
        };
        let turn = ctx.turn;
        let proposal = match Proposal::deserialize(raw) {
            Ok(p) => p,
            Err(e) => {
                // The schema makes this unreachable unless the delta was skipped; keep what came.
                let proposal = Proposal {
                    extension_id: String::new(),
                    reason: String::new(),
                    delta: raw.clone(),
                };
                let record = self.ledger().decide(
                    turn,
                    proposal,
                    Decision::reject(format!("malformed proposal: {e}")).into(),
                );
                ctx.get_or_default::<ProposalLog>().0.push(record);
                return;
            }
        };
        self.submit(proposal, None, ctx).await;
    }

    /// Vets `proposal`, asks the approver and records the decision (in the context's
    /// [`ProposalLog`] too), by `proposer` when given (else the interceptor's); `None` when it was
    /// decided before.
    async fn submit(
        &self,
        proposal: Proposal,
        proposer: Option<&str>,
        ctx: &mut Context,
    ) -> Option<Record> {
        let turn = ctx.turn;
        let verdict = match self.ledger().novelty(&proposal) {
            Novelty::Seen => {
                debug!(extension = %proposal.extension_id, "proposal seen before; ignored");
                return None;
            }
            Novelty::Taken(reason) => Some(Decision::Reject { reason }),
            Novelty::New => check_delta(&proposal).err().map(Decision::reject),
        };
        let ruling = match verdict {
            Some(decision) => decision.into(),
            None => self.inner.approver.decide(&proposal, ctx).await,
        };
        info!(extension = %proposal.extension_id, decision = ?ruling.decision, "schema extension proposed");
        let record = {
            let mut ledger = self.ledger();
            // Another conversation may have settled the same id while the approver ran.
            let ruling = match ledger.novelty(&proposal) {
                Novelty::Seen => return None,
                Novelty::Taken(reason) => Decision::Reject { reason }.into(),
                Novelty::New => ruling,
            };
            let proposer = proposer.map_or_else(|| ledger.proposer.clone(), str::to_owned);
            ledger.decide_by(turn, proposal, ruling, &proposer)
        };
        ctx.get_or_default::<ProposalLog>().0.push(record.clone());
        Some(record)
    }
}

impl Default for Ledger {
    fn default() -> Self {
        Self {
            registry: None,
            proposer: "model".to_owned(),
            records: Vec::new(),
            approved: Vec::new(),
            pending: Vec::new(),
        }
    }
}

impl Ledger {
    /// Records the ruling and moves the proposal where it belongs. With a registry, an approved
    /// delta is added there first, and one the registry refuses is rejected with its reason.
    fn decide(&mut self, turn: u64, proposal: Proposal, ruling: Ruling) -> Record {
        let proposer = self.proposer.clone();
        self.decide_by(turn, proposal, ruling, &proposer)
    }

    /// [`Ledger::decide`], the registry recording `proposer` as who proposed.
    fn decide_by(
        &mut self,
        turn: u64,
        proposal: Proposal,
        ruling: Ruling,
        proposer: &str,
    ) -> Record {
        let Ruling { decision, ballots } = ruling;
        let delta = || {
            SchemaDelta::new(
                proposal.extension_id.clone(),
                proposer.to_owned(),
                proposal.delta.clone(),
            )
        };
        let decision = match (&self.registry, decision) {
            (Some(registry), Decision::Approve) => {
                match lock(registry).add_approved(delta(), ballots.clone()) {
                    Ok(_) => Decision::Approve,
                    Err(e) => Decision::reject(format!("the schema registry refused it: {e}")),
                }
            }
            (Some(registry), Decision::Reject { reason }) => {
                if !proposal.extension_id.is_empty() {
                    lock(registry).decline(&delta(), &reason, ballots.clone());
                }
                Decision::Reject { reason }
            }
            (_, decision) => decision,
        };
        match decision {
            Decision::Approve => self.approved.push(proposal.clone()),
            Decision::Defer => self.pending.push((turn, proposal.clone())),
            Decision::Reject { .. } => {}
        }
        let record = Record {
            turn,
            proposal,
            decision,
            ballots,
        };
        self.records.push(record.clone());
        record
    }

    /// The rejected proposals as `(extension_id, delta, reason)`, oldest first: with a registry, the
    /// declines and refusals of its audit log, so those of earlier runs count too.
    fn rejections(&self) -> Vec<(String, Value, String)> {
        let Some(registry) = &self.registry else {
            return self
                .records
                .iter()
                .filter_map(|r| match &r.decision {
                    Decision::Reject { reason } => Some((
                        r.proposal.extension_id.clone(),
                        r.proposal.delta.clone(),
                        reason.clone(),
                    )),
                    _ => None,
                })
                .collect();
        };
        lock(registry)
            .audit()
            .entries()
            .iter()
            // A declined compaction is claij's proposal, not the model's.
            .filter(|e| e.by != claij_schema::compact::COMPACTED_BY)
            .filter_map(|e| {
                let reason = e.reason.clone().unwrap_or_default();
                let reason = match e.action {
                    AuditAction::Declined => reason,
                    AuditAction::Rejected => format!("the schema registry refused it: {reason}"),
                    AuditAction::Added | AuditAction::Removed => return None,
                };
                Some((e.extension_id.clone(), e.delta.clone(), reason))
            })
            .collect()
    }

    /// The active approved proposals: the registry's extensions when there is one.
    fn approved(&self) -> Vec<Proposal> {
        let Some(registry) = &self.registry else {
            return self.approved.clone();
        };
        lock(registry)
            .extensions()
            .iter()
            .map(|e| Proposal {
                extension_id: e.extension_id.clone(),
                reason: self
                    .approved
                    .iter()
                    .find(|p| p.extension_id == e.extension_id)
                    .map(|p| p.reason.clone())
                    .unwrap_or_default(),
                delta: e.delta.clone(),
            })
            .collect()
    }

    fn novelty(&self, proposal: &Proposal) -> Novelty {
        let same_id = |p: &&Proposal| p.extension_id == proposal.extension_id;
        let approved = self.approved();
        let live = approved
            .iter()
            .chain(self.pending.iter().map(|(_, p)| p))
            .find(same_id);
        match live {
            Some(p) if p.delta == proposal.delta => Novelty::Seen,
            Some(_) => Novelty::Taken(format!(
                "extension id `{}` is already taken; propose a new id",
                proposal.extension_id
            )),
            None if self.records.iter().any(|r| {
                matches!(r.decision, Decision::Reject { .. }) && r.proposal == *proposal
            }) =>
            {
                Novelty::Seen
            }
            // Declined in an earlier run that saved the registry.
            None if self
                .rejections()
                .iter()
                .any(|(id, delta, _)| *id == proposal.extension_id && *delta == proposal.delta) =>
            {
                Novelty::Seen
            }
            None => Novelty::New,
        }
    }

    /// The prompt section listing the latest rejections, or `None`.
    fn declined_section(&self) -> Option<String> {
        let rejected: Vec<(String, String)> = self
            .rejections()
            .into_iter()
            .filter(|(id, _, _)| !id.is_empty())
            .map(|(id, _, reason)| (id, reason))
            .collect();
        if rejected.is_empty() {
            return None;
        }
        let mut out = String::from(
            "Schema extensions you proposed that were declined; do not propose them again:",
        );
        let skip = rejected.len().saturating_sub(PROMPTED_REJECTIONS);
        for (id, reason) in &rejected[skip..] {
            let _ = write!(out, "\n- `{id}`: {reason}");
        }
        Some(out)
    }
}

impl Interceptor for Proposals {
    fn name(&self) -> &str {
        "proposals"
    }

    fn pre_schema(&self, schema: &mut Schema, _ctx: &Context) -> Result<(), BoxError> {
        schema.extend(EXTENSION, delta());
        for proposal in self.ledger().approved() {
            schema.extend(proposal.extension_id, proposal.delta);
        }
        Ok(())
    }

    fn pre_prompt(&self, prompts: &mut Prompts, _ctx: &Context) -> Result<(), BoxError> {
        if let Some(section) = self.ledger().declined_section() {
            prompts.system_push(&section);
        }
        Ok(())
    }

    fn post_response<'a>(
        &'a self,
        response: &'a Value,
        ctx: &'a mut Context,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            self.consider(response, ctx).await;
            Ok(())
        })
    }
}

impl std::fmt::Debug for Proposals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // No lock here: formatting must not wait on (or deadlock with) a running hook.
        f.debug_struct("Proposals").finish_non_exhaustive()
    }
}

/// Locks a shared registry; a poisoned lock still holds a consistent registry (every change is
/// all-or-nothing).
fn lock(registry: &Mutex<Registry>) -> MutexGuard<'_, Registry> {
    registry.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The delta that offers `proposed_extension` ([`EXTENSION`]).
pub fn delta() -> Value {
    json!({"properties": {"proposed_extension": {
        "type": "object",
        "description": "Leave this out unless a new response field would clearly help in later turns, \
            for example to report your confidence or a detail the schema has no place for. A proposal is \
            reviewed; if approved, every later reply must follow it.",
        "required": ["extension_id", "reason", "delta"],
        "properties": {
            "extension_id": {
                "type": "string",
                "pattern": "^[a-z0-9][a-z0-9._-]*$",
                "maxLength": 64,
                "description": "A short lowercase id ending in a version, like confidence-v1"
            },
            "reason": {"type": "string", "description": "Why the field would help, in one sentence"},
            "delta": {
                "type": "object",
                "description": "The JSON Schema to merge into the response schema, like {\"properties\": \
                    {\"confidence\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 1, \
                    \"description\": \"How sure you are\"}}, \"required\": [\"confidence\"]}: each new field \
                    with a description under `properties`; under `required`, those every reply must fill in",
                "required": ["properties"],
                "additionalProperties": false,
                "properties": {
                    "properties": {
                        "type": "object",
                        "minProperties": 1,
                        "patternProperties": {"^[A-Za-z_][A-Za-z0-9_]*$": {"type": "object"}},
                        "additionalProperties": false
                    },
                    "required": {"type": "array", "items": {"type": "string"}}
                }
            }
        }
    }}})
}

/// Why a proposal's shape is unacceptable, if it is: what the schema asks, checked again because the
/// schema may have been skipped, plus what it cannot say (required names must be proposed fields).
fn check_delta(proposal: &Proposal) -> Result<(), String> {
    let id = &proposal.extension_id;
    let id_ok = !id.is_empty()
        && id.len() <= 64
        && id.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
    if !id_ok {
        return Err(format!(
            "extension id `{id}` is not a short lowercase id like confidence-v1"
        ));
    }
    if id == EXTENSION {
        return Err(format!("extension id `{id}` is reserved"));
    }
    let Some(delta) = proposal.delta.as_object() else {
        return Err("the delta is not an object".to_owned());
    };
    if let Some(key) = delta
        .keys()
        .find(|k| !matches!(k.as_str(), "properties" | "required"))
    {
        return Err(format!(
            "the delta may only add `properties` and `required`, not `{key}`"
        ));
    }
    let properties = match delta.get("properties").and_then(Value::as_object) {
        Some(p) if !p.is_empty() && p.values().all(Value::is_object) => p,
        _ => return Err("the delta's `properties` must map new field names to schemas".to_owned()),
    };
    // The schema cannot say this to the local model's grammar (llguidance drops `propertyNames`).
    if properties.contains_key("") {
        return Err("a proposed field needs a name: `\"\"` is not one".to_owned());
    }
    let required = match delta.get("required") {
        None => Vec::new(),
        Some(Value::Array(names)) => names.iter().map(Value::as_str).collect(),
        Some(_) => return Err("the delta's `required` must be a list of field names".to_owned()),
    };
    match required
        .iter()
        .find(|name| !name.is_some_and(|n| properties.contains_key(n)))
    {
        Some(Some(name)) => Err(format!(
            "`{name}` is required but not among the proposed properties"
        )),
        Some(None) => Err("the delta's `required` must be a list of field names".to_owned()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
