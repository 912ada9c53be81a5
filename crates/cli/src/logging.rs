//! The log subscriber every command installs first: `-v`/`-vv`/`-q` or `RUST_LOG` choose what is
//! logged, `--log-format` how (one line of text per event, coloured on a terminal, or a JSON object
//! per line), always on stderr (stdout is the command's result). With the `otel` feature the
//! OpenTelemetry layers of [`claij::telemetry`] join the same subscriber, with their own filter.
//!
//! Two targets are never log lines unless `RUST_LOG` names them: `claij::metrics` (metric events for
//! the exporter) and `claij::content` (prompts and replies, recorded only on opt-in).

use std::fmt::Write as _;
use std::io::IsTerminal as _;

use anyhow::Result;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Registry};

use crate::args::{Global, LogFormat};

/// Metric events for the OpenTelemetry exporter (the contract's `histogram.*`, `counter.*` fields).
const METRICS_TARGET: &str = "claij::metrics";
/// Prompt and reply content, recorded on spans only when someone asks for it.
const CONTENT_TARGET: &str = "claij::content";

/// What `install` set up; [`Logging::shutdown`] flushes it, on every exit path.
pub(crate) struct Logging {
    #[cfg(feature = "otel")]
    telemetry: Option<claij::telemetry::Telemetry>,
}

/// What decides the log filter besides the flags.
#[derive(Debug, Default)]
pub(crate) struct Filters {
    /// `RUST_LOG`, when set and not empty: the filter instead of `-v`/`-q`.
    pub rust_log: Option<String>,
    /// Directives a command's own flags add (the MCP servers' log messages with `--mcp-log-level`).
    pub extra: Vec<String>,
}

impl Filters {
    /// `RUST_LOG` from the environment, and `extra`.
    pub(crate) fn from_env(extra: Vec<String>) -> Self {
        let rust_log = std::env::var("RUST_LOG")
            .ok()
            .filter(|value| !value.trim().is_empty());
        Self { rust_log, extra }
    }
}

/// Installs the global subscriber: the log layer on stderr and, with the `otel` feature and an
/// endpoint, the OpenTelemetry layers.
///
/// # Errors
///
/// An invalid `RUST_LOG` (it names the variable); `--otlp-endpoint` in a build without the `otel`
/// feature; the exporter's settings (an invalid endpoint or header).
pub(crate) fn install(global: &Global, filters: &Filters) -> Result<Logging> {
    let log = log_layer(global, filters)?;
    #[cfg(not(feature = "otel"))]
    {
        if global.otlp_endpoint.is_some() {
            anyhow::bail!(
                "--otlp-endpoint needs claij built with the `otel` feature (cargo build -p claij-cli --features otel)"
            );
        }
        if global.otel_capture_content {
            anyhow::bail!(
                "--otel-capture-content needs claij built with the `otel` feature (cargo build -p claij-cli --features otel)"
            );
        }
        Registry::default().with(log).try_init()?;
        Ok(Logging {})
    }
    #[cfg(feature = "otel")]
    {
        let config = telemetry_config(global, |name| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.trim().is_empty())
        })
        .map_err(flag_error)?;
        let telemetry = claij::telemetry::Telemetry::install(&config).map_err(flag_error)?;
        // Never an `Option` of a layer: `None` enables every callsite, `claij::content` included.
        let otel = claij::telemetry::layer(telemetry.as_ref());
        Registry::default().with(log).with(otel).try_init()?;
        Ok(Logging { telemetry })
    }
}

/// The exporter's configuration: the standard variables (through `var`), `--otlp-endpoint` over
/// their endpoints (the variables that name one are not read then), `--otel-capture-content`.
#[cfg(feature = "otel")]
fn telemetry_config(
    global: &Global,
    var: impl Fn(&str) -> Option<String>,
) -> Result<claij::telemetry::Config, claij::telemetry::Error> {
    use claij::telemetry::Config;
    let config = match &global.otlp_endpoint {
        Some(endpoint) => {
            Config::from_vars(|name| var(name).filter(|_| !name.ends_with("_ENDPOINT")))?
                .with_endpoint(endpoint)?
        }
        None => Config::from_vars(var)?,
    };
    Ok(config.with_capture_content(global.otel_capture_content))
}

/// The exporter's error in the words of the flags that caused it.
#[cfg(feature = "otel")]
fn flag_error(error: claij::telemetry::Error) -> anyhow::Error {
    use claij::telemetry::{ENDPOINT_SETTING, Error};
    match error {
        Error::Endpoint {
            setting: ENDPOINT_SETTING,
            url,
            problem,
        } => anyhow::anyhow!("--otlp-endpoint: `{url}` {problem}"),
        Error::ContentWithoutTraces => anyhow::anyhow!(
            "--otel-capture-content records prompts and replies in exported spans, and no spans are exported: add --otlp-endpoint URL (or set OTEL_EXPORTER_OTLP_ENDPOINT)"
        ),
        other => other.into(),
    }
}

