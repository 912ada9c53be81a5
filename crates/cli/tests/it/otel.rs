//! Traces at a real OpenTelemetry collector: Arize Phoenix (`arize-phoenix`, installed by `cargo
//! xtask collector` into `$CLAIJ_COLLECTOR`), started here on loopback, receives the spans of
//! `claij ask` on the embedded model and of `claij fsm run` (against a mock OpenRouter) over
//! OTLP/HTTP; the test reads them back from Phoenix's REST API (`GET /v1/projects/default/spans`)
//! and asserts one trace per command, the span tree, the GenAI attributes, content only with
//! `--otel-capture-content`, and no secret anywhere. Without the collector it skips (under `CI=true`
//! it fails). A collector that is down costs a command one warning line and nothing else: that test
//! needs no Phoenix.
//!
//! Phoenix binds its OTLP/gRPC port on every interface (`[::]`) whatever `PHOENIX_HOST` says: no
//! setting of 20.x changes that, and the gRPC server cannot be turned off without making Phoenix
//! read-only. So the test starts it through [`LAUNCHER`], which binds that port on 127.0.0.1
//! instead, and checks that every socket the process listens on is a loopback one.
//!
//! Nothing here depends on the machine being idle: Phoenix's readiness and each command's trace are
//! awaited as events within [`WAIT_LIMIT`] (minutes, a hang guard), and the commands export with a
//! generous timeout ([`EXPORT_TIMEOUT`]): a Python collector on a loaded machine can take seconds to
//! take a batch, and claij's default 3 s would drop the batch (and say so). A bound that passes names
//! what did not arrive and shows the end of Phoenix's log.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use claij_test_support::net::{free_ports, listening_sockets};
use claij_test_support::server::{get, venv_install_or_skip, venv_python as python};
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use super::openrouter::{CHAT, config, reply};
use super::server::{POLL, ServerProcess, WAIT_LIMIT};
use super::{BASE, Files, Run, claij_env};

/// The commands' export timeout (`OTEL_EXPORTER_OTLP_TIMEOUT`, milliseconds), which also bounds their
/// flush at exit: five minutes, for a collector on a loaded machine. A hang guard, not a speed.
const EXPORT_TIMEOUT: &str = "300000";

/// Runs `phoenix serve` with its OTLP/gRPC server bound to 127.0.0.1 (Phoenix itself binds `[::]`).
/// `-I` keeps the developer's `PYTHON*` variables and user site-packages out.
const LAUNCHER: &str = r#"
import sys
import grpc.aio

_server = grpc.aio.server

def _loopback_server(*args, **kwargs):
    server = _server(*args, **kwargs)
    add = server.add_insecure_port
    server.add_insecure_port = lambda address: add(address.replace("[::]:", "127.0.0.1:", 1))
    return server

grpc.aio.server = _loopback_server
from phoenix.server.main import main
sys.argv = ["phoenix", "serve"]
main()
"#;

/// The fake provider key of the mock runs: no span may carry it.
const KEY: &str = "sk-or-v1-otel-secret-0123456789";
/// A header the exporter sends (`OTEL_EXPORTER_OTLP_HEADERS`): its value is a secret too.
const HEADER_SECRET: &str = "otel-header-secret-0123456789";
/// Words in the prompts and replies: the spans carry them only with `--otel-capture-content`.
const ASK_MARKER: &str = "otelaskmarker";
const INPUT_MARKER: &str = "otelinputmarker";
const OUTPUT_MARKER: &str = "oteloutputmarker";

/// One question, answered in one state.
const DEFINITION: &str = r#"{
  "id": "otel-demo",
  "states": [{"id": "ask", "action": "llm"}, {"id": "end", "action": "end"}],
  "transitions": [
    {"id": ["start", "ask"], "schema": {"type": "object"}},
    {"id": ["ask", "end"], "schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}
  ]
}"#;

