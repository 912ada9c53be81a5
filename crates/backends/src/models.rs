//! Known models: context windows, output limits, prices and structured-output support, with a
//! pre-flight token estimate that stops an oversized prompt before any money is spent.
//!
//! [`ModelTable::builtin`] knows the design's models on OpenRouter and the direct provider ids
//! (OpenAI, Anthropic, Gemini); every figure in it says where it came from. A caller overrides or
//! extends it with [`ModelTable::with`] or [`ModelTable::extend_from_json`].
//!
//! # Prices
//!
//! Prices are data: the built-in [`PriceList`] (`data/prices.json`, included at build time) gives
//! each model's [`Price`] with the date its figures were read and where (genai-prices' checked
//! entries, Anthropic's pricing page, OpenRouter's model list, OpenRouter's `:free` variants, the
//! embedded model's price of 0). A user updates them without a rebuild from the two public price
//! lists ([`PriceList::import`]: pydantic's genai-prices `data.json`, LiteLLM's
//! `model_prices_and_context_window.json`) or their own ([`ModelTable::set_price`]); the claij CLI
//! keeps an import in the user's data directory and reads `[models."provider:model"] price` from
//! its configuration, in that order of precedence: configuration over import over built-in.
//!
//! A [`Price`] bills input, cache reads, cache writes, output and reasoning apart, and switches to a
//! long-context [`Tier`] for a whole call whose prompt crosses its threshold. An unknown figure is
//! `None`, never 0: [`ModelTable::price_for`] finds a price only where input and output are known,
//! and a model without one has an unknown cost ([`Usage::cost_usd`] stays `None`). Every
//! `HttpBackend` fills in the cost of each response from its table (the built-in one unless
//! `HttpBackend::with_prices` says otherwise), unless the provider reported its own (OpenRouter's
//! `usage.cost`), which wins.
//!
//! ```
//! use claij_backends::{ChatRequest, Message, ModelTable, Usage};
//! use claij_backends::models::{estimate_tokens, preflight};
//!
//! let table = ModelTable::builtin();
//! let flash = table.find("google/gemini-2.5-flash").map(|m| m.context_window);
//! assert_eq!(flash, Some(Some(1_048_576)));
//!
//! // Dated and vendor-prefixed ids match leniently.
//! assert_eq!(table.find("claude-sonnet-4-5-20250929").map(|m| m.id.as_str()), Some("claude-sonnet-4-5"));
//!
//! // A prompt over the window fails before it is sent.
//! let huge = ChatRequest::new("qwen/qwen-2.5-7b-instruct").message(Message::user("word ".repeat(40_000)));
//! assert!(estimate_tokens(&huge) > 32_768);
//! assert!(preflight(&huge, &table).is_err());
//!
//! // Cost from the table, unless the provider reported one.
//! let usage = Usage { input_tokens: 1_000_000, output_tokens: 100_000, ..Usage::default() };
//! let priced = usage.with_cost_for(&table, "gemini", "gemini-2.5-flash");
//! assert!(priced.cost_usd.is_some_and(|usd| (usd - 0.55).abs() < 1e-9)); // 1M in at $0.30, 100k out at $2.50
//! let price = table.price_for("gemini", "gemini-2.5-flash").unwrap();
//! assert!(price.checked.is_some() && price.source.as_deref().is_some_and(|s| s.contains("genai-prices")));
//! # Ok::<(), claij_backends::Error>(())
//! ```

mod builtin;
mod estimate;
mod list;
mod price;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Capabilities, ChatRequest, Error, SchemaDialect, Usage};

pub use estimate::{
    MESSAGE_OVERHEAD, REPLY_OVERHEAD, STRUCTURED_OVERHEAD, estimate_text, estimate_tokens,
};
pub use list::{IMPORTED_SOURCE, Imported, PriceEntry, PriceFileError, PriceFormat, PriceList};
pub use price::{Price, PriceProblem, Tier};

