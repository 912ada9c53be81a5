//! Telemetry settings, the layers over in-memory exporters, and a collector that is down.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::InMemoryMetricExporter;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::trace::InMemorySpanExporter;
use tracing::Level;
use tracing_subscriber::Registry;
use tracing_subscriber::layer::SubscriberExt as _;

use super::*;

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| vars.get(name).cloned()
}

/// A configuration as an application with an endpoint option builds it: the variables (the endpoint
/// ones hidden when `endpoint` is given, which wins over them), then the endpoint, then content
/// capture, checked as [`Telemetry::install`] checks it.
fn resolve(
    endpoint: Option<&str>,
    capture_content: bool,
    vars: impl Fn(&str) -> Option<String>,
) -> Result<Config, Error> {
    let config = match endpoint {
        Some(endpoint) => {
            Config::from_vars(|name| vars(name).filter(|_| !name.ends_with("_ENDPOINT")))?
                .with_endpoint(endpoint)?
        }
        None => Config::from_vars(vars)?,
    };
    let config = config.with_capture_content(capture_content);
    config.check()?;
    Ok(config)
}

#[track_caller]
fn check_endpoints(
    flag: Option<&str>,
    vars: &[(&str, &str)],
    traces: Option<&str>,
    metrics: Option<&str>,
) {
    let settings = resolve(flag, false, env(vars)).unwrap();
    assert_eq!(settings.traces_endpoint.as_deref(), traces);
    assert_eq!(settings.metrics_endpoint.as_deref(), metrics);
    assert_eq!(settings.is_enabled(), traces.is_some() || metrics.is_some());
}

#[test]
fn endpoints_come_from_the_flag_else_the_standard_variables() {
    // No endpoint: no exporter at all.
    check_endpoints(None, &[], None, None);
    check_endpoints(
        Some("http://127.0.0.1:4318/"),
        &[],
        Some("http://127.0.0.1:4318/v1/traces"),
        Some("http://127.0.0.1:4318/v1/metrics"),
    );
    check_endpoints(
        None,
        &[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "https://collector.example:4318",
        )],
        Some("https://collector.example:4318/v1/traces"),
        Some("https://collector.example:4318/v1/metrics"),
    );
    // Per-signal variables are used as they are, and win over the base.
    check_endpoints(
        None,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://traces:9999/custom",
            ),
        ],
        Some("http://traces:9999/custom"),
        Some("http://base:4318/v1/metrics"),
    );
    check_endpoints(
        None,
        &[(
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "http://metrics:4318/v1/metrics",
        )],
        None,
        Some("http://metrics:4318/v1/metrics"),
    );
    // The flag wins over every variable.
    check_endpoints(
        Some("http://flag:4318"),
        &[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://traces:9999/custom",
        )],
        Some("http://flag:4318/v1/traces"),
        Some("http://flag:4318/v1/metrics"),
    );
    // `none` turns one signal off (a traces-only collector).
    check_endpoints(
        Some("http://flag:4318"),
        &[("OTEL_METRICS_EXPORTER", "none")],
        Some("http://flag:4318/v1/traces"),
        None,
    );
    check_endpoints(
        None,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ],
        None,
        Some("http://base:4318/v1/metrics"),
    );
}

#[test]
fn defaults_and_the_queue_and_timeout_variables() {
    let settings = resolve(Some("http://127.0.0.1:4318"), true, env(&[])).unwrap();
    assert_eq!(settings.queue_size, DEFAULT_QUEUE_SIZE);
    assert_eq!(settings.export_timeout, DEFAULT_EXPORT_TIMEOUT);
    assert_eq!(settings.service_name, "claij");
    assert!(settings.capture_content);
    assert!(settings.headers.is_empty());

    let settings = resolve(
        Some("http://127.0.0.1:4318"),
        false,
        env(&[
            ("CLAIJ_OTEL_QUEUE", "64"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "1500"),
            ("OTEL_SERVICE_NAME", "my-agent"),
        ]),
    )
    .unwrap();
    assert_eq!(settings.queue_size, 64);
    assert_eq!(settings.export_timeout, Duration::from_millis(1500));
    assert_eq!(settings.service_name, "my-agent");
    // The SDK's standard variable when claij's is unset; claij's first.
    let queue = |vars: &[(&str, &str)]| {
        resolve(Some("http://127.0.0.1:4318"), false, env(vars))
            .unwrap()
            .queue_size
    };
    assert_eq!(queue(&[("OTEL_BSP_MAX_QUEUE_SIZE", "32")]), 32);
    assert_eq!(
        queue(&[
            ("OTEL_BSP_MAX_QUEUE_SIZE", "32"),
            ("CLAIJ_OTEL_QUEUE", "64")
        ]),
        64
    );
    // The one protocol there is may be named.
    let settings = resolve(
        Some("http://127.0.0.1:4318"),
        false,
        env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]),
    );
    assert!(settings.is_ok());
}

