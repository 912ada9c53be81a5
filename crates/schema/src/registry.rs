//! The extension registry: add, compose, check and activate schema deltas, with rollback and an audit log.

use std::sync::Arc;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::compose::compose;
use crate::delta::SchemaDelta;
use crate::error::{Error, Result};
use crate::memo::SchemaHash;

/// The active response schema and the extensions that built it.
///
/// Every change is all-or-nothing: a delta that conflicts or makes the composed schema invalid is
/// rejected, the previous schema stays active, and the rejection is recorded in the audit log.
///
/// ```
/// use claij_schema::{Registry, SchemaDelta};
/// use serde_json::json;
///
/// let mut registry = Registry::new(claij_schema::base())?;
/// registry.add(SchemaDelta::new("summary-v1", "memory", json!({
///     "properties": {"summary": {"type": "string"}}, "required": ["summary"],
/// })))?;
///
/// // A delta that breaks the schema is rolled back; the error names it and says where.
/// let broken = SchemaDelta::new("bad-v1", "model", json!({"properties": {"x": {"type": "strin"}}}));
/// let err = registry.add(broken).unwrap_err();
/// assert!(err.to_string().contains("bad-v1"));
/// assert!(err.to_string().contains("/properties/x/type"));
/// assert!(registry.active()["properties"].get("x").is_none());
/// assert_eq!(registry.audit().len(), 2); // added, rejected
/// # Ok::<(), claij_schema::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Registry {
    base: Value,
    extensions: Vec<SchemaDelta>,
    active: Arc<Value>,
    hash: SchemaHash,
    audit: AuditLog,
    /// The compactions whose extension is active or inside a later compaction, oldest first.
    compactions: Vec<Compaction>,
    clock: fn() -> SystemTime,
}

/// What [`Registry::add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// The extension was activated.
    Activated,
    /// The same extension with the same delta was already active: nothing changed.
    AlreadyActive,
}

/// The audit log: every addition, rejection and removal, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AuditLog {
    entries: Vec<AuditEntry>,
}

/// One entry of the [`AuditLog`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// What happened.
    pub action: AuditAction,
    /// The extension concerned.
    pub extension_id: String,
    /// Who asked for it (`added_by` of the delta, or who removed it).
    pub by: String,
    /// When it happened.
    #[serde(with = "crate::delta::rfc3339")]
    pub at: SystemTime,
    /// The delta concerned.
    pub delta: Value,
    /// Why it was rejected or declined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The ballots of the vote that decided it, if one did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ballots: Vec<Ballot>,
}

/// One voter's ballot on a proposed schema delta, kept in the [`AuditLog`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ballot {
    /// Who voted (a model, a person).
    pub voter: String,
    /// Whether the voter approves the delta.
    pub approve: bool,
    /// Why, in the voter's words.
    #[serde(default)]
    pub reason: String,
}

/// A [`Registry`] as it is saved with a conversation or a run: the base schema, the active extensions
/// in order and the audit log. [`Registry::from_saved`] composes and checks it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedRegistry {
    /// The base schema the extensions compose onto.
    pub base: Value,
    /// The active extensions, in the order they are composed.
    #[serde(default)]
    pub extensions: Vec<SchemaDelta>,
    /// Every addition, rejection, refusal and removal, oldest first.
    #[serde(default)]
    pub audit: AuditLog,
    /// The compactions in force: each the deltas its extension stands for, to bring back on its
    /// rollback ([`Registry::compact`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compactions: Vec<Compaction>,
}

/// The kinds of [`AuditEntry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    /// The delta was activated.
    Added,
    /// The delta was refused; the previous schema stayed active.
    Rejected,
    /// The extension was removed.
    Removed,
    /// Whoever decides on proposals (a person, a vote, a policy) refused the delta; the registry
    /// never composed it.
    Declined,
}

