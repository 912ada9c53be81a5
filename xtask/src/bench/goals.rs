//! The goals table of issue 18 (measure | now | goal | met): every row the performance goals name,
//! its figure from the latest criterion estimate or bench report, or "not measured (run …)" when
//! that source is missing. Never a figure that no bench wrote.
//!
//! Sources: criterion's `new/estimates.json` by id (`call/cpu_small_native`, …), and the reports
//! the non-criterion benches write under `target/claij/`: `bench-load.json` (CPU per call and
//! throughput against the in-process mock) and `bench-local.json` (the embedded model).

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;

use super::{Estimate, format_time, read_estimates, significant};

/// The load bench's report: CPU per call, and req/s, client CPU and peak memory at
/// 64/256/1,024/10,000 in flight.
pub(super) const LOAD_REPORT: &str = "bench-load.json";
/// The embedded model's report: prefill and decode tokens per second.
pub(super) const LOCAL_REPORT: &str = "bench-local.json";
/// The schema bench's report: the compact rendering's o200k tokens against the minified JSON's.
pub(super) const RENDER_REPORT: &str = "bench-render.json";
/// claij's recall@k bench's report: probes whose fact was held after N distracting turns.
pub(super) const RECALL_REPORT: &str = "bench-recall.json";
/// Where the table is written, next to the reports.
pub(super) const GOALS_FILE: &str = "bench-goals.md";

/// What runs the load bench alone (claij-interceptors' `benches/load.rs`).
const RUN_LOAD: &str = "run `cargo bench -p claij-interceptors --bench load`";
/// What runs the local model bench alone; it needs the model (`cargo xtask model`).
const RUN_LOCAL: &str = "run `cargo bench -p claij-local --bench local`";
/// The local bench times the FSM only with a `claij` binary to run (`cargo xtask bench` passes the
/// one it builds for the quality prompts).
const RUN_LOCAL_FSM: &str = "run `cargo xtask bench`, or `cargo build --release -p claij-cli` then \
    `CLAIJ_BENCH_FSM=target/release/claij cargo bench -p claij-local --bench local`";
/// What writes the rendering's token counts (claij-schema's `benches/schema.rs`).
const RUN_RENDER: &str = "run `cargo bench -p claij-schema --bench schema -- render`";
/// What runs the recall@k bench alone; it needs the embedding model (`cargo xtask embed-model`).
const RUN_RECALL: &str = "run `cargo bench -p claij --features recall,local --bench recall_at_k`";
/// The distracting turns the recall@k bench reports (issue 33).
const RECALL_NS: [u64; 3] = [10, 50, 200];
/// The mock's latency the throughput goal is stated at.
const LOAD_LATENCY_MS: f64 = 200.0;
/// The concurrencies the load bench reports over HTTP/1.1; issue 18's goals are at 256.
const IN_FLIGHT: [u64; 4] = [64, 256, 1024, 10_000];
/// The concurrencies the load bench reports over HTTP/2 (h2c); issue 32's goals are at 10,000.
const IN_FLIGHT_HTTP2: [u64; 2] = [1024, 10_000];
/// The concurrency of issue 32's scale goals: 95% of the ideal, under 100 MB of client memory,
/// over HTTP/2 (many calls per connection; over HTTP/1.1 each call holds a connection).
const SCALE_IN_FLIGHT: u64 = 10_000;

/// Everything the table is made from: the latest results, whichever exist.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sources {
    /// criterion's latest estimate per id.
    pub estimates: Vec<Estimate>,
    /// The ids whose estimate predates the run that prints the table (empty for `--goals`).
    pub stale_ids: HashSet<String>,
    pub load: Report,
    pub local: Report,
    pub render: Report,
    pub recall_at_k: Report,
    pub machine: Machine,
}

/// One JSON report a bench target writes under `target/claij/`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Report {
    /// The file name, as rows name it.
    pub name: &'static str,
    pub state: ReportState,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum ReportState {
    Missing,
    /// The file exists but is not a JSON object; the reason says where.
    Unreadable(String),
    /// `stale` when it predates the run that prints the table.
    Read {
        value: Value,
        stale: bool,
    },
}

