//! The schema extensions a conversation file ([`crate::session::Session`]) or, with the `fsm`
//! feature, a run's journal keeps: the deltas that shaped its requests (every interceptor's, and
//! approved proposals), each change once, and the extensions proposed and how each was decided
//! ([`Audit`]); and the removal of one of them ([`rollback_conversation`], and with `fsm`
//! `rollback_journal`); and, with the feature `tokens`, what each costs in the prompt (`cost`).

use std::fmt;
use std::path::{Path, PathBuf};

use claij_schema::{AppliedLog, AuditAction, AuditEntry, AuditLog, Registry, SavedRegistry};
use serde_json::{Value, json};

use crate::session::Session;

pub(crate) mod compact;
#[cfg(feature = "fsm")]
pub use self::compact::compact_journal;
pub use self::compact::{
    COMPACTED_BY, CompactionReport, Count, DEFAULT_BUDGET, compact_conversation,
    conversation_registry, propose_compaction,
};
#[cfg(feature = "tokens")]
pub use self::compact::{OnDemand, VOTE_ON_DEMAND, compact_file};

#[cfg(feature = "tokens")]
mod cost;
#[cfg(feature = "tokens")]
pub use self::cost::{Cost, Costs, DeltaCost, Source, Window, cost};

/// Who the audit log says removed an extension rolled back.
pub const ROLLED_BACK_BY: &str = "claij schema rollback";

/// Reading or rolling back a file's extensions failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file cannot be read.
    #[error("cannot read {}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The conversation file cannot be read, locked or written.
    #[error(transparent)]
    Session(#[from] crate::Error),
    /// The journal cannot be read or written (feature `fsm`).
    #[cfg(feature = "fsm")]
    #[error(transparent)]
    Journal(#[from] claij_fsm::Error),
    /// The file keeps no schema extensions to roll back.
    #[error("{}: the {} has no schema extensions", file.display(), if *journal { "run" } else { "conversation" })]
    NoExtensions {
        /// The file.
        file: PathBuf,
        /// Whether it is a run's journal (else a conversation).
        journal: bool,
    },
    /// The saved extensions do not compose with the schema given.
    #[error("{}: the saved schema extensions do not compose with this schema", file.display())]
    Compose {
        /// The file.
        file: PathBuf,
        /// The registry's error.
        source: Box<claij_schema::Error>,
    },
    /// The extension cannot be removed (it is not active, or the rest no longer compose).
    #[error("{}: cannot roll back `{extension_id}` (active: {})", file.display(), names(active))]
    Rollback {
        /// The file.
        file: PathBuf,
        /// The extension asked for.
        extension_id: String,
        /// The extensions active.
        active: Vec<String>,
        /// The registry's error.
        source: Box<claij_schema::Error>,
    },
    /// The active deltas do not compose onto the base schema given, so their cost cannot be counted.
    #[error("the active schema deltas do not compose onto the base schema: {0}")]
    Uncomposable(Box<claij_schema::Error>),
    /// A schema file is not a valid JSON Schema (or not JSON).
    #[error("{}: not a valid JSON Schema", file.display())]
    InvalidSchema {
        /// The file.
        file: PathBuf,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The tokenizer failed.
    #[cfg(feature = "tokens")]
    #[error(transparent)]
    Tokens(#[from] crate::tokens::Error),
    /// The file is a run's journal, and the command takes conversations only.
    #[error("{}: a run's journal: {command} takes a conversation file (`claij ask|chat --session FILE`)", file.display())]
    NotConversation {
        /// The file.
        file: PathBuf,
        /// The command refusing it (`claij schema compact`).
        command: &'static str,
    },
    /// `--approve ask` with nobody to ask: no terminal (`claij schema compact`).
    #[error(
        "--approve ask asks the person at the terminal, and there is none (stdin and stderr are \
         not both terminals): --approve auto or never decide without one"
    )]
    NoTerminal,
    /// A response schema given for a run's journal, whose extensions compose onto its own base.
    #[error("{}: a run's journal composes its extensions onto its own base (each state onto its output schema): --schema {schema} is for a conversation", file.display())]
    JournalBase {
        /// The journal.
        file: PathBuf,
        /// The schema given.
        schema: String,
    },
    /// A run's compacted extensions do not compose onto a state's output schema: not recorded.
    #[error("{}: the compacted extensions do not compose onto the output schema of state `{state}`, so the compaction is not recorded", file.display())]
    StateCompose {
        /// The journal.
        file: PathBuf,
        /// The `llm` state.
        state: String,
        /// The composition's error.
        source: Box<claij_schema::Error>,
    },
    /// The tokens of a schema's rendering cannot be counted (a compaction's figures).
    #[error("{}: cannot count the schema's tokens: {message}", file.display())]
    Count {
        /// The file.
        file: PathBuf,
        /// Why.
        message: String,
    },
}

/// What a file keeping schema extensions is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A conversation file (`claij ask|chat --session FILE`).
    Conversation,
    /// A run's journal (`claij fsm run --journal FILE`): its first line a run header.
    Journal,
}

