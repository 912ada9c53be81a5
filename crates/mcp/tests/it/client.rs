//! The client against real servers: the protocol start, tool discovery, plain and structured calls,
//! concurrent calls, and no process left behind.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::path::Path;

use claij_mcp::{ClientOptions, McpClient, StartMode, StdioServer};
use futures_util::future::join_all;
use serde_json::{Value, json};

use crate::servers;

/// One of the six real servers and what it should report.
struct Expected {
    name: &'static str,
    server: StdioServer,
    implementation: &'static str,
    /// The protocol version under the default start mode (`PreferStateless`).
    version: &'static str,
    /// Tools it must list (all of them, except `server-everything`'s conditional ones).
    tools: &'static [&'static str],
}

/// The six servers; `work` becomes a git repository, the filesystem root and the memory file's home.
fn six(dir: &Path, work: &Path) -> Vec<Expected> {
    servers::git_init(work);
    vec![
        Expected {
            name: "everything",
            server: servers::everything(dir),
            implementation: "mcp-servers/everything",
            version: "2025-11-25",
            tools: &[
                "echo",
                "get-annotated-message",
                "get-env",
                "get-resource-links",
                "get-resource-reference",
                "get-structured-content",
                "get-sum",
                "get-tiny-image",
                "gzip-file-as-resource",
                "toggle-simulated-logging",
                "toggle-subscriber-updates",
                "trigger-long-running-operation",
            ],
        },
        Expected {
            name: "filesystem",
            server: servers::filesystem(dir, work),
            implementation: "secure-filesystem-server",
            version: "2025-11-25",
            tools: &[
                "read_file",
                "read_text_file",
                "read_media_file",
                "read_multiple_files",
                "write_file",
                "edit_file",
                "create_directory",
                "list_directory",
                "list_directory_with_sizes",
                "directory_tree",
                "move_file",
                "search_files",
                "get_file_info",
                "list_allowed_directories",
            ],
        },
        Expected {
            name: "memory",
            server: servers::memory(dir, &work.join("memory.jsonl")),
            implementation: "memory-server",
            version: "2025-11-25",
            tools: &[
                "create_entities",
                "create_relations",
                "add_observations",
                "delete_entities",
                "delete_observations",
                "delete_relations",
                "read_graph",
                "search_nodes",
                "open_nodes",
            ],
        },
        Expected {
            name: "time",
            server: servers::time(dir),
            implementation: "mcp-time",
            version: "2026-07-28",
            tools: &["get_current_time", "convert_time"],
        },
        Expected {
            name: "fetch",
            server: servers::fetch(dir, false),
            implementation: "mcp-fetch",
            version: "2026-07-28",
            tools: &["fetch"],
        },
        Expected {
            name: "git",
            server: servers::git(dir, work),
            implementation: "mcp-git",
            version: "2026-07-28",
            tools: &[
                "git_status",
                "git_diff_unstaged",
                "git_diff_staged",
                "git_diff",
                "git_commit",
                "git_add",
                "git_reset",
                "git_log",
                "git_create_branch",
                "git_checkout",
                "git_show",
                "git_branch",
            ],
        },
    ]
}

/// Connects to each of `all` with `options`, at once.
async fn connect_all(all: &[Expected], options: &ClientOptions) -> Vec<McpClient> {
    join_all(
        all.iter()
            .map(|e| servers::connect_with(e.name, e.server.clone(), options.clone())),
    )
    .await
}

#[tokio::test]
async fn every_server_reports_its_protocol_version_and_identity() {
    let Some(dir) = servers::require("every_server_reports_its_protocol_version_and_identity")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let all = six(&dir, work.path());
    let clients = connect_all(&all, &ClientOptions::default()).await;
    for (client, expected) in clients.iter().zip(&all) {
        let (name, info) = (expected.name, client.server_info());
        assert_eq!(info.name, name);
        assert_eq!(info.protocol_version, expected.version, "{name}");
        assert_eq!(client.protocol_version(), expected.version, "{name}");
        assert_eq!(
            info.implementation.as_deref(),
            Some(expected.implementation),
            "{name}"
        );
        assert!(
            info.version.as_deref().is_some_and(|v| !v.is_empty()),
            "{name}: {info:?}"
        );
        assert!(client.is_alive(), "{name}");
        assert!(client.pid().is_some(), "{name}");
    }
    let everything = &clients[0].server_info();
    assert!(
        everything
            .instructions
            .as_deref()
            .is_some_and(|i| i.contains("Everything Server")),
        "{everything:?}"
    );
    join_all(clients.iter().map(McpClient::close)).await;
}

