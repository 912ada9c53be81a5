//! Cancellation seen at a real server: a call whose future is dropped sends
//! `notifications/cancelled`, and a server on the official Python SDK cancels the tool's handler.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::Path;

use claij_mcp::{ClientOptions, StdioServer};
use serde_json::json;

use crate::servers;

/// A server (the Python SDK's low-level `Server`, from the venv) written to `work`:
/// - `wait` reports progress, then waits until it is cancelled, and records that it was;
/// - `cancelled` answers once a call of `wait` has been cancelled (never otherwise: a client that
///   does not send `notifications/cancelled` sees this call time out).
fn cancelling(dir: &Path, work: &Path) -> StdioServer {
    let script = work.join("cancelling_server.py");
    std::fs::write(&script, CANCELLING_PY).unwrap();
    StdioServer::new(
        dir.join("venv/bin/python").display().to_string(),
        [script.display().to_string()],
    )
}

const CANCELLING_PY: &str = r#"
import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

OBJECT = {"type": "object", "properties": {}}
cancelled = anyio.Event()


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name="wait", description="Waits until cancelled.", input_schema=OBJECT),
        types.Tool(name="cancelled", description="Answers once wait was cancelled.", input_schema=OBJECT),
    ])


async def call_tool(ctx, params):
    if params.name == "wait":
        try:
            await ctx.session.report_progress(0, 1, "waiting")
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
    await cancelled.wait()
    return types.CallToolResult(content=[types.TextContent(text="wait was cancelled")])


server = Server("claij-cancelling", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"#;

#[tokio::test]
async fn a_dropped_call_is_cancelled_at_the_server() {
    let Some(dir) = servers::require("a_dropped_call_is_cancelled_at_the_server") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let (options, progressed) = servers::signalling_progress(ClientOptions::default());
    let client = servers::connect_with("cancelling", cancelling(&dir, work.path()), options).await;

    // The call is under way at the server (it reported progress); then its future is dropped.
    tokio::select! {
        outcome = client.call("wait", json!({})) => panic!("wait returned: {outcome:?}"),
        () = progressed.notified() => {}
    }

    // Answers only once the server has cancelled `wait`; without the notification it times out.
    let outcome = client.call("cancelled", json!({})).await.unwrap();
    assert!(!outcome.is_error, "{outcome}");
    assert_eq!(outcome.text(), "wait was cancelled");
    assert!(client.is_alive());
    client.close().await;
}
