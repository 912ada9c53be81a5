//! [`Price`]: what a model's tokens cost, by kind (input, cache reads, cache writes, output,
//! reasoning) and by long-context tier, with the date the figures were read and where from.

use serde::{Deserialize, Serialize};

use crate::Usage;

/// Prices in US dollars per million tokens, with the date they were read and where from. `None`
/// means unknown, never 0: a model is free only when its prices say 0.
///
/// How a [`Usage`] is priced ([`Price::cost`]):
/// - prompt tokens not served from a cache nor written to one at `input`;
/// - cache reads ([`Usage::cached_tokens`]) at `cached_input`, else at `input`;
/// - cache writes ([`Usage::cache_write_tokens`], Anthropic's) at `cache_write`, else at `input`;
/// - generated tokens at `output`, reasoning tokens among them at `reasoning`, else at `output`
///   (every provider claij talks to bills reasoning as output);
/// - a long prompt at its tier's figures: when the prompt's input tokens (cache reads and writes
///   included) exceed a [`Tier::above_input_tokens`], that tier's figures replace the base ones for
///   the whole call, output too (the "cliff" Google, Anthropic and OpenAI bill by: Gemini 2.5 Pro
///   and Claude Sonnet 4.5 above 200k input tokens, GPT-5.4 above 272k). A figure a tier leaves
///   out is the base one.
///
/// ```
/// use claij_backends::{Price, Usage};
/// use claij_backends::models::Tier;
///
/// let pro = Price::new(1.25, 10.0).with_cached_input(0.125).with_tier(Tier::above(200_000, 2.5, 15.0));
/// let short = Usage { input_tokens: 100_000, output_tokens: 1_000, ..Usage::default() };
/// assert!((pro.cost(&short).unwrap() - 0.135).abs() < 1e-12); // 100k x $1.25 + 1k x $10
/// let long = Usage { input_tokens: 300_000, output_tokens: 1_000, ..Usage::default() };
/// assert!((pro.cost(&long).unwrap() - 0.765).abs() < 1e-12); // 300k x $2.50 + 1k x $15
/// assert_eq!(Price::default().cost(&short), None);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Price {
    /// Prompt tokens not served from a cache nor written to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<f64>,
    /// Generated tokens (reasoning included unless `reasoning` says otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<f64>,
    /// Prompt tokens served from a cache (cache reads); unknown: billed as `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// Prompt tokens written to a cache (Anthropic's 5-minute cache writes, 1.25 times input);
    /// unknown: billed as `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// Reasoning tokens, where a provider bills them apart from output; unknown: billed as
    /// `output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<f64>,
    /// Long-context tiers, in ascending order of their threshold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<Tier>,
    /// When the figures were read (`YYYY-MM-DD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<String>,
    /// Where the figures were read (a pricing page, a price list and its version, a file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The figures of a call whose prompt has more than `above_input_tokens` input tokens; see
/// [`Price`]. A figure left out is the base one.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Tier {
    /// The tier applies to a call whose prompt has more input tokens than this.
    pub above_input_tokens: u64,
    /// As [`Price::input`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<f64>,
    /// As [`Price::output`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<f64>,
    /// As [`Price::cached_input`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// As [`Price::cache_write`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// As [`Price::reasoning`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<f64>,
}

/// The figures one call is billed at, every one known.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rates {
    input: f64,
    output: f64,
    cached_input: f64,
    cache_write: f64,
    reasoning: f64,
}

/// What is wrong with a [`Price`]: the field (`tiers/1/input`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceProblem {
    /// The field, as a JSON pointer below the price (`input`, `tiers/0/above_input_tokens`).
    pub field: String,
    /// Why.
    pub message: String,
}

impl Price {
    /// Input and output prices (USD per million tokens), nothing else known.
    pub fn new(input: f64, output: f64) -> Self {
        Self {
            input: Some(input),
            output: Some(output),
            ..Self::default()
        }
    }

    /// A price of 0 for every kind of token: a model that runs on your own machine.
    pub fn free(source: impl Into<String>) -> Self {
        Self {
            source: Some(source.into()),
            ..Self::new(0.0, 0.0)
        }
    }

    /// The same price with a price for cache reads.
    #[must_use]
    pub fn with_cached_input(mut self, price: f64) -> Self {
        self.cached_input = Some(price);
        self
    }

    /// The same price with a price for cache writes.
    #[must_use]
    pub fn with_cache_write(mut self, price: f64) -> Self {
        self.cache_write = Some(price);
        self
    }

    /// The same price with a price for reasoning tokens.
    #[must_use]
    pub fn with_reasoning(mut self, price: f64) -> Self {
        self.reasoning = Some(price);
        self
    }

    /// The same price with a long-context tier (kept in ascending order of threshold).
    #[must_use]
    pub fn with_tier(mut self, tier: Tier) -> Self {
        self.tiers.push(tier);
        self.tiers.sort_by_key(|t| t.above_input_tokens);
        self
    }