#[tokio::test]
async fn the_initialize_start_negotiates_2025_11_25_everywhere() {
    let Some(dir) = servers::require("the_initialize_start_negotiates_2025_11_25_everywhere")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let all = six(&dir, work.path());
    let options = ClientOptions::default().with_start(StartMode::Initialize);
    let clients = connect_all(&all, &options).await;
    for (client, expected) in clients.iter().zip(&all) {
        let (name, info) = (expected.name, client.server_info());
        assert_eq!(info.protocol_version, "2025-11-25", "{name}");
        assert_eq!(
            info.implementation.as_deref(),
            Some(expected.implementation),
            "{name}"
        );
    }
    // The handshake era works as well as the stateless one.
    let now = clients[3]
        .call("get_current_time", json!({"timezone": "UTC"}))
        .await
        .unwrap();
    assert!(!now.is_error, "{now}");
    join_all(clients.iter().map(McpClient::close)).await;
}

#[tokio::test]
async fn tools_are_discovered_with_their_schemas_compiled() {
    let Some(dir) = servers::require("tools_are_discovered_with_their_schemas_compiled") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let all = six(&dir, work.path());
    let clients = connect_all(&all, &ClientOptions::default()).await;
    for (client, expected) in clients.iter().zip(&all) {
        let name = expected.name;
        let tools = client.tools();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        for tool in expected.tools {
            assert!(names.contains(tool), "{name} lacks {tool}: {names:?}");
        }
        if name != "everything" {
            assert_eq!(names.len(), expected.tools.len(), "{name}: {names:?}");
        }
        for tool in tools.iter() {
            let at = tool.qualified();
            assert_eq!(tool.server, name);
            assert_eq!(at, format!("{name}.{}", tool.name));
            assert!(
                claij_validation::Validator::new(&tool.input_schema).is_ok(),
                "{at}: input schema"
            );
            // The client enforces the schema it compiled: a non-object never passes.
            assert!(
                tool.check_args(&json!("not an object")).is_err(),
                "{at}: input schema not enforced"
            );
            if let Some(output) = &tool.output_schema {
                assert!(
                    claij_validation::Validator::new(output).is_ok(),
                    "{at}: output schema"
                );
                assert!(
                    tool.check_output(&json!(42)).is_err(),
                    "{at}: output schema not enforced"
                );
            }
        }
    }
    // Which tools declare structured output is the servers' business, but these are documented.
    assert!(
        clients[0]
            .tool("get-structured-content")
            .unwrap()
            .output_schema
            .is_some()
    );
    assert!(clients[0].tool("echo").unwrap().output_schema.is_none());
    assert!(clients[1].tools().iter().all(|t| t.output_schema.is_some()));
    assert!(
        clients[3]
            .tool("get_current_time")
            .unwrap()
            .output_schema
            .is_some()
    );
    // A refresh lists the same tools again.
    let again = clients[0].refresh_tools().await.unwrap();
    assert_eq!(again.len(), clients[0].tools().len());
    join_all(clients.iter().map(McpClient::close)).await;
}

