//! What goes wrong, against real servers: tool errors the model can correct, bad arguments, unknown
//! tools, structured output that breaks its schema, timeouts, and servers killed mid-call.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use claij_mcp::{
    CallFailure, CallOutcome, ClientOptions, Error, Hooks, McpClient, Restart, StdioServer,
};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::servers;

#[tokio::test]
async fn tool_errors_come_back_as_outcomes_the_model_can_correct() {
    let Some(dir) = servers::require("tool_errors_come_back_as_outcomes_the_model_can_correct")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    servers::git_init(work.path());
    let (time, fs, git) = tokio::join!(
        servers::connect("time", servers::time(&dir)),
        servers::connect("fs", servers::filesystem(&dir, work.path())),
        servers::connect("git", servers::git(&dir, work.path())),
    );

    let mars = time
        .call("get_current_time", json!({"timezone": "Mars/Olympus"}))
        .await
        .unwrap();
    assert!(mars.is_error);
    assert_eq!(mars.failure, Some(CallFailure::Tool));
    assert!(mars.text().contains("Mars/Olympus"), "{mars}");
    assert_eq!(
        mars.structured, None,
        "an error has no structured result to check"
    );

    let outside = fs
        .call("read_text_file", json!({"path": "/etc/hostname"}))
        .await
        .unwrap();
    assert!(outside.is_error);
    assert_eq!(outside.failure, Some(CallFailure::Tool));
    assert!(outside.text().contains("Access denied"), "{outside}");

    let elsewhere = git
        .call("git_status", json!({"repo_path": "/etc"}))
        .await
        .unwrap();
    assert!(elsewhere.is_error);
    assert_eq!(elsewhere.failure, Some(CallFailure::Tool));
    assert!(elsewhere.text().contains("outside"), "{elsewhere}");

    // The outcome is what the model sees.
    assert_eq!(mars.to_mcp()["isError"], true);
    assert!(mars.to_string().starts_with("error: "));
    tokio::join!(time.close(), fs.close(), git.close());
}

#[tokio::test]
async fn arguments_that_break_the_input_schema_are_not_sent() {
    let Some(dir) = servers::require("arguments_that_break_the_input_schema_are_not_sent") else {
        return;
    };
    let (everything, time) = tokio::join!(
        servers::connect("everything", servers::everything(&dir)),
        servers::connect("time", servers::time(&dir)),
    );
    // (client, tool, arguments, instance pointer, keyword)
    let cases: [(&McpClient, &str, Value, &str, &str); 6] = [
        (
            &everything,
            "echo",
            json!({"message": 5}),
            "/message",
            "type",
        ),
        (&everything, "echo", json!({}), "", "required"),
        (&everything, "echo", json!(["hi"]), "", "type"),
        (
            &everything,
            "get-sum",
            json!({"a": "one", "b": 2}),
            "/a",
            "type",
        ),
        (
            &time,
            "get_current_time",
            json!({"timezone": 5}),
            "/timezone",
            "type",
        ),
        (
            &time,
            "convert_time",
            json!({"source_timezone": "UTC", "time": "12:00"}),
            "",
            "required",
        ),
    ];
    for (client, tool, args, pointer, keyword) in cases {
        let outcome = client.call(tool, args.clone()).await.unwrap();
        let at = format!("{tool} {args}: {outcome}");
        assert!(outcome.is_error, "{at}");
        let Some(CallFailure::InvalidArguments { violations }) = &outcome.failure else {
            panic!("not InvalidArguments: {at}");
        };
        assert!(
            violations
                .iter()
                .any(|v| v.instance_pointer == pointer && v.keyword == keyword),
            "{at}: {violations:?}"
        );
        assert!(
            outcome.text().contains(&format!(
                "invalid arguments for `{tool}`; the call was not sent"
            )),
            "{at}"
        );
    }
    tokio::join!(everything.close(), time.close());
}

