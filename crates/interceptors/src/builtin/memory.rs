//! The `memory` interceptor: every reply carries a `summary`, the next prompts recall what was noted.
//!
//! [`Memory`] asks each reply for a short `summary` of the turn, keeps it in [`Context::memory`]
//! through a swappable [`MemoryStrategy`], and shows what is remembered to the model at the start of
//! every later turn. It is the design's proof that the architecture works: a fact the user gives on
//! turn 1 must still be known on turn 3.
//!
//! # Schema delta
//!
//! Every turn, extension `summary-v1` ([`SUMMARY_EXTENSION`], [`summary_delta`]). The description
//! says what the field holds rather than words to copy; no `examples` (a small model copies them):
//!
//! ```
//! # use claij_interceptors::builtin::memory::summary_delta;
//! # use serde_json::json;
//! assert_eq!(summary_delta(), json!({
//!     "properties": {"summary": {
//!         "type": "string",
//!         "description": "the key facts of this exchange to remember later (what the user said or \
//!             asked for, what was decided), in one or two sentences"
//!     }},
//!     "required": ["summary"]
//! }));
//! ```
//!
//! With the [`Hierarchical`] strategy, on its refresh turns only, also extension
//! `long-term-insights-v1` ([`INSIGHTS_EXTENSION`], [`insights_delta`]):
//!
//! ```
//! # use claij_interceptors::builtin::memory::insights_delta;
//! # use serde_json::json;
//! assert_eq!(insights_delta(), json!({
//!     "properties": {"long_term_insights": {
//!         "type": "string",
//!         "description": "the long-term memory, rewritten now: the durable facts and patterns of the \
//!             whole conversation so far (the user's preferences, goals, recurring topics), merging the \
//!             previous long-term insights with the turn summaries; it replaces the previous insights"
//!     }},
//!     "required": ["long_term_insights"]
//! }));
//! ```
//!
//! `long_term_insights` is required on refresh turns and absent from the schema otherwise, rather than
//! optional on every turn: an optional field is either skipped or rewritten every turn (paying its
//! tokens each time), while a required one on a known cadence is refreshed reliably. The schema then
//! alternates between two shapes; both are compiled once, and the registry's audit log records the
//! extension being added and removed at each refresh.
//!
//! # Prompt
//!
//! Nothing while memory is empty. Otherwise a system-prompt section ([`recall`]), insights first when
//! there are any:
//!
//! ```
//! # use claij_interceptors::{MemoryState, builtin::memory::recall};
//! let memory = MemoryState {
//!     summaries: vec!["The user's favourite colour is blue.".into(), "The user asked about the weather.".into()],
//!     insights: Some("The user likes short answers.".into()),
//! };
//! assert_eq!(recall(&memory).as_deref(), Some(
//! "Previous context: what you noted in earlier turns of this conversation. Rely on it when the user refers to something said before.
//!
//! Long-term insights:
//! The user likes short answers.
//!
//! Turn summaries, oldest first:
//! - The user's favourite colour is blue.
//! - The user asked about the weather."));
//! ```
//!
//! # Strategies
//!
//! A [`MemoryStrategy`] decides what is kept after each turn: [`Bounded`] (the default) concatenates
//! summaries within a character and a count budget, dropping the oldest; [`Window`] keeps the last N
//! summaries; [`Hierarchical`] keeps the summaries since its last refresh plus `long_term_insights`
//! rewritten every N turns. Swap the strategy, or the whole interceptor (a vector store would be
//! another interceptor, since it does IO): nothing else in the chain changes.
//!
//! ```
//! use std::sync::Arc;
//! use claij_test_support::Scripted;
//! use claij_interceptors::builtin::memory::{Memory, Window};
//! use claij_interceptors::{Chain, Config, Context, Pipeline};
//!
//! let backend = Arc::new(Scripted::replies([
//!     r#"{"answer": "Noted.", "state": "chat", "summary": "The user's favourite colour is blue."}"#,
//!     r#"{"answer": "Blue.", "state": "chat", "summary": "The user asked for their favourite colour."}"#,
//! ]));
//! let chain = Chain::new().with(Memory::new(Window::new(5)));
//! let pipeline = Pipeline::new(backend.clone(), Config::new("m"), chain);
//! let mut ctx = Context::default();
//! futures_executor::block_on(pipeline.ask(&mut ctx, "My favourite colour is blue"))?;
//! futures_executor::block_on(pipeline.ask(&mut ctx, "What is my favourite colour?"))?;
//! let second = &backend.requests()[1];
//! assert!(second.system.as_deref().unwrap_or_default().contains("- The user's favourite colour is blue."));
//! assert_eq!(ctx.memory.summaries.len(), 2);
//! # Ok::<(), claij_interceptors::Error>(())
//! ```

