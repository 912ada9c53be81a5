//! End-to-end structured calls through `OpenAi` against a local server answering like OpenAI:
//! (a) client CPU per call, sequential, zero latency; (b) throughput with 256 calls in flight at
//! 200 ms simulated latency (ideal: 1280 calls/s), with the client's CPU as a share of one core;
//! (c) how soon a call returns once cancelled while its request waits at the server (the figure
//! the tests leave to this bench: they check that a cancel ends a call, not how fast).
//!
//! The server is claij-interceptors' bench mock (`support/mock.rs` there): HTTP/1.1 keep-alive on
//! 127.0.0.1, on its own thread and single-threaded runtime, so its CPU (`getrusage`) can be told
//! apart from the client's. It stops when the bench ends. Without `--bench` (as in `cargo test
//! --benches`) (b) runs a short version. The client runs on a two-worker multi-thread runtime;
//! `BENCH_CURRENT_THREAD=1` runs (b) on a current-thread one instead. CPU times count whatever else
//! the process does in the window (so run it on a quiet machine).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use claij_backends::http::{CancelToken, HttpConfig, RetryPolicy};
use claij_backends::openai::OpenAi;
use claij_backends::{ApiKey, Backend, ChatRequest, Message};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
// The call benches' mock server, shared with claij-interceptors' benches.
#[path = "../../interceptors/benches/support/mock.rs"]
mod mock;

use mock::Mock;

/// The content of every answer: a structured reply to [`request`].
fn content() -> String {
    json!({"answer": "4", "state": "done", "confidence": 0.97}).to_string()
}

fn start_server(latency: Duration) -> Mock {
    Mock::start(latency, vec![content()])
}

/// CPU seconds of the whole process and of the server thread.
fn cpu(server: &Mock) -> (f64, f64) {
    (
        mock::process_cpu().as_secs_f64(),
        server.cpu().as_secs_f64(),
    )
}

fn backend(server: &Mock) -> OpenAi {
    OpenAi::new(ApiKey::new("sk-bench-not-a-real-key"))
        .with_config(HttpConfig::new(server.url.clone()).with_retry(RetryPolicy::none()))
}

/// A structured request like the pipeline sends: system prompt, user input, strict schema.
fn request() -> ChatRequest {
    let schema = json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "description": "The answer to the user's question"},
            "state": {"type": "string", "enum": ["done", "more", "error"]},
            "confidence": {"type": ["number", "null"], "description": "How sure, from 0 to 1"}
        },
        "required": ["answer", "state", "confidence"],
        "additionalProperties": false
    });
    ChatRequest::new("gpt-4o-mini")
        .system("You are a careful assistant. Answer with JSON that matches the schema.")
        .message(Message::user("What is 2+2? Say how sure you are."))
        .structured("response", schema, true)
        .temperature(0.0)
}

fn sequential(c: &mut Criterion) {
    let server = start_server(Duration::ZERO);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let backend = backend(&server);
    let request = request();
    runtime.block_on(backend.complete(&request)).unwrap();
    c.bench_function("http/structured-call/sequential-zero-latency", |b| {
        b.iter(|| black_box(runtime.block_on(backend.complete(&request)).unwrap()))
    });

    let calls = if measuring() { 5_000 } else { 200 };
    let (process_before, server_before) = cpu(&server);
    let started = Instant::now();
    for _ in 0..calls {
        black_box(runtime.block_on(backend.complete(&request)).unwrap());
    }
    let wall = started.elapsed();
    let (process_after, server_after) = cpu(&server);
    let client = (process_after - process_before) - (server_after - server_before);
    println!(
        "sequential, zero latency: {calls} calls in {:.2} s, {:.0} us wall per call, \
         client CPU {:.1} us per call (server {:.1} us per call)",
        wall.as_secs_f64(),
        wall.as_secs_f64() * 1e6 / calls as f64,
        client * 1e6 / calls as f64,
        (server_after - server_before) * 1e6 / calls as f64,
    );
}