/// What is known about one model at one provider. Unknown figures are `None`, never guessed.
///
/// Loads from JSON (only `id` and `provider` are required):
/// `{"id": "my-model", "provider": "local", "context_window": 8192, "price": {"input": 0.1, "output": 0.2}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelInfo {
    /// The id as the provider names it (`google/gemini-2.5-flash` on OpenRouter, `gpt-5` on OpenAI).
    pub id: String,
    /// The provider that serves it under this id (`openrouter`, `openai`, `anthropic`, `gemini`, ...).
    pub provider: String,
    /// Input and output tokens together, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    /// A tighter limit on the prompt alone, where the provider has one (OpenAI's GPT-5 takes at most
    /// 272k input tokens of its 400k window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u32>,
    /// The most tokens one response may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// What it costs.
    #[serde(default)]
    pub price: Price,
    /// The schema dialect of its native structured output; `None` when the schema must go in the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_dialect: Option<SchemaDialect>,
    /// Whether it takes tools (so tool-mode structured output works).
    #[serde(default)]
    pub tools: bool,
    /// The schema dialect of its strict tools (`strict: true`); `None` when tools are not strict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict_tools: Option<SchemaDialect>,
    /// Whether it rejects a `temperature` (OpenAI's reasoning models, [`takes_temperature`]): a
    /// request's temperature is then left out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rejects_temperature: bool,
}

/// Where a model on the OpenAI chat format takes its instructions (the system prompt).
///
/// OpenAI's reasoning models replaced the `system` role with `developer`; the first of them (o1-mini,
/// o1-preview) take neither and answer 400 to both, so their instructions go in the first user
/// message. See [`instruction_role`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum InstructionRole {
    /// A `system` message: every chat model but OpenAI's reasoning models.
    #[default]
    System,
    /// A `developer` message: o1, o3, o4-mini and the GPT-5 family.
    Developer,
    /// No role for instructions: they are folded into the first user message, delimited
    /// (o1-mini, o1-preview).
    User,
}

/// Which OpenAI model ids take instructions how, by id prefix; the first match wins.
const INSTRUCTION_ROLES: &[(&str, InstructionRole)] = &[
    ("o1-mini", InstructionRole::User),
    ("o1-preview", InstructionRole::User),
    ("o1", InstructionRole::Developer),
    ("o3", InstructionRole::Developer),
    ("o4-mini", InstructionRole::Developer),
    ("gpt-5", InstructionRole::Developer),
];

/// Where `model` takes its instructions on the OpenAI chat format: an OpenAI id, bare (`o1-mini`)
/// or as OpenRouter names it (`openai/o1-mini`). Any other vendor's model, and any model not known
/// to differ, takes a `system` message.
///
/// ```
/// use claij_backends::models::{InstructionRole, instruction_role};
///
/// assert_eq!(instruction_role("openai/o1-mini"), InstructionRole::User);
/// assert_eq!(instruction_role("gpt-5-mini"), InstructionRole::Developer);
/// assert_eq!(instruction_role("gpt-4o"), InstructionRole::System);
/// assert_eq!(instruction_role("acme/o1-mini"), InstructionRole::System);
/// ```
pub fn instruction_role(model: &str) -> InstructionRole {
    let Some(id) = openai_id(model) else {
        return InstructionRole::System;
    };
    INSTRUCTION_ROLES
        .iter()
        .find(|(prefix, _)| id.starts_with(prefix))
        .map_or(InstructionRole::System, |(_, role)| *role)
}

/// Whether `model` takes `parallel_tool_calls` on the OpenAI chat format: all but OpenAI's o-series
/// (o1, o3, o3-mini, o4-mini answer 400 `unsupported_parameter`), bare or as `openai/...`.
///
/// ```
/// use claij_backends::models::takes_parallel_tool_calls;
///
/// assert!(takes_parallel_tool_calls("gpt-4o"));
/// assert!(!takes_parallel_tool_calls("openai/o3-mini"));
/// ```
pub fn takes_parallel_tool_calls(model: &str) -> bool {
    openai_id(model).is_none_or(|id| !["o1", "o3", "o4"].iter().any(|p| id.starts_with(p)))
}

