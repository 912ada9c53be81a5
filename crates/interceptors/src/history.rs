//! [`History`]: the messages of a conversation a pipeline keeps in its [`Context`](crate::Context),
//! and the [`HistoryPolicy`] that windows them.

use claij_backends::{Message, Role};
use serde::{Deserialize, Serialize};

/// The conversation so far, oldest first: each successful turn's user message and the assistant's
/// valid answer (as JSON text), and the tool calls and results of an agent loop in between.
///
/// The pipeline sends [`History::window`] between the system prompt and the new user turn, and keeps
/// only that window after each turn, so a stored history (a session file) stays bounded.
///
/// ```
/// use claij_backends::Message;
/// use claij_interceptors::{History, HistoryPolicy};
///
/// let mut history = History::default();
/// for turn in 0..5 {
///     history.push(Message::user(format!("question {turn}")));
///     history.push(Message::assistant(format!("{{\"answer\": \"{turn}\"}}")));
/// }
/// let policy = HistoryPolicy { max_messages: 4, ..HistoryPolicy::default() };
/// let window = history.window(&policy);
/// assert_eq!(window.len(), 4);
/// assert_eq!(window[0].content, "question 3"); // a window starts at a user turn
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct History {
    /// The messages, oldest first.
    #[serde(default)]
    pub messages: Vec<Message>,
}

/// Which part of a [`History`] is sent and kept: the latest messages within both bounds, starting
/// at a user turn (so a window never opens on an answer or on a tool result without its call; the
/// results of an agent step on the `oneOf` route, sent as a user turn, are kept as a tool message).
/// Tokens are estimated at about four bytes a token ([`estimate_tokens`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HistoryPolicy {
    /// The most messages sent (0: no history).
    pub max_messages: usize,
    /// The most estimated tokens the messages sent take (0: no history).
    pub max_tokens: usize,
}

/// The default [`HistoryPolicy::max_messages`]: ten exchanges.
pub const DEFAULT_HISTORY_MESSAGES: usize = 20;

/// The default [`HistoryPolicy::max_tokens`].
pub const DEFAULT_HISTORY_TOKENS: usize = 4000;

impl Default for HistoryPolicy {
    fn default() -> Self {
        Self {
            max_messages: DEFAULT_HISTORY_MESSAGES,
            max_tokens: DEFAULT_HISTORY_TOKENS,
        }
    }
}

impl HistoryPolicy {
    /// No history: nothing is sent or kept (a caller that replays its own, such as the FSM's trail).
    pub const NONE: Self = Self {
        max_messages: 0,
        max_tokens: 0,
    };

    /// Whether this policy keeps nothing.
    pub fn is_none(&self) -> bool {
        self.max_messages == 0 || self.max_tokens == 0
    }
}

impl History {
    /// Whether there is no message.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The number of messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Appends a message.
    pub fn push(&mut self, message: Message) {
        self.messages.push(message);
    }

    /// Forgets every message.
    pub fn clear(&mut self) {
        self.messages.clear();
    }

    /// The latest messages `policy` lets through, oldest first: at most `max_messages` of them, at
    /// most `max_tokens` estimated tokens in all, the first one a user turn. Empty when even the
    /// latest exchange is over a bound.
    pub fn window(&self, policy: &HistoryPolicy) -> &[Message] {
        &self.messages[self.window_start(policy)..]
    }

    /// Drops every message [`History::window`] would leave out.
    pub fn trim(&mut self, policy: &HistoryPolicy) {
        let start = self.window_start(policy);
        self.messages.drain(..start);
    }

    /// The estimated tokens of every message.
    pub fn estimated_tokens(&self) -> usize {
        self.messages.iter().map(estimate_tokens).sum()
    }

    fn window_start(&self, policy: &HistoryPolicy) -> usize {
        let end = self.messages.len();
        if policy.is_none() {
            return end;
        }
        let mut start = end;
        let mut tokens = 0usize;
        while start > 0 && end - start < policy.max_messages {
            let cost = estimate_tokens(&self.messages[start - 1]);
            if tokens.saturating_add(cost) > policy.max_tokens {
                break;
            }
            tokens += cost;
            start -= 1;
        }
        // Open on a user turn: an answer or a tool result without what led to it would confuse the
        // model (and some providers refuse a conversation that starts with the assistant).
        while start < end && self.messages[start].role != Role::User {
            start += 1;
        }
        start
    }
}

/// About how many tokens a message takes: a token per four bytes of its text and of its tool calls'
/// names and arguments, rounded up, plus four for the message's framing. A bound for windows, not a
/// count: tokenizers differ.
pub fn estimate_tokens(message: &Message) -> usize {
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|call| call.name.len() + call.arguments.to_string().len())
        .sum();
    (message.content.len() + calls).div_ceil(4) + 4
}

#[cfg(test)]
mod tests;