use std::fmt;

use serde_json::{Value, json};
use tracing::debug;

use crate::context::{self, Carried, Context};
use crate::interceptor::{BoxError, Interceptor};
use crate::prompts::Prompts;
use crate::schema::Schema;

/// The extension id of the `summary` field.
pub const SUMMARY_EXTENSION: &str = "summary-v1";
/// The extension id of the `long_term_insights` field (hierarchical strategy, refresh turns).
pub const INSIGHTS_EXTENSION: &str = "long-term-insights-v1";
/// The version of what the interceptor carries to the next turn ([`Interceptor::carry`]): the
/// [`context::MemoryState`] as JSON.
pub const STATE_VERSION: u32 = 1;

/// The memory interceptor: asks for a `summary`, stores it through its strategy, recalls it in the
/// system prompt. Its name is `memory`.
///
/// What it remembers lives in the context's [`crate::MemoryState`] (`ctx.memory`), which this type is not.
#[derive(Debug)]
pub struct Memory {
    strategy: Box<dyn MemoryStrategy>,
}

/// Decides what is remembered: how a turn's summary (and insights) join [`context::MemoryState`], and what
/// is dropped to stay within bounds.
///
/// Implement it for another retention policy; the interceptor handles the schema and the prompt.
pub trait MemoryStrategy: Send + Sync + fmt::Debug {
    /// Adds one turn's notes to `memory`, dropping whatever the strategy no longer keeps.
    fn store(&self, memory: &mut context::MemoryState, turn: &Turn<'_>);

    /// Whether the reply of `turn` (0 for the first) must carry `long_term_insights`.
    fn asks_insights(&self, turn: u64) -> bool {
        let _ = turn;
        false
    }
}

/// What one reply asked to remember.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn<'a> {
    /// The turn (0 for the first), as in [`Context::turn`].
    pub number: u64,
    /// The reply's `summary`, trimmed (never empty).
    pub summary: &'a str,
    /// The reply's `long_term_insights`, trimmed, when it has non-empty ones.
    pub insights: Option<&'a str>,
}

/// Bounded concatenation: every summary is kept, oldest first, until the total passes `max_chars`
/// characters or the count passes `max_summaries`; then the oldest go.
///
/// A single summary longer than `max_summary_chars` (or `max_chars`) is cut to fit, ending with `…`,
/// so one rambling reply cannot push every earlier summary out of the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounded {
    /// The most characters (Unicode scalar values) kept over all summaries.
    pub max_chars: usize,
    /// The most summaries kept.
    pub max_summaries: usize,
    /// The most characters kept of one summary.
    pub max_summary_chars: usize,
}

/// Rolling window: the last `size` summaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// How many summaries are kept (0 keeps none).
    pub size: usize,
}

