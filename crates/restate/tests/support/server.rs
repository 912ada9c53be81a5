//! [`RestateServer`]: the real `restate-server` binary, one node, started for a test on loopback
//! with a temp base dir, and stopped by its PID (SIGTERM, then SIGKILL) when dropped.

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::http::{self, Response};
use super::{POLL, START_LIMIT, TempDir, WAIT_LIMIT, free_ports, log_tail, poll, test_name};

/// The variable naming the binary; `cargo xtask test` sets it.
const BINARY_VAR: &str = "CLAIJ_RESTATE_SERVER";
/// How long the server may take to stop after SIGTERM before it gets SIGKILL.
const STOP_LIMIT: Duration = Duration::from_secs(20);
/// How many times a start is tried with fresh ports when another process took one meanwhile.
const PORT_ATTEMPTS: usize = 3;
/// Partitions of the test cluster: the default 24 costs 100 MB and a second of CPU on two cores,
/// and a test needs few.
const PARTITIONS: &str = "4";
/// RocksDB's memory across the node (the default is 2 GiB, sized for a server of its own).
const ROCKSDB_MEMORY: &str = "256MB";

/// A running single-node Restate server whose every listener (ingress, admin, node-to-node
/// fabric) is on 127.0.0.1, with its data in a temp dir; stopped and removed when dropped.
#[derive(Debug)]
pub(crate) struct RestateServer {
    child: Child,
    ingress: u16,
    admin: u16,
    fabric: u16,
    /// The server's stdout and stderr.
    log: PathBuf,
    /// From spawning to both health endpoints answering 200.
    started_in: Duration,
    /// Whether a failure message already quoted the log (else a failing test's drop prints it).
    quoted: AtomicBool,
    /// Dropped last: the data and the log.
    base: TempDir,
}

impl RestateServer {
    /// Starts the server and waits until its admin and ingress APIs are healthy; `None` (after
    /// saying why on stderr) when the binary is not installed, except under `CI=true`, where that
    /// panics: there a skipped test would hide a failure.
    ///
    /// # Panics
    ///
    /// When the server exits or is not healthy within the start limit (the message quotes its log).
    pub(crate) fn start() -> Option<RestateServer> {
        RestateServer::start_with(&[])
    }

