//! [`PriceList`]: prices as data, with their date and sources: claij's own format (the built-in
//! list, `data/prices.json`, and what `claij models prices --import` stores), and the two public
//! price lists it imports, pydantic's genai-prices and LiteLLM's.
//!
//! claij's format:
//!
//! ```json
//! {"date": "2026-08-21",
//!  "sources": {"GP": "pydantic/genai-prices, prices/providers/*.yml"},
//!  "models": [{"provider": "openai", "id": "gpt-4o-mini", "input": 0.15, "cached_input": 0.075,
//!              "output": 0.6, "checked": "2025-07-04", "source": "GP"}]}
//! ```
//!
//! Each entry is a provider, an id (`*`: every model of the provider without a price of its own)
//! and a [`Price`] whose `source` names one of `sources`.
//!
//! **genai-prices** (`prices/data.json` of github.com/pydantic/genai-prices; its schema is the
//! `Provider`, `ModelInfo`, `ModelPrice` and `TieredPrices` classes of
//! `prices/src/prices/prices_types.py` and `prices/data.schema.json`): a list of providers, each
//! `{"id", "models": [{"id", "prices"}]}`, where `prices` is a `ModelPrice` (`input_mtok`,
//! `cache_read_mtok`, `cache_write_mtok`, `output_mtok`: USD per million tokens, or
//! `{"base", "tiers": [{"start", "price"}]}`) or a list of `{"constraint", "prices"}` of which the
//! last one in force applies (a `start_date` on or before the import date; a time-of-day
//! constraint is never in force here). A price genai-prices leaves out is 0 for input and output,
//! as it computes it; for cache reads and writes it stays unknown (billed as input). Provider
//! `google` is claij's `gemini`. Other units (audio, images, requests, tool calls) are not read.
//!
//! **LiteLLM** (`model_prices_and_context_window.json` of github.com/BerriAI/litellm; its fields
//! are described by the file's own `sample_spec` entry): an object of models by name, each with
//! `litellm_provider`, `mode` and USD per token (`input_cost_per_token`, `output_cost_per_token`,
//! `cache_read_input_token_cost`, `cache_creation_input_token_cost`,
//! `output_cost_per_reasoning_token`, and tiers as `<field>_above_<N>k_tokens`). Only models of
//! mode `chat`, `completion` or `responses` (or none) with input and output costs are read; the
//! name loses its `<provider>/` prefix (`gemini/gemini-2.5-pro` is gemini's `gemini-2.5-pro`).
//! Batch, flex, priority and 1-hour cache prices are not read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::price::{Price, Tier};

/// A list of prices: claij's format, or one converted from another ([`PriceList::import`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PriceList {
    /// When the list was made or imported (`YYYY-MM-DD`).
    pub date: String,
    /// What the list says about itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The sources entries name, by key.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
    /// The prices.
    pub models: Vec<PriceEntry>,
}

/// One model's price in a [`PriceList`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PriceEntry {
    /// The provider (`openai`, `anthropic`, `gemini`, `openrouter`, `local`, a configuration's own).
    pub provider: String,
    /// The model id as the provider names it; `*` prices every model of the provider that has
    /// no price of its own.
    pub id: String,
    /// The price; its `source` is a key of the list's `sources`.
    #[serde(flatten)]
    pub price: Price,
}

/// The formats [`PriceList::import`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PriceFormat {
    /// claij's own ([`PriceList`]).
    Claij,
    /// pydantic's genai-prices `data.json`.
    GenaiPrices,
    /// LiteLLM's `model_prices_and_context_window.json`.
    LiteLlm,
}

/// Why a price list cannot be read: where in the document (a JSON pointer) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceFileError {
    /// Where: a JSON pointer into the document (`/0/models/3/prices/input_mtok`; empty for the
    /// whole document).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

/// What an import made of a list: the list, and how many models it left out and why.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Imported {
    /// The prices read.
    pub list: PriceList,
    /// Models left out: no input or output price, not a chat model.
    pub skipped: usize,
}

/// The source key of every entry of an imported list.
pub const IMPORTED_SOURCE: &str = "import";

