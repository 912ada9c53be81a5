//! The filter directives and the human line.

use tracing::Level;

use super::{Fields, Filters, directives, line};
use crate::args::Global;

#[track_caller]
fn check(verbose: u8, quiet: bool, rust_log: Option<&str>, expected: &str) {
    let global = Global {
        verbose,
        quiet,
        ..Global::default()
    };
    let filters = Filters {
        rust_log: rust_log.map(str::to_owned),
        extra: Vec::new(),
    };
    assert_eq!(directives(&global, &filters), expected);
}

#[test]
fn the_flags_choose_the_level_and_rust_log_overrides_them() {
    let off = "claij::metrics=off,claij::content=off";
    let worker = "rmcp::transport::worker=off";
    check(0, false, None, &format!("warn,claij=warn,{worker},{off}"));
    check(1, false, None, &format!("warn,claij=debug,{off}"));
    check(2, false, None, &format!("warn,claij=trace,{off}"));
    check(5, false, None, &format!("warn,claij=trace,{off}"));
    check(0, true, None, &format!("error,claij=error,{worker},{off}"));
    check(1, false, Some("info"), &format!("info,{off}"));
    check(
        0,
        true,
        Some(" claij_mcp=debug "),
        &format!("claij_mcp=debug,{off}"),
    );
    // Named in RUST_LOG, the metric and content events are log lines too.
    check(
        0,
        false,
        Some("warn,claij::metrics=info"),
        "warn,claij::metrics=info,claij::content=off",
    );
    check(
        0,
        false,
        Some("claij::content=trace"),
        "claij::content=trace,claij::metrics=off",
    );
}

#[test]
fn extra_directives_come_last() {
    let filters = Filters {
        rust_log: None,
        extra: vec!["claij_mcp::server_log=trace".to_owned()],
    };
    assert!(
        directives(&Global::default(), &filters).ends_with(",claij_mcp::server_log=trace"),
        "{}",
        directives(&Global::default(), &filters)
    );
}

#[test]
fn a_line_is_one_line_whatever_its_values_hold() {
    let fields = Fields {
        message: "reply repaired".to_owned(),
        rest: vec![
            ("attempt", "2".to_owned()),
            ("error", "first\nsecond\r\n\u{1b}[31mred".to_owned()),
        ],
    };
    let plain = line(
        Level::WARN,
        "claij_interceptors::pipeline",
        &["llm.ask", "llm.call"],
        &fields,
        false,
    );
    assert_eq!(
        plain,
        " WARN claij_interceptors::pipeline: llm.ask: llm.call: reply repaired attempt=2 \
         error=first\\nsecond\\r\\n\\u{1b}[31mred\n"
    );
    let coloured = line(Level::ERROR, "claij", &[], &fields, true);
    assert!(
        coloured.starts_with("\x1b[31mERROR\x1b[0m "),
        "{coloured:?}"
    );
    assert_eq!(coloured.matches('\n').count(), 1, "{coloured:?}");
    // The only escapes are the format's own: a value's was escaped.
    assert!(!coloured.contains("\u{1b}[31mred"), "{coloured:?}");
}

#[cfg(not(feature = "otel"))]
#[test]
fn an_endpoint_without_the_otel_feature_names_the_feature() {
    let global = Global {
        otlp_endpoint: Some("http://127.0.0.1:4318".to_owned()),
        ..Global::default()
    };
    let Err(e) = super::install(&global, &Filters::default()) else {
        panic!("an endpoint without the otel feature was accepted");
    };
    assert!(e.to_string().contains("the `otel` feature"), "{e}");
}

