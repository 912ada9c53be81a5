//! [`McpClient`]: one MCP server, with the guarantees rmcp leaves to its users.
//!
//! - every request has a timeout (reset by progress notifications, under a total cap);
//! - tool calls give one [`CallOutcome`] however the server reports a problem, arguments are checked
//!   against the tool's `inputSchema` before sending and `structuredContent` against its
//!   `outputSchema` after;
//! - a server that exits is noticed at once (the connection's loop ends when its stdout closes),
//!   logged, and marked dead; with a [`Restart`] policy the next request starts it again, after a
//!   backoff;
//! - stdio servers run in their own process group, killed on close or drop, so nothing is left behind
//!   even when the server was started through a wrapper such as `npx`.
//! - each call is an `mcp.call` span under the caller's (`otel.name` `execute_tool {tool}`,
//!   `gen_ai.tool.name`, `claij.mcp.server`, `claij.mcp.tool`; an error result or a failure sets
//!   `otel.status_code = "ERROR"` and `error.type`), the arguments and result recorded only when the
//!   `claij::content` target is enabled at TRACE; the connection's service loop runs in an
//!   `mcp.session` span of its own, so it keeps no caller's span open; a server's sampling or
//!   elicitation request during the only call in flight is an `mcp.server_request` under that call.

pub(crate) mod spans;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::Mutex;
use tracing::{Instrument as _, debug, warn};

use crate::config::ServerConfig;
use crate::error::Error;
use crate::hooks::Hooks;
use crate::logging::LogLevel;
use crate::outcome::{self, CallFailure, CallOutcome, Content};
use crate::tool::ToolInfo;
use crate::wire::{Connection, Events, RawCall, Wait};

/// The default size limit on one message from a server: 64 MiB (rmcp's own, 16 MiB, is too small
/// for a large file or image a tool returns).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 << 20;

/// How a client connects and waits.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// Longest wait for any one answer (default 30 s); progress notifications restart it.
    pub timeout: Duration,
    /// Longest a request may take in all, progress or not (default 10 min; `None`: no cap).
    pub max_total: Option<Duration>,
    /// Whether progress notifications restart [`ClientOptions::timeout`] (default true).
    pub reset_on_progress: bool,
    /// Longest wait for a server to start and finish the handshake (default 30 s).
    pub connect_timeout: Duration,
    /// Which protocol start to use.
    pub start: StartMode,
    /// Whether a dead server is started again.
    pub restart: Restart,
    /// Reconnect attempts of the HTTP transport before a server counts as gone (default 2, 100 ms
    /// apart then doubling): rmcp alone retries forever, and a call in flight would hang.
    pub http_reconnects: usize,
    /// The largest message accepted from a server, in bytes (default [`DEFAULT_MAX_MESSAGE_BYTES`],
    /// 64 MiB; a server's `maxMessageBytes` overrides it). A larger answer fails its request at once
    /// with [`Error::TooLarge`]; the message is read and dropped without being kept.
    pub max_message_bytes: usize,
    /// Answers to sampling, roots and elicitation requests; the progress and log callbacks.
    pub hooks: Hooks,
    /// The level the client asks servers to log at: `logging/setLevel` after every connect and
    /// restart (to servers that declare `logging`), or, from the 2026-07-28 revision, in each tool
    /// call's `_meta` (where servers log only when asked); `None` (the default) leaves each
    /// server's own.
    /// Messages go to tracing and [`Hooks::on_log`].
    pub log_level: Option<LogLevel>,
    /// How a streamable-HTTP server that asks for OAuth 2.1 is authorized (`None`, the default:
    /// its 401 fails the start).
    #[cfg(feature = "oauth")]
    pub oauth: Option<crate::auth::OAuth>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            max_total: Some(Duration::from_secs(600)),
            reset_on_progress: true,
            connect_timeout: Duration::from_secs(30),
            start: StartMode::default(),
            restart: Restart::default(),
            http_reconnects: 2,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            hooks: Hooks::default(),
            log_level: None,
            #[cfg(feature = "oauth")]
            oauth: None,
        }
    }
}

