//! The [`Budget`] that bounds an agent run ([`Pipeline::run_agent`](crate::Pipeline::run_agent)).

use std::fmt;

use claij_backends::{Price, Usage};
use serde::{Deserialize, Serialize};

/// The bounds of an agent run: steps (model calls that end in an answer or in tool calls), tokens
/// and cost. What one step's tool calls may do is the tools' [`Limits`](crate::Limits).
///
/// Steps and tokens are checked between steps: a step under way finishes, and an answer is
/// returned even when its step went over. Cost is checked before every model call (a retry's
/// too): the run stops with [`Error::BudgetExceeded`](crate::Error::BudgetExceeded) when what it
/// has spent plus the call's estimated cost would cross [`Budget::max_cost_usd`], and, between
/// steps, once what it has spent reaches it (so a step's tools do not run for an answer the budget
/// cannot pay for).
///
/// What a call has cost is its [`Usage::cost_usd`](claij_backends::Usage::cost_usd) (the
/// provider's own, or the backend's price table's), else its usage at [`Budget::price`]. A call's
/// estimate, made before it is sent, is [`Budget::price`] applied to:
/// - its prompt: [`estimate_tokens`](claij_backends::models::estimate_tokens) of the request, a
///   deliberately high count (1.2 to 1.9 times OpenAI's tokenizer), none of it assumed cached,
///   at the long-context tier it falls in;
/// - its output: the request's `max_tokens` when it has one (the most the call can write, so the
///   estimate is close to a bound); else the most output tokens an earlier call of the run
///   wrote; else, for the run's first call, none: what a model will write is not known before it
///   writes, so a run without `max_tokens` can go past its budget by at most its first call's
///   output. Give `max_tokens` to make every estimate count the output too.
///
/// A cost bound needs a price: a run with [`Budget::max_cost_usd`] and no [`Budget::price`] (or a
/// price whose input or output is unknown) fails before any request with
/// [`Error::Unpriced`](crate::Error::Unpriced); an unknown cost is never counted as 0.
///
/// ```
/// use claij_backends::ModelTable;
/// use claij_interceptors::Budget;
///
/// let table = ModelTable::builtin();
/// let budget = Budget::default()
///     .with_max_cost_usd(0.01)
///     .with_price(table.price_for("openai", "gpt-4o-mini").cloned());
/// assert_eq!(budget.price.as_ref().and_then(|p| p.input), Some(0.15));
/// // 2,000 prompt tokens and 500 output tokens at $0.15 and $0.60 per million.
/// assert!((budget.estimate(2_000, 500).unwrap() - 0.0006).abs() < 1e-12);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Budget {
    /// The most steps (default 8): a model still calling tools at the last one exceeds the budget.
    pub max_steps: usize,
    /// The most tokens, input and output, over every attempt of the run.
    pub max_tokens: Option<u64>,
    /// The most US dollars over every attempt of the run, checked before each model call against
    /// what was spent plus the call's estimate; needs [`Budget::price`].
    pub max_cost_usd: Option<f64>,
    /// The model's prices (from a [`ModelTable`](claij_backends::ModelTable):
    /// [`price_for`](claij_backends::ModelTable::price_for)): to estimate each call before it is
    /// made, and to price a call whose backend reported no cost.
    pub price: Option<Price>,
}

/// The default [`Budget::max_steps`].
pub const DEFAULT_MAX_STEPS: usize = 8;

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_steps: DEFAULT_MAX_STEPS,
            max_tokens: None,
            max_cost_usd: None,
            price: None,
        }
    }
}

impl Budget {
    /// The same budget with a cost bound, in US dollars.
    #[must_use]
    pub fn with_max_cost_usd(mut self, usd: f64) -> Self {
        self.max_cost_usd = Some(usd);
        self
    }

    /// The same budget with the model's prices (`None`: unknown).
    #[must_use]
    pub fn with_price(mut self, price: Option<Price>) -> Self {
        self.price = price;
        self
    }

    /// What a call of `input_tokens` prompt tokens and `output_tokens` output tokens costs at
    /// [`Budget::price`]; `None` without a known price.
    pub fn estimate(&self, input_tokens: u64, output_tokens: u64) -> Option<f64> {
        self.price
            .as_ref()
            .and_then(|p| p.estimate(input_tokens, output_tokens))
    }

    /// What `usage` cost: the backend's figure, else `usage` at [`Budget::price`]; `None` when
    /// neither is known.
    pub fn cost_of(&self, usage: &Usage) -> Option<f64> {
        usage
            .cost_usd
            .or_else(|| self.price.as_ref().and_then(|p| p.cost(usage)))
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
