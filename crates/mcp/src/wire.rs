//! The one module that touches rmcp: connecting (stdio child processes, streamable HTTP), the
//! protocol start mode, requests with timeouts, the client handler for server-initiated requests,
//! and conversions between rmcp's types and claij's. Everything else in the crate sees plain
//! `serde_json::Value`s and this crate's types.

#[cfg(feature = "oauth")]
mod auth;
mod handler;
mod limit;
mod logging;
mod spawn;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, GetPromptRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ServerResult,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt as _, PeerRequestOptions, RunningService, ServiceError,
};
use rmcp::{Peer, RoleClient};
use serde_json::{Map, Value};
use tokio::sync::watch;
use tracing::{Instrument as _, debug, warn};

use crate::client::{ClientOptions, StartMode};
use crate::config::ServerConfig;
use crate::error::Error;

pub(crate) use handler::Events;

/// A live connection to one server.
pub(crate) struct Connection {
    server: String,
    peer: Peer<RoleClient>,
    /// Taken by the first of close() and drop.
    cancel: std::sync::Mutex<Option<rmcp::service::RunningServiceCancellationToken>>,
    /// Becomes `Some(reason)` when the service loop ends (process exit, closed stream, close()).
    ended: watch::Receiver<Option<String>>,
    child: Option<spawn::ChildGuard>,
    protocol_version: String,
    server_name: Option<String>,
    server_version: Option<String>,
    instructions: Option<String>,
    closing: AtomicBool,
    /// Set when a request finds the transport closed before the service loop has ended: rmcp's
    /// HTTP worker gives up on a request once its reconnects are spent but keeps running.
    failed: std::sync::OnceLock<String>,
    /// Why the server refused the connection's requests for good (set by OAuth step-up when it
    /// gives up on `insufficient_scope`): said before any other reason.
    refusal: Refusal,
    /// Answers the input a 2026-07-28 server asks for in the middle of a call.
    answerer: handler::Handler,
    /// The size limit on one message from the server.
    limit: Arc<limit::Limit>,
}

/// What a `tools/call` came back with, before claij normalises it.
pub(crate) enum RawCall {
    /// A `CallToolResult`: content blocks, structured content, `isError`.
    Result {
        content: Vec<Value>,
        structured: Option<Value>,
        is_error: bool,
    },
    /// A JSON-RPC error.
    Rejected { code: i32, message: String },
}

/// How one request waits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wait {
    pub timeout: Duration,
    pub reset_on_progress: bool,
    pub max_total: Option<Duration>,
}

