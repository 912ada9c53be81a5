//! Which schema deltas each `llm` state's requests were composed of, recorded per run (each change
//! once, [`AppliedLog`]) and journaled after the transition of the step that changed them.

use std::sync::PoisonError;
use std::time::SystemTime;

use claij_schema::AppliedLog;

use super::{Run, Runner};
use crate::error::Error;
use crate::journal::Journal;

impl Runner {
    /// Records in `run` the deltas the requests of `state`'s step were composed of, when its
    /// pipeline made any, and journals the change to `journal`, if any.
    pub(super) fn note_applied(
        &self,
        run: &mut Run,
        state: &str,
        journal: Option<&mut Journal>,
    ) -> Result<(), Error> {
        let key = match run.remedied_system(state) {
            Some(system) => format!("{state}\n{system}"),
            None => state.to_owned(),
        };
        let pipeline = self
            .pipelines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .cloned();
        let Some(pipeline) = pipeline else {
            return Ok(());
        };
        let deltas = pipeline.applied();
        let log = run.applied.entry(state.to_owned()).or_default();
        let entries = log.record(&deltas, SystemTime::now());
        match journal {
            Some(journal) => journal.record_applied(state, &entries),
            None => Ok(()),
        }
    }
}

impl Run {
    /// The schema deltas each `llm` state's requests were composed of in this run, with the audit
    /// log of every change (who added each delta and when), by state; a resumed run has what its
    /// journal recorded.
    pub fn applied(&self) -> &std::collections::BTreeMap<String, AppliedLog> {
        &self.applied
    }
}
