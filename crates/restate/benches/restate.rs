//! The Restate bench: one machine of five `llm` states in a chain (`start -> s1 -> ... -> s5 ->
//! end`, six transitions) on a model that answers at once, run embedded (`Runner::run`) and on
//! Restate (the real server via `tests/support`, one in-process worker, the `Client`), writing
//! `<target>/claij/bench-restate.json`:
//! - one run at a time: the wall time of a run, runs per second, and the time Restate adds per
//!   transition ((Restate's run - the embedded run) / transitions);
//! - [`IN_FLIGHT`] runs at a time: runs per second.
//!
//! Both sides build the same runner (same definition, same model, same pipeline config). On
//! Restate each run is `start` (`run/send`) then `attach`, through the ingress over HTTP, with
//! the server journaling every step; the worker and the client share a two-thread runtime, and
//! the server runs on the same machine, so its CPU competes with theirs.
//!
//! Without `--bench` (as in `cargo test --benches`) a short version runs and nothing is written.
//! Without the server (`cargo xtask restate`) the Restate half is skipped and the report says
//! so.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs
)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use claij_backends::{Backend, BoxFuture, Capabilities, ChatRequest, ChatResponse};
use claij_fsm::{Definition, Fsm, Interrupt, Outcome, Runner};
use claij_interceptors::Config;
use claij_restate::{Client, Ended, Machine, RunRequest, Worker, wiring_fn};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use support::RestateServer;

/// `llm` states per run.
const STATES: usize = 5;
/// Transitions per run: into each state, and out of the last.
const TRANSITIONS: usize = STATES + 1;
/// Runs in flight in the throughput rows.
const IN_FLIGHT: usize = 32;

/// How many runs each row measures.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    warmup: usize,
    sequential: usize,
    concurrent: usize,
}

