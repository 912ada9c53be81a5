//! `claij mcp list|call|chat|login|logout|servers`: the MCP servers of the configuration (the one
//! file [`claij::settings`] reads them from), their tools, one call, the MCP FSM over them
//! ([`chat`]), OAuth ([`login`]), and a configuration for the servers `cargo xtask mcp-servers`
//! installs ([`servers`]).
//!
//! SIGINT and SIGTERM stop the servers (each runs in its own process group, which a signal to claij
//! does not reach) before claij exits 130 or 143.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow};
use claij::mcp::offer::{Elicitation, Offer};
use claij::mcp::protocol::{Elicitor, Hooks, LogLevel, Services};
use claij::mcp::signal::Signals;

use crate::exit::Status;

mod chat;
mod content;
pub(crate) mod elicitation;
mod login;
mod servers;

/// `claij mcp` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// Start every configured server and list it: protocol version, implementation, tools.
    List {
        #[command(flatten)]
        common: Common,
        /// Print JSON (each server with its tools and their schemas) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool, `server.tool`, and print its result (exit 0 ok, 1 the tool reported an error
    /// or the arguments are invalid, 2 configuration, start-up or transport error, 130/143 SIGINT or
    /// SIGTERM). A structured result that breaks the tool's outputSchema is printed, and the
    /// violations said on stderr (exit 1).
    Call(CallArgs),
    /// List the servers' resources and resource templates (exit 2 on a server's error).
    Resources(content::ListArgs),
    /// Read one resource by URI: text as it is, binary as base64 (or its bytes to --out). Larger
    /// than --max-resource-bytes is an error naming it (exit 2).
    Read(content::ReadArgs),
    /// List the servers' prompts and their arguments (`[optional]`).
    Prompts(content::ListArgs),
    /// Get one prompt, `server.prompt`, filled in with `--arg NAME=VALUE`; a required argument
    /// missing, or one the prompt does not take, is refused before the request (exit 2).
    Prompt(content::PromptArgs),
    /// The MCP FSM over the configured servers, a request a line: a model calls their tools until it
    /// answers (each transition on stderr, each answer on stdout; exit 0, 1 when a request found no
    /// valid answer, 2 configuration or start-up error, 130/143 SIGINT or SIGTERM). On a terminal a
    /// person answers the servers' questions (MCP elicitation); without one, they are declined.
    Chat(chat::Args),
    /// Authorize claij at SERVER, which asks for OAuth 2.1: prints the authorization URL (opened
    /// with $BROWSER when set), waits for the browser's redirect on a loopback port and keeps the
    /// tokens in `$XDG_DATA_HOME/claij/mcp-tokens/` (mode 0600), where `list`, `call` and `chat`
    /// use and refresh them.
    Login(login::LoginArgs),
    /// Forget the tokens `login` kept for SERVER.
    Logout(login::LogoutArgs),
    /// Print a configuration for the servers `cargo xtask mcp-servers` installed (not on PATH: the
    /// commands are absolute paths into its cache), ready to save as .mcp.json (or, with --format
    /// toml, to add to config.toml): `fs` (the filesystem server, on --root) and `time`; with
    /// --servers also `memory`, `fetch`, `git` and the protocol's test server `everything`. With
    /// `fs` comes the project `docs` (`--project docs`: only fs.read_text_file).
    Servers(servers::Args),
}

impl Command {
    /// The command's name when it reads no configuration file (`main` refuses `--config`).
    pub(crate) fn reads_no_configuration(&self) -> Option<&'static str> {
        match self {
            Command::Logout(_) => Some("mcp logout"),
            Command::Servers(_) => Some("mcp servers"),
            _ => None,
        }
    }

    /// `--threads` of `chat`, which `main` applies before any thread starts.
    pub(crate) fn threads(&self) -> Option<std::num::NonZeroUsize> {
        match self {
            Command::Chat(args) => args.threads(),
            _ => None,
        }
    }

    /// `--mcp-log-level` of `list`, `call` and `chat`, which `main` lets through the log filter.
    pub(crate) fn mcp_log_level(&self) -> Option<LogLevel> {
        match self {
            Command::List { common, .. } | Command::Call(CallArgs { common, .. }) => {
                common.mcp_log_level
            }
            Command::Chat(args) => args.common.mcp_log_level,
            Command::Resources(a) | Command::Prompts(a) => a.common.mcp_log_level,
            Command::Read(args) => args.common.mcp_log_level,
            Command::Prompt(args) => args.common.mcp_log_level,
            _ => None,
        }
    }
}

