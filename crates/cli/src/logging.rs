//! The log subscriber every command installs first ([`claij::logging`]): `-v`/`-vv`/`-q` or
//! `RUST_LOG` choose what is logged, `--log-format` how, always on stderr (stdout is the command's
//! result). With the `otel` feature the OpenTelemetry layers of [`claij::telemetry`] join the same
//! subscriber, configured by the flags and the standard variables.

use anyhow::Result;
use claij::logging::{Config, Format};

use crate::args::{Global, LogFormat};

/// What `install` set up; [`Logging::shutdown`] flushes it, on every exit path.
pub(crate) struct Logging {
    #[cfg(feature = "otel")]
    telemetry: Option<claij::telemetry::Telemetry>,
}

/// The log configuration of the flags, `RUST_LOG`, the terminal, and `extra`: directives a
/// command's own flags add (the MCP servers' log messages with `--mcp-log-level`).
pub(crate) fn config(global: &Global, extra: Vec<String>) -> Config {
    let format = match global.log_format {
        LogFormat::Human => Format::Human,
        LogFormat::Json => Format::Json,
    };
    Config {
        verbose: global.verbose,
        quiet: global.quiet,
        format,
        extra,
        ..Config::from_env()
    }
}

/// Installs the global subscriber: the log layer on stderr and, with the `otel` feature and an
/// endpoint, the OpenTelemetry layers.
///
/// # Errors
///
/// An invalid `RUST_LOG` (it names the variable); `--otlp-endpoint` in a build without the `otel`
/// feature; the exporter's settings (an invalid endpoint or header).
pub(crate) fn install(global: &Global, config: &Config) -> Result<Logging> {
    // A bad filter is said first, before the exporter's settings are looked at.
    config.layer()?;
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
        config.install()?;
        Ok(Logging {})
    }
    #[cfg(feature = "otel")]
    {
        let telemetry_config = telemetry_config(global, |name| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.trim().is_empty())
        })
        .map_err(flag_error)?;
        let telemetry =
            claij::telemetry::Telemetry::install(&telemetry_config).map_err(flag_error)?;
        config.install_with(telemetry.as_ref())?;
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

impl Logging {
    /// Flushes what the exporter holds, within its bound (nothing to do without one).
    pub(crate) fn shutdown(self) {
        #[cfg(feature = "otel")]
        if let Some(telemetry) = self.telemetry {
            telemetry.shutdown();
        }
    }
}

#[cfg(test)]
mod tests;
