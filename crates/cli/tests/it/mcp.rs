//! `claij mcp list|call` against the real MCP servers of `cargo xtask mcp-servers`.

use serde_json::{Value, json};

use super::{Files, assert_one_line_error, claij};

/// The servers' install directory; `None` skips the test (under `CI=true` a missing install fails it).
pub(super) use claij_test_support::mcp::servers;

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

/// A Python MCP server (the SDK's low-level `Server`, from the venv) with the tools the CLI's
/// edge cases need:
/// - `weather` declares an `outputSchema` (`celsius`: a number) and returns `{"celsius": "warm"}`;
/// - `big` returns `{"bytes": N}` characters of text;
/// - `sleep` writes its process id and group to `{"marker": FILE}`, then sleeps for a minute;
/// - `forecast` returns `{"celsius": 21}` as text and as its (valid) structured result;
/// - `bare` returns the structured result `{"celsius": 22}` and no content.
const STUB_PY: &str = r#"
import os

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name="weather", description="The temperature (not really).",
                   input_schema={"type": "object"},
                   output_schema={"type": "object", "properties": {"celsius": {"type": "number"}},
                                  "required": ["celsius"]}),
        types.Tool(name="big", description="Text of the given size.",
                   input_schema={"type": "object", "properties": {"bytes": {"type": "integer"}}}),
        types.Tool(name="sleep", description="Says where it runs, then sleeps.",
                   input_schema={"type": "object", "properties": {"marker": {"type": "string"}}}),
        types.Tool(name="forecast", description="A structured result, also as text (as MCP asks).",
                   input_schema={"type": "object"},
                   output_schema={"type": "object", "properties": {"celsius": {"type": "number"}},
                                  "required": ["celsius"]}),
        types.Tool(name="bare", description="A structured result and no content at all.",
                   input_schema={"type": "object"}),
    ])