/// Whether `model` takes a `temperature` on the OpenAI chat format: all but OpenAI's reasoning
/// models, bare or as `openai/...`: the o-series (o1, o3, o4-mini...) and the GPT-5 family
/// (`gpt-5`, `gpt-5-mini`, `gpt-5.1`...; OpenAI's reasoning guide: sampling parameters such as
/// `temperature` are not supported and answer 400 `unsupported_parameter`), except the non-reasoning
/// `gpt-5-chat` models, which take one.
///
/// ```
/// use claij_backends::models::takes_temperature;
///
/// assert!(takes_temperature("gpt-4o"));
/// assert!(takes_temperature("gpt-5-chat-latest"));
/// assert!(!takes_temperature("o3-mini"));
/// assert!(!takes_temperature("openai/gpt-5.1"));
/// assert!(takes_temperature("acme/o3"));
/// ```
pub fn takes_temperature(model: &str) -> bool {
    openai_id(model).is_none_or(|id| {
        let reasoning = ["o1", "o3", "o4", "gpt-5"]
            .iter()
            .any(|p| id.starts_with(p));
        !reasoning || id.starts_with("gpt-5-chat")
    })
}

/// The OpenAI model id in `model` (bare, or `openai/...` as OpenRouter names it), lowercase; `None`
/// for another vendor's model.
fn openai_id(model: &str) -> Option<String> {
    let id = model.trim().to_ascii_lowercase();
    match id.split_once('/') {
        None => Some(id),
        Some(("openai", rest)) => Some(rest.to_owned()),
        Some(_) => None,
    }
}

/// A table of known models: built in ([`ModelTable::builtin`]), extended or overridden by the caller.
///
/// Entries are keyed by provider and id; adding an entry with the same key replaces the old one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelTable {
    models: Vec<ModelInfo>,
}

/// The JSON a table loads: a list of [`ModelInfo`], or an object with such a list under `models`.
#[derive(Deserialize)]
#[serde(untagged)]
enum TableJson {
    List(Vec<ModelInfo>),
    Object { models: Vec<ModelInfo> },
}

impl ModelInfo {
    /// A model with nothing known but its id and provider.
    pub fn new(id: impl Into<String>, provider: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            provider: provider.into(),
            context_window: None,
            max_input_tokens: None,
            max_output_tokens: None,
            price: Price::default(),
            schema_dialect: None,
            tools: false,
            strict_tools: None,
            rejects_temperature: false,
        }
    }

    /// The same model with a context window (input and output together).
    #[must_use]
    pub fn with_context_window(mut self, tokens: u32) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// The same model with a limit on the prompt alone.
    #[must_use]
    pub fn with_max_input_tokens(mut self, tokens: u32) -> Self {
        self.max_input_tokens = Some(tokens);
        self
    }

    /// The same model with a limit on one response.
    #[must_use]
    pub fn with_max_output_tokens(mut self, tokens: u32) -> Self {
        self.max_output_tokens = Some(tokens);
        self
    }

    /// The same model with input and output prices (USD per million tokens).
    #[must_use]
    pub fn with_price(mut self, input: f64, output: f64) -> Self {
        self.price.input = Some(input);
        self.price.output = Some(output);
        self
    }

    /// The same model with a price for cached input (USD per million tokens).
    #[must_use]
    pub fn with_cached_input_price(mut self, cached_input: f64) -> Self {
        self.price.cached_input = Some(cached_input);
        self
    }

    /// The same model with native structured output in a schema dialect.
    #[must_use]
    pub fn with_schema_dialect(mut self, dialect: SchemaDialect) -> Self {
        self.schema_dialect = Some(dialect);
        self
    }

    /// The same model with tool support set.
    #[must_use]
    pub fn with_tools(mut self, yes: bool) -> Self {
        self.tools = yes;
        self
    }

    /// The same model with strict tools in a schema dialect (tools on).
    #[must_use]
    pub fn with_strict_tools(mut self, dialect: SchemaDialect) -> Self {
        self.tools = true;
        self.strict_tools = Some(dialect);
        self
    }

    /// The same model rejecting (or taking) a `temperature`.
    #[must_use]
    pub fn with_rejects_temperature(mut self, yes: bool) -> Self {
        self.rejects_temperature = yes;
        self
    }

    /// What the table says about the model, as backend [`Capabilities`] (streaming is left to the backend).
    pub fn capabilities(&self) -> Capabilities {
        let mut capabilities = Capabilities::prompted()
            .with_tools(self.tools)
            .with_rejects_temperature(self.rejects_temperature);
        if let Some(dialect) = self.strict_tools {
            capabilities = capabilities.with_strict_tools(dialect);
        }
        if let Some(window) = self.context_window {
            capabilities = capabilities.with_context_window(window);
        }
        if let Some(dialect) = self.schema_dialect {
            capabilities = capabilities.with_schema_dialect(dialect);
        }
        capabilities
    }

    /// Where the model takes its instructions on the OpenAI chat format; see [`instruction_role`].
    /// Providers with their own format (Anthropic, Gemini) take them apart from the conversation,
    /// as [`InstructionRole::System`].
    pub fn instruction_role(&self) -> InstructionRole {
        match self.provider.as_str() {
            "openai" | "openrouter" => instruction_role(&self.id),
            _ => InstructionRole::System,
        }
    }

    /// What `usage` cost on this model; see [`cost`].
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        self.price.cost(usage)
    }

    /// Checks that `request` fits this model before it is sent; see [`preflight`].
    ///
    /// # Errors
    ///
    /// [`Error::ContextLengthExceeded`], naming this model's provider, when the estimated prompt plus
    /// the reserved output (`max_tokens`) exceeds the context window, or the prompt alone exceeds
    /// `max_input_tokens`.
    pub fn preflight(&self, request: &ChatRequest) -> Result<(), Error> {
        estimate::check_fits(request, self)
    }
}

