//! OpenTelemetry export (feature `otel`): the spans and metric events claij's crates emit through
//! `tracing`, sent to a collector over OTLP/HTTP (protobuf).
//!
//! A [`Config`] says where and how: read from the standard `OTEL_EXPORTER_OTLP_*` variables by
//! [`Config::from_env`] (the one place this module reads the environment), or built in code
//! ([`Config::default`] exports nothing; [`Config::with_endpoint`] and the other `with_*` methods
//! set the rest). [`Telemetry::install`] builds a tracer provider with a batch span processor (a
//! bounded queue, exports on its own thread) and a meter provider with a periodic reader;
//! [`layer`] (of an installed telemetry, else a layer that takes nothing: never an `Option` of a
//! layer, which would enable every callsite) joins the application's subscriber:
//! tracing-opentelemetry's trace layer (spans become OpenTelemetry spans: `otel.name`, `otel.kind`,
//! `otel.status_code` and every other field an attribute) and its `MetricsLayer` (events at target
//! `claij::metrics` with `histogram.*` / `monotonic_counter.*` fields become instruments, given
//! the semantic conventions' units and bucket bounds by a view).
//! [`Telemetry::shutdown`] flushes at exit, waiting at most the export timeout.
//!
//! No process-wide state: the providers belong to the [`Telemetry`] value and its layers, and this
//! module never sets OpenTelemetry's global tracer or meter provider (nor installs a subscriber:
//! that is the application's). A collector that is down or refuses never fails or slows the
//! caller: exports happen off the caller's thread, a full queue drops spans, and the first failed
//! export is one warning (target `claij::telemetry`), with the endpoint and error redacted; later
//! failures are silent. Header values (`OTEL_EXPORTER_OTLP_HEADERS`: often a token) appear in no
//! log line, error or `Debug`.
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt as _;
//!
//! # fn main() -> Result<(), claij::telemetry::Error> {
//! // In code: both signals to a collector (here one nobody runs), no prompts or replies in spans.
//! let config = claij::telemetry::Config::default()
//!     .with_endpoint("http://127.0.0.1:9")?
//!     .with_service_name("my-agent");
//! assert_eq!(config.traces_endpoint(), Some("http://127.0.0.1:9/v1/traces"));
//! // Or from the standard variables: `Config::from_env()?` (`OTEL_EXPORTER_OTLP_ENDPOINT`...).
//! let telemetry = claij::telemetry::Telemetry::install(&config)?;
//! // Join the layer to your own subscriber (`set_global_default` in an application).
//! let subscriber = tracing_subscriber::registry()
//!     .with(claij::telemetry::layer(telemetry.as_ref()));
//! tracing::subscriber::with_default(subscriber, || {
//!     tracing::info_span!(target: "claij::example", "work").in_scope(|| {});
//! });
//! // Flushes at exit (here the export fails: one warning, within the export timeout).
//! if let Some(telemetry) = telemetry {
//!     telemetry.shutdown();
//! }
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::io::Read as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{
    Aggregation, Instrument, PeriodicReader, SdkMeterProvider, Stream, Temporality,
};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
};
use tracing::{Level, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::registry::LookupSpan;

use claij_backends::redact;

/// Spans' and events' targets that are claij's own (crates `claij_*`, targets `claij::*`).
const CLAIJ_TARGET_PREFIX: &str = "claij";
/// Metric events, for the `MetricsLayer` only (never span events).
pub const METRICS_TARGET: &str = "claij::metrics";
/// Prompt and reply content: spans record it only when this target is enabled at TRACE, which the
/// trace layer does only with [`Config::with_capture_content`].
pub const CONTENT_TARGET: &str = "claij::content";
/// The exporter's own warning.
const TELEMETRY_TARGET: &str = "claij::telemetry";

/// Spans the batch processor keeps waiting for export; past it, new spans are dropped.
pub const DEFAULT_QUEUE_SIZE: usize = 2048;
/// The variable that sets the queue size (a positive integer); `OTEL_BSP_MAX_QUEUE_SIZE` when unset.
pub const QUEUE_VAR: &str = "CLAIJ_OTEL_QUEUE";
/// One export request's timeout, and the longest `shutdown` waits for the last flush.
pub const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(3);
/// The service name when `OTEL_SERVICE_NAME` is unset.
pub const DEFAULT_SERVICE_NAME: &str = "claij";
/// The name an endpoint given in code ([`Config::with_endpoint`]) has in errors.
pub const ENDPOINT_SETTING: &str = "endpoint";
/// The bucket bounds the GenAI semantic conventions advise for `gen_ai.client.token.usage`.
const TOKEN_BUCKETS: [f64; 14] = [
    1.0,
    4.0,
    16.0,
    64.0,
    256.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
    67_108_864.0,
];
/// The bucket bounds the GenAI semantic conventions advise for `gen_ai.client.operation.duration`
/// (seconds).
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// A collector's reply is a small protobuf; a larger body is cut here.
const MAX_RESPONSE_BYTES: u64 = 1024 * 1024;

/// A telemetry setting that cannot be used; each names the variable (or, for an endpoint given in
/// code, [`ENDPOINT_SETTING`]) it came from, never a header's value.
///
/// ```
/// use claij::telemetry::{Config, ErrorKind};
///
/// let error = Config::default().with_endpoint("localhost:4318").unwrap_err();
/// assert_eq!(error.kind(), ErrorKind::Endpoint);
/// assert!(error.is_config());
/// assert_eq!(error.to_string(), "endpoint: `localhost:4318` is not an http:// or https:// URL");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An endpoint that is not an `http`/`https` URL.
    #[error("{setting}: `{url}` {problem}")]
    Endpoint {
        /// The variable it came from, or [`ENDPOINT_SETTING`].
        setting: &'static str,
        /// The URL, credentials removed.
        url: String,
        /// What is wrong with it (`is not an http:// or https:// URL`, `is not a URL: ...`).
        problem: String,
    },
    /// A variable whose value cannot be used (a queue size, a timeout, a protocol, a header entry).
    #[error("{variable}: {problem}")]
    Variable {
        /// The variable (or the setting given in code).
        variable: &'static str,
        /// What is wrong (a header entry by position, never its value).
        problem: String,
    },
    /// Content capture asked for, and no span is exported: the content would go nowhere.
    #[error(
        "content capture records prompts and replies in exported spans, and no spans are exported: set an endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT)"
    )]
    ContentWithoutTraces,
    /// The HTTP client or an exporter cannot be built.
    #[error("OpenTelemetry {what}: {message}")]
    Exporter {
        /// `traces exporter`, `metrics exporter` or `exporter: building the HTTP client`.
        what: String,
        /// Why, redacted.
        message: String,
    },
}