fn in_flight(_: &mut Criterion) {
    let (concurrency, calls, latency) = if measuring() {
        (256, 2_560, Duration::from_millis(200))
    } else {
        (32, 64, Duration::from_millis(20))
    };
    let server = start_server(latency);
    let runtime = if std::env::var_os("BENCH_CURRENT_THREAD").is_some() {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    };
    let backend = Arc::new(backend(&server));
    let request = Arc::new(request());
    // Each round returns the mean latency of its calls.
    let round = |per_task: usize| {
        let backend = backend.clone();
        let request = request.clone();
        runtime.block_on(async move {
            let tasks: Vec<_> = (0..concurrency)
                .map(|_| {
                    let backend = backend.clone();
                    let request = request.clone();
                    tokio::spawn(async move {
                        let mut waited = Duration::ZERO;
                        for _ in 0..per_task {
                            let started = Instant::now();
                            black_box(backend.complete(&request).await.unwrap());
                            waited += started.elapsed();
                        }
                        waited
                    })
                })
                .collect();
            let mut waited = Duration::ZERO;
            for task in tasks {
                waited += task.await.unwrap();
            }
            waited / (concurrency * per_task) as u32
        })
    };
    // Open the connections first: the steady state is what is measured.
    round(1);
    let (process_before, server_before) = cpu(&server);
    let started = Instant::now();
    let latency_seen = round(calls / concurrency);
    let wall = started.elapsed().as_secs_f64();
    let (process_after, server_after) = cpu(&server);
    let server_cpu = server_after - server_before;
    let client = (process_after - process_before) - server_cpu;
    let ideal = concurrency as f64 / latency.as_secs_f64();
    println!(
        "{concurrency} in flight, {} ms latency: {calls} calls in {wall:.2} s = {:.0} calls/s \
         (ideal {ideal:.0}), mean call {:.1} ms; client CPU {:.3} s = {:.1}% of one core ({:.1} us per call); \
         server thread {:.1}% of one core",
        latency.as_millis(),
        calls as f64 / wall,
        latency_seen.as_secs_f64() * 1e3,
        client,
        client / wall * 100.0,
        client * 1e6 / calls as f64,
        server_cpu / wall * 100.0,
    );
}

fn cancel_in_flight(_: &mut Criterion) {
    let calls = if measuring() { 200 } else { 5 };
    // The server would answer after 10 s: every call ends by its cancel.
    let server = start_server(Duration::from_secs(10));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let backend = backend(&server);
    let request = request();
    let mut after: Vec<Duration> = runtime.block_on(async {
        let mut after = Vec::with_capacity(calls);
        for _ in 0..calls {
            let token = CancelToken::new();
            let call = backend.complete_with(&request, &token);
            tokio::pin!(call);
            // Time for the request to reach the server and wait there.
            tokio::select! {
                outcome = &mut call => panic!("ended before the cancel: {outcome:?}"),
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            let cancelled = Instant::now();
            token.cancel();
            let outcome = call.await;
            after.push(cancelled.elapsed());
            assert!(outcome.is_err(), "{outcome:?}");
        }
        after
    });
    after.sort();
    println!(
        "cancel in flight: {calls} calls returned {:.1} us after the cancel (median), {:.1} us (max)",
        after[calls / 2].as_secs_f64() * 1e6,
        after[calls - 1].as_secs_f64() * 1e6,
    );
}

/// Whether this is a real `cargo bench` run rather than a quick test of the bench.
fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// The big bench schema (90 definitions, a 40-way tool union) compiled to OpenAI's strict dialect,
/// as the pipeline memoizes it.
fn big_schema() -> serde_json::Value {
    let schema: serde_json::Value = serde_json::from_str(&mock::fixture("big.json")).unwrap();
    claij_schema::dialect::Dialect::OpenAiStrict
        .compile(&schema)
        .unwrap()
        .schema
}

/// `request/build_big`: one attempt's request as the pipeline builds it (model, system prompt,
/// history, the memoized schema); `adapter/transform_big_native`: its HTTP body, as `OpenAi` makes it.
fn big_request(c: &mut Criterion) {
    use claij_backends::{OutputMode, StructuredOutput};
    let compiled = big_schema();
    let shared = StructuredOutput {
        name: "response".to_owned(),
        schema: compiled.into(),
        strict: true,
        mode: OutputMode::Native,
    };
    let system = "You are a careful assistant. ".repeat(8);
    let history = [
        Message::user("Plan the next steps."),
        Message::assistant("{\"calls\": []}"),
    ];
    let build = || {
        let mut request = ChatRequest::new("gpt-4o-mini");
        request.system = Some(system.clone());
        request.messages.extend(history.iter().cloned());
        request.messages.push(Message::user("Go"));
        request.structured_output = Some(StructuredOutput {
            name: shared.name.clone(),
            schema: shared.schema.clone(),
            strict: shared.strict,
            mode: shared.mode,
        });
        request
    };
    c.bench_function("request/build_big", |b| b.iter(|| black_box(build())));
    let request = build();
    let adapter = claij_backends::openai::OpenAiAdapter::default();
    c.bench_function("adapter/transform_big_native", |b| {
        b.iter(|| black_box(wire_bytes(&adapter, &request)))
    });
}

criterion_group! {
    name = requests;
    config = Criterion::default();
    targets = big_request
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50).measurement_time(Duration::from_secs(4));
    targets = sequential, in_flight, cancel_in_flight
}
criterion_main!(requests, benches);

/// The body `adapter` sends for `request`, serialized (its length, so nothing is optimised away).
fn wire_bytes(adapter: &impl claij_backends::Adapter, request: &ChatRequest) -> usize {
    // The body comes serialized: what the HTTP layer sends.
    adapter
        .transform_request(request, false)
        .unwrap()
        .body
        .len()
}