/// Options shared by the `mcp` subcommands (and `--config`, every command's: the servers come
/// from the one configuration).
#[derive(Debug, clap::Args)]
pub(crate) struct Common {
    /// Only the services and tools this project of the configuration allows.
    #[arg(long, value_name = "NAME")]
    project: Option<String>,
    /// Answer servers' sampling requests with this model: `local` or PROVIDER:MODEL (as `ask --llm`);
    /// without it, sampling is not offered.
    #[arg(long, value_name = "ALIAS|PROVIDER:MODEL")]
    sampling_llm: Option<String>,
    /// How servers' questions (MCP elicitation) are answered: `ask` the person at the terminal (a
    /// form built from the requested schema, the answer checked against it; stdin must be a
    /// terminal), accept with the schema's `defaults` (declined when a required field has none), or
    /// `decline`. Default: `decline` (`chat`: its own prompt on a terminal, else `decline`).
    #[arg(long, value_name = "POLICY", value_parser = elicitation::policy())]
    elicitation: Option<Elicitation>,
    /// Ask the servers for their log messages at LEVEL and above (debug, info, notice, warning,
    /// error, critical, alert, emergency) and show each on stderr as a log line (its level, `server`,
    /// `level`, `logger`, `message`).
    #[arg(long, value_name = "LEVEL", value_parser = claij::mcp::log_level)]
    mcp_log_level: Option<LogLevel>,
}

/// Arguments of `claij mcp call`.
#[derive(Debug, clap::Args)]
pub(crate) struct CallArgs {
    /// The tool, as `server.tool`.
    tool: String,
    /// The arguments, a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    args: String,
    /// Longest wait for the result, in seconds, above 0 and at most 86400 (default: the server's
    /// `timeout`, else 30).
    #[arg(long, value_name = "SECS", value_parser = crate::args::seconds)]
    timeout: Option<Duration>,
    /// Largest message accepted from the server, in bytes, 1024 to 1073741824 (default: the
    /// server's `maxMessageBytes`, else 67108864, 64 MiB).
    #[arg(long, value_name = "BYTES", value_parser = crate::args::message_bytes)]
    max_message_bytes: Option<usize>,
    #[command(flatten)]
    common: Common,
    /// Print the whole outcome as JSON (MCP `CallToolResult` shape plus claij's `failure`).
    #[arg(long)]
    json: bool,
}

impl Common {
    /// The hooks `--sampling-llm` and `--elicitation` ask for, over the configuration's
    /// `samplingLlm` and `elicitation` ([`claij::mcp::offer`]): `chat`'s
    /// own prompt (`asker`) asks on a terminal when nothing is said; `ask` is the terminal's form.
    fn hooks(&self, claij: &claij::Claij, asker: Option<Arc<dyn Elicitor>>) -> Result<Hooks> {
        let offer = Offer::new(self.sampling_llm.clone(), self.elicitation).over(claij.settings());
        let unset = if asker.is_some() {
            Elicitation::Ask
        } else {
            Elicitation::Decline
        };
        let asker = asker.unwrap_or_else(|| Arc::new(elicitation::Terminal));
        let terminal = std::io::stdin().is_terminal();
        Ok(offer.hooks(claij, Some(asker), terminal, unset)?)
    }
}

/// Runs a `claij mcp` subcommand.
pub(crate) fn run(cmd: &Command, front: &crate::front::Front) -> Result<Status> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // Dropping the runtime on the way out drops every task, and with them any server still
    // starting: their process groups are killed then.
    runtime.block_on(async {
        let mut signals = Signals::new()?;
        match cmd {
            Command::List { common, json } => list(common, *json, front, &mut signals).await,
            Command::Call(args) => call(args, front, &mut signals).await,
            Command::Chat(args) => chat::run(args, front, &mut signals).await,
            Command::Login(args) => login::login(args, front, &mut signals).await,
            Command::Logout(args) => login::logout(args),
            Command::Servers(args) => servers::run(args),
            _ => content::run(cmd, front, &mut signals).await,
        }
    })
}

