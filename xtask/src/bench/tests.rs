//! Tests for the bench summary: parsing criterion's files and formatting times and throughputs.

use super::*;

#[track_caller]
fn check_time(ns: f64, expected: &str) {
    assert_eq!(format_time(ns), expected);
}

#[track_caller]
fn check_throughput(throughput: &str, mean_ns: f64, expected: &str) {
    let throughput = parse_throughput(&serde_json::from_str(throughput).unwrap()).unwrap();
    assert_eq!(format_throughput(throughput, mean_ns), expected);
}

#[test]
fn times_scale_their_unit() {
    check_time(1.5, "1.500 ns");
    check_time(999.0, "999.0 ns");
    check_time(1_234.5, "1.234 µs");
    check_time(56_780.0, "56.78 µs");
    check_time(2_500_000.0, "2.500 ms");
    check_time(3_000_000_000.0, "3.000 s");
}

#[test]
fn throughputs_scale_their_unit() {
    check_throughput(r#"{"Bytes": 1024}"#, 1_000.0, "976.6 MiB/s");
    check_throughput(r#"{"Bytes": 100}"#, 1e9, "100.0 B/s");
    check_throughput(r#"{"BytesDecimal": 1000}"#, 1_000.0, "1.000 GB/s");
    check_throughput(r#"{"Elements": 10}"#, 1_000.0, "10.00 Melem/s");
    check_throughput(r#"{"Bits": 8}"#, 1e9, "8.000 b/s");
    check_throughput(
        r#"{"ElementsAndBytes": {"elements": 2, "bytes": 2048}}"#,
        1e6,
        "2.000 Kelem/s, 1.953 MiB/s",
    );
    assert_eq!(parse_throughput(&serde_json::json!(null)), None);
    assert_eq!(parse_throughput(&serde_json::json!({"Furlongs": 1})), None);
}

#[test]
fn estimates_from_criterion_files() {
    let estimates = r#"{"mean": {"confidence_interval": {"confidence_level": 0.95,
        "lower_bound": 1.0, "upper_bound": 3.0}, "point_estimate": 2.0, "standard_error": 0.1},
        "median": {"point_estimate": 2.0}}"#;
    let benchmark = r#"{"group_id": "compose", "function_id": "base", "value_str": null,
        "throughput": {"Bytes": 64}, "full_id": "compose/base", "directory_name": "compose/base",
        "title": "compose/base"}"#;
    let estimate = parse_estimate(estimates, Some(benchmark), "fallback").unwrap();
    assert_eq!(
        estimate,
        Estimate {
            id: "compose/base".into(),
            mean_ns: 2.0,
            throughput: Some(Throughput::Bytes(64.0)),
        }
    );
    let without_benchmark = parse_estimate(estimates, None, "group/fn").unwrap();
    assert_eq!(
        (without_benchmark.id.as_str(), without_benchmark.throughput),
        ("group/fn", None)
    );
    assert_eq!(parse_estimate("{}", Some(benchmark), "x"), None);
    assert_eq!(parse_estimate("not json", None, "x"), None);
}

#[test]
fn missing_criterion_dir_yields_nothing() {
    let dir = std::env::temp_dir().join(format!("xtask-no-criterion-{}", std::process::id()));
    assert_eq!(read_estimates(&dir, None), Vec::new());
}

#[test]
fn table_aligns_columns() {
    let estimates = [
        Estimate {
            id: "a".into(),
            mean_ns: 1_500.0,
            throughput: Some(Throughput::Elements(1.0)),
        },
        Estimate {
            id: "longer/id".into(),
            mean_ns: 20.0,
            throughput: None,
        },
    ];
    assert_eq!(
        table(&estimates),
        "\
benchmark      mean  throughput
a          1.500 µs  666.7 Kelem/s
longer/id  20.00 ns
"
    );
}

#[test]
fn goals_takes_no_other_argument() {
    let args = ["--goals".to_owned(), "validate/".to_owned()];
    assert_eq!(run(&args).unwrap(), ExitCode::from(2));
}

#[test]
fn the_local_bench_gets_a_claij_binary_for_the_fsm() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| std::ffi::OsString::from(v))
        }
    };
    let both = env(&[("CLAIJ_BENCH_FSM", "/a/claij"), ("CLAIJ_BIN", "/b/claij")]);
    assert_eq!(fsm_binary(true, both), FsmBinary::Inherited);
    let bin = env(&[("CLAIJ_BIN", "/b/claij")]);
    assert_eq!(fsm_binary(false, bin), FsmBinary::Given("/b/claij".into()));
    assert_eq!(fsm_binary(true, env(&[])), FsmBinary::Build);
    assert_eq!(fsm_binary(false, env(&[])), FsmBinary::Skip);
}
