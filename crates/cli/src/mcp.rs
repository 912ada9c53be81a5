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

use anyhow::{Context as _, Result, anyhow, bail};
use claij_mcp::{
    BackendSampler, CallFailure, CallOutcome, ClientOptions, Elicitor, Hooks, LogLevel, McpConfig,
    Services,
};
use serde_json::{Value, json};

use crate::exit::Status;
use claij::settings::Settings;

mod chat;
mod elicitation;
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
    Call {
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
    },
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
            Command::List { .. } | Command::Call { .. } | Command::Chat(_) | Command::Login(_) => {
                None
            }
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
            Command::List { common, .. } | Command::Call { common, .. } => common.mcp_log_level,
            Command::Chat(args) => args.common.mcp_log_level,
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
    #[arg(long, value_enum, value_name = "POLICY")]
    elicitation: Option<elicitation::Policy>,
    /// Ask the servers for their log messages at LEVEL and above (debug, info, notice, warning,
    /// error, critical, alert, emergency) and show each on stderr as a log line (its level, `server`,
    /// `level`, `logger`, `message`).
    #[arg(long, value_name = "LEVEL", value_parser = log_level)]
    mcp_log_level: Option<LogLevel>,
}

/// `--mcp-log-level`: one of MCP's level names, in any case.
fn log_level(text: &str) -> Result<LogLevel, String> {
    text.trim().parse().map_err(|_| {
        let names: Vec<&str> = LogLevel::ALL.iter().map(|level| level.as_str()).collect();
        format!("expected one of {}", names.join(", "))
    })
}

impl Common {
    /// The elicitor `--elicitation` asks for, for `list` and `call`: `None` declines.
    fn elicitor(&self) -> Result<Option<Arc<dyn Elicitor>>> {
        Ok(match self.elicitation {
            None | Some(elicitation::Policy::Decline) => None,
            Some(elicitation::Policy::Defaults) => Some(Arc::new(elicitation::Defaults)),
            Some(elicitation::Policy::Ask) => {
                if !std::io::stdin().is_terminal() {
                    bail!("--elicitation ask needs a terminal on stdin: use defaults or decline");
                }
                Some(Arc::new(elicitation::Terminal))
            }
        })
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
            Command::Call {
                tool,
                args,
                timeout,
                max_message_bytes,
                common,
                json,
            } => {
                let call = Call {
                    tool,
                    args,
                    timeout: *timeout,
                    max_message_bytes: *max_message_bytes,
                    json: *json,
                };
                call.run(common, front, &mut signals).await
            }
            Command::Chat(args) => chat::run(args, front, &mut signals).await,
            Command::Login(args) => login::login(args, front, &mut signals).await,
            Command::Logout(args) => login::logout(args),
            Command::Servers(args) => servers::run(args),
        }
    })
}

/// SIGINT and SIGTERM, listened for from the start, so none is missed while servers start.
struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    #[cfg(unix)]
    fn new() -> Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?,
            terminate: signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?,
        })
    }

    #[cfg(not(unix))]
    fn new() -> Result<Self> {
        Ok(Self {})
    }

    /// The next signal: the status to exit with.
    #[cfg(unix)]
    async fn recv(&mut self) -> Status {
        tokio::select! {
            _ = self.interrupt.recv() => Status::Signalled { name: "SIGINT", code: 130 },
            _ = self.terminate.recv() => Status::Signalled { name: "SIGTERM", code: 143 },
        }
    }

    #[cfg(not(unix))]
    async fn recv(&mut self) -> Status {
        let _ = tokio::signal::ctrl_c().await;
        Status::Signalled {
            name: "SIGINT",
            code: 130,
        }
    }
}

/// Runs `work` with the servers; a signal first stops them (closed, killed after a second).
async fn or_signal<T>(
    services: &Services,
    signals: &mut Signals,
    work: impl Future<Output = T>,
) -> Result<T, Status> {
    let signalled = tokio::select! {
        done = work => return Ok(done),
        status = signals.recv() => status,
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), services.close()).await;
    Err(signalled)
}

