//! `claij mcp resources|read|prompts|prompt`: a server's resources and prompts
//! ([`claij::mcp::resources`], [`claij::mcp::prompts`]), printed as text or JSON.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use claij::mcp::resources::{self, DEFAULT_MAX_RESOURCE_BYTES, MAX_RESOURCE_BYTES};
use claij::mcp::signal::Signals;
use claij::mcp::{Error, listing, pretty, prompts};

use super::{Command as Asked, Common};
use crate::exit::Status;

/// Arguments of `claij mcp resources` and `claij mcp prompts`.
#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {
    /// Only this server (default: every configured one).
    server: Option<String>,
    #[command(flatten)]
    pub(super) common: Common,
    /// Print JSON (each server with its MCP objects as sent) instead of text.
    #[arg(long)]
    json: bool,
}

/// Arguments of `claij mcp read`.
#[derive(Debug, clap::Args)]
pub(crate) struct ReadArgs {
    /// The server.
    server: String,
    /// The resource's URI (one listed by `claij mcp resources`, or one its templates make).
    uri: String,
    /// Write the resource's bytes (text as UTF-8, binary decoded) to FILE instead of stdout.
    #[arg(long, value_name = "FILE", conflicts_with = "json")]
    out: Option<PathBuf>,
    /// Largest resource read, in bytes (its text, or binary decoded), 1 to 1073741824.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_RESOURCE_BYTES,
          value_parser = |t: &str| claij::options::parse::whole(t, 1, MAX_RESOURCE_BYTES))]
    max_resource_bytes: usize,
    #[command(flatten)]
    pub(super) common: Common,
    /// Print the server's `resources/read` result as JSON (binary parts as base64).
    #[arg(long)]
    json: bool,
}

/// Arguments of `claij mcp prompt`.
#[derive(Debug, clap::Args)]
pub(crate) struct PromptArgs {
    /// The prompt, as `server.prompt`.
    prompt: String,
    /// An argument of the prompt (repeatable).
    #[arg(long = "arg", value_name = "NAME=VALUE", value_parser = prompts::argument)]
    args: Vec<(String, String)>,
    #[command(flatten)]
    pub(super) common: Common,
    /// Print the server's `prompts/get` result as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `resources`, `read`, `prompts` or `prompt`: only the server named (if one is) starts.
pub(super) async fn run(
    asked: &Asked,
    front: &crate::front::Front,
    signals: &mut Signals,
) -> Result<Status> {
    let (common, server) = match asked {
        Asked::Resources(a) | Asked::Prompts(a) => (&a.common, a.server.as_deref()),
        Asked::Read(a) => (&a.common, Some(a.server.as_str())),
        Asked::Prompt(a) => (&a.common, Some(super::split(&a.prompt, "prompt")?.0)),
        _ => return Ok(Status::Ok),
    };
    let services = tokio::select! {
        connected = super::connect(common, server.map(|s| (s, None)), None, front) => connected?,
        signal = signals.recv() => return Ok(Status::Signalled(signal)),
    };
    let work = async {
        Ok::<_, Error>(match asked {
            Asked::Resources(a) => {
                let listed = resources::list(&services).await?;
                listing(&listed, a.json, resources::Listed::to_json).into_bytes()
            }
            Asked::Prompts(a) => {
                let listed = prompts::list(&services).await?;
                listing(&listed, a.json, prompts::Listed::to_json).into_bytes()
            }
            Asked::Read(a) => {
                let max = a.max_resource_bytes;
                let (read, parts) = resources::read(&services, &a.server, &a.uri, max).await?;
                match (&a.out, a.json) {
                    (Some(_), _) => resources::bytes(&parts),
                    (None, true) => pretty(&read).into_bytes(),
                    (None, false) => resources::text(&parts).into_bytes(),
                }
            }
            Asked::Prompt(a) => {
                let (server, name) = super::split(&a.prompt, "prompt").unwrap_or_default();
                let got = prompts::get(&services, server, name, &a.args).await?;
                prompts::shown(&got, a.json).into_bytes()
            }
            _ => Vec::new(),
        })
    };
    let result = signals.or_stop(&services, work).await;
    services.close().await;
    let bytes = match result {
        Err(signal) => return Ok(Status::Signalled(signal)),
        Ok(output) => output.map_err(super::mcp_error)?,
    };
    match asked {
        Asked::Read(a) if let Some(path) = &a.out => std::fs::write(path, bytes)
            .map_err(|e| anyhow::anyhow!("--out {}: {e}", path.display()))?,
        _ => std::io::stdout().write_all(&bytes)?,
    }
    Ok(Status::Ok)
}
