//! `claij mcp login|logout SERVER`: authorize claij at an MCP server that asks for OAuth 2.1 and
//! keep its tokens in the user's data directory, or forget them ([`claij::mcp::login`] does both).

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, anyhow};
use claij::mcp::login::{self, Login, NO_REDIRECT, Outcome};
use claij::mcp::signal::Signals;

use super::mcp_error;
use crate::exit::Status;

/// `claij mcp login`.
#[derive(Debug, clap::Args)]
pub(crate) struct LoginArgs {
    /// The server, as named in the configuration's `mcpServers` (read as every command reads it:
    /// `--config`, else $CLAIJ_CONFIG, ./.mcp.json, ~/.config/claij/config.toml).
    server: String,
    /// Longest wait for the browser's redirect, in seconds (default 300).
    #[arg(long, value_name = "SECS", value_parser = crate::args::seconds, default_value = "300")]
    timeout: Duration,
    /// Authorize again, asking for SCOPE as well (repeatable): for a tool the server refuses with
    /// 403 insufficient_scope. The scopes of the stored tokens and of the entry's `oauth.scopes`
    /// are asked for too; the stored tokens are replaced only once the new ones arrive.
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
}

/// `claij mcp logout`.
#[derive(Debug, clap::Args)]
pub(crate) struct LogoutArgs {
    /// The server whose tokens are forgotten.
    server: String,
}

/// The directory of the servers' token files (`$XDG_DATA_HOME/claij/mcp-tokens`, else
/// `~/.local/share/claij/mcp-tokens`), or the error that says how to give one.
fn required_token_dir() -> Result<PathBuf> {
    let data = claij::settings::data_dir()
        .ok_or_else(|| anyhow!("no data directory for the tokens: set XDG_DATA_HOME or HOME"))?;
    Ok(login::token_dir(&data))
}

/// Runs `claij mcp login`.
pub(crate) async fn login(
    args: &LoginArgs,
    front: &crate::front::Front,
    signals: &mut Signals,
) -> Result<Status> {
    let dir = required_token_dir()?;
    let settings = front.settings()?;
    let server = args.server.clone();
    let login = Login::new(&args.server, dir)
        .with_timeout(args.timeout)
        .with_scopes(args.scopes.iter().cloned())
        .on_authorize(move |url| {
            let _ = writeln!(
                std::io::stderr(),
                "to authorize claij at {server}, open this URL in a browser:\n{url}"
            );
            if let Some(browser) = std::env::var_os("BROWSER").filter(|b| !b.is_empty()) {
                // Never required: the URL is printed above.
                let _ = login::browse(&browser, url);
            }
        });
    let outcome = tokio::select! {
        outcome = login.run_configured(settings, |name| std::env::var(name)) => outcome.map_err(login_error)?,
        signal = signals.recv() => return Ok(Status::Signalled(signal)),
    };
    let mut err = std::io::stderr();
    let server = &args.server;
    match outcome {
        Outcome::LoggedIn { tokens } => {
            writeln!(
                err,
                "logged in to {server} (tokens in {})",
                tokens.display()
            )?;
        }
        Outcome::AlreadyLoggedIn { tokens } => {
            // The stored tokens (refreshed if need be) were enough: nobody was asked.
            writeln!(
                err,
                "already logged in to {server} (tokens in {}); to authorize again, run `claij mcp logout {server}` first",
                tokens.display()
            )?;
        }
        _ => writeln!(err, "{server} did not ask for authorization")?,
    }
    Ok(Status::Ok)
}

/// A login's error in the command's words: `--timeout`, how to log in.
fn login_error(error: claij::mcp::Error) -> anyhow::Error {
    let error = mcp_error(error);
    let text = format!("{error:#}");
    match text.contains(NO_REDIRECT) {
        true => anyhow!(
            "{}",
            text.replace(NO_REDIRECT, &format!("{NO_REDIRECT} --timeout"))
        ),
        false => error,
    }
}

/// Runs `claij mcp logout`.
pub(crate) fn logout(args: &LogoutArgs) -> Result<Status> {
    let dir = required_token_dir()?;
    let mut err = std::io::stderr();
    if login::logout(&dir, &args.server)? {
        writeln!(err, "logged out of {}", args.server)?;
    } else {
        writeln!(err, "no tokens for {}", args.server)?;
    }
    Ok(Status::Ok)
}
