//! Runner throughput and memory: transitions per second with a zero-latency model (every `llm` state
//! through the whole pipeline: prompt, trail replay, extraction, validation, routing) and with services
//! only; and the heap each run holds while suspended in a `human` state, counted by this binary's
//! global allocator over 10,000 runs.
//!
//! The model is a closure, not `Scripted`: `Scripted` keeps every request it gets, which over
//! criterion's iterations would grow without bound and measure itself.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use claij_backends::{Backend, BoxFuture, Capabilities, ChatRequest, ChatResponse};
use claij_fsm::{Fsm, Interrupt, Outcome, Run, Runner, service_fn};
use claij_interceptors::Config;
use criterion::{Criterion, Throughput, criterion_group};
use serde_json::{Value, json};

/// Actions per run in the throughput benchmarks (plus the `start` transition).
const ACTIONS: usize = 100;
/// Runs kept suspended for the memory figure.
const SUSPENDED: usize = 10_000;

/// Live heap bytes, kept by [`Counting`].
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting live bytes (one relaxed atomic per call).
struct Counting;

// SAFETY: every call is forwarded to `System` unchanged; the counter only observes sizes.
#[allow(unsafe_code)] // a global allocator is an unsafe trait; this one only forwards to System
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` with this layout.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A model that answers at once with `reply(request)` and remembers nothing.
struct Instant<F>(F);

impl<F: Fn(&ChatRequest) -> String + Send + Sync> Backend for Instant<F> {
    fn provider(&self) -> &str {
        "bench"
    }

    fn capabilities(&self, _model: &str) -> Capabilities {
        Capabilities::prompted()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, claij_backends::Error>> {
        Box::pin(std::future::ready(Ok(ChatResponse::text((self.0)(
            request,
        )))))
    }
}

fn fsm(value: Value) -> Fsm {
    Fsm::new(serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `a` and `b` (of `action`) in a loop: `a -> b -> a ...`, until `b` ends the run.
fn cycle(action: &str) -> Fsm {
    let n = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    fsm(json!({
        "id": format!("cycle-{action}"),
        "states": [
            {"id": "a", "action": action, "config": {"service": "step"}},
            {"id": "b", "action": action, "config": {"service": "step"}},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "a"], "schema": n},
            {"id": ["a", "b"], "schema": n},
            {"id": ["b", "a"], "schema": n},
            {"id": ["b", "end"], "schema": n}
        ]
    }))
}

/// The event of the `k`th action (0-based) of a run of `actions`: even ones are in `a`.
fn step(k: usize, actions: usize) -> Value {
    if k.is_multiple_of(2) {
        json!({"id": ["a", "b"], "n": k})
    } else if k + 1 >= actions {
        json!({"id": ["b", "end"], "n": k})
    } else {
        json!({"id": ["b", "a"], "n": k})
    }
}

fn llm_runner(actions: usize) -> Runner {
    // The `k`th call sees the `k` earlier events plus its input.
    let backend = Instant(move |r: &ChatRequest| step(r.messages.len() - 1, actions).to_string());
    Runner::new(cycle("llm")).with_llm(Arc::new(backend), Config::new("bench"))
}

fn service_runner(actions: usize) -> Runner {
    Runner::new(cycle("service")).with_service(
        "step",
        service_fn(move |call| Ok(step(call.trail.entries.len() - 1, actions))),
    )
}

fn run_once(rt: &tokio::runtime::Runtime, runner: &Runner) -> usize {
    let mut run = runner
        .start(json!({"n": 0}))
        .unwrap_or_else(|e| panic!("{e}"));
    let outcome = rt
        .block_on(runner.run(&mut run, &Interrupt::new(), None))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(outcome, Outcome::Finished { .. }), "{outcome:?}");
    run.trail.entries.len()
}

fn transitions(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("transitions");
    for (name, runner, actions) in [
        ("llm/10", llm_runner(10), 10),
        ("llm/100", llm_runner(ACTIONS), ACTIONS),
        ("service/100", service_runner(ACTIONS), ACTIONS),
    ] {
        assert_eq!(run_once(&rt, &runner), actions + 1, "{name}");
        group.throughput(Throughput::Elements(actions as u64));
        group.bench_function(name, |b| b.iter(|| black_box(run_once(&rt, &runner))));
    }
    group.finish();
}

/// start -> `first` (`llm` or `service`) -> approve (human) -> end.
fn approval(first: &str) -> Runner {
    let plan =
        json!({"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"]});
    let fsm = fsm(json!({
        "id": "approval",
        "states": [
            {"id": "propose", "action": first},
            {"id": "approve", "action": "human"},
            {"id": "end", "action": "end"}
        ],
        "transitions": [
            {"id": ["start", "propose"], "schema": {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}},
            {"id": ["propose", "approve"], "schema": plan},
            {"id": ["approve", "end"], "schema": {"type": "object", "properties": {"decision": {"type": "string"}}, "required": ["decision"]}}
        ]
    }));
    let reply = r#"{"plan": "ship the fix on Friday, after the review"}"#;
    Runner::new(fsm)
        .with_llm(
            Arc::new(Instant(move |_: &ChatRequest| reply.to_owned())),
            Config::new("bench"),
        )
        .with_service(
            "propose",
            service_fn(move |_| serde_json::from_str(reply).map_err(Into::into)),
        )
}

fn suspend(rt: &tokio::runtime::Runtime, runner: &Runner, i: usize) -> Run {
    let mut run = runner
        .start(json!({"task": format!("task {i}: fix the flaky test")}))
        .unwrap_or_else(|e| panic!("{e}"));
    let outcome = rt
        .block_on(runner.run(&mut run, &Interrupt::new(), None))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(outcome, Outcome::Waiting { .. }), "{outcome:?}");
    run
}

/// Heap and RSS held by 10,000 runs waiting in `approve`, after an `llm` or a `service` state.
#[allow(clippy::print_stdout)] // the figure is the benchmark's output
fn suspended_runs() {
    let rt = runtime();
    for first in ["llm", "service"] {
        let runner = approval(first);
        drop(suspend(&rt, &runner, 0)); // pipelines are built once per state: not per run
        let (heap, rss) = (LIVE.load(Ordering::Relaxed), rss_bytes());
        let runs: Vec<Run> = (0..SUSPENDED).map(|i| suspend(&rt, &runner, i)).collect();
        let heap = LIVE.load(Ordering::Relaxed).saturating_sub(heap);
        // RSS is indicative only: the second batch reuses pages the first one freed.
        let rss = rss_bytes()
            .zip(rss)
            .map(|(after, before)| after.saturating_sub(before));
        let per_run = heap / SUSPENDED;
        println!(
            "{} suspended runs, after {first}: {:.1} MB, {per_run} bytes/run \
             (live heap; {} of them inline in `Run`); RSS +{}",
            thousands(SUSPENDED),
            mb(heap),
            std::mem::size_of::<Run>(),
            rss.map_or_else(|| "unknown".to_owned(), |r| format!("{:.1} MB", mb(r))),
        );
        black_box(&runs);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Resident set size from /proc/self/status, where there is one.
fn rss_bytes() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `10000` as `10,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn mb(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

criterion_group!(benches, transitions);

fn main() {
    suspended_runs();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