/// The machine the table is rendered on, from `/proc/cpuinfo`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Machine {
    /// Logical CPUs (`processor` entries).
    pub threads: usize,
    /// Distinct (`physical id`, `core id`) pairs; `None` when cpuinfo does not say.
    pub cores: Option<usize>,
    pub model: Option<String>,
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row {
    pub measure: String,
    pub now: Now,
    pub goal: Option<Goal>,
}

/// A row's current figure, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Now {
    /// In the unit's canonical scale (nanoseconds for times); `stale` marks an earlier run's figure.
    Figure { value: f64, stale: bool },
    /// The text after "not measured": the reason and the command that would measure it.
    Missing(String),
}

/// What a figure measures, which fixes how it is shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Unit {
    /// Nanoseconds, shown scaled (ns, µs, ms, s).
    Time,
    ReqPerSec,
    TokPerSec,
    /// Sentences embedded per second.
    SentencesPerSec,
    /// Bytes, shown in MB (10^6 bytes).
    Megabytes,
    /// A throughput as a share of its ideal, shown `95.60% of the ideal`.
    PercentOfIdeal,
    PercentOfCore,
    /// A share of tokens in percent, shown `24.2%`.
    TokenShare,
    /// A ratio of two figures of one run, shown `0.85x`.
    Ratio,
    /// A count of probes out of this many, shown `24/25 (96%)`.
    Probes(u32),
}

/// A bound a figure must meet.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Goal {
    pub bound: Bound,
    /// In the unit's canonical scale.
    pub limit: f64,
    /// What the bound stands for, when the issue states the goal in other words.
    pub note: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Bound {
    AtMost,
    AtLeast,
}

/// Whether a row's figure meets its goal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Met {
    Yes,
    No,
    /// No goal, or no figure.
    NotApplicable,
}

impl Sources {
    /// The latest results under `target_dir`; with `since`, results older than it are marked as from
    /// an earlier run. Missing or unreadable files give "not measured" rows, never an error.
    pub(super) fn load(target_dir: &Path, since: Option<SystemTime>) -> Sources {
        let criterion_dir = target_dir.join("criterion");
        let estimates = read_estimates(&criterion_dir, None);
        let stale_ids = match since {
            None => HashSet::new(),
            Some(since) => {
                let fresh: HashSet<String> = read_estimates(&criterion_dir, Some(since))
                    .into_iter()
                    .map(|e| e.id)
                    .collect();
                estimates
                    .iter()
                    .filter(|e| !fresh.contains(&e.id))
                    .map(|e| e.id.clone())
                    .collect()
            }
        };
        let reports = target_dir.join("claij");
        let machine = fs::read_to_string("/proc/cpuinfo").map_or(
            Machine {
                threads: 0,
                cores: None,
                model: None,
            },
            |text| Machine::parse(&text),
        );
        Sources {
            estimates,
            stale_ids,
            load: Report::read(&reports, LOAD_REPORT, since),
            local: Report::read(&reports, LOCAL_REPORT, since),
            render: Report::read(&reports, RENDER_REPORT, since),
            recall_at_k: Report::read(&reports, RECALL_REPORT, since),
            machine,
        }
    }

    /// The estimate for `id` as a figure, or why there is none.
    fn estimate(&self, id: &str) -> Now {
        match self.estimates.iter().find(|e| e.id == id) {
            Some(e) => Now::Figure {
                value: e.mean_ns,
                stale: self.stale_ids.contains(id),
            },
            None => Now::Missing(format!("run `{}`", run_estimate(id))),
        }
    }
}

/// The command that measures criterion id `id` alone: the bench target holding its group (as the
/// contract of issue 18 placed them), else every bench target filtered by the id.
fn run_estimate(id: &str) -> String {
    let group = id.split('/').next().unwrap_or(id);
    if group == "recall_store" {
        return format!("cargo bench -p claij --features recall --bench recall_store -- {id}");
    }
    let target = match group {
        "call" => Some(("claij-interceptors", "pipeline")),
        "request" | "adapter" => Some(("claij-backends", "http")),
        "validate" | "process" => Some(("claij-validation", "validation")),
        "coerce" => Some(("claij-validation", "repair")),
        "versus" => Some(("claij-validation", "versus")),
        "embed" => Some(("claij-local", "embed")),
        _ => None,
    };
    match target {
        Some((package, bench)) => format!("cargo bench -p {package} --bench {bench} -- {id}"),
        None => format!("cargo xtask bench --no-quality {id}"),
    }
}