impl Connection {
    /// Starts or reaches the server and runs the protocol start.
    pub(crate) async fn open(
        server: &str,
        config: &ServerConfig,
        options: &ClientOptions,
        events: Arc<Events>,
    ) -> Result<Self, Error> {
        let handler = handler::Handler::new(server, options.hooks.clone(), events);
        let answerer = handler.clone();
        let lifecycle = lifecycle(options.start);
        let (ended_tx, ended) = watch::channel(None);
        let limit = limit::Limit::new(
            config
                .max_message_bytes()
                .unwrap_or(options.max_message_bytes),
        );
        let refusal = Refusal::default();
        let (running, child) = match config {
            ServerConfig::Stdio(stdio) => {
                let (transport, child) = spawn::spawn(server, stdio, Arc::clone(&limit))?;
                let auto = matches!(lifecycle, ClientLifecycleMode::Auto { .. });
                match handshake(
                    server,
                    options,
                    handler.clone(),
                    transport,
                    lifecycle,
                    &child,
                )
                .await
                {
                    Ok(running) => (running, Some(child)),
                    // The discovery probe went wrong in a way rmcp does not fall back from: its
                    // answer came late, during the fallback `initialize` (rmcp waits 10 s; a slow
                    // start, not a broken server), or was not one a client can use. A new process
                    // started with `initialize` alone skips the probe.
                    Err(Failed {
                        error,
                        probe_failed: true,
                        ..
                    }) if auto => {
                        warn!(
                            server,
                            %error,
                            "the discovery probe failed; starting the server again with initialize"
                        );
                        let (transport, child) = spawn::spawn(server, stdio, Arc::clone(&limit))?;
                        let running = handshake(
                            server,
                            options,
                            handler,
                            transport,
                            ClientLifecycleMode::Initialize,
                            &child,
                        )
                        .await
                        .map_err(|failed| failed.error)?;
                        (running, Some(child))
                    }
                    Err(failed) => return Err(failed.error),
                }
            }
            #[cfg(feature = "oauth")]
            ServerConfig::Http(http) if options.oauth.is_some() => {
                let running = auth::connect(
                    auth::Target {
                        server,
                        http,
                        options,
                        max_message_bytes: limit.bytes(),
                        refusal: Arc::clone(&refusal),
                    },
                    handler,
                    lifecycle,
                )
                .await?;
                (running, None)
            }
            #[cfg(feature = "http")]
            ServerConfig::Http(http) => {
                let auto = matches!(lifecycle, ClientLifecycleMode::Auto { .. });
                let transport = http_transport(server, http, options, limit.bytes())?;
                let started = handshake_no_child(
                    server,
                    &http.url,
                    options,
                    handler.clone(),
                    transport,
                    lifecycle,
                )
                .await;
                let running = match started {
                    Ok(running) => running,
                    // Whatever the server made of the probe (an empty result, an HTTP error, an
                    // answer that came too late), a 2025-11-25 server still takes `initialize`:
                    // a fresh transport skips the probe.
                    Err(Failed {
                        error,
                        probe_failed: true,
                        ..
                    }) if auto => {
                        warn!(
                            server,
                            %error,
                            "the discovery probe failed; connecting again with initialize"
                        );
                        let transport = http_transport(server, http, options, limit.bytes())?;
                        handshake_no_child(
                            server,
                            &http.url,
                            options,
                            handler,
                            transport,
                            ClientLifecycleMode::Initialize,
                        )
                        .await
                        .map_err(|failed| failed.error)?
                    }
                    Err(failed) => return Err(failed.error),
                };
                (running, None)
            }
            #[cfg(not(feature = "http"))]
            ServerConfig::Http(_) => {
                return Err(Error::Handshake {
                    server: server.to_owned(),
                    message: "streamable HTTP needs claij-mcp's `http` feature".to_owned(),
                });
            }
        };
        let peer = running.peer().clone();
        let cancel = std::sync::Mutex::new(Some(running.cancellation_token()));
        let info = peer.peer_info();
        let protocol_version = info
            .as_ref()
            .map(|i| i.protocol_version.to_string())
            .unwrap_or_default();
        let (server_name, server_version) = info
            .as_ref()
            .and_then(|i| i.server_info.as_ref())
            .map(|i| (Some(i.name.clone()), Some(i.version.clone())))
            .unwrap_or((None, None));
        let instructions = info.as_ref().and_then(|i| i.instructions.clone());
        let watcher_server = server.to_owned();
        let stderr_tail = child.as_ref().map(spawn::ChildGuard::stderr_tail);
        tokio::spawn(async move {
            let reason = match running.waiting().await {
                Ok(rmcp::service::QuitReason::Cancelled) => "closed by the client".to_owned(),
                Ok(rmcp::service::QuitReason::Closed) => {
                    let mut reason = "the connection closed".to_owned();
                    if let Some(tail) = stderr_tail.as_ref().and_then(spawn::Tail::last) {
                        reason.push_str(&format!(" (last stderr line: {tail})"));
                    }
                    reason
                }
                Ok(_) => "the connection ended".to_owned(),
                Err(err) => format!("the client task failed: {err}"),
            };
            debug!(server = watcher_server, reason, "mcp service loop ended");
            let _ = ended_tx.send(Some(reason));
        });
        Ok(Self {
            server: server.to_owned(),
            peer,
            cancel,
            ended,
            child,
            protocol_version,
            server_name,
            server_version,
            instructions,
            closing: AtomicBool::new(false),
            failed: std::sync::OnceLock::new(),
            refusal,
            answerer,
            limit,
        })
    }

    pub(crate) fn protocol_version(&self) -> &str {
        &self.protocol_version
    }

    pub(crate) fn server_info(&self) -> (Option<&str>, Option<&str>) {
        (self.server_name.as_deref(), self.server_version.as_deref())
    }

