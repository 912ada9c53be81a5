//! MCP servers for an application (feature `mcp`): the configured servers started
//! ([`start_configured`], [`start_services`], [`Start`]: the settings' MCP part, its `${VAR}`
//! secrets, the tokens `claij mcp login` stored), listed ([`list`]) and called ([`call`]), OAuth
//! logins and their token store ([`login`]), resources read ([`resources`]) and prompts filled in
//! ([`prompts`]), what servers are offered when they ask for sampling or elicitation ([`offer`]), what is answered when a server asks the user
//! something ([`elicitation`]), a chat over the servers ([`chat`]), SIGINT and SIGTERM stopping
//! them ([`signal`]), and a configuration for the servers `cargo xtask mcp-servers` installs
//! ([`servers`]). The MCP client itself is [`claij_mcp`].
//!
//! ```
//! use claij::mcp::{Error, ErrorKind};
//! use claij_mcp::McpConfig;
//!
//! let mut config = McpConfig::from_json(
//!     r#"{"mcpServers": {"secure": {"url": "http://127.0.0.1:1/mcp",
//!         "oauth": {"clientId": "claij", "clientSecret": "${SECURE_SECRET}"}}}}"#,
//! )
//! .unwrap();
//! // The secret comes from the environment (here a variable nobody set): an error at its pointer.
//! let error = claij::mcp::login::expand_secrets(&mut config, |_| Err(std::env::VarError::NotPresent))
//!     .unwrap_err();
//! assert_eq!(error.kind(), ErrorKind::UnsetSecret);
//! assert!(error.is_config());
//! assert_eq!(
//!     error.to_string(),
//!     "/mcpServers/secure/oauth/clientSecret: the environment variable SECURE_SECRET is not set"
//! );
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use claij_mcp::{
    ClientOptions, Hooks, LogLevel, McpConfig, Project, ServerInfo, Services, ToolInfo,
};
use serde_json::{Value, json};

use crate::settings::Settings;

/// The MCP client, its configuration, services, interceptor and FSM services under this module:
/// [`claij_mcp`].
pub use claij_mcp as protocol;

pub mod call;
pub mod chat;
pub mod elicitation;
pub mod login;
pub mod offer;
pub mod prompts;
pub mod resources;
pub mod servers;
pub mod signal;

