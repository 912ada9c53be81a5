//! The configuration's `[models]`: per-model settings keyed by the model as `--llm` names it, today
//! its price (over the imported and the built-in ones).
//!
//! ```toml
//! [models."openai:gpt-4o-mini"]
//! price = { input = 0.15, output = 0.60, cached_input = 0.075 }
//!
//! [models."anthropic:claude-sonnet-4-5".price]     # USD per million tokens
//! input = 3.0
//! output = 15.0
//! cached_input = 0.30                               # cache reads (default: input)
//! cache_write = 3.75                                # cache writes (default: input)
//! reasoning = 15.0                                  # reasoning tokens (default: output)
//! tiers = [{ above_input_tokens = 200000, input = 6.0, output = 22.5 }]
//! checked = "2026-12-01"                            # when you read it (shown by claij models)
//! source = "our contract"                           # where (default: this file)
//!
//! [models."mylocal:*"]                              # every model of your own provider
//! price = { input = 0, output = 0 }
//! ```
//!
//! A key is `PROVIDER:MODEL` (a built-in provider or the configuration's own; `PROVIDER:*` for every
//! model of the provider without a price of its own), an alias, or `local`.

use std::path::Path;

use crate::error::Result;
use claij_backends::Price;
use toml::Value;

use super::{Fail, Settings, as_table};
use crate::model::Llm;

/// A price the configuration sets.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelPrice {
    /// The provider, as a backend names itself (`openai`, `local`, a configuration's own).
    pub provider: String,
    /// The model id (`*`: every model of the provider without a price of its own).
    pub model: String,
    /// The key it was set under (`openai:gpt-4o-mini`, an alias).
    pub key: String,
    /// The price, with `source` saying where it was set when the file does not say.
    pub price: Price,
}

/// The key that sets the price of `model` at `provider` in the configuration: what a message about
/// a missing price names.
pub fn price_key(provider: &str, model: &str) -> String {
    if provider == "local" {
        return "[models.local] price".to_owned();
    }
    format!("[models.\"{provider}:{model}\"] price")
}

impl Settings {
    /// `[models]`: each entry's `price`.
    pub(super) fn read_models(
        &mut self,
        value: &Value,
        path: &Path,
        fail: &Fail<'_>,
    ) -> Result<()> {
        for (key, entry) in as_table(value, &["models"], fail)? {
            let keys = ["models", key.as_str()];
            let (provider, model) = self.model_key(key).map_err(|e| fail(&keys, &e))?;
            for (field, value) in as_table(entry, &keys, fail)? {
                let keys = ["models", key.as_str(), field.as_str()];
                if field != "price" {
                    return Err(fail(&keys, "unknown key (expected price)"));
                }
                let mut price = read_price(value, &keys, fail)?;
                if price.source.is_none() {
                    price.source = Some(format!("{} [models.\"{key}\"]", path.display()));
                }
                self.model_prices.retain(|p| p.key != *key);
                self.model_prices.push(ModelPrice {
                    provider: provider.clone(),
                    model: model.clone(),
                    key: key.clone(),
                    price,
                });
            }
        }
        Ok(())
    }

    /// The provider and model a `[models]` key names.
    fn model_key(&self, key: &str) -> Result<(String, String), String> {
        if key == "local" {
            return Ok(("local".to_owned(), "*".to_owned()));
        }
        let llm = match key.split_once(':') {
            Some((provider, "*")) => {
                // A wildcard: the provider must exist.
                let llm = self.parse_llm(&format!("{provider}:x"))?;
                return Ok((provider_of(&llm), "*".to_owned()));
            }
            _ => self.resolve_text(key).map(|r| r.llm)?,
        };
        match &llm {
            Llm::Local => Ok(("local".to_owned(), "*".to_owned())),
            Llm::Remote { model, .. } | Llm::Compatible { model, .. } => {
                Ok((provider_of(&llm), model.clone()))
            }
        }
    }
}

/// The provider a backend for `llm` names itself.
fn provider_of(llm: &Llm) -> String {
    match llm {
        Llm::Local => "local".to_owned(),
        Llm::Remote { provider, .. } => provider.name().to_owned(),
        Llm::Compatible { provider, .. } => provider.clone(),
    }
}

/// A `price` value: a table of [`Price`]'s fields, checked (every figure a number of 0 or more,
/// input and output given, tiers in order).
fn read_price(value: &Value, keys: &[&str], fail: &Fail<'_>) -> Result<Price> {
    as_table(value, keys, fail)?;
    let json = serde_json::to_value(value).map_err(|e| fail(keys, &e.to_string()))?;
    let price: Price = serde_json::from_value(json).map_err(|e| {
        fail(
            keys,
            &format!(
                "{e} (expected input, output, cached_input, cache_write, reasoning: US dollars \
                 per million tokens; tiers, checked, source)"
            ),
        )
    })?;
    if let Err(problem) = price.check() {
        let mut path: Vec<&str> = keys.to_vec();
        path.extend(problem.field.split('/'));
        return Err(fail(&path, &problem.message));
    }
    if !price.is_known() {
        return Err(fail(
            keys,
            "a price needs input and output (US dollars per million tokens)",
        ));
    }
    Ok(price)
}