impl Kind {
    /// What `file` is: a journal when its first line is a run header, else a conversation.
    ///
    /// # Errors
    ///
    /// [`Error::Read`]: the file cannot be read (or is larger than [`crate::fs::MAX_INPUT_BYTES`]).
    pub fn of(file: &Path) -> Result<Self, Error> {
        let text = crate::fs::read_file_capped(
            file,
            crate::fs::MAX_INPUT_BYTES,
            "a conversation or journal",
        )
        .map_err(|source| Error::Read {
            file: file.to_owned(),
            source,
        })?;
        let first = text.lines().next().unwrap_or_default();
        let journal = serde_json::from_str::<Value>(first)
            .is_ok_and(|line| line.get("kind").and_then(|k| k.as_str()) == Some("run"));
        Ok(if journal {
            Self::Journal
        } else {
            Self::Conversation
        })
    }
}

/// The audit logs of a conversation or a journal: printed ([`fmt::Display`]) oldest first, the
/// deltas applied to its requests, then the proposed extensions (`active:` last).
#[derive(Debug, Clone)]
pub struct Audit {
    /// The file read.
    pub file: PathBuf,
    /// The deltas applied to the requests: per `llm` state of a journal (`Some(state)`), else the
    /// conversation's (`None`), when it has any.
    pub applied: Vec<(Option<String>, AppliedLog)>,
    /// The proposed extensions: those active, and how each was decided.
    pub proposed: SavedRegistry,
}

impl Audit {
    /// The audit logs of `file`, a conversation or (feature `fsm`) a journal.
    ///
    /// # Errors
    ///
    /// The file cannot be read, or is no conversation or journal.
    pub fn read(file: &Path) -> Result<Self, Error> {
        let (saved, applied) = match Kind::of(file)? {
            #[cfg(feature = "fsm")]
            Kind::Journal => {
                let applied = claij_fsm::journal::read_applied(file)?
                    .into_iter()
                    .map(|(state, log)| (Some(state), log))
                    .collect();
                (claij_fsm::journal::read_extensions(file)?, applied)
            }
            _ => {
                let session = Session::load(file)?;
                let applied = if session.applied.is_empty() {
                    Vec::new()
                } else {
                    vec![(None, session.applied)]
                };
                (session.extensions, applied)
            }
        };
        let proposed = saved.unwrap_or_else(|| SavedRegistry {
            base: Value::Null,
            extensions: Vec::new(),
            audit: AuditLog::default(),
            compactions: Vec::new(),
        });
        Ok(Self {
            file: file.to_owned(),
            applied,
            proposed,
        })
    }

    /// `{"applied": [{"state", "active", "audit"}], "extensions": {"active", "audit"}}` (`state`
    /// null for a conversation).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let applied: Vec<Value> = self
            .applied
            .iter()
            .map(|(state, log)| json!({"state": state, "active": log.active(), "audit": log.audit()}))
            .collect();
        json!({
            "applied": applied,
            "extensions": {"active": self.proposed.extensions, "audit": self.proposed.audit},
        })
    }
}

