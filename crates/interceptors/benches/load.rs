//! The load bench: `Pipeline::ask` in native mode through `OpenAi` against mock servers on
//! loopback, writing `<target>/claij/bench-load.json`:
//! - CPU per call (process user + system time from `getrusage`, less the mock's thread, over many
//!   sequential one-shot calls, each with a fresh context, at zero latency, the client and an
//!   in-process mock (`support/mock.rs`) on one core; the small call and the floor also as the
//!   scheduler places them: see [`Placement`]): the small schema, the big one (90 definitions, a
//!   40-way tool union), and a call whose first reply is invalid (one retry);
//! - the floor under the small figure: the same exchange by reqwest alone, without claij;
//! - throughput at 64, 256, 1,024 and 10,000 calls in flight against mocks that answer after
//!   200 ms (the ideal is in-flight / 0.2 s), with the client's CPU as a share of one core and per
//!   call, and its peak memory. Here the client and the mocks are separate processes
//!   (`support/fleet.rs`: this executable re-run with `CLAIJ_LOAD_ROLE`), over real TCP on
//!   127.0.0.1, over HTTP/1.1 (one connection per call in flight) and, at 1,024 and 10,000, over
//!   HTTP/2 too (h2c by prior knowledge, `http_version = "http2"`: calls share connections of at
//!   most 100 streams, the backend opening another when all are full), so the CPU (`getrusage(RUSAGE_SELF)` in the client) and the peak resident set
//!   (`VmHWM`) are the client's alone; the mocks report what they answered and the latency they
//!   added, to show whether they kept up. The bench raises its soft `RLIMIT_NOFILE` to the hard
//!   limit (the children inherit it) and stops with a message naming the limit when it is still
//!   too low for 10,000 sockets.
//!
//! The throughput client runs on a two-worker multi-thread runtime, CPU per call on a
//! current-thread one. Without `--bench` (as in `cargo test --benches`) a short version runs and
//! nothing is written. CPU time counts whatever else the machine does, so run it on a quiet
//! machine (`cargo xtask bench` does).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use claij_backends::ApiKey;
use claij_backends::http::{HttpConfig, HttpVersion, RetryPolicy};
use claij_backends::openai::OpenAi;
use claij_interceptors::{Chain, Config, Context, Pipeline, StructuredMode};
use serde_json::{Value, json};

#[path = "support/mock.rs"]
mod mock;

#[path = "support/fleet.rs"]
mod fleet;

use fleet::{Fleet, Spawned, Wire};
use mock::{Mock, fixture, process_cpu};

const LATENCY: Duration = Duration::from_millis(200);

/// The calls in flight of the throughput rows (HTTP/1.1).
const IN_FLIGHT: [usize; 4] = [64, 256, 1024, 10_000];

/// The calls in flight of the throughput rows over HTTP/2.
const IN_FLIGHT_HTTP2: [usize; 2] = [1024, 10_000];

/// File descriptors a process needs besides one per connection (its executable, libraries, pipes,
/// the runtime's epoll and event fds, listeners).
const SPARE_FILES: u64 = 256;

