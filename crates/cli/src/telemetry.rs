//! OpenTelemetry export (feature `otel`): the spans and metric events the libraries emit through
//! `tracing`, sent to a collector over OTLP/HTTP (protobuf).
//!
//! [`Settings`] says where and how ([`Settings::from_env`]: `--otlp-endpoint`, else the standard
//! `OTEL_EXPORTER_OTLP_*` variables; no endpoint, no exporter). [`Telemetry::install`] builds a tracer
//! provider with a batch span processor (a bounded queue, exports on its own thread) and a meter
//! provider with a periodic reader; [`layer`] (of an installed telemetry, else a layer that takes
//! nothing: never an `Option` of a layer, which would enable every callsite) joins the log subscriber:
//! tracing-opentelemetry's trace layer (spans become OpenTelemetry spans: `otel.name`, `otel.kind`,
//! `otel.status_code` and every other field an attribute) and its `MetricsLayer` (events at target
//! `claij::metrics` with `histogram.*` / `monotonic_counter.*` fields become instruments, given
//! the semantic conventions' units and bucket bounds by a view).
//! [`Telemetry::shutdown`] flushes at exit, waiting at most the export timeout.
//!
//! A collector that is down or refuses never fails or slows a command: exports happen off the
//! caller's thread, a full queue drops spans, and the first failed export is one warning (target
//! `claij::telemetry`), with the endpoint and error redacted; later failures are silent. Header values
//! (`OTEL_EXPORTER_OTLP_HEADERS`: often a token) appear in no log line, error or `Debug`.

use std::collections::HashMap;
use std::fmt;
use std::io::Read as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
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
pub(crate) const METRICS_TARGET: &str = "claij::metrics";
/// Prompt and reply content: spans record it only when this target is enabled at TRACE, which the
/// trace layer does only with `--otel-capture-content`.
pub(crate) const CONTENT_TARGET: &str = "claij::content";
/// The exporter's own warning.
const TELEMETRY_TARGET: &str = "claij::telemetry";

/// Spans the batch processor keeps waiting for export; past it, new spans are dropped.
pub(crate) const DEFAULT_QUEUE_SIZE: usize = 2048;
/// The variable that sets the queue size (a positive integer); `OTEL_BSP_MAX_QUEUE_SIZE` when unset.
pub(crate) const QUEUE_VAR: &str = "CLAIJ_OTEL_QUEUE";
/// One export request's timeout, and the longest `shutdown` waits for the last flush.
pub(crate) const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(3);
/// The service name when `OTEL_SERVICE_NAME` is unset.
pub(crate) const DEFAULT_SERVICE_NAME: &str = "claij";
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

/// Where and how to export. Build it with [`Settings::from_env`]; `Debug` shows header names only.
#[derive(Clone)]
pub(crate) struct Settings {
    /// Where spans go (the full URL, e.g. `http://127.0.0.1:4318/v1/traces`); `None`: no spans exported.
    pub traces_endpoint: Option<String>,
    /// Where metrics go (`…/v1/metrics`); `None`: no metrics exported.
    pub metrics_endpoint: Option<String>,
    /// Headers sent with every export (`OTEL_EXPORTER_OTLP_HEADERS`): values are secrets.
    pub headers: Vec<(String, String)>,
    /// The resource's `service.name` (`OTEL_SERVICE_NAME`, default `claij`).
    pub service_name: String,
    /// `--otel-capture-content`: prompts and replies as span attributes (`gen_ai.input.messages`,
    /// `gen_ai.output.messages`).
    pub capture_content: bool,
    /// The batch span processor's queue (`CLAIJ_OTEL_QUEUE`, else `OTEL_BSP_MAX_QUEUE_SIZE`, default
    /// 2048 spans); a batch is at most 512 of them (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
    pub queue_size: usize,
    /// One export's timeout and the bound on the flush at exit (`OTEL_EXPORTER_OTLP_TIMEOUT` in
    /// milliseconds, default 3000).
    pub export_timeout: Duration,
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
/// flushed by [`Telemetry::shutdown`].
pub(crate) struct Telemetry {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    capture_content: bool,
    shutdown_timeout: Duration,
    health: Arc<ExportHealth>,
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

impl Settings {
    /// Reads the standard variables: `--otlp-endpoint` (`endpoint`, a base URL: traces go to
    /// `URL/v1/traces`, metrics to `URL/v1/metrics`) else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
    /// `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` (used as they are) else `OTEL_EXPORTER_OTLP_ENDPOINT` (a
    /// base URL); `OTEL_TRACES_EXPORTER=none` / `OTEL_METRICS_EXPORTER=none` turn a signal off;
    /// `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`, values percent-decoded), `OTEL_SERVICE_NAME`,
    /// `OTEL_EXPORTER_OTLP_TIMEOUT` (ms), `CLAIJ_OTEL_QUEUE`; `OTEL_EXPORTER_OTLP_PROTOCOL` (and its
    /// per-signal forms) may only say `http/protobuf`.
    ///
    /// # Errors
    ///
    /// An endpoint that is not an `http`/`https` URL, a malformed header entry (by position, never its
    /// value), a timeout or queue size that is not a positive integer, a protocol other than
    /// `http/protobuf`: each names its flag or variable.
    pub(crate) fn from_env(endpoint: Option<&str>, capture_content: bool) -> Result<Self> {
        Self::resolve(endpoint, capture_content, |name| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.trim().is_empty())
        })
    }