/// What kind of failure an [`Error`] is, to match on without its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Endpoint`].
    Endpoint,
    /// [`Error::Variable`].
    Variable,
    /// [`Error::ContentWithoutTraces`].
    ContentWithoutTraces,
    /// [`Error::Exporter`].
    Exporter,
}

impl Error {
    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Endpoint { .. } => ErrorKind::Endpoint,
            Error::Variable { .. } => ErrorKind::Variable,
            Error::ContentWithoutTraces => ErrorKind::ContentWithoutTraces,
            Error::Exporter { .. } => ErrorKind::Exporter,
        }
    }

    /// Whether the settings are wrong (fix the variable or the code), as opposed to an exporter
    /// that cannot be built.
    pub fn is_config(&self) -> bool {
        match self.kind() {
            ErrorKind::Endpoint | ErrorKind::Variable | ErrorKind::ContentWithoutTraces => true,
            ErrorKind::Exporter => false,
        }
    }
}

/// Where and how to export: [`Config::from_env`] or built in code from [`Config::default`] (which
/// exports nothing). `Debug` shows header names only.
#[derive(Clone)]
pub struct Config {
    /// Where spans go (the full URL, e.g. `http://127.0.0.1:4318/v1/traces`); `None`: no spans exported.
    traces_endpoint: Option<String>,
    /// Where metrics go (`…/v1/metrics`); `None`: no metrics exported.
    metrics_endpoint: Option<String>,
    /// `OTEL_TRACES_EXPORTER=none` / [`Config::without_traces`]: no endpoint turns spans on.
    traces_off: bool,
    /// `OTEL_METRICS_EXPORTER=none` / [`Config::without_metrics`].
    metrics_off: bool,
    /// Headers sent with every export (`OTEL_EXPORTER_OTLP_HEADERS`): values are secrets.
    headers: Vec<(String, String)>,
    /// The resource's `service.name` (`OTEL_SERVICE_NAME`, default `claij`).
    service_name: String,
    /// Prompts and replies as span attributes (`gen_ai.input.messages`, `gen_ai.output.messages`).
    capture_content: bool,
    /// The batch span processor's queue (`CLAIJ_OTEL_QUEUE`, else `OTEL_BSP_MAX_QUEUE_SIZE`, default
    /// 2048 spans); a batch is at most 512 of them (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
    queue_size: usize,
    /// One export's timeout and the bound on the flush at exit (`OTEL_EXPORTER_OTLP_TIMEOUT` in
    /// milliseconds, default 3000).
    export_timeout: Duration,
}