impl ModelTable {
    /// A table with no models.
    pub fn empty() -> Self {
        Self::default()
    }

    /// The built-in table: the design's models on OpenRouter and the direct provider ids, with the
    /// source of every window and limit in `models/builtin.rs`, and the prices of the built-in price
    /// list ([`PriceList::builtin`], each with its date and source).
    pub fn builtin() -> Self {
        builtin::models()
            .into_iter()
            .fold(Self::empty(), Self::with)
            .with_prices(&PriceList::builtin())
    }

    /// The same table with the prices of `list` (their sources spelled out), each replacing the
    /// price of the model with the same provider and id ([`ModelTable::set_price`]).
    #[must_use]
    pub fn with_prices(mut self, list: &PriceList) -> Self {
        for entry in list.resolved() {
            self.set_price(&entry.provider, &entry.id, entry.price);
        }
        self
    }

    /// Sets the price of the model `id` at `provider`: the entry with exactly that provider and id,
    /// else a new one with the windows and capabilities of the model it matches leniently
    /// ([`ModelTable::find_for`]). An `id` of `*` prices every model of the provider that has no
    /// price of its own; `*:VARIANT` every such model of that variant (OpenRouter's `*:free`).
    pub fn set_price(&mut self, provider: &str, id: &str, price: Price) {
        if let Some(model) = self
            .models
            .iter_mut()
            .find(|m| m.provider == provider && m.id == id)
        {
            model.price = price;
            return;
        }
        let mut model = match self.find_for(provider, id).filter(|_| !is_wildcard(id)) {
            Some(like) => ModelInfo {
                id: id.to_owned(),
                ..like.clone()
            },
            None => ModelInfo::new(id, provider),
        };
        model.price = price;
        self.models.push(model);
    }

    /// The price of `model` at `provider`, when one is known (input and output): the model's own
    /// (found with [`ModelTable::find_for`], a lenient match keeping to the id's variant, so that
    /// `model:free` is not priced as `model`), else the provider's `*:VARIANT` or `*` entry.
    ///
    /// ```
    /// use claij_backends::ModelTable;
    ///
    /// let table = ModelTable::builtin();
    /// let mini = table.price_for("openai", "gpt-4o-mini-2024-07-18").unwrap();
    /// assert_eq!((mini.input, mini.output), (Some(0.15), Some(0.6)));
    /// assert_eq!(table.price_for("openrouter", "moonshotai/kimi-k2:free").unwrap().input, Some(0.0));
    /// assert_eq!(table.price_for("local", "SmolLM2-135M-Instruct").unwrap().output, Some(0.0));
    /// assert!(table.price_for("openai", "gpt-9").is_none());
    /// ```
    pub fn price_for(&self, provider: &str, model: &str) -> Option<&Price> {
        let known = |m: &&ModelInfo| m.price.is_known() && !is_wildcard(&m.id);
        let wanted = variant(model);
        let own = self.get_for(provider, model).filter(known).or_else(|| {
            let candidates = self
                .models
                .iter()
                .filter(|m| m.provider == provider && variant(&m.id) == wanted)
                .filter(known);
            lenient(candidates, model)
        });
        if let Some(model) = own {
            return Some(&model.price);
        }
        let wildcard = |id: &str| {
            self.get_for(provider, id)
                .map(|m| &m.price)
                .filter(|p| p.is_known())
        };
        wanted
            .and_then(|v| wildcard(&format!("*:{v}")))
            .or_else(|| wildcard("*"))
    }