    pub(crate) fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(spawn::ChildGuard::pid)
    }

    /// Why the connection ended, if it has.
    pub(crate) fn ended(&self) -> Option<String> {
        if let Some(refused) = self.refusal.get() {
            return Some(refused.clone());
        }
        if let Some(reason) = self.ended.borrow().clone() {
            return Some(reason);
        }
        self.failed.get().cloned()
    }

    /// A receiver that sees the connection end.
    pub(crate) fn ended_receiver(&self) -> watch::Receiver<Option<String>> {
        self.ended.clone()
    }

    /// Waits until the connection ends; returns the reason.
    pub(crate) async fn wait_ended(&self) -> String {
        let mut ended = self.ended.clone();
        loop {
            if let Some(reason) = ended.borrow_and_update().clone() {
                return reason;
            }
            if ended.changed().await.is_err() {
                return "the connection ended".to_owned();
            }
        }
    }

    /// `tools/list`, every page; each tool as `(name, title, description, input, output)`.
    pub(crate) async fn list_tools(&self, wait: Wait) -> Result<Vec<ToolWire>, Error> {
        let tools = self
            .bounded("tools/list", wait, self.peer.list_all_tools())
            .await?;
        Ok(tools
            .into_iter()
            .map(|tool| ToolWire {
                name: tool.name.to_string(),
                title: tool
                    .title
                    .clone()
                    .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone())),
                description: tool.description.as_ref().map(ToString::to_string),
                input: Value::Object((*tool.input_schema).clone()),
                output: tool
                    .output_schema
                    .as_ref()
                    .map(|s| Value::Object((**s).clone())),
            })
            .collect())
    }

    /// `resources/list`, every page, as MCP JSON.
    pub(crate) async fn list_resources(&self, wait: Wait) -> Result<Vec<Value>, Error> {
        let resources = self
            .bounded("resources/list", wait, self.peer.list_all_resources())
            .await?;
        to_values(&self.server, "resources/list", &resources)
    }

    /// `resources/templates/list`, every page, as MCP JSON.
    pub(crate) async fn list_resource_templates(&self, wait: Wait) -> Result<Vec<Value>, Error> {
        let templates = self
            .bounded(
                "resources/templates/list",
                wait,
                self.peer.list_all_resource_templates(),
            )
            .await?;
        to_values(&self.server, "resources/templates/list", &templates)
    }

    /// `resources/read`, as MCP JSON (`{"contents": [...]}`).
    pub(crate) async fn read_resource(&self, uri: &str, wait: Wait) -> Result<Value, Error> {
        let result = self
            .bounded(
                "resources/read",
                wait,
                self.peer
                    .read_resource(ReadResourceRequestParams::new(uri.to_owned())),
            )
            .await?;
        to_value(&self.server, "resources/read", &result)
    }

    /// `prompts/list`, every page, as MCP JSON.
    pub(crate) async fn list_prompts(&self, wait: Wait) -> Result<Vec<Value>, Error> {
        let prompts = self
            .bounded("prompts/list", wait, self.peer.list_all_prompts())
            .await?;
        to_values(&self.server, "prompts/list", &prompts)
    }

    /// `prompts/get`, as MCP JSON (`{"messages": [...]}`).
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        args: Map<String, Value>,
        wait: Wait,
    ) -> Result<Value, Error> {
        let arguments = args
            .into_iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, Value::String(v))
            })
            .collect::<Map<String, Value>>();
        let params = GetPromptRequestParams::new(name.to_owned()).with_arguments(arguments);
        let result = self
            .bounded("prompts/get", wait, self.peer.get_prompt(params))
            .await?;
        to_value(&self.server, "prompts/get", &result)
    }

    /// One `tools/call`, under `wait`. Rounds where a server of the 2026-07-28 revision asks for
    /// input (sampling, elicitation, roots) are answered through the hooks and the call re-sent.
    pub(crate) async fn call_tool(
        &self,
        name: &str,
        args: Map<String, Value>,
        wait: Wait,
    ) -> Result<RawCall, Error> {
        let method = format!("tools/call {name}");
        let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(args);
        self.stamp_log_level(&mut params.meta);
        for _round in 0..8 {
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
            let mut options = PeerRequestOptions::with_timeout(wait.timeout);
            if wait.reset_on_progress {
                options = options.reset_timeout_on_progress();
            }
            if let Some(max) = wait.max_total {
                options = options.with_max_total_timeout(max);
            }
            let handle = self
                .peer
                .send_request_with_option(request, options)
                .await
                .map_err(|err| self.service_error(&method, err))?;
            let guard = CancelOnDrop {
                peer: self.peer.clone(),
                id: Some(handle.id.clone()),
            };
            let response = handle.await_response().await;
            guard.disarm();
            let response = match response {
                Ok(response) => response,
                Err(ServiceError::McpError(error)) => {
                    if let Some(oversized) = self.limit.recognise(error.data.as_ref()) {
                        return Err(self.too_large(&method, oversized));
                    }
                    return Ok(RawCall::Rejected {
                        code: error.code.0,
                        message: error.message.to_string(),
                    });
                }
                Err(err) => return Err(self.service_error(&method, err)),
            };
            match response {
                ServerResult::CallToolResult(result) => {
                    let content = result
                        .content
                        .iter()
                        .map(|block| serde_json::to_value(block).unwrap_or(Value::Null))
                        .collect();
                    return Ok(RawCall::Result {
                        content,
                        structured: result.structured_content.clone(),
                        is_error: result.is_error.unwrap_or(false),
                    });
                }
                ServerResult::InputRequiredResult(input) => {
                    let responses = self
                        .answerer
                        .answer_all(input.input_requests.clone().unwrap_or_default())
                        .await;
                    params.input_responses = (!responses.is_empty()).then_some(responses);
                    params.request_state = input.request_state.clone();
                }
                other => {
                    return Err(Error::Protocol {
                        server: self.server.clone(),
                        method,
                        code: 0,
                        message: format!("unexpected reply {}", variant_name(&other)),
                    });
                }
            }
        }
        Err(Error::Protocol {
            server: self.server.clone(),
            method,
            code: 0,
            message: "the server kept asking for input (8 rounds)".to_owned(),
        })
    }

    /// Closes the connection: ends the service loop (which closes stdin, waits for the process and
    /// signals it if it lingers), then makes sure the process group is gone.
    pub(crate) async fn close(&self) {
        if self.closing.swap(true, Ordering::SeqCst) {
            return;
        }
        self.cancel_loop();
        let ended = tokio::time::timeout(Duration::from_secs(3), self.wait_ended()).await;
        if ended.is_err() {
            warn!(
                server = self.server,
                "mcp server did not stop within 3s of close; killing it"
            );
        }
        if let Some(child) = &self.child {
            child.kill_group();
            child.reap(Duration::from_secs(1)).await;
        }
    }

    fn cancel_loop(&self) {
        let token = self
            .cancel
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(token) = token {
            token.cancel();
        }
    }

    async fn bounded<T>(
        &self,
        method: &str,
        wait: Wait,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, Error> {
        // Lists, reads and prompts report no progress, so the per-answer timeout is their limit (the
        // error says so); the total cap only matters for calls that progress resets.
        match tokio::time::timeout(wait.timeout, request).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(ServiceError::McpError(error))) => {
                Err(match self.limit.recognise(error.data.as_ref()) {
                    Some(oversized) => self.too_large(method, oversized),
                    None => Error::Protocol {
                        server: self.server.clone(),
                        method: method.to_owned(),
                        code: error.code.0,
                        message: error.message.to_string(),
                    },
                })
            }
            Ok(Err(err)) => Err(self.service_error(method, err)),
            Err(_) => Err(match self.limit.in_progress() {
                Some(oversized) => self.too_large(method, oversized),
                None => Error::Timeout {
                    server: self.server.clone(),
                    method: method.to_owned(),
                    after: wait.timeout,
                },
            }),
        }
    }

    /// A request failed by a message over the size limit (answered in its place, or still arriving
    /// when the request timed out).
    fn too_large(&self, method: &str, oversized: limit::Oversized) -> Error {
        Error::TooLarge {
            server: self.server.clone(),
            method: method.to_owned(),
            size: oversized.size,
            limit: oversized.limit,
        }
    }

    fn service_error(&self, method: &str, err: ServiceError) -> Error {
        let server = self.server.clone();
        match err {
            ServiceError::Timeout { timeout } => match self.limit.in_progress() {
                Some(oversized) => self.too_large(method, oversized),
                None => Error::Timeout {
                    server,
                    method: method.to_owned(),
                    after: timeout,
                },
            },
            ServiceError::Cancelled { .. } => Error::Cancelled {
                server,
                method: method.to_owned(),
            },
            ServiceError::McpError(error) => Error::Protocol {
                server,
                method: method.to_owned(),
                code: error.code.0,
                message: error.message.to_string(),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                // rmcp's HTTP transport ends a request whose answer passes its size limit (set to
                // ours) the same way, with no more said: the reason names the limit.
                let closed = match &self.child {
                    Some(_) => "the connection closed".to_owned(),
                    None => format!(
                        "the connection closed (as it does on an answer over the limit of {} bytes, maxMessageBytes)",
                        self.limit.bytes()
                    ),
                };
                if matches!(err, ServiceError::TransportClosed) && self.ended().is_none() {
                    warn!(server, "mcp server connection lost");
                    let _ = self.failed.set(closed.clone());
                }
                Error::Dead {
                    server,
                    reason: self.ended().unwrap_or(closed),
                }
            }
            other => Error::Protocol {
                server,
                method: method.to_owned(),
                code: 0,
                message: tidy(&claij_backends::redact::redact_urls_in(&other.to_string())),
            },
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Without an explicit close (a dropped client, a runtime shutting down), end the loop and
        // kill the process group now, synchronously: a spawned cleanup might never run.
        self.cancel_loop();
        // Only while the loop has not reported its end: once it has, the transport has stopped the
        // process (and after that its id could be reused).
        if let Some(child) = &self.child
            && self.ended.borrow().is_none()
        {
            child.kill_group();
        }
    }
}

