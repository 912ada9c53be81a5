//! The telemetry flags: refused without the `otel` feature, in their own words with it.

use crate::args::Global;

#[cfg(not(feature = "otel"))]
#[test]
fn an_endpoint_without_the_otel_feature_names_the_feature() {
    let global = Global {
        otlp_endpoint: Some("http://127.0.0.1:4318".to_owned()),
        ..Global::default()
    };
    let Err(e) = super::install(&global, &claij::logging::Config::default()) else {
        panic!("an endpoint without the otel feature was accepted");
    };
    assert!(e.to_string().contains("the `otel` feature"), "{e}");
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
