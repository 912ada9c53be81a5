//! The compaction budget of a conversation: before each turn, when the schema its approved
//! extensions compose renders past the budget (o200k_base tokens), a compaction is proposed to the
//! conversation's approver ([`crate::extensions::propose_compaction`]) and the user told
//! ([`crate::Notice::Compaction`]). Feature `tokens` counts; without it a budget in tokens is
//! refused when the conversation opens (`Builder::open`) and no default budget applies.

use std::path::Path;
use std::sync::{Arc, Mutex};

use claij_interceptors::builtin::proposals::Approver;
use claij_schema::Registry;

use crate::client::Notices;
use crate::settings::CompactBudget;

/// Proposes a compaction when the budget is crossed, once per schema.
pub(crate) struct Compactor {
    budget: usize,
    approver: Arc<dyn Approver>,
    notices: Arc<Notices>,
    #[cfg(feature = "tokens")]
    counter: crate::tokens::Counter,
    /// The schema last checked: unchanged, it is not counted again.
    checked: Option<claij_schema::SchemaHash>,
}

impl Compactor {
    /// A compactor at `budget` (`None` when it is off, or the tokenizer cannot be opened: then a
    /// warning says so and nothing is proposed).
    pub(crate) fn new(
        budget: CompactBudget,
        approver: Arc<dyn Approver>,
        notices: Arc<Notices>,
    ) -> Option<Self> {
        let CompactBudget::Tokens(budget) = budget else {
            return None;
        };
        #[cfg(feature = "tokens")]
        {
            let counter = match crate::tokens::Tokenizer::O200kBase.open() {
                Ok(counter) => counter,
                Err(e) => {
                    tracing::warn!(error = %e, "no tokenizer for [proposals] compact_budget");
                    return None;
                }
            };
            Some(Self {
                budget,
                approver,
                notices,
                counter,
                checked: None,
            })
        }
        #[cfg(not(feature = "tokens"))]
        {
            let _ = (budget, approver, notices);
            None
        }
    }

    /// Proposes compacting `registry`'s extensions when its schema is new and past the budget, and
    /// not just declined; a failure is a warning (the turn goes on with the schema as it is).
    pub(crate) async fn check(&mut self, registry: &Mutex<Registry>, file: Option<&Path>) {
        let schema = {
            let registry = crate::approve::lock(registry);
            if self.checked == Some(registry.hash()) || just_declined(&registry) {
                return;
            }
            self.checked = Some(registry.hash());
            registry.active().clone()
        };
        #[cfg(feature = "tokens")]
        {
            let tokens = match self.counter.count(&claij_schema::to_compact(&schema)) {
                Ok(tokens) => tokens,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot count the schema's tokens");
                    return;
                }
            };
            if tokens <= self.budget {
                return;
            }
            tracing::info!(
                tokens,
                budget = self.budget,
                "schema past the compaction budget"
            );
            let counter = &self.counter;
            let count = |text: &str| counter.count(text).map_err(|e| e.to_string());
            let count = crate::extensions::Count {
                tokenizer: counter.name(),
                count: &count,
            };
            let file = file.unwrap_or(Path::new("the conversation"));
            let proposed = crate::extensions::propose_compaction(
                file,
                registry,
                self.approver.as_ref(),
                &count,
                false,
            )
            .await;
            match proposed {
                Ok(Some(report)) => {
                    self.checked = Some(crate::approve::lock(registry).hash());
                    let message = format!(
                        "the schema's {} tokens are past [proposals] compact_budget = {}: {report}",
                        report.before, self.budget
                    );
                    self.notices.tell(&crate::Notice::Compaction { message });
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "the compaction failed"),
            }
        }
        #[cfg(not(feature = "tokens"))]
        let _ = (schema, file, &self.approver, &self.notices, self.budget);
    }
}

/// Whether the last thing the audit log says is a declined compaction: nothing changed since, so
/// the approver is not asked again.
fn just_declined(registry: &Registry) -> bool {
    registry.audit().entries().last().is_some_and(|e| {
        e.action == claij_schema::AuditAction::Declined && e.by == crate::extensions::COMPACTED_BY
    })
}

#[cfg(all(test, feature = "tokens"))]
mod tests;