fn main() {
    match std::env::var(fleet::ROLE).as_deref() {
        Ok("mock") => return fleet::mock_main(),
        Ok("client") => return client_main(),
        Ok(other) => panic!("unknown {} {other:?}", fleet::ROLE),
        Err(_) => {}
    }
    let measuring = std::env::args().any(|a| a == "--bench");
    // `cargo bench -p claij-interceptors --bench load -- 10000`: those throughput rows alone, over
    // HTTP/1.1 then HTTP/2 (`CLAIJ_LOAD_WIRE=http1` or `http2`: that one alone), printed, nothing
    // written.
    let only = in_flight_arguments(std::env::args().skip(1));
    if !only.is_empty() {
        let small_valid = fixture("small.valid.json");
        check_open_files(&only);
        let wires = match std::env::var("CLAIJ_LOAD_WIRE") {
            Ok(name) => vec![Wire::named(&name)],
            Err(_) => vec![Wire::Http1, Wire::Http2],
        };
        for in_flight in only {
            for &wire in &wires {
                let mocks = mocks_for(in_flight);
                let client = if std::env::var("CLAIJ_LOAD_CLIENT").as_deref() == Ok("reqwest") {
                    Client::Reqwest
                } else {
                    Client::Claij
                };
                let row = throughput(&small_valid, in_flight, 10, LATENCY, mocks, client, wire);
                println!("{}", row.describe(in_flight, LATENCY, mocks));
            }
        }
        return;
    }
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

    let in_flights: &[usize] = if measuring { &IN_FLIGHT } else { &[64, 1024] };
    let in_flights_http2: &[usize] = if measuring { &IN_FLIGHT_HTTP2 } else { &[1024] };
    check_open_files(in_flights);
    let runs = in_flights
        .iter()
        .map(|&n| (n, Wire::Http1))
        .chain(in_flights_http2.iter().map(|&n| (n, Wire::Http2)));
    let mut rows = Vec::new();
    for (in_flight, wire) in runs {
        let rounds = if measuring { 10 } else { 1 };
        let latency = if measuring {
            LATENCY
        } else {
            Duration::from_millis(20)
        };
        let mocks = mocks_for(in_flight);
        let row = throughput(
            &small_valid,
            in_flight,
            rounds,
            latency,
            mocks,
            Client::Claij,
            wire,
        );
        println!("{}", row.describe(in_flight, latency, mocks));
        rows.push(row.json(in_flight, latency, mocks));
    }
    // The floor at the most calls in flight: reqwest alone, no claij.
    let most = in_flights.iter().copied().max().unwrap_or(64);
    let (rounds, latency) = if measuring {
        (10, LATENCY)
    } else {
        (1, Duration::from_millis(20))
    };
    let floor = throughput(
        &small_valid,
        most,
        rounds,
        latency,
        mocks_for(most),
        Client::Reqwest,
        Wire::Http1,
    );
    println!(
        "the same exchange by reqwest alone: {}",
        floor.describe(most, latency, mocks_for(most))
    );
    let floor = floor.json(most, latency, mocks_for(most));
    if !measuring {
        return;
    }
    let report = json!({
        "machine": machine(),
        "rows": rows,
        "transport_floor": floor,
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

/// A native-mode pipeline on `OpenAi` at `url` speaking `version`, with `schema` as its base.
fn pipeline(url: &str, schema: &Value, version: HttpVersion) -> Arc<Pipeline> {
    let backend = OpenAi::new(ApiKey::new("sk-bench-not-a-real-key")).with_config(
        HttpConfig::new(url)
            .with_retry(RetryPolicy::none())
            .with_request_timeout(Duration::from_secs(60))
            .with_http_version(version),
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
    let pipeline = pipeline(&server.url, schema, HttpVersion::Auto);
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
    let transport = Transport::new(&server.url, schema);
    runtime.block_on(async {
        let call = || async { transport.call().await.unwrap() };
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

/// The calls in flight named on the command line: numbers standing alone, not the value of an
/// option such as criterion's `--sample-size 10` (which `cargo xtask bench -- ...` may pass on).
fn in_flight_arguments(args: impl Iterator<Item = String>) -> Vec<usize> {
    let mut found = Vec::new();
    let mut after_option = false;
    for arg in args {
        match arg.parse::<usize>() {
            Ok(n) if !after_option => found.push(n),
            _ => {}
        }
        after_option = arg.starts_with("--") && arg != "--bench";
    }
    found
}

/// How many mock processes serve `in_flight` calls: `CLAIJ_LOAD_MOCKS` when set, else one up to
/// 1,024 calls in flight and two above (one current-thread mock adds latency at 10,000: see the
/// `mock_added_ms_mean` of each row).
fn mocks_for(in_flight: usize) -> usize {
    if let Some(count) = std::env::var("CLAIJ_LOAD_MOCKS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
    {
        return count;
    }
    if in_flight > 1024 { 2 } else { 1 }
}

/// Raises the soft limit on open files to the hard one and stops, naming the limit, when it is
/// still too low for the client's sockets (a connect failing mid-run would be a worse message).
fn check_open_files(in_flights: &[usize]) {
    let (soft, hard) = fleet::raise_open_files();
    let most = in_flights.iter().copied().max().unwrap_or(0);
    let needed = most as u64 + SPARE_FILES;
    assert!(
        soft >= needed,
        "the load bench needs {needed} open files for {most} calls in flight, but RLIMIT_NOFILE \
         is {soft} (hard limit {hard}; the bench raised the soft limit as far as it may): raise \
         the hard limit (`ulimit -Hn {needed}` as root, `LimitNOFILE=` for a service, \
         /etc/security/limits.conf)"
    );
    println!("open files: soft limit {soft} (hard {hard}), {needed} needed");
}

/// One throughput row: the client process's figures and the mocks'.
struct Row {
    calls: u64,
    wall_s: f64,
    client_cpu_s: f64,
    peak_rss: u64,
    rss_before: u64,
    /// The peak once every connection was open (after the warm-up call of each task).
    peak_rss_warmed: u64,
    /// The resident set when the measured calls ended.
    rss_at_end: u64,
    latency_ms: [f64; 3],
    ask_future_bytes: u64,
    mock: fleet::MockStats,
    wire: Wire,
    /// The connections the mocks accepted during the warm-up (the calls' first round).
    warm_up_connections: u64,
}

impl Row {
    /// The peak memory above the client's start, per call in flight, in kB.
    fn per_call_kb(&self, in_flight: usize) -> f64 {
        self.peak_rss.saturating_sub(self.rss_before) as f64 / 1e3 / in_flight as f64
    }

    fn req_per_s(&self) -> f64 {
        self.calls as f64 / self.wall_s
    }

    fn describe(&self, in_flight: usize, latency: Duration, mocks: usize) -> String {
        let ideal = in_flight as f64 / latency.as_secs_f64();
        let [p50, p99, max] = self.latency_ms;
        format!(
            "{} {in_flight} in flight at {} ms: {:.0} calls/s of the ideal {ideal:.0} ({:.1}%), client \
             CPU {:.1}% of one core, {:.4} ms per call, peak memory {:.1} MB ({:.1} MB before the \
             calls, {:.1} MB at the peak of the warm-up, {:.1} MB at the end, {:.1} kB per call in \
             flight); call latency p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms; {mocks} mock \
             process(es): {:.0} answered/s, {:.1}% of one core, {:.2} ms added per reply on \
             average ({:.1} ms at most); {} connections opened in the warm-up, {} while measured; \
             the ask future {} bytes",
            self.wire.label(),
            latency.as_millis(),
            self.req_per_s(),
            self.req_per_s() / ideal * 100.0,
            self.client_cpu_s / self.wall_s * 100.0,
            self.client_cpu_s * 1e3 / self.calls as f64,
            self.peak_rss as f64 / 1e6,
            self.rss_before as f64 / 1e6,
            self.peak_rss_warmed as f64 / 1e6,
            self.rss_at_end as f64 / 1e6,
            self.per_call_kb(in_flight),
            self.mock.answered as f64 / self.wall_s,
            self.mock.cpu.as_secs_f64() / self.wall_s * 100.0,
            self.mock.added_sum.as_secs_f64() * 1e3 / self.mock.answered.max(1) as f64,
            self.mock.added_max.as_secs_f64() * 1e3,
            self.warm_up_connections,
            self.mock.connections,
            self.ask_future_bytes,
        )
    }

    fn json(&self, in_flight: usize, latency: Duration, mocks: usize) -> Value {
        let ideal = in_flight as f64 / latency.as_secs_f64();
        let [p50, p99, max] = self.latency_ms;
        json!({
            "http": self.wire.name(),
            "in_flight": in_flight,
            "latency_ms": latency.as_millis(),
            "calls": self.calls,
            "req_per_s": self.req_per_s(),
            "ideal_req_per_s": ideal,
            "share_of_ideal_percent": self.req_per_s() / ideal * 100.0,
            "cpu_percent_of_one_core": self.client_cpu_s / self.wall_s * 100.0,
            "cpu_ms_per_call": self.client_cpu_s * 1e3 / self.calls as f64,
            "peak_rss_bytes": self.peak_rss,
            "rss_before_calls_bytes": self.rss_before,
            "peak_rss_after_warm_up_bytes": self.peak_rss_warmed,
            "rss_at_end_bytes": self.rss_at_end,
            "peak_kb_per_call_in_flight": self.per_call_kb(in_flight),
            "call_latency_ms": {"p50": p50, "p99": p99, "max": max},
            "mocks": mocks,
            "mock_answered_per_s": self.mock.answered as f64 / self.wall_s,
            "mock_cpu_percent_of_one_core": self.mock.cpu.as_secs_f64() / self.wall_s * 100.0,
            "mock_added_ms_mean": self.mock.added_sum.as_secs_f64() * 1e3 / self.mock.answered.max(1) as f64,
            "mock_added_ms_max": self.mock.added_max.as_secs_f64() * 1e3,
            "connections_opened_in_warm_up": self.warm_up_connections,
            "connections_opened_while_measured": self.mock.connections,
            "ask_future_bytes": self.ask_future_bytes,
        })
    }
}

/// Starts `mocks` mock processes answering after `latency` and a client process making, from each
/// of `in_flight` tasks, one warm-up call (which opens the connections) then `rounds` measured
/// calls one after another; the mocks and the client are killed if anything fails.
fn throughput(
    reply: &str,
    in_flight: usize,
    rounds: usize,
    latency: Duration,
    mocks: usize,
    client: Client,
    wire: Wire,
) -> Row {
    use std::io::{BufRead, Write};

    let mut fleet = Fleet::start(mocks, latency, reply, wire);
    let mut command = Spawned::command("client");
    command
        .env("CLAIJ_LOAD_CLIENT", client.name())
        .env("CLAIJ_LOAD_HTTP", wire.name())
        .env("CLAIJ_LOAD_URL", &fleet.url)
        .env("CLAIJ_LOAD_IN_FLIGHT", in_flight.to_string())
        .env("CLAIJ_LOAD_ROUNDS", rounds.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut client = Spawned::spawn(command, format!("load client ({in_flight} in flight)"));
    let mut stdin = client.child.stdin.take().unwrap();
    let stdout = client.child.stdout.take().unwrap();
    let (lines_tx, lines) = std::sync::mpsc::channel();
    // Under heaptrack (`CLAIJ_LOAD_HEAPTRACK`) its own lines share the client's stdout.
    let heaptrack = std::env::var_os(fleet::HEAPTRACK).is_some();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if heaptrack && !line.starts_with('{') {
                continue;
            }
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    // Generous: a stalled run fails with the limit named, never hangs the bench.
    let limit = Duration::from_secs(120) + latency * (rounds as u32) * 10;
    let next = |what: &str| -> Value {
        let line = lines.recv_timeout(limit).unwrap_or_else(|_| {
            panic!(
                "the load client ({in_flight} in flight) gave no {what} within {} s (or exited)",
                limit.as_secs()
            )
        });
        serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("the load client said {line:?}, not its {what}"))
    };
    let warmed = next("warm-up report");
    assert_eq!(warmed["warmed"], true, "the load client said {warmed}");
    let before = fleet.stats();
    if wire == Wire::Http2 {
        // Calls share connections: one per 100 calls in flight (the backend's
        // streams_per_connection, the mocks' cap), not one per call.
        let lanes = in_flight.div_ceil(fleet::MOCK_STREAMS as usize) as u64;
        assert!(
            (1..=2 * lanes).contains(&before.connections),
            "{} connections for {in_flight} calls in flight over HTTP/2 (expected about {lanes})",
            before.connections
        );
    }
    writeln!(stdin, "go").unwrap();
    stdin.flush().unwrap();
    let result = next("result");
    let mock = fleet.stats().since(before);
    let status = client.wait(limit);
    assert!(status.success(), "the load client failed: {status}");
    let number = |name: &str| {
        result[name]
            .as_f64()
            .unwrap_or_else(|| panic!("the load client's {name}: {result}"))
    };
    Row {
        calls: number("calls") as u64,
        wall_s: number("wall_s"),
        client_cpu_s: number("cpu_s"),
        peak_rss: number("peak_rss_bytes") as u64,
        rss_before: number("rss_before_calls_bytes") as u64,
        peak_rss_warmed: number("peak_rss_after_warm_up_bytes") as u64,
        rss_at_end: number("rss_at_end_bytes") as u64,
        latency_ms: [number("p50_ms"), number("p99_ms"), number("max_ms")],
        ask_future_bytes: number("ask_future_bytes") as u64,
        mock,
        wire,
        warm_up_connections: before.connections,
    }
}

/// What the load client calls with.
#[derive(Clone, Copy, PartialEq)]
enum Client {
    /// `Pipeline::ask`: claij's call path.
    Claij,
    /// The same exchange by reqwest alone, without claij (as [`cpu_per_call_transport`]): the
    /// floor under the claij rows.
    Reqwest,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::Claij => "claij",
            Client::Reqwest => "reqwest",
        }
    }
}

/// The exchange of [`cpu_per_call_transport`] for the load client: reqwest posting the same chat
/// request and parsing the reply's content as JSON.
struct Transport {
    client: reqwest::Client,
    url: String,
    body: bytes::Bytes,
}

impl Transport {
    fn new(url: &str, schema: &Value) -> Transport {
        let body = serde_json::to_vec(&json!({
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "Go"}],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "response", "strict": true, "schema": schema},
            },
        }))
        .unwrap();
        Transport {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            url: format!("{url}/chat/completions"),
            body: body.into(),
        }
    }

    async fn call(&self) -> Result<(), String> {
        let reply = self
            .client
            .post(&self.url)
            .bearer_auth("sk-bench-not-a-real-key")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(self.body.clone())
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| e.to_string())?
            .bytes()
            .await
            .map_err(|e| e.to_string())?;
        let reply: Value = serde_json::from_slice(&reply).map_err(|e| e.to_string())?;
        let content = reply["choices"][0]["message"]["content"]
            .as_str()
            .ok_or("no content")?;
        let answer: Value = serde_json::from_str(content).map_err(|e| e.to_string())?;
        std::hint::black_box(answer);
        Ok(())
    }
}

/// Call latencies in 1 ms buckets up to 10 s (the last bucket holds the rest).
struct Histogram(Vec<std::sync::atomic::AtomicU64>);

impl Histogram {
    const BUCKETS: usize = 10_001;

    fn new() -> Histogram {
        Histogram((0..Self::BUCKETS).map(|_| Default::default()).collect())
    }

    fn record(&self, elapsed: Duration) {
        let bucket = (elapsed.as_millis() as usize).min(Self::BUCKETS - 1);
        self.0[bucket].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The upper edge in ms of the bucket holding the `q` quantile, and of the highest used.
    fn quantiles(&self, qs: &[f64]) -> Vec<f64> {
        let counts: Vec<u64> = self
            .0
            .iter()
            .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        let edge = |rank: u64| {
            let mut seen = 0;
            for (bucket, count) in counts.iter().enumerate() {
                seen += count;
                if seen >= rank.max(1) {
                    return (bucket + 1) as f64;
                }
            }
            counts.len() as f64
        };
        qs.iter()
            .map(|q| edge((q * total as f64).ceil() as u64))
            .collect()
    }
}

/// The load client process (`CLAIJ_LOAD_ROLE=client`): `CLAIJ_LOAD_IN_FLIGHT` tasks each make one
/// warm-up call through `Pipeline::ask` to `CLAIJ_LOAD_URL`, then, after the bench says `go` on
/// stdin, `CLAIJ_LOAD_ROUNDS` calls one after another. Prints a JSON line after each phase: the
/// second with the calls, the wall and CPU time of the measured phase, and the peak memory.
fn client_main() {
    use std::io::{BufRead, Write};

    fleet::die_with_parent();
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    let url = var("CLAIJ_LOAD_URL");
    let in_flight: usize = var("CLAIJ_LOAD_IN_FLIGHT").parse().unwrap();
    let rounds: usize = var("CLAIJ_LOAD_ROUNDS").parse().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let reqwest_alone = var("CLAIJ_LOAD_CLIENT") == Client::Reqwest.name();
    let small: Value = serde_json::from_str(&fixture("small.json")).unwrap();
    let version = match Wire::named(&var("CLAIJ_LOAD_HTTP")) {
        Wire::Http1 => HttpVersion::Http1,
        Wire::Http2 => HttpVersion::Http2,
    };
    let pipeline = pipeline(&url, &small, version);
    let transport = Arc::new(Transport::new(&url, &small));
    let histogram = Arc::new(Histogram::new());
    let (_, rss_before) = fleet::memory();
    let round = |per_task: usize, record: bool| {
        let pipeline = pipeline.clone();
        let transport = transport.clone();
        let histogram = histogram.clone();
        runtime.block_on(async move {
            let tasks: Vec<_> = (0..in_flight)
                .map(|_| {
                    let pipeline = pipeline.clone();
                    let transport = transport.clone();
                    let histogram = histogram.clone();
                    tokio::spawn(async move {
                        for _ in 0..per_task {
                            let started = Instant::now();
                            if reqwest_alone {
                                transport.call().await?;
                            } else {
                                let answer = pipeline
                                    .ask(&mut Context::default(), "Go")
                                    .await
                                    .map_err(|e| e.to_string())?;
                                std::hint::black_box(answer);
                            }
                            if record {
                                histogram.record(started.elapsed());
                            }
                        }
                        Ok::<(), String>(())
                    })
                })
                .collect();
            let (mut failed, mut first) = (0usize, None);
            for task in tasks {
                if let Err(error) = task.await.unwrap() {
                    failed += 1;
                    first.get_or_insert(error);
                }
            }
            if let Some(first) = first {
                panic!(
                    "{failed} of {in_flight} load tasks failed at {in_flight} in flight; the \
                     first: {first}"
                );
            }
        });
    };
    let say = |value: Value| {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{value}").unwrap();
        out.flush().unwrap();
    };
    round(1, false);
    let (peak_warmed, _) = fleet::memory();
    say(json!({"warmed": true}));
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go).unwrap();
    let cpu = process_cpu();
    let started = Instant::now();
    round(rounds, true);
    let wall = started.elapsed().as_secs_f64();
    let cpu = (process_cpu() - cpu).as_secs_f64();
    let (peak, at_end) = fleet::memory();
    let q = histogram.quantiles(&[0.5, 0.99, 1.0]);
    // What one call holds while it waits, before anything it allocates.
    let ask_future_bytes = std::mem::size_of_val(&pipeline.ask(&mut Context::default(), "Go"));
    say(json!({
        "ask_future_bytes": ask_future_bytes,
        "calls": in_flight * rounds,
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_bytes": peak,
        "rss_before_calls_bytes": rss_before,
        "peak_rss_after_warm_up_bytes": peak_warmed,
        "rss_at_end_bytes": at_end,
        "p50_ms": q[0],
        "p99_ms": q[1],
        "max_ms": q[2],
    }));
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
