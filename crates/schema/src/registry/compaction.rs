//! Compaction in the registry: the active extensions replaced by one leaner delta
//! ([`crate::compact::compact_deltas`]) that accepts exactly the same replies, audited like any
//! delta, and removed like one: its rollback brings back the deltas it replaced, exactly.
//!
//! The registry keeps each [`Compaction`] with the deltas it replaced, byte for byte. Deltas added
//! after a compaction compose after it as after any delta. A saved compaction is checked when the
//! registry is restored: its delta must be what compacting the deltas it names gives again, so a
//! torn or hand-edited file is an [`Error::Compaction`], never a schema nobody approved.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AuditAction, Ballot, Registry};
use crate::compact::{Rewrite, compact_deltas};
use crate::delta::SchemaDelta;
use crate::error::{Error, Result};

/// A compaction in force: its extension stands for the deltas it replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compaction {
    /// The compaction's extension id (`compaction-1`).
    pub extension_id: String,
    /// The deltas it replaced, as they were, in order: active again when it is rolled back.
    pub replaced: Vec<SchemaDelta>,
    /// What it rewrote.
    #[serde(default)]
    pub rewrites: Vec<Rewrite>,
}

/// A compaction worked out and not yet activated: what an approver decides on.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionProposal {
    /// The compacted delta, under the compaction's id.
    pub delta: SchemaDelta,
    /// The deltas it replaces (every active extension), in order.
    pub replaced: Vec<SchemaDelta>,
    /// What it rewrites.
    pub rewrites: Vec<Rewrite>,
    /// The active schema now.
    pub before: Value,
    /// The active schema with the compaction.
    pub after: Value,
}

impl Registry {
    /// The compaction of every active extension into one delta under `extension_id`, proposed by
    /// `by`; `None` when there is nothing to rewrite. Changes nothing.
    ///
    /// ```
    /// use claij_schema::{Registry, SchemaDelta};
    /// use serde_json::json;
    ///
    /// let mut registry = Registry::new(claij_schema::base())?;
    /// for (id, description) in [("notes-a", "Notes"), ("notes-b", "Follow-ups for later")] {
    ///     registry.add(SchemaDelta::new(id, "model", json!({
    ///         "properties": {"notes": {"type": "string", "description": description}},
    ///     })))?;
    /// }
    /// let proposal = registry.propose_compaction("compaction-1", "claij")?.expect("a rewrite");
    /// registry.compact(proposal, "two notes fields merged", Vec::new())?;
    /// assert_eq!(registry.active()["properties"]["notes"],
    ///     json!({"type": "string", "description": "Follow-ups for later"}));
    ///
    /// // Rolled back: the two deltas are active again, exactly as they were.
    /// registry.remove("compaction-1", "claij schema rollback")?;
    /// assert_eq!(registry.extensions().len(), 2);
    /// # Ok::<(), claij_schema::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateExtension`] when `extension_id` is taken; the composition or check error
    /// of the compacted delta.
    pub fn propose_compaction(
        &self,
        extension_id: &str,
        by: &str,
    ) -> Result<Option<CompactionProposal>> {
        if self
            .extensions
            .iter()
            .any(|e| e.extension_id == extension_id)
            || self.compacted(extension_id)
            || self
                .compactions
                .iter()
                .any(|c| c.extension_id == extension_id)
        {
            return Err(Error::DuplicateExtension {
                extension: extension_id.to_owned(),
            });
        }
        if self.extensions.is_empty() {
            return Ok(None);
        }
        let (compacted, rewrites) = compact_deltas(&self.base, &self.extensions)?;
        if rewrites.is_empty() {
            return Ok(None);
        }
        let delta = SchemaDelta::new(extension_id, by, compacted).at((self.clock)());
        let after = self.build(std::slice::from_ref(&delta), extension_id)?;
        Ok(Some(CompactionProposal {
            delta,
            replaced: self.extensions.clone(),
            rewrites,
            before: self.active().clone(),
            after,
        }))
    }