impl fmt::Display for Audit {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (state, log) in &self.applied {
            write_applied(out, state.as_deref(), log)?;
        }
        if self.proposed.audit.is_empty() {
            return write!(
                out,
                "{}: no schema extension was proposed",
                self.file.display()
            );
        }
        if !self.applied.is_empty() {
            writeln!(out, "schema extensions proposed:")?;
        }
        for entry in self.proposed.audit.entries() {
            write_entry(out, entry)?;
        }
        let active = self
            .proposed
            .extensions
            .iter()
            .map(|e| e.extension_id.as_str());
        write!(out, "active: {}", names(active))
    }
}

/// `a, b`, or `none`.
fn names<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> String {
    let names: Vec<S> = names.into_iter().collect();
    if names.is_empty() {
        return "none".to_owned();
    }
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    names.join(", ")
}

/// The deltas applied to the requests (of `state`, in a journal): a heading, each change (when,
/// which extension, applied or no longer, by whom, the delta), and those of the last request.
fn write_applied(
    out: &mut fmt::Formatter<'_>,
    state: Option<&str>,
    log: &AppliedLog,
) -> fmt::Result {
    match state {
        Some(state) => writeln!(
            out,
            "schema deltas applied to the requests of state `{state}`:"
        )?,
        None => writeln!(out, "schema deltas applied to the requests:")?,
    }
    for entry in log.audit().entries() {
        let action = match entry.action {
            AuditAction::Added => "applied",
            AuditAction::Removed => "no longer applied",
            AuditAction::Rejected => "refused by the registry",
            AuditAction::Declined => "declined",
        };
        writeln!(
            out,
            "{}  {}  {action}  (added by {})",
            humantime::format_rfc3339_seconds(entry.at),
            entry.extension_id,
            entry.by
        )?;
        writeln!(out, "    delta: {}", entry.delta)?;
    }
    let last = log.active().iter().map(|d| d.extension_id.as_str());
    writeln!(out, "applied to the last request: {}", names(last))
}

/// One audit entry: when, what, which extension, by whom; then the reason, the ballots, the delta.
fn write_entry(out: &mut fmt::Formatter<'_>, entry: &AuditEntry) -> fmt::Result {
    let (action, by) = match entry.action {
        AuditAction::Added => ("activated", "proposed by"),
        AuditAction::Rejected => ("refused by the registry", "proposed by"),
        AuditAction::Removed => ("rolled back", "removed by"),
        AuditAction::Declined => ("declined", "proposed by"),
    };
    writeln!(
        out,
        "{}  {}  {action}  ({by} {})",
        humantime::format_rfc3339_seconds(entry.at),
        entry.extension_id,
        entry.by
    )?;
    if let Some(reason) = &entry.reason {
        writeln!(out, "    reason: {reason}")?;
    }
    for ballot in &entry.ballots {
        let verb = if ballot.approve {
            "approves"
        } else {
            "rejects"
        };
        writeln!(out, "    {} {verb}: {}", ballot.voter, ballot.reason)?;
    }
    writeln!(out, "    delta: {}", entry.delta)
}

/// A schema delta from the JSON `value` of the file `path`: either a full `{extension_id,
/// added_by, added_at, delta}` document, or a bare partial schema, then the extension named after
/// the file (its stem, less `.delta`) and added by `added_by`.
///
/// # Errors
///
/// A document that is no valid delta document, or a value that is no JSON object: what is wrong,
/// for the caller to prefix with the file's name.
pub fn delta_of_file(
    value: Value,
    path: &Path,
    added_by: &str,
) -> Result<claij_schema::SchemaDelta, String> {
    let is_document = value.get("extension_id").is_some() && value.get("delta").is_some();
    if is_document {
        return serde_json::from_value(value)
            .map_err(|e| format!("invalid schema delta document: {e}"));
    }
    if !value.is_object() {
        return Err("a schema delta must be a JSON object".to_owned());
    }
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("delta");
    let id = stem.trim_end_matches(".delta").to_owned();
    Ok(claij_schema::SchemaDelta::new(id, added_by, value))
}

/// The response schema a conversation runs with: `schema` (as `claij ask --schema` names it) when
/// given, checked, else [`claij_schema::base`].
///
/// # Errors
///
/// [`Error::InvalidSchema`]: `schema` is not a valid JSON Schema.
pub fn conversation_base(schema: Option<(&str, Value)>) -> Result<Value, Error> {
    let Some((name, schema)) = schema else {
        return Ok(claij_schema::base());
    };
    claij_schema::check(&schema).map_err(|e| Error::InvalidSchema {
        file: PathBuf::from(name),
        source: Box::new(e),
    })?;
    Ok(schema)
}