impl Report {
    /// Reads `dir/name`; `since` marks a file written before it as stale.
    pub(super) fn read(dir: &Path, name: &'static str, since: Option<SystemTime>) -> Report {
        let path = dir.join(name);
        let state = match fs::read_to_string(&path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => ReportState::Missing,
            Err(err) => ReportState::Unreadable(err.to_string()),
            Ok(text) => {
                let modified = fs::metadata(&path).and_then(|m| m.modified()).ok();
                let stale = since.is_some_and(|since| modified.is_none_or(|m| m < since));
                ReportState::parse(&text, stale)
            }
        };
        Report { name, state }
    }

    /// The number at `field` of the report's top-level object.
    fn field(&self, field: &str, run: &str) -> Now {
        self.locate(run, |value| Ok((&value[field], format!("`{field}`"))))
    }

    /// The `field` of the load report's row for `in_flight` requests over `http` (`http1`, which
    /// rows without `http` are, or `http2`) at the goal's mock latency.
    fn load_row_field(&self, in_flight: u64, http: &str, field: &str, run: &str) -> Now {
        self.locate(run, |value| {
            let row = value["rows"].as_array().and_then(|rows| {
                rows.iter().find(|row| {
                    row["in_flight"].as_f64() == Some(in_flight as f64)
                        && row["latency_ms"].as_f64() == Some(LOAD_LATENCY_MS)
                        && row["http"].as_str().unwrap_or("http1") == http
                })
            });
            let over = if http == "http1" { "" } else { " over HTTP/2" };
            match row {
                Some(row) => Ok((
                    &row[field],
                    format!("`{field}` at {in_flight} in flight{over}"),
                )),
                None => Err(format!(
                    "{} has no row for {in_flight} in flight{over} at {LOAD_LATENCY_MS} ms",
                    self.name
                )),
            }
        })
    }

    /// The `field` of the load report's `transport_floor` (reqwest alone, no claij, at the most
    /// calls in flight).
    fn floor_field(&self, field: &str, run: &str) -> Now {
        self.locate(run, |value| {
            Ok((
                &value["transport_floor"][field],
                format!("`transport_floor.{field}`"),
            ))
        })
    }

    /// A number `find` picks out of the report (with a description for messages), or why not.
    fn locate<'a>(
        &'a self,
        run: &str,
        find: impl FnOnce(&'a Value) -> Result<(&'a Value, String), String>,
    ) -> Now {
        let name = self.name;
        let missing = |why: String| Now::Missing(format!("{why}; {run}"));
        match &self.state {
            ReportState::Missing => Now::Missing(format!("no {name}; {run}")),
            ReportState::Unreadable(why) => missing(format!("{name} unreadable: {why}")),
            ReportState::Read { value, stale } => match find(value) {
                Err(why) => missing(why),
                Ok((Value::Null, what)) => missing(format!("{name} has no {what}")),
                Ok((number, what)) => match number.as_f64() {
                    Some(value) => Now::Figure {
                        value,
                        stale: *stale,
                    },
                    None => missing(format!("{name}: {what} is not a number")),
                },
            },
        }
    }
}

impl ReportState {
    /// A report's text: a JSON object, or unreadable with serde's line and column.
    pub(super) fn parse(text: &str, stale: bool) -> ReportState {
        match serde_json::from_str::<Value>(text) {
            Ok(value) if value.is_object() => ReportState::Read { value, stale },
            Ok(_) => ReportState::Unreadable("not a JSON object".to_owned()),
            Err(err) => ReportState::Unreadable(err.to_string()),
        }
    }
}

impl Machine {
    /// Reads the count of logical CPUs, of physical cores and the first model name.
    pub(super) fn parse(cpuinfo: &str) -> Machine {
        let mut threads = 0;
        let mut cores = HashSet::new();
        let mut model = None;
        let mut physical_id = None;
        for line in cpuinfo.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match key.trim() {
                "processor" => threads += 1,
                "model name" if model.is_none() && !value.is_empty() => {
                    model = Some(value.to_owned());
                }
                "physical id" => physical_id = Some(value.to_owned()),
                "core id" => {
                    cores.insert((physical_id.clone(), value.to_owned()));
                }
                _ => {}
            }
        }
        Machine {
            threads,
            cores: (!cores.is_empty()).then_some(cores.len()),
            model,
        }
    }

    /// `2 cores, AMD EPYC`, or `2 cores (4 threads), …` with SMT.
    pub(super) fn describe(&self) -> String {
        let model = self.model.as_deref().unwrap_or("unknown CPU model");
        match self.cores {
            _ if self.threads == 0 => format!("unknown cores (no /proc/cpuinfo), {model}"),
            Some(cores) if cores != self.threads => {
                format!("{cores} cores ({} threads), {model}", self.threads)
            }
            _ => format!("{} cores, {model}", self.threads),
        }
    }
}