/// A tool as listed.
pub(crate) struct ToolWire {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub input: Value,
    pub output: Option<Value>,
}

/// Sends `notifications/cancelled` for a request whose future is dropped before its answer.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
}

impl CancelOnDrop {
    fn disarm(mut self) {
        self.id = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let notification = rmcp::model::CancelledNotification::new(
                    rmcp::model::CancelledNotificationParam::new(
                        Some(id),
                        Some("cancelled by the client".to_owned()),
                    ),
                );
                let _ = peer.send_notification(notification.into()).await;
            });
        }
    }
}

fn lifecycle(start: StartMode) -> ClientLifecycleMode {
    match start {
        StartMode::PreferStateless => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        },
        StartMode::Stateless => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        StartMode::Initialize => ClientLifecycleMode::Initialize,
    }
}

/// Why a server refused a connection's requests for good, once known.
pub(crate) type Refusal = Arc<std::sync::OnceLock<String>>;

/// A failed handshake (a stdio server's process group killed).
struct Failed {
    error: Error,
    /// The discovery probe failed in a way `initialize` alone may not: see [`probe_failed`].
    probe_failed: bool,
    /// The `WWW-Authenticate` challenge of the 401 or 403 that stopped a streamable-HTTP start.
    #[cfg_attr(
        not(feature = "oauth"),
        allow(dead_code, reason = "read by the OAuth start only")
    )]
    challenge: Option<String>,
}

