//! The filter directives and the human line.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use tracing::Level;

use super::{Config, Fields, line};

#[track_caller]
fn check(verbose: u8, quiet: bool, rust_log: Option<&str>, expected: &str) {
    let config = Config {
        verbose,
        quiet,
        rust_log: rust_log.map(str::to_owned),
        ..Config::default()
    };
    assert_eq!(config.directives(), expected);
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
    let config = Config {
        extra: vec!["claij_mcp::server_log=trace".to_owned()],
        ..Config::default()
    };
    assert!(
        config
            .directives()
            .ends_with(",claij_mcp::server_log=trace"),
        "{}",
        config.directives()
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

/// What the subscriber [`Config::install`] builds enables, without telemetry.
#[track_caller]
fn enabled(config: &Config, rust_log: Option<&str>, probe: impl FnOnce() -> bool) -> bool {
    use tracing_subscriber::layer::SubscriberExt as _;
    let config = Config {
        rust_log: rust_log.map(str::to_owned),
        ..config.clone()
    };
    let registry = tracing_subscriber::Registry::default().with(config.layer().unwrap());
    #[cfg(feature = "otel")]
    let registry = registry.with(crate::telemetry::layer(None));
    tracing::subscriber::with_default(registry, probe)
}

#[test]
fn content_and_metric_events_are_off_unless_rust_log_names_them() {
    let content = || tracing::enabled!(target: "claij::content", Level::TRACE);
    let metrics = || tracing::enabled!(target: "claij::metrics", Level::INFO);
    let verbose = Config {
        verbose: 2,
        ..Config::default()
    };
    assert!(!enabled(&Config::default(), None, content));
    assert!(!enabled(&verbose, None, content));
    assert!(!enabled(&verbose, None, metrics));
    assert!(!enabled(&Config::default(), Some("trace"), content));
    assert!(!enabled(&Config::default(), Some("trace"), metrics));
    assert!(enabled(
        &Config::default(),
        Some("claij::content=trace"),
        content
    ));
    assert!(enabled(
        &Config::default(),
        Some("claij::metrics=info"),
        metrics
    ));
}

#[test]
fn the_level_reaches_claij_crates_only() {
    let debug = || tracing::enabled!(target: "claij_interceptors::pipeline", Level::DEBUG);
    let warn = || tracing::enabled!(target: "claij_interceptors::pipeline", Level::WARN);
    let other = || tracing::enabled!(target: "hyper::proto", Level::DEBUG);
    let verbose = Config {
        verbose: 1,
        ..Config::default()
    };
    let quiet = Config {
        quiet: true,
        ..Config::default()
    };
    assert!(enabled(&Config::default(), None, warn));
    assert!(!enabled(&Config::default(), None, debug));
    assert!(enabled(&verbose, None, debug));
    assert!(!enabled(&verbose, None, other));
    assert!(!enabled(&quiet, None, warn));
}

#[test]
fn a_bad_filter_names_where_it_came_from() {
    let from_env = Config {
        rust_log: Some("claij=loud".to_owned()),
        ..Config::default()
    };
    let Err(e) = from_env.layer() else {
        panic!("an invalid RUST_LOG was accepted");
    };
    assert!(e.to_string().starts_with("RUST_LOG: "), "{e}");
    let extra = Config {
        extra: vec!["claij=loud".to_owned()],
        ..Config::default()
    };
    let Err(e) = extra.layer() else {
        panic!("an invalid directive was accepted");
    };
    assert!(
        e.to_string().starts_with("log filter `warn,claij=warn,"),
        "{e}"
    );
}
