//! [`McpInterceptor`]: the model calls the tools of MCP services by listing them in its reply.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use claij_backends::{BoxFuture, ToolCall, ToolSpec};
use claij_interceptors::{
    BoxError, Carried, Context, Interceptor, NativeTools, Prompts, Schema, ToolOrigin, ToolResult,
    Toolbox,
};
use serde_json::{Value, json};
use tracing::debug;

use crate::error::Error;
use crate::services::Services;
use crate::tool::ToolInfo;

mod delta;
mod render;
#[cfg(test)]
mod tests;

/// The extension id of the `mcp_calls` schema delta.
pub const EXTENSION: &str = "mcp-v1";
/// The version of what the interceptor carries to the next turn ([`Interceptor::carry`]): the last
/// reply's results (origin [`ToolOrigin::Mcp`]) as a JSON array of [`ToolResult`]s.
pub const STATE_VERSION: u32 = 1;

/// The MCP interceptor: the tools of a [`Services`] view offered to the model through its reply.
///
/// ```no_run
/// use std::sync::Arc;
/// use claij_test_support::Scripted;
/// use claij_interceptors::{Chain, Config, Context, Pipeline};
/// use claij_mcp::{ClientOptions, McpConfig, McpInterceptor, Services};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let config = McpConfig::from_json(r#"{"mcpServers": {
///     "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]}
/// }}"#)?;
/// let services = Services::connect(&config, ClientOptions::default()).await?;
/// let backend = Arc::new(Scripted::replies([
///     r#"{"answer": "", "state": "s", "mcp_calls": [{"service": "time", "tool": "get_current_time", "args": {"timezone": "UTC"}}]}"#,
///     r#"{"answer": "It is noon.", "state": "done"}"#,
/// ]));
/// let chain = Chain::new().with(McpInterceptor::new(services.clone()));
/// let pipeline = Pipeline::new(backend, Config::new("test-model"), chain);
/// let mut ctx = Context::default();
/// pipeline.ask(&mut ctx, "What time is it?").await?; // the call runs after the reply
/// assert_eq!(ctx.tool_results[0].name, "time.get_current_time");
/// pipeline.ask(&mut ctx, "So?").await?; // and its result is in this turn's prompt
/// services.close().await;
/// # Ok(()) }
/// ```
///
/// # Schema delta
///
/// Extension `mcp-v1` ([`EXTENSION`], [`McpInterceptor::schema_delta`]), nothing while no tool is
/// allowed: an optional `mcp_calls` array of at most [`InterceptorConfig::max_calls`] calls, whose
/// items are a `oneOf` with one branch per tool the view allows ([`Services::tools`], so a project's
/// filter decides what the model can even name):
///
/// ```json
/// {"type": "object",
///  "properties": {"service": {"const": "time"}, "tool": {"const": "get_current_time"}, "args": {…}},
///  "required": ["service", "tool", "args"], "additionalProperties": false}
/// ```
///
/// `args` is the tool's `inputSchema` rewritten as draft 2020-12 ([`crate::normalise`]) and embedded
/// with [`claij_schema::embed`] under the prefix `<service>.<tool>` (definitions hoisted to the delta's
/// `$defs`, references rewritten). A schema that does not compile on its own (a reference to another
/// document) is offered as `{"type": "object"}`: the client still checks the arguments before sending.
///
/// # Prompt
///
/// The project's hat ([`crate::Project::hat`]) when the view has a project; the services, each with its
/// tools, a tool's description cut to its first sentence (at most about 200 characters) and its
/// arguments in the compact notation of [`claij_schema::to_compact`]
/// ([`McpInterceptor::prompt_section`]); and the results of the previous turn's calls, cut to share
/// [`InterceptorConfig::result_budget`] characters ([`McpInterceptor::results_section`]).
///
/// # Running calls
///
/// After a valid reply, its calls run at most [`InterceptorConfig::concurrency`] at a time, each
/// under [`InterceptorConfig::timeout`] when set, every one through [`Services::call`] (which refuses,
/// and records, a tool the project does not allow, even if the reply names it). Calls past
/// [`InterceptorConfig::max_calls`] are not run but reported. Results keep the order of the calls and
/// go into [`Context::tool_results`] as `server.tool` of origin [`ToolOrigin::Mcp`], the output the MCP `CallToolResult`
/// ([`crate::CallOutcome::to_mcp`]) or, when the call could not complete (a timeout, a dead server),
/// the error's text: nothing a server does fails the pipeline. Each turn replaces the previous turn's
/// results of origin [`ToolOrigin::Mcp`] and keeps the others (the `tools` interceptor's, whatever
/// their names); tool lists that servers announced as changed are fetched again for the next turn.
pub struct McpInterceptor {
    services: Services,
    config: InterceptorConfig,
    /// The delta and the prompt section of the last tool list seen.
    derived: Mutex<Option<Arc<Derived>>>,
}

