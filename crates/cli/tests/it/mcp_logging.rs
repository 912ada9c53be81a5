//! `--mcp-log-level` of `claij mcp list|call`: the level goes to the servers, their log messages to
//! stderr as log lines (target `claij_mcp::server_log`) with the server's name and level.

use super::mcp::{config, servers};
use super::{Files, assert_one_line_error, claij};

#[test]
fn a_server_log_message_is_shown_on_stderr_with_the_server_name() {
    let Some(dir) = servers("mcp log level") else {
        return;
    };
    let f = Files::new(&[("mcp.json", &config(&dir))]);
    let cfg = f.path("mcp.json");
    // The everything server sends a message at a random level as soon as its simulated logging
    // starts, before the call's result; at `debug` every level passes.
    let tool = "everything.toggle-simulated-logging";
    let levels = [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ];
    let logged = |stderr: &str| {
        stderr.lines().any(|line| {
            line.contains(" claij_mcp::server_log: ")
                && line.contains(" server=everything ")
                && line
                    .split_once(" level=")
                    .and_then(|(_, rest)| rest.split(' ').next())
                    .is_some_and(|level| levels.contains(&level))
        })
    };
    // rmcp handles each notification in a task of its own, so the message can lose the race with
    // the call's result and the process's exit on a loaded machine: three runs, any one showing it
    // (logging that does not work fails all three).
    let mut stderr = Vec::new();
    for _ in 0..3 {
        let args = [
            "mcp",
            "call",
            tool,
            "--config",
            &cfg,
            "--mcp-log-level",
            "debug",
        ];
        let run = claij(&args, "");
        assert_eq!(run.code, 0, "{}", run.stderr);
        if logged(&run.stderr) {
            break;
        }
        stderr.push(run.stderr);
    }
    assert!(
        stderr.len() < 3,
        "no log line on stderr in 3 runs: {stderr:#?}"
    );
    // Without the flag, a server's own warnings and errors still show (as every warning does, at
    // the default level), nothing below them.
    let run = claij(&["mcp", "call", tool, "--config", &cfg], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    for line in run.stderr.lines() {
        if line.contains("claij_mcp::server_log") {
            let level = line.split_whitespace().next().unwrap_or("");
            assert!(matches!(level, "WARN" | "ERROR"), "{}", run.stderr);
        }
    }
}

#[test]
fn an_unknown_level_is_a_usage_error_listing_the_levels() {
    let run = claij(&["mcp", "list", "--mcp-log-level", "loud"], "");
    assert_one_line_error(
        &run,
        2,
        "expected one of debug, info, notice, warning, error, critical, alert, emergency",
    );
}