async def call_tool(ctx, params):
    if params.name == "weather":
        return types.CallToolResult(content=[types.TextContent(text="warm")],
                                    structured_content={"celsius": "warm"})
    if params.name == "forecast":
        return types.CallToolResult(content=[types.TextContent(text='{"celsius": 21}')],
                                    structured_content={"celsius": 21})
    if params.name == "bare":
        return types.CallToolResult(content=[], structured_content={"celsius": 22})
    if params.name == "big":
        return types.CallToolResult(content=[types.TextContent(text="x" * params.arguments["bytes"])])
    marker = params.arguments["marker"]
    with open(marker + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {os.getpgrp()}")
    os.rename(marker + ".tmp", marker)
    await anyio.sleep(60)
    return types.CallToolResult(content=[types.TextContent(text="woke")])


server = Server("claij-cli-stub", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"#;

/// The stub server (as `stub`) in a configuration written to `files`; returns the configuration's path.
fn stub_config(dir: &std::path::Path, files: &Files, extra: Value) -> String {
    let script = files.path("stub_server.py");
    std::fs::write(&script, STUB_PY).unwrap();
    let mut server = json!({"command": dir.join("venv/bin/python"), "args": [script]});
    if let (Value::Object(server), Value::Object(extra)) = (&mut server, extra) {
        server.extend(extra);
    }
    let config = files.path("stub.json");
    std::fs::write(&config, json!({"mcpServers": {"stub": server}}).to_string()).unwrap();
    config
}

#[test]
fn an_output_schema_failure_is_said_on_stderr_and_stdout_keeps_the_result() {
    let Some(dir) = servers("output schema") else {
        return;
    };
    let f = Files::new(&[]);
    let cfg = stub_config(&dir, &f, json!({}));
    let run = claij(&["mcp", "call", "stub.weather", "--config", &cfg], "");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "warm\n{\n  \"celsius\": \"warm\"\n}\n");
    assert_eq!(
        run.stderr,
        "invalid: the structured result of `stub.weather` breaks its outputSchema: /celsius: \
         expected number, got string [/properties/celsius/type]\n"
    );
    // With --json, stdout is the whole outcome (the failure is part of it); stderr says it too.
    let json_run = claij(
        &["mcp", "call", "stub.weather", "--json", "--config", &cfg],
        "",
    );
    assert_eq!(json_run.code, 1, "{}", json_run.stderr);
    let outcome: Value = serde_json::from_str(&json_run.stdout).unwrap();
    assert_eq!(outcome["structured"], json!({"celsius": "warm"}));
    assert_eq!(json_run.stderr.lines().count(), 1, "{}", json_run.stderr);
}

#[test]
fn call_prints_a_result_once() {
    let Some(dir) = servers("printed once") else {
        return;
    };
    let f = Files::new(&[]);
    let cfg = stub_config(&dir, &f, json!({}));
    // A structured result also given as text (MCP asks tools to) is printed once, as the text.
    let run = claij(&["mcp", "call", "stub.forecast", "--config", &cfg], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "{\"celsius\": 21}\n");
    // With no content, the structured result is what is printed.
    let run = claij(&["mcp", "call", "stub.bare", "--config", &cfg], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "{\n  \"celsius\": 22\n}\n");
    // --json keeps both.
    let run = claij(
        &["mcp", "call", "stub.forecast", "--json", "--config", &cfg],
        "",
    );
    let outcome: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(outcome["structured"], json!({"celsius": 21}));
    assert_eq!(outcome["content"][0]["text"], "{\"celsius\": 21}");
}

#[test]
fn a_16_mib_result_is_printed_and_a_smaller_limit_fails_at_once() {
    let Some(dir) = servers("16 MiB") else { return };
    let f = Files::new(&[]);
    let cfg = stub_config(&dir, &f, json!({"timeout": 3600}));
    let size = (16 << 20).to_string();
    let args = format!(r#"{{"bytes": {size}}}"#);
    let run = claij(
        &["mcp", "call", "stub.big", "--args", &args, "--config", &cfg],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.len(), (16 << 20) + 1);

    // The flag overrides the file; the server's timeout (an hour) is not what ends the call.
    let limited = claij(
        &[
            "mcp",
            "call",
            "stub.big",
            "--args",
            &args,
            "--max-message-bytes",
            "1048576",
            "--config",
            &cfg,
        ],
        "",
    );
    assert_one_line_error(
        &limited,
        2,
        "mcp server `stub`: the answer to `tools/call big` is ",
    );
    assert!(
        limited
            .stderr
            .contains("over the limit of 1048576 bytes (maxMessageBytes)"),
        "{}",
        limited.stderr
    );
    assert_eq!(limited.stdout, "");
    // The same from the configuration file.
    let cfg = stub_config(&dir, &f, json!({"maxMessageBytes": 1_048_576}));
    let configured = claij(
        &["mcp", "call", "stub.big", "--args", &args, "--config", &cfg],
        "",
    );
    assert_one_line_error(&configured, 2, "over the limit of 1048576 bytes");
}

#[test]
fn numeric_flags_and_values_out_of_range_are_one_line_usage_errors() {
    let f = Files::new(&[(
        "huge.json",
        r#"{"mcpServers": {"x": {"command": "x", "timeout": 1e308}}}"#,
    )]);
    let cfg = f.path("huge.json");
    for timeout in ["1e308", "-1", "NaN", "inf", "0", "86401"] {
        let flag = format!("--timeout={timeout}");
        let run = claij(&["mcp", "call", "x.tool", &flag, "--config", &cfg], "");
        assert_one_line_error(
            &run,
            2,
            &format!(
                "invalid value '{timeout}' for '--timeout <SECS>': expected seconds, above 0 and at most 86400 (a day)"
            ),
        );
    }
    let run = claij(
        &[
            "mcp",
            "call",
            "x.tool",
            "--max-message-bytes=10",
            "--config",
            &cfg,
        ],
        "",
    );
    assert_one_line_error(
        &run,
        2,
        "'--max-message-bytes <BYTES>': expected a whole number from 1024 to 1073741824",
    );
    for history in ["101", "-1", "ten"] {
        let flag = format!("--history={history}");
        let run = claij(&["mcp", "chat", &flag, "--config", &cfg], "");
        assert_one_line_error(
            &run,
            2,
            &format!(
                "invalid value '{history}' for '--history <N>': expected a whole number from 0 to 100"
            ),
        );
    }
    let run = claij(&["mcp", "list", "--config", &cfg], "");
    assert_one_line_error(
        &run,
        2,
        "/mcpServers/x/timeout: a timeout is a number of seconds, above 0 and at most 86400 (a day)",
    );
}

/// The processes of group `pgid` still running (zombies, which init reaps, aside).
fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
            let fields: Vec<&str> = stat[stat.rfind(')').unwrap_or(0) + 1..]
                .split_whitespace()
                .collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
        })
        .collect()
}