async fn list(
    common: &Common,
    json: bool,
    front: &crate::front::Front,
    signals: &mut Signals,
) -> Result<Status> {
    let services = tokio::select! {
        connected = connect(common, None, None, front) => connected?,
        signal = signals.recv() => return Ok(Status::Signalled(signal)),
    };
    let listed = claij::mcp::list(&services);
    services.close().await;
    let out = claij::mcp::listing(&listed, json, claij::mcp::Listed::to_json);
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(Status::Ok)
}

/// Runs `claij mcp call`.
async fn call(
    call: &CallArgs,
    front: &crate::front::Front,
    signals: &mut Signals,
) -> Result<Status> {
    let (tool, common) = (&call.tool, &call.common);
    let args = claij::mcp::call::arguments(&call.args).map_err(|e| anyhow!("--args {e}"))?;
    let (server, name) = split(tool, "tool")?;
    // Only the named server is started.
    let services = tokio::select! {
        connected = connect(common, Some((server, call.max_message_bytes)), None, front) => connected?,
        signal = signals.recv() => return Ok(Status::Signalled(signal)),
    };
    let calling = claij::mcp::call::run(&services, server, name, args, call.timeout);
    let result = match signals.or_stop(&services, calling).await {
        Ok(result) => result,
        Err(signal) => return Ok(Status::Signalled(signal)),
    };
    services.close().await;
    let outcome = result?;
    // The result on stdout; when the structured result breaks the tool's outputSchema, what the
    // tool returned still goes to stdout and the violations, on one line, to stderr.
    let mut out = std::io::stdout().lock();
    match call.json {
        true => writeln!(out, "{}", serde_json::to_string_pretty(&outcome)?)?,
        false => out.write_all(claij::mcp::call::text(&outcome).as_bytes())?,
    }
    out.flush()?;
    if let Some(line) = claij::mcp::call::invalid_output(tool, &outcome) {
        writeln!(
            std::io::stderr(),
            "{}",
            crate::exit::one_line(&format!("invalid: {line}"))
        )?;
    }
    Ok(match outcome.is_error {
        true => Status::Invalid,
        false => Status::Ok,
    })
}

/// `server.tool` (or `server.prompt`: `what`) split at its first dot.
fn split<'a>(qualified: &'a str, what: &str) -> Result<(&'a str, &'a str)> {
    claij::mcp::call::qualified(qualified, what).map_err(anyhow::Error::msg)
}

/// The library's error in the command's words ([`claij::mcp::Error::said`]).
fn mcp_error(error: claij::mcp::Error) -> anyhow::Error {
    anyhow!(error.said(None))
}

/// Reads the configuration and starts its servers (only `only`, when given, with its
/// `--max-message-bytes`), seen through the project when one is named, offered what
/// [`Common::hooks`] says (`asker`: `chat`'s prompt). Servers that ask for OAuth 2.1 get the
/// tokens `claij mcp login` stored.
async fn connect(
    common: &Common,
    only: Option<(&str, Option<usize>)>,
    asker: Option<Arc<dyn Elicitor>>,
    front: &crate::front::Front,
) -> Result<Services> {
    let claij = front.claij()?;
    let hooks = common.hooks(claij, asker)?;
    let mut start = claij::mcp::Start::new();
    if let Some(project) = &common.project {
        start = start.project(project);
    }
    if let Some((server, bytes)) = only {
        start = start.server(server);
        if let Some(bytes) = bytes {
            start = start.max_message_bytes(bytes);
        }
    }
    // The servers' log messages are log events of `claij_mcp` (`main` lets them through).
    if let Some(level) = common.mcp_log_level {
        start = start.log_level(level);
    }
    let started = start
        .hooks(hooks)
        .run(claij.settings(), |name| std::env::var(name));
    started.await.map_err(mcp_error)
}
