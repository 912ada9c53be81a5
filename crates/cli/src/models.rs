//! `claij models`: each model's prices, their date and source, and what the compatibility matrix
//! ([`claij::matrix`]) would choose and why; `claij models prices` shows the prices claij uses
//! ([`claij::prices`]) or imports a list.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use claij::backends::models::PriceFormat;
use claij::prices;
use claij::settings::Settings;

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
    /// Fetch OpenRouter's model list now and cache it (see `claij::openrouter`).
    #[arg(long)]
    refresh: bool,
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
    if args.refresh {
        let done = claij::openrouter::refresh(front.claij()?)?;
        writeln!(std::io::stdout(), "{}", done.render(args.json))?;
        return Ok(Status::Ok);
    }
    let shown = claij::matrix::shown(settings, args.matrix.clone(), args.json)?;
    std::io::stdout().lock().write_all(shown.out.as_bytes())?;
    if let Some(err) = shown.err {
        writeln!(std::io::stderr(), "{err}")?;
    }
    Ok(Status::Ok)
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
    let mut out = std::io::stdout().lock();
    let Some(file) = &args.import else {
        out.write_all(prices::shown(settings, args.json)?.as_bytes())?;
        return Ok(Status::Ok);
    };
    let format = args.format.as_deref().and_then(PriceFormat::from_name);
    let done = prices::import(file, format, settings)?;
    writeln!(out, "{}", done.line(file, args.json))?;
    Ok(Status::Ok)
}