#[tokio::test]
async fn plain_calls_to_everything() {
    let Some(dir) = servers::require("plain_calls_to_everything") else {
        return;
    };
    let everything = servers::connect("everything", servers::everything(&dir)).await;
    let echo = everything
        .call("echo", json!({"message": "hello, world"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "Echo: hello, world");
    assert!(!echo.is_error);
    assert_eq!(echo.failure, None);
    assert_eq!(echo.structured, None);
    assert_eq!(echo.content.len(), 1);
    assert_eq!(echo.content[0].kind(), "text");
    let sum = everything
        .call("get-sum", json!({"a": 19, "b": 23.5}))
        .await
        .unwrap();
    assert_eq!(sum.text(), "The sum of 19 and 23.5 is 42.5.");
    let image = everything
        .call("get-tiny-image", Value::Null)
        .await
        .unwrap();
    assert!(!image.is_error, "{image}");
    assert!(
        image.content.iter().any(|c| c.kind() == "image"),
        "{image:?}"
    );
    assert!(
        image.text().contains("[image image/png"),
        "{}",
        image.text()
    );
    everything.close().await;
}

#[tokio::test]
async fn git_status_of_a_temporary_repository() {
    let Some(dir) = servers::require("git_status_of_a_temporary_repository") else {
        return;
    };
    let repo = tempfile::tempdir().unwrap();
    servers::git_init(repo.path());
    std::fs::write(repo.path().join("untracked-notes.txt"), "notes\n").unwrap();
    let client = servers::connect("git", servers::git(&dir, repo.path())).await;
    let status = client
        .call(
            "git_status",
            json!({"repo_path": repo.path().display().to_string()}),
        )
        .await
        .unwrap();
    assert!(!status.is_error, "{status}");
    let text = status.text();
    assert!(text.contains("trunk"), "{text}");
    assert!(text.contains("untracked-notes.txt"), "{text}");
    client.close().await;
}

#[tokio::test]
async fn memory_keeps_what_it_is_told() {
    let Some(dir) = servers::require("memory_keeps_what_it_is_told") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("graph.jsonl");
    let memory = servers::connect("memory", servers::memory(&dir, &file)).await;
    let ada =
        json!({"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]});
    let babbage =
        json!({"name": "Babbage", "entityType": "person", "observations": ["designed the engine"]});
    let created = memory
        .call("create_entities", json!({"entities": [ada, babbage]}))
        .await
        .unwrap();
    assert!(!created.is_error, "{created}");
    assert_eq!(
        created.structured.as_ref().unwrap()["entities"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let graph = memory.call("read_graph", json!({})).await.unwrap();
    assert!(!graph.is_error, "{graph}");
    let graph = graph.structured.unwrap();
    let names: Vec<&str> = graph["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Ada", "Babbage"]);

    let opened = memory
        .call("open_nodes", json!({"names": ["Ada"]}))
        .await
        .unwrap();
    let opened = opened.structured.unwrap();
    assert_eq!(opened["entities"].as_array().unwrap().len(), 1);
    assert_eq!(
        opened["entities"][0]["observations"],
        json!(["wrote the first program"])
    );
    memory.close().await;
    // The environment reached the server: the graph is in our file.
    let stored = std::fs::read_to_string(&file).unwrap();
    assert!(stored.contains("wrote the first program"), "{stored}");
}

#[tokio::test]
async fn structured_results_are_checked_against_the_output_schema() {
    let Some(dir) = servers::require("structured_results_are_checked_against_the_output_schema")
    else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("notes.md"), "# Notes\n\nclaij was here.\n").unwrap();
    let (everything, time, fs) = tokio::join!(
        servers::connect("everything", servers::everything(&dir)),
        servers::connect("time", servers::time(&dir)),
        servers::connect("fs", servers::filesystem(&dir, work.path())),
    );

    let weather = everything
        .call("get-structured-content", json!({"location": "Chicago"}))
        .await
        .unwrap();
    let structured = weather.structured.clone().unwrap();
    for key in ["temperature", "conditions", "humidity"] {
        assert!(structured.get(key).is_some(), "{structured}");
    }

    let now = time
        .call("get_current_time", json!({"timezone": "Asia/Tokyo"}))
        .await
        .unwrap();
    let structured = now.structured.clone().unwrap();
    assert_eq!(structured["timezone"], "Asia/Tokyo");
    assert!(
        structured["datetime"].as_str().unwrap().ends_with("+09:00"),
        "{structured}"
    );
    assert_eq!(structured["is_dst"], false);

    let path = work.path().join("notes.md").display().to_string();
    let read = fs
        .call("read_text_file", json!({"path": path}))
        .await
        .unwrap();
    assert_eq!(
        read.structured.clone().unwrap()["content"],
        "# Notes\n\nclaij was here.\n"
    );

    for (client, tool, outcome) in [
        (&everything, "get-structured-content", &weather),
        (&time, "get_current_time", &now),
        (&fs, "read_text_file", &read),
    ] {
        assert!(!outcome.is_error, "{tool}: {outcome}");
        assert_eq!(outcome.failure, None, "{tool}");
        let info = client.tool(tool).unwrap();
        assert!(info.output_schema.is_some(), "{tool}");
        assert_eq!(
            info.check_output(outcome.structured.as_ref().unwrap()),
            Ok(()),
            "{tool}"
        );
    }
    tokio::join!(everything.close(), time.close(), fs.close());
}

#[tokio::test]
async fn twenty_concurrent_calls_get_their_own_answers() {
    let Some(dir) = servers::require("twenty_concurrent_calls_get_their_own_answers") else {
        return;
    };
    let (everything, time) = tokio::join!(
        servers::connect("everything", servers::everything(&dir)),
        servers::connect("time", servers::time(&dir)),
    );
    let echoes = join_all(
        (0..20).map(|i| everything.call("echo", json!({"message": format!("message {i}")}))),
    )
    .await;
    for (i, echo) in echoes.into_iter().enumerate() {
        assert_eq!(echo.unwrap().text(), format!("Echo: message {i}"));
    }
    let sums =
        join_all((0..20).map(|i| everything.call("get-sum", json!({"a": i, "b": 1000})))).await;
    for (i, sum) in sums.into_iter().enumerate() {
        assert_eq!(
            sum.unwrap().text(),
            format!("The sum of {i} and 1000 is {}.", i + 1000)
        );
    }
    let zones = [
        "UTC",
        "Europe/Paris",
        "Europe/Lisbon",
        "Europe/Berlin",
        "Europe/Kyiv",
        "Asia/Tokyo",
        "Asia/Kolkata",
        "Asia/Shanghai",
        "Asia/Dubai",
        "Asia/Singapore",
        "Australia/Sydney",
        "Pacific/Auckland",
        "America/New_York",
        "America/Chicago",
        "America/Denver",
        "America/Los_Angeles",
        "America/Sao_Paulo",
        "Africa/Cairo",
        "Africa/Lagos",
        "Pacific/Honolulu",
    ];
    let times = join_all(
        zones
            .iter()
            .map(|zone| time.call("get_current_time", json!({"timezone": zone}))),
    )
    .await;
    for (zone, now) in zones.iter().zip(times) {
        let now = now.unwrap();
        assert_eq!(now.structured.as_ref().unwrap()["timezone"], *zone, "{now}");
    }
    tokio::join!(everything.close(), time.close());
}

/// A server started through a shell that does not `exec` it: the shell and the server share the
/// process group claij kills.
fn wrapped(server: &StdioServer) -> StdioServer {
    let mut line = server.command.clone();
    for arg in &server.args {
        line.push_str(&format!(" '{arg}'"));
    }
    StdioServer::new("sh", ["-c".to_owned(), format!("{line}; exit $?")])
}

#[tokio::test]
async fn close_leaves_no_process_behind() {
    let Some(dir) = servers::require("close_leaves_no_process_behind") else {
        return;
    };
    let (everything, time, shell) = tokio::join!(
        servers::connect("everything", servers::everything(&dir)),
        servers::connect("time", servers::time(&dir)),
        servers::connect("shell", wrapped(&servers::everything(&dir))),
    );
    let shell_pid = shell.pid().unwrap();
    let members = servers::group_members(shell_pid);
    assert!(
        members.len() >= 2,
        "sh and node share the group: {members:?}"
    );
    for client in [&everything, &time, &shell] {
        let pid = client.pid().unwrap();
        assert!(servers::exists(pid));
        client.close().await;
        assert!(!client.is_alive());
        let gone = servers::wait_gone(pid).await;
        assert!(
            gone.is_ok(),
            "{}: still there after close: {gone:?}",
            client.name()
        );
        let after = client.call("echo", json!({"message": "hi"})).await;
        assert!(
            matches!(after, Err(claij_mcp::Error::Dead { .. })),
            "{after:?}"
        );
        client.close().await; // idempotent
    }
}

#[tokio::test]
async fn dropping_a_client_leaves_no_process_behind() {
    let Some(dir) = servers::require("dropping_a_client_leaves_no_process_behind") else {
        return;
    };
    let (everything, time, shell) = tokio::join!(
        servers::connect("everything", servers::everything(&dir)),
        servers::connect("time", servers::time(&dir)),
        servers::connect("shell", wrapped(&servers::time(&dir))),
    );
    let pids = [
        everything.pid().unwrap(),
        time.pid().unwrap(),
        shell.pid().unwrap(),
    ];
    let clone = everything.clone();
    drop(everything);
    assert!(clone.is_alive(), "a clone keeps the connection");
    drop((clone, time, shell));
    for pid in pids {
        let gone = servers::wait_gone(pid).await;
        assert!(gone.is_ok(), "pid {pid}: still there after drop: {gone:?}");
    }
}