/// Why an MCP operation of this module failed. The MCP client's own errors are
/// [`Error::Mcp`], whose predicates ([`Error::is_timeout`], [`Error::is_auth`]...) this error
/// forwards.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The MCP client failed: a server would not start or answer, refused, or asked for an
    /// authorization nobody gave.
    #[error(transparent)]
    Mcp(#[from] claij_mcp::Error),
    /// The settings have no MCP servers ([`Settings::mcp_servers`]'s error).
    #[error(transparent)]
    NoServers(Box<dyn std::error::Error + Send + Sync>),
    /// The settings cannot give what was asked (a project they do not have: the settings' error).
    #[error(transparent)]
    Settings(Box<dyn std::error::Error + Send + Sync>),
    /// A `${VAR}` client secret whose variable is not set.
    #[error("{}{pointer}: the environment variable {variable} is not set", .file.as_ref().map_or_else(String::new, |file| format!("{}: ", file.display())))]
    UnsetSecret {
        /// The file of the configuration, when it came from one.
        file: Option<PathBuf>,
        /// The JSON pointer of the secret (`/mcpServers/NAME/oauth/clientSecret`).
        pointer: String,
        /// The variable.
        variable: String,
    },
    /// A server the configuration does not name.
    #[error("no mcp server `{server}` in {}; configured: {}", .file.as_ref().map_or_else(|| "the configuration".to_owned(), |file| file.display().to_string()), .known.join(", "))]
    UnknownServer {
        /// The file of the configuration, when it came from one.
        file: Option<PathBuf>,
        /// The name asked for.
        server: String,
        /// The names the configuration has.
        known: Vec<String>,
    },
    /// A file or a port: what was being done, and the system's error.
    #[error("{what}")]
    Io {
        /// What failed (`cannot read FILE`...).
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// The servers of [`servers`] are not installed in `dir`.
    #[error("no MCP servers installed in {}: run `{}` in the claij repository", .dir.display(), servers::INSTALL)]
    NotInstalled {
        /// The cache looked in.
        dir: PathBuf,
    },
    /// A selected server's entry point is missing from the cache.
    #[error(
        "{} is missing: the MCP servers in {} are not completely installed; run `{}` in the claij repository",
        .path.display(),
        .dir.display(),
        servers::INSTALL
    )]
    Incomplete {
        /// The missing file.
        path: PathBuf,
        /// The cache.
        dir: PathBuf,
    },
    /// An npm server is selected and `node` is not on PATH.
    #[error("node is not on PATH: the npm servers ({package}) run with it")]
    NoNode {
        /// The npm package that needs it.
        package: &'static str,
    },
    /// A resource read is larger than the limit ([`resources::read`]'s `max_bytes`).
    #[error(
        "`{uri}` of mcp server `{server}` is {bytes} bytes, over the limit of {limit} bytes (max_resource_bytes)"
    )]
    ResourceTooLarge {
        /// The server.
        server: String,
        /// The resource.
        uri: String,
        /// Its size (text, or binary decoded), or more.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// A server's answer that does not hold what MCP says it holds.
    #[error("mcp server `{server}`: {what}")]
    Malformed {
        /// The server.
        server: String,
        /// What is wrong, and where.
        what: String,
    },
    /// A prompt the server does not list.
    #[error("mcp server `{server}` has no prompt `{prompt}`; it has: {}", if .known.is_empty() { "none".to_owned() } else { .known.join(", ") })]
    UnknownPrompt {
        /// The server.
        server: String,
        /// The prompt asked for.
        prompt: String,
        /// The prompts it lists.
        known: Vec<String>,
    },
    /// What the servers are offered cannot be made ([`offer::Offer::hooks`]).
    #[error(transparent)]
    Offer(#[from] offer::Error),
    /// A prompt's argument missing, or one it does not take ([`prompts::check`]).
    #[error("prompt `{prompt}` {message}")]
    PromptArgument {
        /// The prompt, as `server.name`.
        prompt: String,
        /// What is wrong, and what the prompt takes.
        message: String,
    },
}

/// What kind of failure an [`Error`] is, to match on without its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Mcp`] (its own kind: [`claij_mcp::Error::kind`]).
    Mcp,
    /// [`Error::NoServers`].
    NoServers,
    /// [`Error::Settings`].
    Settings,
    /// [`Error::UnsetSecret`].
    UnsetSecret,
    /// [`Error::UnknownServer`].
    UnknownServer,
    /// [`Error::Io`].
    Io,
    /// [`Error::NotInstalled`].
    NotInstalled,
    /// [`Error::Incomplete`].
    Incomplete,
    /// [`Error::NoNode`].
    NoNode,
    /// [`Error::ResourceTooLarge`].
    ResourceTooLarge,
    /// [`Error::Malformed`].
    Malformed,
    /// [`Error::UnknownPrompt`].
    UnknownPrompt,
    /// [`Error::PromptArgument`].
    PromptArgument,
    /// [`Error::Offer`].
    Offer,
}

