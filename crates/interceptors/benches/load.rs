//! The load bench: `Pipeline::ask` in native mode through `OpenAi` against an in-process mock on
//! loopback (`support/mock.rs`), writing `<target>/claij/bench-load.json`:
//! - CPU per call (process user + system time from `getrusage`, less the mock's thread, over many
//!   sequential one-shot calls, each with a fresh context, at zero latency, the client and the mock
//!   on one core; the small call and the floor also as the scheduler places them: see [`Placement`]): the small schema, the big one (90 definitions, a 40-way tool
//!   union), and a call whose first reply is invalid (one retry);
//! - the floor under the small figure: the same exchange by reqwest alone, without claij;
//! - throughput at 64, 256 and 1024 calls in flight against a mock that answers after 200 ms (the
//!   ceiling is in-flight / 0.2 s), with the client's CPU as a share of one core and per call.
//!
//! The throughput rows run the client on a two-worker multi-thread runtime, CPU per call on a
//! current-thread one. Without `--bench` (as in
//! `cargo test --benches`) a short version runs and nothing is written. CPU time counts whatever
//! else the process does, so run it on a quiet machine (`cargo xtask bench` does).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use claij_backends::ApiKey;
use claij_backends::http::{HttpConfig, RetryPolicy};
use claij_backends::openai::OpenAi;
use claij_interceptors::{Chain, Config, Context, Pipeline, StructuredMode};
use serde_json::{Value, json};

#[path = "support/mock.rs"]
mod mock;

use mock::{Mock, fixture, process_cpu};

const LATENCY: Duration = Duration::from_millis(200);

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let small: Value = serde_json::from_str(&fixture("small.json")).unwrap();
    let big: Value = serde_json::from_str(&fixture("big.json")).unwrap();
    let small_valid = fixture("small.valid.json");
    let big_valid = fixture("big.valid.json");
    // Two required fields missing: nothing to coerce, so the call retries.
    let small_invalid = r#"{"answer": "42"}"#.to_owned();

    // One call at a time runs on a current-thread runtime, as a one-at-a-time caller would (a
    // multi-thread runtime adds a cross-thread wake-up per call).
    let sequential_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (sequential, big_calls) = if measuring { (4_000, 2_000) } else { (20, 10) };
    let one = Placement::OneCore;
    let cpu_small = cpu_per_call(
        &sequential_runtime,
        &small,
        vec![small_valid.clone()],
        sequential,
        1,
        one,
    );
    let cpu_big = cpu_per_call(
        &sequential_runtime,
        &big,
        vec![big_valid],
        big_calls,
        1,
        one,
    );
    let cpu_retry = cpu_per_call(
        &sequential_runtime,
        &small,
        vec![small_invalid, small_valid.clone()],
        sequential / 2,
        2,
        one,
    );
    let cpu_floor =
        cpu_per_call_transport(&sequential_runtime, &small, &small_valid, sequential, one);
    println!(
        "CPU per call at 1 in flight, zero latency, client and mock on one core: small \
         {cpu_small:.4} ms, big {cpu_big:.4} ms, small with one retry {cpu_retry:.4} ms; the same \
         exchange with reqwest alone {cpu_floor:.4} ms"
    );
    let scheduler = Placement::Scheduler;
    let cpu_small_spread = cpu_per_call(
        &sequential_runtime,
        &small,
        vec![small_valid.clone()],
        sequential,
        1,
        scheduler,
    );
    let cpu_floor_spread = cpu_per_call_transport(
        &sequential_runtime,
        &small,
        &small_valid,
        sequential,
        scheduler,
    );
    println!(
        "the same, placed by the scheduler: small {cpu_small_spread:.4} ms; reqwest alone \
         {cpu_floor_spread:.4} ms"
    );

    let mut rows = Vec::new();
    for in_flight in [64usize, 256, 1024] {
        let rounds = if measuring { 10 } else { 1 };
        let latency = if measuring {
            LATENCY
        } else {
            Duration::from_millis(20)
        };
        let row = throughput(&runtime, &small, &small_valid, in_flight, rounds, latency);
        println!(
            "{in_flight} in flight at {} ms: {:.0} calls/s (ceiling {:.0}), client CPU {:.1}% of one \
             core, {:.4} ms per call",
            latency.as_millis(),
            row.req_per_s,
            in_flight as f64 / latency.as_secs_f64(),
            row.cpu_percent,
            row.cpu_ms_per_call,
        );
        rows.push(json!({
            "in_flight": in_flight,
            "latency_ms": latency.as_millis(),
            "req_per_s": row.req_per_s,
            "cpu_percent_of_one_core": row.cpu_percent,
            "cpu_ms_per_call": row.cpu_ms_per_call,
        }));
    }
    if !measuring {
        return;
    }
    let report = json!({
        "machine": machine(),
        "rows": rows,
        "cpu_ms_per_call_small": cpu_small,
        "cpu_ms_per_call_big": cpu_big,
        "cpu_ms_per_call_retry": cpu_retry,
        "cpu_ms_per_call_transport": cpu_floor,
        "cpu_ms_per_call_small_scheduler_placed": cpu_small_spread,
        "cpu_ms_per_call_transport_scheduler_placed": cpu_floor_spread,
        "placement": "client and mock on one core (the *_scheduler_placed figures: as the scheduler put them)",
    });
    let dir = target_dir().join("claij");
    std::fs::create_dir_all(&dir).expect("create target/claij");
    let path = dir.join("bench-load.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap())
        .expect("write the report");
    println!("wrote {}", path.display());
}