/// How much longer than the export timeout [`Telemetry::shutdown`] waits for the providers' own
/// bounded shutdowns to return, before it gives up on them.
const FLUSH_BACKSTOP: Duration = Duration::from_secs(2);

/// The failure of a flush that did not finish within `timeout`.
fn unfinished(timeout: Duration) -> String {
    format!(
        "the last export did not finish within {}",
        humantime::format_duration(timeout)
    )
}

/// The exporter: built by [`Telemetry::install`], joined to the subscriber by [`Telemetry::layer`],
/// flushed by [`Telemetry::shutdown`]. It owns its providers (none is made global).
pub struct Telemetry {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    capture_content: bool,
    shutdown_timeout: Duration,
    health: Arc<ExportHealth>,
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry")
            .field("traces", &self.tracer_provider.is_some())
            .field("metrics", &self.meter_provider.is_some())
            .field("capture_content", &self.capture_content)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .finish_non_exhaustive()
    }
}

/// Says once that exports fail; tests replace the warning with a counter.
struct ExportHealth {
    warned: AtomicBool,
    /// Header values, removed from every message.
    secrets: Vec<String>,
    report: Box<dyn Fn(&ExportFailure) + Send + Sync>,
}

/// The first failure, as reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExportFailure {
    /// `traces`, `metrics` or `flush`.
    pub signal: &'static str,
    /// The endpoint, credentials and query removed.
    pub endpoint: String,
    /// What failed, redacted.
    pub error: String,
}

/// An exporter that tells [`ExportHealth`] when an export fails.
#[derive(Debug)]
struct Watched<E> {
    inner: E,
    signal: &'static str,
    endpoint: String,
    health: Arc<ExportHealth>,
}

/// reqwest's blocking client (the workspace's 0.12, rustls + ring) as the OTLP exporter's HTTP client:
/// the batch processor and the periodic reader export on their own threads, outside any runtime.
#[derive(Debug, Clone)]
struct BlockingHttp(reqwest::blocking::Client);

impl Default for Config {
    /// Nothing exported; the defaults for the rest (service `claij`, a 2048-span queue, 3 s
    /// export timeout, no content).
    fn default() -> Self {
        Self {
            traces_endpoint: None,
            metrics_endpoint: None,
            traces_off: false,
            metrics_off: false,
            headers: Vec::new(),
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            capture_content: false,
            queue_size: DEFAULT_QUEUE_SIZE,
            export_timeout: DEFAULT_EXPORT_TIMEOUT,
        }
    }
}