#[track_caller]
fn check_error(flag: Option<&str>, vars: &[(&str, &str)], expected: &str) {
    let error = resolve(flag, false, env(vars)).unwrap_err().to_string();
    assert_eq!(error, expected);
}

#[test]
fn bad_settings_are_errors_that_name_their_source() {
    check_error(
        Some("localhost:4318"),
        &[],
        "endpoint: `localhost:4318` is not an http:// or https:// URL",
    );
    check_error(
        None,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url")],
        "OTEL_EXPORTER_OTLP_ENDPOINT: `not a url` is not a URL: relative URL without a base",
    );
    // Credentials in a URL never reach the message.
    check_error(
        Some("ftp://user:hunter2secret@collector.example/"),
        &[],
        "endpoint: `ftp://***@collector.example/` is not an http:// or https:// URL",
    );
    check_error(
        Some("http://127.0.0.1:4318"),
        &[("CLAIJ_OTEL_QUEUE", "0")],
        "CLAIJ_OTEL_QUEUE: `0` is not a positive integer",
    );
    check_error(
        Some("http://127.0.0.1:4318"),
        &[("OTEL_EXPORTER_OTLP_TIMEOUT", "3s")],
        "OTEL_EXPORTER_OTLP_TIMEOUT: `3s` is not a positive integer",
    );
    check_error(
        Some("http://127.0.0.1:4318"),
        &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
        "OTEL_EXPORTER_OTLP_PROTOCOL: `grpc` is not supported: claij exports OTLP over http/protobuf only",
    );
    // A malformed header says where, never what.
    check_error(
        Some("http://127.0.0.1:4318"),
        &[(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "x-tenant=a,Bearer sk-secret-value-1234",
        )],
        "OTEL_EXPORTER_OTLP_HEADERS: entry 2 is not name=value",
    );
    check_error(
        Some("http://127.0.0.1:4318"),
        &[("OTEL_EXPORTER_OTLP_HEADERS", "=sk-secret-value-1234")],
        "OTEL_EXPORTER_OTLP_HEADERS: entry 1 has no valid header name",
    );
}

#[test]
fn headers_are_parsed_decoded_and_never_shown() {
    let settings = resolve(
        Some("http://127.0.0.1:4318"),
        false,
        env(&[(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "Authorization=Bearer%20tok-abc123secret, x-tenant = acme ,",
        )]),
    )
    .unwrap();
    assert_eq!(
        settings.headers,
        vec![
            (
                "authorization".to_owned(),
                "Bearer tok-abc123secret".to_owned()
            ),
            ("x-tenant".to_owned(), "acme".to_owned()),
        ]
    );
    let debug = format!("{settings:?}");
    assert!(debug.contains("authorization"), "{debug}");
    assert!(!debug.contains("tok-abc123secret"), "{debug}");
    assert!(!debug.contains("acme"), "{debug}");
}

#[test]
fn no_endpoint_installs_nothing() {
    let settings = resolve(None, false, env(&[])).unwrap();
    assert!(Telemetry::install(&settings).unwrap().is_none());
}

/// The failures reported, in order.
type Reports = Arc<Mutex<Vec<ExportFailure>>>;

fn counting_health(settings: &Config) -> (Arc<ExportHealth>, Reports) {
    let reports: Reports = Arc::default();
    let sink = reports.clone();
    let health = ExportHealth::new(
        settings,
        Box::new(move |failure| sink.lock().unwrap().push(failure.clone())),
    );
    (Arc::new(health), reports)
}

