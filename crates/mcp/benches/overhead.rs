//! The per-call overhead claij-mcp adds over rmcp alone, on stdio, against real servers.
//!
//! Connections to processes of the same server, started the same way (the stateless revision
//! preferred), some driven by rmcp directly (`call_tool`),
//! one by [`McpClient::call`] (tool lookup, argument validation, timeout bookkeeping, outcome
//! normalisation and output validation). Calls alternate in rounds (rmcp then claij, then claij then
//! rmcp) so drift hits both; each side's per-call time is the median over rounds. A third,
//! rmcp-against-rmcp comparison gives the noise floor of the method. The figures go to stdout and
//! `target/claij/bench-mcp.md` (`cargo xtask bench` prints it).
//!
//! Needs the servers of `cargo xtask mcp-servers` (`CLAIJ_MCP_SERVERS`); without them it says so and
//! exits.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use claij_mcp::{ClientOptions, McpClient, StdioServer};
use rmcp::model::CallToolRequestParams;
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _};
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value, json};

const ROUNDS: usize = 30;
const CALLS_PER_ROUND: usize = 50;

struct Target {
    label: &'static str,
    program: String,
    args: Vec<String>,
    tool: &'static str,
    arguments: Value,
}

fn main() {
    let Some(dir) = std::env::var_os("CLAIJ_MCP_SERVERS")
        .map(PathBuf::from)
        .or_else(default_dir)
        .filter(|d| d.join("servers.json").is_file())
    else {
        eprintln!("bench overhead: skipped: no MCP test servers (run `cargo xtask mcp-servers`)");
        return;
    };
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let targets = [
        Target {
            label: "Node (server-everything, echo)",
            program: "node".into(),
            args: vec![
                dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
                    .display()
                    .to_string(),
                "stdio".into(),
            ],
            tool: "echo",
            arguments: json!({"message": "hello"}),
        },
        Target {
            label: "Python (mcp-server-time, get_current_time)",
            program: dir.join("venv/bin/mcp-server-time").display().to_string(),
            args: vec!["--local-timezone".into(), "UTC".into()],
            tool: "get_current_time",
            arguments: json!({"timezone": "UTC"}),
        },
    ];
    let mut table = String::from(
        "| server | rmcp alone µs/call | claij-mcp µs/call | overhead µs/call | noise floor (rmcp vs rmcp) µs/call |\n|---|---|---|---|---|\n",
    );
    for target in &targets {
        let row = runtime.block_on(measure(target));
        println!("{}: {row:?}", target.label);
        table.push_str(&format!(
            "| {} | {:.0} | {:.0} | {:+.1} | {:+.1} |\n",
            target.label,
            row.rmcp,
            row.claij,
            row.claij - row.rmcp,
            row.noise
        ));
    }
    let cpu = wrapper_cpu();
    table.push_str(&format!(
        "\nclaij-side work without IO (argument validation against the inputSchema, outcome normalisation), echo: {cpu:.1} µs/call\n"
    ));
    println!("\n{table}");
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/claij");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(
        out.join("bench-mcp.md"),
        format!("## claij-mcp per-call overhead over rmcp (stdio, {ROUNDS} rounds x {CALLS_PER_ROUND} calls, medians)\n\n{table}"),
    )
    .unwrap();
}

fn default_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("claij/mcp-servers"))
}

#[derive(Debug)]
struct Row {
    rmcp: f64,
    claij: f64,
    noise: f64,
}

async fn measure(target: &Target) -> Row {
    let rmcp_a = rmcp_client(target).await;
    let rmcp_b = rmcp_client(target).await;
    let server = StdioServer::new(target.program.clone(), target.args.clone());
    let claij = McpClient::connect("bench", server, ClientOptions::default())
        .await
        .unwrap();
    let arguments = target.arguments.as_object().cloned().unwrap();

    let rmcp_call = |client: &rmcp::service::RunningService<rmcp::RoleClient, ()>| {
        let params = CallToolRequestParams::new(target.tool).with_arguments(arguments.clone());
        let peer = client.peer().clone();
        async move {
            let result = peer.call_tool(params).await.unwrap();
            assert_ne!(result.is_error, Some(true));
        }
    };
    // Warm up every connection.
    for _ in 0..CALLS_PER_ROUND {
        rmcp_call(&rmcp_a).await;
        rmcp_call(&rmcp_b).await;
        assert!(
            !claij
                .call(target.tool, target.arguments.clone())
                .await
                .unwrap()
                .is_error
        );
    }
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let time_rmcp = |client| {
            let call = &rmcp_call;
            async move {
                let started = Instant::now();
                for _ in 0..CALLS_PER_ROUND {
                    call(client).await;
                }
                per_call(started.elapsed())
            }
        };
        let time_claij = || async {
            let started = Instant::now();
            for _ in 0..CALLS_PER_ROUND {
                let outcome = claij
                    .call(target.tool, target.arguments.clone())
                    .await
                    .unwrap();
                assert!(!outcome.is_error);
            }
            per_call(started.elapsed())
        };
        if round % 2 == 0 {
            a.push(time_rmcp(&rmcp_a).await);
            c.push(time_claij().await);
            b.push(time_rmcp(&rmcp_b).await);
        } else {
            b.push(time_rmcp(&rmcp_b).await);
            c.push(time_claij().await);
            a.push(time_rmcp(&rmcp_a).await);
        }
    }
    claij.close().await;
    let _ = rmcp_a.cancel().await;
    let _ = rmcp_b.cancel().await;
    Row {
        rmcp: median(&mut a),
        claij: median(&mut c),
        noise: median(&mut b) - median(&mut a),
    }
}

async fn rmcp_client(target: &Target) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let mut command = tokio::process::Command::new(&target.program);
    command.args(&target.args);
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The same start as claij's default (`StartMode::PreferStateless`), so both sides speak the same
    // protocol revision: the stateless one costs the Python servers more per call.
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    };
    ().serve_with_lifecycle(transport, lifecycle).await.unwrap()
}

/// The claij-side work of a call without any IO: validating echo's arguments against a compiled
/// input schema like the server's, and building the outcome.
fn wrapper_cpu() -> f64 {
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"message": {"type": "string", "description": "Message to echo"}},
        "required": ["message"]
    });
    let tool = claij_mcp::ToolInfo::new("bench", "echo", None, schema, None);
    let args = json!({"message": "hello"});
    let n = 20_000;
    let started = Instant::now();
    for _ in 0..n {
        tool.check_args(std::hint::black_box(&args)).unwrap();
        let content = vec![claij_mcp::Content::from_value(
            json!({"type": "text", "text": "Echo: hello"}),
        )];
        std::hint::black_box(claij_mcp::CallOutcome::success(content, None));
        std::hint::black_box(Map::<String, Value>::new());
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(n)
}

fn per_call(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1e6 / CALLS_PER_ROUND as f64
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