/// `claij schema rollback FILE EXTENSION [--schema BASE]`: removes `extension_id` from `file`, a
/// conversation (under its lock, `waiting` told when another process holds it; composed onto
/// `base`, as [`conversation_base`] says) or (feature `fsm`) a run's journal (onto `base`, default
/// its own). The registry left.
///
/// # Errors
///
/// As [`rollback_conversation`] and `rollback_journal`; [`Error::NotConversation`] for a journal
/// without the `fsm` feature.
pub fn rollback(
    file: &Path,
    extension_id: &str,
    base: Option<(&str, Value)>,
    waiting: impl FnMut(&crate::conversation::Opening),
) -> Result<Registry, Error> {
    if Kind::of(file)? == Kind::Journal {
        #[cfg(feature = "fsm")]
        return rollback_journal(file, extension_id, base.map(|(_, base)| base));
        #[cfg(not(feature = "fsm"))]
        return Err(Error::NotConversation {
            file: file.to_owned(),
            command: "claij schema rollback (without the fsm feature)",
        });
    }
    let base = conversation_base(base)?;
    let _lock = crate::session::SessionLock::acquire_telling(file, waiting)?;
    rollback_conversation(file, extension_id, base)
}

/// Removes `extension_id` from the extensions of the conversation `file`, composing and checking
/// the rest onto `base` (the response schema the conversation runs with), and writes the file back;
/// the caller holds the session's lock ([`crate::session::SessionLock`]). The registry left.
///
/// # Errors
///
/// The file cannot be read or written; it has no extensions; they do not compose with `base`; the
/// extension is not active or the rest no longer compose without it.
pub fn rollback_conversation(
    file: &Path,
    extension_id: &str,
    base: Value,
) -> Result<Registry, Error> {
    let session = Session::load(file)?;
    let Some(saved) = &session.extensions else {
        return Err(Error::NoExtensions {
            file: file.to_owned(),
            journal: false,
        });
    };
    let saved = SavedRegistry {
        base,
        extensions: saved.extensions.clone(),
        audit: saved.audit.clone(),
        compactions: saved.compactions.clone(),
    };
    let registry = remove(file, saved, extension_id)?;
    session.with_extensions(Some(&registry)).save(file)?;
    Ok(registry)
}

/// Removes `extension_id` from the extensions of the journal `file` (under its lock), composing and
/// checking the rest onto `base` (default the journal's own), and appends the new extensions line.
/// The registry left.
///
/// # Errors
///
/// As [`rollback_conversation`], for a journal.
#[cfg(feature = "fsm")]
pub fn rollback_journal(
    file: &Path,
    extension_id: &str,
    base: Option<Value>,
) -> Result<Registry, Error> {
    let mut journal = claij_fsm::Journal::append_to(file)?;
    let Some(mut saved) = claij_fsm::journal::read_extensions(file)? else {
        return Err(Error::NoExtensions {
            file: file.to_owned(),
            journal: true,
        });
    };
    if let Some(base) = base {
        saved.base = base;
    }
    let registry = remove(file, saved, extension_id)?;
    journal.record_extensions(&registry.to_saved())?;
    Ok(registry)
}

/// The registry `saved` without `extension_id`, the rest composed and checked again.
fn remove(file: &Path, saved: SavedRegistry, extension_id: &str) -> Result<Registry, Error> {
    let mut registry = Registry::from_saved(saved).map_err(|source| Error::Compose {
        file: file.to_owned(),
        source: Box::new(source),
    })?;
    if let Err(source) = registry.remove(extension_id, ROLLED_BACK_BY) {
        return Err(Error::Rollback {
            file: file.to_owned(),
            extension_id: extension_id.to_owned(),
            active: registry
                .extensions()
                .iter()
                .map(|e| e.extension_id.clone())
                .collect(),
            source: Box::new(source),
        });
    }
    Ok(registry)
}

#[cfg(test)]
mod tests;