/// What the subscriber `install` builds enables, without telemetry.
#[track_caller]
fn enabled(global: &Global, rust_log: Option<&str>, probe: impl FnOnce() -> bool) -> bool {
    use tracing_subscriber::layer::SubscriberExt as _;
    let filters = Filters {
        rust_log: rust_log.map(str::to_owned),
        extra: Vec::new(),
    };
    let log = super::log_layer(global, &filters).unwrap();
    let registry = tracing_subscriber::Registry::default().with(log);
    #[cfg(feature = "otel")]
    let registry = registry.with(claij::telemetry::layer(None));
    tracing::subscriber::with_default(registry, probe)
}

#[test]
fn content_and_metric_events_are_off_unless_rust_log_names_them() {
    let content = || tracing::enabled!(target: "claij::content", Level::TRACE);
    let metrics = || tracing::enabled!(target: "claij::metrics", Level::INFO);
    let verbose = Global {
        verbose: 2,
        ..Global::default()
    };
    assert!(!enabled(&Global::default(), None, content));
    assert!(!enabled(&verbose, None, content));
    assert!(!enabled(&verbose, None, metrics));
    assert!(!enabled(&Global::default(), Some("trace"), content));
    assert!(!enabled(&Global::default(), Some("trace"), metrics));
    assert!(enabled(
        &Global::default(),
        Some("claij::content=trace"),
        content
    ));
    assert!(enabled(
        &Global::default(),
        Some("claij::metrics=info"),
        metrics
    ));
}

#[test]
fn the_level_reaches_claij_crates_only() {
    let debug = || tracing::enabled!(target: "claij_interceptors::pipeline", Level::DEBUG);
    let warn = || tracing::enabled!(target: "claij_interceptors::pipeline", Level::WARN);
    let other = || tracing::enabled!(target: "hyper::proto", Level::DEBUG);
    let verbose = Global {
        verbose: 1,
        ..Global::default()
    };
    let quiet = Global {
        quiet: true,
        ..Global::default()
    };
    assert!(enabled(&Global::default(), None, warn));
    assert!(!enabled(&Global::default(), None, debug));
    assert!(enabled(&verbose, None, debug));
    assert!(!enabled(&verbose, None, other));
    assert!(!enabled(&quiet, None, warn));
}

/// The exporter's errors in the flags' words (the library names an endpoint given in code
/// `endpoint`), and `--otlp-endpoint` over the endpoint variables.
#[cfg(feature = "otel")]
#[test]
fn telemetry_errors_name_the_flags_and_the_flag_wins_over_the_variables() {
    use std::collections::HashMap;
    let vars = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let config = |endpoint: Option<&str>, capture: bool, pairs: &[(&str, &str)]| {
        let global = Global {
            otlp_endpoint: endpoint.map(str::to_owned),
            otel_capture_content: capture,
            ..Global::default()
        };
        let vars = vars(pairs);
        super::telemetry_config(&global, |name| vars.get(name).cloned()).map_err(super::flag_error)
    };
    let error =
        |endpoint, capture, pairs| config(endpoint, capture, pairs).unwrap_err().to_string();
    assert_eq!(
        error(Some("localhost:4318"), false, &[]),
        "--otlp-endpoint: `localhost:4318` is not an http:// or https:// URL"
    );
    // Credentials in a URL never reach the message.
    assert_eq!(
        error(
            Some("ftp://user:hunter2secret@collector.example/"),
            false,
            &[]
        ),
        "--otlp-endpoint: `ftp://***@collector.example/` is not an http:// or https:// URL"
    );
    // A variable's error names the variable.
    assert_eq!(
        error(None, false, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url")]),
        "OTEL_EXPORTER_OTLP_ENDPOINT: `not a url` is not a URL: relative URL without a base"
    );
    // The flag wins over every endpoint variable (a broken one included); `none` still turns a
    // signal off.
    let flag = config(
        Some("http://flag:4318"),
        false,
        &[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://traces:9999/custom",
            ),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ],
    )
    .unwrap();
    assert_eq!(flag.traces_endpoint(), Some("http://flag:4318/v1/traces"));
    assert_eq!(flag.metrics_endpoint(), None);
}