/// Whether a failed start in rmcp's `Auto` mode may have failed on the `server/discover` probe
/// rather than on the server: rmcp falls back to `initialize` only when the probe gets a JSON-RPC
/// error or no answer in 10 s, not when it gets an empty or other result (as the conformance
/// suite's 2025-11-25 server answers unknown methods), an HTTP error, or an answer so late that it
/// meets the fallback `initialize` (`ConflictInitResponseId`). Not when rmcp already fell back and
/// `initialize` failed, the start was cancelled, or (`stdio`) the process closed the connection:
/// starting it again would only repeat that.
fn probe_failed(err: &rmcp::service::ClientInitializeError, stdio: bool) -> bool {
    use rmcp::service::ClientInitializeError as E;
    match err {
        E::LegacyFallbackFailed { .. } | E::Cancelled => false,
        E::ConnectionClosed(_) => !stdio,
        _ => true,
    }
}

async fn handshake(
    server: &str,
    options: &ClientOptions,
    handler: handler::Handler,
    transport: spawn::StdioTransport,
    lifecycle: ClientLifecycleMode,
    child: &spawn::ChildGuard,
) -> Result<RunningService<RoleClient, handler::Handler>, Failed> {
    match tokio::time::timeout(
        options.connect_timeout,
        handler
            .serve_with_lifecycle(transport, lifecycle)
            .instrument(crate::client::spans::session(server)),
    )
    .await
    {
        Ok(Ok(running)) => Ok(running),
        Ok(Err(err)) => {
            child.kill_group();
            let probe_failed = probe_failed(&err, true);
            let mut message = tidy(&err.to_string());
            if let Some(tail) = child.stderr_tail().last() {
                message.push_str(&format!(" (last stderr line: {tail})"));
            }
            Err(Failed {
                error: Error::Handshake {
                    server: server.to_owned(),
                    message,
                },
                probe_failed,
                challenge: None,
            })
        }
        Err(_) => {
            child.kill_group();
            Err(Failed {
                error: Error::Timeout {
                    server: server.to_owned(),
                    method: "initialize".to_owned(),
                    after: options.connect_timeout,
                },
                probe_failed: false,
                challenge: None,
            })
        }
    }
}