    /// [`Settings::from_env`] over any source of variables.
    pub(crate) fn resolve(
        endpoint: Option<&str>,
        capture_content: bool,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let signal = |path: &str, own_var: &str, exporter_var: &str| -> Result<Option<String>> {
            if env(exporter_var).is_some_and(|value| value.trim().eq_ignore_ascii_case("none")) {
                return Ok(None);
            }
            if let Some(base) = endpoint {
                return check_url("--otlp-endpoint", base).map(|base| Some(join(&base, path)));
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
        let traces_endpoint = signal(
            "v1/traces",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_TRACES_EXPORTER",
        )?;
        let metrics_endpoint = signal(
            "v1/metrics",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "OTEL_METRICS_EXPORTER",
        )?;
        // Not ignored: content goes nowhere without spans exported.
        if capture_content && traces_endpoint.is_none() {
            bail!(
                "--otel-capture-content records prompts and replies in exported spans, and no spans are exported: add --otlp-endpoint URL (or set OTEL_EXPORTER_OTLP_ENDPOINT)"
            );
        }
        for var in [
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        ] {
            if let Some(protocol) = env(var)
                && protocol.trim() != "http/protobuf"
            {
                bail!(
                    "{var}: `{}` is not supported: claij exports OTLP over http/protobuf only",
                    protocol.trim()
                );
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
            headers,
            service_name,
            capture_content,
            queue_size,
            export_timeout,
        })
    }

    /// Whether anything is exported.
    pub(crate) fn is_enabled(&self) -> bool {
        self.traces_endpoint.is_some() || self.metrics_endpoint.is_some()
    }
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("Settings")
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
    /// Builds the OTLP/HTTP exporters `settings` asks for; `Ok(None)` when it names no endpoint.
    /// Nothing is sent yet: spans queue until the batch processor's next export (every 5 s, or
    /// when 512 are waiting) or [`Telemetry::shutdown`].
    ///
    /// # Errors
    ///
    /// The HTTP client or an exporter cannot be built (the message names the signal, redacted).
    pub(crate) fn install(settings: &Settings) -> Result<Option<Self>> {
        if !settings.is_enabled() {
            return Ok(None);
        }
        let health = Arc::new(ExportHealth::new(settings, Box::new(warn_export_failure)));
        Self::build(settings, health).map(Some)
    }

    /// The OTLP/HTTP exporters of `settings`, reporting to `health`.
    fn build(settings: &Settings, health: Arc<ExportHealth>) -> Result<Self> {
        let client = BlockingHttp::new(settings.export_timeout)?;
        let headers: HashMap<String, String> = settings.headers.iter().cloned().collect();
        let span_exporter = match &settings.traces_endpoint {
            Some(url) => Some(
                opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_http_client(client.clone())
                    .with_endpoint(url.clone())
                    .with_timeout(settings.export_timeout)
                    .with_headers(headers.clone())
                    .build()
                    .map_err(|e| health.error("traces", &e.to_string()))?,
            ),
            None => None,
        };
        let metric_exporter = match &settings.metrics_endpoint {
            Some(url) => Some(
                opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_protocol(Protocol::HttpBinary)
                    .with_http_client(client)
                    .with_endpoint(url.clone())
                    .with_timeout(settings.export_timeout)
                    .with_headers(headers)
                    .with_temporality(Temporality::Cumulative)
                    .build()
                    .map_err(|e| health.error("metrics", &e.to_string()))?,
            ),
            None => None,
        };
        Ok(Self::with_exporters(
            settings,
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
    pub(crate) fn layer<S>(&self) -> Box<dyn Layer<S> + Send + Sync + 'static>
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
    pub(crate) fn shutdown(self) {
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
        settings: &Settings,
        span_exporter: Option<T>,
        metric_exporter: Option<M>,
        health: Arc<ExportHealth>,
    ) -> Self
    where
        T: SpanExporter + 'static,
        M: PushMetricExporter,
    {
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .build();
        let tracer_provider = span_exporter.map(|exporter| {
            let exporter = Watched {
                inner: exporter,
                signal: "traces",
                endpoint: settings
                    .traces_endpoint
                    .as_deref()
                    .map(redact::redact_url)
                    .unwrap_or_default(),
                health: health.clone(),
            };
            let config = BatchConfigBuilder::default()
                .with_max_queue_size(settings.queue_size)
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
                endpoint: settings
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
            capture_content: settings.capture_content,
            shutdown_timeout: settings.export_timeout,
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
    fn new(settings: &Settings, report: Box<dyn Fn(&ExportFailure) + Send + Sync>) -> Self {
        Self {
            warned: AtomicBool::new(false),
            secrets: settings
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
    fn error(&self, signal: &str, message: &str) -> anyhow::Error {
        anyhow::anyhow!("OpenTelemetry {signal} exporter: {}", self.redact(message))
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
    fn new(timeout: Duration) -> Result<Self> {
        let built = std::thread::spawn(move || {
            reqwest::blocking::Client::builder()
                .timeout(timeout)
                .build()
        })
        .join()
        .map_err(|_| anyhow::anyhow!("OpenTelemetry exporter: building the HTTP client panicked"))?
        .context("OpenTelemetry exporter: building the HTTP client")?;
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
pub(crate) fn layer<S>(telemetry: Option<&Telemetry>) -> Box<dyn Layer<S> + Send + Sync + 'static>
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
fn check_url(what: &str, value: &str) -> Result<String> {
    let trimmed = value.trim();
    match reqwest::Url::parse(trimmed) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {
            Ok(trimmed.to_owned())
        }
        Ok(_) => bail!(
            "{what}: `{}` is not an http:// or https:// URL",
            redact::redact_url(trimmed)
        ),
        Err(e) => bail!(
            "{what}: `{}` is not a URL: {e}",
            redact::redact_url(trimmed)
        ),
    }
}

/// A signal's URL under a base endpoint (`http://host:4318` + `v1/traces`).
fn join(base: &str, path: &str) -> String {
    format!("{}/{path}", base.trim_end_matches('/'))
}

/// `OTEL_EXPORTER_OTLP_HEADERS`: `name=value` entries separated by commas, values percent-decoded.
fn parse_headers(text: &str) -> Result<Vec<(String, String)>> {
    let mut headers = Vec::new();
    for (index, entry) in text.split(',').enumerate() {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        let Some((name, value)) = entry.split_once('=') else {
            bail!(
                "OTEL_EXPORTER_OTLP_HEADERS: entry {} is not name=value",
                index + 1
            );
        };
        let name = name.trim();
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        {
            bail!(
                "OTEL_EXPORTER_OTLP_HEADERS: entry {} has no valid header name",
                index + 1
            );
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
fn positive(var: &str, text: &str) -> Result<usize> {
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => bail!("{var}: `{}` is not a positive integer", text.trim()),
    }
}

#[cfg(test)]
mod tests;
