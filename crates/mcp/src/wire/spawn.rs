//! Starting a stdio server: its own process group (so a wrapper like `npx` takes its children with
//! it), stderr piped into tracing with the last lines kept for error messages, and a guard that can
//! kill the whole group synchronously.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use process_wrap::tokio::{CommandWrap, ProcessGroup};
use rmcp::transport::TokioChildProcess;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tracing::debug;

use crate::config::StdioServer;
use crate::error::Error;

/// Lines of a server's stderr kept for error messages.
const TAIL_LINES: usize = 8;
/// Longest stderr line kept (servers print stack traces and base64 blobs).
const TAIL_LINE_CHARS: usize = 300;

/// The spawned process, as far as claij needs to know it.
pub(crate) struct ChildGuard {
    pid: Option<u32>,
    tail: Arc<Mutex<VecDeque<String>>>,
}

/// A snapshot of the last stderr lines.
pub(crate) struct Tail(Vec<String>);

impl Tail {
    pub(crate) fn last(&self) -> Option<&str> {
        self.0.last().map(String::as_str)
    }
}

impl ChildGuard {
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    pub(crate) fn stderr_tail(&self) -> Tail {
        let tail = self.tail.lock().unwrap_or_else(PoisonError::into_inner);
        Tail(tail.iter().cloned().collect())
    }

    /// Sends SIGKILL to the process group (the server and anything it started).
    pub(crate) fn kill_group(&self) {
        #[cfg(unix)]
        if let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }

    /// Waits (up to `limit`) until the process group has no member left.
    pub(crate) async fn reap(&self, limit: Duration) {
        #[cfg(unix)]
        if let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) {
            let deadline = tokio::time::Instant::now() + limit;
            let pgid = nix::unistd::Pid::from_raw(pid);
            while nix::sys::signal::killpg(pgid, None).is_ok()
                && tokio::time::Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Spawns the server. The returned transport owns the process (rmcp closes stdin, waits, then
/// signals it when the connection closes).
pub(crate) fn spawn(
    server: &str,
    stdio: &StdioServer,
) -> Result<(TokioChildProcess, ChildGuard), Error> {
    let mut command = tokio::process::Command::new(&stdio.command);
    command
        .args(&stdio.args)
        .envs(&stdio.env)
        .kill_on_drop(true);
    if let Some(cwd) = &stdio.cwd {
        command.current_dir(cwd);
    }
    let mut wrapped = CommandWrap::from(command);
    wrapped.wrap(ProcessGroup::leader());
    let (transport, stderr) = TokioChildProcess::builder(wrapped)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| Error::Spawn {
            server: server.to_owned(),
            command: stdio.command.clone(),
            source,
        })?;
    let tail = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_LINES)));
    if let Some(stderr) = stderr {
        let (server, tail) = (server.to_owned(), Arc::clone(&tail));
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                debug!(server, line, "mcp server stderr");
                let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                if tail.len() == TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(line.chars().take(TAIL_LINE_CHARS).collect());
            }
        });
    }
    let pid = transport.id();
    debug!(server, pid, command = stdio.command, "mcp server started");
    Ok((transport, ChildGuard { pid, tail }))
}