impl PriceFormat {
    /// The format's name, as `--format` takes it.
    pub fn name(self) -> &'static str {
        match self {
            PriceFormat::Claij => "claij",
            PriceFormat::GenaiPrices => "genai-prices",
            PriceFormat::LiteLlm => "litellm",
        }
    }

    /// The format called `name` (`claij`, `genai-prices`, `litellm`).
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Claij, Self::GenaiPrices, Self::LiteLlm]
            .into_iter()
            .find(|f| f.name() == name)
    }

    /// The format `json` looks like: a list is genai-prices; an object with `models` and `date`
    /// is claij's; another object whose members are objects is LiteLLM's.
    pub fn detect(json: &Value) -> Option<Self> {
        match json {
            Value::Array(_) => Some(Self::GenaiPrices),
            Value::Object(map) if map.contains_key("models") && map.contains_key("date") => {
                Some(Self::Claij)
            }
            Value::Object(map) if !map.is_empty() && map.values().all(Value::is_object) => {
                Some(Self::LiteLlm)
            }
            _ => None,
        }
    }
}

impl PriceList {
    /// The built-in list (`data/prices.json`, included at build time): its date, sources and
    /// prices.
    ///
    /// ```
    /// use claij_backends::models::PriceList;
    ///
    /// let list = PriceList::builtin();
    /// assert!(!list.date.is_empty());
    /// let mini = list.models.iter().find(|e| e.provider == "openai" && e.id == "gpt-4o-mini").unwrap();
    /// assert_eq!((mini.price.input, mini.price.output), (Some(0.15), Some(0.6)));
    /// assert!(list.sources.contains_key(mini.price.source.as_deref().unwrap()));
    /// ```
    pub fn builtin() -> Self {
        // A unit test reads the file through `from_json`: it cannot fail here.
        serde_json::from_str::<Value>(BUILTIN)
            .ok()
            .and_then(|json| Self::from_json(&json).ok())
            .unwrap_or_default()
    }

    /// A list in claij's format, checked: every price valid, every source named in `sources`.
    ///
    /// # Errors
    ///
    /// [`PriceFileError`] with the pointer of the first problem.
    pub fn from_json(json: &Value) -> Result<Self, PriceFileError> {
        // Entry by entry first, so that an error says which one.
        let models = json
            .get("models")
            .and_then(Value::as_array)
            .ok_or_else(|| PriceFileError::at("/models", "expected a list of prices".into()))?;
        for (i, entry) in models.iter().enumerate() {
            if let Some(key) = entry
                .as_object()
                .and_then(|fields| fields.keys().find(|k| !ENTRY_FIELDS.contains(&k.as_str())))
            {
                return Err(PriceFileError::at(
                    format!("/models/{i}/{}", token(key)),
                    format!(
                        "unknown field `{key}`, expected one of {}",
                        ENTRY_FIELDS.join(", ")
                    ),
                ));
            }
            PriceEntry::deserialize(entry)
                .map_err(|e| PriceFileError::at(format!("/models/{i}"), e.to_string()))?;
        }
        let list = Self::deserialize(json).map_err(|e| PriceFileError::at("", e.to_string()))?;
        for (i, entry) in list.models.iter().enumerate() {
            let at = |field: &str| format!("/models/{i}{field}");
            if entry.provider.is_empty() || entry.id.is_empty() {
                return Err(PriceFileError::at(
                    at(""),
                    "provider and id are not empty".to_owned(),
                ));
            }
            entry
                .price
                .check()
                .map_err(|p| PriceFileError::at(at(&format!("/{}", p.field)), p.message))?;
            if !entry.price.is_known() {
                return Err(PriceFileError::at(
                    at(""),
                    "a price needs input and output (US dollars per million tokens)".to_owned(),
                ));
            }
            if let Some(source) = &entry.price.source
                && !list.sources.contains_key(source)
            {
                return Err(PriceFileError::at(
                    at("/source"),
                    format!("`{source}` is not one of the list's sources"),
                ));
            }
        }
        Ok(list)
    }

