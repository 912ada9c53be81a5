//! claij-mcp integration tests, against real MCP servers (`cargo xtask mcp-servers` installs them;
//! `CLAIJ_MCP_SERVERS` says where).

mod cancellation;
mod client;
mod failures;
mod fsm;
mod http;
mod interceptor;
mod limits;
mod logging;
#[cfg(feature = "oauth")]
mod oauth;
#[cfg(feature = "http")]
mod param_headers;
mod resources;
mod sampling;
mod servers;
mod slow_start;
mod spans;
mod sse_retry;