    /// [`RestateServer::start`] with `env` set for the server as well (after the test's own
    /// settings, so it may add options, e.g. a request-identity private key).
    pub(crate) fn start_with(env: &[(&str, &std::ffi::OsStr)]) -> Option<RestateServer> {
        let binary = binary()?;
        for attempt in 1..=PORT_ATTEMPTS {
            match RestateServer::try_start(&binary, env) {
                Ok(server) => return Some(server),
                Err(log) if attempt < PORT_ATTEMPTS && port_taken(&log) => continue,
                Err(log) => panic!(
                    "{}: the Restate server ({}) did not start:\n{log}",
                    test_name(),
                    binary.display()
                ),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// `http://127.0.0.1:PORT`, where invocations go.
    pub(crate) fn ingress_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ingress)
    }

    /// `http://127.0.0.1:PORT`, the admin API (deployments, invocations, introspection).
    pub(crate) fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.admin)
    }

    /// The ports of the ingress, the admin API and the node-to-node fabric.
    pub(crate) fn ports(&self) -> [u16; 3] {
        [self.ingress, self.admin, self.fabric]
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How long the start took, from spawning to healthy.
    pub(crate) fn started_in(&self) -> Duration {
        self.started_in
    }

    /// The server's resident memory now, in KiB (Linux: `VmRSS` in `/proc/<pid>/status`).
    pub(crate) fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse()
            .ok()
    }

    /// The server's log so far.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Registers the deployment (a worker's endpoint) at `uri` through the admin API, forcing the
    /// registration so a restarted worker at the same URI registers again; returns the
    /// deployment's id.
    ///
    /// It blocks while Restate calls the worker to discover its services: a worker on the calling
    /// thread's runtime must run on another thread (a multi-thread runtime, or a child process).
    ///
    /// # Panics
    ///
    /// When the admin API refuses (the message quotes its answer and the server's log).
    #[track_caller]
    pub(crate) fn register(&self, uri: &str) -> String {
        let body = serde_json::json!({"uri": uri, "force": true}).to_string();
        let response = self.admin("POST", "/deployments", Some(&body));
        let id = match &response {
            Some(Response {
                status: 200 | 201,
                body,
            }) => serde_json::from_str::<serde_json::Value>(body)
                .ok()
                .and_then(|value| value.get("id")?.as_str().map(str::to_owned)),
            _ => None,
        };
        id.unwrap_or_else(|| {
            panic!(
                "registering {uri} with Restate failed: {response:?}\n{}",
                log_tail(&self.log)
            )
        })
    }

    /// Polls `probe` (a new future each time) every [`POLL`] until it gives a value, and returns it:
    /// an event of a run awaited as an event, whatever the machine's load. Panics when
    /// [`WAIT_LIMIT`] passes, naming `what` did not arrive and quoting the server's log (a failing
    /// test's workers print theirs as they drop).
    pub(crate) async fn wait_for<T, F>(&self, what: &str, mut probe: impl FnMut() -> F) -> T
    where
        F: std::future::Future<Output = Option<T>>,
    {
        let started = Instant::now();
        loop {
            if let Some(value) = probe().await {
                return value;
            }
            if started.elapsed() > WAIT_LIMIT {
                self.quoted.store(true, Ordering::Relaxed);
                panic!(
                    "{}: {what} did not happen within {} s (the Restate server, pid {}, {});\n{}",
                    test_name(),
                    WAIT_LIMIT.as_secs(),
                    self.pid(),
                    if self.is_running() {
                        "still runs"
                    } else {
                        "has exited"
                    },
                    log_tail(&self.log)
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Whether the process is still there (not exited, nor a zombie waiting to be reaped).
    fn is_running(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        })
    }

    /// `method path` on the admin API with `body` as JSON; `None` when it does not answer.
    pub(crate) fn admin(&self, method: &str, path: &str, body: Option<&str>) -> Option<Response> {
        http::request(self.admin, method, path, body)
    }

    /// `method path` on the ingress with `body` as JSON; `None` when it does not answer.
    pub(crate) fn ingress(&self, method: &str, path: &str, body: Option<&str>) -> Option<Response> {
        http::request(self.ingress, method, path, body)
    }

    /// One start on fresh ports: the server, or its log when it exited (a port taken meanwhile).
    fn try_start(binary: &Path, env: &[(&str, &std::ffi::OsStr)]) -> Result<RestateServer, String> {
        let base = TempDir::new("restate");
        let [ingress, admin, fabric] = free_ports::<3>();
        let log = base.path().join("restate-server.log");
        let mut command = command(binary, base.path(), [ingress, admin, fabric]);
        command.envs(env.iter().copied());
        let out = File::create(&log).unwrap();
        command
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let started = Instant::now();
        let child = command
            .spawn()
            .unwrap_or_else(|err| panic!("cannot run {}: {err}", binary.display()));
        let mut server = RestateServer {
            child,
            ingress,
            admin,
            fabric,
            log,
            started_in: Duration::ZERO,
            quoted: AtomicBool::new(false),
            base,
        };
        let healthy = poll(START_LIMIT, || {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Some(Err(format!(
                    "it exited ({status}); {}",
                    log_tail(&server.log)
                )));
            }
            let ok = |port, path| http::get_status(port, path) == Some(200);
            (ok(admin, "/health") && ok(ingress, "/restate/health")).then_some(Ok(()))
        });
        match healthy {
            Some(Ok(())) => {
                server.started_in = started.elapsed();
                Ok(server)
            }
            Some(Err(log)) => Err(log),
            None => Err(format!(
                "it was not healthy after {START_LIMIT:?}; {}",
                log_tail(&server.log)
            )),
        }
    }

    /// SIGTERM, then SIGKILL after [`STOP_LIMIT`]; waits for the exit either way.
    fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let pid = Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
        let _ = kill(pid, Signal::SIGTERM);
        let exited = poll(STOP_LIMIT, || self.child.try_wait().ok().flatten());
        if exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        if std::thread::panicking() && !self.quoted.load(Ordering::Relaxed) {
            eprintln!(
                "{}: the test failed; the Restate server (pid {}) {}",
                test_name(),
                self.pid(),
                log_tail(&self.log)
            );
        }
        self.stop();
    }
}