    /// What `usage` cost on `model` at `provider` ([`ModelTable::price_for`]); `None` for an unknown
    /// price.
    pub fn cost_for(&self, usage: &Usage, provider: &str, model: &str) -> Option<f64> {
        self.price_for(provider, model).and_then(|p| p.cost(usage))
    }

    /// The entries of one provider only (what a backend of that provider needs).
    #[must_use]
    pub fn of_provider(&self, provider: &str) -> Self {
        Self {
            models: self
                .models
                .iter()
                .filter(|m| m.provider == provider)
                .cloned()
                .collect(),
        }
    }

    /// The same table with `model` added, replacing any entry with the same provider and id.
    #[must_use]
    pub fn with(mut self, model: ModelInfo) -> Self {
        self.insert(model);
        self
    }

    /// Adds `model`, replacing any entry with the same provider and id.
    pub fn insert(&mut self, model: ModelInfo) {
        match self
            .models
            .iter_mut()
            .find(|m| m.provider == model.provider && m.id == model.id)
        {
            Some(slot) => *slot = model,
            None => self.models.push(model),
        }
    }

    /// A table of the models in `json`: a list of [`ModelInfo`] objects, or `{"models": [...]}`.
    ///
    /// # Errors
    ///
    /// The JSON error when `json` is not of that shape.
    pub fn from_json(json: &Value) -> Result<Self, serde_json::Error> {
        Self::empty().extend_from_json(json)
    }

    /// The same table with the models in `json` added (same shapes as [`ModelTable::from_json`]),
    /// each replacing any entry with the same provider and id.
    ///
    /// # Errors
    ///
    /// The JSON error when `json` is not of that shape.
    pub fn extend_from_json(self, json: &Value) -> Result<Self, serde_json::Error> {
        let models = match TableJson::deserialize(json)? {
            TableJson::List(models) | TableJson::Object { models } => models,
        };
        Ok(models.into_iter().fold(self, Self::with))
    }

    /// The models, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &ModelInfo> {
        self.models.iter()
    }

    /// How many models the table holds.
    pub fn len(&self) -> usize {
        self.models.len()
    }

    /// Whether the table holds no model.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// The model with exactly this id (the first one, if several providers use it).
    pub fn get(&self, id: &str) -> Option<&ModelInfo> {
        self.models.iter().find(|m| m.id == id)
    }

    /// The model with exactly this id at this provider.
    pub fn get_for(&self, provider: &str, id: &str) -> Option<&ModelInfo> {
        self.models
            .iter()
            .find(|m| m.provider == provider && m.id == id)
    }

    /// The model with this id, exactly or leniently: case is ignored, and so are a `vendor/` prefix,
    /// an OpenRouter variant (`:free`), a date (`-20250929`, `-2025-08-07`, `@20250929`), a `-latest`
    /// suffix and the difference between `4.5` and `4-5`. Among lenient matches, one that agrees
    /// with `id` on having a vendor prefix wins, then the first inserted.
    pub fn find(&self, id: &str) -> Option<&ModelInfo> {
        self.get(id).or_else(|| lenient(self.models.iter(), id))
    }

    /// Like [`ModelTable::find`], among the models of one provider only.
    pub fn find_for(&self, provider: &str, id: &str) -> Option<&ModelInfo> {
        self.get_for(provider, id)
            .or_else(|| lenient(self.models.iter().filter(|m| m.provider == provider), id))
    }

    /// What `usage` cost on `model` (found with [`ModelTable::find`]); `None` for an unknown model or price.
    pub fn cost(&self, usage: &Usage, model: &str) -> Option<f64> {
        self.find(model).and_then(|m| m.cost(usage))
    }

    /// A pre-flight check for one provider's backend, to hand to `HttpBackend::with_preflight` (wrap
    /// it in an `Arc`). The model is looked up among that provider's entries ([`ModelTable::find_for`]);
    /// a model the table does not know for that provider passes.
    pub fn preflight_check(
        &self,
        provider: impl Into<String>,
    ) -> impl Fn(&ChatRequest) -> Result<(), Error> + Send + Sync + 'static {
        let provider = provider.into();
        let table = self.of_provider(&provider);
        move |request: &ChatRequest| match table.find_for(&provider, &request.model) {
            Some(model) => model.preflight(request),
            None => Ok(()),
        }
    }
}

