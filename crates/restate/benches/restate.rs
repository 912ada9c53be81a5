//! The Restate bench: machines of `llm` states in a chain (`start -> s1 -> ... -> sN -> end`,
//! N + 1 transitions) on a model that answers at once, run embedded (`Runner::run`) and on Restate
//! (the real server via `tests/support`, one in-process worker, the `Client`), writing
//! `<target>/claij/bench-restate.json`:
//! - one run at a time, with one and with five states: the wall time of a run and runs per second;
//!   from the two, what a transition costs (the slope), and what Restate adds to a transition
//!   (the slopes' difference) and to a run besides (start, attach, the workflow's own steps);
//! - [`IN_FLIGHT`] runs of five states at a time: runs per second.
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

/// The chains measured one run at a time: `llm` states per run. The slope between them is the
/// cost of a transition.
const SHORT: usize = 1;
const LONG: usize = 5;
/// Runs in flight in the throughput row (of [`LONG`] chains).
const IN_FLIGHT: usize = 32;

/// How many runs each row measures.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    warmup: usize,
    sequential: usize,
    concurrent: usize,
}

/// Runs a side: one run of `states` states to its end, checked.
trait Side {
    fn once(&self, states: usize, id: String) -> impl Future<Output = ()> + Send;
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

    let embedded = runtime.block_on(measure(&Arc::new(Embedded::new()), sizes));
    println!("embedded: {embedded}");
    let restate = match RestateServer::start() {
        Some(server) => {
            let mut figures = on_restate(&server, &runtime, sizes);
            figures["server"] = json!({
                "start_ms": ms(server.started_in()),
                "rss_mib_after": server.rss_kib().map(|kib| kib / 1024),
            });
            println!("restate: {figures}");
            figures
        }
        None => json!({"not_measured": "no Restate server: run `cargo xtask restate`"}),
    };
    // What Restate adds: to each transition (the slopes' difference), and to each run besides.
    let figure = |side: &Value, name: &str| side["one_at_a_time"][name].as_f64();
    let overhead = figure(&restate, "per_transition_ms")
        .zip(figure(&embedded, "per_transition_ms"))
        .map(|(on_restate, embedded)| on_restate - embedded);
    let per_run = overhead
        .zip(figure(&restate, "short_run_ms"))
        .zip(figure(&embedded, "short_run_ms"))
        .map(|((overhead, on_restate), embedded)| {
            on_restate - embedded - overhead * (SHORT + 1) as f64
        });
    let report = json!({
        "machines": format!(
            "{SHORT} and {LONG} llm states in a chain ({} and {} transitions per run), a model \
             that answers at once",
            SHORT + 1,
            LONG + 1
        ),
        "host": host(),
        "embedded": embedded,
        "restate": restate,
        "restate_overhead": {"per_transition_ms": overhead, "per_run_ms": per_run},
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

/// The rows of one side: [`SHORT`] and [`LONG`] chains one at a time, the per-transition and
/// per-run costs from them, and [`LONG`] chains [`IN_FLIGHT`] at a time.
async fn measure<S: Side + Send + Sync + 'static>(side: &Arc<S>, sizes: Sizes) -> Value {
    let prefix = format!("bench-{}-{}", std::process::id(), now_nanos());
    let mut one_at_a_time = Vec::new();
    for states in [SHORT, LONG] {
        for i in 0..sizes.warmup {
            side.once(states, format!("{prefix}-{states}-w{i}")).await;
        }
        let started = Instant::now();
        for i in 0..sizes.sequential {
            side.once(states, format!("{prefix}-{states}-s{i}")).await;
        }
        one_at_a_time.push(ms(started.elapsed()) / sizes.sequential as f64);
    }
    let (short, long) = (one_at_a_time[0], one_at_a_time[1]);
    let per_transition = (long - short) / (LONG - SHORT) as f64;
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..sizes.concurrent {
        if tasks.len() >= IN_FLIGHT {
            tasks.join_next().await.unwrap().unwrap();
        }
        let side = Arc::clone(side);
        let id = format!("{prefix}-{LONG}-c{i}");
        tasks.spawn(async move { side.once(LONG, id).await });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    let concurrent = started.elapsed();
    json!({
        "one_at_a_time": {
            "runs": sizes.sequential,
            "short_run_ms": short,
            "long_run_ms": long,
            "long_runs_per_second": 1000.0 / long,
            "per_transition_ms": per_transition,
        },
        "in_flight": {
            "runs": sizes.concurrent,
            "in_flight": IN_FLIGHT,
            "long_runs_per_second": sizes.concurrent as f64 / concurrent.as_secs_f64(),
        },
    })
}

/// `start -> s1 -> ... -> s{states} -> end`, each event `{"id": [from, to], "n": k}`.
fn definition(states: usize) -> Definition {
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let names: Vec<String> = std::iter::once("start".to_owned())
        .chain((1..=states).map(|i| format!("s{i}")))
        .chain(std::iter::once("end".to_owned()))
        .collect();
    let mut state_list: Vec<Value> = names[1..=states]
        .iter()
        .map(|name| json!({"id": name, "action": "llm"}))
        .collect();
    state_list.push(json!({"id": "end", "action": "end"}));
    let transitions: Vec<Value> = names
        .windows(2)
        .map(|pair| json!({"id": [pair[0], pair[1]], "schema": schema}))
        .collect();
    serde_json::from_value(json!({
        "id": format!("bench-chain-{states}"),
        "states": state_list,
        "transitions": transitions,
    }))
    .unwrap()
}

/// A model that answers at once and remembers nothing (`Scripted` keeps every request, which over
/// thousands of runs would measure itself): the `k`th state's request holds the `k` earlier
/// events plus the input, and it answers the event into the next state.
struct AtOnce {
    states: usize,
}

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
        let to = if k + 1 < self.states {
            format!("s{}", k + 2)
        } else {
            "end".to_owned()
        };
        let event = json!({"id": [format!("s{}", k + 1), to], "n": k + 1});
        Box::pin(std::future::ready(Ok(ChatResponse::text(
            event.to_string(),
        ))))
    }
}

/// The runner of a chain of `states`: the same on both sides.
fn runner(states: usize) -> Runner {
    Runner::new(Fsm::new(definition(states)).unwrap())
        .with_llm(Arc::new(AtOnce { states }), Config::new("bench"))
}

/// The embedded runner, one per chain length.
struct Embedded {
    short: Runner,
    long: Runner,
}

impl Embedded {
    fn new() -> Self {
        Self {
            short: runner(SHORT),
            long: runner(LONG),
        }
    }
}

impl Side for Embedded {
    async fn once(&self, states: usize, _id: String) {
        let runner = if states == SHORT {
            &self.short
        } else {
            &self.long
        };
        let mut run = runner.start(json!({"n": 0})).unwrap();
        let outcome = runner.run(&mut run, &Interrupt::new(), None).await.unwrap();
        assert!(matches!(outcome, Outcome::Finished { .. }), "{outcome:?}");
        assert_eq!(run.trail.entries.len(), states + 1);
    }
}

/// Runs through the ingress: `start`, then `attach`.
struct OnRestate {
    client: Client,
    short: RunRequest,
    long: RunRequest,
}

impl Side for OnRestate {
    async fn once(&self, states: usize, id: String) {
        let request = if states == SHORT {
            &self.short
        } else {
            &self.long
        };
        let started = self.client.start(&id, request).await.unwrap();
        assert!(!started.already, "{id} ran before");
        let result = self.client.attach(&id).await.unwrap();
        assert!(
            matches!(result.ended, Ended::Finished { .. }),
            "{id}: {:?}",
            result.ended
        );
        assert_eq!(result.trail.entries.len(), states + 1, "{id}");
    }
}

/// One worker in this process, registered with `server`, serving both chains.
fn on_restate(server: &RestateServer, runtime: &tokio::runtime::Runtime, sizes: Sizes) -> Value {
    let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let uri = format!("http://{}", listener.local_addr().unwrap());
    let worker = Worker::new(wiring_fn(move |machine| {
        for states in [SHORT, LONG] {
            if matches!(machine, Machine::Inline { definition, .. } if *definition == self::definition(states))
            {
                return Ok(runner(states));
            }
        }
        Err(format!("the bench's worker runs only its chains, not {machine:?}").into())
    }));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    runtime.spawn(worker.serve(listener, stopped));
    // Blocks while the server calls the worker, which runs on the runtime's threads.
    server.register(&uri);
    let request =
        |states| RunRequest::new(Machine::inline(definition(states), vec![]), json!({"n": 0}));
    let side = Arc::new(OnRestate {
        client: Client::new(&server.ingress_url()).unwrap(),
        short: request(SHORT),
        long: request(LONG),
    });
    let figures = runtime.block_on(measure(&side, sizes));
    let _ = stop.send(());
    figures
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
