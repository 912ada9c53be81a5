//! MCP logging at real servers: the level a client asks for reaches the server
//! (`logging/setLevel`), and servers' log messages reach `Hooks::on_log` with the server's name.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use claij_mcp::{ClientOptions, Hooks, LogLevel, LogMessage, StartMode, StdioServer};
use serde_json::json;
use tokio::sync::mpsc;

use crate::servers;

/// A hang guard on waiting for a log message, not a speed.
const GUARD: Duration = servers::HANG_GUARD;

/// `options` whose log callback sends every message to the returned receiver.
fn collecting(options: ClientOptions) -> (ClientOptions, mpsc::UnboundedReceiver<LogMessage>) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let hooks = Hooks::default().on_log(move |message| {
        let _ = sender.send(message.clone());
    });
    (options.with_hooks(hooks), receiver)
}

async fn next(messages: &mut mpsc::UnboundedReceiver<LogMessage>) -> LogMessage {
    tokio::time::timeout(GUARD, messages.recv())
        .await
        .expect("no log message within the hang guard")
        .expect("the log channel closed")
}

/// A server (the Python SDK's low-level `Server`, from the venv) written to `work`, that declares
/// `logging` and keeps the level it is set to; its tool `log` sends a message at every level at or
/// above that level (all of them when none was set), logger `stub`, and returns the level's name,
/// or `meta:LEVEL` for the level the call's `_meta` asked for (the 2026-07-28 revision, where the
/// SDK sends only those levels), or `none`.
fn logging_stub(dir: &Path, work: &Path) -> StdioServer {
    let script = work.join("logging_server.py");
    std::fs::write(&script, LOGGING_PY).unwrap();
    StdioServer::new(
        dir.join("venv/bin/python").display().to_string(),
        [script.display().to_string()],
    )
}

const LOGGING_PY: &str = r#"
import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
state = {"level": None}


async def set_level(ctx, params):
    state["level"] = params.level
    return types.EmptyResult()


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name="log", description="Logs at every level it may.",
                   input_schema={"type": "object", "properties": {}}),
    ])


def requested(params):
    meta = params.meta
    if meta is None:
        return None
    data = meta.model_dump(by_alias=True) if hasattr(meta, "model_dump") else dict(meta)
    return data.get("io.modelcontextprotocol/logLevel")


async def call_tool(ctx, params):
    floor = LEVELS.index(state["level"]) if state["level"] else 0
    for level in LEVELS[floor:]:
        await ctx.session.send_log_message(level, f"{level} from the stub", logger="stub",
                                           related_request_id=ctx.request_id)
    asked = requested(params)
    text = state["level"] or (f"meta:{asked}" if asked else "none")
    return types.CallToolResult(content=[types.TextContent(text=text)])


server = Server("claij-logging", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool,
                on_set_logging_level=set_level)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"#;

#[tokio::test]
async fn the_log_level_reaches_the_server_and_its_messages_the_callback() {
    let Some(dir) =
        servers::require("the_log_level_reaches_the_server_and_its_messages_the_callback")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let options = ClientOptions::default()
        .with_start(StartMode::Initialize)
        .with_log_level(LogLevel::Warning);
    let (options, mut messages) = collecting(options);
    let client = servers::connect_with("stub", logging_stub(&dir, work.path()), options).await;

    let outcome = client.call("log", json!({})).await.unwrap();
    assert_eq!(outcome.text(), "warning", "the level the server was set to");

    check_levels(&mut messages, LogLevel::Warning).await;

    // Set again at run time: the next call logs from there.
    client.set_log_level(LogLevel::Alert).await.unwrap();
    let outcome = client.call("log", json!({})).await.unwrap();
    assert_eq!(outcome.text(), "alert");
    client.close().await;
}

/// Messages at `floor` and above, each once, from the stub.
async fn check_levels(messages: &mut mpsc::UnboundedReceiver<LogMessage>, floor: LogLevel) {
    let expected: BTreeSet<LogLevel> = LogLevel::ALL
        .into_iter()
        .filter(|level| *level >= floor)
        .collect();
    let mut levels = BTreeSet::new();
    for _ in 0..expected.len() {
        let message = next(messages).await;
        assert_eq!(message.server, "stub");
        assert_eq!(message.logger.as_deref(), Some("stub"));
        assert_eq!(message.text(), format!("{} from the stub", message.level));
        levels.insert(message.level);
    }
    assert_eq!(levels, expected);
}

#[tokio::test]
async fn on_the_stateless_revision_the_level_goes_with_each_call() {
    let Some(dir) = servers::require("on_the_stateless_revision_the_level_goes_with_each_call")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let options = ClientOptions::default().with_log_level(LogLevel::Error);
    let (options, mut messages) = collecting(options);
    let client = servers::connect_with("stub", logging_stub(&dir, work.path()), options).await;
    assert_eq!(client.protocol_version(), "2026-07-28");

    let outcome = client.call("log", json!({})).await.unwrap();
    assert_eq!(outcome.text(), "meta:error");
    check_levels(&mut messages, LogLevel::Error).await;

    client.set_log_level(LogLevel::Critical).await.unwrap();
    let outcome = client.call("log", json!({})).await.unwrap();
    assert_eq!(outcome.text(), "meta:critical");
    check_levels(&mut messages, LogLevel::Critical).await;
    client.close().await;
}

#[tokio::test]
async fn without_a_level_the_server_keeps_its_own() {
    let Some(dir) = servers::require("without_a_level_the_server_keeps_its_own") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let options = ClientOptions::default().with_start(StartMode::Initialize);
    let client = servers::connect_with("stub", logging_stub(&dir, work.path()), options).await;
    let outcome = client.call("log", json!({})).await.unwrap();
    assert_eq!(outcome.text(), "none");
    client.close().await;
}

#[tokio::test]
async fn server_everything_simulated_logging_reaches_the_callback() {
    let Some(dir) = servers::require("server_everything_simulated_logging_reaches_the_callback")
    else {
        return;
    };
    let options = ClientOptions::default().with_log_level(LogLevel::Debug);
    let (options, mut messages) = collecting(options);
    let client = servers::connect_with("everything", servers::everything(&dir), options).await;

    // Turning simulated logging on sends one message at once (at a random level: debug lets all
    // of them through), then one every 5 s.
    let outcome = client
        .call("toggle-simulated-logging", json!({}))
        .await
        .unwrap();
    assert!(!outcome.is_error, "{outcome}");
    let message = next(&mut messages).await;
    assert_eq!(message.server, "everything");
    // "Warning-level message", "Alert level-message": the text names the level it was sent at.
    assert!(
        message
            .text()
            .to_lowercase()
            .starts_with(message.level.as_str()),
        "{message}"
    );
    assert!(message.to_string().starts_with("everything: "), "{message}");
    client.close().await;
}

#[tokio::test]
async fn a_server_without_logging_refuses_a_level() {
    let Some(dir) = servers::require("a_server_without_logging_refuses_a_level") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let options = ClientOptions::default().with_start(StartMode::Initialize);
    let client = servers::connect_with("stub", servers::stub(&dir, work.path()), options).await;
    let err = client.set_log_level(LogLevel::Info).await.unwrap_err();
    assert!(
        matches!(&err, claij_mcp::Error::Protocol { server, method, .. } if server == "stub" && method == "logging/setLevel"),
        "{err}"
    );
    client.close().await;
}