/// Whether the log says a listener's port was taken (by another process, between picking the
/// ports and the server binding them).
fn port_taken(log: &str) -> bool {
    let log = log.to_ascii_lowercase();
    log.contains("address already in use") || log.contains("addrinuse")
}

/// The server binary: `$CLAIJ_RESTATE_SERVER`, else where `cargo xtask restate` puts it in the
/// default cache; `None` after saying so when it is not there (a panic under CI).
fn binary() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    let path = var(BINARY_VAR)
        .map(PathBuf::from)
        .or_else(|| default_binary(&var));
    if let Some(path) = path.filter(|path| path.is_file()) {
        return Some(path);
    }
    let test = test_name();
    assert!(
        !claij_test_support::is_ci(|name| std::env::var_os(name)),
        "{test}: CI=true and the Restate server is missing ({BINARY_VAR}): run `cargo xtask restate`"
    );
    eprintln!("{test}: skipped: no Restate server ({BINARY_VAR}; run `cargo xtask restate`)");
    None
}

/// `<cache>/npm/node_modules/@restatedev/restate-server-<os>-<arch>/bin/restate-server`, the cache
/// being `$CLAIJ_RESTATE_DIR`, else `$XDG_CACHE_HOME/claij/restate`, else
/// `$HOME/.cache/claij/restate` (xtask's layout).
pub(crate) fn default_binary(var: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let os = match std::env::consts::OS {
        "linux" => "linux",
        "macos" => "darwin",
        _ => return None,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        _ => return None,
    };
    let cache = var("CLAIJ_RESTATE_DIR").map(PathBuf::from).or_else(|| {
        var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
            .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache")))
            .map(|cache| cache.join("claij").join("restate"))
    })?;
    Some(
        cache
            .join("npm/node_modules/@restatedev")
            .join(format!("restate-server-{os}-{arch}"))
            .join("bin/restate-server"),
    )
}

/// The server's command: every listener on 127.0.0.1 at `[ingress, admin, fabric]`, TCP only (no
/// unix sockets), data under `base`, no telemetry, and nothing of the caller's Restate or proxy
/// settings (a proxy would take the server's calls to the workers).
fn command(binary: &Path, base: &Path, [ingress, admin, fabric]: [u16; 3]) -> Command {
    let mut command = Command::new(binary);
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy().to_ascii_uppercase();
        if text.starts_with("RESTATE_") || text.ends_with("_PROXY") {
            command.env_remove(&name);
        }
    }
    command
        .arg("--no-logo")
        .env("RESTATE_BASE_DIR", base)
        .env("RESTATE_NODE_NAME", "claij-test")
        .env("RESTATE_LISTEN_MODE", "tcp")
        .env("RESTATE_BIND_IP", "127.0.0.1")
        .env("RESTATE_BIND_ADDRESS", format!("127.0.0.1:{fabric}"))
        .env(
            "RESTATE_ADVERTISED_ADDRESS",
            format!("http://127.0.0.1:{fabric}/"),
        )
        .env(
            "RESTATE_INGRESS__BIND_ADDRESS",
            format!("127.0.0.1:{ingress}"),
        )
        .env("RESTATE_ADMIN__BIND_ADDRESS", format!("127.0.0.1:{admin}"))
        .env("RESTATE_ADMIN__DISABLE_WEB_UI", "true")
        .env("RESTATE_DEFAULT_NUM_PARTITIONS", PARTITIONS)
        .env("RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE", ROCKSDB_MEMORY)
        .env("RESTATE_DISABLE_TELEMETRY", "true")
        .env("DO_NOT_TRACK", "true")
        .env("RESTATE_LOG_FORMAT", "compact")
        .env("RESTATE_LOG_DISABLE_ANSI_CODES", "true");
    command
}
