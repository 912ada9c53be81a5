//! The `tools` interceptor: async Rust functions the model calls by naming them in its reply.
//!
//! [`Tools`] holds functions registered with a name, a description and a JSON Schema for their
//! arguments. The model calls them through an optional `tools` field of its reply; the calls run after
//! the reply is validated (checked again against their tool's schema, each under a timeout, a few at a
//! time) and their results, kept in [`Context::tool_results`], are shown to the model on the next turn.
//!
//! ```
//! use claij_interceptors::builtin::tools::Tools;
//! use serde_json::json;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! let tools = Tools::new()
//!     .register("echo", "Returns its input.", json!({"type": "object"}), |args| async move { Ok(args) })?
//!     .register_typed("add", "Adds two integers.", |args: Add| async move { Ok(args.a + args.b) })?;
//! assert_eq!(tools.names(), ["echo", "add"]);
//! # Ok::<(), claij_interceptors::builtin::tools::RegisterError>(())
//! ```
//!
//! # Schema delta
//!
//! Extension `tools-v1` ([`EXTENSION`], [`Tools::schema_delta`]), nothing while no tool is registered:
//! an optional `tools` array of at most [`ToolsConfig::max_calls`] calls, whose items are a `oneOf` with one
//! branch per tool, discriminated by a `name` constant (so a violation names the tool the model chose):
//!
//! ```
//! # use claij_interceptors::builtin::tools::Tools;
//! # use serde_json::json;
//! let tools = Tools::new().register(
//!     "weather", "Today's weather in a city.",
//!     json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
//!     |_| async { Ok(json!("sunny")) },
//! )?;
//! assert_eq!(tools.schema_delta(), Some(json!({"properties": {"tools": {
//!     "type": "array",
//!     "description": "Tool calls to run after this reply; their results come back to you on the next \
//!         turn. Omit when you need no tool",
//!     "maxItems": 8,
//!     "items": {"oneOf": [{
//!         "type": "object",
//!         "properties": {
//!             "name": {"const": "weather"},
//!             "args": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
//!         },
//!         "required": ["name", "args"],
//!         "additionalProperties": false
//!     }]}
//! }}})));
//! # Ok::<(), claij_interceptors::builtin::tools::RegisterError>(())
//! ```
//!
//! An argument schema with `$defs` or `$ref`s moves to the delta's `$defs` under the tool's name (its
//! own definitions under `<tool>.<name>`), references rewritten ([`claij_schema::embed`]), so it works
//! inside the composed schema. Tool names have no `.`, so two tools' definitions never collide.
//!
//! # Prompt
//!
//! A system-prompt section documenting the tools ([`Tools::prompt_section`]), arguments in the compact
//! notation of [`claij_schema::to_compact`]:
//!
//! ```
//! # use claij_interceptors::builtin::tools::Tools;
//! # use serde_json::json;
//! # let tools = Tools::new().register(
//! #     "weather", "Today's weather in a city.",
//! #     json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
//! #     |_| async { Ok(json!("sunny")) },
//! # )?;
//! assert_eq!(tools.prompt_section().unwrap(), "\
//! Tools: to call tools, add `tools` to your reply: a list of calls `{\"name\": \"<tool>\", \"args\": {…}}`, \
//! at most 8. They run after your reply, and their results come back to you on the next turn. Call a \
//! tool only when you need its result.
//!
//! - weather: Today's weather in a city.
//!   args: {
//!     city: string
//!   }");
//! # Ok::<(), claij_interceptors::builtin::tools::RegisterError>(())
//! ```
//!
//! and, when the previous turn made calls, their results ([`results_section`]): arguments and outputs
//! as JSON, errors as text, cut to share [`ToolsConfig::result_budget`] characters:
//!
//! ```text
//! Results of the tool calls of your previous reply, in call order:
//! 1. weather {"city":"Paris"}
//!    ok: "sunny"
//! 2. weather {"city":"Oslo"}
//!    error: timed out after 30s
//! ```
//!
//! # Running calls
//!
//! Each call's arguments are validated against its tool's schema (a bad call, an unknown tool or a call
//! past [`ToolsConfig::max_calls`] becomes an error result, not an error of the pipeline); the rest run at most
//! [`ToolsConfig::concurrency`] at a time, each under [`ToolsConfig::timeout`]. A tool's error, a timeout and a
//! panic all become error results. Results keep the order of the calls and replace the previous turn's in
//! [`Context::tool_results`]. This interceptor owns the entries of origin [`ToolOrigin::Rust`]: results
//! of any other origin (the MCP interceptor's, whatever their names) are left alone and not shown, so
//! both can share a chain in any order. Timeouts need a tokio runtime with its timer enabled; without a runtime,
//! calls are not run and report so.