/// A native-mode pipeline on `OpenAi` at `url`, with `schema` as its base.
fn pipeline(url: &str, schema: &Value) -> Arc<Pipeline> {
    let backend = OpenAi::new(ApiKey::new("sk-bench-not-a-real-key")).with_config(
        HttpConfig::new(url)
            .with_retry(RetryPolicy::none())
            .with_request_timeout(Duration::from_secs(60)),
    );
    let mut config = Config::new("gpt-4o-mini");
    config.structured = StructuredMode::Native;
    Arc::new(
        Pipeline::new(Arc::new(backend), config, Chain::new()).with_base_schema(schema.clone()),
    )
}

/// Client CPU milliseconds per call over `calls` sequential calls at zero latency, each taking
/// `attempts` attempts (the mock's replies cycle).
fn cpu_per_call(
    runtime: &tokio::runtime::Runtime,
    schema: &Value,
    replies: Vec<String>,
    calls: usize,
    attempts: usize,
    placement: Placement,
) -> f64 {
    let server = Mock::start_on(Duration::ZERO, replies, placement.cpu());
    let _pinned = placement.pin_caller();
    let pipeline = pipeline(&server.url, schema);
    runtime.block_on(async {
        // One-shot calls: a fresh context each (no history grows from call to call).
        // Warm up: the connection, the schema's preparation and dialect.
        for _ in 0..5 {
            let answer = pipeline.ask(&mut Context::default(), "Go").await.unwrap();
            assert_eq!(answer.attempts.len(), attempts);
        }
        let (process, server_cpu) = (process_cpu(), server.cpu());
        for _ in 0..calls {
            let answer = pipeline.ask(&mut Context::default(), "Go").await.unwrap();
            std::hint::black_box(answer);
        }
        let client = (process_cpu() - process) - (server.cpu() - server_cpu);
        client.as_secs_f64() * 1e3 / calls as f64
    })
}

