//! A real server process a test starts (llama.cpp's server, Phoenix, Chroma, ...): its log in a
//! file, killed by its PID when dropped, and waited on by events: readiness and results are polled
//! until they arrive, within a generous bound (minutes: the machine may be loaded, so the bound is a
//! hang guard, never a speed), and a server that exits or a bound that passes fails the test with
//! what did not arrive, the server's exit status (or signal) and the tail of its log. Also where a
//! test finds a server an xtask command installed into a venv ([`venv_install_or_skip`]), and a
//! plain HTTP/1.0 GET on loopback for its readiness probe ([`get`]).
//!
//! ```
//! use claij_test_support::{lookup, server::venv_install_or_skip_with};
//!
//! let env = lookup(&[("CLAIJ_NOTHING", "/nonexistent"), ("CI", "false")]);
//! let found = venv_install_or_skip_with("doc", "CLAIJ_NOTHING", "nothing", "cargo xtask nothing", env);
//! assert_eq!(found, None);
//! ```

#![allow(
    clippy::panic,
    clippy::print_stderr,
    reason = "a test harness fails the test loudly and says when it skips one"
)]

use std::ffi::OsString;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// The bound on a wait for a server's event: ten minutes (a model or a Python server loading on a
/// loaded two-core machine). A hang guard, not a speed.
pub const WAIT_LIMIT: Duration = Duration::from_secs(600);
/// Between two polls.
pub const POLL: Duration = Duration::from_millis(200);
/// How many lines of a server's log a failure quotes.
pub const LOG_TAIL: usize = 40;
/// How long a server whose client saw its connection close is given to be seen exiting (the kernel
/// closes its sockets a moment before it can be reaped).
pub const EXIT_GRACE: Duration = Duration::from_secs(10);

/// A server process started by a test, with its output in `log`.
#[derive(Debug)]
pub struct ServerProcess {
    /// What it is, for messages (`llama.cpp's server`).
    name: String,
    child: Child,
    log: PathBuf,
}

impl ServerProcess {
    /// `child`, already spawned with its stdout and stderr in `log`.
    pub fn new(name: &str, child: Child, log: &Path) -> ServerProcess {
        ServerProcess {
            name: name.to_owned(),
            child,
            log: log.to_path_buf(),
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status, if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Its exit status once it has exited, waiting at most [`EXIT_GRACE`]: for a server whose client
    /// just saw the connection close.
    pub fn exited_soon(&mut self) -> Option<ExitStatus> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            if started.elapsed() > EXIT_GRACE {
                return None;
            }
            std::thread::sleep(POLL);
        }
    }

    /// The last lines of its log, indented, under a line naming the file.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log, "")
    }

    /// [`ServerProcess::log_tail`] without the lines holding `noise` (e.g. the test's own polls,
    /// which would push what the server said out of the tail).
    pub fn log_tail_without(&self, noise: &str) -> String {
        log_tail(&self.log, noise)
    }

    /// The failure message of a server that exited with `status` while `doing`.
    pub fn died(&self, status: ExitStatus, doing: &str) -> String {
        format!(
            "{} (pid {}) exited ({status}) {doing}\n{}",
            self.name,
            self.child.id(),
            self.log_tail()
        )
    }

    /// Calls `probe` every [`POLL`] until it gives a value, and returns it. Panics when the server
    /// exits first (its status and log) or when [`WAIT_LIMIT`] passes, naming `what` did not arrive.
    #[track_caller]
    pub fn wait_for<T>(&mut self, what: &str, probe: impl FnMut() -> Option<T>) -> T {
        self.wait_for_within(what, WAIT_LIMIT, probe)
    }

    /// [`ServerProcess::wait_for`] with another bound.
    #[track_caller]
    pub fn wait_for_within<T>(
        &mut self,
        what: &str,
        limit: Duration,
        mut probe: impl FnMut() -> Option<T>,
    ) -> T {
        let started = Instant::now();
        loop {
            if let Some(status) = self.exited() {
                panic!(
                    "{}",
                    self.died(status, &format!("while the test waited for {what}"))
                );
            }
            if let Some(value) = probe() {
                return value;
            }
            if started.elapsed() > limit {
                panic!(
                    "{what} did not arrive within {} s ({} is still running, pid {})\n{}",
                    limit.as_secs(),
                    self.name,
                    self.child.id(),
                    self.log_tail()
                );
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last [`LOG_TAIL`] lines of the log at `path` (those holding `noise` left out, unless it
/// is empty), indented, under a line naming the file.
pub fn log_tail(path: &Path, noise: &str) -> String {
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) => return format!("its log {} cannot be read: {error}", path.display()),
    };
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| noise.is_empty() || !line.contains(noise))
        .collect();
    let start = lines.len().saturating_sub(LOG_TAIL);
    let without = if noise.is_empty() {
        String::new()
    } else {
        format!(" (lines with `{noise}` left out)")
    };
    let mut tail = if start > 0 {
        format!(
            "the last {LOG_TAIL} lines of its log {}{without}:",
            path.display()
        )
    } else {
        format!("its log {}{without}:", path.display())
    };
    for line in &lines[start..] {
        tail.push_str("\n    ");
        tail.push_str(line);
    }
    if lines.is_empty() {
        tail.push_str(" (empty)");
    }
    tail
}

/// The install an xtask command made into a venv cache, found as the xtask finds it: `$<var>`, else
/// `$XDG_CACHE_HOME/claij/<folder>` (when absolute), else `~/.cache/claij/<folder>`; it counts once
/// it holds `installed.json` and `venv/bin/python`. `None` (the test `test` is skipped, saying so
/// and naming `command`) when it is not there.
///
/// # Panics
///
/// Under CI ([`crate::is_ci`]) when the install is missing: a skipped server test would hide a
/// failure.
pub fn venv_install_or_skip(test: &str, var: &str, folder: &str, command: &str) -> Option<PathBuf> {
    venv_install_or_skip_with(test, var, folder, command, |name| std::env::var_os(name))
}

/// [`venv_install_or_skip`] with the environment looked up by `env`.
///
/// # Panics
///
/// As [`venv_install_or_skip`].
pub fn venv_install_or_skip_with(
    test: &str,
    var: &str,
    folder: &str,
    command: &str,
    env: impl Fn(&str) -> Option<OsString>,
) -> Option<PathBuf> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    let dir = set(var).map(PathBuf::from).or_else(|| {
        set("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".cache")))
            .map(|cache| cache.join("claij").join(folder))
    });
    let ready = dir.filter(|d| d.join("installed.json").is_file() && venv_python(d).is_file());
    if ready.is_some() {
        return ready;
    }
    assert!(
        !crate::is_ci(&env),
        "{test}: CI=true and the install {var} names is missing: run `{command}`"
    );
    eprintln!("{test}: skipped: nothing installed ({var}; run `{command}`)");
    None
}

/// The python of the venv in `<dir>/venv`.
pub fn venv_python(dir: &Path) -> PathBuf {
    dir.join("venv").join("bin").join("python")
}

/// `GET path` on 127.0.0.1:`port` over HTTP/1.0: the status and the body, or `None` when there is
/// no answer (yet) within a minute.
pub fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    let text = String::from_utf8(response).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}