use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use claij_backends::{BoxFuture, ToolCall, ToolSpec};
use claij_validation::Validator;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tracing::debug;

use crate::context::{Carried, Context, ToolOrigin, ToolResult};
use crate::interceptor::{BoxError, Interceptor};
use crate::prompts::Prompts;
use crate::schema::Schema;
use crate::toolbox::{NativeTools, Toolbox, run_bounded};

mod render;
#[cfg(test)]
mod tests;

pub use render::results_section;

/// The extension id of the `tools` schema delta.
pub const EXTENSION: &str = "tools-v1";
/// The version of what the interceptor carries to the next turn ([`Interceptor::carry`]): the last
/// reply's results (origin [`ToolOrigin::Rust`]) as a JSON array of [`ToolResult`]s.
pub const STATE_VERSION: u32 = 1;

/// The `tools` interceptor: the registered tools and how their calls run.
#[derive(Clone, Default)]
pub struct Tools {
    tools: Vec<Tool>,
    config: ToolsConfig,
}

/// How tool calls run and how their results are shown.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolsConfig {
    /// Longest a call may run before it is dropped and reported as timed out (default 30 s).
    pub timeout: Duration,
    /// Calls running at once, of a reply or of an agent run's step (default 4; 0 counts as 1).
    pub concurrency: usize,
    /// Most calls in one reply or agent step (default 8): the schema's `maxItems`; calls past it
    /// are not run.
    pub max_calls: usize,
    /// Characters of arguments and outputs shown in the next prompt, shared by the results (default 4000).
    pub result_budget: usize,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            concurrency: 4,
            max_calls: 8,
            result_budget: 4000,
        }
    }
}

/// Why a tool could not be registered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// Tool names are 1 to 64 ASCII letters, digits, `_` or `-` (what providers accept for functions).
    #[error("invalid tool name `{name}`: use 1 to 64 ASCII letters, digits, `_` or `-`")]
    InvalidName {
        /// The name given.
        name: String,
    },
    /// Another tool already has this name.
    #[error("tool `{name}` is already registered")]
    Duplicate {
        /// The name given.
        name: String,
    },
    /// The arguments' schema does not compile, or sets `$id` (it must be embeddable).
    #[error("the arguments schema of tool `{tool}` is invalid: {message}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// Why, with the JSON pointer.
        message: String,
    },
}

/// A registered tool.
#[derive(Clone)]
struct Tool {
    name: String,
    description: String,
    args: Arc<Value>,
    validator: Arc<Validator>,
    call: Arc<Handler>,
}

type Handler = dyn Fn(Value) -> BoxFuture<'static, Result<Value, BoxError>> + Send + Sync;

impl Tools {
    /// No tools yet, default [`ToolsConfig`].
    pub fn new() -> Self {
        Self::default()
    }

    /// No tools yet, the given configuration.
    pub fn with_config(config: ToolsConfig) -> Self {
        Self {
            tools: Vec::new(),
            config,
        }
    }

    /// Registers a tool taking JSON arguments that conform to `args_schema`.
    ///
    /// The function gets the validated arguments and returns its output or an error (anything that
    /// converts into a [`BoxError`], so `?` works and `Err("why".into())` does too).
    ///
    /// # Errors
    ///
    /// [`RegisterError`] for an invalid or taken name, or a schema that does not compile.
    pub fn register<F, Fut>(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        args_schema: Value,
        f: F,
    ) -> Result<Self, RegisterError>
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, BoxError>> + Send + 'static,
    {
        let name = name.into();
        self.check_name(&name)?;
        let validator = compile_args(&name, &args_schema)?;
        self.tools.push(Tool {
            name,
            description: description.into(),
            args: Arc::new(args_schema),
            validator: Arc::new(validator),
            call: Arc::new(move |args| Box::pin(f(args))),
        });
        Ok(self)
    }