/// The log layer: the format `--log-format` asks for, on stderr, filtered by [`directives`].
fn log_layer(global: &Global, filters: &Filters) -> Result<Box<dyn Layer<Registry> + Send + Sync>> {
    let directives = directives(global, filters);
    let filter = EnvFilter::builder().parse(&directives).map_err(|e| {
        if filters.rust_log.is_some() {
            anyhow::anyhow!("RUST_LOG: {e}")
        } else {
            anyhow::anyhow!("log filter `{directives}`: {e}")
        }
    })?;
    Ok(match global.log_format {
        LogFormat::Human => tracing_subscriber::fmt::layer()
            .event_format(Human {
                ansi: colour(std::io::stderr().is_terminal()),
            })
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_ansi(false)
            .with_current_span(false)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed(),
    })
}

impl Logging {
    /// Flushes what the exporter holds, within its bound (nothing to do without one).
    pub(crate) fn shutdown(self) {
        #[cfg(feature = "otel")]
        if let Some(telemetry) = self.telemetry {
            telemetry.shutdown();
        }
    }
}

/// rmcp's transport worker, whose end is logged by claij's own error when it matters.
const RMCP_WORKER: &str = "rmcp::transport::worker";

/// The log layer's filter: `RUST_LOG` if set, else warnings and errors (`-q`: errors; `-v` debug and
/// `-vv` trace for claij's crates); the metric and content targets off unless `RUST_LOG` names
/// them; then `extra`.
fn directives(global: &Global, filters: &Filters) -> String {
    let mut parts: Vec<String> = match &filters.rust_log {
        Some(rust_log) => vec![rust_log.trim().to_owned()],
        None => {
            let (all, claij) = match (global.quiet, global.verbose) {
                (true, _) => ("error", "error"),
                (false, 0) => ("warn", "warn"),
                (false, 1) => ("warn", "debug"),
                (false, _) => ("warn", "trace"),
            };
            // A target directive matches by prefix: `claij` covers every claij crate.
            let mut parts = vec![all.to_owned(), format!("claij={claij}")];
            if global.verbose == 0 {
                // rmcp logs an ERROR when its transport worker ends, also on the 401 that an OAuth
                // server answers before claij authorizes; a real failure reaches claij's own error.
                parts.push(format!("{RMCP_WORKER}=off"));
            }
            parts
        }
    };
    for target in [METRICS_TARGET, CONTENT_TARGET] {
        let named = filters
            .rust_log
            .as_deref()
            .is_some_and(|rust_log| rust_log.contains(target));
        if !named {
            parts.push(format!("{target}=off"));
        }
    }
    parts.extend(filters.extra.iter().cloned());
    parts.join(",")
}

/// Whether the human format colours its lines: on a terminal, unless `NO_COLOR` is set.
fn colour(terminal: bool) -> bool {
    terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The human format: `LEVEL target: span:span: message field=value ...`, always one line (line
/// breaks and control characters in values are escaped, so a server's message cannot forge a line
/// or colour the terminal).
struct Human {
    ansi: bool,
}

impl<S, N> FormatEvent<S, N> for Human
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let meta = event.metadata();
        let spans: Vec<&'static str> = ctx
            .event_scope()
            .map(|scope| scope.from_root().map(|span| span.name()).collect())
            .unwrap_or_default();
        let mut fields = Fields::default();
        event.record(&mut fields);
        writer.write_str(&line(
            *meta.level(),
            meta.target(),
            &spans,
            &fields,
            self.ansi,
        ))
    }
}

/// One event's line, ending in a newline.
fn line(level: Level, target: &str, spans: &[&str], fields: &Fields, ansi: bool) -> String {
    let (colour, name) = match level {
        Level::ERROR => ("31", "ERROR"),
        Level::WARN => ("33", " WARN"),
        Level::INFO => ("32", " INFO"),
        Level::DEBUG => ("34", "DEBUG"),
        Level::TRACE => ("35", "TRACE"),
    };
    let mut out = String::new();
    // Writing to a String cannot fail.
    if ansi {
        let _ = write!(out, "\x1b[{colour}m{name}\x1b[0m \x1b[2m{target}:\x1b[0m ");
    } else {
        let _ = write!(out, "{name} {target}: ");
    }
    for span in spans {
        let _ = write!(out, "{span}: ");
    }
    out.push_str(&one_line(&fields.message));
    for (name, value) in &fields.rest {
        if ansi {
            let _ = write!(out, " \x1b[3m{name}\x1b[0m={}", one_line(value));
        } else {
            let _ = write!(out, " {name}={}", one_line(value));
        }
    }
    out.push('\n');
    out
}

/// An event's message and its other fields, in order, as text.
#[derive(Debug, Default)]
struct Fields {
    message: String,
    rest: Vec<(&'static str, String)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.record(field, value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.record(field, format!("{value:?}"));
    }
}

impl Fields {
    fn record(&mut self, field: &Field, value: String) {
        match field.name() {
            "message" => self.message = value,
            name => self.rest.push((name, value)),
        }
    }
}

/// `text` on one line: line breaks, tabs and other control characters escaped (`\n`, `\u{1b}`).
fn one_line(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