impl Config {
    /// Reads the standard variables: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
    /// `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` (used as they are) else `OTEL_EXPORTER_OTLP_ENDPOINT` (a
    /// base URL: traces go to `URL/v1/traces`, metrics to `URL/v1/metrics`);
    /// `OTEL_TRACES_EXPORTER=none` / `OTEL_METRICS_EXPORTER=none` turn a signal off (also for an
    /// endpoint set later with [`Config::with_endpoint`]); `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`,
    /// values percent-decoded), `OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_TIMEOUT` (ms),
    /// `CLAIJ_OTEL_QUEUE`; `OTEL_EXPORTER_OTLP_PROTOCOL` (and its per-signal forms) may only say
    /// `http/protobuf`. Empty variables count as unset.
    ///
    /// # Errors
    ///
    /// An endpoint that is not an `http`/`https` URL, a malformed header entry (by position, never its
    /// value), a timeout or queue size that is not a positive integer, a protocol other than
    /// `http/protobuf`: each names its variable.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_vars(|name| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.trim().is_empty())
        })
    }

    /// [`Config::from_env`] over any source of variables (`vars` answers a name with its value).
    ///
    /// # Errors
    ///
    /// As [`Config::from_env`].
    pub fn from_vars(vars: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let env = |name: &str| vars(name).filter(|value| !value.trim().is_empty());
        let off = |exporter_var: &str| {
            env(exporter_var).is_some_and(|value| value.trim().eq_ignore_ascii_case("none"))
        };
        let signal =
            |path: &str, own_var: &'static str, off: bool| -> Result<Option<String>, Error> {
                if off {
                    return Ok(None);
                }
                if let Some(url) = env(own_var) {
                    return check_url(own_var, &url).map(Some);
                }
                match env("OTEL_EXPORTER_OTLP_ENDPOINT") {
                    Some(base) => check_url("OTEL_EXPORTER_OTLP_ENDPOINT", &base)
                        .map(|base| Some(join(&base, path))),
                    None => Ok(None),
                }
            };
        let traces_off = off("OTEL_TRACES_EXPORTER");
        let metrics_off = off("OTEL_METRICS_EXPORTER");
        let traces_endpoint = signal(
            "v1/traces",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            traces_off,
        )?;
        let metrics_endpoint = signal(
            "v1/metrics",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            metrics_off,
        )?;
        for var in [
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        ] {
            if let Some(protocol) = env(var)
                && protocol.trim() != "http/protobuf"
            {
                return Err(Error::Variable {
                    variable: var,
                    problem: format!(
                        "`{}` is not supported: claij exports OTLP over http/protobuf only",
                        protocol.trim()
                    ),
                });
            }
        }
        let headers = match env("OTEL_EXPORTER_OTLP_HEADERS") {
            Some(text) => parse_headers(&text)?,
            None => Vec::new(),
        };
        let service_name =
            env("OTEL_SERVICE_NAME").unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
        // claij's variable, else the SDK's standard one.
        let queue = [QUEUE_VAR, "OTEL_BSP_MAX_QUEUE_SIZE"]
            .into_iter()
            .find_map(|var| env(var).map(|text| (var, text)));
        let queue_size = match queue {
            Some((var, text)) => positive(var, &text)?,
            None => DEFAULT_QUEUE_SIZE,
        };
        let export_timeout = match env("OTEL_EXPORTER_OTLP_TIMEOUT") {
            Some(text) => {
                Duration::from_millis(positive("OTEL_EXPORTER_OTLP_TIMEOUT", &text)? as u64)
            }
            None => DEFAULT_EXPORT_TIMEOUT,
        };
        Ok(Self {
            traces_endpoint,
            metrics_endpoint,
            traces_off,
            metrics_off,
            headers,
            service_name,
            capture_content: false,
            queue_size,
            export_timeout,
        })
    }

    /// Both signals to the collector at `base` (`URL/v1/traces`, `URL/v1/metrics`), replacing
    /// any endpoint set before; a signal turned off ([`Config::without_traces`],
    /// `OTEL_*_EXPORTER=none`) stays off.
    ///
    /// # Errors
    ///
    /// `base` is not an `http`/`https` URL ([`Error::Endpoint`], named [`ENDPOINT_SETTING`]).
    pub fn with_endpoint(mut self, base: &str) -> Result<Self, Error> {
        let base = check_url(ENDPOINT_SETTING, base)?;
        self.traces_endpoint = (!self.traces_off).then(|| join(&base, "v1/traces"));
        self.metrics_endpoint = (!self.metrics_off).then(|| join(&base, "v1/metrics"));
        Ok(self)
    }

    /// No spans exported, whatever endpoint is set.
    pub fn without_traces(mut self) -> Self {
        self.traces_off = true;
        self.traces_endpoint = None;
        self
    }

    /// No metrics exported, whatever endpoint is set.
    pub fn without_metrics(mut self) -> Self {
        self.metrics_off = true;
        self.metrics_endpoint = None;
        self
    }

    /// Sends the header `name: value` with every export (a secret value is fine: it is never
    /// shown).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers
            .push((name.into().to_ascii_lowercase(), value.into()));
        self
    }

    /// The resource's `service.name`.
    pub fn with_service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// Records prompts and replies in the spans (`gen_ai.input.messages`,
    /// `gen_ai.output.messages`): [`Telemetry::install`] refuses it when no span is exported.
    pub fn with_capture_content(mut self, capture: bool) -> Self {
        self.capture_content = capture;
        self
    }

    /// The batch span processor's queue, in spans (at least 1; default [`DEFAULT_QUEUE_SIZE`]).
    pub fn with_queue_size(mut self, spans: usize) -> Self {
        self.queue_size = spans.max(1);
        self
    }

    /// One export's timeout, also the bound on the flush at [`Telemetry::shutdown`] (default
    /// [`DEFAULT_EXPORT_TIMEOUT`]).
    pub fn with_export_timeout(mut self, timeout: Duration) -> Self {
        self.export_timeout = timeout;
        self
    }

    /// Where spans go, when they are exported.
    pub fn traces_endpoint(&self) -> Option<&str> {
        self.traces_endpoint.as_deref()
    }

    /// Where metrics go, when they are exported.
    pub fn metrics_endpoint(&self) -> Option<&str> {
        self.metrics_endpoint.as_deref()
    }

    /// Whether anything is exported.
    pub fn is_enabled(&self) -> bool {
        self.traces_endpoint.is_some() || self.metrics_endpoint.is_some()
    }

    /// The settings that hold only together: content capture needs exported spans.
    fn check(&self) -> Result<(), Error> {
        // Not ignored: content goes nowhere without spans exported.
        if self.capture_content && self.traces_endpoint.is_none() {
            return Err(Error::ContentWithoutTraces);
        }
        Ok(())
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("Config")
            .field(
                "traces_endpoint",
                &self.traces_endpoint.as_deref().map(redact::redact_url),
            )
            .field(
                "metrics_endpoint",
                &self.metrics_endpoint.as_deref().map(redact::redact_url),
            )
            .field("header_names", &header_names)
            .field("service_name", &self.service_name)
            .field("capture_content", &self.capture_content)
            .field("queue_size", &self.queue_size)
            .field("export_timeout", &self.export_timeout)
            .finish()
    }
}

