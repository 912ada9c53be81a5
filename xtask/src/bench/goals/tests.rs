//! Tests for the goals table: figures from fixture estimates and reports, met or not, missing and
//! broken sources, units, the machine line.

use std::time::Duration;

use super::*;
use crate::bench::Throughput;

const LOAD: &str = r#"{"machine": "2 cores, AMD EPYC", "rows": [
    {"in_flight": 64, "latency_ms": 200, "req_per_s": 318.5, "cpu_percent_of_one_core": 3.2, "cpu_ms_per_call": 0.1},
    {"in_flight": 256, "latency_ms": 200, "req_per_s": 1228.0, "cpu_percent_of_one_core": 14.0, "cpu_ms_per_call": 0.114},
    {"in_flight": 1024, "latency_ms": 200, "req_per_s": 1180.0, "cpu_percent_of_one_core": 16.5, "cpu_ms_per_call": 0.14},
    {"in_flight": 10000, "latency_ms": 200, "req_per_s": 11000.0, "share_of_ideal_percent": 22.0,
     "cpu_percent_of_one_core": 160.0, "cpu_ms_per_call": 0.075, "peak_rss_bytes": 395000000},
    {"http": "http2", "in_flight": 1024, "latency_ms": 200, "req_per_s": 5000.0,
     "share_of_ideal_percent": 97.6, "cpu_ms_per_call": 0.05, "peak_rss_bytes": 30000000},
    {"http": "http2", "in_flight": 10000, "latency_ms": 200, "req_per_s": 47800.0, "share_of_ideal_percent": 95.6,
     "cpu_percent_of_one_core": 80.0, "cpu_ms_per_call": 0.017, "peak_rss_bytes": 92000000}],
    "transport_floor": {"in_flight": 10000, "latency_ms": 200, "req_per_s": 48000.0, "peak_rss_bytes": 61000000},
    "cpu_ms_per_call_small": 0.041, "cpu_ms_per_call_big": 0.35, "cpu_ms_per_call_retry": 0.09,
    "cpu_ms_per_call_transport": 0.038, "cpu_ms_per_call_small_scheduler_placed": 0.07,
    "cpu_ms_per_call_transport_scheduler_placed": 0.055}"#;

const LOCAL: &str = r#"{"prefill_tok_s": 360.4, "decode_tok_s": 21.5, "prefill_tok_s_cached": 2100.0,
    "prefill_q8_tok_s": null, "prefill_f32_tok_s": 300.0, "threads": 2, "fsm_code_review_s": 31.2}"#;

fn estimate(id: &str, mean_ns: f64) -> Estimate {
    Estimate {
        id: id.to_owned(),
        mean_ns,
        throughput: None,
    }
}

fn report(name: &'static str, text: Option<&str>) -> Report {
    Report {
        name,
        state: text.map_or(ReportState::Missing, |t| ReportState::parse(t, false)),
    }
}

fn sources(estimates: &[(&str, f64)], load: Option<&str>, local: Option<&str>) -> Sources {
    Sources {
        estimates: estimates.iter().map(|(id, ns)| estimate(id, *ns)).collect(),
        stale_ids: HashSet::new(),
        load: report(LOAD_REPORT, load),
        local: report(LOCAL_REPORT, local),
        render: report(RENDER_REPORT, None),
        recall_at_k: report(RECALL_REPORT, None),
        machine: Machine {
            threads: 2,
            cores: Some(2),
            model: Some("AMD EPYC".to_owned()),
        },
    }
}

/// The row whose measure contains `measure`: its now, goal and met cells as rendered.
#[track_caller]
fn cells(sources: &Sources, measure: &str) -> (String, String, Met) {
    let rows = rows(sources);
    let found: Vec<_> = rows
        .iter()
        .filter(|(row, _)| row.measure.contains(measure))
        .collect();
    assert_eq!(found.len(), 1, "rows matching {measure:?}: {found:#?}");
    let (row, unit) = found[0];
    let goal = row
        .goal
        .as_ref()
        .map_or_else(|| "—".to_owned(), |g| format_goal(g, *unit));
    (format_now(&row.now, *unit), goal, row.met())
}

#[track_caller]
fn check(sources: &Sources, measure: &str, now: &str, goal: &str, met: Met) {
    assert_eq!(
        cells(sources, measure),
        (now.to_owned(), goal.to_owned(), met),
        "row {measure:?}"
    );
}

