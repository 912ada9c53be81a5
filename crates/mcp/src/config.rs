//! The configuration file: servers in the common `mcpServers` shape, and projects.
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "fs":   {"command": "node", "args": ["server-filesystem/dist/index.js", "/srv/docs"]},
//!     "time": {"command": "mcp-server-time", "env": {"TZ": "UTC"}, "timeout": 10},
//!     "web":  {"url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer ..."}}
//!   },
//!   "projects": {
//!     "docs": {"services": ["fs"], "tools": ["fs.read_text_file", "fs.list_directory"],
//!              "hat": "You maintain the documentation."}
//!   },
//!   "roots": ["/srv/docs"],
//!   "samplingLlm": "local",
//!   "elicitation": "defaults"
//! }
//! ```
//!
//! A server has either `command` (stdio: `args`, `env`, `cwd`) or `url` (streamable HTTP: `headers`);
//! `type` may say so explicitly (`stdio`, `http`, `streamable-http`, `streamableHttp`). `disabled: true`
//! leaves a server out; `timeout` (seconds, above 0 and at most a day) overrides the request timeout for
//! that server; `maxMessageBytes` (1 KiB to 1 GiB) overrides the size limit on one message from it
//! ([`crate::ClientOptions::max_message_bytes`], 64 MiB by default). Unknown keys
//! are ignored, as other clients of the same file may use them. `roots` lists the directories (paths
//! or `file://` URIs) the client offers servers that ask for its roots ([`McpConfig::hooks`]). Values of `env` and `headers` often hold
//! secrets: they never appear in `Debug` output or errors. A `url` server may carry `oauth`
//! ([`OAuthSettings`]: `clientId`, `clientSecret`, `scopes`, `clientMetadataUrl`), the client claij
//! authorizes as there when the server asks for OAuth 2.1. `samplingLlm` (`local` or PROVIDER:MODEL)
//! and `elicitation` ([`Elicitation`]: `ask`, `defaults` or `decline`) say what the programs that
//! start the servers offer them when they ask for a completion or a person's answer.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::Duration;

use claij_backends::redact::{MARKER, redact_url};
use serde::Deserialize;
use serde_json::Value;

use crate::error::Error;
use crate::hooks::{Hooks, Root};
use crate::project::Project;

mod oauth;

pub use oauth::OAuthSettings;

/// The longest request timeout a configuration entry (or a flag) may set: a day.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(86_400);

/// The sizes the limit on one message from a server may be set to (`maxMessageBytes`): 1 KiB to
/// 1 GiB.
pub const MESSAGE_BYTES: RangeInclusive<usize> = 1024..=1 << 30;

/// `secs` seconds as a request timeout: a finite number above 0 and at most [`MAX_TIMEOUT`] (a
/// day); `None` otherwise (never a panic, whatever the number).
pub fn timeout_from_secs(secs: f64) -> Option<Duration> {
    // Negative, NaN and overflowing numbers are errors of `try_from_secs_f64`, not panics.
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero() && *d <= MAX_TIMEOUT)
}

/// A parsed configuration file.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct McpConfig {
    /// The enabled servers, by name, in name order.
    pub servers: BTreeMap<String, ServerConfig>,
    /// The projects, by name.
    pub projects: BTreeMap<String, Project>,
    /// The roots offered to servers that ask (`roots/list`).
    pub roots: Vec<Root>,
    /// The model that answers the servers' sampling requests (`samplingLlm`), as its program
    /// names models.
    pub sampling_llm: Option<String>,
    /// How the servers' questions are answered (`elicitation`).
    pub elicitation: Option<Elicitation>,
}

/// How a server's question (MCP elicitation) is answered: the configuration's `elicitation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Elicitation {
    /// The person at the terminal answers (a form built from the requested schema).
    Ask,
    /// Accepted with the requested schema's defaults; declined when a required field has none.
    Defaults,
    /// Declined (no elicitation capability is declared).
    #[default]
    Decline,
}

