//! The flags every command takes ([`Global`]: logs and telemetry), and the value parsers of the
//! numeric flags: each number is checked against its range when the command line is parsed, so a
//! wild value is a one-line usage error (exit 2) naming the flag and the range, never a panic or a
//! runaway loop later.

use std::time::Duration;

/// Flags of every command: the configuration file, how much is logged on stderr and how, and
/// where traces go.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct Global {
    /// The configuration file instead of $CLAIJ_CONFIG, ./.mcp.json and
    /// ~/.config/claij/config.toml: TOML (config.toml), or JSON in the common .mcp.json shape
    /// (its MCP servers, projects and roots; the rest from config.toml). Refused by the commands
    /// that read no configuration.
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<std::path::PathBuf>,
    /// More log lines on stderr: -v debug, -vv trace, for claij's crates (default: warnings and
    /// errors). RUST_LOG, when set, is the filter instead.
    #[arg(short, long, action = clap::ArgAction::Count, global = true, conflicts_with = "quiet")]
    pub verbose: u8,
    /// Errors only on stderr: no warnings.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Log lines as `human` text (coloured on a terminal) or `json`, an object per line.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = LogFormat::Human, global = true)]
    pub log_format: LogFormat,
    /// Send traces and metrics to this OpenTelemetry collector over OTLP/HTTP (the base URL:
    /// URL/v1/traces and URL/v1/metrics); default OTEL_EXPORTER_OTLP_ENDPOINT, else none.
    #[arg(long, value_name = "URL", global = true)]
    pub otlp_endpoint: Option<String>,
    /// Record prompts and replies in the exported spans (`gen_ai.input.messages`,
    /// `gen_ai.output.messages`); never in the log lines.
    #[arg(long, global = true)]
    pub otel_capture_content: bool,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// A line per event: level, where, message, fields.
    #[default]
    Human,
    /// A JSON object per line: `timestamp`, `level`, `target`, `fields`.
    Json,
}

// The model knobs' ranges are the library's (the configuration's `[defaults]` and the suites
// check the same ones).
pub(crate) use claij::options::{
    MAX_RETRIES, MAX_TEMPERATURE, MAX_THREADS, MAX_TOKENS, REPLY_BYTES,
};
/// The most transitions an FSM run may be allowed.
pub(crate) const MAX_TRANSITIONS: usize = 1_000_000;

/// `--tool-results-budget`'s default: the tools and MCP interceptors' own.
pub(crate) const DEFAULT_RESULT_BUDGET: usize = 4000;
/// The largest `--tool-results-budget`, in characters (about a quarter of a million tokens).
pub(crate) const MAX_RESULT_BUDGET: usize = 1_000_000;

/// The most messages `--history-messages` may keep.
pub(crate) const MAX_HISTORY_MESSAGES: usize = 100_000;
/// The most estimated tokens `--history-tokens` may keep (the widest context windows).
pub(crate) const MAX_HISTORY_TOKENS: usize = 10_000_000;

/// The most steps an agent run may be allowed.
pub(crate) const MAX_STEPS: usize = 1000;
/// The largest `--budget-usd`.
pub(crate) const MAX_BUDGET_USD: f64 = 1_000_000.0;

/// Every duration flag (`--timeout`): seconds, a finite number above 0 and at most a day (the same
/// bound as a server's `timeout` in an MCP configuration).
pub(crate) fn seconds(text: &str) -> Result<Duration, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .and_then(claij_mcp::timeout_from_secs)
        .ok_or_else(|| {
            format!(
                "expected seconds, above 0 and at most {} (a day)",
                claij_mcp::MAX_TIMEOUT.as_secs()
            )
        })
}

/// `--max-retries`: 0 to [`MAX_RETRIES`].
pub(crate) fn retries(text: &str) -> Result<usize, String> {
    whole(text, 0, MAX_RETRIES)
}

/// `--max-tokens`: 1 to [`MAX_TOKENS`].
pub(crate) fn tokens(text: &str) -> Result<u32, String> {
    whole(text, 1, MAX_TOKENS)
}