/// Phoenix takes OTLP traces only (`POST /v1/metrics` is 405): without this, each run would end
/// with the warning that an export failed.
const PHOENIX_TAKES_NO_METRICS: (&str, Option<&str>) = ("OTEL_METRICS_EXPORTER", Some("none"));
/// See [`EXPORT_TIMEOUT`].
const PATIENT_EXPORT: (&str, Option<&str>) = ("OTEL_EXPORTER_OTLP_TIMEOUT", Some(EXPORT_TIMEOUT));

/// The model the mock OpenRouter plays (`gemini-flash`).
const MOCK_MODEL: &str = "google/gemini-2.5-flash";

mod local_model {
    //! In the nextest `local-model` group: the embedded model runs here, and Phoenix is heavy.

    use super::*;

    #[tokio::test]
    async fn ask_and_fsm_runs_arrive_at_phoenix_as_one_trace_each() {
        let test = "ask_and_fsm_runs_arrive_at_phoenix_as_one_trace_each";
        let Some(install) = install(test) else {
            return;
        };
        let Some(model) = crate::local_model::model(test) else {
            return;
        };
        let files = Files::new(&[("fsm.json", DEFINITION)]);
        let mut collector = Collector::start(&install, &files);
        collector.assert_listens_on_loopback_only();
        let mut seen = HashSet::new();

        let model = model.to_string_lossy().into_owned();
        let ask = claij_traced(
            &[
                "ask",
                &format!("Name a colour ({ASK_MARKER})."),
                "--llm",
                "local",
                "--model-path",
                &model,
                "--threads",
                "1",
                "--otlp-endpoint",
                &collector.endpoint(),
            ],
            &[PHOENIX_TAKES_NO_METRICS, PATIENT_EXPORT],
        );
        assert_eq!(ask.code, 0, "{}", ask.stderr);
        assert_exported_quietly(&ask);
        let spans = collector.new_trace(&mut seen, "claij ask", &ask);
        check_ask_on_the_local_model(&spans);
        assert_no_content(&spans, &[ASK_MARKER]);

        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(CHAT))
            .respond_with(reply(&format!(r#"{{"answer": "{OUTPUT_MARKER}"}}"#)))
            .expect(2)
            .mount(&server)
            .await;
        std::fs::write(files.path("config.toml"), config(&server)).unwrap();
        let (definition, config) = (files.path("fsm.json"), files.path("config.toml"));
        let input = format!(r#"{{"question": "{INPUT_MARKER}"}}"#);
        let endpoint = collector.endpoint();
        let fsm_run = |extra: &[&str]| {
            let mut args = vec![
                "fsm",
                "run",
                &definition,
                "--input",
                &input,
                "--llm",
                "gemini-flash",
                "--max-retries",
                "0",
                "--otlp-endpoint",
                &endpoint,
            ];
            args.extend_from_slice(extra);
            claij_traced(
                &args,
                &[
                    ("CLAIJ_CONFIG", Some(config.as_str())),
                    PHOENIX_TAKES_NO_METRICS,
                    PATIENT_EXPORT,
                ],
            )
        };

        let plain = fsm_run(&[]);
        assert_eq!(plain.code, 0, "{}", plain.stderr);
        assert_exported_quietly(&plain);
        let spans = collector.new_trace(&mut seen, "claij fsm run", &plain);
        check_fsm_run(&spans);
        assert_no_content(&spans, &[INPUT_MARKER, OUTPUT_MARKER]);

        let captured = fsm_run(&["--otel-capture-content"]);
        assert_eq!(captured.code, 0, "{}", captured.stderr);
        assert_exported_quietly(&captured);
        let spans =
            collector.new_trace(&mut seen, "claij fsm run --otel-capture-content", &captured);
        check_fsm_run(&spans);
        let text = serde_json::to_string(&spans).unwrap();
        for marker in [INPUT_MARKER, OUTPUT_MARKER] {
            assert!(text.contains(marker), "{marker} in no span: {spans:#?}");
        }
        for key in ["gen_ai.input.messages", "gen_ai.output.messages"] {
            let carrying: Vec<&Value> = spans.iter().filter(|s| !attr(s, key).is_null()).collect();
            assert!(!carrying.is_empty(), "no span carries {key}: {spans:#?}");
            for span in carrying {
                let messages: Value = serde_json::from_str(attr(span, key).as_str().unwrap())
                    .unwrap_or_else(|e| panic!("{key} is not JSON text ({e}): {span:#}"));
                assert!(
                    messages.as_array().is_some_and(|m| !m.is_empty()),
                    "{key}: {span:#}"
                );
            }
        }
        let everything = serde_json::to_string(&collector.spans()).unwrap();
        for secret in [KEY, HEADER_SECRET] {
            assert!(!everything.contains(secret), "a span carries {secret}");
        }
        drop(collector);
    }
}

/// A collector that does not answer (a closed loopback port): the command's output and exit code
/// are those of a run without one, and stderr has one line more, the warning.
#[tokio::test]
async fn a_collector_that_is_down_costs_one_warning_line() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT))
        .respond_with(reply(r#"{"answer": "Paris", "state": "done"}"#))
        .expect(2)
        .mount(&server)
        .await;
    let files = Files::new(&[("config.toml", &config(&server)), ("schema.json", BASE)]);
    let (config, schema) = (files.path("config.toml"), files.path("schema.json"));
    let closed = format!("http://127.0.0.1:{}", free_ports::<1>().unwrap()[0]);
    let ask = |extra: &[&str]| {
        let mut args = vec![
            "ask",
            "What is the capital of France?",
            "--schema",
            &schema,
            "--llm",
            "gemini-flash",
        ];
        args.extend_from_slice(extra);
        claij_traced(&args, &[("CLAIJ_CONFIG", Some(config.as_str()))])
    };
    let without = ask(&[]);
    let down = ask(&["--otlp-endpoint", &closed]);
    assert_eq!(without.code, 0, "{}", without.stderr);
    assert_eq!(
        (down.code, &down.stdout),
        (0, &without.stdout),
        "{}",
        down.stderr
    );
    assert_eq!(
        down.stderr.lines().count(),
        without.stderr.lines().count() + 1,
        "without a collector:\n{}\nwith one that is down:\n{}",
        without.stderr,
        down.stderr
    );
    let warnings: Vec<&str> = down
        .stderr
        .lines()
        .filter(|line| line.contains("OpenTelemetry"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", down.stderr);
    assert!(
        warnings[0].to_ascii_lowercase().contains("warn"),
        "{}",
        warnings[0]
    );
    for secret in [KEY, HEADER_SECRET] {
        assert!(!down.stderr.contains(secret), "{}", down.stderr);
    }
}

/// `claij` with a fake provider key and a secret exporter header, and none of the developer's
/// OpenTelemetry or log settings.
fn claij_traced(args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
    let header = format!("x-claij-test={HEADER_SECRET}");
    let mut all: Vec<(&str, Option<&str>)> = vec![
        ("OPENROUTER_API_KEY", Some(KEY)),
        ("OTEL_EXPORTER_OTLP_HEADERS", Some(header.as_str())),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", None),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None),
        ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", None),
        ("OTEL_TRACES_EXPORTER", None),
        ("OTEL_METRICS_EXPORTER", None),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", None),
        ("OTEL_SERVICE_NAME", None),
        ("CLAIJ_OTEL_QUEUE", None),
        ("RUST_LOG", None),
    ];
    all.extend_from_slice(env);
    claij_env(args, "", &all)
}

/// A run whose exports all succeeded says nothing about OpenTelemetry.
#[track_caller]
fn assert_exported_quietly(run: &Run) {
    assert!(!run.stderr.contains("OpenTelemetry"), "{}", run.stderr);
}

/// `claij ask` on the embedded model: `llm.ask` (`ask {model}`) is the root, its attempt a
/// `chat {model}` client span with the GenAI attributes and the token usage.
#[track_caller]
fn check_ask_on_the_local_model(spans: &[Value]) {
    let root = root(spans);
    let model = attr(root, "gen_ai.request.model")
        .as_str()
        .unwrap_or_else(|| panic!("the root has no gen_ai.request.model: {root:#}"));
    assert_eq!(name(root), format!("ask {model}"), "{root:#}");
    assert_eq!(attr(root, "gen_ai.provider.name"), "local", "{root:#}");
    assert!(attr(root, "gen_ai.operation.name").is_string(), "{root:#}");
    let calls = named(spans, &format!("chat {model}"));
    assert!(!calls.is_empty(), "no `chat {model}` span: {spans:#?}");
    for call in calls {
        assert_eq!(span_id(parent(spans, call)), span_id(root), "{call:#}");
        check_call(call, "local", model);
        for usage in ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"] {
            assert!(
                attr(call, usage).as_u64().is_some_and(|n| n > 0),
                "{usage}: {call:#}"
            );
        }
    }
}

/// `claij fsm run` of [`DEFINITION`] against the mock: `fsm otel-demo` > `state ask` > the
/// `llm.ask` span > one `chat {model}` attempt, with the mock's usage (19 + 10 tokens).
#[track_caller]
fn check_fsm_run(spans: &[Value]) {
    let run = root(spans);
    assert_eq!(name(run), "fsm otel-demo", "{run:#}");
    assert_eq!(attr(run, "claij.fsm.id"), "otel-demo", "{run:#}");
    assert!(attr(run, "claij.fsm.run_id").is_string(), "{run:#}");
    let state = only(spans, "state ask");
    assert_eq!(parent(spans, state), run, "{state:#}");
    assert_eq!(attr(state, "claij.fsm.state"), "ask", "{state:#}");
    let asks: Vec<&Value> = spans
        .iter()
        .filter(|s| parent_id(s) == Some(span_id(state)))
        .filter(|s| name(s).ends_with(&format!(" {MOCK_MODEL}")))
        .collect();
    assert_eq!(
        asks.len(),
        1,
        "one `ask {MOCK_MODEL}` under the state: {spans:#?}"
    );
    let ask = asks[0];
    assert!(
        ["ask", "invoke_agent"].contains(&name(ask).split(' ').next().unwrap()),
        "{ask:#}"
    );
    assert_eq!(attr(ask, "gen_ai.request.model"), MOCK_MODEL, "{ask:#}");
    assert_eq!(attr(ask, "gen_ai.provider.name"), "openrouter", "{ask:#}");
    let call = only(spans, &format!("chat {MOCK_MODEL}"));
    assert_eq!(parent(spans, call), ask, "{call:#}");
    check_call(call, "openrouter", MOCK_MODEL);
    assert_eq!(attr(call, "gen_ai.usage.input_tokens"), 19, "{call:#}");
    assert_eq!(attr(call, "gen_ai.usage.output_tokens"), 10, "{call:#}");
    assert_eq!(attr(call, "claij.attempt"), 1, "{call:#}");
    assert_eq!(attr(call, "claij.verdict"), "valid", "{call:#}");
}

/// The GenAI attributes every model call carries.
#[track_caller]
fn check_call(call: &Value, provider: &str, model: &str) {
    assert_eq!(attr(call, "gen_ai.operation.name"), "chat", "{call:#}");
    assert_eq!(attr(call, "gen_ai.provider.name"), provider, "{call:#}");
    assert_eq!(attr(call, "gen_ai.request.model"), model, "{call:#}");
}

/// No span carries content attributes (GenAI's, or the OpenInference messages Phoenix derives from
/// them), nor any of `markers`, words of the prompt and the reply. (Phoenix also derives
/// `output.value` from metadata such as `gen_ai.response.model`: the markers catch content there.)
#[track_caller]
fn assert_no_content(spans: &[Value], markers: &[&str]) {
    const CONTENT: [&str; 5] = [
        "gen_ai.input.",
        "gen_ai.output.",
        "gen_ai.system_instructions",
        "llm.input_messages",
        "llm.output_messages",
    ];
    for span in spans {
        let keys = span["attributes"].as_object().unwrap().keys();
        for key in keys {
            assert!(
                !CONTENT.iter().any(|prefix| key.starts_with(prefix)),
                "content attribute {key} without --otel-capture-content: {span:#}"
            );
        }
    }
    let text = serde_json::to_string(spans).unwrap();
    for marker in markers {
        assert!(!text.contains(marker), "{marker} in a span: {spans:#?}");
    }
}

/// The one span without a parent.
#[track_caller]
fn root(spans: &[Value]) -> &Value {
    let roots: Vec<&Value> = spans.iter().filter(|s| parent_id(s).is_none()).collect();
    assert_eq!(roots.len(), 1, "one root: {spans:#?}");
    roots[0]
}

/// The one span called `name`.
#[track_caller]
fn only<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one `{name}` span: {spans:#?}");
    found[0]
}

fn named<'a>(spans: &'a [Value], wanted: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| name(s) == wanted).collect()
}

#[track_caller]
fn parent<'a>(spans: &'a [Value], span: &Value) -> &'a Value {
    let id = parent_id(span).unwrap_or_else(|| panic!("no parent: {span:#}"));
    spans
        .iter()
        .find(|s| span_id(s) == id)
        .unwrap_or_else(|| panic!("the parent {id} is not in the trace: {span:#}"))
}