fn main() {
    let measuring = std::env::args().any(|arg| arg == "--bench");
    let sizes = if measuring {
        Sizes {
            warmup: 20,
            sequential: 200,
            concurrent: 640,
        }
    } else {
        Sizes {
            warmup: 1,
            sequential: 3,
            concurrent: IN_FLIGHT,
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let definition = definition();
    let runner = Arc::new(runner(&definition));

    let embedded = runtime.block_on(embedded(&runner, sizes));
    println!("embedded: {}", embedded);
    let restate = match RestateServer::start() {
        Some(server) => {
            let mut figures = on_restate(&server, &runtime, &definition, sizes);
            figures["server"] = json!({
                "start_ms": ms(server.started_in()),
                "rss_mib_after": server.rss_kib().map(|kib| kib / 1024),
                "partitions": 4,
            });
            println!("restate: {figures}");
            figures
        }
        None => json!({"not_measured": "no Restate server: run `cargo xtask restate`"}),
    };
    let overhead = restate["sequential"]["run_ms"]
        .as_f64()
        .zip(embedded["sequential"]["run_ms"].as_f64())
        .map(|(on_restate, embedded)| (on_restate - embedded) / TRANSITIONS as f64);
    let report = json!({
        "machine": format!("{STATES} llm states in a chain, {TRANSITIONS} transitions per run, \
                            a model that answers at once"),
        "host": host(),
        "in_flight": IN_FLIGHT,
        "embedded": embedded,
        "restate": restate,
        "restate_overhead_per_transition_ms": overhead,
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
    if !measuring {
        return;
    }
    let dir = target_dir().join("claij");
    std::fs::create_dir_all(&dir).expect("create target/claij");
    let path = dir.join("bench-restate.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap() + "\n")
        .expect("write the report");
    println!("wrote {}", path.display());
}

/// `start -> s1 -> ... -> s5 -> end`, each event `{"id": [from, to], "n": k}`.
fn definition() -> Definition {
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let mut states: Vec<Value> = (1..=STATES)
        .map(|i| json!({"id": format!("s{i}"), "action": "llm"}))
        .collect();
    states.push(json!({"id": "end", "action": "end"}));
    let names: Vec<String> = std::iter::once("start".to_owned())
        .chain((1..=STATES).map(|i| format!("s{i}")))
        .chain(std::iter::once("end".to_owned()))
        .collect();
    let transitions: Vec<Value> = names
        .windows(2)
        .map(|pair| json!({"id": [pair[0], pair[1]], "schema": schema}))
        .collect();
    serde_json::from_value(json!({
        "id": "bench-chain",
        "states": states,
        "transitions": transitions,
    }))
    .unwrap()
}

/// The event the `k`th `llm` state (0-based) answers: into the next state.
fn event(k: usize) -> Value {
    let to = if k + 1 < STATES {
        format!("s{}", k + 2)
    } else {
        "end".to_owned()
    };
    json!({"id": [format!("s{}", k + 1), to], "n": k + 1})
}

/// A model that answers at once and remembers nothing (`Scripted` keeps every request, which over
/// thousands of runs would measure itself). The `k`th state's request holds the `k` earlier
/// events plus the input.
struct AtOnce;

impl Backend for AtOnce {
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
        let k = request.messages.len().saturating_sub(1);
        Box::pin(std::future::ready(Ok(ChatResponse::text(
            event(k).to_string(),
        ))))
    }
}

fn runner(definition: &Definition) -> Runner {
    Runner::new(Fsm::new(definition.clone()).unwrap())
        .with_llm(Arc::new(AtOnce), Config::new("bench"))
}

/// The embedded runner: runs one at a time, then [`IN_FLIGHT`] at a time.
async fn embedded(runner: &Arc<Runner>, sizes: Sizes) -> Value {
    let once = |runner: Arc<Runner>| async move {
        let mut run = runner.start(json!({"n": 0})).unwrap();
        let outcome = runner.run(&mut run, &Interrupt::new(), None).await.unwrap();
        assert!(matches!(outcome, Outcome::Finished { .. }), "{outcome:?}");
        assert_eq!(run.trail.entries.len(), TRANSITIONS);
    };
    for _ in 0..sizes.warmup {
        once(Arc::clone(runner)).await;
    }
    let started = Instant::now();
    for _ in 0..sizes.sequential {
        once(Arc::clone(runner)).await;
    }
    let sequential = started.elapsed();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..sizes.concurrent {
        if tasks.len() >= IN_FLIGHT {
            tasks.join_next().await.unwrap().unwrap();
        }
        tasks.spawn(once(Arc::clone(runner)));
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    let concurrent = started.elapsed();
    rows(sizes, sequential, concurrent)
}

/// One worker in this process, registered with `server`; runs through the ingress.
fn on_restate(
    server: &RestateServer,
    runtime: &tokio::runtime::Runtime,
    definition: &Definition,
    sizes: Sizes,
) -> Value {
    let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let uri = format!("http://{}", listener.local_addr().unwrap());
    let for_worker = definition.clone();
    let worker = Worker::new(wiring_fn(move |machine| match machine {
        Machine::Inline { definition, .. } if *definition == for_worker => Ok(runner(definition)),
        other => Err(format!("the bench's worker runs only its own machine, not {other:?}").into()),
    }));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    runtime.spawn(worker.serve(listener, stopped));
    // Blocks while the server calls the worker, which runs on the runtime's threads.
    server.register(&uri);
    let figures = runtime.block_on(through_ingress(
        Client::new(&server.ingress_url()).unwrap(),
        definition,
        sizes,
    ));
    let _ = stop.send(());
    figures
}

/// Runs one at a time, then [`IN_FLIGHT`] at a time, each `start` then `attach`.
async fn through_ingress(client: Client, definition: &Definition, sizes: Sizes) -> Value {
    let request = Arc::new(RunRequest::new(
        Machine::inline(definition.clone(), vec![]),
        json!({"n": 0}),
    ));
    let once = |client: Client, request: Arc<RunRequest>, id: String| async move {
        let started = client.start(&id, &request).await.unwrap();
        assert!(!started.already, "{id} ran before");
        let result = client.attach(&id).await.unwrap();
        assert!(
            matches!(result.ended, Ended::Finished { .. }),
            "{id}: {:?}",
            result.ended
        );
        assert_eq!(result.trail.entries.len(), TRANSITIONS, "{id}");
    };
    let prefix = format!("bench-{}-{}", std::process::id(), now_nanos());
    for i in 0..sizes.warmup {
        once(
            client.clone(),
            Arc::clone(&request),
            format!("{prefix}-w{i}"),
        )
        .await;
    }
    let started = Instant::now();
    for i in 0..sizes.sequential {
        once(
            client.clone(),
            Arc::clone(&request),
            format!("{prefix}-s{i}"),
        )
        .await;
    }
    let sequential = started.elapsed();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..sizes.concurrent {
        if tasks.len() >= IN_FLIGHT {
            tasks.join_next().await.unwrap().unwrap();
        }
        tasks.spawn(once(
            client.clone(),
            Arc::clone(&request),
            format!("{prefix}-c{i}"),
        ));
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    rows(sizes, sequential, started.elapsed())
}

/// The figures of one side.
fn rows(sizes: Sizes, sequential: Duration, concurrent: Duration) -> Value {
    json!({
        "sequential": {
            "runs": sizes.sequential,
            "run_ms": ms(sequential) / sizes.sequential as f64,
            "runs_per_second": sizes.sequential as f64 / sequential.as_secs_f64(),
        },
        "concurrent": {
            "runs": sizes.concurrent,
            "in_flight": IN_FLIGHT,
            "runs_per_second": sizes.concurrent as f64 / concurrent.as_secs_f64(),
        },
    })
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos())
}

/// The CPU model and count, from /proc/cpuinfo where there is one.
fn host() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, name)| name.trim().to_owned());
    json!({
        "cpu": model,
        "cpus": std::thread::available_parallelism().map_or(0, usize::from),
    })
}

fn target_dir() -> std::path::PathBuf {
    // Benches run from the package directory; the workspace target is two levels up unless overridden.
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target")
        })
}