impl Error {
    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Mcp(_) => ErrorKind::Mcp,
            Error::NoServers(_) => ErrorKind::NoServers,
            Error::Settings(_) => ErrorKind::Settings,
            Error::UnsetSecret { .. } => ErrorKind::UnsetSecret,
            Error::UnknownServer { .. } => ErrorKind::UnknownServer,
            Error::Io { .. } => ErrorKind::Io,
            Error::NotInstalled { .. } => ErrorKind::NotInstalled,
            Error::Incomplete { .. } => ErrorKind::Incomplete,
            Error::NoNode { .. } => ErrorKind::NoNode,
            Error::ResourceTooLarge { .. } => ErrorKind::ResourceTooLarge,
            Error::Malformed { .. } => ErrorKind::Malformed,
            Error::UnknownPrompt { .. } => ErrorKind::UnknownPrompt,
            Error::PromptArgument { .. } => ErrorKind::PromptArgument,
            Error::Offer(_) => ErrorKind::Offer,
        }
    }

    /// The MCP client's error, when it failed ([`Error::Mcp`]).
    pub fn mcp(&self) -> Option<&claij_mcp::Error> {
        match self {
            Error::Mcp(error) => Some(error),
            _ => None,
        }
    }

    /// Whether a request got no answer in time ([`claij_mcp::Error::is_timeout`]).
    pub fn is_timeout(&self) -> bool {
        self.mcp().is_some_and(claij_mcp::Error::is_timeout)
    }

    /// Whether a server could not be reached or is gone ([`claij_mcp::Error::is_connect`]).
    pub fn is_connect(&self) -> bool {
        self.mcp().is_some_and(claij_mcp::Error::is_connect)
    }

    /// Whether a server needs an authorization nobody gave ([`claij_mcp::Error::is_auth`]): log
    /// in ([`login::Login`]).
    pub fn is_auth(&self) -> bool {
        self.mcp().is_some_and(claij_mcp::Error::is_auth)
    }

    /// Whether the configuration (or the installed set it is built from) is wrong: an unset
    /// secret, an unknown server, servers not installed, and the MCP client's
    /// ([`claij_mcp::Error::is_config`]).
    pub fn is_config(&self) -> bool {
        match self {
            Error::Mcp(error) => error.is_config(),
            Error::NoServers(_)
            | Error::Settings(_)
            | Error::UnsetSecret { .. }
            | Error::UnknownServer { .. }
            | Error::NotInstalled { .. }
            | Error::Incomplete { .. }
            | Error::NoNode { .. }
            | Error::Offer(_) => true,
            Error::Io { .. }
            | Error::ResourceTooLarge { .. }
            | Error::Malformed { .. }
            | Error::UnknownPrompt { .. }
            | Error::PromptArgument { .. } => false,
        }
    }

    /// The same error, said to be in `file` (the configuration's, for an unset secret or an
    /// unknown server; [`Settings::mcp_path`] is the settings' file).
    #[must_use]
    pub fn in_file(self, file: Option<&std::path::Path>) -> Self {
        let file = file.map(std::path::Path::to_path_buf);
        match self {
            Error::UnsetSecret {
                pointer, variable, ..
            } => Error::UnsetSecret {
                file,
                pointer,
                variable,
            },
            Error::UnknownServer { server, known, .. } => Error::UnknownServer {
                file,
                server,
                known,
            },
            other => other,
        }
    }

    /// The error as a command says it, on one line, each cause after a `: `: what needs the
    /// servers first when there are none (`what`: `--interceptors mcp needs MCP servers: ...`), how
    /// to log in for a server that asks for authorization, `the configuration: ` before a secret
    /// unset in a configuration without a file.
    #[must_use]
    pub fn said(&self, what: Option<&str>) -> String {
        let mut text = match self {
            Error::Mcp(claij_mcp::Error::Unauthorized { server }) => {
                return format!("{server} needs authorization: run `claij mcp login {server}`");
            }
            Error::NoServers(_) if let Some(what) = what => format!("{what} needs MCP servers: "),
            Error::UnsetSecret { file: None, .. } => "the configuration: ".to_owned(),
            _ => String::new(),
        };
        text.push_str(&self.to_string());
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            let said = cause.to_string();
            if !text.ends_with(&said) {
                text.push_str(&format!(": {said}"));
            }
            source = cause.source();
        }
        crate::one_line(&text)
    }

    /// An [`Error::Io`].
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}