impl Telemetry {
    /// Builds the OTLP/HTTP exporters `config` asks for; `Ok(None)` when it names no endpoint.
    /// Nothing is sent yet: spans queue until the batch processor's next export (every 5 s, or
    /// when 512 are waiting) or [`Telemetry::shutdown`]. No global provider is set.
    ///
    /// # Errors
    ///
    /// Content capture without exported spans ([`Error::ContentWithoutTraces`]); the HTTP client or
    /// an exporter cannot be built (the message names the signal, redacted).
    pub fn install(config: &Config) -> Result<Option<Self>, Error> {
        config.check()?;
        if !config.is_enabled() {
            return Ok(None);
        }
        let health = Arc::new(ExportHealth::new(config, Box::new(warn_export_failure)));
        Self::build(config, health).map(Some)
    }

    /// The OTLP/HTTP exporters of `config`, reporting to `health`.
    fn build(config: &Config, health: Arc<ExportHealth>) -> Result<Self, Error> {
        let client = BlockingHttp::new(config.export_timeout)?;
        let headers: HashMap<String, String> = config.headers.iter().cloned().collect();
        let span_exporter = match &config.traces_endpoint {
            Some(url) => Some(
                opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_http_client(client.clone())
                    .with_endpoint(url.clone())
                    .with_timeout(config.export_timeout)
                    .with_headers(headers.clone())
                    .build()
                    .map_err(|e| health.error("traces", &e.to_string()))?,
            ),
            None => None,
        };
        let metric_exporter = match &config.metrics_endpoint {
            Some(url) => Some(
                opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_http_client(client)
                    .with_endpoint(url.clone())
                    .with_timeout(config.export_timeout)
                    .with_headers(headers)
                    .with_temporality(Temporality::Cumulative)
                    .build()
                    .map_err(|e| health.error("metrics", &e.to_string()))?,
            ),
            None => None,
        };
        Ok(Self::with_exporters(
            config,
            span_exporter,
            metric_exporter,
            health,
        ))
    }

