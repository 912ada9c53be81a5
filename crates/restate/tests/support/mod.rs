//! Test support for `claij-restate`: a real Restate server on loopback ([`RestateServer`]), started
//! from the binary `cargo xtask restate` installs, and workers run as child processes ([`Worker`]),
//! so a test can kill one with SIGKILL and start it again on the same port.
//!
//! Every process is stopped by its PID when its handle drops, and a handle dropped by a failing
//! test prints the end of the process's log. Nothing listens off loopback.
//!
//! Nothing waits on the machine being idle: a start, and every event a test waits for
//! ([`RestateServer::wait_for`]), is polled within a bound of minutes (a hang guard, never a speed),
//! and a bound that passes names what did not arrive and quotes the server's log.
//!
//! Shared by the integration tests and the bench (`#[path]`); each uses part of it.

#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary and the bench use part of the support"
)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    reason = "test support: a failure is a panic that says what happened; a skip says so on stderr"
)]

mod http;
mod net;
mod server;
mod worker;

pub(crate) use net::{Listening, free_ports, listening_sockets};
pub(crate) use server::{RestateServer, default_binary};
pub(crate) use worker::Worker;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a process may take to start answering before the test fails: a hang guard for a loaded
/// two-core machine, not a timing assertion.
const START_LIMIT: Duration = Duration::from_secs(600);
/// How long a test waits for an event of a run (a journaled step, a model call asked, a run's end)
/// before it fails: a hang guard for a loaded two-core machine, not a timing assertion.
pub(crate) const WAIT_LIMIT: Duration = Duration::from_secs(600);
/// Between two readiness checks.
const POLL: Duration = Duration::from_millis(20);
/// How many lines of a process's log a failure quotes.
const LOG_TAIL: usize = 40;

/// The test running on this thread (libtest names each test's thread after it), for messages.
fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("restate test")
        .to_owned()
}

/// Polls `ready` every [`POLL`] until it returns `Some` or `limit` passes (then `None`).
fn poll<T>(limit: Duration, mut ready: impl FnMut() -> Option<T>) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Some(value) = ready() {
            return Some(value);
        }
        if started.elapsed() > limit {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// The last [`LOG_TAIL`] lines of the log at `path`, indented, for a panic message.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(LOG_TAIL);
    let mut tail = format!("{} ends:", path.display());
    for line in &lines[start..] {
        tail.push_str("\n    ");
        tail.push_str(line);
    }
    tail
}

/// A fresh directory under the temp dir, removed when dropped.
#[derive(Debug)]
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "claij-{what}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