    /// Activates `proposal` (approved: `reason` says why, with the `ballots` of a vote if one
    /// decided): the deltas it replaces leave the active list, kept in the compaction, and the
    /// audit log records it as added by the proposer.
    ///
    /// # Errors
    ///
    /// [`Error::Compaction`] when the active extensions changed since it was proposed; the
    /// composition or check error (then nothing changes).
    pub fn compact(
        &mut self,
        proposal: CompactionProposal,
        reason: &str,
        ballots: Vec<Ballot>,
    ) -> Result<()> {
        let id = proposal.delta.extension_id.clone();
        if self.extensions != proposal.replaced {
            return Err(Error::Compaction {
                extension: id,
                reason: "the active extensions changed since it was proposed".into(),
            });
        }
        let schema = self.build(std::slice::from_ref(&proposal.delta), &id)?;
        self.extensions = vec![proposal.delta.clone()];
        self.activate(schema);
        self.compactions.push(Compaction {
            extension_id: id,
            replaced: proposal.replaced,
            rewrites: proposal.rewrites,
        });
        let by = proposal.delta.added_by.clone();
        self.record(
            AuditAction::Added,
            &proposal.delta,
            &by,
            Some(reason),
            ballots,
        );
        Ok(())
    }

    /// The compactions in force, oldest first.
    pub fn compactions(&self) -> &[Compaction] {
        &self.compactions
    }

    /// Whether `extension_id` is one a compaction in force replaced.
    pub(super) fn compacted(&self, extension_id: &str) -> bool {
        self.compactions
            .iter()
            .any(|c| c.replaced.iter().any(|d| d.extension_id == extension_id))
    }

    /// Rolls back the compaction `extension_id`: the deltas it replaced in its place, composed and
    /// checked with the rest; the removal recorded with the ids brought back.
    pub(super) fn expand(&mut self, extension_id: &str, by: &str) -> Result<SchemaDelta> {
        let unknown = || Error::UnknownExtension {
            extension: extension_id.to_owned(),
        };
        let index = self
            .extensions
            .iter()
            .position(|e| e.extension_id == extension_id)
            .ok_or_else(unknown)?;
        let at = self
            .compactions
            .iter()
            .position(|c| c.extension_id == extension_id)
            .ok_or_else(unknown)?;
        let mut candidate = self.extensions.clone();
        let removed = candidate.remove(index);
        let replaced = self.compactions[at].replaced.clone();
        let ids: Vec<&str> = replaced.iter().map(|d| d.extension_id.as_str()).collect();
        let reason = format!(
            "the compaction rolled back: {} active again",
            ids.join(", ")
        );
        candidate.splice(index..index, replaced.iter().cloned());
        let schema = self.build(&candidate, extension_id)?;
        self.extensions = candidate;
        self.activate(schema);
        self.compactions.remove(at);
        self.record(
            AuditAction::Removed,
            &removed,
            by,
            Some(&reason),
            Vec::new(),
        );
        Ok(removed)
    }
}

/// Checks saved compactions against the `active` extensions over `base`: each one's extension
/// active or inside a later compaction, its delta the compaction of the deltas it replaced, and
/// no id in two places.
pub(super) fn check(
    base: &Value,
    active: &[SchemaDelta],
    compactions: &[Compaction],
) -> Result<()> {
    let mut seen: Vec<&str> = active.iter().map(|d| d.extension_id.as_str()).collect();
    for compaction in compactions {
        let id = compaction.extension_id.as_str();
        let fail = |reason: String| Error::Compaction {
            extension: id.to_owned(),
            reason,
        };
        for replaced in &compaction.replaced {
            if seen.contains(&replaced.extension_id.as_str()) {
                return Err(fail(format!(
                    "`{}` is both active or replaced elsewhere and replaced by it",
                    replaced.extension_id
                )));
            }
            seen.push(&replaced.extension_id);
        }
        let own = active
            .iter()
            .chain(compactions.iter().flat_map(|c| c.replaced.iter()))
            .find(|d| d.extension_id == id)
            .ok_or_else(|| {
                fail("its extension is neither active nor inside a later compaction".into())
            })?;
        let (expected, _) = compact_deltas(base, &compaction.replaced)
            .map_err(|e| fail(format!("the deltas it replaced do not compose: {e}")))?;
        if own.delta != expected {
            return Err(fail(
                "its delta is not the compaction of the deltas it replaced (the file was edited \
                 or torn, or the base schema changed)"
                    .into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