/// A telemetry over the SDK's in-memory exporters.
fn in_memory(capture_content: bool) -> (Telemetry, InMemorySpanExporter, InMemoryMetricExporter) {
    let settings = resolve(Some("http://127.0.0.1:4318"), capture_content, env(&[])).unwrap();
    let spans = InMemorySpanExporter::default();
    let metrics = InMemoryMetricExporter::default();
    let (health, _) = counting_health(&settings);
    let telemetry = Telemetry::with_exporters(
        &settings,
        Some(spans.clone()),
        Some(metrics.clone()),
        health,
    );
    (telemetry, spans, metrics)
}

/// Runs `emit` under a registry with the telemetry's layer, then flushes the spans.
fn record(telemetry: &Telemetry, emit: impl FnOnce()) {
    let subscriber = Registry::default().with(telemetry.layer());
    tracing::subscriber::with_default(subscriber, emit);
    telemetry
        .tracer_provider
        .as_ref()
        .unwrap()
        .force_flush()
        .unwrap();
}

/// What a library does: the contract's `llm.ask > llm.call` with GenAI fields, content only when
/// `claij::content` is enabled, a metric event, a failed attempt.
fn emit_a_call() {
    let ask = tracing::info_span!(
        target: "claij_interceptors::pipeline",
        "llm.ask",
        otel.name = "ask gpt-test",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = "openai",
        gen_ai.request.model = "gpt-test",
        claij.turn = 1i64,
    );
    let _ask = ask.enter();
    let call = tracing::info_span!(
        target: "claij_interceptors::pipeline",
        "llm.call",
        otel.name = "chat gpt-test",
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = "gpt-test",
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.input.messages = tracing::field::Empty,
        claij.attempt = 1i64,
        claij.verdict = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    );
    {
        let _call = call.enter();
        if tracing::enabled!(target: "claij::content", Level::TRACE) {
            call.record(
                "gen_ai.input.messages",
                r#"[{"role":"user","parts":[{"type":"text","content":"hi"}]}]"#,
            );
        }
        // Integers as i64: tracing-opentelemetry makes a u64 span field a string.
        call.record("gen_ai.usage.input_tokens", 12i64);
        call.record("claij.verdict", "error");
        call.record("otel.status_code", "ERROR");
        call.record("otel.status_description", "backend error: 500");
        tracing::event!(
            target: "claij::metrics",
            Level::INFO,
            gen_ai.token.type = "input",
            histogram.gen_ai.client.token.usage = 12u64,
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = "openai",
            gen_ai.request.model = "gpt-test",
            "token usage"
        );
        tracing::event!(
            target: "claij::metrics",
            Level::INFO,
            gen_ai.operation.name = "chat",
            histogram.gen_ai.client.operation.duration = 0.25f64,
            gen_ai.provider.name = "openai",
            gen_ai.request.model = "gpt-test",
            "operation duration"
        );
        tracing::event!(
            target: "claij::metrics",
            Level::INFO,
            claij.first_try_valid = false,
            monotonic_counter.claij.calls = 1u64,
            gen_ai.request.model = "gpt-test",
            "call"
        );
    }
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

#[test]
fn spans_carry_the_otel_name_kind_status_and_gen_ai_attributes() {
    let (telemetry, spans, _) = in_memory(false);
    record(&telemetry, emit_a_call);
    let finished = spans.get_finished_spans().unwrap();
    let names: Vec<&str> = finished.iter().map(|span| span.name.as_ref()).collect();
    assert_eq!(names, ["chat gpt-test", "ask gpt-test"]);
    let (call, ask) = (&finished[0], &finished[1]);
    assert_eq!(call.parent_span_id, ask.span_context.span_id());
    assert_eq!(call.span_context.trace_id(), ask.span_context.trace_id());
    assert_eq!(call.span_kind, SpanKind::Client);
    assert_eq!(ask.span_kind, SpanKind::Internal);
    assert_eq!(
        call.status,
        Status::Error {
            description: "backend error: 500".into()
        }
    );
    assert_eq!(
        attribute(&call.attributes, "gen_ai.operation.name"),
        Some(&Value::from("chat"))
    );
    assert_eq!(
        attribute(&call.attributes, "gen_ai.request.model"),
        Some(&Value::from("gpt-test"))
    );
    assert_eq!(
        attribute(&call.attributes, "gen_ai.usage.input_tokens"),
        Some(&Value::I64(12))
    );
    assert_eq!(
        attribute(&call.attributes, "claij.attempt"),
        Some(&Value::I64(1))
    );
    assert_eq!(
        attribute(&call.attributes, "claij.verdict"),
        Some(&Value::from("error"))
    );
    assert_eq!(
        attribute(&ask.attributes, "gen_ai.provider.name"),
        Some(&Value::from("openai"))
    );
    // Content is not captured by default, and metric events are not span events.
    assert_eq!(attribute(&call.attributes, "gen_ai.input.messages"), None);
    assert!(call.events.is_empty(), "{:?}", call.events);
    telemetry.shutdown();
}

#[test]
fn content_stays_out_with_one_signal_off() {
    // Traces without metrics (a traces-only collector): no layer of the telemetry's may enable
    // `claij::content` (an absent one used to enable everything).
    let settings = resolve(Some("http://127.0.0.1:4318"), false, env(&[])).unwrap();
    let spans = InMemorySpanExporter::default();
    let (health, _) = counting_health(&settings);
    let telemetry = Telemetry::with_exporters(
        &settings,
        Some(spans.clone()),
        None::<InMemoryMetricExporter>,
        health,
    );
    record(&telemetry, emit_a_call);
    let finished = spans.get_finished_spans().unwrap();
    let call = finished
        .iter()
        .find(|span| span.name == "chat gpt-test")
        .unwrap();
    assert_eq!(attribute(&call.attributes, "gen_ai.input.messages"), None);
    assert!(call.events.is_empty(), "{:?}", call.events);
    telemetry.shutdown();
}

/// A log layer as the CLI's: filtered, `claij::content` and `claij::metrics` off.
fn log_layer() -> impl Layer<Registry> + Send + Sync {
    tracing_subscriber::layer::Identity::new().with_filter(filter_fn(|metadata| {
        ![CONTENT_TARGET, METRICS_TARGET].contains(&metadata.target())
    }))
}

#[test]
fn no_telemetry_is_a_layer_that_enables_nothing() {
    // What the CLI joins without an endpoint, beside its log layer.
    let subscriber = Registry::default().with(log_layer()).with(layer(None));
    tracing::subscriber::with_default(subscriber, || {
        assert!(tracing::enabled!(target: "claij::other", Level::INFO));
        assert!(!tracing::enabled!(target: "claij::content", Level::TRACE));
        assert!(!tracing::enabled!(target: "claij::metrics", Level::INFO));
    });
    // Why not `None`: as a layer it enables every callsite, and spans would build their content
    // for nobody.
    let subscriber = Registry::default()
        .with(log_layer())
        .with(None::<Box<dyn Layer<_> + Send + Sync>>);
    tracing::subscriber::with_default(subscriber, || {
        assert!(tracing::enabled!(target: "claij::content", Level::TRACE));
    });
}

#[test]
fn content_is_captured_only_on_opt_in() {
    let (telemetry, spans, _) = in_memory(true);
    record(&telemetry, emit_a_call);
    let finished = spans.get_finished_spans().unwrap();
    let call = finished
        .iter()
        .find(|span| span.name == "chat gpt-test")
        .unwrap();
    assert_eq!(
        attribute(&call.attributes, "gen_ai.input.messages"),
        Some(&Value::from(
            r#"[{"role":"user","parts":[{"type":"text","content":"hi"}]}]"#
        ))
    );
    telemetry.shutdown();
}

#[test]
fn metric_events_become_the_gen_ai_histograms_and_claij_counters() {
    let (telemetry, _, metrics) = in_memory(false);
    record(&telemetry, emit_a_call);
    telemetry
        .meter_provider
        .as_ref()
        .unwrap()
        .force_flush()
        .unwrap();
    let exported = metrics.get_finished_metrics().unwrap();
    let mut seen = Vec::new();
    for resource in &exported {
        for scope in resource.scope_metrics() {
            for metric in scope.metrics() {
                seen.push(metric.name().to_owned());
                match (metric.name(), metric.data()) {
                    (
                        "gen_ai.client.token.usage",
                        AggregatedMetrics::U64(MetricData::Histogram(histogram)),
                    ) => {
                        assert_eq!(metric.unit(), "{token}");
                        let point = histogram.data_points().next().unwrap();
                        assert_eq!((point.count(), point.sum()), (1, 12));
                        assert_eq!(point.bounds().collect::<Vec<_>>(), TOKEN_BUCKETS);
                        let attributes: Vec<KeyValue> = point.attributes().cloned().collect();
                        assert_eq!(
                            attribute(&attributes, "gen_ai.token.type"),
                            Some(&Value::from("input"))
                        );
                        assert_eq!(
                            attribute(&attributes, "gen_ai.request.model"),
                            Some(&Value::from("gpt-test"))
                        );
                    }
                    (
                        "gen_ai.client.operation.duration",
                        AggregatedMetrics::F64(MetricData::Histogram(histogram)),
                    ) => {
                        assert_eq!(metric.unit(), "s");
                        let point = histogram.data_points().next().unwrap();
                        assert_eq!((point.count(), point.sum()), (1, 0.25));
                        // Seconds: the conventions' bounds, not the SDK's default (0 to 10000).
                        assert_eq!(point.bounds().collect::<Vec<_>>(), DURATION_BUCKETS);
                    }
                    ("claij.calls", AggregatedMetrics::U64(MetricData::Sum(sum))) => {
                        assert_eq!(metric.unit(), "{call}");
                        assert!(sum.is_monotonic());
                        let point = sum.data_points().next().unwrap();
                        assert_eq!(point.value(), 1);
                        let attributes: Vec<KeyValue> = point.attributes().cloned().collect();
                        assert_eq!(
                            attribute(&attributes, "claij.first_try_valid"),
                            Some(&Value::Bool(false))
                        );
                    }
                    (name, data) => panic!("unexpected metric {name}: {data:?}"),
                }
            }
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen,
        [
            "claij.calls",
            "gen_ai.client.operation.duration",
            "gen_ai.client.token.usage"
        ]
    );
    telemetry.shutdown();
}

#[test]
fn a_collector_that_is_down_is_one_warning_and_shutdown_returns() {
    // A loopback port nobody listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut settings = resolve(
        Some(&format!("http://127.0.0.1:{port}")),
        false,
        env(&[(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer tok-abc123secret",
        )]),
    )
    .unwrap();
    // Long enough that the refused connection, not the flush bound, ends the export.
    settings.export_timeout = Duration::from_secs(60);
    let (health, reports) = counting_health(&settings);
    let telemetry = Telemetry::build(&settings, health).unwrap();
    let subscriber = Registry::default().with(telemetry.layer());
    tracing::subscriber::with_default(subscriber, || {
        for _ in 0..3 {
            emit_a_call();
        }
    });
    telemetry.shutdown();
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let report = &reports[0];
    assert!(["traces", "metrics"].contains(&report.signal), "{report:?}");
    assert!(
        report
            .endpoint
            .starts_with(&format!("http://127.0.0.1:{port}/v1/")),
        "{report:?}"
    );
    assert!(!report.error.is_empty());
    assert!(!report.error.contains("tok-abc123secret"), "{report:?}");
}

/// A span exporter whose exports wait until the test lets them go: a collector slower than the
/// export timeout (a loaded machine).
#[derive(Debug, Clone)]
struct Held(Arc<Mutex<std::sync::mpsc::Receiver<()>>>);

impl SpanExporter for Held {
    async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
        let _ = self.0.lock().unwrap().recv();
        Ok(())
    }
}