/// How MCP calls run and how their results are shown.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InterceptorConfig {
    /// Calls running at once, of a reply or of an agent run's step (default 4; 0 counts as 1).
    pub concurrency: usize,
    /// Most calls in one reply or agent step (default 8): the schema's `maxItems`; calls past it
    /// are not run.
    pub max_calls: usize,
    /// Longest one call may take before it is dropped and reported as timed out (default `None`: the
    /// client's own timeout applies).
    pub timeout: Option<Duration>,
    /// Characters of arguments and outputs shown in the next prompt, shared by the results (default 4000).
    pub result_budget: usize,
}

impl Default for InterceptorConfig {
    fn default() -> Self {
        Self {
            concurrency: 4,
            max_calls: 8,
            timeout: None,
            result_budget: 4000,
        }
    }
}

/// What the interceptor derives from one tool list.
struct Derived {
    tools: Vec<Arc<ToolInfo>>,
    delta: Option<Value>,
    section: Option<String>,
}

/// One call of a reply, ready to run or refused.
struct Planned {
    name: String,
    /// The server the call names (`?` when it names none), for the result's origin.
    server: String,
    args: Value,
    target: Result<(String, String), String>,
}

impl McpInterceptor {
    /// The interceptor over `services` (and its project, if the view has one), default
    /// [`InterceptorConfig`].
    pub fn new(services: Services) -> Self {
        Self {
            services,
            config: InterceptorConfig::default(),
            derived: Mutex::new(None),
        }
    }

    /// Sets the configuration.
    #[must_use]
    pub fn with_config(mut self, config: InterceptorConfig) -> Self {
        self.config = config;
        self.derived = Mutex::new(None);
        self
    }

    /// The services.
    pub fn services(&self) -> &Services {
        &self.services
    }

    /// The configuration.
    pub fn config(&self) -> &InterceptorConfig {
        &self.config
    }

    /// The schema delta for the tools as last listed (see [`McpInterceptor`]); `None` without tools.
    pub fn schema_delta(&self) -> Option<Value> {
        self.derived().delta.clone()
    }

    /// The system-prompt section documenting the services and their tools; `None` without tools.
    pub fn prompt_section(&self) -> Option<String> {
        self.derived().section.clone()
    }

    /// The system-prompt section showing `results` (those of origin [`ToolOrigin::Mcp`]), cut to the
    /// result budget; `None` when there are none.
    pub fn results_section(&self, results: &[ToolResult]) -> Option<String> {
        render::results_section(results, self.config.result_budget)
    }

    /// Runs the calls of a reply's `mcp_calls` value and returns one result per call, in call order.
    ///
    /// `Null` (no `mcp_calls`) gives no results; anything but an array gives one error result.
    pub async fn run(&self, calls: &Value) -> Vec<ToolResult> {
        let planned = self.plan(calls);
        // A vector rather than `map` keeps the future `Send`: rust-lang/rust#102211.
        let calls: Vec<_> = planned
            .iter()
            .map(|call| async move {
                match &call.target {
                    Ok((server, tool)) => self.call(server, tool, call.args.clone()).await,
                    Err(why) => Err(why.clone()),
                }
            })
            .collect();
        let outputs = claij_interceptors::run_bounded(calls, self.config.concurrency).await;
        planned
            .into_iter()
            .zip(outputs)
            .map(|(call, output)| ToolResult {
                name: call.name,
                args: call.args,
                output,
                origin: ToolOrigin::Mcp {
                    server: call.server,
                },
            })
            .collect()
    }

