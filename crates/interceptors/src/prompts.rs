//! [`Prompts`]: what the model will be told, as interceptors build it.

use claij_backends::Message;
use serde::{Deserialize, Serialize};

/// The prompts of one request: the system prompt, earlier messages, and the user's input.
///
/// Interceptors add sections to the system prompt in `pre_prompt`; the pipeline appends the schema
/// section last (unless the backend enforces the schema natively).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Prompts {
    /// The system prompt.
    pub system: String,
    /// Earlier messages to send before the user's input (most interceptors use memory instead).
    pub history: Vec<Message>,
    /// The user's input for this turn.
    pub user: String,
}

impl Prompts {
    /// Prompts with a system prompt and the user's input.
    pub fn new(system: impl Into<String>, user: impl Into<String>) -> Self {
        Self {
            system: system.into(),
            history: Vec::new(),
            user: user.into(),
        }
    }

    /// Appends a section to the system prompt, separated by a blank line.
    pub fn system_push(&mut self, section: &str) {
        let section = section.trim();
        if section.is_empty() {
            return;
        }
        if !self.system.is_empty() {
            self.system.push_str("\n\n");
        }
        self.system.push_str(section);
    }
}