fn name(span: &Value) -> &str {
    span["name"].as_str().unwrap_or_default()
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

fn span_id(span: &Value) -> &str {
    span["context"]["span_id"].as_str().unwrap_or_default()
}

fn trace_id(span: &Value) -> &str {
    span["context"]["trace_id"].as_str().unwrap_or_default()
}

fn parent_id(span: &Value) -> Option<&str> {
    span["parent_id"].as_str()
}

/// The install `cargo xtask collector` made: `$CLAIJ_COLLECTOR`, else the default cache. `None`
/// (skip) when it is not there, except under `CI=true`, where that fails the test.
fn install(test: &str) -> Option<PathBuf> {
    venv_install_or_skip(
        test,
        "CLAIJ_COLLECTOR",
        "collector",
        "cargo xtask collector",
    )
}

/// A running Phoenix, killed (by its PID) when dropped.
struct Collector {
    process: ServerProcess,
    port: u16,
    grpc_port: u16,
}

impl Collector {
    /// Starts Phoenix on free ports of 127.0.0.1, its database in `files`, and waits until it
    /// answers `/healthz`.
    fn start(install: &Path, files: &Files) -> Collector {
        let [port, grpc_port] = free_ports().unwrap();
        let work = files.0.join("phoenix");
        std::fs::create_dir_all(&work).unwrap();
        let log = files.0.join("phoenix.log");
        let out = std::fs::File::create(&log).unwrap();
        let err = out.try_clone().unwrap();
        let mut command = Command::new(python(install));
        // Nothing of the developer's Phoenix or OpenTelemetry settings (Phoenix traces itself).
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if name.starts_with("PHOENIX_") || name.starts_with("OTEL_") {
                command.env_remove(&*name);
            }
        }
        let child = command
            .args(["-I", "-c", LAUNCHER])
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc_port.to_string())
            .env("PHOENIX_WORKING_DIR", &work)
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env("PHOENIX_ALLOW_EXTERNAL_RESOURCES", "false")
            .current_dir(&work)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap();
        let mut collector = Collector {
            process: ServerProcess::new("Phoenix", child, &log),
            port,
            grpc_port,
        };
        collector
            .process
            .wait_for("Phoenix's answer 200 to GET /healthz", || {
                get(port, "/healthz")
                    .is_some_and(|(status, _)| status == 200)
                    .then_some(())
            });
        collector
    }

    /// The base URL for `--otlp-endpoint`.
    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span Phoenix stored in its default project, page after page.
    #[track_caller]
    fn spans(&self) -> Vec<Value> {
        let mut spans = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut query = "/v1/projects/default/spans?limit=1000".to_owned();
            if let Some(cursor) = &cursor {
                query.push_str("&cursor=");
                query.push_str(&percent_encode(cursor));
            }
            let Some((200, body)) = get(self.port, &query) else {
                panic!("GET {query} failed\n{}", self.process.log_tail());
            };
            let page: Value = serde_json::from_str(&body).unwrap();
            spans.extend(page["data"].as_array().unwrap().iter().cloned());
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return spans,
            }
        }
    }

    /// The spans of the traces not in `seen` once they form one whole tree (a root, every parent
    /// there) and two reads agree; their trace joins `seen`. The command (`command`, which ran as
    /// `run` and has exited, its spans flushed) sent them: they are awaited as an event within
    /// [`WAIT_LIMIT`], and a failure names the command, what had arrived (each span's name, id
    /// and parent) and the end of Phoenix's log.
    #[track_caller]
    fn new_trace(&mut self, seen: &mut HashSet<String>, command: &str, run: &Run) -> Vec<Value> {
        let started = Instant::now();
        let mut last = None;
        let mut new: Vec<Value>;
        loop {
            if let Some(status) = self.process.exited() {
                panic!(
                    "{}",
                    self.process.died(
                        status,
                        &format!("while the test waited for the trace of `{command}`")
                    )
                );
            }
            new = self
                .spans()
                .into_iter()
                .filter(|s| !seen.contains(trace_id(s)))
                .collect();
            let ids: HashSet<&str> = new.iter().map(span_id).collect();
            let whole = new.iter().any(|s| parent_id(s).is_none())
                && new
                    .iter()
                    .all(|s| parent_id(s).is_none_or(|p| ids.contains(p)));
            if whole && last == Some(new.len()) {
                let traces: BTreeSet<&str> = new.iter().map(trace_id).collect();
                assert_eq!(traces.len(), 1, "one trace per command: {new:#?}");
                seen.extend(traces.into_iter().map(str::to_owned));
                return new;
            }
            last = whole.then_some(new.len());
            if started.elapsed() > WAIT_LIMIT {
                break;
            }
            std::thread::sleep(POLL);
        }
        let arrived: Vec<String> = new
            .iter()
            .map(|s| {
                format!(
                    "{} (span {}, parent {})",
                    name(s),
                    span_id(s),
                    parent_id(s).unwrap_or("none: a root")
                )
            })
            .collect();
        panic!(
            "the whole trace of `{command}` did not arrive at Phoenix within {} s: {} new span(s) \
             arrived{}{}\nthe command's stderr:\n{}\n{}",
            WAIT_LIMIT.as_secs(),
            new.len(),
            if arrived.is_empty() { "" } else { ":\n    " },
            arrived.join("\n    "),
            run.stderr,
            self.process.log_tail_without("GET /v1/projects/")
        );
    }

    /// Every socket Phoenix listens on is on loopback, its two ports among them (Linux: read from
    /// /proc; elsewhere not checked).
    #[track_caller]
    fn assert_listens_on_loopback_only(&self) {
        #[cfg(target_os = "linux")]
        {
            let listening = listening_sockets(self.process.pid()).expect("Phoenix's sockets");
            let ports: BTreeSet<u16> = listening
                .iter()
                .filter(|s| !s.udp)
                .map(|s| s.port)
                .collect();
            assert!(
                ports.contains(&self.port) && ports.contains(&self.grpc_port),
                "Phoenix listens on {listening:?}, not on {} and {}",
                self.port,
                self.grpc_port
            );
            for socket in &listening {
                assert!(
                    socket.is_loopback(),
                    "Phoenix listens off loopback: {socket:?} among {listening:?}"
                );
            }
        }
    }
}

/// `text` safe in a query string: everything but letters, digits and `-_.~` percent-encoded.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
