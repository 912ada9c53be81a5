//! [`AppliedLog`]: the schema deltas that shaped a conversation's requests, each change recorded
//! once.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::delta::SchemaDelta;
use crate::registry::{AuditAction, AuditEntry, AuditLog};

/// The schema deltas a conversation's (or an FSM state's) requests were composed of, and an audit log
/// of every change: a delta is recorded when it is first applied (`added`, by the delta's
/// `added_by`, at its `added_at`) and when it changes or stops being applied (`removed`), never once
/// per request.
///
/// Feed it the deltas of each request (or turn) with [`AppliedLog::record`]: an unchanged set adds
/// nothing. A changed delta (same `extension_id`, another `delta` or `added_by`) is recorded as the
/// old one removed and the new one added.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use claij_schema::{AppliedLog, AuditAction, SchemaDelta};
/// use serde_json::json;
///
/// let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
/// let summary = SchemaDelta::new("summary-v1", "memory", json!({"properties": {"summary": {"type": "string"}}})).at(at);
/// let mut log = AppliedLog::default();
/// assert_eq!(log.record(&[summary.clone()], at).len(), 1); // first applied
/// assert_eq!(log.record(&[summary.clone()], at).len(), 0); // the same again: nothing
/// let removed = log.record(&[], at + Duration::from_secs(60)); // no longer applied
/// assert_eq!(removed[0].action, AuditAction::Removed);
/// assert_eq!((removed[0].extension_id.as_str(), removed[0].by.as_str()), ("summary-v1", "memory"));
/// assert!(log.active().is_empty());
/// assert_eq!(log.audit().len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AppliedLog {
    /// The deltas of the last request recorded, in the order they were composed.
    #[serde(default)]
    active: Vec<SchemaDelta>,
    /// Every change, oldest first.
    #[serde(default)]
    audit: AuditLog,
}

impl AppliedLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// A log rebuilt from its audit entries alone (a journal keeps only those): the active deltas
    /// are those added and not removed since, in the order they were added.
    pub fn from_entries(entries: impl IntoIterator<Item = AuditEntry>) -> Self {
        let mut log = Self::default();
        log.extend(entries);
        log
    }

    /// Applies audit entries recorded elsewhere (by [`AppliedLog::record`] of an earlier run):
    /// `added` ones join the active deltas, `removed` ones leave them.
    pub fn extend(&mut self, entries: impl IntoIterator<Item = AuditEntry>) {
        for entry in entries {
            match entry.action {
                AuditAction::Added => {
                    self.active.retain(|d| d.extension_id != entry.extension_id);
                    self.active.push(SchemaDelta {
                        extension_id: entry.extension_id.clone(),
                        added_by: entry.by.clone(),
                        added_at: entry.at,
                        delta: entry.delta.clone(),
                    });
                }
                AuditAction::Removed => {
                    self.active.retain(|d| d.extension_id != entry.extension_id);
                }
                AuditAction::Rejected | AuditAction::Declined => {}
            }
            self.audit.push(entry);
        }
    }

    /// Records that a request was composed of `deltas`: each one not applied before (or changed) is
    /// `added`, each one applied before and missing now is `removed` (at `now`, by whoever had added
    /// it). Returns the new entries, none when the set is the same.
    pub fn record(&mut self, deltas: &[SchemaDelta], now: SystemTime) -> Vec<AuditEntry> {
        let mut new = Vec::new();
        for old in &self.active {
            let kept = deltas.iter().any(|d| same(d, old));
            if !kept {
                new.push(entry(AuditAction::Removed, old, now));
            }
        }
        for delta in deltas {
            if !self.active.iter().any(|a| same(a, delta)) {
                new.push(entry(AuditAction::Added, delta, delta.added_at));
            }
        }
        for e in &new {
            self.audit.push(e.clone());
        }
        // Unchanged deltas keep the time they were first applied.
        self.active = deltas
            .iter()
            .map(|d| {
                self.active
                    .iter()
                    .find(|a| same(a, d))
                    .cloned()
                    .unwrap_or_else(|| d.clone())
            })
            .collect();
        new
    }

    /// The deltas of the last request recorded, in the order they were composed.
    pub fn active(&self) -> &[SchemaDelta] {
        &self.active
    }

    /// Every change, oldest first.
    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    /// Whether nothing was ever recorded.
    pub fn is_empty(&self) -> bool {
        self.active.is_empty() && self.audit.is_empty()
    }
}

/// The same extension with the same content and author (its time aside).
fn same(a: &SchemaDelta, b: &SchemaDelta) -> bool {
    a.extension_id == b.extension_id && a.added_by == b.added_by && a.delta == b.delta
}

fn entry(action: AuditAction, delta: &SchemaDelta, at: SystemTime) -> AuditEntry {
    AuditEntry {
        action,
        extension_id: delta.extension_id.clone(),
        by: delta.added_by.clone(),
        at,
        delta: delta.delta.clone(),
        reason: None,
        ballots: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