/// `--max-transitions`: 1 to [`MAX_TRANSITIONS`].
pub(crate) fn transitions(text: &str) -> Result<usize, String> {
    whole(text, 1, MAX_TRANSITIONS)
}

/// `--max-repeated-calls` (of `fsm run|resume` and `mcp chat`): 0 to [`MAX_TRANSITIONS`] (a run
/// cannot repeat more), or `off` (`usize::MAX`: the check is off).
pub(crate) fn repeated_calls(text: &str) -> Result<usize, String> {
    if text.trim() == "off" {
        return Ok(usize::MAX);
    }
    whole(text, 0, MAX_TRANSITIONS)
        .map_err(|_| format!("expected a whole number from 0 to {MAX_TRANSITIONS}, or off"))
}

/// `--threads`: 1 to [`MAX_THREADS`].
pub(crate) fn threads(text: &str) -> Result<std::num::NonZeroUsize, String> {
    whole(text, 1, MAX_THREADS)
        .and_then(|n| std::num::NonZeroUsize::new(n).ok_or_else(|| "expected 1 or more".to_owned()))
}

/// `--temperature`: a finite number from 0 to [`MAX_TEMPERATURE`].
pub(crate) fn temperature(text: &str) -> Result<f32, String> {
    text.trim()
        .parse::<f32>()
        .ok()
        .filter(|t| (0.0..=MAX_TEMPERATURE).contains(t))
        .ok_or_else(|| format!("expected a number from 0 to {MAX_TEMPERATURE}"))
}

/// `--max-message-bytes`: the size limit on one message from an MCP server, in bytes (the range of
/// a server's `maxMessageBytes`).
pub(crate) fn message_bytes(text: &str) -> Result<usize, String> {
    whole(
        text,
        *claij_mcp::MESSAGE_BYTES.start(),
        *claij_mcp::MESSAGE_BYTES.end(),
    )
}

/// `--max-reply-bytes`: the longest reply the pipeline searches for JSON, in bytes
/// ([`REPLY_BYTES`]).
pub(crate) fn reply_bytes(text: &str) -> Result<usize, String> {
    whole(text, *REPLY_BYTES.start(), *REPLY_BYTES.end())
}

/// `--tool-results-budget`: 0 to [`MAX_RESULT_BUDGET`] characters.
pub(crate) fn result_budget(text: &str) -> Result<usize, String> {
    whole(text, 0, MAX_RESULT_BUDGET)
}

/// `--history-messages`: 0 (no history) to [`MAX_HISTORY_MESSAGES`].
pub(crate) fn history_messages(text: &str) -> Result<usize, String> {
    whole(text, 0, MAX_HISTORY_MESSAGES)
}

/// `--history-tokens`: 0 (no history) to [`MAX_HISTORY_TOKENS`].
pub(crate) fn history_tokens(text: &str) -> Result<usize, String> {
    whole(text, 0, MAX_HISTORY_TOKENS)
}

/// `--max-steps`: 1 to [`MAX_STEPS`].
pub(crate) fn steps(text: &str) -> Result<usize, String> {
    whole(text, 1, MAX_STEPS)
}

/// `--budget-usd`: US dollars, a finite number above 0 and at most [`MAX_BUDGET_USD`].
pub(crate) fn dollars(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|usd| *usd > 0.0 && *usd <= MAX_BUDGET_USD)
        .ok_or_else(|| format!("expected US dollars, above 0 and at most {MAX_BUDGET_USD}"))
}

/// The question of `ask`: some text besides whitespace (an empty one would be a model call on
/// nothing).
pub(crate) fn question(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err("the question is empty: ask something".to_owned());
    }
    Ok(text.to_owned())
}

/// A whole number from `min` to `max`.
fn whole<T>(text: &str, min: T, max: T) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    text.trim()
        .parse::<T>()
        .ok()
        .filter(|n| *n >= min && *n <= max)
        .ok_or_else(|| format!("expected a whole number from {min} to {max}"))
}

#[cfg(test)]
mod tests;
