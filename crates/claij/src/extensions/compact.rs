//! Compaction of a conversation's (or a run journal's) schema extensions: worked out by the registry
//! ([`Registry::propose_compaction`]), put to the approver as any proposed extension is
//! ([`crate::approve::Approval`]), activated and audited when approved, recorded as declined when
//! not; [`super::rollback_conversation`] undoes it exactly.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use claij_interceptors::Context;
use claij_interceptors::builtin::proposals::{Approver, Decision, Proposal, Ruling};
use claij_schema::compact::Rewrite;
use claij_schema::{CompactionProposal, Registry};
use serde_json::{Value, json};

use super::Error;
use crate::approve::lock;
use crate::session::Session;

/// Who the audit log says proposed a compaction.
pub use claij_schema::compact::COMPACTED_BY;

/// The default budget: a composed schema whose prompt rendering is longer than this many tokens
/// (o200k_base) is proposed for compaction (`[proposals] compact_budget`, `--compact-budget`).
pub const DEFAULT_BUDGET: usize = 120;

/// What a compaction proposal came to.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionReport {
    /// The compaction's extension id (`compaction-1`).
    pub extension_id: String,
    /// The extensions it replaces, in order.
    pub replaced: Vec<String>,
    /// What it rewrites.
    pub rewrites: Vec<Rewrite>,
    /// Tokens of the schema's prompt rendering now.
    pub before: usize,
    /// Tokens of the schema's prompt rendering compacted.
    pub after: usize,
    /// The tokenizer counted with (`o200k_base`).
    pub tokenizer: String,
    /// What the approver decided; `None` for a dry run (nothing asked, nothing changed).
    pub decision: Option<Decision>,
}

impl CompactionReport {
    /// The compaction `ctx` says an approver is deciding on ([`propose_compaction`] puts it there),
    /// when the proposal is one.
    #[must_use]
    pub fn asked(ctx: &Context) -> Option<&Self> {
        ctx.get::<Self>()
    }

    /// The question put to a person: `claij proposes compacting the schema's 10 extensions (a, b,
    /// ...) into `compaction-1`: 412 -> 268 tokens (o200k_base) of its prompt rendering; ...`,
    /// then a line per rewrite.
    #[must_use]
    pub fn question(&self) -> String {
        let mut text = format!(
            "claij proposes compacting the schema's {} extension(s) ({}) into `{}`: {} -> {} \
             tokens ({}) of its prompt rendering; every reply valid before stays valid and no \
             other becomes valid",
            self.replaced.len(),
            self.replaced.join(", "),
            self.extension_id,
            self.before,
            self.after,
            self.tokenizer,
        );
        for rewrite in &self.rewrites {
            text.push_str("\n  - ");
            text.push_str(&rewrite.to_string());
        }
        text
    }
}

/// Counts the tokens of a text (the tokenizer's name, and the count or why not).
pub struct Count<'a> {
    /// The tokenizer's name, as reports show it.
    pub tokenizer: &'a str,
    /// The count.
    pub count: &'a dyn Fn(&str) -> Result<usize, String>,
}

/// Proposes compacting the extensions of the conversation `file` (composed onto `base`, the
/// response schema it runs with) to `approver`, and saves the outcome to the file (unless
/// `dry_run`); the caller holds the session's lock. `None` when there is nothing to compact.
///
/// # Errors
///
/// The file cannot be read or written; it has no extensions; they do not compose with `base`;
/// the tokens cannot be counted.
pub async fn compact_conversation(
    file: &Path,
    base: Value,
    approver: &dyn Approver,
    count: &Count<'_>,
    dry_run: bool,
) -> Result<Option<CompactionReport>, Error> {
    let session = Session::load(file)?;
    let registry = conversation_registry(file, &session, base)?;
    let report = propose_compaction(file, &registry, approver, count, dry_run).await?;
    if report.as_ref().is_some_and(|r| r.decision.is_some()) {
        session.with_extensions(Some(&lock(&registry))).save(file)?;
    }
    Ok(report)
}

/// Who decides on a compaction asked for on demand (`claij schema compact --approve
/// auto|ask|never`).
#[cfg(feature = "tokens")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDemand {
    /// Approved.
    Auto,
    /// The person at the terminal decides: the caller's approver ([`compact_file`]'s `person`),
    /// asked with [`crate::approve::question`].
    Ask,
    /// Recorded as declined.
    Never,
}

