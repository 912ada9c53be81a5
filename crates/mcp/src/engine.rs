//! MCP tools in claij's one tool engine: a service's tool is a [`Tool`] ([`McpTool`]), and a
//! [`Services`] view's tools run through an [`Executor`] ([`Services::executor`]) on every route:
//! natively in an agent run, through the reply's `mcp_calls` ([`crate::McpInterceptor`]) and
//! through a `tools/call` service state ([`crate::mcp_fsm::McpService`]).

use std::sync::Arc;

use claij_backends::BoxFuture;
use claij_interceptors::{Executor, Limits, Tool, ToolError, ToolOrigin, ToolSet};
use claij_validation::Violation;
use serde_json::Value;

use crate::services::Services;
use crate::tool::ToolInfo;

/// One tool of one server as a claij [`Tool`], named `<service>__<tool>` ([`native_name`]: providers
/// refuse the `.` of `service.tool` in a function name); calls go through [`Services::call`], so a
/// project's filter still applies. The output is the MCP `CallToolResult`
/// ([`crate::CallOutcome::to_mcp`]), an error result (`isError: true`) included; a call that could
/// not complete (a dead server, the client's own timeout) is a [`ToolError::Failed`] with its text.
#[derive(Clone)]
pub struct McpTool {
    info: Arc<ToolInfo>,
    services: Services,
    name: String,
    description: String,
    parameters: Value,
}

impl McpTool {
    /// `info`, called through `services`.
    pub fn new(info: Arc<ToolInfo>, services: Services) -> Self {
        let description = info
            .description
            .clone()
            .or_else(|| info.title.clone())
            .unwrap_or_default();
        Self {
            name: native_name(&info.server, &info.name),
            parameters: info.normalised_input(),
            description,
            info,
            services,
        }
    }

    /// The server's tool.
    pub fn info(&self) -> &ToolInfo {
        &self.info
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    fn origin(&self) -> ToolOrigin {
        ToolOrigin::Mcp {
            server: self.info.server.clone(),
        }
    }

    fn check(&self, arguments: &Value) -> Result<(), Vec<Violation>> {
        self.info.check_args(arguments)
    }

    fn call(&self, arguments: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            if tokio::runtime::Handle::try_current().is_err() {
                return Err(ToolError::Failed(
                    "not run: MCP calls need a tokio runtime".to_owned(),
                ));
            }
            self.services
                .call(&self.info.server, &self.info.name, arguments)
                .await
                .map(|outcome| outcome.to_mcp())
                .map_err(|e| ToolError::Failed(e.to_string()))
        })
    }
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The tools a view allows now (lists change when a server says so).
struct ServiceTools(Services);

impl ToolSet for ServiceTools {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.0
            .tools()
            .into_iter()
            .map(|info| Arc::new(McpTool::new(info, self.0.clone())) as Arc<dyn Tool>)
            .collect()
    }
}

impl Services {
    /// The tools this view allows, as [`McpTool`]s run by one [`Executor`] with
    /// [`default_limits`]; calls naming no allowed tool have origin `mcp` on server `?`.
    pub fn executor(&self) -> Executor {
        Executor::of(Arc::new(ServiceTools(self.clone())))
            .with_limits(default_limits())
            .with_origin(ToolOrigin::Mcp {
                server: "?".to_owned(),
            })
    }
}

/// The default limits of MCP calls: [`Limits::default`] but no timeout of the executor's (`None`),
/// so each server's own request timeout ([`crate::ClientOptions`], a server's `timeout` in the
/// configuration) decides.
pub fn default_limits() -> Limits {
    Limits {
        timeout: None,
        ..Limits::default()
    }
}

/// The name of an MCP tool as a native function: `<service>__<tool>`, any character providers
/// refuse in a function name (anything but ASCII letters, digits, `_` and `-`) written `_`.
pub fn native_name(service: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("{}__{}", clean(service), clean(tool))
}