    /// The trace layer and the metrics layer, each with its own filter, for the global registry (no
    /// global filter may sit above them: the log layer's level must not hide the spans).
    ///
    /// The trace layer takes claij's spans at DEBUG and above and its events at INFO and above (they
    /// become span events), never `claij::metrics`, and `claij::content` only with
    /// `capture_content`; the metrics layer takes `claij::metrics` only.
    pub fn layer<S>(&self) -> Box<dyn Layer<S> + Send + Sync + 'static>
    where
        S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        let capture_content = self.capture_content;
        let traces = self.tracer_provider.as_ref().map(|provider| {
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("claij"))
                .with_threads(false)
                .with_tracked_inactivity(false)
                .with_filter(filter_fn(move |metadata| traced(metadata, capture_content)))
        });
        let metrics = self.meter_provider.as_ref().map(|provider| {
            tracing_opentelemetry::MetricsLayer::new(provider.clone())
                .with_filter(filter_fn(|metadata| metadata.target() == METRICS_TARGET))
        });
        // No `Option` layer: an absent one enables every callsite, `claij::content` included.
        match (traces, metrics) {
            (Some(traces), Some(metrics)) => traces.and_then(metrics).boxed(),
            (Some(traces), None) => traces.boxed(),
            (None, Some(metrics)) => metrics.boxed(),
            (None, None) => disabled(),
        }
    }

    /// Flushes what is queued and stops the exporters, waiting at most the export timeout: a
    /// collector that hangs costs the command that long, once. A flush that does not finish in time
    /// is the one warning (unless an export already failed): the providers' own bounded shutdowns
    /// say whether it finished (a batch still being exported when they give up is lost when the
    /// command exits, so their timeout is a failure, never silence), and a wait a little longer
    /// than theirs guards against an SDK that does not return.
    pub fn shutdown(self) {
        let Self {
            tracer_provider,
            meter_provider,
            shutdown_timeout,
            health,
            ..
        } = self;
        let (done, finished) = std::sync::mpsc::channel();
        let flush = std::thread::Builder::new()
            .name("claij-otel-flush".to_owned())
            .spawn(move || {
                // Both at once: the bound is for the whole flush, not per signal.
                let metrics = std::thread::spawn(move || {
                    meter_provider.map(|provider| provider.shutdown_with_timeout(shutdown_timeout))
                });
                let traces = tracer_provider
                    .map(|provider| provider.shutdown_with_timeout(shutdown_timeout));
                let metrics = metrics.join().ok().flatten();
                let _ = done.send([traces, metrics]);
            });
        if flush.is_err() {
            return;
        }
        let waited = shutdown_timeout + FLUSH_BACKSTOP;
        let error = match finished.recv_timeout(waited) {
            // The tracer provider wraps its processors' timeouts (`Shutdown errors: [Timeout(..)]`).
            Ok(results) => results
                .into_iter()
                .flatten()
                .find_map(Result::err)
                .map(|error| match error {
                    OTelSdkError::Timeout(_) => unfinished(shutdown_timeout),
                    other if other.to_string().contains("Timeout(") => unfinished(shutdown_timeout),
                    other => format!("the last export failed: {other}"),
                }),
            Err(_) => Some(unfinished(shutdown_timeout)),
        };
        if let Some(error) = error {
            health.failed(&ExportFailure {
                signal: "flush",
                endpoint: String::new(),
                error: health.redact(&error),
            });
        }
    }

    /// The providers over any exporters (tests: the SDK's in-memory ones).
    fn with_exporters<T, M>(
        config: &Config,
        span_exporter: Option<T>,
        metric_exporter: Option<M>,
        health: Arc<ExportHealth>,
    ) -> Self
    where
        T: SpanExporter + 'static,
        M: PushMetricExporter,
    {
        let resource = Resource::builder()
            .with_service_name(config.service_name.clone())
            .build();
        let tracer_provider = span_exporter.map(|exporter| {
            let exporter = Watched {
                inner: exporter,
                signal: "traces",
                endpoint: config
                    .traces_endpoint
                    .as_deref()
                    .map(redact::redact_url)
                    .unwrap_or_default(),
                health: health.clone(),
            };
            let config = BatchConfigBuilder::default()
                .with_max_queue_size(config.queue_size)
                .build();
            SdkTracerProvider::builder()
                .with_resource(resource.clone())
                .with_span_processor(BatchSpanProcessor::new(exporter, config))
                .build()
        });
        let meter_provider = metric_exporter.map(|exporter| {
            let exporter = Watched {
                inner: exporter,
                signal: "metrics",
                endpoint: config
                    .metrics_endpoint
                    .as_deref()
                    .map(redact::redact_url)
                    .unwrap_or_default(),
                health: health.clone(),
            };
            SdkMeterProvider::builder()
                .with_resource(resource)
                .with_reader(PeriodicReader::builder(exporter).build())
                .with_view(semantic_view)
                .build()
        });
        Self {
            tracer_provider,
            meter_provider,
            capture_content: config.capture_content,
            shutdown_timeout: config.export_timeout,
            health,
        }
    }
}

