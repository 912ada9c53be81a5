//! Finding the real MCP servers `cargo xtask mcp-servers` installs (`CLAIJ_MCP_SERVERS`).
//!
//! Without the variable or the files a test is skipped with a message, except under `CI=true`,
//! where a missing server is a failure.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use claij_mcp::{ClientOptions, Hooks, McpClient, StdioServer};
use tokio::sync::Notify;

/// How long a test waits for an event of a real server (a call's end, a log message, a process
/// gone) before it fails: five minutes, so a loaded machine never reaches it (a hang guard, not a
/// speed), and still shorter than the long operations (600 s) that only a kill, a timeout or a cap
/// may end.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(300);
/// How long [`wait_gone`] waits: only a process left behind reaches it (a hang guard, not a speed).
pub(crate) const GONE_GUARD: Duration = HANG_GUARD;

/// `options` with a progress hook that wakes the returned `Notify` (a permit is kept, so a wait that
/// starts after the notification still returns): a test waits on it to know a call is under way at
/// the server, instead of sleeping and hoping.
pub(crate) fn signalling_progress(options: ClientOptions) -> (ClientOptions, Arc<Notify>) {
    let progressed = Arc::new(Notify::new());
    let signal = Arc::clone(&progressed);
    let options = options.with_hooks(Hooks::default().on_progress(move |_| signal.notify_one()));
    (options, progressed)
}

/// The install directory, if the servers are there.
pub(crate) fn dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("CLAIJ_MCP_SERVERS")?);
    dir.join("servers.json").is_file().then_some(dir)
}

/// Whether missing servers fail the test (under CI) rather than skip it.
fn required() -> bool {
    claij_test_support::is_ci(|name| std::env::var_os(name))
}

/// The install directory, or `None` after printing why the test is skipped.
///
/// # Panics
///
/// Under `CI=true` when the servers are missing.
#[allow(clippy::print_stderr, reason = "a skipped test says so")]
pub(crate) fn require(test: &str) -> Option<PathBuf> {
    match dir() {
        Some(dir) => Some(dir),
        None if required() => panic!(
            "{test}: the MCP test servers are missing (CLAIJ_MCP_SERVERS unset or not installed); run `cargo xtask mcp-servers`"
        ),
        None => {
            eprintln!(
                "{test}: skipped: no MCP test servers (run `cargo xtask mcp-servers` and set CLAIJ_MCP_SERVERS)"
            );
            None
        }
    }
}

/// A Node server of `@modelcontextprotocol/<package>` run with `args`.
pub(crate) fn node(dir: &std::path::Path, package: &str, args: &[&str]) -> StdioServer {
    let script = dir
        .join("npm/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    StdioServer::new("node", all)
}

/// A Python server from the venv (`mcp-server-time`...) run with `args`.
pub(crate) fn python(dir: &std::path::Path, program: &str, args: &[&str]) -> StdioServer {
    StdioServer::new(
        dir.join("venv/bin").join(program).display().to_string(),
        args.iter().copied(),
    )
}

/// `server-everything` over stdio.
pub(crate) fn everything(dir: &std::path::Path) -> StdioServer {
    node(dir, "server-everything", &["stdio"])
}

/// `mcp-server-time` in UTC.
pub(crate) fn time(dir: &std::path::Path) -> StdioServer {
    python(dir, "mcp-server-time", &["--local-timezone", "UTC"])
}

/// Connects with default options.
pub(crate) async fn connect(name: &str, server: StdioServer) -> McpClient {
    McpClient::connect(name, server, ClientOptions::default())
        .await
        .unwrap_or_else(|err| panic!("connect {name}: {err}"))
}

/// `server-filesystem` allowed to work in `root`.
pub(crate) fn filesystem(dir: &Path, root: &Path) -> StdioServer {
    node(dir, "server-filesystem", &[&root.display().to_string()])
}

/// `server-memory` keeping its graph in `file`.
pub(crate) fn memory(dir: &Path, file: &Path) -> StdioServer {
    node(dir, "server-memory", &[]).env("MEMORY_FILE_PATH", file.display().to_string())
}

/// `mcp-server-git` confined to `repo`.
pub(crate) fn git(dir: &Path, repo: &Path) -> StdioServer {
    python(
        dir,
        "mcp-server-git",
        &["--repository", &repo.display().to_string()],
    )
}

/// `mcp-server-fetch`, allowed to fetch from 127.0.0.1 when `private` is set.
pub(crate) fn fetch(dir: &Path, private: bool) -> StdioServer {
    let args: &[&str] = if private {
        &["--allow-private-ips"]
    } else {
        &[]
    };
    python(dir, "mcp-server-fetch", args)
}

/// Connects with `options`.
pub(crate) async fn connect_with(
    name: &str,
    server: StdioServer,
    options: ClientOptions,
) -> McpClient {
    McpClient::connect(name, server, options)
        .await
        .unwrap_or_else(|err| panic!("connect {name}: {err}"))
}

/// A Python MCP server (the SDK's low-level `Server`, from the venv) written to `work`, with tools
/// real servers never misbehave enough to test:
/// - `weather` declares an `outputSchema` (`celsius`: a number) and returns `{"celsius": "warm"}`;
/// - `vanished` is listed, but a call gets JSON-RPC `-32602` "Unknown tool: vanished", as if it had
///   gone since the list was fetched;
/// - `ask` (2026-07-28 only) first answers an `InputRequiredResult` asking for an elicitation
///   (`name`), the roots (`roots`) and a completion (`poem`), then returns, as JSON text, the request
///   state and the responses it got back.
pub(crate) fn stub(dir: &Path, work: &Path) -> StdioServer {
    let script = work.join("stub_server.py");
    std::fs::write(&script, STUB_PY).unwrap();
    StdioServer::new(
        dir.join("venv/bin/python").display().to_string(),
        [script.display().to_string()],
    )
}

const STUB_PY: &str = r#"
import json

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

OBJECT = {"type": "object", "properties": {}}


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name="weather", description="The temperature, as a number (not really).",
                   input_schema=OBJECT,
                   output_schema={"type": "object", "properties": {"celsius": {"type": "number"}},
                                  "required": ["celsius"]}),
        types.Tool(name="vanished", description="Listed, but gone.", input_schema=OBJECT),
        types.Tool(name="ask", description="Asks the client for input.", input_schema=OBJECT),
    ])