    /// Registers a tool whose arguments are a Rust type: the schema is derived from `A` (subschemas
    /// inlined), the arguments deserialized into it and the output serialized to JSON.
    ///
    /// # Errors
    ///
    /// As [`Tools::register`].
    pub fn register_typed<A, T, F, Fut>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> Result<Self, RegisterError>
    where
        A: DeserializeOwned + JsonSchema,
        T: Serialize,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, BoxError>> + Send + 'static,
    {
        let f = Arc::new(f);
        self.register(name, description, args_schema_of::<A>(), move |args| {
            let f = Arc::clone(&f);
            async move {
                let args = A::deserialize(args).map_err(|e| format!("invalid args: {e}"))?;
                let output = f(args).await?;
                Ok(serde_json::to_value(output)?)
            }
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ToolsConfig {
        &self.config
    }

    /// The tools' names, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    /// The arguments schema of a tool, as registered.
    pub fn args_schema(&self, name: &str) -> Option<&Value> {
        self.find(name).map(|t| &*t.args)
    }

    /// The schema delta (see the [module docs](self)); `None` without tools.
    pub fn schema_delta(&self) -> Option<Value> {
        if self.tools.is_empty() {
            return None;
        }
        let mut defs = Map::new();
        let branches: Vec<Value> = self
            .tools
            .iter()
            .map(|tool| {
                let (args, hoisted) = claij_schema::embed(&tool.name, &tool.args);
                defs.extend(hoisted);
                json!({
                    "type": "object",
                    "properties": {"name": {"const": tool.name}, "args": args},
                    "required": ["name", "args"],
                    "additionalProperties": false,
                })
            })
            .collect();
        let mut delta = Map::new();
        delta.insert(
            "properties".to_owned(),
            json!({"tools": {
                "type": "array",
                "description": "Tool calls to run after this reply; their results come back to you on the \
                    next turn. Omit when you need no tool",
                "maxItems": self.config.max_calls,
                "items": {"oneOf": branches},
            }}),
        );
        if !defs.is_empty() {
            delta.insert("$defs".to_owned(), Value::Object(defs));
        }
        Some(Value::Object(delta))
    }

    /// The system-prompt section documenting the tools (see the [module docs](self)); `None` without
    /// tools.
    pub fn prompt_section(&self) -> Option<String> {
        if self.tools.is_empty() {
            return None;
        }
        let docs: Vec<(&str, &str, &Value)> = self
            .tools
            .iter()
            .map(|t| (t.name.as_str(), t.description.as_str(), &*t.args))
            .collect();
        Some(render::tools_section(&docs, self.config.max_calls))
    }

    /// Runs the calls of a reply's `tools` value and returns one result per call, in call order.
    ///
    /// `Null` (no `tools`) gives no results; anything but an array gives one error result.
    pub async fn run(&self, calls: &Value) -> Vec<ToolResult> {
        let planned = self.plan(calls);
        let timeout = self.config.timeout;
        // A vector rather than `map` keeps the future `Send`: rust-lang/rust#102211.
        let calls: Vec<_> = planned
            .iter()
            .map(|call| async move {
                match &call.tool {
                    Ok(tool) => run_one(tool, call.args.clone(), timeout).await,
                    Err(why) => Err(why.clone()),
                }
            })
            .collect();
        let outputs = run_bounded(calls, self.config.concurrency).await;
        planned
            .into_iter()
            .zip(outputs)
            .map(|(call, output)| ToolResult {
                name: call.name,
                args: call.args,
                output,
                origin: ToolOrigin::Rust,
            })
            .collect()
    }

    /// Each call with its tool, or why it will not run.
    fn plan(&self, calls: &Value) -> Vec<Planned<'_>> {
        let items = match calls {
            Value::Null => return Vec::new(),
            Value::Array(items) => items,
            other => {
                return vec![Planned {
                    name: "tools".to_owned(),
                    args: other.clone(),
                    tool: Err(
                        "`tools` must be a list of calls `{\"name\": …, \"args\": {…}}`".to_owned(),
                    ),
                }];
            }
        };
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let name = item
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let args = item.get("args").cloned().unwrap_or_else(|| json!({}));
                let tool = if index >= self.config.max_calls {
                    Err(format!(
                        "not run: at most {} calls per reply",
                        self.config.max_calls
                    ))
                } else {
                    self.check_call(&name, &args)
                };
                Planned { name, args, tool }
            })
            .collect()
    }

    /// The tool for a call, or why the call is refused (unknown tool, invalid arguments).
    fn check_call(&self, name: &str, args: &Value) -> Result<&Tool, String> {
        let tool = self.find(name).ok_or_else(|| {
            format!(
                "unknown tool `{name}`; the tools are: {}",
                self.names().join(", ")
            )
        })?;
        tool.validator.validate(args).map_err(|violations| {
            let found: Vec<String> = violations.iter().map(ToString::to_string).collect();
            format!("invalid args: {}", found.join("; "))
        })?;
        Ok(tool)
    }

