//! A server that starts slower than rmcp waits for the discovery probe (10 s): the probe's answer
//! comes during the fallback `initialize`, and the client starts the server again with `initialize`
//! alone instead of failing with `conflict initialized response id` (seen with the Python fetch
//! server on a loaded machine).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::Path;

use claij_mcp::StdioServer;

use crate::servers;

/// The SDK's low-level Python server, which sleeps 11 s before reading its first message the first
/// time it starts (a marker file tells a second start to go at once).
fn slow_server(dir: &Path, work: &Path) -> StdioServer {
    let script = work.join("slow_server.py");
    let marker = work.join("started-once");
    std::fs::write(
        &script,
        SLOW_PY.replace("MARKER", &marker.display().to_string()),
    )
    .unwrap();
    StdioServer::new(
        dir.join("venv/bin/python").display().to_string(),
        [script.display().to_string()],
    )
}

const SLOW_PY: &str = r#"
import os
import time

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

if not os.path.exists("MARKER"):
    open("MARKER", "w").close()
    time.sleep(11)


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name="hello", description="Says hello.", input_schema={"type": "object"}),
    ])


server = Server("claij-slow", version="1.0.0", on_list_tools=list_tools)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"#;

#[tokio::test]
async fn a_server_slower_than_the_discovery_probe_is_started_again_with_initialize() {
    let Some(dir) = servers::require(
        "a_server_slower_than_the_discovery_probe_is_started_again_with_initialize",
    ) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let client = servers::connect("slow", slow_server(&dir, work.path())).await;
    let names: Vec<String> = client.tools().iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["hello"]);
    // The second start spoke the 2025-11-25 handshake.
    assert_eq!(client.protocol_version(), "2025-11-25");
    client.close().await;
}