def plain(value):
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


async def call_tool(ctx, params):
    if params.name == "weather":
        return types.CallToolResult(content=[types.TextContent(text="warm")],
                                    structured_content={"celsius": "warm"})
    if params.name == "ask":
        if params.request_state is None:
            return types.InputRequiredResult(
                request_state="round-1",
                input_requests={
                    "name": types.ElicitRequest(params=types.ElicitRequestFormParams(
                        message="Your name?",
                        requested_schema={"type": "object",
                                          "properties": {"name": {"type": "string"}},
                                          "required": ["name"]})),
                    "roots": types.ListRootsRequest(),
                    "poem": types.CreateMessageRequest(params=types.CreateMessageRequestParams(
                        messages=[types.SamplingMessage(role="user",
                                                        content=types.TextContent(text="A poem, please"))],
                        system_prompt="You are a poet.",
                        max_tokens=40)),
                })
        responses = {key: plain(value) for key, value in (params.input_responses or {}).items()}
        text = json.dumps({"state": params.request_state, "responses": responses}, sort_keys=True)
        return types.CallToolResult(content=[types.TextContent(text=text)])
    raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")


server = Server("claij-stub", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"#;

/// `git init` in `dir`, so `mcp-server-git --repository` accepts it.
pub(crate) fn git_init(dir: &Path) {
    let status = std::process::Command::new("git")
        .args(["init", "--quiet", "--initial-branch", "trunk"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git init {}: {status}", dir.display());
}

/// What `/proc/<pid>/stat` says of a process: its state (`R`, `S`, `Z`...), parent and group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Proc {
    pub pid: u32,
    pub state: char,
    pub ppid: u32,
    pub pgrp: u32,
}

/// Process `pid`, if it exists (zombies included).
pub(crate) fn proc(pid: u32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Proc {
        pid,
        state,
        ppid,
        pgrp,
    })
}

/// Whether `p` still counts as a process left behind: anything but a zombie whose parent is not
/// this test process (init reaps those, at its own pace; a zombie child of ours was never waited
/// for, and counts).
fn left_behind(p: &Proc) -> bool {
    p.state != 'Z' || p.ppid == std::process::id()
}

/// The processes of process group `pgid` that count as left behind.
pub(crate) fn group_members(pgid: u32) -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(proc)
        .filter(|p| p.pgrp == pgid && left_behind(p))
        .collect()
}

/// Whether process `pid` exists and counts as left behind.
pub(crate) fn exists(pid: u32) -> bool {
    proc(pid).is_some_and(|p| left_behind(&p))
}

/// Waits until process `pid` and its whole process group are gone (polling the process table, which
/// has no event to wait on); the processes still there after [`GONE_GUARD`] are the error.
pub(crate) async fn wait_gone(pid: u32) -> Result<(), Vec<Proc>> {
    let started = std::time::Instant::now();
    loop {
        let mut left = group_members(pid);
        if let Some(p) = proc(pid).filter(left_behind)
            && !left.contains(&p)
        {
            left.push(p);
        }
        if left.is_empty() {
            return Ok(());
        }
        if started.elapsed() > GONE_GUARD {
            return Err(left);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Sends SIGKILL to process `pid` (only processes the test started).
pub(crate) fn kill9(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -9 {pid}: {status}");
}