impl fmt::Debug for ExportHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExportHealth")
            .field("warned", &self.warned)
            .finish_non_exhaustive()
    }
}

impl ExportHealth {
    fn new(config: &Config, report: Box<dyn Fn(&ExportFailure) + Send + Sync>) -> Self {
        Self {
            warned: AtomicBool::new(false),
            secrets: config
                .headers
                .iter()
                .map(|(_, value)| value.clone())
                .collect(),
            report,
        }
    }

    /// Reports the first failure; the rest are dropped.
    fn failed(&self, failure: &ExportFailure) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            (self.report)(failure);
        }
    }

    /// `text` with URLs' credentials, known key forms and the header values removed.
    fn redact(&self, text: &str) -> String {
        let mut text = redact::redact_text(&redact::redact_urls_in(text)).into_owned();
        for secret in &self.secrets {
            text = redact::redact_secret(&text, secret).into_owned();
        }
        text
    }

    /// A build error for `signal`, redacted.
    fn error(&self, signal: &str, message: &str) -> Error {
        Error::Exporter {
            what: format!("{signal} exporter"),
            message: self.redact(message),
        }
    }
}

impl<E: SpanExporter> SpanExporter for Watched<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        self.check(&result);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: PushMetricExporter> PushMetricExporter for Watched<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        self.check(&result);
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

impl<E> Watched<E> {
    fn check(&self, result: &OTelSdkResult) {
        if let Err(error) = result {
            self.health.failed(&ExportFailure {
                signal: self.signal,
                endpoint: self.endpoint.clone(),
                error: self.health.redact(&error.to_string()),
            });
        }
    }
}

impl BlockingHttp {
    /// Built on a thread of its own: reqwest's blocking client starts (and later stops) a runtime,
    /// which must not happen inside another one.
    fn new(timeout: Duration) -> Result<Self, Error> {
        let built = std::thread::spawn(move || {
            reqwest::blocking::Client::builder()
                .timeout(timeout)
                .build()
        })
        .join()
        .map_err(|_| client_error("panicked".to_owned()))?
        .map_err(|e| client_error(e.to_string()))?;
        Ok(Self(built))
    }
}

#[async_trait::async_trait]
impl HttpClient for BlockingHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::blocking::Request::try_from(request)?;
        let response = self.0.execute(request)?;
        let mut reply = Response::builder().status(response.status());
        if let Some(headers) = reply.headers_mut() {
            headers.extend(
                response
                    .headers()
                    .iter()
                    .map(|(name, value)| (name.clone(), value.clone())),
            );
        }
        let mut body = Vec::new();
        response.take(MAX_RESPONSE_BYTES).read_to_end(&mut body)?;
        Ok(reply.body(Bytes::from(body))?)
    }
}

/// [`Telemetry::layer`] of an installed telemetry, else a layer that takes nothing. Join this to the
/// registry rather than an `Option` of a layer: `None` as a layer enables every callsite, so
/// `enabled!(target: "claij::content", TRACE)` would be true and spans would build their content.
pub fn layer<S>(telemetry: Option<&Telemetry>) -> Box<dyn Layer<S> + Send + Sync + 'static>
where
    S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
{
    telemetry.map_or_else(disabled, Telemetry::layer)
}

/// A layer that takes nothing (a filtered one, so it enables no callsite).
fn disabled<S>() -> Box<dyn Layer<S> + Send + Sync + 'static>
where
    S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
{
    tracing_subscriber::layer::Identity::new()
        .with_filter(filter_fn(|_| false))
        .boxed()
}