/// Why `--approve vote` is refused by `claij schema compact`.
#[cfg(feature = "tokens")]
pub const VOTE_ON_DEMAND: &str = "--approve vote is for a conversation's models (claij ask|chat \
    --interceptors proposals --approve vote --compact-budget N puts a compaction to their vote); \
    schema compact decides with auto, ask or never";

#[cfg(feature = "tokens")]
impl std::str::FromStr for OnDemand {
    type Err = &'static str;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "ask" => Ok(Self::Ask),
            "never" => Ok(Self::Never),
            "vote" => Err(VOTE_ON_DEMAND),
            _ => Err("expected auto, ask or never"),
        }
    }
}

/// `claij schema compact FILE [--schema BASE] [--approve auto|ask|never] [--dry-run]`: proposes
/// compacting the extensions of `file`, counted in o200k_base, decided as `approve` says (`Ask`:
/// `person`, the person at the terminal, `None` when there is none) and saved under the file's
/// lock. A conversation's extensions compose onto `base` (as [`super::conversation_base`] says;
/// `waiting` told when another process holds the lock), as [`compact_conversation`] does; a run's
/// journal's (feature `fsm`) onto its own base, the new extensions appended as a rollback appends
/// them (`compact_journal`). `None` when there is nothing to compact.
///
/// # Errors
///
/// [`Error::NoTerminal`]: `Ask` without a `person`, before anything is read;
/// [`Error::JournalBase`]: a `base` for a journal; [`Error::NotConversation`]: a journal without
/// the `fsm` feature; else as [`compact_conversation`] and `compact_journal`.
#[cfg(feature = "tokens")]
pub fn compact_file(
    file: &Path,
    base: Option<(&str, Value)>,
    approve: OnDemand,
    person: Option<&dyn Approver>,
    dry_run: bool,
    waiting: impl FnMut(&crate::conversation::Opening),
) -> Result<Option<CompactionReport>, Error> {
    use futures_util::FutureExt as _;

    let auto = |_: &Proposal, _: &Context| Decision::Approve;
    let never = |_: &Proposal, _: &Context| {
        Decision::reject("compactions are declined here (--approve never)")
    };
    let approver: &dyn Approver = match (approve, person) {
        (OnDemand::Auto, _) => &auto,
        (OnDemand::Never, _) => &never,
        (OnDemand::Ask, Some(person)) => person,
        (OnDemand::Ask, None) => return Err(Error::NoTerminal),
    };
    let journal = super::Kind::of(file)? == super::Kind::Journal;
    if journal && !cfg!(feature = "fsm") {
        return Err(Error::NotConversation {
            file: file.to_owned(),
            command: "claij schema compact (without the fsm feature)",
        });
    }
    if let (true, Some((name, _))) = (journal, &base) {
        return Err(Error::JournalBase {
            file: file.to_owned(),
            schema: (*name).to_owned(),
        });
    }
    let counter = crate::tokens::Tokenizer::O200kBase.open()?;
    let count = |text: &str| counter.count(text).map_err(|e| e.to_string());
    let count = Count {
        tokenizer: counter.name(),
        count: &count,
    };
    // The approvers decide at once (a person's answer is read before `decide` returns), so the
    // proposal is settled on its first poll.
    let settle = |proposed: Option<Result<_, Error>>| {
        proposed.unwrap_or_else(|| {
            Err(Error::Session(crate::Error::config(
                "the compaction's approver did not decide at once",
            )))
        })
    };
    #[cfg(feature = "fsm")]
    if journal {
        return settle(compact_journal(file, approver, &count, dry_run).now_or_never());
    }
    let base = super::conversation_base(base)?;
    let _lock = crate::session::SessionLock::acquire_telling(file, waiting)?;
    settle(compact_conversation(file, base, approver, &count, dry_run).now_or_never())
}