impl Registry {
    /// A registry over `base` (usually [`crate::base`]), which must be a valid schema.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSchema`] when `base` is not a valid schema.
    pub fn new(base: Value) -> Result<Self> {
        let active = compose(&base, &[])?;
        crate::compile::check(&active)?;
        Ok(Self {
            hash: SchemaHash::of(&active),
            active: Arc::new(active),
            base,
            extensions: Vec::new(),
            audit: AuditLog::default(),
            compactions: Vec::new(),
            clock: SystemTime::now,
        })
    }

    /// The same registry with another clock for audit timestamps (tests use a fixed one).
    #[must_use]
    pub fn with_clock(mut self, clock: fn() -> SystemTime) -> Self {
        self.clock = clock;
        self
    }

    /// Composes `delta` onto the active extensions, checks the result and activates it.
    ///
    /// # Errors
    ///
    /// The composition or meta-validation error, naming the extension; the previous schema stays active.
    pub fn add(&mut self, delta: SchemaDelta) -> Result<Added> {
        self.add_approved(delta, Vec::new())
    }

    /// [`Registry::add`] for a delta a vote approved: the audit entry keeps the `ballots`.
    ///
    /// # Errors
    ///
    /// As [`Registry::add`].
    pub fn add_approved(&mut self, delta: SchemaDelta, ballots: Vec<Ballot>) -> Result<Added> {
        if self.compacted(&delta.extension_id) {
            let err = Error::DuplicateExtension {
                extension: delta.extension_id.clone(),
            };
            let reason = format!("{err} (inside a compaction: roll that back first)");
            self.record(
                AuditAction::Rejected,
                &delta,
                &delta.added_by,
                Some(&reason),
                ballots,
            );
            return Err(err);
        }
        if let Some(existing) = self
            .extensions
            .iter()
            .find(|e| e.extension_id == delta.extension_id)
        {
            if existing.delta == delta.delta {
                return Ok(Added::AlreadyActive);
            }
            let err = Error::DuplicateExtension {
                extension: delta.extension_id.clone(),
            };
            self.record(
                AuditAction::Rejected,
                &delta,
                &delta.added_by,
                Some(&err.to_string()),
                ballots,
            );
            return Err(err);
        }
        let mut candidate = self.extensions.clone();
        candidate.push(delta.clone());
        match self.build(&candidate, &delta.extension_id) {
            Ok(schema) => {
                self.extensions = candidate;
                self.activate(schema);
                self.record(AuditAction::Added, &delta, &delta.added_by, None, ballots);
                Ok(Added::Activated)
            }
            Err(err) => {
                self.record(
                    AuditAction::Rejected,
                    &delta,
                    &delta.added_by,
                    Some(&err.to_string()),
                    ballots,
                );
                Err(err)
            }
        }
    }

    /// Removes an extension and recomposes without it.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownExtension`], or the error recomposing (then nothing changes).
    pub fn remove(&mut self, extension_id: &str, by: &str) -> Result<SchemaDelta> {
        if self
            .compactions
            .iter()
            .any(|c| c.extension_id == extension_id)
        {
            return self.expand(extension_id, by);
        }
        let Some(index) = self
            .extensions
            .iter()
            .position(|e| e.extension_id == extension_id)
        else {
            return Err(Error::UnknownExtension {
                extension: extension_id.to_owned(),
            });
        };
        let mut candidate = self.extensions.clone();
        let removed = candidate.remove(index);
        let schema = self.build(&candidate, extension_id)?;
        self.extensions = candidate;
        self.activate(schema);
        self.record(AuditAction::Removed, &removed, by, None, Vec::new());
        Ok(removed)
    }

    /// Records that a proposed delta was declined before it reached the registry (by a person, a
    /// vote or a policy), with why and the `ballots` if a vote decided. Changes nothing else.
    pub fn decline(&mut self, delta: &SchemaDelta, reason: &str, ballots: Vec<Ballot>) {
        self.record(
            AuditAction::Declined,
            delta,
            &delta.added_by,
            Some(reason),
            ballots,
        );
    }

