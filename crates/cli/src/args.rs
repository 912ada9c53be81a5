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

// The flags' parsers and ranges are the library's (the configuration's `[defaults]` and the
// suites check the same ones).
pub(crate) use claij::options::parse::{
    dollars, history_messages, history_tokens, message_bytes, repeated_calls, reply_bytes,
    result_budget, retries, seconds, steps, temperature, threads, tokens, transitions, whole,
};
// `--tool-results-budget`'s default: the tools and MCP interceptors' own.
pub(crate) use claij::tools::DEFAULT_RESULT_BUDGET;

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
