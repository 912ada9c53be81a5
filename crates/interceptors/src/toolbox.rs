//! [`Toolbox`]: tools an agent run ([`Pipeline::run_agent`](crate::Pipeline::run_agent)) can call,
//! offered by an interceptor ([`Interceptor::toolbox`](crate::Interceptor::toolbox)), and the
//! [`Budget`] that bounds the run.

use std::fmt;
use std::future::Future;

use claij_backends::{BoxFuture, ToolCall, ToolSpec};
use futures_util::stream::{self, StreamExt as _};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::ToolOrigin;

/// Tools the model can call within one turn, natively (each tool a [`ToolSpec`] sent in the
/// request) or through a field of its reply (the `oneOf` route: the interceptor's schema delta).
///
/// The agent run checks a call's arguments against the tool's `parameters` before calling
/// [`Toolbox::call`] (native arguments that were not JSON repaired first, as a reply is), and sends
/// the violations back to the model as the call's result.
pub trait Toolbox: Send + Sync {
    /// What runs `tool`'s calls, for [`ToolResult::origin`](crate::ToolResult::origin).
    fn origin(&self, tool: &str) -> ToolOrigin;

    /// The tools, each with the JSON Schema of its arguments; names are what providers accept for
    /// functions (1 to 64 ASCII letters, digits, `_` and `-`).
    fn specs(&self) -> Vec<ToolSpec>;

    /// The calls a valid reply makes through this toolbox's field (the `oneOf` route), in order;
    /// empty when it makes none. Ids are made up (`<field>-<index>`): the route has none.
    fn calls_in(&self, value: &Value) -> Vec<ToolCall>;

    /// Runs one call whose arguments are valid against its tool's `parameters`, under the
    /// toolbox's timeout if it has one: the output, or why it failed (an unknown tool, a timeout,
    /// the tool's own error) as text for the model.
    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> BoxFuture<'a, Result<Value, String>>;

    /// How many of one step's calls run at once (0 counts as 1), as the interceptor runs a reply's
    /// calls after the turn; [`DEFAULT_CONCURRENCY`] unless the toolbox says.
    fn concurrency(&self) -> usize {
        DEFAULT_CONCURRENCY
    }

    /// The most calls of one step this toolbox runs; later ones are not run, their result says
    /// so. [`DEFAULT_MAX_CALLS`] unless the toolbox says (the interceptors: their `max_calls`).
    fn max_calls(&self) -> usize {
        DEFAULT_MAX_CALLS
    }
}

/// The default [`Toolbox::concurrency`].
pub const DEFAULT_CONCURRENCY: usize = 4;

/// The default [`Toolbox::max_calls`].
pub const DEFAULT_MAX_CALLS: usize = 8;

/// The outputs of `calls`, in their order, at most `concurrency` of them running at once (0 counts
/// as 1): how the `tools` interceptor runs a reply's calls, and an agent run a toolbox's.
///
/// ```
/// # futures_executor::block_on(async {
/// let outputs = claij_interceptors::run_bounded((1..=3).map(|n| async move { n * 2 }), 2).await;
/// assert_eq!(outputs, [2, 4, 6]);
/// # });
/// ```
pub async fn run_bounded<F: Future>(
    calls: impl IntoIterator<Item = F>,
    concurrency: usize,
) -> Vec<F::Output> {
    // Futures do nothing until polled: `buffered` starts at most `concurrency` of them (and their
    // timeouts) at a time, and yields in their order.
    stream::iter(calls)
        .buffered(concurrency.max(1))
        .collect()
        .await
}

/// Put in the context by an agent run that sends the tools natively: an interceptor offering a
/// [`Toolbox`] leaves its calls field out of the schema and its tools out of the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NativeTools;

/// The bounds of an agent run: steps (model calls that end in an answer or in tool calls), tokens
/// and cost, checked between steps (a step under way finishes, and an answer is returned even when
/// its step went over); and how much of each tool result the model sees.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Budget {
    /// The most steps (default 8): a model still calling tools at the last one exceeds the budget.
    pub max_steps: usize,
    /// The most tokens, input and output, over every attempt of the run.
    pub max_tokens: Option<u64>,
    /// The most US dollars over every attempt of the run; a backend that reports no cost counts 0.
    pub max_cost_usd: Option<f64>,
    /// Characters of tool output the model sees: of each result where tools go natively, shared by
    /// a step's results (arguments and outputs) on the `oneOf` route (default
    /// [`DEFAULT_RESULT_CHARS`]). A longer result is cut, and the model is told where and why.
    pub result_chars: usize,
}

/// The default [`Budget::result_chars`].
pub const DEFAULT_RESULT_CHARS: usize = 4000;

/// The default [`Budget::max_steps`].
pub const DEFAULT_MAX_STEPS: usize = 8;

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_steps: DEFAULT_MAX_STEPS,
            max_tokens: None,
            max_cost_usd: None,
            result_chars: DEFAULT_RESULT_CHARS,
        }
    }
}

/// Which bound of a [`Budget`] ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKind {
    /// [`Budget::max_steps`].
    Steps,
    /// [`Budget::max_tokens`].
    Tokens,
    /// [`Budget::max_cost_usd`].
    CostUsd,
}

impl fmt::Display for BudgetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BudgetKind::Steps => "max_steps",
            BudgetKind::Tokens => "max_tokens",
            BudgetKind::CostUsd => "max_cost_usd",
        })
    }
}