/// Starts the servers of `config` (the settings' MCP part, or a selection of it): the
/// configuration's hooks over `hooks`, OAuth with the tokens `claij mcp login` stored in the
/// settings' data directory ([`login::stored`]); the entries' `${VAR}` client secrets are
/// expanded first, through `var` (`std::env::var` reads the environment).
///
/// # Errors
///
/// A secret's variable is not set ([`Error::UnsetSecret`], naming the settings' file); a server
/// that does not start, or needs an authorization nobody gave ([`Error::Mcp`]: `is_auth()`).
pub async fn start_services(
    config: &mut McpConfig,
    hooks: Hooks,
    settings: &Settings,
    var: impl Fn(&str) -> Result<String, std::env::VarError>,
) -> Result<Services, Error> {
    login::expand_secrets(config, var).map_err(|e| e.in_file(settings.mcp_path.as_deref()))?;
    let tokens = settings.data_dir.as_deref().map(login::token_dir);
    let options = ClientOptions::default()
        .with_hooks(config.hooks(hooks))
        .with_oauth(login::stored(tokens.as_deref()));
    Ok(Services::connect(config, options).await?)
}

/// The settings' MCP servers (only those `project` allows, when one is named), started
/// ([`start_services`]) with `hooks` (what [`offer::Offer::hooks`] makes: the MCP interceptor's
/// servers are offered what `claij mcp`'s are) and seen through the project.
///
/// ```no_run
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let settings = claij::settings::Settings::from_env()?;
/// let services =
///     claij::mcp::start_configured(&settings, Some("docs"), Default::default(), |name| {
///         std::env::var(name)
///     })
///     .await?;
/// for tool in services.tools() {
///     println!("{}", tool.qualified());
/// }
/// services.close().await;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// No MCP servers ([`Error::NoServers`]) or no such project ([`Error::Settings`]), each naming
/// the file read; what [`start_services`] returns.
pub async fn start_configured(
    settings: &Settings,
    project: Option<&str>,
    hooks: Hooks,
    var: impl Fn(&str) -> Result<String, std::env::VarError>,
) -> Result<Services, Error> {
    let mut selected = servers(settings)?.clone();
    let project = project_of(settings, project)?;
    if let Some(project) = &project {
        selected
            .servers
            .retain(|name, _| project.services.contains(name));
    }
    let services = start_services(&mut selected, hooks, settings, var).await?;
    Ok(match project {
        Some(project) => services.with_project(project),
        None => services,
    })
}

/// The settings' MCP servers.
fn servers(settings: &Settings) -> Result<&McpConfig, Error> {
    settings
        .mcp_servers()
        .map_err(|e| Error::NoServers(e.into()))
}

/// The settings' project `name`, when one is named.
fn project_of(settings: &Settings, name: Option<&str>) -> Result<Option<Project>, Error> {
    let Some(name) = name else {
        return Ok(None);
    };
    match settings.mcp_project(name) {
        Ok(project) => Ok(Some(project.clone())),
        Err(e) => Err(Error::Settings(e.into())),
    }
}

/// Which of the settings' MCP servers to start, and how: what `claij mcp list`, `call` and
/// `chat` start. Unlike [`start_configured`], every configured entry's `${VAR}` secrets are
/// expanded (an unset one is an error whatever is selected), and the clients get the hooks and
/// log level given here.
///
/// ```no_run
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let settings = claij::settings::Settings::from_env()?;
/// // Only the server `fs`, whose messages may be up to 1 MiB.
/// let services = claij::mcp::Start::new()
///     .server("fs")
///     .max_message_bytes(1 << 20)
///     .run(&settings, |name| std::env::var(name))
///     .await?;
/// for listed in claij::mcp::list(&services) {
///     print!("{listed}");
/// }
/// services.close().await;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Start {
    project: Option<String>,
    server: Option<String>,
    max_message_bytes: Option<usize>,
    hooks: Hooks,
    log_level: Option<LogLevel>,
}

impl Start {
    /// Every configured server, no project, no hooks.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Only the servers and tools the settings' project `name` allows.
    #[must_use]
    pub fn project(mut self, name: impl Into<String>) -> Self {
        self.project = Some(name.into());
        self
    }