/// The unknown-tool message with the server's name and tool list taken out.
fn shape(outcome: &CallOutcome, server: &str) -> String {
    let text = outcome.text().replace(&format!("`{server}`"), "`<server>`");
    match text.split_once("its tools are: ") {
        Some((head, _)) => format!("{head}its tools are: <tools>"),
        None => text,
    }
}

#[tokio::test]
async fn an_unknown_tool_is_the_same_outcome_from_typescript_and_python() {
    let Some(dir) =
        servers::require("an_unknown_tool_is_the_same_outcome_from_typescript_and_python")
    else {
        return;
    };
    let (everything, time) = tokio::join!(
        servers::connect("everything", servers::everything(&dir)),
        servers::connect("time", servers::time(&dir)),
    );
    let ts = everything.call("no_such_tool", json!({})).await.unwrap();
    let py = time.call("no_such_tool", json!({})).await.unwrap();
    for (client, outcome) in [(&everything, &ts), (&time, &py)] {
        let tools: Vec<String> = client.tools().iter().map(|t| t.name.clone()).collect();
        assert!(outcome.is_error);
        assert_eq!(
            outcome.failure,
            Some(CallFailure::UnknownTool {
                available: tools.clone()
            })
        );
        assert!(outcome.text().contains(&tools.join(", ")), "{outcome}");
    }
    assert_eq!(shape(&ts, "everything"), shape(&py, "time"));
    assert_eq!(
        shape(&ts, "everything"),
        "unknown tool `no_such_tool` on server `<server>`; its tools are: <tools>"
    );
    tokio::join!(everything.close(), time.close());
}

/// A TypeScript server (the SDK's `McpServer`, from the installed packages) that lists a tool it
/// does not have, so a call reaches the SDK's own "not found" answer: a result flagged `isError`.
fn ts_stub(dir: &Path, work: &Path) -> StdioServer {
    let sdk = dir.join("npm/node_modules/@modelcontextprotocol/sdk/dist/esm");
    let script = work.join("stub_server.mjs");
    std::fs::write(&script, TS_STUB.replace("SDK", &sdk.display().to_string())).unwrap();
    StdioServer::new("node", [script.display().to_string()])
}

const TS_STUB: &str = r#"
import { McpServer } from "SDK/server/mcp.js";
import { StdioServerTransport } from "SDK/server/stdio.js";
import { ListToolsRequestSchema } from "SDK/types.js";

const server = new McpServer({ name: "claij-ts-stub", version: "1.0.0" });
server.registerTool("present", { description: "Here." }, async () => ({
  content: [{ type: "text", text: "here" }],
}));
server.server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [
    { name: "present", inputSchema: { type: "object" } },
    { name: "vanished", inputSchema: { type: "object" } },
  ],
}));
await server.connect(new StdioServerTransport());
"#;

#[tokio::test]
async fn a_tool_gone_since_listing_is_unknown_whichever_sdk_says_so() {
    let Some(dir) = servers::require("a_tool_gone_since_listing_is_unknown_whichever_sdk_says_so")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let (ts, py) = tokio::join!(
        servers::connect("ts", ts_stub(&dir, work.path())),
        servers::connect("py", servers::stub(&dir, work.path())),
    );
    assert!(ts.tool("vanished").is_some() && py.tool("vanished").is_some());
    let present = ts.call("present", json!({})).await.unwrap();
    assert_eq!(present.text(), "here");
    // TypeScript answers `isError` "MCP error -32602: Tool vanished not found"; Python a JSON-RPC
    // error -32602 "Unknown tool: vanished".
    let from_ts = ts.call("vanished", json!({})).await.unwrap();
    let from_py = py.call("vanished", json!({})).await.unwrap();
    for (client, outcome) in [(&ts, &from_ts), (&py, &from_py)] {
        assert!(outcome.is_error, "{outcome}");
        assert!(
            matches!(outcome.failure, Some(CallFailure::UnknownTool { .. })),
            "{}: {outcome:?}",
            client.name()
        );
        assert!(
            client.tools_stale(),
            "{}: the list is to be fetched again",
            client.name()
        );
    }
    assert_eq!(shape(&from_ts, "ts"), shape(&from_py, "py"));
    tokio::join!(ts.close(), py.close());
}

