//! The client side of server-initiated traffic: sampling, roots and elicitation requests answered
//! through [`Hooks`], progress and log notifications traced and passed to the hooks' callbacks,
//! list changes recorded.
//!
//! The 2026-07-28 revision deprecates sampling, roots and logging (SEP-2577), and rmcp marks their
//! types deprecated; servers of both eras still send them, so claij keeps answering.
#![allow(deprecated)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rmcp::model::{
    ClientInfo, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ErrorCode, InputRequest, InputRequests, InputResponses, ListRootsResult,
    LoggingMessageNotificationParam, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};
use tracing::{Instrument as _, Span, debug, info, warn};

use crate::hooks::{ElicitationReply, ElicitationRequest, Hooks, Progress, SamplingRequest};
use crate::logging::LogLevel;

/// What the client learns from notifications, shared with [`crate::McpClient`].
#[derive(Debug, Default)]
pub(crate) struct Events {
    /// The server said its tool list changed: the cached list is stale.
    pub tools_changed: AtomicBool,
    /// Progress notifications seen.
    pub progress: AtomicU64,
    /// The log level the client asks for; on the 2026-07-28 revision it goes with each call.
    pub log_level: std::sync::RwLock<Option<LogLevel>>,
    /// The spans of the tool calls in flight, by number: a server's request or log message that
    /// comes while exactly one call is in flight goes in that call's span.
    calls: std::sync::Mutex<Vec<(u64, Span)>>,
    next_call: AtomicU64,
}

/// A tool call in flight, registered with [`Events::call_started`] until dropped.
pub(crate) struct InFlight {
    events: Arc<Events>,
    number: u64,
}

impl Events {
    /// Registers a call in flight, in `span`, until the returned guard is dropped.
    pub(crate) fn call_started(self: &Arc<Self>, span: Span) -> InFlight {
        let number = self.next_call.fetch_add(1, Ordering::Relaxed);
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((number, span));
        InFlight {
            events: Arc::clone(self),
            number,
        }
    }

    /// The span of the one tool call in flight; `None` with none or several (over stdio nothing
    /// says which call a server's request belongs to).
    fn only_call(&self) -> Option<Span> {
        match self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_slice()
        {
            [(_, span)] => Some(span.clone()),
            _ => None,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.events
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|(number, _)| *number != self.number);
    }
}

/// rmcp's `ClientHandler`, backed by claij's [`Hooks`].
#[derive(Clone)]
pub(crate) struct Handler {
    server: Arc<str>,
    hooks: Hooks,
    events: Arc<Events>,
}

impl Handler {
    pub(crate) fn new(server: &str, hooks: Hooks, events: Arc<Events>) -> Self {
        Self {
            server: server.into(),
            hooks,
            events,
        }
    }

    /// The span of a request from the server: a child of the tool call it came during when that
    /// call is the only one in flight, else of the connection's `mcp.session`.
    fn request_span(&self, method: &'static str) -> Span {
        let parent = self.events.only_call().unwrap_or_else(Span::current);
        tracing::info_span!(
            parent: &parent,
            "mcp.server_request",
            "otel.name" = format!("{method} {}", self.server),
            "otel.kind" = "server",
            "claij.mcp.server" = &*self.server,
            "claij.mcp.method" = method,
        )
    }