    /// A list read from `json` in `format`, dated `today` (`YYYY-MM-DD`, also the date every
    /// imported price was read), its one source (key [`IMPORTED_SOURCE`]) being `origin` (the file
    /// and its format, say). A claij list is read as it is.
    ///
    /// ```
    /// use claij_backends::models::{PriceFormat, PriceList};
    /// use serde_json::json;
    ///
    /// let litellm = json!({"gpt-4o-mini": {"litellm_provider": "openai", "mode": "chat",
    ///     "input_cost_per_token": 1.5e-7, "output_cost_per_token": 6e-7}});
    /// let imported = PriceList::import(&litellm, PriceFormat::LiteLlm, "2026-11-30", "prices.json")?;
    /// let entry = &imported.list.models[0];
    /// assert_eq!((entry.provider.as_str(), entry.id.as_str()), ("openai", "gpt-4o-mini"));
    /// assert_eq!((entry.price.input, entry.price.output), (Some(0.15), Some(0.6)));
    /// # Ok::<(), claij_backends::models::PriceFileError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`PriceFileError`] with the pointer of the first problem: not the format's shape, a price
    /// that is not a number of 0 or more.
    pub fn import(
        json: &Value,
        format: PriceFormat,
        today: &str,
        origin: &str,
    ) -> Result<Imported, PriceFileError> {
        let (models, skipped) = match format {
            PriceFormat::Claij => {
                return Ok(Imported {
                    list: Self::from_json(json)?,
                    skipped: 0,
                });
            }
            PriceFormat::GenaiPrices => genai_prices(json, today)?,
            PriceFormat::LiteLlm => litellm(json)?,
        };
        let models = models
            .into_iter()
            .map(|mut entry| {
                entry.price.checked = Some(today.to_owned());
                entry.price.source = Some(IMPORTED_SOURCE.to_owned());
                entry
            })
            .collect();
        let list = PriceList {
            date: today.to_owned(),
            note: None,
            sources: BTreeMap::from([(IMPORTED_SOURCE.to_owned(), origin.to_owned())]),
            models,
        };
        Ok(Imported { list, skipped })
    }

    /// The entries with each price's `source` spelled out from `sources`.
    pub fn resolved(&self) -> impl Iterator<Item = PriceEntry> + '_ {
        self.models.iter().map(|entry| {
            let mut entry = entry.clone();
            if let Some(text) = entry
                .price
                .source
                .as_ref()
                .and_then(|key| self.sources.get(key))
            {
                entry.price.source = Some(text.clone());
            }
            entry
        })
    }
}

impl PriceFileError {
    fn at(pointer: impl Into<String>, message: String) -> Self {
        Self {
            pointer: pointer.into(),
            message,
        }
    }
}

impl std::fmt::Display for PriceFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pointer.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "at {}: {}", self.pointer, self.message)
        }
    }
}

impl std::error::Error for PriceFileError {}

/// The built-in list.
const BUILTIN: &str = include_str!("../../data/prices.json");

/// The fields of an entry in claij's format: the model, then [`Price`]'s.
const ENTRY_FIELDS: [&str; 10] = [
    "provider",
    "id",
    "input",
    "output",
    "cached_input",
    "cache_write",
    "reasoning",
    "tiers",
    "checked",
    "source",
];

/// A JSON pointer token: `~` and `/` escaped.
fn token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The entries of a genai-prices `data.json`, and how many models were left out.
fn genai_prices(json: &Value, today: &str) -> Result<(Vec<PriceEntry>, usize), PriceFileError> {
    let providers = json.as_array().ok_or_else(|| {
        PriceFileError::at(
            "",
            "expected a list of providers (genai-prices data.json)".into(),
        )
    })?;
    let mut entries = Vec::new();
    let mut skipped = 0;
    for (p, provider) in providers.iter().enumerate() {
        let at = format!("/{p}");
        let id = string(provider, "id", &at)?;
        let provider_id = match id {
            "google" => "gemini",
            other => other,
        };
        let models = provider
            .get("models")
            .and_then(Value::as_array)
            .ok_or_else(|| PriceFileError::at(format!("{at}/models"), "expected a list".into()))?;
        for (m, model) in models.iter().enumerate() {
            let at = format!("{at}/models/{m}");
            let model_id = string(model, "id", &at)?;
            let prices = model
                .get("prices")
                .ok_or_else(|| PriceFileError::at(format!("{at}/prices"), "missing".into()))?;
            let Some((prices, at)) = in_force(prices, &format!("{at}/prices"), today)? else {
                skipped += 1;
                continue;
            };
            entries.push(PriceEntry {
                provider: provider_id.to_owned(),
                id: model_id.to_owned(),
                price: model_price(prices, &at)?,
            });
        }
    }
    Ok((entries, skipped))
}

