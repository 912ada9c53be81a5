//! The worker the tests run as a child process: this binary again, serving `claij-restate`'s
//! worker with a scripted model that counts, in files, the calls it was asked and answered (the
//! files outlive a worker killed with SIGKILL), and can hold one call until the test releases it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use claij_backends::{Backend, BoxFuture, Capabilities, ChatRequest, ChatResponse};
use claij_fsm::journal::SubDefinition;
use claij_fsm::{Fsm, Runner};
use claij_interceptors::Config;
use claij_interceptors::{BoxError, Chain, Pipeline};
use claij_restate::{Machine, Wiring, Worker};
use serde_json::{Value, json};

/// The worker's port, set when this binary runs as a worker.
const PORT: &str = "CLAIJ_RESTATE_IT_PORT";
/// The directory of the count files.
const COUNTS: &str = "CLAIJ_RESTATE_IT_COUNTS";
/// Which call (1-based, counted over the worker's lives) waits until the file `release` exists.
const HOLD: &str = "CLAIJ_RESTATE_IT_HOLD";
/// The request-identity public keys the worker accepts (comma-separated; unset: none, it serves
/// every request).
pub(crate) const IDENTITY_KEYS: &str = "CLAIJ_RESTATE_IT_IDENTITY_KEYS";

/// The command that runs this binary as a worker on `port`, counting into `counts`.
pub(crate) fn command(port: u16, counts: &Path, hold: Option<usize>) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "worker::worker_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PORT, port.to_string())
        .env(COUNTS, counts);
    if let Some(hold) = hold {
        command.env(HOLD, hold.to_string());
    }
    command
}

/// The scripted model: every reply is `{"text": "ok"}` (each `llm` state of the tests' machines
/// has one exit); a call is counted in `asked` when it comes and in `answered` when it returns.
/// The call numbered `hold` (over the worker's lives) waits, asleep, until the file `release`
/// exists.
pub(crate) struct Counting {
    counts: PathBuf,
    hold: Option<usize>,
    /// What the count files' names start with.
    prefix: &'static str,
    reply: &'static str,
}

impl Counting {
    pub(crate) fn new(counts: PathBuf, hold: Option<usize>) -> Arc<Counting> {
        Arc::new(Counting {
            counts,
            hold,
            prefix: "",
            reply: r#"{"text": "ok"}"#,
        })
    }

    /// The conversations' model: a reply valid against the base schema, counted in `chat-asked`
    /// and `chat-answered`.
    pub(crate) fn chat(counts: PathBuf) -> Arc<Counting> {
        Arc::new(Counting {
            counts,
            hold: None,
            prefix: "chat-",
            reply: r#"{"answer": "hi", "state": "done"}"#,
        })
    }
}

impl Backend for Counting {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn capabilities(&self, _: &str) -> Capabilities {
        Capabilities::prompted()
    }

    fn complete<'a>(
        &'a self,
        _: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, claij_backends::Error>> {
        Box::pin(async move {
            let asked = append(&self.counts.join(format!("{}asked", self.prefix)));
            if self.hold == Some(asked) {
                while !self.counts.join("release").exists() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            append(&self.counts.join(format!("{}answered", self.prefix)));
            Ok(ChatResponse::text(self.reply))
        })
    }
}

/// How many lines the count file `name` in `counts` has.
pub(crate) fn count(counts: &Path, name: &str) -> usize {
    std::fs::read_to_string(counts.join(name))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

/// Appends a line to `path`; the number of lines it then has.
fn append(path: &Path) -> usize {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(b"1\n").unwrap();
    drop(file);
    std::fs::read_to_string(path).unwrap().lines().count()
}

/// The runner the worker builds for a machine: every `llm` state asks `model`.
pub(crate) fn runner(
    machine: &Machine,
    model: &Arc<Counting>,
) -> Result<Runner, claij_interceptors::BoxError> {
    match machine {
        Machine::Inline {
            definition,
            sub_fsms,
        } => Ok(with_subs(
            Runner::new(Fsm::new(definition.clone())?),
            sub_fsms,
            model,
        )?),
        other => Err(format!("no machine {other:?} here").into()),
    }
}

fn with_subs(
    runner: Runner,
    subs: &[SubDefinition],
    model: &Arc<Counting>,
) -> Result<Runner, claij_interceptors::BoxError> {
    // `echo` answers with the request it is given: a model that sends the same twice loops.
    let mut runner = runner
        .with_llm(
            Arc::clone(model) as Arc<dyn Backend>,
            Config::new("scripted"),
        )
        .with_service(
            "echo",
            claij_fsm::service_fn(|call| {
                let mut event = call.event.clone();
                if let Some(map) = event.as_object_mut() {
                    map.remove("id");
                }
                Ok(event)
            }),
        );
    for sub in subs {
        let child = with_subs(
            Runner::new(Fsm::new(sub.definition.clone())?),
            &sub.sub_fsms,
            model,
        )?;
        runner = runner.with_sub_fsm_named(sub.name.clone(), child);
    }
    Ok(runner)
}

/// The test worker's wiring: machines ask `model`, conversations `chat`.
struct TestWiring {
    model: Arc<Counting>,
    chat: Arc<Counting>,
}

impl Wiring for TestWiring {
    fn runner<'a>(&'a self, machine: &'a Machine) -> BoxFuture<'a, Result<Runner, BoxError>> {
        let runner = runner(machine, &self.model);
        Box::pin(async move { runner })
    }

    fn conversation(&self) -> Option<Arc<Pipeline>> {
        let chat = Arc::clone(&self.chat) as Arc<dyn Backend>;
        Some(Arc::new(Pipeline::new(
            chat,
            Config::new("scripted"),
            Chain::new(),
        )))
    }
}

/// Serves as the worker when [`PORT`] is set (the test harness runs it); else does nothing.
#[test]
fn worker_process() {
    let Some(port) = std::env::var_os(PORT) else {
        return;
    };
    let port: u16 = port.to_str().unwrap().parse().unwrap();
    let counts = PathBuf::from(std::env::var_os(COUNTS).unwrap());
    let hold = std::env::var(HOLD).ok().map(|h| h.parse().unwrap());
    let model = Counting::new(counts.clone(), hold);
    let chat = Counting::chat(counts);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let keys = std::env::var(IDENTITY_KEYS).unwrap_or_default();
        let keys = keys.split(',').filter(|k| !k.is_empty());
        Worker::new(TestWiring { model, chat })
            .with_identity_keys(keys.map(|k| k.parse().unwrap()))
            .serve(listener, std::future::pending::<()>())
            .await
            .unwrap();
    });
}

/// `{"type": "object", "properties": {k: string...}, "required": [k...]}`.
pub(crate) fn object(required: &[&str]) -> Value {
    let properties: serde_json::Map<String, Value> = required
        .iter()
        .map(|k| ((*k).to_owned(), json!({"type": "string"})))
        .collect();
    json!({"type": "object", "properties": properties, "required": required})
}