#[tokio::test]
async fn structured_output_that_breaks_the_output_schema_is_flagged() {
    let Some(dir) = servers::require("structured_output_that_breaks_the_output_schema_is_flagged")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let stub = servers::connect("stub", servers::stub(&dir, work.path())).await;
    let outcome = stub.call("weather", json!({})).await.unwrap();
    assert!(outcome.is_error, "{outcome}");
    let Some(CallFailure::InvalidOutput { violations }) = &outcome.failure else {
        panic!("not InvalidOutput: {outcome:?}");
    };
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(violations[0].instance_pointer, "/celsius");
    assert_eq!(violations[0].keyword, "type");
    // Kept, and explained after what the tool said.
    assert_eq!(outcome.structured, Some(json!({"celsius": "warm"})));
    assert_eq!(outcome.content[0].as_text(), Some("warm"));
    let explanation = outcome.content.last().unwrap().as_text().unwrap();
    assert!(
        explanation.starts_with("the structured result breaks the tool's outputSchema"),
        "{explanation}"
    );
    assert!(explanation.contains("at /celsius"), "{explanation}");
    stub.close().await;
}

/// A long operation of `duration` seconds with a progress notification every `duration / steps`.
fn long(duration: f64, steps: u32) -> Value {
    json!({"duration": duration, "steps": steps})
}

/// Long enough that only a hang reaches it: a guard, not a speed claim.
const HANG: Duration = servers::HANG_GUARD;

/// Runs `call` under [`HANG`], returning its result and how long it took.
async fn guarded<T>(call: impl Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let result = tokio::time::timeout(HANG, call)
        .await
        .expect("the call neither ended nor timed out");
    (result, started.elapsed())
}

/// Asserts `result` is a timeout of the long operation after `after`, and that it did not come
/// before (a lower bound on the clock the timeout reads, which a loaded machine can only lengthen).
#[track_caller]
fn assert_timeout(result: Result<CallOutcome, Error>, took: Duration, after: Duration) {
    match result {
        Err(Error::Timeout {
            server,
            method,
            after: reported,
        }) => {
            assert_eq!(server, "everything");
            assert_eq!(method, "tools/call trigger-long-running-operation");
            assert_eq!(reported, after);
        }
        other => panic!("not a timeout: {other:?}"),
    }
    assert!(took >= after, "returned before its timeout: {took:?}");
}

#[tokio::test]
async fn a_long_call_times_out_and_the_client_stays_usable() {
    let Some(dir) = servers::require("a_long_call_times_out_and_the_client_stays_usable") else {
        return;
    };
    let mut options = ClientOptions::default();
    options.reset_on_progress = false;
    let resetting_progress = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&resetting_progress);
    let counting = ClientOptions::default().with_hooks(Hooks::default().on_progress(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    }));
    let (strict, resetting) = tokio::join!(
        servers::connect_with("everything", servers::everything(&dir), options),
        servers::connect_with("everything", servers::everything(&dir), counting),
    );
    let second = Some(Duration::from_secs(1));

    // Progress every 0.2 s of an operation longer than the guard does not count when it does not
    // reset the timeout: only the timeout can end this call.
    let (result, took) = guarded(strict.call_with_timeout(
        "trigger-long-running-operation",
        long(600.0, 3000),
        second,
    ))
    .await;
    eprintln!("timeout without progress resets: {took:?}");
    assert_timeout(result, took, Duration::from_secs(1));
    assert_eq!(
        strict
            .call("echo", json!({"message": "still here"}))
            .await
            .unwrap()
            .text(),
        "Echo: still here"
    );

    // Progress resets it, but only if it comes within the timeout: here every 20 s, so the timeout
    // ends the call before any progress (a timeout that waited for progress would see some).
    let (result, took) = guarded(resetting.call_with_timeout(
        "trigger-long-running-operation",
        long(600.0, 30),
        second,
    ))
    .await;
    eprintln!("timeout with slow progress: {took:?}");
    assert_timeout(result, took, Duration::from_secs(1));
    assert_eq!(
        resetting_progress.load(Ordering::SeqCst),
        0,
        "progress seen"
    );
    assert!(resetting.is_alive());
    assert_eq!(
        resetting
            .call("echo", json!({"message": "again"}))
            .await
            .unwrap()
            .text(),
        "Echo: again"
    );
    tokio::join!(strict.close(), resetting.close());
}

