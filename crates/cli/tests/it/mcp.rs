//! `claij mcp list|call` against the real MCP servers of `cargo xtask mcp-servers`.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::{Files, assert_one_line_error, claij};

/// The servers' install directory; `None` skips the test (under `CI=true` a missing install fails it).
pub(super) fn servers(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("CLAIJ_MCP_SERVERS").map(PathBuf::from);
    match dir.filter(|d| d.join("servers.json").is_file()) {
        Some(dir) => Some(dir),
        None if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") => {
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

/// A configuration with server-everything and mcp-server-time, and a project allowing only echo.
pub(super) fn config(dir: &std::path::Path) -> String {
    let everything =
        dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    json!({
        "mcpServers": {
            "everything": {"command": "node", "args": [everything, "stdio"], "env": {"SECRET_TOKEN": "hunter2"}},
            "time": {"command": dir.join("venv/bin/mcp-server-time"), "args": ["--local-timezone", "UTC"]},
            "off": {"command": "does-not-exist", "disabled": true}
        },
        "projects": {"echo-only": {"services": ["everything"], "tools": ["everything.echo"], "hat": "Only echo."}}
    })
    .to_string()
}

#[test]
fn list_shows_each_server_with_its_protocol_and_tools() {
    let Some(dir) = servers("list") else { return };
    let f = Files::new(&[("mcp.json", &config(&dir))]);
    let run = claij(&["mcp", "list", "--config", &f.path("mcp.json")], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("everything: mcp-servers/everything"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("(protocol 2025-11-25)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("time: mcp-time 2026.10.19 (protocol 2026-07-28), 2 tools"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("  everything.echo  "), "{}", run.stdout);
    assert!(
        run.stdout.contains("  time.get_current_time  "),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.lines().any(|l| l.starts_with("off:")),
        "a disabled server is left out: {}",
        run.stdout
    );
    assert!(!format!("{}{}", run.stdout, run.stderr).contains("hunter2"));

    let json_run = claij(
        &[
            "mcp",
            "list",
            "--json",
            "--config",
            &f.path("mcp.json"),
            "--project",
            "echo-only",
        ],
        "",
    );
    assert_eq!(json_run.code, 0, "{}", json_run.stderr);
    let listed: Value = serde_json::from_str(&json_run.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["server"], "everything");
    let tools: Vec<&str> = listed[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["echo"]);
    assert_eq!(
        listed[0]["tools"][0]["input_schema"]["required"],
        json!(["message"])
    );
}

#[test]
fn call_prints_the_result_and_exits_by_outcome() {
    let Some(dir) = servers("call") else { return };
    let f = Files::new(&[("mcp.json", &config(&dir))]);
    let cfg = f.path("mcp.json");
    let ok = claij(
        &[
            "mcp",
            "call",
            "everything.echo",
            "--args",
            r#"{"message": "hi there"}"#,
            "--config",
            &cfg,
        ],
        "",
    );
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    assert_eq!(ok.stdout.trim(), "Echo: hi there");

    let structured = claij(
        &[
            "mcp",
            "call",
            "time.get_current_time",
            "--args",
            r#"{"timezone": "UTC"}"#,
            "--json",
            "--config",
            &cfg,
        ],
        "",
    );
    assert_eq!(structured.code, 0, "{}", structured.stderr);
    let outcome: Value = serde_json::from_str(&structured.stdout).unwrap();
    assert_eq!(outcome["is_error"], false);
    assert_eq!(outcome["structured"]["timezone"], "UTC");

    // Wrong argument types: caught before sending, exit 1, the violation located.
    let bad = claij(
        &[
            "mcp",
            "call",
            "time.get_current_time",
            "--args",
            r#"{"timezone": 5}"#,
            "--config",
            &cfg,
        ],
        "",
    );
    assert_eq!(bad.code, 1, "{}", bad.stderr);
    assert!(
        bad.stdout
            .contains("invalid arguments for `get_current_time`"),
        "{}",
        bad.stdout
    );
    assert!(bad.stdout.contains("/timezone"), "{}", bad.stdout);

    // The tool's own error (a bad timezone) and an unknown tool: exit 1, said on stdout.
    let tool_error = claij(
        &[
            "mcp",
            "call",
            "time.get_current_time",
            "--args",
            r#"{"timezone": "Mars/Olympus"}"#,
            "--config",
            &cfg,
        ],
        "",
    );
    assert_eq!(tool_error.code, 1, "{}", tool_error.stderr);
    let unknown = claij(
        &["mcp", "call", "everything.no_such_tool", "--config", &cfg],
        "",
    );
    assert_eq!(unknown.code, 1, "{}", unknown.stderr);
    assert!(
        unknown
            .stdout
            .contains("unknown tool `no_such_tool` on server `everything`"),
        "{}",
        unknown.stdout
    );

    // Outside the project: refused, not sent.
    let refused = claij(
        &[
            "mcp",
            "call",
            "everything.get-sum",
            "--args",
            r#"{"a": 1, "b": 2}"#,
            "--project",
            "echo-only",
            "--config",
            &cfg,
        ],
        "",
    );
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused
            .stdout
            .contains("not available in project `echo-only`"),
        "{}",
        refused.stdout
    );
}

#[test]
fn configuration_and_usage_errors_are_one_line_exit_2() {
    let f = Files::new(&[
        ("bad.json", r#"{"mcpServers": {"x": {"args": []}}}"#),
        (
            "ok.json",
            r#"{"mcpServers": {"gone": {"command": "/nonexistent/mcp-server"}}}"#,
        ),
    ]);
    let missing = claij(&["mcp", "list", "--config", &f.path("nope.json")], "");
    assert_one_line_error(&missing, 2, "nope.json");
    let invalid = claij(&["mcp", "list", "--config", &f.path("bad.json")], "");
    assert_one_line_error(&invalid, 2, "/mcpServers/x: neither `command` nor `url`");
    let spawn = claij(
        &["mcp", "call", "gone.tool", "--config", &f.path("ok.json")],
        "",
    );
    assert_one_line_error(
        &spawn,
        2,
        "mcp server `gone`: cannot start `/nonexistent/mcp-server`",
    );
    let unknown = claij(
        &["mcp", "call", "other.tool", "--config", &f.path("ok.json")],
        "",
    );
    assert_one_line_error(&unknown, 2, "no mcp server `other`");
    let unqualified = claij(&["mcp", "call", "tool", "--config", &f.path("ok.json")], "");
    assert_one_line_error(&unqualified, 2, "`tool` is not `server.tool`");
    let not_object = claij(
        &[
            "mcp",
            "call",
            "gone.tool",
            "--args",
            "[1]",
            "--config",
            &f.path("ok.json"),
        ],
        "",
    );
    assert_one_line_error(&not_object, 2, "--args must be a JSON object");
}