/// The floor under [`cpu_per_call`]'s small figure: client CPU milliseconds per call when reqwest
/// alone (no claij) posts a chat request of the same shape (the small schema as a native
/// `response_format`) to the same mock and parses the reply as JSON, on the same kind of runtime.
/// The kernel's loopback TCP and the HTTP stack are in both figures; the difference is claij's.
fn cpu_per_call_transport(
    runtime: &tokio::runtime::Runtime,
    schema: &Value,
    reply: &str,
    calls: usize,
    placement: Placement,
) -> f64 {
    let server = Mock::start_on(Duration::ZERO, vec![reply.to_owned()], placement.cpu());
    let _pinned = placement.pin_caller();
    let body = serde_json::to_vec(&json!({
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Go"}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "response", "strict": true, "schema": schema},
        },
    }))
    .unwrap();
    let body = bytes::Bytes::from(body);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let url = format!("{}/chat/completions", server.url);
    runtime.block_on(async {
        let call = || async {
            let reply = client
                .post(&url)
                .bearer_auth("sk-bench-not-a-real-key")
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone())
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            let reply: Value = serde_json::from_slice(&reply).unwrap();
            let content = reply["choices"][0]["message"]["content"].as_str().unwrap();
            let answer: Value = serde_json::from_str(content).unwrap();
            std::hint::black_box(answer);
        };
        for _ in 0..5 {
            call().await;
        }
        let (process, server_cpu) = (process_cpu(), server.cpu());
        for _ in 0..calls {
            call().await;
        }
        let client = (process_cpu() - process) - (server.cpu() - server_cpu);
        client.as_secs_f64() * 1e3 / calls as f64
    })
}

/// Where the client's thread and the mock's run during a CPU-per-call measure.
///
/// Left to the scheduler, the two threads of a call's ping-pong often sit on different CPUs, and
/// each wake-up of the other then costs an inter-processor interrupt, charged to the waker: on this
/// kind of virtual machine that alone moves the small call's figure between about 35 and 85 µs from
/// run to run with the same code. On one core the wake-ups are plain context switches, the figure
/// is steady, and it is closer to a real client's (whose server is on another machine, woken by
/// the network, not by the client). Both are reported; the goals use one core.
#[derive(Clone, Copy)]
enum Placement {
    OneCore,
    Scheduler,
}

impl Placement {
    fn cpu(self) -> Option<usize> {
        match self {
            Placement::OneCore => Some(0),
            Placement::Scheduler => None,
        }
    }

    /// Pins the calling thread for the placement, until the guard drops.
    fn pin_caller(self) -> impl Drop {
        struct Unpin(bool);
        impl Drop for Unpin {
            fn drop(&mut self) {
                if self.0 {
                    mock::pin_thread(None);
                }
            }
        }
        if let Some(cpu) = self.cpu() {
            mock::pin_thread(Some(cpu));
        }
        Unpin(self.cpu().is_some())
    }
}

struct Row {
    req_per_s: f64,
    cpu_percent: f64,
    cpu_ms_per_call: f64,
}

/// `in_flight` tasks each making `rounds` calls one after another, against a mock at `latency`.
fn throughput(
    runtime: &tokio::runtime::Runtime,
    schema: &Value,
    reply: &str,
    in_flight: usize,
    rounds: usize,
    latency: Duration,
) -> Row {
    let server = Mock::start(latency, vec![reply.to_owned()]);
    let pipeline = pipeline(&server.url, schema);
    let round = |per_task: usize| {
        let pipeline = pipeline.clone();
        runtime.block_on(async move {
            let tasks: Vec<_> = (0..in_flight)
                .map(|_| {
                    let pipeline = pipeline.clone();
                    tokio::spawn(async move {
                        for _ in 0..per_task {
                            let answer = pipeline.ask(&mut Context::default(), "Go").await.unwrap();
                            std::hint::black_box(answer);
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
        })
    };
    // Open the connections first: the steady state is what is measured.
    round(1);
    let (process, server_cpu) = (process_cpu(), server.cpu());
    let started = Instant::now();
    round(rounds);
    let wall = started.elapsed().as_secs_f64();
    let client = ((process_cpu() - process) - (server.cpu() - server_cpu)).as_secs_f64();
    let calls = (in_flight * rounds) as f64;
    Row {
        req_per_s: calls / wall,
        cpu_percent: client / wall * 100.0,
        cpu_ms_per_call: client * 1e3 / calls,
    }
}

/// `N cores, <CPU model>`, from `/proc/cpuinfo`.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    format!("{cores} cores, {model}")
}

fn target_dir() -> std::path::PathBuf {
    // Benches run from the package directory; the workspace target is two levels up unless overridden.
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target")
        })
}