/// The units, descriptions and (for the GenAI histograms) bucket bounds the semantic conventions
/// give claij's instruments: `MetricsLayer` creates them from event fields, which say none of that.
fn semantic_view(instrument: &Instrument) -> Option<Stream> {
    let (unit, description, buckets): (&'static str, &'static str, Option<&[f64]>) =
        match instrument.name() {
            "gen_ai.client.token.usage" => (
                "{token}",
                "Number of input and output tokens used",
                Some(&TOKEN_BUCKETS),
            ),
            "gen_ai.client.operation.duration" => {
                ("s", "GenAI operation duration", Some(&DURATION_BUCKETS))
            }
            "claij.calls" => (
                "{call}",
                "Validation-retry loops run (one per call of a step), by first-try validity",
                None,
            ),
            "claij.retries" => ("{retry}", "Attempts after a call's first", None),
            _ => return None,
        };
    let stream = Stream::builder()
        .with_unit(unit)
        .with_description(description);
    let stream = match buckets {
        Some(buckets) => stream.with_aggregation(Aggregation::ExplicitBucketHistogram {
            boundaries: buckets.to_vec(),
            record_min_max: true,
        }),
        None => stream,
    };
    stream.build().ok()
}

/// Whether the trace layer takes a span, an event or an `enabled!` probe.
fn traced(metadata: &Metadata<'_>, capture_content: bool) -> bool {
    let target = metadata.target();
    if target == CONTENT_TARGET {
        return capture_content;
    }
    if target == METRICS_TARGET || !target.starts_with(CLAIJ_TARGET_PREFIX) {
        return false;
    }
    if metadata.is_span() {
        *metadata.level() <= Level::DEBUG
    } else {
        *metadata.level() <= Level::INFO
    }
}

/// The one warning of a run whose collector is down.
fn warn_export_failure(failure: &ExportFailure) {
    tracing::warn!(
        target: TELEMETRY_TARGET,
        signal = failure.signal,
        endpoint = %failure.endpoint,
        error = %failure.error,
        "OpenTelemetry export failed; this run's telemetry may be lost (further export errors are not reported)"
    );
}

/// `value` as an `http`/`https` URL, or an error naming `what` (the URL redacted).
fn check_url(what: &'static str, value: &str) -> Result<String, Error> {
    let trimmed = value.trim();
    let problem = match reqwest::Url::parse(trimmed) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {
            return Ok(trimmed.to_owned());
        }
        Ok(_) => "is not an http:// or https:// URL".to_owned(),
        Err(e) => format!("is not a URL: {e}"),
    };
    Err(Error::Endpoint {
        setting: what,
        url: redact::redact_url(trimmed),
        problem,
    })
}

/// The HTTP client cannot be built.
fn client_error(message: String) -> Error {
    Error::Exporter {
        what: "exporter: building the HTTP client".to_owned(),
        message,
    }
}

/// A signal's URL under a base endpoint (`http://host:4318` + `v1/traces`).
fn join(base: &str, path: &str) -> String {
    format!("{}/{path}", base.trim_end_matches('/'))
}

/// `OTEL_EXPORTER_OTLP_HEADERS`: `name=value` entries separated by commas, values percent-decoded.
fn parse_headers(text: &str) -> Result<Vec<(String, String)>, Error> {
    let mut headers = Vec::new();
    for (index, entry) in text.split(',').enumerate() {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        let Some((name, value)) = entry.split_once('=') else {
            return Err(header_error(format!(
                "entry {} is not name=value",
                index + 1
            )));
        };
        let name = name.trim();
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        {
            return Err(header_error(format!(
                "entry {} has no valid header name",
                index + 1
            )));
        }
        let value = value.trim();
        // `%XX` escapes decoded; a value with a malformed one is taken as written.
        let value =
            claij_schema::pointer::percent_decode(value).unwrap_or_else(|| value.to_owned());
        headers.push((name.to_ascii_lowercase(), value));
    }
    Ok(headers)
}

/// A positive integer from `var`, or an error naming it.
fn positive(var: &'static str, text: &str) -> Result<usize, Error> {
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Error::Variable {
            variable: var,
            problem: format!("`{}` is not a positive integer", text.trim()),
        }),
    }
}

/// A malformed `OTEL_EXPORTER_OTLP_HEADERS` entry, by position.
fn header_error(problem: String) -> Error {
    Error::Variable {
        variable: "OTEL_EXPORTER_OTLP_HEADERS",
        problem,
    }
}

#[cfg(test)]
mod tests;