impl std::str::FromStr for Elicitation {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "ask" => Ok(Elicitation::Ask),
            "defaults" => Ok(Elicitation::Defaults),
            "decline" => Ok(Elicitation::Decline),
            _ => Err("expected ask, defaults or decline".to_owned()),
        }
    }
}

/// How to reach one server.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerConfig {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio(StdioServer),
    /// A streamable HTTP endpoint.
    Http(HttpServer),
}

/// A stdio server: the program and how to run it.
#[derive(Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct StdioServer {
    /// The program (a path, or a name looked up in `PATH`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the inherited environment.
    pub env: BTreeMap<String, String>,
    /// Its working directory (default: the caller's).
    pub cwd: Option<PathBuf>,
    /// The request timeout for this server, if it overrides the client's.
    pub timeout: Option<Duration>,
    /// The size limit on one message from this server, if it overrides the client's.
    pub max_message_bytes: Option<usize>,
}

/// A streamable HTTP server.
#[derive(Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct HttpServer {
    /// The endpoint (`http://127.0.0.1:3001/mcp`).
    pub url: String,
    /// Headers sent with every request (an `Authorization` header, typically).
    pub headers: BTreeMap<String, String>,
    /// The request timeout for this server, if it overrides the client's.
    pub timeout: Option<Duration>,
    /// The size limit on one message from this server, if it overrides the client's.
    pub max_message_bytes: Option<usize>,
    /// The entry's `oauth` settings, if any.
    pub oauth: Option<OAuthSettings>,
}

impl StdioServer {
    /// A server run as `command args...`.
    pub fn new(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Adds an environment variable.
    #[must_use]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Sets the working directory.
    #[must_use]
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }
}

impl HttpServer {
    /// A server at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            ..Self::default()
        }
    }

    /// Adds a header.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }
}

impl From<StdioServer> for ServerConfig {
    fn from(server: StdioServer) -> Self {
        ServerConfig::Stdio(server)
    }
}

impl From<HttpServer> for ServerConfig {
    fn from(server: HttpServer) -> Self {
        ServerConfig::Http(server)
    }
}

impl ServerConfig {
    /// The timeout this server's entry sets, if any.
    pub fn timeout(&self) -> Option<Duration> {
        match self {
            ServerConfig::Stdio(s) => s.timeout,
            ServerConfig::Http(s) => s.timeout,
        }
    }

    /// The message size limit this server's entry sets, if any.
    pub fn max_message_bytes(&self) -> Option<usize> {
        match self {
            ServerConfig::Stdio(s) => s.max_message_bytes,
            ServerConfig::Http(s) => s.max_message_bytes,
        }
    }

    /// Sets this server's message size limit (a command-line flag overriding the file).
    pub fn set_max_message_bytes(&mut self, bytes: usize) {
        match self {
            ServerConfig::Stdio(s) => s.max_message_bytes = Some(bytes),
            ServerConfig::Http(s) => s.max_message_bytes = Some(bytes),
        }
    }
}

impl fmt::Debug for StdioServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioServer")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &Redacted(&self.env))
            .field("cwd", &self.cwd)
            .field("timeout", &self.timeout)
            .field("max_message_bytes", &self.max_message_bytes)
            .finish()
    }
}

impl fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = f.debug_struct("HttpServer");
        shown
            .field("url", &redact_url(&self.url))
            .field("headers", &Redacted(&self.headers))
            .field("timeout", &self.timeout)
            .field("max_message_bytes", &self.max_message_bytes);
        if let Some(oauth) = &self.oauth {
            shown.field("oauth", oauth);
        }
        shown.finish()
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerConfig::Stdio(s) => s.fmt(f),
            ServerConfig::Http(s) => s.fmt(f),
        }
    }
}

/// Keys shown, values hidden.
struct Redacted<'a>(&'a BTreeMap<String, String>);

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, MARKER)))
            .finish()
    }
}