/// The last batch still being exported when the flush bound passes is lost when the command
/// exits: the providers' bounded shutdown says so, and that is the one warning, never silence.
#[test]
fn a_flush_that_does_not_finish_in_time_is_the_one_warning() {
    let mut settings = resolve(Some("http://127.0.0.1:4318"), false, env(&[])).unwrap();
    settings.export_timeout = Duration::from_millis(100);
    let (health, reports) = counting_health(&settings);
    let (release, held) = std::sync::mpsc::channel::<()>();
    let telemetry = Telemetry::with_exporters(
        &settings,
        Some(Held(Arc::new(Mutex::new(held)))),
        None::<InMemoryMetricExporter>,
        health,
    );
    let subscriber = Registry::default().with(telemetry.layer());
    tracing::subscriber::with_default(subscriber, emit_a_call);
    telemetry.shutdown();
    let reports = reports.lock().unwrap().clone();
    drop(release);
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].signal, "flush", "{reports:?}");
    assert!(
        reports[0]
            .error
            .contains("the last export did not finish within 100ms"),
        "{reports:?}"
    );
}

/// Content capture with no span exported is refused, not ignored.
#[test]
fn content_capture_without_an_exported_span_is_refused() {
    for vars in [
        &[][..],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ][..],
    ] {
        let error = resolve(None, true, env(vars)).unwrap_err().to_string();
        assert!(
            error.starts_with("content capture records prompts and replies in exported spans"),
            "{error}"
        );
    }
    assert!(resolve(None, false, env(&[])).is_ok());
    let settings = resolve(
        None,
        true,
        env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318")]),
    )
    .unwrap();
    assert!(settings.capture_content);
}