    fn find(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    fn check_name(&self, name: &str) -> Result<(), RegisterError> {
        if !is_tool_name(name) {
            return Err(RegisterError::InvalidName {
                name: name.to_owned(),
            });
        }
        if self.find(name).is_some() {
            return Err(RegisterError::Duplicate {
                name: name.to_owned(),
            });
        }
        Ok(())
    }
}

impl Interceptor for Tools {
    fn name(&self) -> &str {
        "tools"
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
        if ctx.get::<NativeTools>().is_none()
            && let Some(section) = self.prompt_section()
        {
            prompts.system_push(&section);
        }
        let own: Vec<ToolResult> = ctx
            .tool_results
            .iter()
            .filter(|r| is_own_result(r))
            .cloned()
            .collect();
        if let Some(section) = results_section(&own, self.config.result_budget) {
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
            let calls = response.get("tools").unwrap_or(&Value::Null);
            let results = self.run(calls).await;
            ctx.tool_results.retain(|r| !is_own_result(r));
            ctx.tool_results.extend(results);
            Ok(())
        })
    }

    fn carry(&self, ctx: &Context) -> Result<Option<Carried>, BoxError> {
        let own: Vec<&ToolResult> = ctx
            .tool_results
            .iter()
            .filter(|r| is_own_result(r))
            .collect();
        if own.is_empty() {
            return Ok(None);
        }
        Ok(Some(Carried::new(STATE_VERSION, &own)?))
    }

    fn restore(&self, carried: &Carried, ctx: &mut Context) -> Result<(), BoxError> {
        let results: Vec<ToolResult> = carried.read(STATE_VERSION)?;
        ctx.tool_results.retain(|r| !is_own_result(r));
        ctx.tool_results
            .extend(results.into_iter().filter(is_own_result));
        Ok(())
    }

    fn toolbox(&self) -> Option<&dyn Toolbox> {
        Some(self)
    }
}

/// The tools for an agent run ([`Pipeline::run_agent`](crate::Pipeline::run_agent)): natively, or
/// through the reply's `tools` field.
impl Toolbox for Tools {
    fn origin(&self, _tool: &str) -> ToolOrigin {
        ToolOrigin::Rust
    }

    fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|t| ToolSpec::new(t.name.clone(), t.description.clone(), (*t.args).clone()))
            .collect()
    }

    fn calls_in(&self, value: &Value) -> Vec<ToolCall> {
        let Some(Value::Array(items)) = value.get("tools") else {
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                let args = item.get("args").cloned().unwrap_or_else(|| json!({}));
                ToolCall::new(format!("tools-{index}"), name, args)
            })
            .collect()
    }

    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let tool = self.check_call(name, &arguments)?;
            run_one(tool, arguments, self.config.timeout).await
        })
    }

    fn concurrency(&self) -> usize {
        self.config.concurrency
    }

    fn max_calls(&self) -> usize {
        self.config.max_calls
    }
}

impl fmt::Debug for Tools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tools")
            .field("tools", &self.names())
            .field("config", &self.config)
            .finish()
    }
}

/// One call of a reply, ready to run or refused.
struct Planned<'a> {
    name: String,
    args: Value,
    tool: Result<&'a Tool, String>,
}

/// Runs one validated call under the timeout; errors, timeouts and panics become `Err` text.
async fn run_one(tool: &Tool, args: Value, timeout: Duration) -> Result<Value, String> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err("not run: tool calls need a tokio runtime (for their timeouts)".to_owned());
    }
    let started = tokio::time::Instant::now();
    let output = match tokio::time::timeout(timeout, CatchPanic((tool.call)(args))).await {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(e))) => Err(e.to_string()),
        Ok(Err(panic)) => Err(format!("the tool panicked: {panic}")),
        Err(_) => Err(format!(
            "timed out after {}",
            humantime::format_duration(timeout)
        )),
    };
    debug!(
        tool = %tool.name,
        ok = output.is_ok(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "tool call"
    );
    output
}

/// A future that turns a panic while polling its inner future into `Err(message)`, so a tool that
/// panics on the model's arguments does not take the process down.
struct CatchPanic<F>(F);

impl<F: Future + Unpin> Future for CatchPanic<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(payload.as_ref()))),
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}

/// Whether a result is one of this interceptor's, by its origin (not its name: another interceptor's
/// tool may be called like one of these).
fn is_own_result(result: &ToolResult) -> bool {
    result.origin == ToolOrigin::Rust
}

/// Whether `name` is 1 to 64 ASCII letters, digits, `_` or `-`.
fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn compile_args(tool: &str, schema: &Value) -> Result<Validator, RegisterError> {
    let invalid = |message: String| RegisterError::InvalidSchema {
        tool: tool.to_owned(),
        message,
    };
    if schema.get("$id").is_some() {
        return Err(invalid(
            "`$id` is not supported (the schema is embedded in the reply's)".to_owned(),
        ));
    }
    Validator::new(schema).map_err(|e| invalid(e.to_string()))
}

/// The arguments schema of `A`: subschemas inlined (recursive types keep their `$defs`), no `$schema`.
fn args_schema_of<A: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<A>().to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
    }
    schema
}
