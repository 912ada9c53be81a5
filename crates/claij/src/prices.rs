//! The prices claij uses, in three layers: the configuration's `[models."provider:model"] price`
//! over the list an import ([`import`], `claij models prices --import FILE`) keeps in the data
//! directory (`$XDG_DATA_HOME/claij/prices.json`, else `~/.local/share/claij/prices.json`) over
//! the built-in list ([`layers`]); and the price a budget in US dollars needs ([`priced_budget`]).

use std::path::{Path, PathBuf};

use claij_backends::ModelTable;
use claij_backends::models::{Price, PriceFileError, PriceFormat, PriceList};
use claij_interceptors::Budget;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::settings::{Settings, price_key};

/// The file in the data directory an import writes.
pub const IMPORTED_FILE: &str = "prices.json";

/// The most bytes a price file may have (LiteLLM's whole list is under 2 MB).
const MAX_PRICE_FILE_BYTES: u64 = 64 << 20;

/// The price table: built-in, then the imported list, then the configuration's prices, each
/// replacing the price of the same provider and model.
///
/// # Errors
///
/// The imported list cannot be read, is not JSON or not a price list: the message names the file
/// and where in it.
pub fn table(settings: &Settings) -> Result<ModelTable> {
    let mut table = ModelTable::builtin();
    if let Some((_, list)) = imported(settings)? {
        table = table.with_prices(&list);
    }
    for set in &settings.model_prices {
        table.set_price(&set.provider, &set.model, set.price.clone());
    }
    Ok(table)
}

/// The imported list and its file, when there is one.
fn imported(settings: &Settings) -> Result<Option<(PathBuf, PriceList)>> {
    let Some(dir) = &settings.data_dir else {
        return Ok(None);
    };
    let path = dir.join(IMPORTED_FILE);
    let text = match crate::fs::read_file_capped(&path, MAX_PRICE_FILE_BYTES, "a price file") {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::io(
                format!("cannot read the imported prices {}", path.display()),
                e,
            ));
        }
    };
    let json = parse_json(&text, &path).map_err(|e| {
        e.context("the imported prices (`claij models prices --import FILE` writes them again)")
    })?;
    let list = PriceList::from_json(&json).map_err(|e| {
        Error::file(format!(
            "{}: {e} (the imported prices; `claij models prices --import FILE` writes them again)",
            path.display()
        ))
    })?;
    Ok(Some((path, list)))
}

/// `budget` with the price of `model` at `provider` when it bounds cost (`--budget-usd`).
///
/// # Errors
///
/// No price is known for the model: the message names the key that sets one.
pub fn priced_budget(
    budget: Option<Budget>,
    settings: &Settings,
    provider: &str,
    model: &str,
) -> Result<Option<Budget>> {
    let Some(budget) = budget else {
        return Ok(None);
    };
    if budget.max_cost_usd.is_none() {
        return Ok(Some(budget));
    }
    let prices = settings.prices()?;
    let Some(price) = prices.price_for(provider, model) else {
        let file = settings.path.as_ref().map_or_else(
            || "the configuration".to_owned(),
            |p| p.display().to_string(),
        );
        return Err(Error::unpriced(format!(
            "--budget-usd: no price is known for {provider}:{model}, so no call's cost can be \
             estimated: set {} = {{ input = USD, output = USD }} (per million tokens) in {file}, \
             or import a price list with `claij models prices --import FILE`",
            price_key(provider, model)
        )));
    };
    Ok(Some(budget.with_price(Some(price.clone()))))
}

/// What an import did.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The models imported.
    pub models: usize,
    /// The models left out (without input and output prices).
    pub skipped: usize,
    /// The format the file was read as.
    pub format: PriceFormat,
    /// The file written.
    pub into: PathBuf,
    /// The import's date, `YYYY-MM-DD` (UTC).
    pub date: String,
}

impl Imported {
    /// What the import did, for people: how many prices from `from` (the file read), in which
    /// format, into which file, and what takes precedence.
    #[must_use]
    pub fn summary(&self, from: &Path) -> String {
        let skipped = match self.skipped {
            0 => String::new(),
            n => format!(
                "; {n} model{} without input and output prices left out",
                if n == 1 { "" } else { "s" }
            ),
        };
        format!(
            "imported {} price{} ({} format{skipped}) from {} into {}: they take precedence over \
             the built-in prices, the configuration's [models] over them",
            self.models,
            if self.models == 1 { "" } else { "s" },
            self.format.name(),
            from.display(),
            self.into.display()
        )
    }