/// Proposes compacting the extensions of the run's journal `file` (composed onto the journal's own
/// base, `{"type": "object"}` for a run: each state composes them onto its output schema) to
/// `approver`; when decided (not a `dry_run`), appends the new extensions and audit log under the
/// journal's lock, as `claij schema rollback` does, so the journal's last extensions line is what
/// a resumed run carries and `claij schema rollback FILE compaction-N` restores the replaced
/// extensions exactly. An approved compaction is recorded only when it composes onto the output
/// schema of every `llm` state the header's machine has. `None` when there is nothing to compact.
///
/// # Errors
///
/// The journal cannot be read, locked (a run holds it) or appended to; it has no extensions; they
/// do not compose (onto the base, or compacted onto a state's output schema:
/// [`Error::StateCompose`]); the tokens cannot be counted.
#[cfg(feature = "fsm")]
pub async fn compact_journal(
    file: &Path,
    approver: &dyn Approver,
    count: &Count<'_>,
    dry_run: bool,
) -> Result<Option<CompactionReport>, Error> {
    // A dry run only reads (locking repairs a torn last line).
    let journal = (!dry_run)
        .then(|| claij_fsm::Journal::resume(file))
        .transpose()?;
    let Some(saved) = claij_fsm::journal::read_extensions(file)? else {
        return Err(Error::NoExtensions {
            file: file.to_owned(),
            journal: true,
        });
    };
    let registry = Registry::from_saved(saved).map_err(|source| Error::Compose {
        file: file.to_owned(),
        source: Box::new(source),
    })?;
    let registry = Mutex::new(registry);
    let report = propose_compaction(file, &registry, approver, count, dry_run).await?;
    if let (Some((mut journal, header, _)), true) = (
        journal,
        report.as_ref().is_some_and(|r| r.decision.is_some()),
    ) {
        let registry = lock(&registry);
        if report.as_ref().and_then(|r| r.decision.as_ref()) == Some(&Decision::Approve) {
            compose_in_states(file, &header, registry.extensions())?;
        }
        journal.record_extensions(&registry.to_saved())?;
    }
    Ok(report)
}

/// Checks that `extensions` compose onto the output schema of every `llm` state of the run's
/// machine and its sub-FSMs, as the journal's header keeps them (a state's own `$defs` may
/// name what a compaction shares); a header without the machine is checked when the run resumes.
///
/// # Errors
///
/// [`Error::StateCompose`] naming the first state they do not compose onto.
#[cfg(feature = "fsm")]
fn compose_in_states(
    file: &Path,
    header: &claij_fsm::journal::Header,
    extensions: &[claij_schema::SchemaDelta],
) -> Result<(), Error> {
    let mut pending: Vec<&claij_fsm::Definition> = header.definition.iter().collect();
    let mut subs: Vec<&claij_fsm::journal::SubDefinition> = header.sub_fsms.iter().collect();
    while let Some(sub) = subs.pop() {
        pending.push(&sub.definition);
        subs.extend(&sub.sub_fsms);
    }
    for definition in pending {
        let fsm = claij_fsm::Fsm::new(definition.clone())?;
        let llm = definition.states.iter();
        for state in llm.filter(|s| s.action == claij_fsm::Action::Llm) {
            let Some(schema) = fsm.output_schema(&state.id) else {
                continue;
            };
            claij_schema::compose(schema, extensions).map_err(|source| Error::StateCompose {
                file: file.to_owned(),
                state: state.id.clone(),
                source: Box::new(source),
            })?;
        }
    }
    Ok(())
}

/// The conversation's registry over `base`, shared (as [`crate::approve::registry`] builds it).
///
/// # Errors
///
/// [`Error::NoExtensions`], or [`Error::Compose`] when they do not compose onto `base`.
pub fn conversation_registry(
    file: &Path,
    session: &Session,
    base: Value,
) -> Result<Arc<Mutex<Registry>>, Error> {
    let Some(saved) = &session.extensions else {
        return Err(Error::NoExtensions {
            file: file.to_owned(),
            journal: false,
        });
    };
    crate::approve::registry(base, Some(saved)).map_err(|source| Error::Compose {
        file: file.to_owned(),
        source: Box::new(source),
    })
}