#[cfg(feature = "http")]
async fn handshake_no_child<T, E, A>(
    server: &str,
    url: &str,
    options: &ClientOptions,
    handler: handler::Handler,
    transport: T,
    lifecycle: ClientLifecycleMode,
) -> Result<RunningService<RoleClient, handler::Handler>, Failed>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    match tokio::time::timeout(
        options.connect_timeout,
        handler
            .serve_with_lifecycle(transport, lifecycle)
            .instrument(crate::client::spans::session(server)),
    )
    .await
    {
        Ok(Ok(running)) => Ok(running),
        // The transport's message may quote the URL: never its query string or user info.
        Ok(Err(err)) => Err(Failed {
            probe_failed: probe_failed(&err, false),
            challenge: err.auth_challenge().map(str::to_owned),
            error: Error::Handshake {
                server: server.to_owned(),
                message: tidy(&claij_backends::redact::redact_urls_in(
                    &err.to_string()
                        .replace(url, &claij_backends::redact::redact_url(url)),
                )),
            },
        }),
        Err(_) => Err(Failed {
            error: Error::Timeout {
                server: server.to_owned(),
                method: "initialize".to_owned(),
                after: options.connect_timeout,
            },
            probe_failed: false,
            challenge: None,
        }),
    }
}

#[cfg(feature = "http")]
fn http_transport(
    server: &str,
    http: &crate::config::HttpServer,
    options: &ClientOptions,
    max_message_bytes: usize,
) -> Result<
    rmcp::transport::StreamableHttpClientTransport<
        impl rmcp::transport::streamable_http_client::StreamableHttpClient,
    >,
    Error,
> {
    Ok(rmcp::transport::StreamableHttpClientTransport::from_config(
        http_config(server, http, options, max_message_bytes)?,
    ))
}

/// The streamable-HTTP transport's settings for `http`: reconnects, size limits, headers.
#[cfg(feature = "http")]
fn http_config(
    server: &str,
    http: &crate::config::HttpServer,
    options: &ClientOptions,
    max_message_bytes: usize,
) -> Result<rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig, Error> {
    use rmcp::transport::common::client_side_sse::ExponentialBackoff;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let mut config = StreamableHttpClientTransportConfig::with_uri(http.url.clone());
    let mut backoff = ExponentialBackoff::default();
    backoff.max_times = Some(options.http_reconnects);
    backoff.base_duration = Duration::from_millis(100);
    backoff.max_delay = Some(Duration::from_secs(1));
    config.retry_config = Arc::new(backoff);
    config.max_sse_event_size = max_message_bytes;
    config.max_json_response_size = max_message_bytes;
    for (name, value) in &http.headers {
        if name.eq_ignore_ascii_case("authorization")
            && let Some(token) = value.strip_prefix("Bearer ")
        {
            config.auth_header = Some(token.to_owned());
            continue;
        }
        let bad = |what: &str| Error::Config {
            pointer: format!("/mcpServers/{server}/headers"),
            message: format!("header `{name}`: invalid {what}"),
        };
        let header_name = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?;
        let header_value = http::HeaderValue::from_str(value).map_err(|_| bad("value"))?;
        config.custom_headers.insert(header_name, header_value);
    }
    Ok(config)
}

/// An rmcp error message without the Rust type names it embeds (`Transport [rmcp::...<...>]`).
fn tidy(message: &str) -> String {
    let mut out = message.to_owned();
    while let Some(start) = out.find(" [rmcp::") {
        let Some(len) = out[start..].find(']') else {
            break;
        };
        out.replace_range(start..start + len + 1, "");
    }
    out
}

fn to_values<T: serde::Serialize>(
    server: &str,
    method: &str,
    items: &[T],
) -> Result<Vec<Value>, Error> {
    items
        .iter()
        .map(|item| to_value(server, method, item))
        .collect()
}

fn to_value<T: serde::Serialize>(server: &str, method: &str, item: &T) -> Result<Value, Error> {
    serde_json::to_value(item).map_err(|err| Error::Protocol {
        server: server.to_owned(),
        method: method.to_owned(),
        code: 0,
        message: format!("cannot represent the reply: {err}"),
    })
}

fn variant_name(result: &ServerResult) -> String {
    serde_json::to_value(result)
        .ok()
        .and_then(|v| {
            v.as_object()
                .map(|m| m.keys().cloned().collect::<Vec<_>>().join(","))
        })
        .unwrap_or_else(|| "of another kind".to_owned())
}