    /// What the import did in one line: [`Imported::to_json`]'s JSON, or [`Imported::summary`].
    #[must_use]
    pub fn line(&self, from: &Path, json: bool) -> String {
        if json {
            self.to_json(from).to_string()
        } else {
            self.summary(from)
        }
    }

    /// What the import did, as JSON (`imported`, `skipped`, `format`, `from`, `into`, `date`).
    #[must_use]
    pub fn to_json(&self, from: &Path) -> Value {
        json!({
            "imported": self.models, "skipped": self.skipped, "format": self.format.name(),
            "from": from, "into": self.into, "date": self.date,
        })
    }
}

/// Reads `file` in `format` (else the format its shape says), converts it to claij's format and
/// writes it to the data directory (whole or not at all: through a temporary file and a rename).
///
/// # Errors
///
/// No data directory, the file cannot be read or is no price list (the message names the file
/// and where), the data directory cannot be written.
pub fn import(file: &Path, format: Option<PriceFormat>, settings: &Settings) -> Result<Imported> {
    let Some(dir) = &settings.data_dir else {
        return Err(Error::config(
            "no data directory to keep the prices in: set XDG_DATA_HOME or HOME",
        ));
    };
    let text = crate::fs::read_file_capped(file, MAX_PRICE_FILE_BYTES, "a price file")
        .map_err(|e| Error::io(format!("cannot read {}", file.display()), e))?;
    let json = parse_json(&text, file)?;
    let Some(format) = format.or_else(|| PriceFormat::detect(&json)) else {
        return Err(Error::file(format!(
            "{}: not a price list: expected genai-prices' data.json (a list of providers), \
             LiteLLM's model_prices_and_context_window.json (an object of models by name) or \
             claij's ({{\"date\", \"models\"}}); --format says which",
            file.display()
        )));
    };
    let date = today();
    let origin = format!(
        "{} ({} format), imported {date}",
        absolute(file).display(),
        format.name()
    );
    let imported =
        PriceList::import(&json, format, &date, &origin).map_err(|e| located(file, format, &e))?;
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let into = dir.join(IMPORTED_FILE);
    let body = serde_json::to_vec_pretty(&imported.list)
        .map_err(|e| Error::file_because("cannot write the imported prices", e))?;
    crate::fs::write_atomic(&into, &body, None)
        .map_err(|e| Error::io(format!("cannot replace {}", into.display()), e))?;
    Ok(Imported {
        models: imported.list.models.len(),
        skipped: imported.skipped,
        format,
        into,
        date,
    })
}

