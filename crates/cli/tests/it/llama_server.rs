//! `claij ask` against a real OpenAI-compatible server: llama.cpp's Python server
//! (`llama-cpp-python[server]`, installed by `cargo xtask llama-server`), serving the embedded
//! model's GGUF on 127.0.0.1, reached through a configuration entry of `kind = "openai-compatible"`.
//!
//! That server answers `response_format.type = "json_schema"` with HTTP 500 and takes
//! `{"type": "json_object", "schema": ...}`: automatic and native mode must find that out, tool mode
//! must work as it is. The tests assert the mechanics (a document valid against the schema, what
//! was learned), never what the 135M model says. They run in the nextest `local-model` group.
//!
//! A server that dies (llama.cpp built for another CPU dies on the first generation) fails the test
//! with its exit status or signal and the tail of its log, whatever `claij` said about the closed
//! connection.

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::server::ServerProcess;
use super::{Files, Run, claij_env};

/// The install `cargo xtask llama-server` made: `$CLAIJ_LLAMA_SERVER`, else the default cache.
/// `None` (skip) when it is not there, except under `CI=true`, where that fails the test.
fn install(test: &str) -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let dir = set("CLAIJ_LLAMA_SERVER").map(PathBuf::from).or_else(|| {
        set("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".cache")))
            .map(|cache| cache.join("claij").join("llama-server"))
    });
    let model = claij::local::model_dir(|name| std::env::var_os(name))
        .join(claij::local::DEFAULT_MODEL_FILE);
    let ready = dir
        .filter(|d| d.join("installed.json").is_file() && python(d).is_file())
        .filter(|_| model.is_file());
    if ready.is_some() {
        return ready;
    }
    assert!(
        !claij_test_support::is_ci(|name| std::env::var_os(name)),
        "{test}: CI=true and llama.cpp's Python server or the model is missing: run \
         `cargo xtask llama-server` and `cargo xtask model`"
    );
    #[allow(clippy::print_stderr, reason = "a skipped test says so")]
    {
        eprintln!(
            "{test}: skipped: no llama-cpp-python server (CLAIJ_LLAMA_SERVER; run `cargo xtask \
             llama-server`) or no model at {}",
            model.display()
        );
    }
    None
}

fn python(dir: &Path) -> PathBuf {
    dir.join("venv").join("bin").join("python")
}

/// A running server, killed (by its PID) when dropped.
struct Server {
    process: ServerProcess,
    port: u16,
    /// What `cargo xtask llama-server` recorded about the build (`installed.json`), for failures.
    stamp: String,
}