impl Goal {
    const fn at_most(limit: f64, note: &'static str) -> Goal {
        Goal {
            bound: Bound::AtMost,
            limit,
            note,
        }
    }

    const fn at_least(limit: f64, note: &'static str) -> Goal {
        Goal {
            bound: Bound::AtLeast,
            limit,
            note,
        }
    }
}

impl Row {
    fn new(measure: impl Into<String>, now: Now, goal: Option<Goal>) -> Row {
        Row {
            measure: measure.into(),
            now,
            goal,
        }
    }

    /// Whether the figure meets the goal; not applicable without either.
    pub(super) fn met(&self) -> Met {
        match (&self.now, &self.goal) {
            (Now::Figure { value, .. }, Some(goal)) => {
                let met = match goal.bound {
                    Bound::AtMost => *value <= goal.limit,
                    Bound::AtLeast => *value >= goal.limit,
                };
                if met { Met::Yes } else { Met::No }
            }
            _ => Met::NotApplicable,
        }
    }
}

/// Every row of the goals, in the order: the call path, throughput, validation, coercion,
/// the embedded model. `Unit` per row says how its figures are shown.
pub(super) fn rows(sources: &Sources) -> Vec<(Row, Unit)> {
    let mut rows = call_rows(sources);
    rows.extend(throughput_rows(&sources.load));
    rows.extend(validation_rows(sources));
    rows.extend(coercion_rows(sources));
    rows.extend(local_rows(&sources.local));
    rows.extend(embed_rows(sources));
    rows.extend(render_rows(&sources.render));
    rows.extend(recall_rows(sources));
    rows.extend(recall_at_k_rows(&sources.recall_at_k));
    rows
}

/// Picks one strategy's counts out of the recall@k report.
type Pick = fn(&Value) -> &Value;

/// Issue 33's recall@k (claij's `benches/recall_at_k.rs`): the probes whose fact was in the
/// question's prompt after N distracting turns, for the recall interceptor at its default k = 5
/// and the bounded and window memories; figures, no goal (the report has k = 1 and 3 too).
fn recall_at_k_rows(report: &Report) -> Vec<(Row, Unit)> {
    let probes = match &report.state {
        ReportState::Read { value, .. } => value["probes"]
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .filter(|p| *p > 0),
        _ => None,
    };
    let strategies: [(&str, &str, Pick); 3] = [
        (
            "recall.k5",
            "recall interceptor, k = 5, all-MiniLM-L6-v2",
            |v| &v["recall"]["k5"],
        ),
        ("bounded", "memory, Bounded::default()", |v| &v["bounded"]),
        ("window", "memory, Window::new(10)", |v| &v["window"]),
    ];
    let mut rows = Vec::new();
    for (path, label, at) in strategies {
        for n in RECALL_NS {
            let key = format!("n{n}");
            let now = match report.locate(RUN_RECALL, |value| {
                Ok((&at(value)[key.as_str()], format!("`{path}.{key}`")))
            }) {
                Now::Figure { .. } if probes.is_none() => {
                    Now::Missing(format!("{RECALL_REPORT} has no `probes`; {RUN_RECALL}"))
                }
                now => now,
            };
            let measure =
                format!("fact held after {n} distracting turns, {label} ({RECALL_REPORT})");
            rows.push((
                Row::new(measure, now, None),
                Unit::Probes(probes.unwrap_or(0)),
            ));
        }
    }
    rows
}