/// Hierarchical summaries: `long_term_insights` rewritten every `every` turns, plus the summaries of
/// the turns since the last rewrite.
///
/// Turns `every - 1`, `2 * every - 1`, … (counting from 0) are refresh turns: their schema requires
/// `long_term_insights`, and their reply replaces [`context::MemoryState::insights`] and clears the older
/// summaries (the insights now cover them); that turn's own summary is kept. Between refreshes at most
/// `every` summaries are kept, the oldest dropped first (this matters only when a refresh reply had
/// empty insights).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hierarchical {
    /// Turns between rewrites of the insights (at least 1).
    pub every: u64,
}

impl Memory {
    /// A memory interceptor that remembers through `strategy`.
    pub fn new(strategy: impl MemoryStrategy + 'static) -> Self {
        Self {
            strategy: Box::new(strategy),
        }
    }

    /// The strategy.
    pub fn strategy(&self) -> &dyn MemoryStrategy {
        self.strategy.as_ref()
    }
}

impl Default for Memory {
    /// Bounded concatenation with [`Bounded::default`].
    fn default() -> Self {
        Self::new(Bounded::default())
    }
}

impl Interceptor for Memory {
    fn name(&self) -> &str {
        "memory"
    }

    fn pre_schema(&self, schema: &mut Schema, ctx: &Context) -> Result<(), BoxError> {
        schema.extend(SUMMARY_EXTENSION, summary_delta());
        if self.strategy.asks_insights(ctx.turn) {
            schema.extend(INSIGHTS_EXTENSION, insights_delta());
        }
        Ok(())
    }

    fn pre_prompt(&self, prompts: &mut Prompts, ctx: &Context) -> Result<(), BoxError> {
        if let Some(section) = recall(&ctx.memory) {
            prompts.system_push(&section);
        }
        Ok(())
    }

    fn post_response<'a>(
        &'a self,
        response: &'a Value,
        ctx: &'a mut Context,
    ) -> claij_backends::BoxFuture<'a, Result<(), BoxError>> {
        remember(self.strategy.as_ref(), response, ctx);
        Box::pin(std::future::ready(Ok(())))
    }

    fn carry(&self, ctx: &Context) -> Result<Option<Carried>, BoxError> {
        if ctx.memory.is_empty() {
            return Ok(None);
        }
        Ok(Some(Carried::new(STATE_VERSION, &ctx.memory)?))
    }

    fn restore(&self, carried: &Carried, ctx: &mut Context) -> Result<(), BoxError> {
        ctx.memory = carried.read(STATE_VERSION)?;
        Ok(())
    }
}

