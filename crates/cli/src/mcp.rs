//! `claij mcp list|call`: the MCP servers of a configuration file, their tools, and one call.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use claij_mcp::{BackendSampler, ClientOptions, Hooks, McpConfig, Services};
use serde_json::{Value, json};

use crate::Status;

/// The configuration file used when `--config` is not given (the name other MCP clients use).
const DEFAULT_CONFIG: &str = ".mcp.json";

/// `claij mcp` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Start every configured server and list it: protocol version, implementation, tools.
    List {
        #[command(flatten)]
        common: Common,
        /// Print JSON (each server with its tools and their schemas) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool, `server.tool`, and print its result (exit 0 ok, 1 the tool reported an error
    /// or the arguments are invalid, 2 configuration, start-up or transport error).
    Call {
        /// The tool, as `server.tool`.
        tool: String,
        /// The arguments, a JSON object.
        #[arg(long, value_name = "JSON", default_value = "{}")]
        args: String,
        /// Longest wait for the result, in seconds (default: the server's `timeout`, else 30).
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,
        #[command(flatten)]
        common: Common,
        /// Print the whole outcome as JSON (MCP `CallToolResult` shape plus claij's `failure`).
        #[arg(long)]
        json: bool,
    },
}

/// Options shared by the `mcp` subcommands.
#[derive(Debug, clap::Args)]
pub struct Common {
    /// The configuration file (`{"mcpServers": {...}, "projects": {...}}`); default `.mcp.json`.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Only the services and tools this project of the configuration allows.
    #[arg(long, value_name = "NAME")]
    project: Option<String>,
    /// Answer servers' sampling requests with this model: `local` or PROVIDER:MODEL (as `ask --llm`);
    /// without it, sampling is not offered. Elicitations are declined.
    #[arg(long, value_name = "ALIAS|PROVIDER:MODEL")]
    sampling_llm: Option<String>,
}

/// Runs a `claij mcp` subcommand.
pub fn run(cmd: &Command) -> Result<Status> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        match cmd {
            Command::List { common, json } => list(common, *json).await,
            Command::Call {
                tool,
                args,
                timeout,
                common,
                json,
            } => call(common, tool, args, *timeout, *json).await,
        }
    })
}

async fn list(common: &Common, json: bool) -> Result<Status> {
    let (config, services) = connect(common, None).await?;
    let mut out = Vec::new();
    let mut report = Vec::new();
    for name in services.names() {
        let Some(client) = services.client(name) else {
            continue;
        };
        let info = client.server_info();
        let tools: Vec<_> = services
            .tools()
            .into_iter()
            .filter(|t| t.server == name)
            .collect();
        if json {
            report.push(json!({
                "server": name,
                "protocol_version": info.protocol_version,
                "implementation": info.implementation,
                "version": info.version,
                "tools": tools.iter().map(|t| serde_json::to_value(&**t).unwrap_or(Value::Null)).collect::<Vec<_>>(),
            }));
        } else {
            writeln!(
                out,
                "{name}: {} {} (protocol {}), {} tool{}",
                info.implementation.as_deref().unwrap_or("?"),
                info.version.as_deref().unwrap_or("?"),
                info.protocol_version,
                tools.len(),
                if tools.len() == 1 { "" } else { "s" }
            )?;
            for tool in &tools {
                let description = tool
                    .description
                    .as_deref()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("");
                writeln!(out, "  {}  {}", tool.qualified(), description.trim())?;
            }
        }
    }
    services.close().await;
    if json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&Value::Array(report))?
        )?;
    }
    if let Some(project) = &common.project
        && config.project(project).is_none()
    {
        bail!("no project `{project}`");
    }
    std::io::stdout().write_all(&out)?;
    Ok(Status::Ok)
}

async fn call(
    common: &Common,
    tool: &str,
    args: &str,
    timeout: Option<f64>,
    json: bool,
) -> Result<Status> {
    let args: Value = serde_json::from_str(args).map_err(|e| anyhow!("--args is not JSON: {e}"))?;
    if !args.is_object() {
        bail!("--args must be a JSON object");
    }
    let (server, name) = tool
        .split_once('.')
        .ok_or_else(|| anyhow!("`{tool}` is not `server.tool`"))?;
    let timeout = match timeout {
        None => None,
        Some(secs) if secs.is_finite() && secs > 0.0 => Some(Duration::from_secs_f64(secs)),
        Some(_) => bail!("--timeout is a positive number of seconds"),
    };
    // Only the named server is started.
    let (_, services) = connect(common, Some(server)).await?;
    let result = match services.client(server) {
        Some(client) if services.allows(server, name) => {
            client.call_with_timeout(name, args, timeout).await
        }
        _ => services.call(server, name, args).await,
    };
    services.close().await;
    let outcome = result?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&outcome)?)?;
    } else {
        writeln!(out, "{}", outcome.text())?;
        if let Some(structured) = &outcome.structured {
            writeln!(out, "{}", serde_json::to_string_pretty(structured)?)?;
        }
    }
    Ok(if outcome.is_error {
        Status::Invalid
    } else {
        Status::Ok
    })
}

/// Reads the configuration and starts its servers (only `only`, when given), seen through the
/// project when one is named.
async fn connect(common: &Common, only: Option<&str>) -> Result<(McpConfig, Services)> {
    let path = common
        .config
        .as_deref()
        .unwrap_or(Path::new(DEFAULT_CONFIG));
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let config = McpConfig::from_json(&text).with_context(|| path.display().to_string())?;
    let project = match &common.project {
        None => None,
        Some(name) => Some(
            config
                .project(name)
                .cloned()
                .ok_or_else(|| anyhow!("{}: no project `{name}`", path.display()))?,
        ),
    };
    let mut selected = config.clone();
    if let Some(server) = only {
        if !config.servers.contains_key(server) {
            let known: Vec<&str> = config.servers.keys().map(String::as_str).collect();
            bail!(
                "no mcp server `{server}` in {}; configured: {}",
                path.display(),
                known.join(", ")
            );
        }
        selected.servers.retain(|name, _| name == server);
    } else if let Some(project) = &project {
        selected
            .servers
            .retain(|name, _| project.services.contains(name));
    }
    let mut hooks = Hooks::default();
    if let Some(llm) = &common.sampling_llm {
        let opened =
            crate::ask::llm::open(Some(llm.as_str()), None, &crate::config::Config::load()?)?;
        hooks = hooks.with_sampler(BackendSampler::new(opened.backend, opened.model));
    }
    let options = ClientOptions::default().with_hooks(config.hooks(hooks));
    let services = Services::connect(&selected, options).await?;
    Ok(match project {
        Some(project) => (config, services.with_project(project)),
        None => (config, services),
    })
}