#[test]
fn criterion_estimates_meet_or_miss_their_goals() {
    let s = sources(
        &[
            ("validate/big_valid", 14_250.0),
            ("validate/is_valid_big", 20_000.0),
            ("process/big_valid", 83_100.0),
            ("request/build_big", 1_850.0),
            ("adapter/transform_big_native", 1_560_000.0),
            ("call/cpu_small_native", 95_000.0),
        ],
        None,
        None,
    );
    check(&s, "(validate/big_valid)", "14.25 µs", "≤ 20 µs", Met::Yes);
    // A figure equal to its bound meets it.
    check(
        &s,
        "(validate/is_valid_big)",
        "20.00 µs",
        "≤ 20 µs",
        Met::Yes,
    );
    check(&s, "(process/big_valid)", "83.10 µs", "≤ 60 µs", Met::No);
    check(
        &s,
        "(request/build_big)",
        "1.850 µs",
        "≤ 10 µs (no schema clone; was 723 µs)",
        Met::Yes,
    );
    check(
        &s,
        "(adapter/transform_big_native)",
        "1.560 ms",
        "≤ 50 µs (a 58 kB copy, not the schema; was 1.56 ms)",
        Met::No,
    );
    // A row without a goal shows its figure and no verdict.
    check(
        &s,
        "(call/cpu_small_native)",
        "95.00 µs",
        "—",
        Met::NotApplicable,
    );
}

#[test]
fn the_jsonschema_comparison_is_the_ratio_of_two_estimates() {
    let row = "claij / jsonschema, big.valid.json";
    let both = |claij: f64, theirs: f64| {
        sources(
            &[
                ("versus/claij_is_valid/big.valid", claij),
                ("versus/jsonschema_is_valid/big.valid", theirs),
                // Other instances and the full validation do not enter the ratio.
                ("versus/claij_is_valid/big.invalid", 1e9),
                ("versus/claij_validate/big.valid", 1e9),
            ],
            None,
            None,
        )
    };
    let goal = "≤ 1x (at least as fast)";
    check(&both(7_000.0, 8_750.0), row, "0.80x", goal, Met::Yes);
    check(&both(8_750.0, 8_750.0), row, "1.00x", goal, Met::Yes);
    check(&both(17_500.0, 8_750.0), row, "2.00x", goal, Met::No);
    let mut stale = both(7_000.0, 8_750.0);
    stale
        .stale_ids
        .insert("versus/jsonschema_is_valid/big.valid".to_owned());
    check(&stale, row, "0.80x (earlier run)", goal, Met::Yes);
    let run = "not measured (run `cargo bench -p claij-validation --bench versus -- versus/`)";
    for one in [
        "versus/claij_is_valid/big.valid",
        "versus/jsonschema_is_valid/big.valid",
    ] {
        let s = sources(&[(one, 7_000.0)], None, None);
        check(&s, row, run, goal, Met::NotApplicable);
    }
}

#[test]
fn load_report_gives_cpu_per_call_and_throughput() {
    let s = sources(&[], Some(LOAD), None);
    // Milliseconds in the report, scaled for display: 0.041 ms is 41 µs.
    check(
        &s,
        "CPU per call, small schema, native",
        "41.00 µs",
        "≤ 50 µs",
        Met::Yes,
    );
    check(&s, "CPU per call, big", "350.0 µs", "≤ 300 µs", Met::No);
    check(&s, "reqwest alone", "38.00 µs", "—", Met::NotApplicable);
    check(
        &s,
        "small schema, threads placed by the scheduler",
        "70.00 µs",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        "the floor, threads placed",
        "55.00 µs",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        "one validation retry",
        "90.00 µs",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        "throughput, 256 in flight",
        "1228 req/s",
        "≥ 1200 req/s",
        Met::Yes,
    );
    check(
        &s,
        "CPU, 256 in flight",
        "14.00% of a core",
        "≤ 15% of a core",
        Met::Yes,
    );
    check(
        &s,
        "CPU per call, 256 in flight",
        "114.0 µs",
        "—",
        Met::NotApplicable,
    );
    // Only 256 in flight has goals; the others are shown.
    check(
        &s,
        "throughput, 64 in flight",
        "318.5 req/s",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        "CPU, 1024 in flight, HTTP/1.1",
        "16.50% of a core",
        "—",
        Met::NotApplicable,
    );
}