/// Stores the reply's `summary` (and `long_term_insights`) through `strategy`; a reply without a
/// non-empty summary (its delta was skipped, or it is blank) changes nothing.
fn remember(strategy: &dyn MemoryStrategy, response: &Value, ctx: &mut Context) {
    let text = |key: &str| {
        response
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let Some(summary) = text("summary") else {
        debug!(turn = ctx.turn, "reply has no summary; nothing remembered");
        return;
    };
    let turn = Turn {
        number: ctx.turn,
        summary,
        insights: text("long_term_insights"),
    };
    strategy.store(&mut ctx.memory, &turn);
}

/// The delta that requires a `summary` ([`SUMMARY_EXTENSION`]).
pub fn summary_delta() -> Value {
    json!({
        "properties": {"summary": {
            "type": "string",
            "description": "the key facts of this exchange to remember later (what the user said or \
                asked for, what was decided), in one or two sentences"
        }},
        "required": ["summary"]
    })
}

/// The delta that requires `long_term_insights` ([`INSIGHTS_EXTENSION`]).
pub fn insights_delta() -> Value {
    json!({
        "properties": {"long_term_insights": {
            "type": "string",
            "description": "the long-term memory, rewritten now: the durable facts and patterns of the \
                whole conversation so far (the user's preferences, goals, recurring topics), merging the \
                previous long-term insights with the turn summaries; it replaces the previous insights"
        }},
        "required": ["long_term_insights"]
    })
}

/// The system-prompt section recalling `memory`, or `None` when nothing is remembered.
pub fn recall(memory: &context::MemoryState) -> Option<String> {
    let insights = memory
        .insights
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    if insights.is_none() && memory.summaries.is_empty() {
        return None;
    }
    let mut out = String::from(
        "Previous context: what you noted in earlier turns of this conversation. Rely on it when the \
         user refers to something said before.",
    );
    if let Some(insights) = insights {
        out.push_str("\n\nLong-term insights:\n");
        out.push_str(insights);
    }
    if !memory.summaries.is_empty() {
        out.push_str("\n\nTurn summaries, oldest first:");
        for summary in &memory.summaries {
            out.push_str("\n- ");
            out.push_str(summary);
        }
    }
    Some(out)
}

impl Bounded {
    /// At most `max_chars` characters over at most `max_summaries` summaries (one summary may take
    /// the whole budget; see [`Bounded::with_max_summary_chars`]).
    pub fn new(max_chars: usize, max_summaries: usize) -> Self {
        Self {
            max_chars,
            max_summaries,
            max_summary_chars: max_chars,
        }
    }

    /// One summary cut to at most `max` characters.
    #[must_use]
    pub fn with_max_summary_chars(mut self, max: usize) -> Self {
        self.max_summary_chars = max;
        self
    }
}

impl Default for Bounded {
    /// 2,000 characters (about 500 tokens) over at most 20 summaries, one summary at most 400
    /// characters (so at least five summaries fit).
    fn default() -> Self {
        Self::new(2_000, 20).with_max_summary_chars(400)
    }
}

impl MemoryStrategy for Bounded {
    fn store(&self, memory: &mut context::MemoryState, turn: &Turn<'_>) {
        let kept = truncate_chars(turn.summary, self.max_chars.min(self.max_summary_chars));
        if !kept.is_empty() {
            memory.summaries.push(kept);
        }
        let mut total: usize = memory.summaries.iter().map(|s| s.chars().count()).sum();
        let mut drop = 0;
        while drop < memory.summaries.len()
            && (total > self.max_chars || memory.summaries.len() - drop > self.max_summaries)
        {
            total -= memory.summaries[drop].chars().count();
            drop += 1;
        }
        memory.summaries.drain(..drop);
    }
}

impl Window {
    /// The last `size` summaries.
    pub fn new(size: usize) -> Self {
        Self { size }
    }
}

impl MemoryStrategy for Window {
    fn store(&self, memory: &mut context::MemoryState, turn: &Turn<'_>) {
        memory.summaries.push(turn.summary.to_owned());
        keep_last(&mut memory.summaries, self.size);
    }
}

impl Hierarchical {
    /// Insights rewritten every `every` turns (0 counts as 1).
    pub fn new(every: u64) -> Self {
        Self {
            every: every.max(1),
        }
    }

    /// Whether `turn` (0 for the first) is a refresh turn.
    pub fn is_refresh(&self, turn: u64) -> bool {
        turn.saturating_add(1).is_multiple_of(self.every.max(1))
    }
}

impl MemoryStrategy for Hierarchical {
    fn store(&self, memory: &mut context::MemoryState, turn: &Turn<'_>) {
        if let Some(insights) = turn.insights.filter(|_| self.is_refresh(turn.number)) {
            memory.insights = Some(insights.to_owned());
            memory.summaries.clear();
        }
        memory.summaries.push(turn.summary.to_owned());
        keep_last(
            &mut memory.summaries,
            usize::try_from(self.every).unwrap_or(usize::MAX),
        );
    }

    fn asks_insights(&self, turn: u64) -> bool {
        self.is_refresh(turn)
    }
}

fn keep_last(summaries: &mut Vec<String>, n: usize) {
    let excess = summaries.len().saturating_sub(n);
    summaries.drain(..excess);
}

/// `text` cut to at most `max` characters, ending with `…` when cut.
fn truncate_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    if max > 0 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests;
