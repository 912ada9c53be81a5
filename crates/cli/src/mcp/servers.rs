//! `claij mcp servers`: a configuration for the MCP servers `cargo xtask mcp-servers` installed
//! ([`claij::mcp::servers`] builds it), printed as `.mcp.json` (or `config.toml` tables).

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Result, anyhow};
use claij::mcp::servers::{self, INSTALL};

use crate::exit::Status;

/// `claij mcp servers`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A directory the filesystem server `fs` may read and write (repeatable; default: the current
    /// directory), written as an absolute path.
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<PathBuf>,
    /// These servers, by name (comma-separated): fs, time, memory, fetch, git, everything (the
    /// protocol's test server). Default: fs,time (the `mcp` service shows a model every tool of
    /// every server: all of them together overflow the embedded model's 8192-token context). With
    /// fs comes the project `docs` (`--project docs`: fs's read_text_file alone, the one tool the
    /// embedded model uses well).
    #[arg(long, value_name = "NAMES", value_delimiter = ',', value_parser = servers::known)]
    servers: Vec<String>,
    /// The cache `cargo xtask mcp-servers` filled (default: $CLAIJ_MCP_SERVERS, else
    /// $XDG_CACHE_HOME/claij/mcp-servers, else ~/.cache/claij/mcp-servers).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// `json`: a whole `.mcp.json` file; `toml`: `[mcpServers.NAME]` tables to add to config.toml.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,
}

/// How `claij mcp servers` prints the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// `{"mcpServers": {...}}`, the common `.mcp.json` shape.
    Json,
    /// `[mcpServers.NAME]` tables.
    Toml,
}

/// Runs `claij mcp servers`.
pub(super) fn run(args: &Args) -> Result<Status> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => servers::cache_dir(|name| std::env::var_os(name)).ok_or_else(|| {
            anyhow!(
                "no MCP server cache: set CLAIJ_MCP_SERVERS or HOME (`{INSTALL}` installs the \
                 servers there)"
            )
        })?,
    };
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let roots = servers::roots(&args.roots).map_err(|error| match error {
        claij::mcp::Error::Io { what, source } => anyhow!("--root {what}: {source}"),
        other => other.into(),
    })?;
    let node = || servers::which("node", |name| std::env::var_os(name));
    let config = servers::configuration(&dir, &args.servers, &roots, node).map_err(flag_error)?;
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&config)? + "\n",
        Format::Toml => servers::to_toml(&config),
    };
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(Status::Ok)
}

/// The library's error, saying which flag names another cache.
fn flag_error(error: claij::mcp::Error) -> anyhow::Error {
    match error {
        error @ claij::mcp::Error::NotInstalled { .. } => {
            anyhow!("{error} (or name another cache with --dir)")
        }
        other => other.into(),
    }
}

#[cfg(test)]
mod tests;