async fn list(
    common: &Common,
    json: bool,
    front: &crate::front::Front,
    signals: &mut Signals,
) -> Result<Status> {
    let connected = tokio::select! {
        connected = connect(common, None, None, common.elicitor()?, front) => connected?,
        status = signals.recv() => return Ok(status),
    };
    let services = connected;
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
    std::io::stdout().write_all(&out)?;
    Ok(Status::Ok)
}

/// One `claij mcp call`.
struct Call<'a> {
    tool: &'a str,
    args: &'a str,
    timeout: Option<Duration>,
    max_message_bytes: Option<usize>,
    json: bool,
}

impl Call<'_> {
    async fn run(
        &self,
        common: &Common,
        front: &crate::front::Front,
        signals: &mut Signals,
    ) -> Result<Status> {
        let args: Value =
            serde_json::from_str(self.args).map_err(|e| anyhow!("--args is not JSON: {e}"))?;
        if !args.is_object() {
            bail!("--args must be a JSON object");
        }
        let tool = self.tool;
        let (server, name) = tool
            .split_once('.')
            .ok_or_else(|| anyhow!("`{tool}` is not `server.tool`"))?;
        // Only the named server is started.
        let connected = tokio::select! {
            connected = connect(common, Some(server), self.max_message_bytes, common.elicitor()?, front) => connected?,
            status = signals.recv() => return Ok(status),
        };
        let services = connected;
        let call = async {
            match services.client(server) {
                Some(client) if services.allows(server, name) => {
                    client.call_with_timeout(name, args, self.timeout).await
                }
                _ => services.call(server, name, args).await,
            }
        };
        let result = match or_signal(&services, signals, call).await {
            Ok(result) => result,
            Err(status) => return Ok(status),
        };
        services.close().await;
        let outcome = result?;
        self.print(&outcome)?;
        Ok(if outcome.is_error {
            Status::Invalid
        } else {
            Status::Ok
        })
    }

    /// The result on stdout; when the structured result breaks the tool's outputSchema, what the
    /// tool returned still goes to stdout and the violations, on one line, to stderr.
    fn print(&self, outcome: &CallOutcome) -> Result<()> {
        let mut out = std::io::stdout().lock();
        let invalid_output = match &outcome.failure {
            Some(CallFailure::InvalidOutput { violations }) => Some(violations),
            _ => None,
        };
        if self.json {
            writeln!(out, "{}", serde_json::to_string_pretty(outcome)?)?;
        } else {
            out.write_all(shown(outcome, invalid_output.is_some()).as_bytes())?;
        }
        out.flush()?;
        if let Some(violations) = invalid_output {
            let each: Vec<String> = violations
                .iter()
                .map(|v| {
                    let at = if v.instance_pointer.is_empty() {
                        "(root)"
                    } else {
                        v.instance_pointer.as_str()
                    };
                    format!("{at}: {} [{}]", v.message, v.schema_pointer)
                })
                .collect();
            let line = format!(
                "invalid: the structured result of `{}` breaks its outputSchema: {}",
                self.tool,
                each.join("; ")
            );
            writeln!(std::io::stderr(), "{}", crate::exit::one_line(&line))?;
        }
        Ok(())
    }
}