    /// The same price, read on `date` (`YYYY-MM-DD`) from `source`.
    #[must_use]
    pub fn with_origin(mut self, checked: Option<String>, source: impl Into<String>) -> Self {
        self.checked = checked;
        self.source = Some(source.into());
        self
    }

    /// Whether a cost can be computed: the input and output prices are known.
    pub fn is_known(&self) -> bool {
        self.input.is_some() && self.output.is_some()
    }

    /// What `usage` cost (see [`Price`] for how each kind of token is billed); `None` when the
    /// input or output price is unknown.
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        let rates = self.rates(usage.input_tokens)?;
        let input = usage.input_tokens;
        let read = usage.cached_tokens.min(input);
        let written = usage.cache_write_tokens.min(input - read);
        let plain = input - read - written;
        let reasoning = usage.reasoning_tokens.min(usage.output_tokens);
        let visible = usage.output_tokens - reasoning;
        let micro = plain as f64 * rates.input
            + read as f64 * rates.cached_input
            + written as f64 * rates.cache_write
            + visible as f64 * rates.output
            + reasoning as f64 * rates.reasoning;
        Some(micro / 1_000_000.0)
    }

    /// What a call of `input_tokens` prompt tokens (none from a cache) and `output_tokens`
    /// generated tokens would cost, at the tier the prompt falls in; `None` when the input or
    /// output price is unknown.
    pub fn estimate(&self, input_tokens: u64, output_tokens: u64) -> Option<f64> {
        self.cost(&Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        })
    }

    /// What is wrong with the price, if anything: a figure that is negative or not finite, tiers
    /// out of order.
    ///
    /// # Errors
    ///
    /// The first problem found, naming the field.
    pub fn check(&self) -> Result<(), PriceProblem> {
        let figure = |name: String, value: Option<f64>| match value {
            Some(v) if !v.is_finite() || v < 0.0 => Err(PriceProblem {
                field: name,
                message: format!("expected US dollars per million tokens, 0 or more, not {v}"),
            }),
            _ => Ok(()),
        };
        figure("input".into(), self.input)?;
        figure("output".into(), self.output)?;
        figure("cached_input".into(), self.cached_input)?;
        figure("cache_write".into(), self.cache_write)?;
        figure("reasoning".into(), self.reasoning)?;
        let mut previous: Option<u64> = None;
        for (i, tier) in self.tiers.iter().enumerate() {
            figure(format!("tiers/{i}/input"), tier.input)?;
            figure(format!("tiers/{i}/output"), tier.output)?;
            figure(format!("tiers/{i}/cached_input"), tier.cached_input)?;
            figure(format!("tiers/{i}/cache_write"), tier.cache_write)?;
            figure(format!("tiers/{i}/reasoning"), tier.reasoning)?;
            if previous.is_some_and(|p| p >= tier.above_input_tokens) {
                return Err(PriceProblem {
                    field: format!("tiers/{i}/above_input_tokens"),
                    message: "tiers go in ascending order of above_input_tokens, each once".into(),
                });
            }
            previous = Some(tier.above_input_tokens);
        }
        Ok(())
    }

    /// The figures a prompt of `input_tokens` is billed at.
    fn rates(&self, input_tokens: u64) -> Option<Rates> {
        let mut input = self.input?;
        let mut output = self.output?;
        let mut cached_input = self.cached_input;
        let mut cache_write = self.cache_write;
        let mut reasoning = self.reasoning;
        if let Some(tier) = self
            .tiers
            .iter()
            .rev()
            .find(|t| input_tokens > t.above_input_tokens)
        {
            input = tier.input.unwrap_or(input);
            output = tier.output.unwrap_or(output);
            cached_input = tier.cached_input.or(cached_input);
            cache_write = tier.cache_write.or(cache_write);
            reasoning = tier.reasoning.or(reasoning);
        }
        Some(Rates {
            input,
            output,
            cached_input: cached_input.unwrap_or(input),
            cache_write: cache_write.unwrap_or(input),
            reasoning: reasoning.unwrap_or(output),
        })
    }
}

impl Tier {
    /// A tier above `input_tokens` prompt tokens with these input and output prices.
    pub fn above(input_tokens: u64, input: f64, output: f64) -> Self {
        Self {
            above_input_tokens: input_tokens,
            input: Some(input),
            output: Some(output),
            ..Self::default()
        }
    }

    /// The same tier with a price for cache reads.
    #[must_use]
    pub fn with_cached_input(mut self, price: f64) -> Self {
        self.cached_input = Some(price);
        self
    }

    /// The same tier with a price for cache writes.
    #[must_use]
    pub fn with_cache_write(mut self, price: f64) -> Self {
        self.cache_write = Some(price);
        self
    }
}

impl std::fmt::Display for PriceProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for PriceProblem {}

#[cfg(test)]
mod tests;