    /// The registry as saved: base, active extensions, audit log.
    pub fn to_saved(&self) -> SavedRegistry {
        SavedRegistry {
            base: self.base.clone(),
            extensions: self.extensions.clone(),
            audit: self.audit.clone(),
            compactions: self.compactions.clone(),
        }
    }

    /// A registry from what [`Registry::to_saved`] wrote: the extensions composed onto the base
    /// again and checked, the audit log kept.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSchema`] when the base is not a valid schema, or the composition or check
    /// error naming the first extension that breaks it.
    pub fn from_saved(saved: SavedRegistry) -> Result<Self> {
        let mut registry = Self::new(saved.base)?;
        let mut schema = registry.active().clone();
        for (i, delta) in saved.extensions.iter().enumerate() {
            if let Some(earlier) = saved.extensions[..i]
                .iter()
                .find(|e| e.extension_id == delta.extension_id)
            {
                return Err(Error::DuplicateExtension {
                    extension: earlier.extension_id.clone(),
                });
            }
            schema = registry.build(&saved.extensions[..=i], &delta.extension_id)?;
        }
        compaction::check(&registry.base, &saved.extensions, &saved.compactions)?;
        registry.extensions = saved.extensions;
        registry.activate(schema);
        registry.audit = saved.audit;
        registry.compactions = saved.compactions;
        Ok(registry)
    }

    /// Checks a delta without activating it: what [`Registry::add`] would say. Records nothing.
    ///
    /// # Errors
    ///
    /// The error `add` would return.
    pub fn try_compose(&self, delta: &SchemaDelta) -> Result<Value> {
        let mut candidate = self.extensions.clone();
        candidate.retain(|e| e.extension_id != delta.extension_id);
        candidate.push(delta.clone());
        self.build(&candidate, &delta.extension_id)
    }

    /// The active composed schema.
    pub fn active(&self) -> &Value {
        &self.active
    }

    /// The active composed schema, shared.
    pub fn active_shared(&self) -> Arc<Value> {
        Arc::clone(&self.active)
    }

    /// The content hash of the active schema (a key for memoized compilation).
    pub fn hash(&self) -> SchemaHash {
        self.hash
    }

    /// The base schema.
    pub fn base(&self) -> &Value {
        &self.base
    }

    /// The active extensions, in the order they are composed.
    pub fn extensions(&self) -> &[SchemaDelta] {
        &self.extensions
    }

    /// The audit log.
    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    fn build(&self, deltas: &[SchemaDelta], extension: &str) -> Result<Value> {
        let schema = compose(&self.base, deltas)?;
        crate::compile::check(&schema).map_err(|e| match e {
            Error::InvalidSchema {
                pointer, message, ..
            } => Error::InvalidSchema {
                extension: Some(extension.to_owned()),
                pointer,
                message,
            },
            other => other,
        })?;
        Ok(schema)
    }

    fn activate(&mut self, schema: Value) {
        self.hash = SchemaHash::of(&schema);
        self.active = Arc::new(schema);
    }

    fn record(
        &mut self,
        action: AuditAction,
        delta: &SchemaDelta,
        by: &str,
        reason: Option<&str>,
        ballots: Vec<Ballot>,
    ) {
        self.audit.entries.push(AuditEntry {
            action,
            extension_id: delta.extension_id.clone(),
            by: by.to_owned(),
            at: (self.clock)(),
            delta: delta.delta.clone(),
            reason: reason.map(ToOwned::to_owned),
            ballots,
        });
    }
}

impl AuditLog {
    /// The entries, oldest first.
    pub fn entries(&self) -> &[AuditEntry] {
        &self.entries
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends an entry.
    pub(crate) fn push(&mut self, entry: AuditEntry) {
        self.entries.push(entry);
    }
}

mod compaction;
pub use compaction::{Compaction, CompactionProposal};

#[cfg(test)]
mod tests;