#[test]
fn throughput_below_the_goal_is_not_met() {
    let load = LOAD.replace("1228.0", "1150.0").replace("14.0,", "15.5,");
    let s = sources(&[], Some(&load), None);
    check(
        &s,
        "throughput, 256 in flight",
        "1150 req/s",
        "≥ 1200 req/s",
        Met::No,
    );
    check(
        &s,
        "CPU, 256 in flight",
        "15.50% of a core",
        "≤ 15% of a core",
        Met::No,
    );
}

#[test]
fn local_report_gives_tokens_per_second() {
    let s = sources(&[], None, Some(LOCAL));
    check(
        &s,
        "prefill, 2 threads",
        "360.4 tok/s",
        "≥ 342 tok/s (2x 171 tok/s)",
        Met::Yes,
    );
    check(&s, "decode", "21.50 tok/s", "—", Met::NotApplicable);
    check(&s, "cached prefix", "2100 tok/s", "—", Met::NotApplicable);
    check(&s, "f32 weights", "300.0 tok/s", "—", Met::NotApplicable);
    check(&s, "code-review.json", "31.20 s", "—", Met::NotApplicable);
    // Without a claij binary to run, the bench leaves the FSM out.
    let without_fsm = LOCAL.replace("31.2", "null");
    check(
        &sources(&[], None, Some(&without_fsm)),
        "code-review.json",
        "not measured (bench-local.json has no `fsm_code_review_s`; run `cargo xtask bench`, or \
         `cargo build --release -p claij-cli` then `CLAIJ_BENCH_FSM=target/release/claij cargo \
         bench -p claij-local --bench local`)",
        "—",
        Met::NotApplicable,
    );
    // null means the bench did not measure it.
    check(
        &s,
        "Q8_0 weights",
        "not measured (bench-local.json has no `prefill_q8_tok_s`; run `cargo bench -p claij-local --bench local`)",
        "—",
        Met::NotApplicable,
    );
    let slow = LOCAL.replace("360.4", "171.0");
    let s = sources(&[], None, Some(&slow));
    check(
        &s,
        "prefill, 2 threads",
        "171.0 tok/s",
        "≥ 342 tok/s (2x 171 tok/s)",
        Met::No,
    );
}

#[test]
fn the_rendering_share_comes_from_the_schema_bench_report() {
    let row = "compact rendering of big.json";
    let with = |text: &str| {
        let mut s = sources(&[], None, None);
        s.render = report(RENDER_REPORT, Some(text));
        s
    };
    let report = |percent: f64| {
        format!(
            r#"{{"tokenizer": "o200k_base", "big": {{"minified_tokens": 14489, "compact_tokens": 3502,
            "compact_percent_of_minified": {percent}}}, "small": {{"compact_percent_of_minified": 32.1}}}}"#
        )
    };
    check(&with(&report(24.17)), row, "24.2%", "≤ 25%", Met::Yes);
    check(&with(&report(33.04)), row, "33.0%", "≤ 25%", Met::No);
    check(
        &sources(&[], None, None),
        row,
        "not measured (no bench-render.json; run `cargo bench -p claij-schema --bench schema -- render`)",
        "≤ 25%",
        Met::NotApplicable,
    );
    check(
        &with(r#"{"small": {}}"#),
        row,
        "not measured (bench-render.json has no `big.compact_percent_of_minified`; run `cargo bench -p \
         claij-schema --bench schema -- render`)",
        "≤ 25%",
        Met::NotApplicable,
    );
}