    /// Each call with its server and tool, or why it will not run.
    fn plan(&self, calls: &Value) -> Vec<Planned> {
        let items = match calls {
            Value::Null => return Vec::new(),
            Value::Array(items) => items,
            other => {
                return vec![Planned {
                    name: "?.?".to_owned(),
                    server: "?".to_owned(),
                    args: other.clone(),
                    target: Err("`mcp_calls` must be a list of calls \
                        `{\"service\": …, \"tool\": …, \"args\": {…}}`"
                        .to_owned()),
                }];
            }
        };
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let field = |key: &str| item.get(key).and_then(Value::as_str);
                let (service, tool) = (field("service"), field("tool"));
                let name = format!("{}.{}", service.unwrap_or("?"), tool.unwrap_or("?"));
                let args = item.get("args").cloned().unwrap_or_else(|| json!({}));
                let target = match (service, tool) {
                    _ if index >= self.config.max_calls => Err(format!(
                        "not run: at most {} calls per reply",
                        self.config.max_calls
                    )),
                    (Some(service), Some(tool)) => Ok((service.to_owned(), tool.to_owned())),
                    _ => Err("a call names its `service` and its `tool` as strings".to_owned()),
                };
                Planned {
                    name,
                    server: service.unwrap_or("?").to_owned(),
                    args,
                    target,
                }
            })
            .collect()
    }

    /// One call through [`Services::call`], under the timeout; an [`Error`] becomes its text.
    async fn call(&self, server: &str, tool: &str, args: Value) -> Result<Value, String> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err("not run: MCP calls need a tokio runtime".to_owned());
        }
        let started = std::time::Instant::now();
        let call = self.services.call(server, tool, args);
        let result = match self.config.timeout {
            Some(after) => tokio::time::timeout(after, call).await.unwrap_or_else(|_| {
                Err(Error::Timeout {
                    server: server.to_owned(),
                    method: format!("tools/call {tool}"),
                    after,
                })
            }),
            None => call.await,
        };
        debug!(
            server,
            tool,
            ok = result.as_ref().is_ok_and(|outcome| !outcome.is_error),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "mcp interceptor call"
        );
        result
            .map(|outcome| outcome.to_mcp())
            .map_err(|err| err.to_string())
    }

    /// The delta and section for the current tool list, derived again only when it changed.
    fn derived(&self) -> Arc<Derived> {
        let tools = self.services.tools();
        let mut cached = self.derived.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(derived) = cached.as_ref()
            && derived.tools.len() == tools.len()
            && derived
                .tools
                .iter()
                .zip(&tools)
                .all(|(a, b)| Arc::ptr_eq(a, b))
        {
            return Arc::clone(derived);
        }
        let derived = Arc::new(Derived {
            delta: delta::schema_delta(&tools, self.config.max_calls),
            section: render::services_section(&tools, self.config.max_calls),
            tools,
        });
        *cached = Some(Arc::clone(&derived));
        derived
    }
}

impl Interceptor for McpInterceptor {
    fn name(&self) -> &str {
        "mcp"
    }

    fn pre_schema(&self, schema: &mut Schema, ctx: &Context) -> Result<(), BoxError> {
        // An agent run sending the tools natively needs no field for them.
        if ctx.get::<NativeTools>().is_some() {
            return Ok(());
        }
        if let Some(delta) = self.schema_delta() {
            schema.extend(EXTENSION, delta);
        }
        Ok(())
    }