impl Server {
    /// Starts the server on a free port of 127.0.0.1 and waits until `/v1/models` answers.
    fn start(install: &Path, files: &Files) -> Server {
        let model = claij::local::model_dir(|name| std::env::var_os(name))
            .join(claij::local::DEFAULT_MODEL_FILE);
        let port = free_port();
        let log = PathBuf::from(files.path("server.log"));
        let out = std::fs::File::create(&log).unwrap();
        let err = out.try_clone().unwrap();
        let child = Command::new(python(install))
            .args(["-m", "llama_cpp.server", "--model"])
            .arg(&model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--n_ctx", "2048", "--n_threads", "1", "--verbose", "false"])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap();
        let stamp = std::fs::read_to_string(install.join("installed.json"))
            .unwrap_or_else(|e| format!("(cannot read {}: {e})", install.display()));
        let mut server = Server {
            process: ServerProcess::new("llama.cpp's server", child, &log),
            port,
            stamp,
        };
        server.process.wait_for("an answer to GET /v1/models", || {
            models_answer(port).then_some(())
        });
        server
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// `run` of `claij ask --mode mode`, checked against the server: if the server died (during
    /// the run or after it), the test fails with its exit status and log, not with what `claij`
    /// made of the closed connection; a failed run with the server alive fails with both sides.
    #[track_caller]
    fn checked(&mut self, run: Run, mode: &str) -> Run {
        let status = if run.code == 0 {
            self.process.exited()
        } else {
            self.process.exited_soon()
        };
        if let Some(status) = status {
            panic!(
                "--mode {mode}: {}\nclaij exited {} and said:\n{}\nthe install's installed.json:\n{}",
                self.process
                    .died(status, "during or after the run of `claij ask`"),
                run.code,
                run.stderr,
                self.stamp.trim_end()
            );
        }
        assert!(
            run.code == 0,
            "--mode {mode}: claij exited {} (the server is still running):\n{}\n{}",
            run.code,
            run.stderr,
            self.process.log_tail()
        );
        run
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether `GET /v1/models` answers 200.
fn models_answer(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = "GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.ends_with(b" 200")
}

/// The schema the answers must satisfy: short strings, so the small model finishes in time.
const SCHEMA: &str = r#"{"type": "object", "required": ["answer", "state"],
  "properties": {"answer": {"type": "string", "maxLength": 60},
                 "state": {"type": "string", "enum": ["done", "more"]}}}"#;

/// `claij ask --mode mode` against `server`, checked by [`Server::checked`].
#[track_caller]
fn ask(server: &mut Server, files: &Files, mode: &str) -> Run {
    let config = files.path("config.toml");
    let cache = files.path("cache");
    let run = claij_env(
        &[
            "ask",
            "What is the capital of France?",
            "--schema",
            &files.path("schema.json"),
            "--llm",
            "llamacpp:smollm2",
            "--mode",
            mode,
            "--temperature",
            "0",
            "--seed",
            "1",
            "--max-tokens",
            "200",
            "--max-retries",
            "3",
        ],
        "",
        &[
            ("CLAIJ_CONFIG", Some(config.as_str())),
            ("XDG_CACHE_HOME", Some(cache.as_str())),
        ],
    );
    server.checked(run, mode)
}

#[track_caller]
fn assert_document(run: &Run, mode: &str) {
    assert_eq!(run.code, 0, "--mode {mode}: {}", run.stderr);
    let value: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(value["answer"].is_string(), "--mode {mode}: {value}");
    assert!(
        matches!(value["state"].as_str(), Some("done" | "more")),
        "--mode {mode}: {value}"
    );
}

#[test]
fn auto_native_and_tool_modes_give_valid_documents() {
    let test = "auto_native_and_tool_modes_give_valid_documents";
    let Some(install) = install(test) else { return };
    let files = Files::new(&[("schema.json", SCHEMA)]);
    let mut server = Server::start(&install, &files);
    let config = format!(
        "[providers.llamacpp]\nkind = \"openai-compatible\"\nbase_url = \"{}\"\n",
        server.base_url()
    );
    std::fs::write(files.path("config.toml"), config).unwrap();
    let cache = files.path("cache/claij/structured-output.json");

    // Native first: json_schema is rejected, and json_object with the schema (still native) works.
    let native = ask(&mut server, &files, "native");
    assert_document(&native, "native");
    assert!(
        native
            .stderr
            .contains("using json_object_schema from now on"),
        "{}",
        native.stderr
    );
    let saved = std::fs::read_to_string(&cache).unwrap();
    assert!(
        saved.contains(r#""structured_output": "json_object_schema""#),
        "{saved}"
    );

    // Auto reads the lesson: no rejection this time, nothing to say about it.
    let auto = ask(&mut server, &files, "auto");
    assert_document(&auto, "auto");
    assert!(!auto.stderr.contains("rejected"), "{}", auto.stderr);

    let tool = ask(&mut server, &files, "tool");
    assert_document(&tool, "tool");

    // A fresh cache: auto mode finds the dialect by itself.
    let fresh = Files::new(&[("schema.json", SCHEMA)]);
    std::fs::copy(files.path("config.toml"), fresh.path("config.toml")).unwrap();
    let auto = ask(&mut server, &fresh, "auto");
    assert_document(&auto, "auto");
    assert!(
        auto.stderr.contains("using json_object_schema from now on"),
        "{}",
        auto.stderr
    );
    drop(server);
}