impl ClientOptions {
    /// Sets the per-answer timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the size limit on one message from a server.
    #[must_use]
    pub fn with_max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// Authorizes streamable-HTTP servers that ask for OAuth 2.1 with `oauth`.
    #[cfg(feature = "oauth")]
    #[must_use]
    pub fn with_oauth(mut self, oauth: crate::auth::OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Sets the start mode.
    #[must_use]
    pub fn with_start(mut self, start: StartMode) -> Self {
        self.start = start;
        self
    }

    /// Sets the restart policy.
    #[must_use]
    pub fn with_restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// Sets the hooks.
    #[must_use]
    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Asks servers to log at `level` and above.
    #[must_use]
    pub fn with_log_level(mut self, level: LogLevel) -> Self {
        self.log_level = Some(level);
        self
    }
}

/// How the protocol starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum StartMode {
    /// Ask for the stateless revision (2026-07-28, `server/discover`); fall back to the `initialize`
    /// handshake of 2025-11-25 when the server does not know it (the default).
    #[default]
    PreferStateless,
    /// Only the stateless revision.
    Stateless,
    /// Only the `initialize` handshake (2025-11-25).
    Initialize,
}

/// Whether and how a dead server is started again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Restart {
    /// Restarts allowed over the client's life (default 0: a dead server stays dead).
    pub max_restarts: u32,
    /// Wait before the first restart, doubled for each later one (capped at 30 s).
    pub backoff: Duration,
}

impl Restart {
    /// Never restart.
    pub fn never() -> Self {
        Self::default()
    }

    /// Restart up to `max_restarts` times, waiting `backoff`, then twice as long each time.
    pub fn up_to(max_restarts: u32, backoff: Duration) -> Self {
        Self {
            max_restarts,
            backoff,
        }
    }
}

/// Who the server says it is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ServerInfo {
    /// The configured name.
    pub name: String,
    /// The negotiated protocol version (`2025-11-25`, `2026-07-28`).
    pub protocol_version: String,
    /// The implementation's name, as it reports it.
    pub implementation: Option<String>,
    /// The implementation's version.
    pub version: Option<String>,
    /// Its instructions for clients, if any.
    pub instructions: Option<String>,
}

