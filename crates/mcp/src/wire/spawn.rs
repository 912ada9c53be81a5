//! Starting a stdio server: its own process group (so a wrapper like `npx` takes its children with
//! it), stdout read through the message size limit ([`super::limit`]), stderr piped into tracing with
//! the last lines kept for error messages, and a guard that can kill the whole group synchronously.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::Either;
use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessGroup};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tracing::{debug, warn};

use super::limit::{Limit, LimitedReader};
use crate::config::StdioServer;
use crate::error::Error;

/// How long a server may take to exit after its stdin closes, then after SIGTERM (as rmcp's own
/// child-process transport waits).
const EXIT_WAIT: Duration = Duration::from_secs(3);

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

/// A stdio server as an rmcp transport: rmcp's line reader and writer on the child's pipes, stdout
/// read through the size limit. It owns the process: closing it closes both pipes, waits, then
/// signals.
pub(crate) struct StdioTransport {
    child: Option<Box<dyn ChildWrapper>>,
    /// `None` once closed.
    io: Option<AsyncRwTransport<RoleClient, LimitedReader<ChildStdout>, ChildStdin>>,
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &mut self.io {
            Some(io) => Either::Left(io.send(item)),
            None => Either::Right(std::future::ready(Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "the transport is closed",
            )))),
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        self.io.as_mut()?.receive().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Stdout is closed too: a server still writing (an answer over the size limit, which is
        // being thrown away) gets EPIPE and ends, instead of blocking on a pipe nobody reads.
        if let Some(mut io) = self.io.take() {
            io.close().await?;
        }
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        if exited(child).await {
            self.child = None;
            return Ok(());
        }
        #[cfg(unix)]
        if child
            .signal(nix::sys::signal::Signal::SIGTERM as i32)
            .is_ok()
            && exited(child).await
        {
            self.child = None;
            return Ok(());
        }
        let killed = Box::into_pin(child.kill()).await;
        self.child = None;
        killed
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // The whole group, now: a runtime shutting down (a dropped service task, a signalled CLI)
        // may never run the task below.
        #[cfg(unix)]
        if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        // Then waited for, so no zombie is left (as rmcp's own transport does).
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(err) = Box::into_pin(child.kill()).await {
                    warn!(error = %err, "cannot kill an mcp server");
                }
            });
        }
    }
}

async fn exited(child: &mut Box<dyn ChildWrapper>) -> bool {
    matches!(
        tokio::time::timeout(EXIT_WAIT, child.wait()).await,
        Ok(Ok(_))
    )
}

/// Spawns the server, its messages bounded by `limit`.
pub(crate) fn spawn(
    server: &str,
    stdio: &StdioServer,
    limit: Arc<Limit>,
) -> Result<(StdioTransport, ChildGuard), Error> {
    let mut command = tokio::process::Command::new(&stdio.command);
    command
        .args(&stdio.args)
        .envs(&stdio.env)
        .kill_on_drop(true);
    if let Some(cwd) = &stdio.cwd {
        command.current_dir(cwd);
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut wrapped = CommandWrap::from(command);
    wrapped.wrap(ProcessGroup::leader());
    let spawn_error = |source| Error::Spawn {
        server: server.to_owned(),
        command: stdio.command.clone(),
        source,
    };
    let mut child = wrapped.spawn().map_err(spawn_error)?;
    let pipes = (
        child.stdin().take(),
        child.stdout().take(),
        child.stderr().take(),
    );
    let (Some(stdin), Some(stdout), stderr) = pipes else {
        return Err(spawn_error(std::io::Error::other(
            "no stdin or stdout pipe",
        )));
    };
    // rmcp's own line limit is set past this one, which cuts every longer line first.
    let io = AsyncRwTransport::new_client(
        LimitedReader::new(stdout, Arc::clone(&limit), server),
        stdin,
    )
    .with_max_line_length(limit.bytes().saturating_add(1));
    let pid = child.id();
    let transport = StdioTransport {
        child: Some(child),
        io: Some(io),
    };
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
    debug!(server, pid, command = stdio.command, "mcp server started");
    Ok((transport, ChildGuard { pid, tail }))
}