impl McpConfig {
    /// Parses a configuration file's text.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] with the JSON pointer of the first problem: not JSON, no `mcpServers` object,
    /// a server with neither `command` nor `url` (or both), a field of the wrong type, a project naming
    /// a server that is not configured.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        let value: Value = serde_json::from_str(text).map_err(|err| Error::Config {
            pointer: String::new(),
            message: format!("not JSON: {err}"),
        })?;
        Self::from_value(&value)
    }

    /// Parses a configuration already read as JSON.
    ///
    /// # Errors
    ///
    /// As [`McpConfig::from_json`].
    pub fn from_value(value: &Value) -> Result<Self, Error> {
        let root = value
            .as_object()
            .ok_or_else(|| config_error("", "expected an object"))?;
        let servers = match root.get("mcpServers").or_else(|| root.get("servers")) {
            Some(Value::Object(servers)) => servers,
            Some(_) => return Err(config_error("/mcpServers", "expected an object")),
            None => return Err(config_error("", "no `mcpServers` object")),
        };
        let mut config = McpConfig::default();
        for (name, entry) in servers {
            let pointer = format!("/mcpServers/{}", escape(name));
            if name.is_empty() || name.contains('.') {
                return Err(config_error(
                    &pointer,
                    "a server name is non-empty and has no `.` (tools are named `server.tool`)",
                ));
            }
            check_secret_maps(&pointer, entry)?;
            let raw: RawServer = serde_json::from_value(entry.clone())
                .map_err(|err| config_error(&pointer, &err.to_string()))?;
            if raw.disabled {
                continue;
            }
            config
                .servers
                .insert(name.clone(), raw.into_config(&pointer)?);
        }
        if let Some(roots) = root.get("roots") {
            let roots = roots.as_array().ok_or_else(|| {
                config_error("/roots", "expected an array of paths or file:// URIs")
            })?;
            for (i, entry) in roots.iter().enumerate() {
                let text = entry.as_str().filter(|t| !t.is_empty()).ok_or_else(|| {
                    config_error(&format!("/roots/{i}"), "expected a path or a file:// URI")
                })?;
                config.roots.push(if text.starts_with("file://") {
                    Root {
                        uri: text.to_owned(),
                        name: None,
                    }
                } else {
                    Root::dir(text)
                });
            }
        }
        if let Some(llm) = root.get("samplingLlm") {
            let llm = llm.as_str().filter(|t| !t.trim().is_empty());
            let llm = llm.ok_or_else(|| {
                config_error("/samplingLlm", "expected a model: local or PROVIDER:MODEL")
            })?;
            config.sampling_llm = Some(llm.trim().to_owned());
        }
        if let Some(policy) = root.get("elicitation") {
            let parsed = policy.as_str().map(str::parse::<Elicitation>);
            let parsed = parsed.unwrap_or_else(|| Err("expected ask, defaults or decline".into()));
            config.elicitation =
                Some(parsed.map_err(|message| config_error("/elicitation", &message))?);
        }
        if let Some(projects) = root.get("projects") {
            let projects = projects
                .as_object()
                .ok_or_else(|| config_error("/projects", "expected an object"))?;
            for (name, entry) in projects {
                let pointer = format!("/projects/{}", escape(name));
                let project = Project::from_value(name, entry)
                    .map_err(|message| config_error(&pointer, &message))?;
                for (i, service) in project.services.iter().enumerate() {
                    if !config.servers.contains_key(service) {
                        return Err(config_error(
                            &format!("{pointer}/services/{i}"),
                            &format!("no enabled server `{service}`"),
                        ));
                    }
                }
                config.projects.insert(name.clone(), project);
            }
        }
        Ok(config)
    }

    /// The project of that name.
    pub fn project(&self, name: &str) -> Option<&Project> {
        self.projects.get(name)
    }

    /// `hooks` offering this configuration's roots (when it has any; the hooks' own are kept
    /// otherwise).
    #[must_use]
    pub fn hooks(&self, hooks: Hooks) -> Hooks {
        if self.roots.is_empty() {
            hooks
        } else {
            hooks.with_roots(self.roots.iter().cloned())
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    disabled: bool,
    timeout: Option<f64>,
    max_message_bytes: Option<Value>,
    oauth: Option<Value>,
}

impl RawServer {
    fn into_config(self, pointer: &str) -> Result<ServerConfig, Error> {
        let timeout = match self.timeout {
            None => None,
            Some(secs) => Some(timeout_from_secs(secs).ok_or_else(|| {
                config_error(
                    &format!("{pointer}/timeout"),
                    "a timeout is a number of seconds, above 0 and at most 86400 (a day)",
                )
            })?),
        };
        let max_message_bytes = match &self.max_message_bytes {
            None => None,
            Some(value) => Some(
                value
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .filter(|n| MESSAGE_BYTES.contains(n))
                    .ok_or_else(|| {
                        config_error(
                            &format!("{pointer}/maxMessageBytes"),
                            &format!(
                                "a message size limit is a whole number of bytes from {} to {}",
                                MESSAGE_BYTES.start(),
                                MESSAGE_BYTES.end()
                            ),
                        )
                    })?,
            ),
        };
        let oauth = match &self.oauth {
            None => None,
            Some(value) => Some(OAuthSettings::from_value(pointer, value)?),
        };
        let kind = self.kind.as_deref().map(str::to_ascii_lowercase);
        match (kind.as_deref(), self.command, self.url) {
            (None | Some("stdio"), Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(config_error(&format!("{pointer}/command"), "empty command"));
                }
                if oauth.is_some() {
                    return Err(config_error(
                        &format!("{pointer}/oauth"),
                        "OAuth applies to `url` servers only",
                    ));
                }
                Ok(ServerConfig::Stdio(StdioServer {
                    command,
                    args: self.args,
                    env: self.env,
                    cwd: self.cwd,
                    timeout,
                    max_message_bytes,
                }))
            }
            (None | Some("http" | "streamable-http" | "streamablehttp"), None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(config_error(
                        &format!("{pointer}/url"),
                        "expected an http(s) URL",
                    ));
                }
                Ok(ServerConfig::Http(HttpServer {
                    url,
                    headers: self.headers,
                    timeout,
                    max_message_bytes,
                    oauth,
                }))
            }
            (Some("sse"), _, _) => Err(config_error(
                &format!("{pointer}/type"),
                "the SSE transport of 2024-11-05 is not supported; use streamable HTTP",
            )),
            (_, Some(_), Some(_)) => {
                Err(config_error(pointer, "both `command` and `url`; give one"))
            }
            (_, None, None) => Err(config_error(pointer, "neither `command` nor `url`")),
            (Some(other), _, _) => Err(config_error(
                &format!("{pointer}/type"),
                &format!("`{other}` does not match the server's `command`/`url`"),
            )),
        }
    }
}

/// Checks a server entry's shape and its `env` and `headers` here, naming no value: serde's own
/// errors quote the string they did not expect, and these maps hold secrets.
fn check_secret_maps(pointer: &str, entry: &Value) -> Result<(), Error> {
    let fields = entry
        .as_object()
        .ok_or_else(|| config_error(pointer, "expected an object"))?;
    for key in ["env", "headers"] {
        match fields.get(key) {
            None => {}
            Some(Value::Object(map)) => {
                if let Some((name, _)) = map.iter().find(|(_, value)| !value.is_string()) {
                    return Err(config_error(
                        &format!("{pointer}/{key}/{}", escape(name)),
                        "expected a string",
                    ));
                }
            }
            Some(_) => {
                return Err(config_error(
                    &format!("{pointer}/{key}"),
                    "expected an object of strings",
                ));
            }
        }
    }
    Ok(())
}

fn config_error(pointer: &str, message: &str) -> Error {
    Error::Config {
        pointer: pointer.to_owned(),
        message: message.to_owned(),
    }
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests;