/// What `usage` cost on `model` (see [`Price::cost`]). `None` when the model's input or output
/// price is unknown.
pub fn cost(usage: &Usage, model: &ModelInfo) -> Option<f64> {
    model.cost(usage)
}

/// Checks, before anything is sent, that `request` fits its model's context window in `table`
/// (found with [`ModelTable::find`]). A model the table does not know passes.
///
/// The prompt is measured with [`estimate_tokens`], a deliberately high estimate, and the response's
/// `max_tokens` is reserved on top of it.
///
/// # Errors
///
/// [`Error::ContextLengthExceeded`] naming the model's provider, with the estimate, the reserved
/// output and the window in the message.
pub fn preflight(request: &ChatRequest, table: &ModelTable) -> Result<(), Error> {
    match table.find(&request.model) {
        Some(model) => model.preflight(request),
        None => Ok(()),
    }
}

impl Usage {
    /// The same usage with its cost filled in from `table` for `model` (any provider's, found with
    /// [`ModelTable::find`]). A cost the provider reported (OpenRouter's `usage.cost`) is kept; an
    /// unknown model or price leaves the cost unknown.
    #[must_use]
    pub fn with_cost_from(mut self, table: &ModelTable, model: &str) -> Usage {
        if self.cost_usd.is_none() {
            self.cost_usd = table.cost(&self, model);
        }
        self
    }

    /// The same usage with its cost filled in from `table` for `model` at `provider`
    /// ([`ModelTable::price_for`]), unless the provider reported one.
    #[must_use]
    pub fn with_cost_for(mut self, table: &ModelTable, provider: &str, model: &str) -> Usage {
        if self.cost_usd.is_none() {
            self.cost_usd = table.cost_for(&self, provider, model);
        }
        self
    }
}

/// Whether `id` is a wildcard entry's (`*`, `*:free`).
fn is_wildcard(id: &str) -> bool {
    id == "*" || id.starts_with("*:")
}

/// The OpenRouter variant of `id` (`free` in `moonshotai/kimi-k2:free`), if it has one.
fn variant(id: &str) -> Option<&str> {
    id.rsplit('/')
        .next()
        .and_then(|last| last.split_once(':'))
        .map(|(_, v)| v)
}

/// The best lenient match for `id` among `models`.
fn lenient<'a>(models: impl Iterator<Item = &'a ModelInfo>, id: &str) -> Option<&'a ModelInfo> {
    let key = normalize(id);
    let prefixed = id.contains('/');
    let mut fallback = None;
    for model in models.filter(|m| normalize(&m.id) == key) {
        if model.id.contains('/') == prefixed {
            return Some(model);
        }
        fallback = fallback.or(Some(model));
    }
    fallback
}

/// The comparison key of a model id: lowercase, without vendor prefix, variant, date or `-latest`,
/// dots as dashes.
fn normalize(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    let mut id = id.rsplit('/').next().unwrap_or_default();
    if let Some((base, _variant)) = id.split_once(':') {
        id = base;
    }
    if let Some((base, date)) = id.rsplit_once('@')
        && is_digits(date)
    {
        id = base;
    }
    let mut id = id.strip_suffix("-latest").unwrap_or(id);
    id = strip_date(id);
    id.replace('.', "-")
}

/// `id` without a trailing `-YYYYMMDD` or `-YYYY-MM-DD`.
fn strip_date(id: &str) -> &str {
    if let Some((base, date)) = id.rsplit_once('-')
        && date.len() == 8
        && is_digits(date)
        && date.starts_with("20")
    {
        return base;
    }
    // -YYYY-MM-DD: the last 11 characters.
    let n = id.len();
    if n > 11 && id.is_char_boundary(n - 11) {
        let (base, date) = id.split_at(n - 11);
        let b = date.as_bytes();
        let shape = b[0] == b'-'
            && b[5] == b'-'
            && b[8] == b'-'
            && [1, 2, 3, 4, 6, 7, 9, 10]
                .iter()
                .all(|&i| b[i].is_ascii_digit());
        if shape && date[1..].starts_with("20") {
            return base;
        }
    }
    id
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}