#[tokio::test]
async fn progress_keeps_a_long_call_alive_up_to_the_total_cap() {
    let Some(dir) = servers::require("progress_keeps_a_long_call_alive_up_to_the_total_cap") else {
        return;
    };
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    // The timeout is many progress intervals long (0.3 s against 5 s), so a loaded machine that
    // delays a notification does not end the call; only a stall of seconds would.
    let options = ClientOptions::default()
        .with_timeout(Duration::from_secs(5))
        .with_hooks(Hooks::default().on_progress(move |p| {
            if p.server == "everything" && p.total == Some(21.0) {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        }));
    let mut capped = options.clone();
    capped.max_total = Some(Duration::from_secs(8));
    let (kept, capped) = tokio::join!(
        servers::connect_with("everything", servers::everything(&dir), options),
        servers::connect_with("everything", servers::everything(&dir), capped),
    );

    // A progress notification every 0.3 s keeps a call with a 5 s timeout going for 6.3 s: it
    // completes (the server's own words say how long it ran).
    let (outcome, took) = guarded(kept.call("trigger-long-running-operation", long(6.3, 21))).await;
    eprintln!("kept alive by progress: {took:?}");
    assert_eq!(
        outcome.unwrap().text(),
        "Long running operation completed. Duration: 6.3 seconds, Steps: 21."
    );
    assert!(
        seen.load(Ordering::SeqCst) >= 20,
        "progress seen: {}",
        seen.load(Ordering::SeqCst)
    );

    // ... but not past the total cap: progress every 0.3 s of an operation longer than the guard,
    // so only the cap can end the call.
    let (result, took) =
        guarded(capped.call("trigger-long-running-operation", long(600.0, 2000))).await;
    eprintln!("total cap: {took:?}");
    assert!(
        matches!(result, Err(Error::Timeout { after, .. }) if after == Duration::from_secs(8)),
        "{result:?}"
    );
    assert!(took >= Duration::from_secs(8), "before the cap: {took:?}");
    assert_eq!(
        capped
            .call("echo", json!({"message": "ok"}))
            .await
            .unwrap()
            .text(),
        "Echo: ok"
    );
    tokio::join!(kept.close(), capped.close());
}

/// Starts an operation longer than [`HANG`] on `client` (made with
/// [`servers::signalling_progress`]), kills the server once its first progress shows the call under
/// way, and returns the call's result. A client that missed the death would wait for its own
/// timeout (30 s by default): the kind of error says which happened.
async fn kill_mid_call(client: &McpClient, progressed: &Notify) -> Result<CallOutcome, Error> {
    let pid = client.pid().unwrap();
    let call = client.call("trigger-long-running-operation", long(600.0, 6000));
    let kill = async {
        progressed.notified().await;
        servers::kill9(pid);
    };
    tokio::time::timeout(HANG, async { tokio::join!(call, kill).0 })
        .await
        .expect("the call hangs after the server was killed")
}

#[tokio::test]
async fn a_server_killed_mid_call_is_dead_before_any_timeout() {
    let Some(dir) = servers::require("a_server_killed_mid_call_is_dead_before_any_timeout") else {
        return;
    };
    let (options, progressed) = servers::signalling_progress(ClientOptions::default());
    let client = servers::connect_with("everything", servers::everything(&dir), options).await;
    let pid = client.pid().unwrap();
    let result = kill_mid_call(&client, &progressed).await;
    assert!(
        matches!(&result, Err(Error::Dead { server, .. }) if server == "everything"),
        "{result:?}"
    );
    assert!(!client.is_alive());
    assert!(client.death().is_some());
    let next = client.call("echo", json!({"message": "hello?"})).await;
    assert!(matches!(next, Err(Error::Dead { .. })), "{next:?}");
    assert_eq!(client.restarts(), 0);
    assert!(servers::wait_gone(pid).await.is_ok());
    client.close().await;
}

#[tokio::test]
async fn a_killed_server_is_restarted_when_the_policy_allows() {
    let Some(dir) = servers::require("a_killed_server_is_restarted_when_the_policy_allows") else {
        return;
    };
    let options =
        ClientOptions::default().with_restart(Restart::up_to(1, Duration::from_millis(100)));
    let (options, progressed) = servers::signalling_progress(options);
    let client = servers::connect_with("everything", servers::everything(&dir), options).await;
    let first = client.pid().unwrap();
    let result = kill_mid_call(&client, &progressed).await;
    assert!(matches!(result, Err(Error::Dead { .. })), "{result:?}");
    assert!(!client.is_alive(), "dead until the next request");

    let started = Instant::now();
    let echo = client
        .call("echo", json!({"message": "back"}))
        .await
        .unwrap();
    eprintln!("restarted and answered in {:?}", started.elapsed());
    assert_eq!(echo.text(), "Echo: back");
    assert_eq!(client.restarts(), 1);
    assert!(client.is_alive());
    let second = client.pid().unwrap();
    assert_ne!(first, second);
    assert!(servers::wait_gone(first).await.is_ok());

    // The policy allowed one restart: the next death is final.
    servers::kill9(second);
    let next = tokio::time::timeout(HANG, async {
        loop {
            match client.call("echo", json!({"message": "again"})).await {
                Ok(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                Err(err) => break err,
            }
        }
    })
    .await
    .unwrap();
    assert!(matches!(next, Error::Dead { .. }), "{next:?}");
    assert_eq!(client.restarts(), 1);
    client.close().await;
    assert!(servers::wait_gone(second).await.is_ok());
}

const GROWING_STUB: &str = r#"
import { McpServer } from "SDK/server/mcp.js";
import { StdioServerTransport } from "SDK/server/stdio.js";

const server = new McpServer({ name: "claij-growing-stub", version: "1.0.0" });
server.registerTool("grow", { description: "Adds the tool `grown`." }, async () => {
  // Registering a tool on a connected server sends notifications/tools/list_changed.
  server.registerTool("grown", { description: "New." }, async () => ({
    content: [{ type: "text", text: "grown here" }],
  }));
  return { content: [{ type: "text", text: "grew" }] };
});
await server.connect(new StdioServerTransport());
"#;

#[tokio::test]
async fn a_list_changed_notification_refreshes_the_cached_tools() {
    let Some(dir) = servers::require("a_list_changed_notification_refreshes_the_cached_tools")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let sdk = dir.join("npm/node_modules/@modelcontextprotocol/sdk/dist/esm");
    let script = work.path().join("growing_server.mjs");
    std::fs::write(
        &script,
        GROWING_STUB.replace("SDK", &sdk.display().to_string()),
    )
    .unwrap();
    let client = servers::connect(
        "grow",
        StdioServer::new("node", [script.display().to_string()]),
    )
    .await;
    assert!(client.tool("grown").is_none());
    assert!(!client.tools_stale());
    assert_eq!(client.call("grow", json!({})).await.unwrap().text(), "grew");
    // The notification arrives on its own; the cached list is marked stale, not refetched yet.
    let deadline = Instant::now() + HANG;
    while !client.tools_stale() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        client.tools_stale(),
        "tools/list_changed marks the list stale"
    );
    assert!(client.tool("grown").is_none(), "not fetched until needed");
    // The next call fetches the list again first, so the new tool is known.
    let grown = client.call("grown", json!({})).await.unwrap();
    assert_eq!(grown.text(), "grown here", "{grown:?}");
    assert!(!client.tools_stale());
    assert!(client.tool("grown").is_some());
    client.close().await;
}