/// Starts `claij mcp call stub.sleep`, waits until the tool runs, sends `signal` to claij, and
/// checks it exits `code` saying why, with the server's process group gone.
fn signal_mid_call(dir: &std::path::Path, signal: &str, code: i32) {
    use std::time::{Duration, Instant};
    let f = Files::new(&[]);
    let cfg = stub_config(dir, &f, json!({}));
    let marker = f.path("running");
    let args = json!({"marker": marker}).to_string();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_claij"))
        .args([
            "mcp",
            "call",
            "stub.sleep",
            "--args",
            &args,
            "--config",
            &cfg,
        ])
        .env_remove("CLAIJ_CONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A bound against a hang, not a measure of speed.
    let deadline = Instant::now() + HANG_GUARD;
    while !std::path::Path::new(&marker).exists() {
        assert!(Instant::now() < deadline, "the tool never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let ids = std::fs::read_to_string(&marker).unwrap();
    let (server, pgid) = ids.split_once(' ').unwrap();
    let (server, pgid): (u32, u32) = (server.parse().unwrap(), pgid.parse().unwrap());
    assert_eq!(server, pgid, "the server leads its own process group");
    assert!(!group_members(pgid).is_empty());

    let sent = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{signal}: {stderr}");
    assert_eq!(stderr, format!("error: stopped by SIG{signal}\n"));
    assert!(out.stdout.is_empty());
    // Polls the process table (no event says a group is gone); the bound only catches a group left
    // behind.
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let left = group_members(pgid);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{signal}: the server's group is still there: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_and_sigint_stop_the_servers_before_claij_exits() {
    let Some(dir) = servers("signals") else {
        return;
    };
    signal_mid_call(&dir, "TERM", 143);
    signal_mid_call(&dir, "INT", 130);
}

/// `claij mcp chat`, a scripted model over the OpenAI wire: each line a request through the MCP FSM
/// over the real everything server; without a terminal the clients offer no elicitation, so the
/// server hides its elicitation tool and a call to it is refused by the call's schema (a retry).
#[tokio::test]
async fn chat_runs_the_mcp_fsm_a_request_a_line_and_declines_elicitation_without_a_terminal() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer};

    let Some(dir) = servers("chat") else { return };
    let server = MockServer::start().await;
    let call = |id: u32, name: &str, arguments: Value| {
        json!({"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": id,
            "method": "tools/call", "params": {"name": name, "arguments": arguments}}})
        .to_string()
    };
    let end = |text: &str| {
        json!({"id": ["llm", "end"], "result": {"content": [{"type": "text", "text": text}]}})
            .to_string()
    };
    let replies = [
        call(1, "everything.echo", json!({"message": "hello"})),
        end("the server said: Echo: hello"),
        call(2, "everything.trigger-elicitation-request", json!({})),
        end("no one could be asked"),
    ];
    for reply in &replies {
        Mock::given(method("POST"))
            .and(path(super::openrouter::CHAT))
            .respond_with(super::openrouter::reply(reply))
            .up_to_n_times(1)
            .expect(1)
            .mount(&server)
            .await;
    }
    let f = Files::new(&[
        ("mcp.json", &config(&dir)),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let settings = f.path("config.toml");
    let run = super::claij_env(
        &[
            "mcp",
            "chat",
            "--config",
            &f.path("mcp.json"),
            "--llm",
            "openrouter:test/model",
            "--mode",
            "prompted",
        ],
        "say hello through echo\n\nask me something\n",
        &[
            ("CLAIJ_CONFIG", Some(settings.as_str())),
            ("OPENROUTER_API_KEY", Some("sk-or-v1-mcp-chat")),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "the server said: Echo: hello\nno one could be asked\n"
    );
    assert!(
        run.stderr.contains("servicing -> llm: ") && run.stderr.contains("Echo: hello"),
        "{}",
        run.stderr
    );
    let requests = server.received_requests().await.unwrap();
    let body = |i: usize| String::from_utf8_lossy(&requests[i].body).into_owned();
    assert!(body(0).contains("everything.echo"), "{}", body(0));
    assert!(
        !body(0).contains("trigger-elicitation-request"),
        "no elicitation offered, no such tool listed: {}",
        body(0)
    );
    assert!(body(1).contains("Echo: hello"), "the model saw the result");
    // The second line's run sees the first request and its answer; the first saw no history.
    let history = json!([{"request": "say hello through echo",
        "answer": "the server said: Echo: hello"}])
    .to_string();
    let escaped = |s: &str| serde_json::to_string(s).unwrap();
    assert!(!body(0).contains("\\\"history\\\""), "{}", body(0));
    assert!(
        body(2).contains(escaped(&history).trim_matches('"')),
        "{}",
        body(2)
    );
    // The call's schema names only the tools there are: a call to the hidden one is refused
    // before it is sent, and the model is asked again.
    assert!(
        body(3).contains("failed schema validation") && body(3).contains("/message"),
        "{}",
        body(3)
    );
}

/// `claij mcp chat --max-repeated-calls`, as `fsm run`'s: a scripted model that calls the same tool
/// with the same arguments again and again (the real everything server's echo, the same result each
/// time). By default the first repeat is told to the model and the second ends the request, the line
/// naming the call and the flag; the chat goes on with the next line (which loops too), and exits 1.
/// `0` ends it at the first repeat; `off` lets it call until `--max-transitions`, nobody told.
#[tokio::test]
async fn chat_stops_a_request_that_repeats_its_tool_call_naming_the_flag() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer};

    let Some(dir) = servers("chat repeats") else {
        return;
    };
    let server = MockServer::start().await;
    let call = json!({"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": 1,
        "method": "tools/call", "params": {"name": "everything.echo", "arguments": {"message": "hello"}}}});
    Mock::given(method("POST"))
        .and(path(super::openrouter::CHAT))
        .respond_with(super::openrouter::reply(&call.to_string()))
        .mount(&server)
        .await;
    let f = Files::new(&[
        ("mcp.json", &config(&dir)),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let (mcp, settings) = (f.path("mcp.json"), f.path("config.toml"));
    let env = [
        ("CLAIJ_CONFIG", Some(settings.as_str())),
        ("OPENROUTER_API_KEY", Some("sk-or-v1-mcp-chat-loop")),
    ];
    let chat = |extra: &[&str], input: &str| {
        let mut args = vec![
            "mcp",
            "chat",
            "--config",
            &mcp,
            "--llm",
            "openrouter:test/model",
            "--mode",
            "prompted",
        ];
        args.extend(extra);
        super::claij_env(&args, input, &env)
    };
    let requests = || async { server.received_requests().await.unwrap() };
    let last_told = |request: &wiremock::Request| {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let messages = body["messages"].as_array().unwrap().clone();
        messages.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let stopped = |times: &str, flag: &str| {
        format!(
            "error: state `servicing` repeats itself: `everything.echo` with \
             {{\"message\":\"hello\"}} got the same result {times} since the last input \
             (--max-repeated-calls {flag})"
        )
    };

    let run = chat(&[], "say hello twice\nand again\n");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "", "no answer");
    let errors: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    let line = stopped("3 times", "1 allows 1 repeat");
    assert_eq!(errors, [line.as_str(), line.as_str()], "{}", run.stderr);
    assert!(
        run.stderr
            .contains("servicing -> llm (repeats an earlier call): "),
        "{}",
        run.stderr
    );
    let seen = requests().await;
    assert_eq!(seen.len(), 6, "three calls a line");
    assert!(
        !last_told(&seen[1]).contains("Note:"),
        "{}",
        last_told(&seen[1])
    );
    assert!(
        last_told(&seen[2]).contains(
            "Note: `servicing` was given this same request once before and gave this same result"
        ),
        "{}",
        last_told(&seen[2])
    );

    let run = chat(&["--max-repeated-calls", "0"], "say hello twice\n");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr.lines().last().unwrap(),
        stopped("2 times", "0 allows 0 repeats"),
        "{}",
        run.stderr
    );
    assert_eq!(requests().await.len(), 6 + 2);

    let run = chat(
        &["--max-repeated-calls", "off", "--max-transitions", "6"],
        "say hello twice\n",
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .lines()
            .last()
            .unwrap()
            .starts_with("error: stopped in state `llm` after 6 transitions without reaching an end (--max-transitions 6;"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("servicing -> llm (repeats 2 earlier calls): "),
        "{}",
        run.stderr
    );
    let seen = requests().await;
    assert!(
        seen[8..].iter().all(|r| !last_told(r).contains("Note:")),
        "the model was told"
    );

    let bad = chat(&["--max-repeated-calls", "x"], "");
    assert_one_line_error(
        &bad,
        2,
        "invalid value 'x' for '--max-repeated-calls <N>': expected a whole number from 0 to \
         1000000, or off",
    );
}

/// The bound on a wait for a server's or a session's event (a tool started, a process group gone, a
/// session ended): ten minutes, a hang guard a loaded machine never reaches, not a measure of speed.
const HANG_GUARD: std::time::Duration = std::time::Duration::from_secs(600);

/// Waits for `child` (the leader of its own process group, its stdout and stderr piped) and returns
/// its status and everything it printed; past [`HANG_GUARD`] the group is killed and the test fails
/// showing what was printed so far, instead of hanging.
fn wait_or_kill_group(mut child: std::process::Child) -> (std::process::ExitStatus, String) {
    use std::io::Read as _;
    use std::time::{Duration, Instant};
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        let printed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&printed);
        let reader = std::thread::spawn(move || {
            let Some(mut pipe) = pipe else { return };
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                sink.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        (printed, reader)
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let printed = || {
        let text = |b: &std::sync::Arc<std::sync::Mutex<Vec<u8>>>| {
            String::from_utf8_lossy(&b.lock().unwrap()).into_owned()
        };
        (text(&out.0), text(&err.0))
    };
    let deadline = Instant::now() + HANG_GUARD;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            let (stdout, stderr) = printed();
            panic!(
                "still running after {HANG_GUARD:?}: killed\nstdout: {stdout}\nstderr: {stderr}"
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    out.1.join().unwrap();
    err.1.join().unwrap();
    (status, printed().0)
}

/// `claij mcp chat` on a terminal (a pseudo-terminal from util-linux `script`): the server's question
/// is put to the person, whose JSON answer goes back to the server while the call waits.
#[tokio::test]
async fn chat_on_a_terminal_puts_the_server_s_question_to_the_person() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer};

    let Some(dir) = servers("chat on a terminal") else {
        return;
    };
    if !super::script_or_skip("chat on a terminal") {
        return;
    }
    let server = MockServer::start().await;
    let replies = [
        json!({"id": ["llm", "servicing"], "message": {"jsonrpc": "2.0", "id": 1,
            "method": "tools/call", "params": {"name": "everything.trigger-elicitation-request", "arguments": {}}}}),
        json!({"id": ["llm", "end"], "result": {"content": [{"type": "text", "text": "thanks, Ada"}]}}),
    ];
    for reply in &replies {
        Mock::given(method("POST"))
            .and(path(super::openrouter::CHAT))
            .respond_with(super::openrouter::reply(&reply.to_string()))
            .up_to_n_times(1)
            .expect(1)
            .mount(&server)
            .await;
    }
    let f = Files::new(&[
        ("mcp.json", &config(&dir)),
        ("config.toml", &super::openrouter::config(&server)),
    ]);
    let command = format!(
        "{} mcp chat --config {} --llm openrouter:test/model --mode prompted",
        env!("CARGO_BIN_EXE_claij"),
        f.path("mcp.json")
    );
    use std::os::unix::process::CommandExt as _;
    let mut child = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("CLAIJ_CONFIG", f.path("config.toml"))
        .env("OPENROUTER_API_KEY", "sk-or-v1-mcp-chat-tty")
        // Its own group: a hang guard stops `script`, claij and the server together.
        .process_group(0)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"ask me something\n{\"name\": \"Ada Lovelace\"}\n")
        .unwrap();
    let (status, screen) = wait_or_kill_group(child);
    assert!(status.success(), "{screen}");
    assert!(
        screen.contains("everything asks: Please provide inputs for the following fields:"),
        "{screen}"
    );
    assert!(screen.contains("thanks, Ada"), "{screen}");
    let requests = server.received_requests().await.unwrap();
    let after = String::from_utf8_lossy(&requests[1].body).into_owned();
    assert!(
        after.contains("User provided the requested information") && after.contains("Ada Lovelace"),
        "the server got the person's answer: {after}"
    );
}

/// Runs `claij` in `cwd` with `home` as its home and no configuration but what the test writes
/// there (`$HOME/.config/claij/config.toml`, `.mcp.json` in `cwd`).
pub(super) fn claij_in(cwd: &str, home: &str, args: &[&str], env: &[(&str, &str)]) -> super::Run {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_claij"));
    command
        .current_dir(cwd)
        .env_remove("CLAIJ_CONFIG")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .env("HOME", home)
        .args(args)
        .stdin(std::process::Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    super::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// The README's MCP setup, as a newcomer runs it: `claij mcp servers` prints a configuration for
/// the installed servers, saved as `.mcp.json` (or added to config.toml as TOML), which `mcp list`
/// and `mcp call` (and every other command) then read without `--config`.
#[test]
fn the_printed_configuration_is_what_list_and_call_read() {
    let Some(dir) = servers("printed configuration") else {
        return;
    };
    let dir = dir.to_string_lossy().into_owned();
    let work = Files::new(&[("notes.txt", "hello\n")]);
    let home = Files::new(&[]);
    let (work_dir, home_dir) = (work.path(""), home.path(""));
    let env = [("CLAIJ_MCP_SERVERS", dir.as_str())];
    let printed = claij_in(
        &work_dir,
        &home_dir,
        &["mcp", "servers", "--root", "."],
        &env,
    );
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    let config: Value = serde_json::from_str(&printed.stdout).unwrap();
    let names: Vec<&String> = config["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["fs", "time"]);
    // The servers are not on PATH: every command is absolute.
    for entry in config["mcpServers"].as_object().unwrap().values() {
        let command = entry["command"].as_str().unwrap();
        assert!(std::path::Path::new(command).is_absolute(), "{command}");
    }
    std::fs::write(work.0.join(".mcp.json"), &printed.stdout).unwrap();

    let listed = claij_in(&work_dir, &home_dir, &["mcp", "list"], &[]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let servers: Vec<&str> = listed
        .stdout
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(servers, ["fs", "time"]);
    assert!(
        listed.stdout.contains("  fs.read_text_file  "),
        "{}",
        listed.stdout
    );

    let read = [
        "mcp",
        "call",
        "fs.read_text_file",
        "--args",
        r#"{"path": "notes.txt"}"#,
    ];
    let call = claij_in(&work_dir, &home_dir, &read, &[]);
    assert_eq!(call.code, 0, "{}", call.stderr);
    assert_eq!(call.stdout, "hello\n");
    let shown = claij_in(&work_dir, &home_dir, &["config", "show"], &[]);
    let mcp_json = work.0.join(".mcp.json").canonicalize().unwrap();
    assert!(
        shown
            .stdout
            .contains(&format!("mcpServers (from {}):", mcp_json.display()))
            || shown.stdout.contains(&format!(
                "mcpServers (from {}):",
                work.0.join(".mcp.json").display()
            )),
        "{}",
        shown.stdout
    );

    // The TOML form, added to config.toml, serves every directory.
    let toml = claij_in(
        &work_dir,
        &home_dir,
        &[
            "mcp",
            "servers",
            "--servers",
            "fs",
            "--format",
            "toml",
            "--root",
            &work_dir,
        ],
        &env,
    );
    assert_eq!(toml.code, 0, "{}", toml.stderr);
    assert!(
        toml.stdout.starts_with("[mcpServers.fs]\n"),
        "{}",
        toml.stdout
    );
    std::fs::create_dir_all(home.0.join(".config/claij")).unwrap();
    std::fs::write(home.0.join(".config/claij/config.toml"), &toml.stdout).unwrap();
    let notes = work.0.join("notes.txt").canonicalize().unwrap();
    let args = json!({"path": notes}).to_string();
    let read = ["mcp", "call", "fs.read_text_file", "--args", &args];
    let call = claij_in(&home_dir, &home_dir, &read, &[]);
    assert_eq!(
        (call.code, call.stdout.as_str()),
        (0, "hello\n"),
        "{}",
        call.stderr
    );
    // And the JSON file by --config, from anywhere.
    let mcp_json = work.path(".mcp.json");
    let mut with_config = read.to_vec();
    with_config.extend(["--config", &mcp_json]);
    let call = claij_in(&home_dir, &home_dir, &with_config, &[]);
    assert_eq!(
        (call.code, call.stdout.as_str()),
        (0, "hello\n"),
        "{}",
        call.stderr
    );
}

#[test]
fn servers_without_the_cache_says_how_to_install_it() {
    let home = Files::new(&[]);
    let missing = home.path("nothing-here");
    let run = claij_in(
        &home.path(""),
        &home.path(""),
        &["mcp", "servers"],
        &[("CLAIJ_MCP_SERVERS", &missing)],
    );
    assert_one_line_error(
        &run,
        2,
        &format!(
            "error: no MCP servers installed in {missing}: run `cargo xtask mcp-servers` in the \
             claij repository (or name another cache with --dir)"
        ),
    );
    assert_eq!(run.stdout, "");
    // It reads no configuration, so `--config` is refused, as by every such command.
    let run = claij_in(
        &home.path(""),
        &home.path(""),
        &["mcp", "servers", "--config", "x.json"],
        &[],
    );
    assert_one_line_error(
        &run,
        2,
        "error: --config: `claij mcp servers` reads no configuration",
    );
    let run = claij_in(
        &home.path(""),
        &home.path(""),
        &["mcp", "servers", "--servers", "ftp"],
        &[],
    );
    assert_one_line_error(
        &run,
        2,
        "expected one of fs, time, memory, fetch, git, everything",
    );
}

#[test]
fn without_any_configuration_list_names_the_files_looked_for() {
    let work = Files::new(&[]);
    let home = Files::new(&[]);
    let run = claij_in(&work.path(""), &home.path(""), &["mcp", "list"], &[]);
    assert_one_line_error(
        &run,
        2,
        &format!(
            "error: no mcpServers: neither {} nor {} exists (`claij mcp servers > .mcp.json` \
             writes one for the servers `cargo xtask mcp-servers` installs)",
            work.0.join(".mcp.json").display(),
            home.0.join(".config/claij/config.toml").display()
        ),
    );
}
