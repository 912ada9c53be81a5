//! The test harness itself (`tests/support`): the real Restate server starts on loopback, answers
//! healthy, opens no socket off loopback, and is gone once dropped; a worker process registers,
//! is killed with SIGKILL, and restarts on its port with what Restate queued meanwhile delivered.
//!
//! The worker here is this test binary run again ([`worker_process`]) serving a counter with the
//! Restate SDK, so the harness is tested apart from claij's own worker.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod support;

use std::ffi::OsString;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;

use restate_sdk::prelude::*;

use support::{RestateServer, Worker, listening_sockets};

/// Set in the environment of [`worker_process`] when this binary runs as the worker: its port.
const WORKER_PORT: &str = "CLAIJ_RESTATE_TEST_WORKER_PORT";

#[test]
fn server_starts_healthy_on_loopback_only_and_is_gone_after_drop() {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let pid = server.pid();
    let ports = server.ports();
    eprintln!(
        "restate-server started in {:?}, RSS {} KiB",
        server.started_in(),
        server.rss_kib().unwrap_or_default()
    );
    assert_eq!(
        server.ingress_url(),
        format!("http://127.0.0.1:{}", ports[0])
    );
    assert_eq!(server.admin_url(), format!("http://127.0.0.1:{}", ports[1]));
    let deployments = server.admin("GET", "/deployments", None).unwrap();
    assert_eq!(deployments.status, 200, "{deployments:?}");
    let deployments: serde_json::Value = serde_json::from_str(&deployments.body).unwrap();
    assert_eq!(deployments, serde_json::json!({"deployments": []}));
    let unknown = server
        .ingress("POST", "/NoSuchService/run", Some("{}"))
        .unwrap();
    assert_eq!(unknown.status, 404, "{unknown:?}");

    let listening = listening_sockets(pid);
    for port in ports {
        assert!(
            listening.iter().any(|s| !s.udp && s.port == port),
            "the server does not listen on port {port}: {listening:?}"
        );
    }
    for socket in &listening {
        assert!(
            socket.is_loopback(),
            "the server listens off loopback: {socket:?} among {listening:?}"
        );
    }
    let log = server.log();
    assert!(log.contains("Starting Restate Server"), "{log}");

    drop(server);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the server (pid {pid}) still runs after drop"
    );
    for port in ports {
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "something still listens on port {port} after drop"
        );
    }
}

#[test]
fn worker_registers_and_restarts_on_its_port_after_sigkill() {
    let Some(server) = RestateServer::start() else {
        return;
    };
    let mut worker = Worker::spawn(|port| {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                "worker_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(WORKER_PORT, port.to_string());
        command
    });
    let (port, first_pid) = (worker.port(), worker.pid().unwrap());
    assert_eq!(worker.uri(), format!("http://127.0.0.1:{port}"));
    let id = server.register(&worker.uri());
    assert!(id.starts_with("dp_"), "{id}");
    let add = |server: &RestateServer, path: &str| {
        let response = server.ingress("POST", path, Some("1")).unwrap();
        (response.status, response.body)
    };
    assert_eq!(add(&server, "/Counter/c/add"), (200, "1".to_owned()));

    worker.kill();
    assert!(!Path::new(&format!("/proc/{first_pid}")).exists());
    // Accepted while no worker runs: Restate holds it and retries.
    let (status, sent) = add(&server, "/Counter/c/add/send");
    assert_eq!(status, 202, "{sent}");
    worker.restart();
    assert_eq!(worker.port(), port);
    assert_ne!(worker.pid(), Some(first_pid));
    // Registering the same URI again is accepted (forced), and names the same deployment.
    assert_eq!(server.register(&worker.uri()), id);
    // The object's calls run one at a time in order: the one sent while the worker was down
    // runs first.
    assert_eq!(add(&server, "/Counter/c/add"), (200, "3".to_owned()));
    let log = worker.log();
    drop(worker);
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the worker still listens after drop; its log:\n{log}"
    );
}

/// The worker of [`worker_registers_and_restarts_on_its_port_after_sigkill`]: when this binary is
/// started with [`WORKER_PORT`] set, it serves [`Counter`] there until killed. In a test run it
/// has nothing to do and returns.
#[test]
fn worker_process() {
    let Some(port) = std::env::var_os(WORKER_PORT) else {
        return;
    };
    let port: u16 = port.to_str().unwrap().parse().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(
        HttpServer::new(Endpoint::builder().bind(counter::Counter).build())
            .listen_and_serve(([127, 0, 0, 1], port).into()),
    );
}

/// A virtual object: a number per key. (Its own module: the SDK's macro generates undocumented
/// items.)
#[allow(missing_docs)]
mod counter {
    use restate_sdk::prelude::*;

    pub(super) struct Counter;

    #[restate_sdk::object]
    impl Counter {
        #[handler]
        async fn add(&self, ctx: ObjectContext<'_>, value: u64) -> Result<u64, TerminalError> {
            let total = ctx.get::<u64>("total").await?.unwrap_or(0) + value;
            ctx.set("total", total);
            Ok(total)
        }
    }
}

/// Without `CLAIJ_RESTATE_SERVER`, the harness looks where `cargo xtask restate` installs (its
/// test `layout_is_the_one_the_tests_rely_on` pins the same path), in the same cache.
#[test]
fn without_the_variable_the_binary_is_looked_for_in_xtasks_cache() {
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        return;
    }
    let check = |vars: &[(&str, &str)], expected: Option<&str>| {
        let var = |name: &str| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        };
        assert_eq!(
            support::default_binary(&var),
            expected.map(PathBuf::from),
            "{vars:?}"
        );
    };
    let binary = "npm/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server";
    let all = [
        ("CLAIJ_RESTATE_DIR", "/r"),
        ("XDG_CACHE_HOME", "/xdg"),
        ("HOME", "/home/me"),
    ];
    check(&all, Some(&format!("/r/{binary}")));
    check(&all[1..], Some(&format!("/xdg/claij/restate/{binary}")));
    check(
        &all[2..],
        Some(&format!("/home/me/.cache/claij/restate/{binary}")),
    );
    check(
        &[("XDG_CACHE_HOME", "relative"), ("HOME", "/h")],
        Some(&format!("/h/.cache/claij/restate/{binary}")),
    );
    check(&[], None);
}
