//! [`McpInterceptor`]: the model calls the tools of MCP services by listing them in its reply.

use std::sync::{Arc, Mutex, PoisonError};

use claij_backends::{BoxFuture, ToolCall};
use claij_interceptors::{
    BoxError, Carried, Context, Executor, Interceptor, Limits, Prompts, Schema, ToolError,
    ToolOrigin, ToolResult,
};
use serde_json::{Value, json};

use crate::engine::native_name;
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
/// allowed: an optional `mcp_calls` array of at most [`Limits::max_calls`] calls, whose
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
/// [`Limits::result_chars`] characters ([`McpInterceptor::results_section`]).
///
/// # Running calls
///
/// After a valid reply, its calls run through the interceptor's [`Executor`]
/// ([`McpInterceptor::executor`], the one engine of every route: [`claij_interceptors::tool`]),
/// whose [`Limits`] default to [`crate::default_limits`]: the arguments checked against the tool's
/// schema, at most [`Limits::concurrency`] at a time, each under [`Limits::timeout`] when set,
/// every one through [`Services::call`]; a call naming a tool the view does not offer goes to
/// [`Services::call`] for its refusal (a tool the project does not allow is refused and recorded,
/// even if the reply names it). Calls past [`Limits::max_calls`] are not run but reported. Give
/// the same executor to the pipeline ([`claij_interceptors::Pipeline::with_tools`]) for an agent
/// run to call the tools within the turn: natively (`<service>__<tool>`, this interceptor then
/// leaves its field and its list out) or through `mcp_calls`. Results keep the order of the calls and
/// go into [`Context::tool_results`] as `server.tool` of origin [`ToolOrigin::Mcp`], the output the MCP `CallToolResult`
/// ([`crate::CallOutcome::to_mcp`]) or, when the call could not complete (a timeout, a dead server),
/// the error's text: nothing a server does fails the pipeline. Each turn replaces the previous turn's
/// results of origin [`ToolOrigin::Mcp`] and keeps the others (the `tools` interceptor's, whatever
/// their names); tool lists that servers announced as changed are fetched again for the next turn.
pub struct McpInterceptor {
    services: Services,
    executor: Executor,
    /// The delta and the prompt section of the last tool list seen.
    derived: Mutex<Option<Arc<Derived>>>,
}

/// What the interceptor derives from one tool list.
struct Derived {
    tools: Vec<Arc<ToolInfo>>,
    delta: Option<Value>,
    section: Option<String>,
}

impl McpInterceptor {
    /// The interceptor over `services` (and its project, if the view has one), limits
    /// [`crate::default_limits`].
    pub fn new(services: Services) -> Self {
        Self {
            executor: executor(&services, crate::default_limits()),
            services,
            derived: Mutex::new(None),
        }
    }

    /// Sets the limits its calls run within.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.executor = executor(&self.services, limits);
        self.derived = Mutex::new(None);
        self
    }

    /// The services.
    pub fn services(&self) -> &Services {
        &self.services
    }

    /// The limits its calls run within.
    pub fn limits(&self) -> &Limits {
        self.executor.limits()
    }

    /// The executor running the calls: give it to the pipeline
    /// ([`claij_interceptors::Pipeline::with_tools`]) for an agent run to call the tools.
    pub fn executor(&self) -> Executor {
        self.executor.clone()
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
        render::results_section(results, self.limits().result_chars)
    }

    /// Runs the calls of a reply's `mcp_calls` value through the [`Executor`] and returns one
    /// result per call, in call order, named `service.tool`.
    ///
    /// `Null` (no `mcp_calls`) gives no results; anything but an array gives one error result.
    pub async fn run(&self, calls: &Value) -> Vec<ToolResult> {
        let items = match calls {
            Value::Null => return Vec::new(),
            Value::Array(items) => items,
            other => {
                return vec![ToolResult {
                    name: "?.?".to_owned(),
                    args: other.clone(),
                    output: Err("`mcp_calls` must be a list of calls \
                        `{\"service\": …, \"tool\": …, \"args\": {…}}`"
                        .to_owned()),
                    origin: ToolOrigin::Mcp {
                        server: "?".to_owned(),
                    },
                }];
            }
        };
        let named: Vec<(Option<&str>, Option<&str>)> = items
            .iter()
            .map(|item| {
                let field = |key: &str| item.get(key).and_then(Value::as_str);
                (field("service"), field("tool"))
            })
            .collect();
        let ran = self.executor.run_calls(&calls_of(items)).await;
        let mut results = Vec::with_capacity(ran.len());
        for ((service, tool), ran) in named.into_iter().zip(ran) {
            let server = service.unwrap_or("?").to_owned();
            let output = match (service, tool, ran.output) {
                (_, _, Err(e @ ToolError::MaxCalls { .. })) => Err(e.to_string()),
                (Some(service), Some(tool), Err(ToolError::Unknown { .. })) => {
                    // Not a tool this view offers: the services refuse it (and record a
                    // project's refusal), saying why.
                    self.services
                        .call(service, tool, ran.call.arguments.clone())
                        .await
                        .map(|outcome| outcome.to_mcp())
                        .map_err(|e| e.to_string())
                }
                (Some(_), Some(_), output) => output.map_err(|e| e.to_string()),
                _ => Err("a call names its `service` and its `tool` as strings".to_owned()),
            };
            results.push(ToolResult {
                name: format!("{server}.{}", tool.unwrap_or("?")),
                args: ran.call.arguments,
                output,
                origin: ToolOrigin::Mcp { server },
            });
        }
        results
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
            delta: delta::schema_delta(&tools, self.limits().max_calls),
            section: render::services_section(&tools, self.limits().max_calls),
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
        if self.executor.is_native(ctx) {
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
        if !self.executor.is_native(ctx)
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
}

/// The executor of `services`' tools within `limits`, reading calls from a reply's `mcp_calls`.
fn executor(services: &Services, limits: Limits) -> Executor {
    services
        .executor()
        .with_limits(limits)
        .with_reply_calls(|value| match value.get("mcp_calls") {
            Some(Value::Array(items)) => calls_of(items),
            _ => Vec::new(),
        })
}

/// The calls of an `mcp_calls` array, named `<service>__<tool>` as the executor knows them (`?`
/// for a part not given as a string), ids made up (`mcp_calls-<index>`: the route has none).
fn calls_of(items: &[Value]) -> Vec<ToolCall> {
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

impl std::fmt::Debug for McpInterceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpInterceptor")
            .field("services", &self.services.names())
            .field("project", &self.services.project().map(|p| &p.name))
            .field("limits", self.limits())
            .finish_non_exhaustive()
    }
}