/// What `claij mcp call` prints for `outcome` without `--json`: each content block (text as it
/// is, others described), a line each; the structured result (pretty JSON) only when there is no
/// content, or when it breaks the tool's outputSchema (`invalid_output`: the violations on stderr
/// point into it, and the last block is claij's explanation, not the tool's). A tool that returns
/// structured content also returns it as text (MCP asks it to), so printing both would say it
/// twice.
fn shown(outcome: &CallOutcome, invalid_output: bool) -> String {
    let blocks = match invalid_output {
        true => &outcome.content[..outcome.content.len().saturating_sub(1)],
        false => &outcome.content[..],
    };
    let mut text = String::new();
    for block in blocks {
        text.push_str(&block.describe());
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    if let Some(structured) = &outcome.structured
        && (blocks.is_empty() || invalid_output)
    {
        text.push_str(&serde_json::to_string_pretty(structured).unwrap_or_default());
        text.push('\n');
    }
    if text.is_empty() {
        // A result with nothing in it still ends with a line, as every result does.
        text.push('\n');
    }
    text
}

/// The configuration's MCP servers (only those `project` allows, when one is named), started and
/// seen through the project by the front door ([`claij::mcp::start_configured`]): `ask
/// --interceptors mcp` (`what` names it in errors) and `chat`.
///
/// # Errors
///
/// No MCP servers, or no such project, each naming the file read; a server that does not start
/// (one that needs authorization says how to give it).
pub(crate) async fn start_configured(
    settings: &Settings,
    project: Option<&str>,
    what: &str,
) -> Result<Services> {
    claij::mcp::start_configured(settings, project, |name| std::env::var(name))
        .await
        .map_err(|error| start_error(error, what))
}

/// A start's error in the command's words: what needs the servers (`what`), how to log in, the
/// file of an unset secret.
pub(crate) fn start_error(error: claij::mcp::Error, what: &str) -> anyhow::Error {
    use claij::mcp::Error;
    match error {
        Error::NoServers(source) => {
            anyhow::Error::from_boxed(source).context(format!("{what} needs MCP servers"))
        }
        Error::Mcp(error) => login_hint(error),
        error @ Error::UnsetSecret { file: None, .. } => {
            anyhow::Error::new(error).context("the configuration")
        }
        other => other.into(),
    }
}

/// The file the MCP servers come from, for errors.
fn mcp_file(settings: &Settings) -> String {
    settings.mcp_path.as_ref().map_or_else(
        || "the configuration".to_owned(),
        |p| p.display().to_string(),
    )
}

/// The configuration's MCP servers, and the file they come from (for errors).
fn configured(front: &crate::front::Front) -> Result<(McpConfig, String)> {
    let settings = front.settings()?;
    Ok((settings.mcp_servers()?.clone(), mcp_file(settings)))
}

/// A start's error; a server that needs authorization says how to give it.
fn login_hint(err: claij_mcp::Error) -> anyhow::Error {
    match err {
        claij_mcp::Error::Unauthorized { server } => {
            anyhow!("{server} needs authorization: run `claij mcp login {server}`")
        }
        other => other.into(),
    }
}

/// Reads the configuration and starts its servers (only `only`, when given), seen through the
/// project when one is named; `elicitor` takes the servers' questions (without it they are
/// declined). Servers that ask for OAuth 2.1 get the tokens `claij mcp login` stored.
async fn connect(
    common: &Common,
    only: Option<&str>,
    max_message_bytes: Option<usize>,
    elicitor: Option<Arc<dyn Elicitor>>,
    front: &crate::front::Front,
) -> Result<Services> {
    let claij = front.claij()?;
    let settings = claij.settings();
    let mut config = settings.mcp_servers()?.clone();
    let file = mcp_file(settings);
    claij::mcp::login::expand_secrets(&mut config, |name| std::env::var(name))
        .context(file.clone())?;
    let project = match &common.project {
        None => None,
        Some(name) => Some(settings.mcp_project(name)?.clone()),
    };
    let mut selected = config.clone();
    if let Some(server) = only {
        if !config.servers.contains_key(server) {
            let known: Vec<&str> = config.servers.keys().map(String::as_str).collect();
            bail!(
                "no mcp server `{server}` in {file}; configured: {}",
                known.join(", ")
            );
        }
        selected.servers.retain(|name, _| name == server);
        if let Some(bytes) = max_message_bytes {
            for config in selected.servers.values_mut() {
                config.set_max_message_bytes(bytes);
            }
        }
    } else if let Some(project) = &project {
        selected
            .servers
            .retain(|name, _| project.services.contains(name));
    }
    let mut hooks = Hooks::default();
    if let Some(llm) = &common.sampling_llm {
        let opened = claij::model::open(Some(llm.as_str()), None, claij)?;
        hooks = hooks.with_sampler(BackendSampler::new(opened.backend, opened.model));
    }
    hooks.elicitor = elicitor;
    // The servers' log messages are log events of `claij_mcp` (`main` lets them through).
    let mut options = ClientOptions::default()
        .with_hooks(config.hooks(hooks))
        .with_oauth(claij::mcp::login::stored(login::token_dir().as_deref()));
    if let Some(level) = common.mcp_log_level {
        options = options.with_log_level(level);
    }
    let services = Services::connect(&selected, options)
        .await
        .map_err(login_hint)?;
    Ok(match project {
        Some(project) => services.with_project(project),
        None => services,
    })
}