    /// The log level the client asks for, as last set.
    pub(super) fn log_level(&self) -> Option<LogLevel> {
        *self
            .events
            .log_level
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn sample(
        &self,
        params: &CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let Some(sampler) = &self.hooks.sampler else {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "sampling is not enabled",
                None,
            ));
        };
        let raw = serde_json::to_value(params).unwrap_or(Value::Null);
        let request = sampling_request(&self.server, &raw);
        debug!(server = %self.server, messages = request.messages.len(), "mcp server asks for a completion");
        let reply = sampler.sample(&request).await.map_err(|err| {
            warn!(server = %self.server, error = %err, "sampling failed");
            ErrorData::internal_error(format!("sampling failed: {err}"), None)
        })?;
        let mut result = json!({
            "role": "assistant",
            "content": {"type": "text", "text": reply.text},
            "model": reply.model,
        });
        if let (Some(reason), Value::Object(map)) = (reply.stop_reason, &mut result) {
            map.insert("stopReason".to_owned(), Value::String(reason));
        }
        serde_json::from_value(result)
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))
    }

    async fn elicit(&self, params: &ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        let raw = serde_json::to_value(params).unwrap_or(Value::Null);
        let message = raw
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let schema = raw
            .get("requestedSchema")
            .or_else(|| raw.get("url"))
            .cloned()
            .unwrap_or(Value::Null);
        let reply = match &self.hooks.elicitor {
            None => ElicitationReply::Decline,
            Some(elicitor) => {
                let request = ElicitationRequest::new(self.server.as_ref(), message, schema);
                elicitor.elicit(&request).await
            }
        };
        info!(server = %self.server, accepted = matches!(reply, ElicitationReply::Accept(_)), "mcp elicitation answered");
        let result = match reply {
            ElicitationReply::Accept(content) => json!({"action": "accept", "content": content}),
            ElicitationReply::Decline => json!({"action": "decline"}),
            ElicitationReply::Cancel => json!({"action": "cancel"}),
        };
        serde_json::from_value(result)
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))
    }

    fn roots(&self) -> ListRootsResult {
        serde_json::from_value(json!({"roots": self.hooks.roots})).unwrap_or_default()
    }

    /// Answers the input requests of an `InputRequiredResult` (protocol 2026-07-28): each key gets
    /// its result; a request that cannot be answered is left out, and the server decides.
    pub(crate) async fn answer_all(&self, requests: InputRequests) -> InputResponses {
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            let answer = match request {
                InputRequest::CreateMessage(request) => self
                    .sample(&request.params)
                    .await
                    .ok()
                    .and_then(|r| serde_json::to_value(r).ok()),
                InputRequest::Elicitation(request) => self
                    .elicit(&request.params)
                    .await
                    .ok()
                    .and_then(|r| serde_json::to_value(r).ok()),
                InputRequest::ListRoots(_) => serde_json::to_value(self.roots()).ok(),
                _ => None,
            };
            if let Some(answer) = answer {
                responses.insert(key, answer);
            }
        }
        responses
    }
}

impl ClientHandler for Handler {
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.sample(&params)
            .instrument(self.request_span("sampling/createMessage"))
            .await
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(self.roots())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.elicit(&request)
            .instrument(self.request_span("elicitation/create"))
            .await
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.events.progress.fetch_add(1, Ordering::Relaxed);
        let progress = Progress {
            server: self.server.to_string(),
            progress: params.progress,
            total: params.total,
            message: params.message.clone(),
        };
        debug!(server = %self.server, progress = progress.progress, total = progress.total, message = progress.message, "mcp progress");
        if let Some(callback) = &self.hooks.on_progress {
            callback(&progress);
        }
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let message = super::logging::log_message(&self.server, params);
        message.log();
        if let Some(callback) = &self.hooks.on_log {
            callback(&message);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        debug!(server = %self.server, "mcp tool list changed");
        self.events.tools_changed.store(true, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientInfo {
        let mut capabilities = serde_json::Map::new();
        if self.hooks.sampler.is_some() {
            capabilities.insert("sampling".to_owned(), json!({}));
        }
        if !self.hooks.roots.is_empty() {
            capabilities.insert("roots".to_owned(), json!({"listChanged": false}));
        }
        if self.hooks.elicitor.is_some() {
            capabilities.insert("elicitation".to_owned(), json!({"form": {}}));
        }
        let info = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "claij", "version": env!("CARGO_PKG_VERSION")},
        });
        serde_json::from_value(info).unwrap_or_default()
    }
}

/// claij's view of a sampling request's JSON.
fn sampling_request(server: &str, raw: &Value) -> SamplingRequest {
    let text_of = |content: &Value| -> String {
        let blocks: Vec<&Value> = match content {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        blocks
            .iter()
            .map(|block| match block.get("type").and_then(Value::as_str) {
                Some("text") => block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                Some(kind) => format!("[{kind}]"),
                None => block.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let messages = raw
        .get("messages")
        .and_then(Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .map(|m| {
                    let role = m
                        .get("role")
                        .and_then(Value::as_str)
                        .unwrap_or("user")
                        .to_owned();
                    (role, text_of(m.get("content").unwrap_or(&Value::Null)))
                })
                .collect()
        })
        .unwrap_or_default();
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    SamplingRequest {
        server: server.to_owned(),
        messages,
        system_prompt: raw
            .get("systemPrompt")
            .and_then(Value::as_str)
            .map(str::to_owned),
        max_tokens: raw
            .get("maxTokens")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(512),
        #[allow(
            clippy::cast_possible_truncation,
            reason = "a temperature is a small number"
        )]
        temperature: raw
            .get("temperature")
            .and_then(Value::as_f64)
            .map(|t| t as f32),
        stop_sequences: strings(raw.get("stopSequences")),
        model_hints: raw
            .pointer("/modelPreferences/hints")
            .and_then(Value::as_array)
            .map(|hints| {
                hints
                    .iter()
                    .filter_map(|h| h.get("name").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
    }
}