/// The `ModelPrice` in force on `today` among `prices` (a `ModelPrice`, or a list of conditional
/// prices of which the last in force wins), with its pointer; `None` when none is.
fn in_force<'a>(
    prices: &'a Value,
    at: &str,
    today: &str,
) -> Result<Option<(&'a Value, String)>, PriceFileError> {
    let Some(list) = prices.as_array() else {
        return match prices {
            Value::Object(_) => Ok(Some((prices, at.to_owned()))),
            _ => Err(PriceFileError::at(
                at,
                "expected prices (an object) or a list of conditional prices".into(),
            )),
        };
    };
    let mut chosen = None;
    for (i, conditional) in list.iter().enumerate() {
        let at = format!("{at}/{i}");
        let prices = conditional
            .get("prices")
            .filter(|p| p.is_object())
            .ok_or_else(|| PriceFileError::at(format!("{at}/prices"), "expected prices".into()))?;
        let applies = match conditional.get("constraint") {
            None | Some(Value::Null) => true,
            Some(constraint) => match constraint.get("start_date").map(Value::as_str) {
                // ISO dates compare as text.
                Some(Some(start)) => start <= today,
                Some(None) => {
                    return Err(PriceFileError::at(
                        format!("{at}/constraint/start_date"),
                        "expected a date (YYYY-MM-DD)".into(),
                    ));
                }
                // A time of day: never in force for a price fixed once.
                None => false,
            },
        };
        if applies {
            chosen = Some((prices, format!("{at}/prices")));
        }
    }
    Ok(chosen)
}

/// One genai-prices figure: its base price and its tiers (threshold, price).
type Figure = (f64, Vec<(u64, f64)>);

/// A genai-prices `ModelPrice` as a [`Price`].
fn model_price(prices: &Value, at: &str) -> Result<Price, PriceFileError> {
    let read = |key: &str| -> Result<Option<Figure>, PriceFileError> {
        let at = format!("{at}/{key}");
        match prices.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(Some((dollars(n.as_f64(), &at)?, Vec::new()))),
            Some(tiered @ Value::Object(_)) => {
                let base = dollars(
                    tiered.get("base").and_then(Value::as_f64),
                    &format!("{at}/base"),
                )?;
                let tiers = tiered
                    .get("tiers")
                    .and_then(Value::as_array)
                    .ok_or_else(|| {
                        PriceFileError::at(format!("{at}/tiers"), "expected a list".into())
                    })?;
                let mut read = Vec::with_capacity(tiers.len());
                for (i, tier) in tiers.iter().enumerate() {
                    let start = tier.get("start").and_then(Value::as_u64).ok_or_else(|| {
                        PriceFileError::at(
                            format!("{at}/tiers/{i}/start"),
                            "expected a whole number of tokens".into(),
                        )
                    })?;
                    let price = dollars(
                        tier.get("price").and_then(Value::as_f64),
                        &format!("{at}/tiers/{i}/price"),
                    )?;
                    read.push((start, price));
                }
                Ok(Some((base, read)))
            }
            Some(_) => Err(PriceFileError::at(
                at,
                "expected a number or {\"base\", \"tiers\"}".into(),
            )),
        }
    };
    let input = read("input_mtok")?;
    let output = read("output_mtok")?;
    let cached = read("cache_read_mtok")?;
    let write = read("cache_write_mtok")?;
    // genai-prices computes a price it leaves out as 0.
    let base = |figure: &Option<Figure>| figure.as_ref().map(|(b, _)| *b);
    let mut price = Price::new(base(&input).unwrap_or(0.0), base(&output).unwrap_or(0.0));
    price.cached_input = base(&cached);
    price.cache_write = base(&write);
    let mut starts: Vec<u64> = [&input, &output, &cached, &write]
        .iter()
        .filter_map(|f| f.as_ref())
        .flat_map(|(_, tiers)| tiers.iter().map(|(start, _)| *start))
        .collect();
    starts.sort_unstable();
    starts.dedup();
    // The price of a figure at a threshold: its highest tier at or below it.
    let at_start = |figure: &Option<Figure>, start: u64| {
        figure.as_ref().and_then(|(_, tiers)| {
            tiers
                .iter()
                .filter(|(s, _)| *s <= start)
                .max_by_key(|(s, _)| *s)
                .map(|(_, p)| *p)
        })
    };
    for start in starts {
        let mut tier = Tier {
            above_input_tokens: start,
            ..Tier::default()
        };
        tier.input = at_start(&input, start);
        tier.output = at_start(&output, start);
        tier.cached_input = at_start(&cached, start);
        tier.cache_write = at_start(&write, start);
        price.tiers.push(tier);
    }
    Ok(price)
}

/// USD per million tokens: a finite number, 0 or more.
fn dollars(value: Option<f64>, at: &str) -> Result<f64, PriceFileError> {
    value
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| PriceFileError::at(at, "expected a price: a number, 0 or more".into()))
}

/// A string member of `value`.
fn string<'a>(value: &'a Value, key: &str, at: &str) -> Result<&'a str, PriceFileError> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            PriceFileError::at(format!("{at}/{key}"), "expected a non-empty string".into())
        })
}