/// A price list's JSON, or where its text is not JSON.
fn parse_json(text: &str, path: &Path) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| {
        Error::file(format!(
            "{}:{}:{}: not JSON: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

/// A format error, with the file and the format it was read as.
fn located(file: &Path, format: PriceFormat, error: &PriceFileError) -> Error {
    Error::file(format!(
        "{}: {error} (read as {}; --format says another)",
        file.display(),
        format.name()
    ))
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Today's date in UTC, `YYYY-MM-DD`.
fn today() -> String {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    now.chars().take(10).collect()
}

/// One layer of prices: its name, where it is, and its entries.
#[derive(Debug, Clone)]
pub struct Layer {
    /// `configuration`, `imported` or `built-in`.
    pub name: &'static str,
    /// Where it is (a file, a date), empty when unknown.
    pub at: String,
    /// Provider, model and price of each entry.
    pub entries: Vec<(String, String, Price)>,
}

/// The layers, highest precedence first, and the built-in list (for its date and sources).
///
/// # Errors
///
/// The imported list cannot be read or is no price list.
pub fn layers(settings: &Settings) -> Result<(Vec<Layer>, PriceList)> {
    let builtin = PriceList::builtin();
    let mut layers = Vec::new();
    if !settings.model_prices.is_empty() {
        layers.push(Layer {
            name: "configuration",
            at: settings
                .path
                .as_ref()
                .map_or_else(String::new, |p| p.display().to_string()),
            entries: settings
                .model_prices
                .iter()
                .map(|p| (p.provider.clone(), p.model.clone(), p.price.clone()))
                .collect(),
        });
    }
    if let Some((path, list)) = imported(settings)? {
        layers.push(Layer {
            name: "imported",
            at: format!("{}, {}", path.display(), list.date),
            entries: list
                .resolved()
                .map(|e| (e.provider, e.id, e.price))
                .collect(),
        });
    }
    layers.push(Layer {
        name: "built-in",
        at: format!("the list of {}", builtin.date),
        entries: builtin
            .models
            .iter()
            .map(|e| (e.provider.clone(), e.id.clone(), e.price.clone()))
            .collect(),
    });
    Ok((layers, builtin))
}

/// The prices for people: each layer's entries with their figures, date and source; an entry a
/// higher layer replaces says so; then the built-in list's sources.
///
/// # Errors
///
/// As [`layers`].
pub fn render(settings: &Settings) -> Result<String> {
    let (layers, builtin) = layers(settings)?;
    let mut out = String::from(
        "prices, US dollars per million tokens (the configuration's over the imported over the built-in):\n",
    );
    for (i, layer) in layers.iter().enumerate() {
        let at = if layer.at.is_empty() {
            String::new()
        } else {
            format!(" ({})", layer.at)
        };
        out.push_str(&format!("{}{at}:\n", layer.name));
        for (provider, model, price) in &layer.entries {
            let over = layers[..i]
                .iter()
                .find(|l| {
                    l.entries
                        .iter()
                        .any(|(p, m, _)| p == provider && m == model)
                })
                .map(|l| format!(" [replaced by the {}'s]", l.name))
                .unwrap_or_default();
            let source = match layer.name {
                // The built-in sources are listed once, below.
                "built-in" => price.source.as_deref().map(|s| format!(" [{s}]")),
                _ => price.source.as_deref().map(|s| format!("; {s}")),
            }
            .unwrap_or_default();
            let checked = price
                .checked
                .as_deref()
                .map_or_else(|| "; undated".to_owned(), |d| format!("; checked {d}"));
            out.push_str(&format!(
                "  {provider}:{model}: {}{checked}{source}{over}\n",
                figures(price)
            ));
        }
    }
    out.push_str("built-in sources:\n");
    for (key, text) in &builtin.sources {
        out.push_str(&format!("  [{key}] {text}\n"));
    }
    Ok(out)
}

/// `input 3, cached input 0.3, cache write 3.75, output 15; above 200000 input tokens: input 6,
/// output 22.5`.
fn figures(price: &Price) -> String {
    let list = |figures: [(&str, Option<f64>); 5]| -> String {
        let parts: Vec<String> = figures
            .iter()
            .filter_map(|(name, value)| value.map(|v| format!("{name} {v}")))
            .collect();
        parts.join(", ")
    };
    let mut text = list([
        ("input", price.input),
        ("cached input", price.cached_input),
        ("cache write", price.cache_write),
        ("output", price.output),
        ("reasoning", price.reasoning),
    ]);
    for tier in &price.tiers {
        let figures = list([
            ("input", tier.input),
            ("cached input", tier.cached_input),
            ("cache write", tier.cache_write),
            ("output", tier.output),
            ("reasoning", tier.reasoning),
        ]);
        text.push_str(&format!(
            "; above {} input tokens: {figures}",
            tier.above_input_tokens
        ));
    }
    text
}

/// The prices as `claij models prices` prints them: [`to_json`] pretty-printed on its own line, or
/// [`render`]'s text.
///
/// # Errors
///
/// As [`layers`].
pub fn shown(settings: &Settings, json: bool) -> Result<String> {
    if json {
        Ok(format!("{:#}\n", to_json(settings)?))
    } else {
        render(settings)
    }
}

/// The prices as JSON: the built-in list's date and sources, and every layer's entries.
///
/// # Errors
///
/// As [`layers`].
pub fn to_json(settings: &Settings) -> Result<Value> {
    let (layers, builtin) = layers(settings)?;
    let layers: Vec<Value> = layers
        .iter()
        .map(|layer| {
            let entries: Vec<Value> = layer
                .entries
                .iter()
                .map(|(provider, model, price)| {
                    let mut entry = json!({"provider": provider, "model": model});
                    if let (Value::Object(map), Ok(Value::Object(price))) =
                        (&mut entry, serde_json::to_value(price))
                    {
                        map.extend(price);
                    }
                    entry
                })
                .collect();
            json!({"layer": layer.name, "at": layer.at, "models": entries})
        })
        .collect();
    Ok(json!({"builtin_date": builtin.date, "builtin_sources": builtin.sources, "layers": layers}))
}

#[cfg(test)]
mod tests;