/// Built in code, a configuration is the one the variables make; a signal turned off stays off
/// when an endpoint is set later.
#[test]
fn a_config_built_in_code_is_the_one_the_variables_make() {
    let from_vars = Config::from_vars(env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "Authorization=Bearer%20tok-abc123secret",
        ),
        ("OTEL_SERVICE_NAME", "svc"),
        ("CLAIJ_OTEL_QUEUE", "8"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "250"),
    ]))
    .unwrap();
    let in_code = Config::default()
        .with_endpoint("http://127.0.0.1:4318")
        .unwrap()
        .with_header("Authorization", "Bearer tok-abc123secret")
        .with_service_name("svc")
        .with_queue_size(8)
        .with_export_timeout(Duration::from_millis(250));
    assert_eq!(format!("{from_vars:?}"), format!("{in_code:?}"));
    assert_eq!(from_vars.headers, in_code.headers);
    assert!(!format!("{in_code:?}").contains("tok-abc123secret"));

    let traces_only = Config::from_vars(env(&[("OTEL_METRICS_EXPORTER", "none")]))
        .unwrap()
        .with_endpoint("http://h:4318")
        .unwrap();
    assert_eq!(
        traces_only.traces_endpoint(),
        Some("http://h:4318/v1/traces")
    );
    assert_eq!(traces_only.metrics_endpoint(), None);
    let metrics_only = Config::default()
        .without_traces()
        .with_endpoint("http://h:4318")
        .unwrap();
    assert_eq!(metrics_only.traces_endpoint(), None);
    assert_eq!(
        metrics_only.metrics_endpoint(),
        Some("http://h:4318/v1/metrics")
    );
    assert!(!Config::default().is_enabled());
    assert!(Telemetry::install(&Config::default()).unwrap().is_none());
}

/// Each error's kind, and which are the settings' fault.
#[test]
fn errors_have_a_kind_and_say_whether_the_settings_are_wrong() {
    let endpoint = Config::default().with_endpoint("nope").unwrap_err();
    assert_eq!(endpoint.kind(), ErrorKind::Endpoint);
    let variable = Config::from_vars(env(&[("CLAIJ_OTEL_QUEUE", "x")])).unwrap_err();
    assert_eq!(variable.kind(), ErrorKind::Variable);
    let content = Telemetry::install(&Config::default().with_capture_content(true)).unwrap_err();
    assert_eq!(content.kind(), ErrorKind::ContentWithoutTraces);
    for error in [&endpoint, &variable, &content] {
        assert!(error.is_config(), "{error}");
    }
    let exporter = client_error("no TLS".to_owned());
    assert_eq!(exporter.kind(), ErrorKind::Exporter);
    assert!(!exporter.is_config());
    assert_eq!(
        exporter.to_string(),
        "OpenTelemetry exporter: building the HTTP client: no TLS"
    );
}
