//! Where the tests find what `cargo xtask mcp-servers` installs: the MCP test servers
//! ([`servers`]) and the official MCP conformance suite ([`ConformanceSuite`]). A missing install
//! skips the test, saying so, except under CI ([`crate::is_ci`]), where it fails it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The servers' install directory (`$CLAIJ_MCP_SERVERS`, holding `servers.json`); `None` skips the
/// test `test`.
///
/// # Panics
///
/// Under CI, when the servers are missing.
pub fn servers(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("CLAIJ_MCP_SERVERS").map(PathBuf::from);
    match dir.filter(|d| d.join("servers.json").is_file()) {
        Some(dir) => Some(dir),
        None if crate::is_ci(|name| std::env::var_os(name)) => {
            panic!("{test}: the MCP test servers are missing; run `cargo xtask mcp-servers`")
        }
        None => {
            #[allow(clippy::print_stderr, reason = "a skipped test says so")]
            {
                eprintln!("{test}: skipped: no MCP test servers (CLAIJ_MCP_SERVERS)");
            }
            None
        }
    }
}

/// The installed conformance suite (`@modelcontextprotocol/conformance`): the Node that runs it and
/// its script.
#[derive(Debug, Clone)]
pub struct ConformanceSuite {
    /// The Node binary (`node` on `PATH`, or the one installed beside the suite).
    pub node: PathBuf,
    /// The suite's entry script.
    pub script: PathBuf,
}

impl ConformanceSuite {
    /// The suite under the MCP server cache; `None` skips the test `test` ([`servers`]).
    ///
    /// # Panics
    ///
    /// Under CI when the servers are missing; when the suite's `installed.json` is unreadable.
    pub fn find(test: &str) -> Option<Self> {
        Self::find_release(test, "conformance")
    }

    /// The release `cargo xtask mcp-servers` installs into the folder `folder` of the MCP server
    /// cache (`conformance` for 0.1.16, `conformance-0.2` for the newest 0.2.0 pre-release); `None`
    /// skips the test `test` ([`servers`]).
    ///
    /// # Panics
    ///
    /// Under CI when the servers are missing; when the release's `installed.json` is unreadable
    /// (an older cache without that release included).
    pub fn find_release(test: &str, folder: &str) -> Option<Self> {
        let dir = servers(test)?.join(folder);
        let stamp = std::fs::read_to_string(dir.join("installed.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok());
        let Some(node) = stamp.as_ref().and_then(|stamp| stamp.get("node")?.as_str()) else {
            panic!(
                "{test}: {} has no readable installed.json: run `cargo xtask mcp-servers`",
                dir.display()
            );
        };
        let node = if node == "node" {
            PathBuf::from("node")
        } else {
            dir.join(node)
        };
        let script = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
        Some(Self { node, script })
    }

    /// Runs the suite with `args`, from `cwd`: its exit code and what it printed (stdout, then
    /// stderr).
    ///
    /// # Panics
    ///
    /// Node cannot be started.
    #[allow(clippy::unwrap_used, reason = "a test harness fails the test loudly")]
    pub fn run(&self, args: &[&str], cwd: &Path) -> (Option<i32>, String) {
        let output = Command::new(&self.node)
            .arg(&self.script)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.code(), text)
    }
}