    /// Only the server `name` (the project, if any, still decides which of its tools are
    /// allowed).
    #[must_use]
    pub fn server(mut self, name: impl Into<String>) -> Self {
        self.server = Some(name.into());
        self
    }

    /// The largest message accepted from the server chosen with [`Start::server`] (ignored
    /// without one: each entry's own `maxMessageBytes` holds).
    #[must_use]
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = Some(bytes);
        self
    }

    /// The program's hooks (sampler, elicitor...), under the configuration's own.
    #[must_use]
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Asks the servers for their log messages at `level` and above (log events of `claij_mcp`).
    #[must_use]
    pub fn log_level(mut self, level: LogLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Starts the servers, with the tokens `claij mcp login` stored in the settings' data
    /// directory; `var` gives the secrets' variables (`std::env::var` reads the environment).
    ///
    /// # Errors
    ///
    /// No MCP servers ([`Error::NoServers`]), no such project ([`Error::Settings`]), no such
    /// server ([`Error::UnknownServer`]) or an unset secret ([`Error::UnsetSecret`]), each naming
    /// the settings' file; a server that does not start, or needs an authorization nobody gave
    /// ([`Error::Mcp`]: `is_auth()`).
    pub async fn run(
        self,
        settings: &Settings,
        var: impl Fn(&str) -> Result<String, std::env::VarError>,
    ) -> Result<Services, Error> {
        let file = settings.mcp_path.as_deref();
        let mut config = servers(settings)?.clone();
        login::expand_secrets(&mut config, var).map_err(|e| e.in_file(file))?;
        let project = project_of(settings, self.project.as_deref())?;
        if let Some(server) = &self.server {
            if !config.servers.contains_key(server) {
                let known = config.servers.keys().cloned().collect();
                let server = server.clone();
                return Err(Error::UnknownServer {
                    file: None,
                    server,
                    known,
                }
                .in_file(file));
            }
            config.servers.retain(|name, _| name == server);
            if let Some(bytes) = self.max_message_bytes {
                config
                    .servers
                    .values_mut()
                    .for_each(|entry| entry.set_max_message_bytes(bytes));
            }
        } else if let Some(project) = &project {
            config
                .servers
                .retain(|name, _| project.services.contains(name));
        }
        let tokens = settings.data_dir.as_deref().map(login::token_dir);
        let mut options = ClientOptions::default()
            .with_hooks(config.hooks(self.hooks))
            .with_oauth(login::stored(tokens.as_deref()));
        if let Some(level) = self.log_level {
            options = options.with_log_level(level);
        }
        let services = Services::connect(&config, options).await?;
        Ok(match project {
            Some(project) => services.with_project(project),
            None => services,
        })
    }
}

/// What `claij mcp list|resources|prompts` print of `listed` (a server each): each one's text, or
/// with `json` a pretty JSON array of each one's `to_json`, ending with a line ending.
#[must_use]
pub fn listing<T: std::fmt::Display>(listed: &[T], json: bool, to_json: fn(&T) -> Value) -> String {
    match json {
        true => pretty(&Value::Array(listed.iter().map(to_json).collect())),
        false => listed.iter().map(ToString::to_string).collect(),
    }
}

/// `value` as pretty JSON and a line ending (what `claij mcp ... --json` prints).
#[must_use]
pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}

/// One started server as `claij mcp list` shows it: who it says it is, and its tools.
/// `Display` is the text listing (a line for the server, one per tool).
#[derive(Debug, Clone)]
pub struct Listed {
    /// The configured name.
    pub server: String,
    /// Who the server says it is.
    pub info: ServerInfo,
    /// Its tools (those the project allows, when there is one).
    pub tools: Vec<Arc<ToolInfo>>,
}

/// Each server of `services`, in name order, with its tools.
#[must_use]
pub fn list(services: &Services) -> Vec<Listed> {
    let tools = services.tools();
    services
        .names()
        .into_iter()
        .filter_map(|name| {
            let info = services.client(name)?.server_info();
            let tools = tools.iter().filter(|t| t.server == name).cloned().collect();
            Some(Listed {
                server: name.to_owned(),
                info,
                tools,
            })
        })
        .collect()
}