/// Proposes compacting the extensions of `registry` to `approver` (the `file` they belong to named
/// in errors): activated in `registry` when approved, recorded as declined when not (deferred is
/// declined: a compaction is decided at once). `None` when there is nothing to compact. The
/// registry is not locked while the approver decides (a vote reads it).
///
/// # Errors
///
/// The compaction does not compose, the registry changed while the approver decided, or the
/// tokens cannot be counted.
pub async fn propose_compaction(
    file: &Path,
    registry: &Mutex<Registry>,
    approver: &dyn Approver,
    count: &Count<'_>,
    dry_run: bool,
) -> Result<Option<CompactionReport>, Error> {
    let compose_error = |source| Error::Compose {
        file: file.to_owned(),
        source: Box::new(source),
    };
    let proposal = {
        let registry = lock(registry);
        let id = next_id(&registry);
        registry
            .propose_compaction(&id, COMPACTED_BY)
            .map_err(compose_error)?
    };
    let Some(proposal) = proposal else {
        return Ok(None);
    };
    let tokens = |schema: &Value| {
        (count.count)(&claij_schema::to_compact(schema)).map_err(|message| Error::Count {
            file: file.to_owned(),
            message,
        })
    };
    let mut report = CompactionReport {
        extension_id: proposal.delta.extension_id.clone(),
        replaced: proposal
            .replaced
            .iter()
            .map(|d| d.extension_id.clone())
            .collect(),
        rewrites: proposal.rewrites.clone(),
        before: tokens(&proposal.before)?,
        after: tokens(&proposal.after)?,
        tokenizer: count.tokenizer.to_owned(),
        decision: None,
    };
    if dry_run {
        return Ok(Some(report));
    }
    let asked = Proposal {
        extension_id: report.extension_id.clone(),
        reason: report.reason(),
        delta: proposal.delta.delta.clone(),
    };
    // The approver is told what it decides on: a compaction claij worked out, not a model's idea.
    let mut ctx = Context::default();
    ctx.insert(report.clone());
    let ruling = approver.decide(&asked, &ctx).await;
    let decision = decide(registry, proposal, &asked.reason, ruling).map_err(compose_error)?;
    report.decision = Some(decision);
    Ok(Some(report))
}

/// Activates `proposal` when the ruling approves, else records it declined (deferred is
/// declined); the decision applied.
fn decide(
    registry: &Mutex<Registry>,
    proposal: CompactionProposal,
    reason: &str,
    ruling: Ruling,
) -> Result<Decision, claij_schema::Error> {
    let mut registry = lock(registry);
    let decision = match ruling.decision {
        Decision::Defer => {
            Decision::reject("deferred, so declined: a compaction is decided at once")
        }
        other => other,
    };
    match &decision {
        Decision::Approve => registry.compact(proposal, reason, ruling.ballots)?,
        Decision::Reject { reason } => registry.decline(&proposal.delta, reason, ruling.ballots),
        // Mapped to a rejection above.
        Decision::Defer => {}
    }
    Ok(decision)
}

/// `compaction-N`, the first N free in the registry's audit log.
fn next_id(registry: &Registry) -> String {
    let taken = |id: &str| {
        registry
            .audit()
            .entries()
            .iter()
            .any(|e| e.extension_id == id)
    };
    (1..)
        .map(|n| format!("compaction-{n}"))
        .find(|id| !taken(id))
        .unwrap_or_default()
}

impl CompactionReport {
    /// Why the compaction is proposed, as the approver reads it and the audit log keeps it: the
    /// token figures, the extensions replaced, each rewrite.
    pub fn reason(&self) -> String {
        let mut text = format!(
            "Compacts the response schema from {} to {} tokens ({}) of its prompt rendering; \
             every reply valid before stays valid and no other becomes valid. Replaces {}.",
            self.before,
            self.after,
            self.tokenizer,
            self.replaced.join(", ")
        );
        for rewrite in &self.rewrites {
            text.push_str("\n- ");
            text.push_str(&rewrite.to_string());
        }
        text
    }

    /// `{"extension_id", "replaced", "rewrites", "tokens": {"before", "after", "tokenizer"},
    /// "decision"}` (`decision` null for a dry run).
    pub fn to_json(&self) -> Value {
        json!({
            "extension_id": self.extension_id,
            "replaced": self.replaced,
            "rewrites": self.rewrites,
            "tokens": {"before": self.before, "after": self.after, "tokenizer": self.tokenizer},
            "decision": self.decision,
        })
    }
}

impl fmt::Display for CompactionReport {
    /// `compaction-1: 412 -> 268 tokens (o200k_base), replacing a, b: activated`, then a line per
    /// rewrite.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let outcome = match &self.decision {
            None => "not applied (--dry-run)".to_owned(),
            Some(Decision::Approve) => "activated".to_owned(),
            Some(Decision::Reject { reason }) => format!("declined: {reason}"),
            Some(Decision::Defer) => "deferred".to_owned(),
        };
        write!(
            f,
            "{}: {} -> {} tokens ({}), replacing {}: {outcome}",
            self.extension_id,
            self.before,
            self.after,
            self.tokenizer,
            self.replaced.join(", ")
        )?;
        for rewrite in &self.rewrites {
            write!(f, "\n  {rewrite}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests;