#[test]
fn recall_at_k_rows_come_from_the_recall_report() {
    let with = |text: &str| {
        let mut s = sources(&[], None, None);
        s.recall_at_k = report(RECALL_REPORT, Some(text));
        s
    };
    let text = r#"{"probes": 25, "recall": {"k1": {"n10": 20, "n50": 18, "n200": 15},
        "k5": {"n10": 25, "n50": 24, "n200": 21}}, "bounded": {"n10": 25, "n50": 0, "n200": 0},
        "window": {"n10": 0, "n50": 0, "n200": 0}}"#;
    let s = with(text);
    let row = |n: u64, label: &str| format!("after {n} distracting turns, {label} (");
    check(
        &s,
        &row(50, "recall interceptor, k = 5, all-MiniLM-L6-v2"),
        "24/25 (96%)",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        &row(200, "recall interceptor, k = 5, all-MiniLM-L6-v2"),
        "21/25 (84%)",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        &row(10, "memory, Bounded::default()"),
        "25/25 (100%)",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        &row(200, "memory, Window::new(10)"),
        "0/25 (0%)",
        "—",
        Met::NotApplicable,
    );
    // Without the probe count a count means nothing.
    check(
        &with(&text.replace(r#""probes": 25,"#, "")),
        &row(10, "memory, Bounded::default()"),
        "not measured (bench-recall.json has no `probes`; run `cargo bench -p claij --features \
         recall,local --bench recall_at_k`)",
        "—",
        Met::NotApplicable,
    );
    check(
        &with(r#"{"probes": 25, "recall": {}}"#),
        &row(10, "recall interceptor, k = 5, all-MiniLM-L6-v2"),
        "not measured (bench-recall.json has no `recall.k5.n10`; run `cargo bench -p claij \
         --features recall,local --bench recall_at_k`)",
        "—",
        Met::NotApplicable,
    );
}

#[test]
fn missing_sources_are_not_measured_rows_never_figures() {
    let s = sources(&[], None, None);
    let rows = rows(&s);
    // Every row of the contract is there, each saying what would measure it.
    let measures: Vec<&str> = rows.iter().map(|(row, _)| row.measure.as_str()).collect();
    for id in [
        "call/cpu_small_native",
        "call/cpu_big_native",
        "request/build_big",
        "adapter/transform_big_native",
        "validate/big_valid",
        "validate/is_valid_big",
        "process/big_valid",
        "coerce/",
        "compact rendering of big.json",
        "embed/64_short/threads_1",
        "embed/64_short/threads_2",
        "recall_store/search_10k",
        "recall_store/search_100k",
        "recall_store/chroma_search_10k",
        "recall_store/chroma_search_100k",
    ] {
        assert!(measures.iter().any(|m| m.contains(id)), "no row for {id}");
    }
    assert_eq!(rows.len(), 10 + 32 + 4 + 1 + 6 + 2 + 1 + 4 + 9 + 3);
    for (row, unit) in &rows {
        let now = format_now(&row.now, *unit);
        assert!(
            now.starts_with("not measured (") && now.contains("run `cargo "),
            "{}: {now}",
            row.measure
        );
        assert_eq!(row.met(), Met::NotApplicable, "{}", row.measure);
    }
    check(
        &s,
        "(validate/big_valid)",
        "not measured (run `cargo bench -p claij-validation --bench validation -- validate/big_valid`)",
        "≤ 20 µs",
        Met::NotApplicable,
    );
    check(
        &s,
        "CPU per call, small schema, native",
        "not measured (no bench-load.json; run `cargo bench -p claij-interceptors --bench load`)",
        "≤ 50 µs",
        Met::NotApplicable,
    );
    check(
        &s,
        "prefill, Q8_0",
        "not measured (no bench-local.json; run `cargo bench -p claij-local --bench local`)",
        "—",
        Met::NotApplicable,
    );
}

#[test]
fn broken_reports_say_why() {
    let s = sources(&[], Some("{\"rows\": [}"), Some("[1, 2]"));
    check(
        &s,
        "CPU per call, small schema, native",
        "not measured (bench-load.json unreadable: expected value at line 1 column 11; run `cargo bench -p claij-interceptors --bench load`)",
        "≤ 50 µs",
        Met::NotApplicable,
    );
    check(
        &s,
        "decode",
        "not measured (bench-local.json unreadable: not a JSON object; run `cargo bench -p claij-local --bench local`)",
        "—",
        Met::NotApplicable,
    );
    let s = sources(
        &[],
        Some(r#"{"cpu_ms_per_call_small": "fast", "rows": []}"#),
        None,
    );
    check(
        &s,
        "CPU per call, small schema, native",
        "not measured (bench-load.json: `cpu_ms_per_call_small` is not a number; run `cargo bench -p claij-interceptors --bench load`)",
        "≤ 50 µs",
        Met::NotApplicable,
    );
    // A row at another latency is not the goal's row.
    let load = LOAD.replace(
        r#""in_flight": 256, "latency_ms": 200"#,
        r#""in_flight": 256, "latency_ms": 50"#,
    );
    let s = sources(&[], Some(&load), None);
    check(
        &s,
        "throughput, 256 in flight",
        "not measured (bench-load.json has no row for 256 in flight at 200 ms; run `cargo bench -p claij-interceptors --bench load`)",
        "≥ 1200 req/s",
        Met::NotApplicable,
    );
}

#[test]
fn coercion_rows_list_every_coerce_id() {
    let s = sources(
        &[
            ("coerce/valid_reply", 120.0),
            ("coerce/enum_in_prose", 2_400.0),
            ("validate/big_valid", 1.0),
        ],
        None,
        None,
    );
    check(
        &s,
        "(coerce/valid_reply)",
        "120.0 ns",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        "(coerce/enum_in_prose)",
        "2.400 µs",
        "—",
        Met::NotApplicable,
    );
    assert!(
        !rows(&s)
            .iter()
            .any(|(row, _)| row.measure.contains("coerce/..."))
    );
}

#[test]
fn figures_from_an_earlier_run_are_marked() {
    let mut s = sources(&[("process/big_valid", 50_000.0)], None, None);
    s.stale_ids.insert("process/big_valid".to_owned());
    check(
        &s,
        "(process/big_valid)",
        "50.00 µs (earlier run)",
        "≤ 60 µs",
        Met::Yes,
    );
    s.load = Report {
        name: LOAD_REPORT,
        state: ReportState::parse(LOAD, true),
    };
    check(
        &s,
        "CPU per call, small schema, native",
        "41.00 µs (earlier run)",
        "≤ 50 µs",
        Met::Yes,
    );
}

#[test]
fn render_is_an_aligned_markdown_table_headed_by_the_machine() {
    let s = sources(&[("validate/big_valid", 14_250.0)], None, None);
    let table = render(&s);
    let mut lines = table.lines();
    assert_eq!(lines.next(), Some("## Goals (issue 18)"));
    assert_eq!(lines.next(), Some(""));
    assert_eq!(lines.next(), Some("machine: 2 cores, AMD EPYC"));
    assert_eq!(lines.next(), Some(""));
    let mut rows: Vec<&str> = lines.collect();
    assert_eq!(
        rows.split_off(rows.len() - 2),
        ["", "goals met: 1 of 1 measured; 13 not measured"]
    );
    assert_eq!(rows.len(), 2 + 72);
    assert!(rows[0].starts_with("| measure "), "{}", rows[0]);
    assert!(rows[1].starts_with("|---"), "{}", rows[1]);
    let width = rows[0].chars().count();
    for row in &rows {
        assert_eq!(row.chars().count(), width, "{row}");
        assert_eq!(row.matches('|').count(), 5, "{row}");
    }
    let validate = rows
        .iter()
        .find(|r| r.contains("validate/big_valid"))
        .unwrap();
    let cells: Vec<&str> = validate.split('|').map(str::trim).collect();
    assert_eq!(
        cells,
        [
            "",
            "validate big.valid.json (validate/big_valid)",
            "14.25 µs",
            "≤ 20 µs",
            "yes",
            ""
        ]
    );
}

#[test]
fn machine_from_cpuinfo() {
    let two = "processor\t: 0\nmodel name\t: AMD EPYC\nphysical id\t: 0\ncore id\t\t: 0\n\n\
               processor\t: 1\nmodel name\t: AMD EPYC\nphysical id\t: 0\ncore id\t\t: 1\n";
    let machine = Machine::parse(two);
    assert_eq!(
        machine,
        Machine {
            threads: 2,
            cores: Some(2),
            model: Some("AMD EPYC".to_owned()),
        }
    );
    assert_eq!(machine.describe(), "2 cores, AMD EPYC");
    // Two hyperthreads of one core.
    let smt = two.replace("core id\t\t: 1", "core id\t\t: 0");
    assert_eq!(
        Machine::parse(&smt).describe(),
        "1 cores (2 threads), AMD EPYC"
    );
    // No model name (some ARM kernels), no core ids.
    assert_eq!(
        Machine::parse("processor : 0\nprocessor : 1\n").describe(),
        "2 cores, unknown CPU model"
    );
    assert_eq!(
        Machine::parse("").describe(),
        "unknown cores (no /proc/cpuinfo), unknown CPU model"
    );
}

/// Writes a criterion result as criterion lays it out: `<dir>/<group>/<function>/new/`.
fn write_estimate(criterion: &Path, id: &str, mean_ns: f64) {
    let dir = criterion.join(id).join("new");
    fs::create_dir_all(&dir).unwrap();
    let estimates = serde_json::json!({"mean": {"point_estimate": mean_ns}});
    fs::write(dir.join("estimates.json"), estimates.to_string()).unwrap();
    let benchmark = serde_json::json!({"full_id": id, "throughput": {"Bytes": 58_000}});
    fs::write(dir.join("benchmark.json"), benchmark.to_string()).unwrap();
}

#[test]
fn sources_load_from_a_target_directory_and_the_table_is_written() {
    let target = std::env::temp_dir().join(format!("xtask-goals-{}", std::process::id()));
    let _ = fs::remove_dir_all(&target);
    write_estimate(&target.join("criterion"), "validate/big_valid", 14_250.0);
    write_estimate(&target.join("criterion"), "coerce/valid_reply", 300.0);
    fs::create_dir_all(target.join("claij")).unwrap();
    fs::write(target.join("claij").join(LOAD_REPORT), LOAD).unwrap();

    let s = Sources::load(&target, None);
    assert_eq!(s.estimates.len(), 2);
    assert_eq!(s.estimates[1].throughput, Some(Throughput::Bytes(58_000.0)));
    assert!(s.stale_ids.is_empty());
    assert_eq!(s.local.state, ReportState::Missing);
    check(&s, "(validate/big_valid)", "14.25 µs", "≤ 20 µs", Met::Yes);
    check(
        &s,
        "CPU per call, small schema, native",
        "41.00 µs",
        "≤ 50 µs",
        Met::Yes,
    );

    // Results older than the run that prints the table are marked.
    let later = SystemTime::now() + Duration::from_secs(3600);
    let s = Sources::load(&target, Some(later));
    assert_eq!(s.stale_ids.len(), 2);
    check(
        &s,
        "(coerce/valid_reply)",
        "300.0 ns (earlier run)",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        "CPU per call, big",
        "350.0 µs (earlier run)",
        "≤ 300 µs",
        Met::No,
    );

    crate::bench::print_goals(&target, None).unwrap();
    let written = fs::read_to_string(target.join("claij").join(GOALS_FILE)).unwrap();
    assert_eq!(written, render(&Sources::load(&target, None)));
    assert!(written.contains("| 14.25 µs "), "{written}");
    fs::remove_dir_all(&target).unwrap();
}

#[test]
fn a_load_report_from_another_machine_says_so() {
    let s = sources(&[], Some(LOAD), None);
    assert!(!render(&s).contains("measured on"));
    let elsewhere = LOAD.replace("2 cores, AMD EPYC", "8 cores, Apple M2");
    let s = sources(&[], Some(&elsewhere), None);
    let table = render(&s);
    assert!(
        table.starts_with(
            "## Goals (issue 18)\n\nmachine: 2 cores, AMD EPYC\n\
             bench-load.json measured on: 8 cores, Apple M2\n\n| measure"
        ),
        "{table}"
    );
}

#[test]
fn a_missing_estimate_names_the_bench_that_measures_it() {
    for (id, command) in [
        (
            "call/cpu_big_native",
            "cargo bench -p claij-interceptors --bench pipeline -- call/cpu_big_native",
        ),
        (
            "request/build_big",
            "cargo bench -p claij-backends --bench http -- request/build_big",
        ),
        (
            "adapter/transform_big_native",
            "cargo bench -p claij-backends --bench http -- adapter/transform_big_native",
        ),
        (
            "process/big_valid",
            "cargo bench -p claij-validation --bench validation -- process/big_valid",
        ),
        (
            "coerce/",
            "cargo bench -p claij-validation --bench repair -- coerce/",
        ),
        ("unplaced/id", "cargo xtask bench --no-quality unplaced/id"),
    ] {
        assert_eq!(run_estimate(id), command);
    }
    let s = sources(&[], None, None);
    check(
        &s,
        "(coerce/...)",
        "not measured (run `cargo bench -p claij-validation --bench repair -- coerce/`)",
        "—",
        Met::NotApplicable,
    );
}

#[test]
fn the_summary_counts_the_rows_with_a_goal() {
    let s = sources(
        &[
            ("validate/big_valid", 14_000.0),
            ("process/big_valid", 90_000.0),
            ("call/cpu_small_native", 1.0),
        ],
        Some(LOAD),
        None,
    );
    // Met: validate, CPU small, 256 req/s and CPU%, 10,000's share of the ideal and memory; not met: process, CPU big; no figure: the
    // request build, the transform, is-valid, claij / jsonschema, prefill.
    assert!(
        render(&s).ends_with("\ngoals met: 6 of 8 measured; 6 not measured\n"),
        "{}",
        render(&s)
    );
}

#[test]
fn the_scale_rows_have_their_goals_at_ten_thousand_in_flight() {
    let s = sources(&[], Some(LOAD), None);
    check(
        &s,
        "share of the ideal (in-flight / 0.2 s), 10000 in flight, HTTP/2",
        "95.60% of the ideal",
        "≥ 95% of the ideal",
        Met::Yes,
    );
    check(
        &s,
        "client peak memory (VmHWM), 10000 in flight, HTTP/2",
        "92.00 MB",
        "≤ 100 MB (under 100 MB)",
        Met::Yes,
    );
    check(
        &s,
        "throughput, 10000 in flight, HTTP/2",
        "47800 req/s",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        "CPU per call, 10000 in flight, HTTP/2",
        "17.00 µs",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        "reqwest without claij, the same calls at 10000 in flight, HTTP/1.1: throughput",
        "48000 req/s",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        "reqwest without claij, the same calls at 10000 in flight, HTTP/1.1: peak memory",
        "61.00 MB",
        "—",
        Met::NotApplicable,
    );
    // Over HTTP/1.1 the same concurrency is shown without the goals.
    check(
        &s,
        "client peak memory (VmHWM), 10000 in flight, HTTP/1.1",
        "395.0 MB",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        "share of the ideal (in-flight / 0.2 s), 10000 in flight, HTTP/1.1",
        "22.00% of the ideal",
        "—",
        Met::NotApplicable,
    );
    // A report without HTTP/2 rows (older than them) says so.
    let old = LOAD.replace(
        "\"http\": \"http2\", \"in_flight\"",
        "\"in_flight\": 1, \"x\"",
    );
    let s = sources(&[], Some(&old), None);
    check(
        &s,
        "client peak memory (VmHWM), 10000 in flight, HTTP/2",
        "not measured (bench-load.json has no row for 10000 in flight over HTTP/2 at 200 ms; run \
         `cargo bench -p claij-interceptors --bench load`)",
        "≤ 100 MB (under 100 MB)",
        Met::NotApplicable,
    );
    // Below either goal: not met.
    let short = LOAD
        .replace("95.6,", "60.0,")
        .replace("92000000", "472000000");
    let s = sources(&[], Some(&short), None);
    check(
        &s,
        "share of the ideal (in-flight / 0.2 s), 10000 in flight, HTTP/2",
        "60.00% of the ideal",
        "≥ 95% of the ideal",
        Met::No,
    );
    check(
        &s,
        "client peak memory (VmHWM), 10000 in flight, HTTP/2",
        "472.0 MB",
        "≤ 100 MB (under 100 MB)",
        Met::No,
    );
    // The rows below 10,000 show the share without a goal; an older report without the field
    // says what is missing.
    check(
        &s,
        "share of the ideal (in-flight / 0.2 s), 1024 in flight, HTTP/1.1",
        "not measured (bench-load.json has no `share_of_ideal_percent` at 1024 in flight; run \
         `cargo bench -p claij-interceptors --bench load`)",
        "—",
        Met::NotApplicable,
    );
}

#[test]
fn embedding_rows_turn_the_time_of_a_batch_of_64_into_sentences_per_second() {
    // 64 sentences in 0.2 s: 320 sentences/s.
    let s = sources(&[("embed/64_short/threads_2", 2e8)], None, None);
    check(
        &s,
        "2 threads (embed/64_short/threads_2)",
        "320.0 sentences/s",
        "—",
        Met::NotApplicable,
    );
    check(
        &s,
        "1 thread (embed/64_short/threads_1)",
        "not measured (run `cargo bench -p claij-local --bench embed -- embed/64_short/threads_1`)",
        "—",
        Met::NotApplicable,
    );
}