impl Listed {
    /// The JSON listing: the server, its protocol version, implementation and version, and its
    /// tools with their schemas.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let info = &self.info;
        let tools = self
            .tools
            .iter()
            .map(|t| serde_json::to_value(&**t).unwrap_or(Value::Null));
        json!({
            "server": self.server,
            "protocol_version": info.protocol_version,
            "implementation": info.implementation,
            "version": info.version,
            "tools": tools.collect::<Vec<_>>(),
        })
    }
}

impl std::fmt::Display for Listed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (info, count) = (&self.info, self.tools.len());
        writeln!(
            f,
            "{}: {} {} (protocol {}), {count} tool{}",
            self.server,
            info.implementation.as_deref().unwrap_or("?"),
            info.version.as_deref().unwrap_or("?"),
            info.protocol_version,
            if count == 1 { "" } else { "s" }
        )?;
        for tool in &self.tools {
            let description = tool.description.as_deref().unwrap_or("");
            let first = description.lines().next().unwrap_or("");
            writeln!(f, "  {}  {}", tool.qualified(), first.trim())?;
        }
        Ok(())
    }
}

/// An MCP log level (`claij mcp --mcp-log-level`): one of MCP's level names, in any case.
///
/// # Errors
///
/// Another name: the levels.
pub fn log_level(text: &str) -> Result<LogLevel, String> {
    text.trim().parse().map_err(|_| {
        let names: Vec<&str> = LogLevel::ALL.iter().map(|level| level.as_str()).collect();
        format!("expected one of {}", names.join(", "))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_log_level_is_one_of_mcps_in_any_case() {
        assert_eq!(log_level(" Debug "), Ok(LogLevel::Debug));
        let err = log_level("loud").unwrap_err();
        assert!(err.starts_with("expected one of debug, "), "{err}");
    }

    /// Every variant's kind and whether it is the configuration's fault (an exhaustive match: a
    /// new variant must be classified here).
    #[test]
    fn each_variant_is_classified() {
        let io = || std::io::Error::other("x");
        let cases = [
            (
                Error::Mcp(claij_mcp::Error::Unauthorized {
                    server: "s".to_owned(),
                }),
                ErrorKind::Mcp,
                false,
            ),
            (
                Error::NoServers("no MCP servers".into()),
                ErrorKind::NoServers,
                true,
            ),
            (
                Error::Settings("no such project".into()),
                ErrorKind::Settings,
                true,
            ),
            (
                Error::UnsetSecret {
                    file: None,
                    pointer: "/p".to_owned(),
                    variable: "V".to_owned(),
                },
                ErrorKind::UnsetSecret,
                true,
            ),
            (
                Error::UnknownServer {
                    file: None,
                    server: "s".to_owned(),
                    known: vec!["a".to_owned()],
                },
                ErrorKind::UnknownServer,
                true,
            ),
            (Error::io("cannot read f", io()), ErrorKind::Io, false),
            (
                Error::NotInstalled { dir: "/d".into() },
                ErrorKind::NotInstalled,
                true,
            ),
            (
                Error::Incomplete {
                    path: "/d/f".into(),
                    dir: "/d".into(),
                },
                ErrorKind::Incomplete,
                true,
            ),
            (Error::NoNode { package: "p" }, ErrorKind::NoNode, true),
            (
                Error::ResourceTooLarge {
                    server: "s".to_owned(),
                    uri: "u".to_owned(),
                    bytes: 2,
                    limit: 1,
                },
                ErrorKind::ResourceTooLarge,
                false,
            ),
            (
                Error::Malformed {
                    server: "s".to_owned(),
                    what: "w".to_owned(),
                },
                ErrorKind::Malformed,
                false,
            ),
            (
                Error::UnknownPrompt {
                    server: "s".to_owned(),
                    prompt: "p".to_owned(),
                    known: Vec::new(),
                },
                ErrorKind::UnknownPrompt,
                false,
            ),
            (
                Error::PromptArgument {
                    prompt: "s.p".to_owned(),
                    message: "m".to_owned(),
                },
                ErrorKind::PromptArgument,
                false,
            ),
            (
                Error::Offer(offer::Error::NoTerminal),
                ErrorKind::Offer,
                true,
            ),
        ];
        for (error, kind, config) in &cases {
            assert_eq!(error.kind(), *kind, "{error}");
            assert_eq!(error.is_config(), *config, "{error}");
            match error {
                Error::Mcp(_)
                | Error::NoServers(_)
                | Error::Settings(_)
                | Error::UnsetSecret { .. }
                | Error::UnknownServer { .. }
                | Error::Io { .. }
                | Error::NotInstalled { .. }
                | Error::Incomplete { .. }
                | Error::NoNode { .. }
                | Error::ResourceTooLarge { .. }
                | Error::Malformed { .. }
                | Error::UnknownPrompt { .. }
                | Error::PromptArgument { .. }
                | Error::Offer(_) => {}
            }
        }
        // The client's predicates are forwarded.
        assert!(cases[0].0.is_auth());
        assert!(!cases[0].0.is_timeout() && !cases[0].0.is_connect());
        assert!(!cases[3].0.is_auth());
        // An unset secret says in which file, when there is one.
        let unset = |file: Option<&std::path::Path>| {
            Error::UnsetSecret {
                file: None,
                pointer: "/mcpServers/a/oauth/clientSecret".to_owned(),
                variable: "V".to_owned(),
            }
            .in_file(file)
            .to_string()
        };
        assert_eq!(
            unset(Some("/etc/claij.toml".as_ref())),
            "/etc/claij.toml: /mcpServers/a/oauth/clientSecret: the environment variable V is not set"
        );
        assert_eq!(
            unset(None),
            "/mcpServers/a/oauth/clientSecret: the environment variable V is not set"
        );
    }

    /// What `Start::run` refuses before starting anything: each error names the settings' file.
    #[tokio::test]
    async fn a_start_refuses_an_unknown_server_a_missing_project_and_an_unset_secret() {
        let unset = |_: &str| Err(std::env::VarError::NotPresent);
        let mut settings = Settings::builder().build().unwrap();
        let none = Start::new().run(&settings, unset).await.unwrap_err();
        assert_eq!(none.kind(), ErrorKind::NoServers, "{none}");
        settings.mcp_path = Some("/etc/claij/.mcp.json".into());
        settings.mcp = Some(
            McpConfig::from_json(
                r#"{"mcpServers": {"a": {"command": "/nonexistent/a"},
                    "b": {"command": "/nonexistent/b"}}}"#,
            )
            .unwrap(),
        );
        let unknown = Start::new().server("c").run(&settings, unset).await;
        assert_eq!(
            unknown.unwrap_err().to_string(),
            "no mcp server `c` in /etc/claij/.mcp.json; configured: a, b"
        );
        let project = Start::new().project("p").run(&settings, unset).await;
        assert_eq!(project.unwrap_err().kind(), ErrorKind::Settings);
        // A secret of a server that is not selected is still the configuration's error.
        settings.mcp = Some(
            McpConfig::from_json(
                r#"{"mcpServers": {"a": {"command": "/nonexistent/a"},
                    "s": {"url": "http://127.0.0.1:1/mcp",
                          "oauth": {"clientId": "c", "clientSecret": "${SECRET}"}}}}"#,
            )
            .unwrap(),
        );
        // The secrets are the first thing checked after the servers, before the project.
        let both = Start::new().project("p").run(&settings, unset).await;
        assert_eq!(both.unwrap_err().kind(), ErrorKind::UnsetSecret);
        let secret = Start::new().server("a").run(&settings, unset).await;
        assert_eq!(
            secret.unwrap_err().to_string(),
            "/etc/claij/.mcp.json: /mcpServers/s/oauth/clientSecret: the environment variable \
             SECRET is not set"
        );
    }
}
