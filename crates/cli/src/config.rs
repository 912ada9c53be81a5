//! `claij config show`: the settings ([`claij::settings`]) printed without their secrets
//! ([`claij::settings::Settings::redacted`]).

use std::io::Write as _;

use anyhow::Result;

use crate::exit::Status;

/// `claij config ...`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// Print the effective configuration (the file, or the defaults) and the file the MCP servers
    /// come from, secrets redacted.
    Show {
        /// Print it as one JSON document.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `config` command.
pub(crate) fn run(command: &Command, front: &crate::front::Front) -> Result<Status> {
    let Command::Show { json } = command;
    let is_set = |var: &str| std::env::var_os(var).is_some_and(|v| !v.is_empty());
    let redacted = front.settings()?.redacted(&is_set);
    let mut out = std::io::stdout().lock();
    if *json {
        writeln!(out, "{:#}", redacted.to_json())?;
    } else {
        writeln!(out, "{redacted}")?;
    }
    Ok(Status::Ok)
}
