//! The flags every command takes ([`Global`]: logs and telemetry), and the value parsers of the
//! numeric flags: each number is checked against its range when the command line is parsed, so a
//! wild value is a one-line usage error (exit 2) naming the flag and the range, never a panic or a
//! runaway loop later.

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

// The model knobs' parsers and ranges are the library's (the configuration's `[defaults]` and the
// suites check the same ones).
pub(crate) use claij::options::parse::{
    ParseError, reply_bytes, retries, seconds, temperature, threads, tokens, whole,
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

/// `--max-transitions`: 1 to [`MAX_TRANSITIONS`].
pub(crate) fn transitions(text: &str) -> Result<usize, ParseError> {
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

/// `--max-message-bytes`: the size limit on one message from an MCP server, in bytes (the range of
/// a server's `maxMessageBytes`).
pub(crate) fn message_bytes(text: &str) -> Result<usize, ParseError> {
    whole(
        text,
        *claij::mcp::protocol::MESSAGE_BYTES.start(),
        *claij::mcp::protocol::MESSAGE_BYTES.end(),
    )
}

/// `--tool-results-budget`: 0 to [`MAX_RESULT_BUDGET`] characters.
pub(crate) fn result_budget(text: &str) -> Result<usize, ParseError> {
    whole(text, 0, MAX_RESULT_BUDGET)
}

/// `--history-messages`: 0 (no history) to [`MAX_HISTORY_MESSAGES`].
pub(crate) fn history_messages(text: &str) -> Result<usize, ParseError> {
    whole(text, 0, MAX_HISTORY_MESSAGES)
}

/// `--history-tokens`: 0 (no history) to [`MAX_HISTORY_TOKENS`].
pub(crate) fn history_tokens(text: &str) -> Result<usize, ParseError> {
    whole(text, 0, MAX_HISTORY_TOKENS)
}

/// `--max-steps`: 1 to [`MAX_STEPS`].
pub(crate) fn steps(text: &str) -> Result<usize, ParseError> {
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

#[cfg(test)]
mod tests;
