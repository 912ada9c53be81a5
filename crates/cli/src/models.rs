//! `claij models`: each model's prices, their date and source, and what the compatibility matrix
//! ([`claij::matrix`]) would choose and why; `claij models prices` shows the prices claij uses
//! ([`claij::prices`]) or imports a list.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;
use claij::matrix::{Choice, Matrix, choices, default_path, mode_name, read, unsupported};
use claij::prices;
use claij::settings::Settings;
use claij_backends::models::{Price, PriceFormat};
use serde_json::{Value, json};

use crate::exit::Status;

/// Arguments of `claij models`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// The matrix file (default: `$XDG_DATA_HOME/claij/compat-matrix.json`, else
    /// `~/.local/share/claij/compat-matrix.json`, where `cargo xtask integration` merges its runs).
    #[arg(long, value_name = "FILE")]
    matrix: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `claij models` subcommands.
#[derive(Debug, clap::Subcommand)]
enum Command {
    /// The prices claij uses (the configuration's `[models]` over an imported list over the
    /// built-in one), or `--import FILE` a price list (genai-prices, LiteLLM).
    Prices(PricesArgs),
}

/// Prints every model's prices, then each measured model's choice (without a matrix, a line on
/// stderr says how to make one).
pub(crate) fn run(args: &Args, front: &crate::front::Front) -> Result<Status> {
    let settings = front.settings()?;
    if let Some(Command::Prices(prices)) = &args.command {
        return run_prices(prices, settings);
    }
    let user = || default_path(settings.data_dir.as_deref());
    let path = args.matrix.clone().or_else(user);
    let matrix = match &path {
        Some(path) => read(path)?,
        None => Matrix::default(),
    };
    let choices = choices(&matrix);
    let mut out = std::io::stdout().lock();
    if args.json {
        let list: Vec<Value> = choices
            .iter()
            .map(|c| to_json(c, unsupported(&matrix, &[&c.model]).as_deref()))
            .collect();
        let report = json!({"matrix": path, "models": list, "prices": prices_json(settings)?});
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(Status::Ok);
    }
    let prices = render_prices(settings)?;
    let Some(path) = path else {
        out.write_all(prices.as_bytes())?;
        out.flush()?;
        writeln!(
            std::io::stderr(),
            "{}",
            no_matrix(settings.data_dir.as_deref())
        )?;
        return Ok(Status::Ok);
    };
    writeln!(out, "matrix: {}", path.display())?;
    for choice in &choices {
        let (tests, passed, first) = choice.measured;
        let verdict = match unsupported(&matrix, &[&choice.model]) {
            Some(why) => format!("UNSUPPORTED for structured output: {why}; if used anyway: "),
            None => String::new(),
        };
        writeln!(
            out,
            "{}: {verdict}mode {}, {} retr{} ({passed}/{tests} passed, {first} valid first try): {}",
            choice.model,
            mode_name(choice.mode),
            choice.max_retries,
            if choice.max_retries == 1 { "y" } else { "ies" },
            choice.why
        )?;
    }
    if choices.is_empty() {
        writeln!(out, "(no model measured)")?;
    }
    write!(out, "\n{prices}")?;
    Ok(Status::Ok)
}

/// What `claij models` says when there is no matrix: the command that measures a model and writes
/// one, a command that works as it is printed (the embedded model, offline and free), and where it
/// writes it (`data_dir`, the user's data directory; `None` when neither variable says).
pub(crate) fn no_matrix(data_dir: Option<&Path>) -> String {
    let written = data_dir.map_or_else(
        || {
            "$XDG_DATA_HOME/claij/compat-matrix.json, else ~/.local/share/claij/compat-matrix.json"
                .to_owned()
        },
        |dir| dir.join("compat-matrix.json").display().to_string(),
    );
    format!(
        "no compatibility matrix yet: in claij's repository, `{MEASURE_LOCAL}` measures the embedded \
         model (offline, free; `--llm MODEL` for another) and writes {written}; or give --matrix FILE"
    )
}

