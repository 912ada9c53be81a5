//! Log lines on stderr for a program (feature `logging`): levels as `-v`/`-vv`/`-q` give them, or
//! `RUST_LOG` instead, one line of text per event (coloured on a terminal) or a JSON object per
//! line. [`Config::layer`] is the layer to join to a subscriber of one's own; [`Config::install`]
//! sets the global subscriber with it (and, with the `otel` feature, [`Config::install_with`] adds
//! the layers of a [`crate::telemetry::Telemetry`]).
//!
//! Two targets are never log lines unless `RUST_LOG` names them: `claij::metrics` (metric events for
//! the exporter) and `claij::content` (prompts and replies, recorded only on opt-in).
//!
//! ```
//! let config = claij::logging::Config {
//!     verbose: 1,
//!     ..claij::logging::Config::default()
//! };
//! assert!(config.directives().starts_with("warn,claij=debug"));
//! let _layer = config.layer()?;
//! # Ok::<(), claij::logging::Error>(())
//! ```

use std::fmt::Write as _;
use std::io::IsTerminal as _;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// Metric events for the OpenTelemetry exporter (the contract's `histogram.*`, `counter.*` fields).
const METRICS_TARGET: &str = "claij::metrics";
/// Prompt and reply content, recorded on spans only when someone asks for it.
const CONTENT_TARGET: &str = "claij::content";
/// rmcp's transport worker, whose end is logged by claij's own error when it matters.
const RMCP_WORKER: &str = "rmcp::transport::worker";

/// What is logged and how; the default logs warnings and errors as text without colour.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// More lines for claij's crates: 1 debug, 2 or more trace.
    pub verbose: u8,
    /// Errors only (over `verbose`).
    pub quiet: bool,
    /// Text or JSON lines.
    pub format: Format,
    /// `RUST_LOG`'s filter, when set: the filter instead of `verbose` and `quiet`.
    pub rust_log: Option<String>,
    /// Directives added last (`claij_mcp::server_log=trace` to show the MCP servers' messages).
    pub extra: Vec<String>,
    /// Whether text lines are coloured.
    pub ansi: bool,
}

/// How a log line is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// A line per event: level, where, spans, message, fields.
    #[default]
    Human,
    /// A JSON object per line: `timestamp`, `level`, `target`, `fields`.
    Json,
}

/// The log setup failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The filter does not parse: `RUST_LOG` when it is set, else the directives built.
    #[error("{}: {problem}", if *.from_rust_log { "RUST_LOG".to_owned() } else { format!("log filter `{directives}`") })]
    Filter {
        /// The directives parsed.
        directives: String,
        /// Whether they came from `RUST_LOG`.
        from_rust_log: bool,
        /// What is wrong with them.
        problem: String,
    },
    /// A global subscriber was already set.
    #[error("the log subscriber")]
    AlreadySet(#[source] tracing_subscriber::util::TryInitError),
}

impl Config {
    /// `RUST_LOG` when set and not blank; colours when stderr is a terminal and `NO_COLOR` is not
    /// set; the rest default.
    #[must_use]
    pub fn from_env() -> Self {
        let rust_log = std::env::var("RUST_LOG")
            .ok()
            .filter(|value| !value.trim().is_empty());
        let ansi = std::io::stderr().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Self {
            rust_log,
            ansi,
            ..Self::default()
        }
    }

    /// The filter: `rust_log` if set, else warnings and errors (`quiet`: errors; `verbose` 1 debug
    /// and 2 trace for claij's crates); the metric and content targets off unless `rust_log` names
    /// them; then `extra`.
    #[must_use]
    pub fn directives(&self) -> String {
        let mut parts: Vec<String> = match &self.rust_log {
            Some(rust_log) => vec![rust_log.trim().to_owned()],
            None => {
                let (all, claij) = match (self.quiet, self.verbose) {
                    (true, _) => ("error", "error"),
                    (false, 0) => ("warn", "warn"),
                    (false, 1) => ("warn", "debug"),
                    (false, _) => ("warn", "trace"),
                };
                // A target directive matches by prefix: `claij` covers every claij crate.
                let mut parts = vec![all.to_owned(), format!("claij={claij}")];
                if self.verbose == 0 {
                    // rmcp logs an ERROR when its transport worker ends, also on the 401 that an
                    // OAuth server answers before claij authorizes; a real failure reaches claij's
                    // own error.
                    parts.push(format!("{RMCP_WORKER}=off"));
                }
                parts
            }
        };
        for target in [METRICS_TARGET, CONTENT_TARGET] {
            let named = self
                .rust_log
                .as_deref()
                .is_some_and(|rust_log| rust_log.contains(target));
            if !named {
                parts.push(format!("{target}=off"));
            }
        }
        parts.extend(self.extra.iter().cloned());
        parts.join(",")
    }

    /// The log layer: lines in [`Config::format`] on stderr, filtered by [`Config::directives`].
    ///
    /// # Errors
    ///
    /// [`Error::Filter`]: the filter does not parse.
    pub fn layer(&self) -> Result<Box<dyn Layer<Registry> + Send + Sync>, Error> {
        let directives = self.directives();
        let filter = EnvFilter::builder()
            .parse(&directives)
            .map_err(|e| Error::Filter {
                directives: directives.clone(),
                from_rust_log: self.rust_log.is_some(),
                problem: e.to_string(),
            })?;
        Ok(match self.format {
            Format::Human => tracing_subscriber::fmt::layer()
                .event_format(Human { ansi: self.ansi })
                .with_writer(std::io::stderr)
                .with_filter(filter)
                .boxed(),
            Format::Json => tracing_subscriber::fmt::layer()
                .json()
                .with_ansi(false)
                .with_current_span(false)
                .with_span_list(false)
                .with_writer(std::io::stderr)
                .with_filter(filter)
                .boxed(),
        })
    }

    /// Sets the global subscriber: the log layer alone.
    ///
    /// # Errors
    ///
    /// As [`Config::layer`]; [`Error::AlreadySet`].
    pub fn install(&self) -> Result<(), Error> {
        Registry::default()
            .with(self.layer()?)
            .try_init()
            .map_err(Error::AlreadySet)
    }

    /// Sets the global subscriber: the log layer and the layers of `telemetry` (none without one).
    ///
    /// # Errors
    ///
    /// As [`Config::install`].
    #[cfg(feature = "otel")]
    pub fn install_with(
        &self,
        telemetry: Option<&crate::telemetry::Telemetry>,
    ) -> Result<(), Error> {
        // Never an `Option` of a layer: `None` enables every callsite, `claij::content` included.
        let otel = crate::telemetry::layer(telemetry);
        Registry::default()
            .with(self.layer()?)
            .with(otel)
            .try_init()
            .map_err(Error::AlreadySet)
    }
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
