//! [`Schema`]: the schema deltas interceptors contribute to one request.

use std::sync::Arc;
use std::time::SystemTime;

use claij_schema::SchemaDelta;
use serde_json::Value;

/// The schema deltas of one request, collected from every interceptor's `pre_schema` hook in order.
///
/// The pipeline composes them onto the base schema through a [`claij_schema::Registry`], which checks
/// them and keeps the audit log.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    base: Arc<Value>,
    deltas: Vec<SchemaDelta>,
    current: String,
}

impl Schema {
    pub(crate) fn new(base: Arc<Value>) -> Self {
        Self {
            base,
            deltas: Vec::new(),
            current: String::new(),
        }
    }

    pub(crate) fn set_current(&mut self, interceptor: &str) {
        self.current.clear();
        self.current.push_str(interceptor);
    }

    /// Adds a delta as the interceptor whose hook is running: `extension_id` names it in the audit log.
    pub fn extend(&mut self, extension_id: impl Into<String>, delta: Value) {
        self.deltas.push(SchemaDelta {
            extension_id: extension_id.into(),
            added_by: self.current.clone(),
            added_at: SystemTime::UNIX_EPOCH,
            delta,
        });
    }

    /// Adds a delta as given (its `added_by` and `added_at` are kept).
    pub fn push(&mut self, delta: SchemaDelta) {
        self.deltas.push(delta);
    }

    /// The base schema the deltas extend.
    pub fn base(&self) -> &Value {
        &self.base
    }

    /// The deltas so far, in order.
    pub fn deltas(&self) -> &[SchemaDelta] {
        &self.deltas
    }

    pub(crate) fn truncate(&mut self, len: usize) {
        self.deltas.truncate(len);
    }

    pub(crate) fn into_deltas(self) -> Vec<SchemaDelta> {
        self.deltas
    }
}