/// The modes of LiteLLM models that answer chat requests.
const LITELLM_MODES: [&str; 3] = ["chat", "completion", "responses"];

/// The LiteLLM per-token fields claij reads, and the [`Price`] figure each sets.
const LITELLM_FIELDS: [(&str, Field); 5] = [
    ("input_cost_per_token", Field::Input),
    ("output_cost_per_token", Field::Output),
    ("cache_read_input_token_cost", Field::CachedInput),
    ("cache_creation_input_token_cost", Field::CacheWrite),
    ("output_cost_per_reasoning_token", Field::Reasoning),
];

/// A field of a [`Price`] or [`Tier`].
#[derive(Debug, Clone, Copy)]
enum Field {
    Input,
    Output,
    CachedInput,
    CacheWrite,
    Reasoning,
}

/// The entries of a LiteLLM `model_prices_and_context_window.json`, and how many models were left
/// out.
fn litellm(json: &Value) -> Result<(Vec<PriceEntry>, usize), PriceFileError> {
    let models = json.as_object().ok_or_else(|| {
        PriceFileError::at(
            "",
            "expected an object of models by name (LiteLLM's model_prices_and_context_window.json)"
                .into(),
        )
    })?;
    let mut entries = Vec::new();
    let mut skipped = 0;
    for (name, model) in models {
        if name == "sample_spec" {
            continue;
        }
        let at = format!("/{}", token(name));
        let Some(fields) = model.as_object() else {
            return Err(PriceFileError::at(at, "expected an object".into()));
        };
        let mode = fields.get("mode").and_then(Value::as_str);
        if mode.is_some_and(|m| !LITELLM_MODES.contains(&m)) {
            skipped += 1;
            continue;
        }
        let provider = string(model, "litellm_provider", &at)?;
        let mut price = Price::default();
        let mut tiers: BTreeMap<u64, Tier> = BTreeMap::new();
        for (key, value) in fields {
            let Some((figure, above)) = litellm_field(key) else {
                continue;
            };
            let per_token = dollars(value.as_f64(), &format!("{at}/{}", token(key)))?;
            // Per token to per million, rounded off the float noise (1.5e-7 x 1e6).
            let per_million = (per_token * 1e6 * 1e9).round() / 1e9;
            match above {
                None => set(&mut price, figure, per_million),
                Some(above) => {
                    let tier = tiers.entry(above).or_insert_with(|| Tier {
                        above_input_tokens: above,
                        ..Tier::default()
                    });
                    set_tier(tier, figure, per_million);
                }
            }
        }
        if !price.is_known() {
            skipped += 1;
            continue;
        }
        price.tiers = tiers.into_values().collect();
        let id = name
            .strip_prefix(provider)
            .and_then(|rest| rest.strip_prefix('/'))
            .unwrap_or(name);
        entries.push(PriceEntry {
            provider: provider.to_owned(),
            id: id.to_owned(),
            price,
        });
    }
    Ok((entries, skipped))
}

/// Which figure a LiteLLM key sets, and above how many input tokens when it is a tier's
/// (`input_cost_per_token_above_200k_tokens`: input, above 200,000).
fn litellm_field(key: &str) -> Option<(Field, Option<u64>)> {
    for (field, figure) in LITELLM_FIELDS {
        if key == field {
            return Some((figure, None));
        }
        let Some(thousands) = key
            .strip_prefix(field)
            .and_then(|rest| rest.strip_prefix("_above_"))
            .and_then(|rest| rest.strip_suffix("k_tokens"))
        else {
            continue;
        };
        if let Ok(n) = thousands.parse::<u64>() {
            return Some((figure, Some(n.saturating_mul(1000))));
        }
    }
    None
}

fn set(price: &mut Price, figure: Field, value: f64) {
    let slot = match figure {
        Field::Input => &mut price.input,
        Field::Output => &mut price.output,
        Field::CachedInput => &mut price.cached_input,
        Field::CacheWrite => &mut price.cache_write,
        Field::Reasoning => &mut price.reasoning,
    };
    *slot = Some(value);
}

fn set_tier(tier: &mut Tier, figure: Field, value: f64) {
    let slot = match figure {
        Field::Input => &mut tier.input,
        Field::Output => &mut tier.output,
        Field::CachedInput => &mut tier.cached_input,
        Field::CacheWrite => &mut tier.cache_write,
        Field::Reasoning => &mut tier.reasoning,
    };
    *slot = Some(value);
}
