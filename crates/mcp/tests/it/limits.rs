//! The size limit on one message from a server: a 16 MiB tool result (past rmcp's own silent 16 MiB
//! line limit) comes back under the default limit, and a smaller configured limit fails the call at
//! once with an error naming the limit and the server, never a timeout.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::Path;

use claij_mcp::{
    ClientOptions, DEFAULT_MAX_MESSAGE_BYTES, Error, McpConfig, ServerConfig, StdioServer,
};
use serde_json::json;

use crate::servers;

/// A Python MCP server (the SDK's low-level `Server`) whose tool `big` returns `{"bytes": N}`
/// characters of text, and `notify` writes a log notification of that size before a small result.
fn big_server(dir: &Path, work: &Path) -> StdioServer {
    let script = work.join("big_server.py");
    std::fs::write(&script, BIG_PY).unwrap();
    StdioServer::new(
        dir.join("venv/bin/python").display().to_string(),
        [script.display().to_string()],
    )
}

const BIG_PY: &str = r#"
import json
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

SIZE = {"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]}


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name="big", description="Text of the given size.", input_schema=SIZE),
        types.Tool(name="notify", description="A large log message, then a small result.",
                   input_schema=SIZE),
    ])


async def call_tool(ctx, params):
    size = params.arguments["bytes"]
    if params.name == "notify":
        # Written as it is on the wire, whatever the protocol revision lets a server send.
        line = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "data": "n" * size}})
        sys.stdout.buffer.write(line.encode() + b"\n")
        sys.stdout.buffer.flush()
        return types.CallToolResult(content=[types.TextContent(text="small")])
    return types.CallToolResult(content=[types.TextContent(text="x" * size)])


server = Server("claij-big", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"#;

const MIB: usize = 1 << 20;

#[tokio::test]
async fn a_16_mib_result_comes_back_under_the_default_limit() {
    let Some(dir) = servers::require("a_16_mib_result_comes_back_under_the_default_limit") else {
        return;
    };
    const { assert!(DEFAULT_MAX_MESSAGE_BYTES > 16 * MIB + 1024) };
    let work = tempfile::tempdir().unwrap();
    let client = servers::connect("big", big_server(&dir, work.path())).await;
    let outcome = client
        .call("big", json!({"bytes": 16 * MIB}))
        .await
        .unwrap();
    assert!(!outcome.is_error, "{:?}", outcome.failure);
    let text = outcome.content[0].as_text().unwrap();
    assert_eq!(text.len(), 16 * MIB);
    assert!(text.bytes().all(|b| b == b'x'));
    client.close().await;
}

#[tokio::test]
async fn a_result_over_a_configured_limit_fails_at_once_naming_the_limit() {
    let Some(dir) =
        servers::require("a_result_over_a_configured_limit_fails_at_once_naming_the_limit")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    // The limit from the configuration file's `maxMessageBytes`, under a timeout far longer than
    // the test: the failure is the size error, not a timeout.
    let text = json!({"mcpServers": {"big": {
        "command": dir.join("venv/bin/python"),
        "args": [work.path().join("big_server.py")],
        "maxMessageBytes": MIB,
        "timeout": 3600,
    }}})
    .to_string();
    let _ = big_server(&dir, work.path());
    let config = McpConfig::from_json(&text).unwrap();
    let server: &ServerConfig = &config.servers["big"];
    assert_eq!(server.max_message_bytes(), Some(MIB));
    let client = servers::connect_with("big", server_stdio(server), ClientOptions::default()).await;

    let call = client.call("big", json!({"bytes": 2 * MIB}));
    let result = tokio::time::timeout(servers::HANG_GUARD, call)
        .await
        .expect("the oversized answer waits for a timeout");
    match &result {
        Err(Error::TooLarge {
            server,
            method,
            size,
            limit,
        }) => {
            assert_eq!(server, "big");
            assert_eq!(method, "tools/call big");
            assert_eq!(*limit, MIB);
            assert!(
                *size > MIB as u64 && *size <= 2 * MIB as u64 + 1024,
                "{size}"
            );
        }
        other => panic!("not TooLarge: {other:?}"),
    }
    let message = result.unwrap_err().to_string();
    assert!(
        message.starts_with("mcp server `big`: the answer to `tools/call big` is ")
            && message.ends_with(&format!(
                "bytes or more, over the limit of {MIB} bytes (maxMessageBytes)"
            )),
        "{message}"
    );

    // The connection stays usable: the next answers, under the limit, come back.
    assert!(client.is_alive());
    let small = client.call("big", json!({"bytes": 1000})).await.unwrap();
    assert_eq!(small.text().len(), 1000);
    // An oversized notification is dropped; the call it came with still answers.
    let notified = client
        .call("notify", json!({"bytes": 2 * MIB}))
        .await
        .unwrap();
    assert_eq!(notified.text(), "small");
    client.close().await;
}

#[tokio::test]
async fn the_client_option_sets_the_limit_when_the_server_entry_does_not() {
    let Some(dir) =
        servers::require("the_client_option_sets_the_limit_when_the_server_entry_does_not")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let options = ClientOptions::default().with_max_message_bytes(64 * 1024);
    let client = servers::connect_with("big", big_server(&dir, work.path()), options).await;
    let result = client.call("big", json!({"bytes": 100_000})).await;
    assert!(
        matches!(result, Err(Error::TooLarge { limit: 65_536, .. })),
        "{result:?}"
    );
    let fits = client.call("big", json!({"bytes": 60_000})).await.unwrap();
    assert_eq!(fits.text().len(), 60_000);
    client.close().await;
}

/// The stdio entry of a parsed configuration.
fn server_stdio(server: &ServerConfig) -> StdioServer {
    match server {
        ServerConfig::Stdio(stdio) => stdio.clone(),
        other => panic!("not stdio: {other:?}"),
    }
}