/// Issue 33's memory stores (`claij::recall::SqliteStore`, and `ChromaStore` on a Chroma server
/// the bench starts): figures, no goal.
fn recall_rows(sources: &Sources) -> Vec<(Row, Unit)> {
    let row = |measure: &str, id: &str| {
        (
            Row::new(format!("{measure} ({id})"), sources.estimate(id), None),
            Unit::Time,
        )
    };
    vec![
        row(
            "recall store search, 10,000 memories of 384 dims, k = 5, vectors cached",
            "recall_store/search_10k",
        ),
        row(
            "recall store search, 100,000 memories of 384 dims, k = 5, default 64 MiB vector cache, about 41,000 of them cached",
            "recall_store/search_100k",
        ),
        row(
            "recall store search, 100,000 memories, vectors read from the file",
            "recall_store/search_100k_uncached",
        ),
        row(
            "recall store add, one memory per transaction",
            "recall_store/add_1_per_transaction",
        ),
        row(
            "Chroma store search, 10,000 memories of 384 dims, k = 5, over HTTP",
            "recall_store/chroma_search_10k",
        ),
        row(
            "Chroma store search, 100,000 memories of 384 dims, k = 5, over HTTP",
            "recall_store/chroma_search_100k",
        ),
        row(
            "Chroma store add, 1,000 memories in one request",
            "recall_store/chroma_add_1000_per_request",
        ),
    ]
}

/// CPU per call from the load report (milliseconds there), then the criterion ids of the call path.
fn call_rows(sources: &Sources) -> Vec<(Row, Unit)> {
    let cpu = |field: &str| match sources.load.field(field, RUN_LOAD) {
        Now::Figure { value, stale } => Now::Figure {
            value: value * 1e6,
            stale,
        },
        missing @ Now::Missing(_) => missing,
    };
    let time =
        |measure: &str, now: Now, goal: Option<Goal>| (Row::new(measure, now, goal), Unit::Time);
    vec![
        time(
            "CPU per call, small schema, native, client and mock on one core (bench-load.json)",
            cpu("cpu_ms_per_call_small"),
            Some(Goal::at_most(50e3, "")),
        ),
        time(
            "CPU per call, big schema, native, one core (bench-load.json)",
            cpu("cpu_ms_per_call_big"),
            Some(Goal::at_most(300e3, "")),
        ),
        time(
            "the same exchange by reqwest alone, no claij: the floor (bench-load.json)",
            cpu("cpu_ms_per_call_transport"),
            None,
        ),
        time(
            "CPU per call, small schema, threads placed by the scheduler (bench-load.json)",
            cpu("cpu_ms_per_call_small_scheduler_placed"),
            None,
        ),
        time(
            "the floor, threads placed by the scheduler (bench-load.json)",
            cpu("cpu_ms_per_call_transport_scheduler_placed"),
            None,
        ),
        time(
            "CPU per call, small schema, one validation retry (bench-load.json)",
            cpu("cpu_ms_per_call_retry"),
            None,
        ),
        time(
            "one call, small schema, native, wall time (call/cpu_small_native)",
            sources.estimate("call/cpu_small_native"),
            None,
        ),
        time(
            "one call, big schema, native, wall time (call/cpu_big_native)",
            sources.estimate("call/cpu_big_native"),
            None,
        ),
        time(
            "request build, big schema (request/build_big)",
            sources.estimate("request/build_big"),
            // The clone of the schema `Value` was 723 µs; a build that shares it costs microseconds.
            Some(Goal::at_most(10e3, "no schema clone; was 723 µs")),
        ),
        time(
            "transform + serialise, big native body (adapter/transform_big_native)",
            sources.estimate("adapter/transform_big_native"),
            // Copying the 58 kB body is a few µs; re-serialising the schema was 1.56 ms.
            Some(Goal::at_most(
                50e3,
                "a 58 kB copy, not the schema; was 1.56 ms",
            )),
        ),
    ]
}