/// The command that measures the embedded model into the user's matrix.
const MEASURE_LOCAL: &str = "cargo xtask integration --llm local --yes";

fn to_json(choice: &Choice, unsupported: Option<&str>) -> Value {
    let (tests, passed, first) = choice.measured;
    json!({
        "model": choice.model,
        "supported": unsupported.is_none(),
        "unsupported": unsupported,
        "mode": mode_name(choice.mode),
        "max_retries": choice.max_retries,
        "why": choice.why,
        "tests": tests, "passed": passed, "valid_first_try": first,
    })
}

/// Arguments of `claij models prices`.
#[derive(Debug, clap::Args)]
pub(crate) struct PricesArgs {
    /// Import the prices of FILE (pydantic's genai-prices `data.json`, LiteLLM's
    /// `model_prices_and_context_window.json`, or claij's own format) into the data directory,
    /// replacing an earlier import: they take precedence over the built-in prices, the
    /// configuration's `[models]` over them.
    #[arg(long, value_name = "FILE")]
    import: Option<PathBuf>,
    /// The format of the imported file (default: recognised from its shape).
    #[arg(long, value_name = "FORMAT", requires = "import", value_parser = ["genai-prices", "litellm", "claij"])]
    format: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `claij models prices`: import a list, or show the prices.
fn run_prices(args: &PricesArgs, settings: &Settings) -> Result<Status> {
    let Some(file) = &args.import else {
        let mut out = std::io::stdout().lock();
        if args.json {
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&prices_json(settings)?)?
            )?;
        } else {
            out.write_all(render_prices(settings)?.as_bytes())?;
        }
        return Ok(Status::Ok);
    };
    let format = args.format.as_deref().and_then(PriceFormat::from_name);
    let done = prices::import(file, format, settings)?;
    if args.json {
        writeln!(
            std::io::stdout().lock(),
            "{}",
            json!({
                "imported": done.models, "skipped": done.skipped, "format": done.format.name(),
                "from": file, "into": done.into, "date": done.date,
            })
        )?;
    } else {
        writeln!(
            std::io::stdout().lock(),
            "imported {} price{} ({} format{}) from {} into {}: they take precedence over the built-in prices, the configuration's [models] over them",
            done.models,
            if done.models == 1 { "" } else { "s" },
            done.format.name(),
            match done.skipped {
                0 => String::new(),
                n => format!(
                    "; {n} model{} without input and output prices left out",
                    if n == 1 { "" } else { "s" }
                ),
            },
            file.display(),
            done.into.display()
        )?;
    }
    Ok(Status::Ok)
}

/// The prices for people: each layer's entries with their figures, date and source; an entry a
/// higher layer replaces says so.
pub(crate) fn render_prices(settings: &Settings) -> Result<String> {
    let (layers, builtin) = prices::layers(settings)?;
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
    let mut parts = Vec::new();
    let mut push = |name: &str, value: Option<f64>| {
        if let Some(v) = value {
            parts.push(format!("{name} {v}"));
        }
    };
    push("input", price.input);
    push("cached input", price.cached_input);
    push("cache write", price.cache_write);
    push("output", price.output);
    push("reasoning", price.reasoning);
    let mut text = parts.join(", ");
    for tier in &price.tiers {
        let mut parts = Vec::new();
        for (name, value) in [
            ("input", tier.input),
            ("cached input", tier.cached_input),
            ("cache write", tier.cache_write),
            ("output", tier.output),
            ("reasoning", tier.reasoning),
        ] {
            if let Some(v) = value {
                parts.push(format!("{name} {v}"));
            }
        }
        text.push_str(&format!(
            "; above {} input tokens: {}",
            tier.above_input_tokens,
            parts.join(", ")
        ));
    }
    text
}

/// The prices as JSON: the built-in list's date and sources, and every layer's entries.
fn prices_json(settings: &Settings) -> Result<Value> {
    let (layers, builtin) = prices::layers(settings)?;
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