/// A connection to one MCP server. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    config: ServerConfig,
    options: ClientOptions,
    connection: RwLock<Arc<Connection>>,
    restart_lock: Mutex<()>,
    restarts: AtomicU32,
    closed: AtomicBool,
    events: Arc<Events>,
    tools: RwLock<Arc<[Arc<ToolInfo>]>>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.inner.name)
            .field("config", &self.inner.config)
            .field("alive", &self.is_alive())
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Starts (or reaches) the server `name`, runs the protocol start and lists its tools.
    ///
    /// # Errors
    ///
    /// [`Error::Spawn`], [`Error::Handshake`], [`Error::Timeout`] (`initialize` or `tools/list`),
    /// [`Error::Dead`].
    pub async fn connect(
        name: impl Into<String>,
        config: impl Into<ServerConfig>,
        options: ClientOptions,
    ) -> Result<Self, Error> {
        let name = name.into();
        let config = config.into();
        let events = Arc::new(Events::default());
        let span = spans::connect(&name);
        let connection = Connection::open(&name, &config, &options, Arc::clone(&events))
            .instrument(span.clone())
            .await
            .inspect_err(|err| spans::fail(&span, &err.to_string()))?;
        let client = McpClient {
            inner: Arc::new(Inner {
                name,
                config,
                options,
                connection: RwLock::new(Arc::new(connection)),
                restart_lock: Mutex::new(()),
                restarts: AtomicU32::new(0),
                closed: AtomicBool::new(false),
                events,
                tools: RwLock::new(Arc::from(Vec::new())),
            }),
        };
        client.watch_current();
        client.apply_log_level(&client.current()).await;
        if let Err(err) = client.refresh_tools().await {
            client.close().await;
            return Err(err);
        }
        Ok(client)
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// How the server is reached.
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// Who the server is and which protocol version was negotiated.
    pub fn server_info(&self) -> ServerInfo {
        let connection = self.current();
        let (implementation, version) = connection.server_info();
        ServerInfo {
            name: self.inner.name.clone(),
            protocol_version: connection.protocol_version().to_owned(),
            implementation: implementation.map(str::to_owned),
            version: version.map(str::to_owned),
            instructions: connection.instructions().map(str::to_owned),
        }
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> String {
        self.current().protocol_version().to_owned()
    }

    /// The process id of a stdio server.
    pub fn pid(&self) -> Option<u32> {
        self.current().pid()
    }

    /// Whether the connection is up (a dead server may still be restarted by the next request).
    pub fn is_alive(&self) -> bool {
        !self.inner.closed.load(Ordering::SeqCst) && self.current().ended().is_none()
    }

    /// Why the connection ended, if it has.
    pub fn death(&self) -> Option<String> {
        self.current().ended()
    }

    /// The tools as last listed (refreshed when the server says its list changed).
    pub fn tools(&self) -> Arc<[Arc<ToolInfo>]> {
        Arc::clone(
            &self
                .inner
                .tools
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// One tool, as last listed.
    pub fn tool(&self, name: &str) -> Option<Arc<ToolInfo>> {
        self.tools().iter().find(|t| t.name == name).cloned()
    }

    /// Whether the server announced a tool-list change not yet fetched.
    pub fn tools_stale(&self) -> bool {
        self.inner.events.tools_changed.load(Ordering::SeqCst)
    }

    /// Lists the tools again (every page) and caches them.
    ///
    /// # Errors
    ///
    /// The request's errors.
    pub async fn refresh_tools(&self) -> Result<Arc<[Arc<ToolInfo>]>, Error> {
        self.inner
            .events
            .tools_changed
            .store(false, Ordering::SeqCst);
        let connection = self.connection().await?;
        let listed = connection.list_tools(self.wait(None)).await?;
        let tools: Arc<[Arc<ToolInfo>]> = listed
            .into_iter()
            .map(|t| {
                let mut tool =
                    ToolInfo::new(&self.inner.name, t.name, t.description, t.input, t.output);
                tool.title = t.title;
                Arc::new(tool)
            })
            .collect();
        debug!(
            server = self.inner.name,
            tools = tools.len(),
            "mcp tools listed"
        );
        *self
            .inner
            .tools
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::clone(&tools);
        Ok(tools)
    }

    /// Calls `tool` with `args` (an object; `null` counts as `{}`) under the client's timeout.
    ///
    /// The outcome is an error outcome — not an `Err` — for everything the model can correct: an
    /// unknown tool, arguments that break the `inputSchema` (not sent), the server's rejection, the
    /// tool's own error, and structured output that breaks the `outputSchema` (kept, flagged).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`], [`Error::Dead`], [`Error::Cancelled`], [`Error::Protocol`] for a reply
    /// that is not a tool result.
    pub async fn call(&self, tool: &str, args: Value) -> Result<CallOutcome, Error> {
        self.call_with_timeout(tool, args, None).await
    }

    /// [`McpClient::call`] with its own timeout.
    ///
    /// # Errors
    ///
    /// As [`McpClient::call`].
    pub async fn call_with_timeout(
        &self,
        tool: &str,
        args: Value,
        timeout: Option<Duration>,
    ) -> Result<CallOutcome, Error> {
        let span = spans::call(&self.inner.name, tool);
        let _in_flight = self.inner.events.call_started(span.clone());
        let content = spans::content_enabled();
        if content {
            spans::arguments(&span, &args);
        }
        let called = self
            .call_inner(tool, args, timeout)
            .instrument(span.clone())
            .await;
        match &called {
            Ok(outcome) => spans::outcome(&span, outcome, content),
            Err(err) => spans::fail(&span, &err.to_string()),
        }
        called
    }

    async fn call_inner(
        &self,
        tool: &str,
        args: Value,
        timeout: Option<Duration>,
    ) -> Result<CallOutcome, Error> {
        if self.tools_stale()
            && let Err(err) = self.refresh_tools().await
        {
            warn!(server = self.inner.name, error = %err, "refreshing the tool list failed");
        }
        let connection = self.connection().await?;
        let info = match self.tool(tool) {
            Some(info) => info,
            None => match self
                .refresh_tools()
                .await
                .ok()
                .and_then(|_| self.tool(tool))
            {
                Some(info) => info,
                None => return Ok(self.unknown(tool)),
            },
        };
        let args = match args {
            Value::Null => Map::new(),
            Value::Object(map) => map,
            other => {
                let violation = claij_validation::Violation {
                    instance_pointer: String::new(),
                    schema_pointer: "/type".to_owned(),
                    keyword: "type".to_owned(),
                    message: format!("arguments must be an object, not {}", kind(&other)),
                };
                return Ok(invalid_arguments(tool, vec![violation]));
            }
        };
        let as_value = Value::Object(args);
        if let Err(violations) = info.check_call_args(&as_value) {
            return Ok(invalid_arguments(tool, violations));
        }
        let args = match as_value {
            Value::Object(args) => args,
            _ => Map::new(),
        };
        let started = std::time::Instant::now();
        let raw = connection.call_tool(tool, args, self.wait(timeout)).await?;
        debug!(
            server = self.inner.name,
            tool,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "mcp call done"
        );
        Ok(self.normalise(&info, raw))
    }

    fn normalise(&self, info: &ToolInfo, raw: RawCall) -> CallOutcome {
        match raw {
            RawCall::Rejected { code, message } => {
                if code == -32602 && mentions_unknown_tool(&message, &info.name) {
                    self.inner
                        .events
                        .tools_changed
                        .store(true, Ordering::SeqCst);
                    return self.unknown(&info.name);
                }
                CallOutcome::failure(
                    CallFailure::Rejected { code },
                    format!(
                        "the server rejected the call to `{}` (error {code}): {message}",
                        info.name
                    ),
                )
            }
            RawCall::Result {
                content,
                structured,
                is_error,
            } => {
                let content: Vec<Content> = content.into_iter().map(Content::from_value).collect();
                if is_error {
                    let text = content
                        .iter()
                        .map(Content::describe)
                        .collect::<Vec<_>>()
                        .join("\n");
                    if mentions_unknown_tool(&text, &info.name) && text.contains("-32602") {
                        self.inner
                            .events
                            .tools_changed
                            .store(true, Ordering::SeqCst);
                        return self.unknown(&info.name);
                    }
                    return CallOutcome {
                        content,
                        structured,
                        is_error: true,
                        failure: Some(CallFailure::Tool),
                    };
                }
                let violations = match (&info.output_schema, &structured) {
                    (None, _) => None,
                    (Some(_), Some(value)) => info.check_output(value).err(),
                    (Some(_), None) => Some(vec![claij_validation::Violation {
                        instance_pointer: String::new(),
                        schema_pointer: String::new(),
                        keyword: "outputSchema".to_owned(),
                        message:
                            "the tool declares an outputSchema but returned no structuredContent"
                                .to_owned(),
                    }]),
                };
                match violations {
                    None => CallOutcome::success(content, structured),
                    Some(violations) => {
                        // In the outcome the caller gets (and shows): a warning would say it twice.
                        debug!(
                            server = self.inner.name,
                            tool = info.name,
                            n_violations = violations.len(),
                            "structured output breaks the tool's outputSchema"
                        );
                        let mut content = content;
                        content.push(Content::text(outcome::violations_text(
                            "the structured result breaks the tool's outputSchema",
                            &violations,
                        )));
                        CallOutcome {
                            content,
                            structured,
                            is_error: true,
                            failure: Some(CallFailure::InvalidOutput { violations }),
                        }
                    }
                }
            }
        }
    }

    fn unknown(&self, tool: &str) -> CallOutcome {
        let available = self.tools().iter().map(|t| t.name.clone()).collect();
        outcome::unknown_tool(&self.inner.name, tool, available)
    }

    /// The server's resources (every page), as MCP JSON objects (`uri`, `name`, `mimeType`, ...).
    ///
    /// # Errors
    ///
    /// The request's errors.
    pub async fn resources(&self) -> Result<Vec<Value>, Error> {
        self.connection()
            .await?
            .list_resources(self.wait(None))
            .await
    }

    /// The server's resource templates (every page), as MCP JSON objects (`uriTemplate`, `name`,
    /// `mimeType`, ...).
    ///
    /// # Errors
    ///
    /// The request's errors (a server without templates may answer "method not found",
    /// [`Error::Protocol`] with code -32601).
    pub async fn resource_templates(&self) -> Result<Vec<Value>, Error> {
        self.connection()
            .await?
            .list_resource_templates(self.wait(None))
            .await
    }

    /// Reads one resource: `{"contents": [{"uri", "mimeType", "text" | "blob"}]}`.
    ///
    /// # Errors
    ///
    /// The request's errors; an unknown URI is the server's [`Error::Protocol`].
    pub async fn read_resource(&self, uri: &str) -> Result<Value, Error> {
        self.connection()
            .await?
            .read_resource(uri, self.wait(None))
            .await
    }

    /// The server's prompts (every page), as MCP JSON objects (`name`, `description`, `arguments`).
    ///
    /// # Errors
    ///
    /// The request's errors.
    pub async fn prompts(&self) -> Result<Vec<Value>, Error> {
        self.connection().await?.list_prompts(self.wait(None)).await
    }

    /// One prompt with its arguments (strings; other JSON values are sent as their text):
    /// `{"description", "messages": [{"role", "content"}]}`.
    ///
    /// # Errors
    ///
    /// The request's errors.
    pub async fn get_prompt(&self, name: &str, args: Map<String, Value>) -> Result<Value, Error> {
        self.connection()
            .await?
            .get_prompt(name, args, self.wait(None))
            .await
    }

    /// Closes the connection and stops the server (its whole process group). Further requests fail
    /// with [`Error::Dead`]. Idempotent.
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        self.current().close().await;
    }

    fn current(&self) -> Arc<Connection> {
        Arc::clone(
            &self
                .inner
                .connection
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    fn wait(&self, timeout: Option<Duration>) -> Wait {
        Wait {
            timeout: timeout
                .or_else(|| self.inner.config.timeout())
                .unwrap_or(self.inner.options.timeout),
            reset_on_progress: self.inner.options.reset_on_progress,
            max_total: self.inner.options.max_total,
        }
    }

    /// The live connection, restarting a dead server when the policy allows.
    async fn connection(&self) -> Result<Arc<Connection>, Error> {
        let current = self.current();
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(self.dead("closed by the client".to_owned()));
        }
        let Some(reason) = current.ended() else {
            return Ok(current);
        };
        let _restarting = self.inner.restart_lock.lock().await;
        let latest = self.current();
        if !Arc::ptr_eq(&latest, &current) && latest.ended().is_none() {
            return Ok(latest);
        }
        let restart = self.inner.options.restart;
        let done = self.inner.restarts.load(Ordering::SeqCst);
        if done >= restart.max_restarts {
            return Err(self.dead(reason));
        }
        let delay = restart
            .backoff
            .saturating_mul(1 << done.min(16))
            .min(Duration::from_secs(30));
        warn!(
            server = self.inner.name,
            restart = done + 1,
            delay_ms = delay.as_millis() as u64,
            reason,
            "restarting mcp server"
        );
        tokio::time::sleep(delay).await;
        self.inner.restarts.fetch_add(1, Ordering::SeqCst);
        let connection = Arc::new(
            Connection::open(
                &self.inner.name,
                &self.inner.config,
                &self.inner.options,
                Arc::clone(&self.inner.events),
            )
            .await?,
        );
        *self
            .inner
            .connection
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::clone(&connection);
        self.watch_current();
        self.apply_log_level(&connection).await;
        self.inner
            .events
            .tools_changed
            .store(true, Ordering::SeqCst);
        Ok(connection)
    }

    /// Asks the server to send log messages at `level` and above; they go to tracing and
    /// [`Hooks::on_log`]. Up to the 2025-11-25 revision this is `logging/setLevel`, for this
    /// connection only (a restart applies [`ClientOptions::log_level`]); from 2026-07-28 the level
    /// goes with each tool call (`_meta`), from the next one on.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when the server did not declare the `logging` capability (code 0) or
    /// refused the level; the request's errors.
    pub async fn set_log_level(&self, level: LogLevel) -> Result<(), Error> {
        let connection = self.connection().await?;
        self.keep_log_level(level);
        if connection.logs_per_request() {
            return Ok(());
        }
        if !connection.supports_logging() {
            return Err(Error::Protocol {
                server: self.inner.name.clone(),
                method: "logging/setLevel".to_owned(),
                code: 0,
                message: "the server does not declare the logging capability".to_owned(),
            });
        }
        connection.set_log_level(level, self.wait(None)).await
    }

    /// Sends [`ClientOptions::log_level`] to a server that declares `logging`; a failure is a
    /// warning, not a failed connection (the server keeps its own level).
    async fn apply_log_level(&self, connection: &Connection) {
        let Some(level) = self.inner.options.log_level else {
            return;
        };
        self.keep_log_level(level);
        if connection.logs_per_request() {
            return;
        }
        if !connection.supports_logging() {
            debug!(
                server = self.inner.name,
                "mcp server declares no logging; its level is not set"
            );
            return;
        }
        if let Err(err) = connection.set_log_level(level, self.wait(None)).await {
            warn!(server = self.inner.name, level = %level, error = %err, "mcp server refused the log level");
        }
    }

    /// Keeps `level` for the calls of a revision that takes it per request.
    fn keep_log_level(&self, level: LogLevel) {
        *self
            .inner
            .events
            .log_level
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(level);
    }

    /// Restarts the server count so far.
    pub fn restarts(&self) -> u32 {
        self.inner.restarts.load(Ordering::SeqCst)
    }

    fn dead(&self, reason: String) -> Error {
        Error::Dead {
            server: self.inner.name.clone(),
            reason,
        }
    }

    /// Logs the current connection's end the moment it happens (unless the client closed it).
    fn watch_current(&self) {
        let connection = Arc::downgrade(&self.current());
        let inner = Arc::downgrade(&self.inner);
        let name = self.inner.name.clone();
        tokio::spawn(async move {
            let Some(watched) = connection.upgrade() else {
                return;
            };
            let ended = {
                let mut ended = watched.ended_receiver();
                drop(watched);
                loop {
                    if let Some(reason) = ended.borrow_and_update().clone() {
                        break reason;
                    }
                    if ended.changed().await.is_err() {
                        return;
                    }
                }
            };
            let closed = inner
                .upgrade()
                .is_none_or(|inner| inner.closed.load(Ordering::SeqCst));
            if !closed {
                warn!(server = name, reason = ended, "mcp server died");
            }
        });
    }
}

fn invalid_arguments(tool: &str, violations: Vec<claij_validation::Violation>) -> CallOutcome {
    let text = outcome::violations_text(
        &format!("invalid arguments for `{tool}`; the call was not sent"),
        &violations,
    );
    CallOutcome::failure(CallFailure::InvalidArguments { violations }, text)
}

/// Whether a server's message says the tool does not exist (the TypeScript SDK: "Tool x not found";
/// the Python SDK: "Unknown tool: x").
fn mentions_unknown_tool(message: &str, tool: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains(&tool.to_ascii_lowercase())
        && (lower.contains("unknown tool")
            || lower.contains("not found")
            || lower.contains("no such tool"))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