/// Per concurrency and HTTP version: req/s, its share of the ideal (in-flight / 0.2 s), the
/// client's CPU as a share of one core and per call, its peak memory; issue 18's goals are at 256
/// (HTTP/1.1), issue 32's (95% of the ideal, under 100 MB) at 10,000 over HTTP/2. Then the same
/// exchange by reqwest alone at 10,000 (HTTP/1.1): the floor.
fn throughput_rows(load: &Report) -> Vec<(Row, Unit)> {
    let mut rows = Vec::new();
    let runs = IN_FLIGHT
        .into_iter()
        .map(|n| (n, "http1", "HTTP/1.1"))
        .chain(IN_FLIGHT_HTTP2.into_iter().map(|n| (n, "http2", "HTTP/2")));
    for (in_flight, http, wire) in runs {
        let at_goal = in_flight == 256 && http == "http1";
        let at_scale = in_flight == SCALE_IN_FLIGHT && http == "http2";
        let field = |name: &str| load.load_row_field(in_flight, http, name, RUN_LOAD);
        let label = |what: &str| {
            format!("{what}, {in_flight} in flight, {wire}, 200 ms mock (bench-load.json)")
        };
        rows.push((
            Row::new(
                label("throughput"),
                field("req_per_s"),
                at_goal.then_some(Goal::at_least(1200.0, "")),
            ),
            Unit::ReqPerSec,
        ));
        rows.push((
            Row::new(
                label("share of the ideal (in-flight / 0.2 s)"),
                field("share_of_ideal_percent"),
                at_scale.then_some(Goal::at_least(95.0, "")),
            ),
            Unit::PercentOfIdeal,
        ));
        rows.push((
            Row::new(
                label("CPU"),
                field("cpu_percent_of_one_core"),
                at_goal.then_some(Goal::at_most(15.0, "")),
            ),
            Unit::PercentOfCore,
        ));
        rows.push((
            Row::new(
                label("CPU per call"),
                milliseconds(field("cpu_ms_per_call")),
                None,
            ),
            Unit::Time,
        ));
        rows.push((
            Row::new(
                label("client peak memory (VmHWM)"),
                field("peak_rss_bytes"),
                at_scale.then_some(Goal::at_most(100e6, "under 100 MB")),
            ),
            Unit::Megabytes,
        ));
    }
    let floor = |what: &str| {
        format!(
            "reqwest without claij, the same calls at {SCALE_IN_FLIGHT} in flight, HTTP/1.1: {what} \
             (bench-load.json)"
        )
    };
    rows.push((
        Row::new(
            floor("throughput"),
            load.floor_field("req_per_s", RUN_LOAD),
            None,
        ),
        Unit::ReqPerSec,
    ));
    rows.push((
        Row::new(
            floor("peak memory"),
            load.floor_field("peak_rss_bytes", RUN_LOAD),
            None,
        ),
        Unit::Megabytes,
    ));
    rows
}

/// A figure in milliseconds, in the canonical nanoseconds.
fn milliseconds(now: Now) -> Now {
    match now {
        Now::Figure { value, stale } => Now::Figure {
            value: value * 1e6,
            stale,
        },
        missing @ Now::Missing(_) => missing,
    }
}

fn validation_rows(sources: &Sources) -> Vec<(Row, Unit)> {
    let row = |measure: &str, id: &str, goal: Goal| {
        (
            Row::new(
                format!("{measure} ({id})"),
                sources.estimate(id),
                Some(goal),
            ),
            Unit::Time,
        )
    };
    vec![
        row(
            "validate big.valid.json",
            "validate/big_valid",
            Goal::at_most(20e3, ""),
        ),
        row(
            "is-valid check, big.valid.json",
            "validate/is_valid_big",
            Goal::at_most(20e3, ""),
        ),
        row(
            "process() on the big valid reply",
            "process/big_valid",
            Goal::at_most(60e3, ""),
        ),
        (
            Row::new(
                format!("claij / jsonschema, big.valid.json ({VERSUS_CLAIJ} / {VERSUS_THEIRS})"),
                ratio(sources, VERSUS_CLAIJ, VERSUS_THEIRS),
                Some(Goal::at_most(1.0, "at least as fast")),
            ),
            Unit::Ratio,
        ),
    ]
}

/// The comparison with the `jsonschema` crate (claij-validation's `benches/versus.rs`): the is-valid
/// verdict on the big valid instance, both validators in one run.
const VERSUS_CLAIJ: &str = "versus/claij_is_valid/big.valid";
const VERSUS_THEIRS: &str = "versus/jsonschema_is_valid/big.valid";

/// The estimate of `id` over that of `base`; stale when either is from an earlier run, missing when
/// either is (naming the bench group that measures both in one run).
fn ratio(sources: &Sources, id: &str, base: &str) -> Now {
    match (sources.estimate(id), sources.estimate(base)) {
        (
            Now::Figure { value, stale },
            Now::Figure {
                value: of,
                stale: base_stale,
            },
        ) => Now::Figure {
            value: value / of,
            stale: stale || base_stale,
        },
        _ => Now::Missing(format!("run `{}`", run_estimate("versus/"))),
    }
}

