//! Model Context Protocol for claij: a client for MCP servers that hides the protocol's rough edges,
//! the MCP interceptor that lets a model call their tools through its validated reply, per-project
//! service filtering, and the MCP FSM.
//!
//! ```no_run
//! use claij_mcp::{ClientOptions, McpClient, StdioServer};
//! use serde_json::json;
//!
//! # async fn demo() -> Result<(), claij_mcp::Error> {
//! let time = McpClient::connect("time", StdioServer::new("mcp-server-time", ["--local-timezone", "UTC"]), ClientOptions::default()).await?;
//! println!("{} speaks {}", time.name(), time.protocol_version());
//! let outcome = time.call("get_current_time", json!({"timezone": "Europe/Paris"})).await?;
//! assert!(!outcome.is_error);
//! let bad = time.call("get_current_time", json!({"timezone": 5})).await?;
//! assert!(bad.is_error); // caught against the tool's inputSchema, never sent
//! time.close().await;
//! # Ok(()) }
//! ```
//!
//! What is here:
//! - [`McpClient`]: one server over stdio or streamable HTTP (feature `http`, on by default), on the
//!   official SDK rmcp (whose types stay inside this crate). Every request has a timeout
//!   ([`ClientOptions`]), reset by progress and capped in total, and every message from a server a
//!   size limit ([`ClientOptions::max_message_bytes`], 64 MiB; a larger answer fails its request at
//!   once with [`Error::TooLarge`]); the protocol start prefers the
//!   stateless 2026-07-28 revision and falls back to the 2025-11-25 handshake ([`StartMode`]); tool
//!   calls give one [`CallOutcome`] `{content, structured, is_error}` whether the server answered an
//!   error result or a JSON-RPC error ([`CallFailure`] says which), arguments are checked against the
//!   tool's `inputSchema` before sending and `structuredContent` against its `outputSchema` after; a
//!   server that dies is noticed at once and, with a [`Restart`] policy, started again; its process
//!   group is killed on close or drop. Servers may ask the client for completions, roots and answers
//!   from a person: [`Hooks`] ([`BackendSampler`] answers sampling with a claij backend,
//!   [`ElicitationQueue`] hands questions to a person). Servers' log messages ([`LogMessage`]) go to
//!   [`Hooks::on_log`], at the level [`ClientOptions::log_level`] asks for (`logging/setLevel`).
//! - [`McpConfig`]: the common `mcpServers` configuration file, with `projects`.
//! - [`Services`]: every configured server, tools named `server.tool`, lists cached and refreshed
//!   when a server says they changed.
//! - [`Project`]: which services and tools a project may use, and its "hat" prompt.
//! - [`McpTool`]: a server's tool as a claij [`Tool`](claij_interceptors::Tool), and
//!   [`Services::executor`]: a view's tools run by claij's one tool engine
//!   ([`claij_interceptors::Executor`]), the same argument check and [`Limits`](claij_interceptors::Limits)
//!   on every route (natively in an agent run, `mcp_calls`, the MCP FSM's `tools/call`).
//! - [`McpInterceptor`]: adds `mcp_calls` to the response schema (a `oneOf` per allowed tool),
//!   documents the services in the prompt, runs the calls after a valid reply (concurrently, bounded)
//!   and shows their results, truncated to a budget, on the next turn.
//! - [`mcp_fsm`]: the MCP FSM (`llm` ⇄ `servicing` → `end`) and the service that runs its calls.
//!
//! - OAuth 2.1 (feature `oauth`, on by default): a streamable-HTTP server that answers 401 is
//!   authorized through `ClientOptions::with_oauth` (an `OAuth` naming the client and the
//!   `Authorizer` who approves; `Headless` for test servers), on rmcp's `auth`.
//!
//! Errors: [`Error`], naming the server and the request.

#[cfg(feature = "oauth")]
mod auth;
mod client;
mod config;
mod engine;
mod error;
mod hooks;
mod interceptor;
mod logging;
pub mod mcp_fsm;
mod outcome;
mod project;
mod services;
mod tool;
mod wire;

#[cfg(feature = "oauth")]
pub use auth::{Authorizer, Headless, NeedsAuthorization, OAuth, token_file};
pub use client::{
    ClientOptions, DEFAULT_MAX_MESSAGE_BYTES, McpClient, Restart, ServerInfo, StartMode,
};
pub use config::{
    Elicitation, HttpServer, MAX_TIMEOUT, MESSAGE_BYTES, McpConfig, OAuthSettings, ServerConfig,
    StdioServer, timeout_from_secs,
};
pub use engine::{McpTool, default_limits, native_name};
pub use error::{Error, ErrorKind, Result};
pub use hooks::{
    BackendSampler, ElicitationQueue, ElicitationReply, ElicitationRequest, Elicitor, Hooks, LogFn,
    PendingElicitation, Progress, ProgressFn, Root, Sampler, SamplingReply, SamplingRequest,
};
pub use interceptor::{EXTENSION, McpInterceptor, STATE_VERSION};
pub use logging::{LogLevel, LogMessage, SERVER_LOG_TARGET};
pub use outcome::{CallFailure, CallOutcome, Content};
pub use project::Project;
pub use services::{Refusal, Services};
pub use tool::{ToolInfo, normalise};

/// What [`Sampler`] and [`Elicitor`] implementations return, so they need no other claij crate.
pub use claij_backends::BoxFuture;
/// The error a [`Sampler`] returns.
pub use claij_interceptors::BoxError;