    fn pre_prompt(&self, prompts: &mut Prompts, ctx: &Context) -> Result<(), BoxError> {
        if let Some(project) = self.services.project() {
            prompts.system_push(&project.hat());
        }
        if ctx.get::<NativeTools>().is_none()
            && let Some(section) = self.prompt_section()
        {
            prompts.system_push(&section);
        }
        if let Some(section) = self.results_section(&ctx.tool_results) {
            prompts.system_push(&section);
        }
        Ok(())
    }

    fn post_response<'a>(
        &'a self,
        response: &'a Value,
        ctx: &'a mut Context,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            let calls = response.get("mcp_calls").unwrap_or(&Value::Null);
            let results = self.run(calls).await;
            ctx.tool_results.retain(|r| !render::is_mcp(r));
            ctx.tool_results.extend(results);
            self.services.refresh_stale().await;
            Ok(())
        })
    }

    fn carry(&self, ctx: &Context) -> Result<Option<Carried>, BoxError> {
        let own: Vec<&ToolResult> = ctx
            .tool_results
            .iter()
            .filter(|r| render::is_mcp(r))
            .collect();
        if own.is_empty() {
            return Ok(None);
        }
        Ok(Some(Carried::new(STATE_VERSION, &own)?))
    }

    fn restore(&self, carried: &Carried, ctx: &mut Context) -> Result<(), BoxError> {
        let results: Vec<ToolResult> = carried.read(STATE_VERSION)?;
        ctx.tool_results.retain(|r| !render::is_mcp(r));
        ctx.tool_results
            .extend(results.into_iter().filter(render::is_mcp));
        Ok(())
    }

    fn toolbox(&self) -> Option<&dyn Toolbox> {
        Some(self)
    }
}

/// The MCP tools for an agent run ([`claij_interceptors::Pipeline::run_agent`]): natively, each
/// named `<service>__<tool>` (providers refuse the `.` of `service.tool`; any other character they
/// refuse becomes `_`), or
/// through the reply's `mcp_calls`. Calls go through [`Services::call`] as in a turn.
impl Toolbox for McpInterceptor {
    fn origin(&self, tool: &str) -> ToolOrigin {
        let server = self
            .native_tool(tool)
            .map_or_else(|| "?".to_owned(), |t| t.server.clone());
        ToolOrigin::Mcp { server }
    }

    fn specs(&self) -> Vec<ToolSpec> {
        self.derived()
            .tools
            .iter()
            .map(|tool| {
                let description = tool
                    .description
                    .clone()
                    .or_else(|| tool.title.clone())
                    .unwrap_or_default();
                ToolSpec::new(
                    native_name(&tool.server, &tool.name),
                    description,
                    tool.normalised_input(),
                )
            })
            .collect()
    }

    fn calls_in(&self, value: &Value) -> Vec<ToolCall> {
        let Some(Value::Array(items)) = value.get("mcp_calls") else {
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let field = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("?");
                let args = item.get("args").cloned().unwrap_or_else(|| json!({}));
                ToolCall::new(
                    format!("mcp_calls-{index}"),
                    native_name(field("service"), field("tool")),
                    args,
                )
            })
            .collect()
    }

    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let tool = self
                .native_tool(name)
                .ok_or_else(|| format!("unknown tool `{name}`"))?;
            self.call(&tool.server, &tool.name, arguments).await
        })
    }

    fn concurrency(&self) -> usize {
        self.config.concurrency
    }

    fn max_calls(&self) -> usize {
        self.config.max_calls
    }
}

impl McpInterceptor {
    /// The tool an agent run knows as `name` (`<service>__<tool>`).
    fn native_tool(&self, name: &str) -> Option<Arc<ToolInfo>> {
        self.derived()
            .tools
            .iter()
            .find(|t| native_name(&t.server, &t.name) == name)
            .cloned()
    }
}

/// The name of an MCP tool as a native function: `<service>__<tool>`, any character providers
/// refuse in a function name (anything but ASCII letters, digits, `_` and `-`) written `_`.
fn native_name(service: &str, tool: &str) -> String {
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

impl std::fmt::Debug for McpInterceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpInterceptor")
            .field("services", &self.services.names())
            .field("project", &self.services.project().map(|p| &p.name))
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