/// Every `coerce/...` estimate (their cost on a valid reply, which should stay near zero); one
/// "not measured" row when there is none.
fn coercion_rows(sources: &Sources) -> Vec<(Row, Unit)> {
    let rows: Vec<(Row, Unit)> = sources
        .estimates
        .iter()
        .filter(|e| e.id.starts_with("coerce/"))
        .map(|e| {
            let measure = format!("coercion ({})", e.id);
            (Row::new(measure, sources.estimate(&e.id), None), Unit::Time)
        })
        .collect();
    if !rows.is_empty() {
        return rows;
    }
    let now = Now::Missing(format!("run `{}`", run_estimate("coerce/")));
    vec![(Row::new("coercion (coerce/...)", now, None), Unit::Time)]
}

/// The compact rendering of `big.json` as a share of the minified JSON's o200k tokens (issue 32).
fn render_rows(render: &Report) -> Vec<(Row, Unit)> {
    let now = render.locate(RUN_RENDER, |value| {
        Ok((
            &value["big"]["compact_percent_of_minified"],
            "`big.compact_percent_of_minified`".to_owned(),
        ))
    });
    vec![(
        Row::new(
            "compact rendering of big.json, share of the minified JSON's o200k tokens (bench-render.json)",
            now,
            Some(Goal::at_most(25.0, "")),
        ),
        Unit::TokenShare,
    )]
}

fn local_rows(local: &Report) -> Vec<(Row, Unit)> {
    let threads = match &local.state {
        ReportState::Read { value, .. } => value["threads"].as_u64(),
        _ => None,
    };
    let prefill = match threads {
        Some(n) => format!("prefill, {n} threads (bench-local.json)"),
        None => "prefill (bench-local.json)".to_owned(),
    };
    let tok = |measure: &str, field: &str, goal: Option<Goal>| {
        let now = local.field(field, RUN_LOCAL);
        (Row::new(measure, now, goal), Unit::TokPerSec)
    };
    let fsm = match local.field("fsm_code_review_s", RUN_LOCAL_FSM) {
        Now::Figure { value, stale } => Now::Figure {
            value: value * 1e9,
            stale,
        },
        missing @ Now::Missing(_) => missing,
    };
    vec![
        tok(
            &prefill,
            "prefill_tok_s",
            Some(Goal::at_least(342.0, "2x 171 tok/s")),
        ),
        tok("decode (bench-local.json)", "decode_tok_s", None),
        tok(
            "prefill after a cached prefix (bench-local.json)",
            "prefill_tok_s_cached",
            None,
        ),
        tok(
            "prefill, Q8_0 weights (bench-local.json)",
            "prefill_q8_tok_s",
            None,
        ),
        tok(
            "prefill, f32 weights (bench-local.json)",
            "prefill_f32_tok_s",
            None,
        ),
        (
            Row::new(
                "FSM examples/fsm/code-review.json on the local model, was 54 s (bench-local.json)",
                fsm,
                None,
            ),
            Unit::Time,
        ),
    ]
}

/// The sentences one `Embedder::embed` call embeds in claij-local's `benches/embed.rs`.
const EMBED_BATCH: f64 = 64.0;

/// Sentence-embedding throughput (issue 33) from the criterion estimates of claij-local's embed
/// bench (one call on 64 short sentences), at 1 and 2 threads; no goal yet.
fn embed_rows(sources: &Sources) -> Vec<(Row, Unit)> {
    [1, 2]
        .into_iter()
        .map(|threads| {
            let id = format!("embed/64_short/threads_{threads}");
            let now = match sources.estimate(&id) {
                Now::Figure { value, stale } if value > 0.0 => Now::Figure {
                    value: EMBED_BATCH * 1e9 / value,
                    stale,
                },
                Now::Figure { .. } => Now::Missing(format!("a zero time for {id}")),
                missing @ Now::Missing(_) => missing,
            };
            let measure = format!(
                "sentence embedding, batch of 64 short sentences, {threads} thread{} ({id})",
                if threads == 1 { "" } else { "s" }
            );
            (Row::new(measure, now, None), Unit::SentencesPerSec)
        })
        .collect()
}

