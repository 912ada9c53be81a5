//! Finding the real MCP servers `cargo xtask mcp-servers` installs (`CLAIJ_MCP_SERVERS`).
//!
//! Without the variable or the files a test is skipped with a message, except under `CI=true`,
//! where a missing server is a failure.

use std::path::PathBuf;

use claij_mcp::{ClientOptions, McpClient, StdioServer};

/// The install directory, if the servers are there.
pub fn dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("CLAIJ_MCP_SERVERS")?);
    dir.join("servers.json").is_file().then_some(dir)
}

/// Whether missing servers fail the test (under CI) rather than skip it.
fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// The install directory, or `None` after printing why the test is skipped.
///
/// # Panics
///
/// Under `CI=true` when the servers are missing.
pub fn require(test: &str) -> Option<PathBuf> {
    match dir() {
        Some(dir) => Some(dir),
        None if required() => panic!(
            "{test}: the MCP test servers are missing (CLAIJ_MCP_SERVERS unset or not installed); run `cargo xtask mcp-servers`"
        ),
        None => {
            #[allow(clippy::print_stderr, reason = "a skipped test says so")]
            eprintln!(
                "{test}: skipped: no MCP test servers (run `cargo xtask mcp-servers` and set CLAIJ_MCP_SERVERS)"
            );
            None
        }
    }
}

/// A Node server of `@modelcontextprotocol/<package>` run with `args`.
pub fn node(dir: &std::path::Path, package: &str, args: &[&str]) -> StdioServer {
    let script = dir
        .join("npm/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    StdioServer::new("node", all)
}

/// A Python server from the venv (`mcp-server-time`...) run with `args`.
pub fn python(dir: &std::path::Path, program: &str, args: &[&str]) -> StdioServer {
    StdioServer::new(
        dir.join("venv/bin").join(program).display().to_string(),
        args.iter().copied(),
    )
}

/// `server-everything` over stdio.
pub fn everything(dir: &std::path::Path) -> StdioServer {
    node(dir, "server-everything", &["stdio"])
}

/// `mcp-server-time` in UTC.
pub fn time(dir: &std::path::Path) -> StdioServer {
    python(dir, "mcp-server-time", &["--local-timezone", "UTC"])
}

/// Connects with default options.
pub async fn connect(name: &str, server: StdioServer) -> McpClient {
    McpClient::connect(name, server, ClientOptions::default())
        .await
        .unwrap_or_else(|err| panic!("connect {name}: {err}"))
}