/// The table as Markdown (aligned, so it reads in a terminal too), headed by the machine.
pub(super) fn render(sources: &Sources) -> String {
    let all = rows(sources);
    let rows: Vec<[String; 4]> = all
        .iter()
        .map(|(row, unit)| {
            let met = match row.met() {
                Met::Yes => "yes",
                Met::No => "no",
                Met::NotApplicable => "—",
            };
            [
                row.measure.clone(),
                format_now(&row.now, *unit),
                row.goal
                    .as_ref()
                    .map_or_else(|| "—".to_owned(), |g| format_goal(g, *unit)),
                met.to_owned(),
            ]
        })
        .collect();
    let header = ["measure", "now", "goal", "met"].map(str::to_owned);
    let width = |col: usize| {
        std::iter::once(&header)
            .chain(&rows)
            .map(|row| row[col].chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths = [width(0), width(1), width(2), width(3)];
    let line = |cells: &[String; 4]| {
        let cells: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    let machine = sources.machine.describe();
    let mut out = format!("## Goals (issue 18)\n\nmachine: {machine}\n");
    // The load bench names its machine; a report copied from elsewhere says so.
    if let ReportState::Read { value, .. } = &sources.load.state
        && let Some(load_machine) = value["machine"].as_str()
        && load_machine != machine
    {
        out.push_str(&format!("{LOAD_REPORT} measured on: {load_machine}\n"));
    }
    out.push('\n');
    out.push_str(&line(&header));
    out.push_str(&format!("|-{}-|\n", rule.join("-|-")));
    for row in &rows {
        out.push_str(&line(row));
    }
    out.push_str(&summary(&all));
    out
}

/// `\ngoals met: 2 of 3 measured; 7 not measured\n`: the rows that have a goal.
fn summary(rows: &[(Row, Unit)]) -> String {
    let with_goal = rows.iter().filter(|(row, _)| row.goal.is_some());
    let (mut met, mut measured, mut missing) = (0, 0, 0);
    for (row, _) in with_goal {
        match row.met() {
            Met::Yes => {
                met += 1;
                measured += 1;
            }
            Met::No => measured += 1,
            Met::NotApplicable => missing += 1,
        }
    }
    format!("\ngoals met: {met} of {measured} measured; {missing} not measured\n")
}

/// A figure in its unit, "(earlier run)" when stale, or "not measured (…)".
pub(super) fn format_now(now: &Now, unit: Unit) -> String {
    match now {
        Now::Missing(why) => format!("not measured ({why})"),
        Now::Figure { value, stale } => {
            let figure = format_value(*value, unit);
            if *stale {
                format!("{figure} (earlier run)")
            } else {
                figure
            }
        }
    }
}

/// `≤ 20 µs`, `≥ 1200 req/s (…)`: the limit without trailing zeros, then the note.
pub(super) fn format_goal(goal: &Goal, unit: Unit) -> String {
    let bound = match goal.bound {
        Bound::AtMost => "≤",
        Bound::AtLeast => "≥",
    };
    let limit = trim_zeros(&format_value(goal.limit, unit));
    if goal.note.is_empty() {
        format!("{bound} {limit}")
    } else {
        format!("{bound} {limit} ({})", goal.note)
    }
}

/// `50.00 µs` → `50 µs`, `15.00% of a core` → `15% of a core`: a goal is a round number.
fn trim_zeros(figure: &str) -> String {
    let end = figure
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(figure.len());
    let (number, rest) = figure.split_at(end);
    let number = if number.contains('.') {
        number.trim_end_matches('0').trim_end_matches('.')
    } else {
        number
    };
    format!("{number}{rest}")
}

fn format_value(value: f64, unit: Unit) -> String {
    match unit {
        Unit::Time => format_time(value),
        Unit::ReqPerSec => format!("{} req/s", significant(value)),
        Unit::TokPerSec => format!("{} tok/s", significant(value)),
        Unit::SentencesPerSec => format!("{} sentences/s", significant(value)),
        Unit::Megabytes => format!("{} MB", significant(value / 1e6)),
        Unit::PercentOfIdeal => format!("{}% of the ideal", significant(value)),
        Unit::PercentOfCore => format!("{}% of a core", significant(value)),
        Unit::TokenShare => format!("{value:.1}%"),
        Unit::Ratio => format!("{value:.2}x"),
        Unit::Probes(of) => format!(
            "{value:.0}/{of} ({:.0}%)",
            100.0 * value / f64::from(of.max(1))
        ),
    }
}
