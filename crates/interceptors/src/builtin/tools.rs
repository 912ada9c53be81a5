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
//! an optional `tools` array of at most [`Limits::max_calls`] calls, whose items are a `oneOf` with one
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
//! as JSON, errors as text, cut to share [`Limits::result_chars`] characters:
//!
//! ```text
//! Results of the tool calls of your previous reply, in call order:
//! 1. weather {"city":"Paris"}
//!    ok: "sunny"
//! 2. weather {"city":"Oslo"}
//!    error: timed out after 30s (timeout)
//! ```
//!
//! # Running calls
//!
//! Each registered function is a [`Tool`](crate::Tool), and the calls run through the interceptor's
//! [`Executor`] ([`Tools::executor`], the one engine of every route, see [`crate::tool`]): each
//! call's arguments are validated against its tool's schema (a bad call, an unknown tool or a call
//! past [`Limits::max_calls`] becomes an error result, not an error of the pipeline); the rest run at
//! most [`Limits::concurrency`] at a time, each under [`Limits::timeout`]. A tool's error, a timeout
//! and a panic all become error results. Give the same executor to the pipeline
//! ([`Pipeline::with_tools`](crate::Pipeline::with_tools)) for an agent run to call the tools within
//! the turn: natively where the backend can (this interceptor then leaves its field and tool list
//! out), else through this field. Results keep the order of the calls and replace the previous turn's in
//! [`Context::tool_results`]. This interceptor owns the entries of origin [`ToolOrigin::Rust`]: results
//! of any other origin (the MCP interceptor's, whatever their names) are left alone and not shown, so
//! both can share a chain in any order. Timeouts need a tokio runtime with its timer enabled; without a runtime,
//! calls are not run and report so.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use claij_backends::{BoxFuture, ToolCall};
use claij_validation::Validator;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::context::{Carried, Context, ToolOrigin, ToolResult};
use crate::interceptor::{BoxError, Interceptor};
use crate::prompts::Prompts;
use crate::schema::Schema;
use crate::tool::{Executor, FnTool, Limits, Tool as _, ToolError, tool_fn};

mod render;
#[cfg(test)]
mod tests;

pub use render::results_section;

/// The extension id of the `tools` schema delta.
pub const EXTENSION: &str = "tools-v1";
/// The version of what the interceptor carries to the next turn ([`Interceptor::carry`]): the last
/// reply's results (origin [`ToolOrigin::Rust`]) as a JSON array of [`ToolResult`]s.
pub const STATE_VERSION: u32 = 1;

/// The `tools` interceptor: the registered tools, and the [`Executor`] that runs their calls.
#[derive(Clone)]
pub struct Tools {
    tools: Vec<FnTool>,
    executor: Executor,
}

impl Default for Tools {
    fn default() -> Self {
        Self::with_limits(Limits::default())
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

impl Tools {
    /// No tools yet, default [`Limits`].
    pub fn new() -> Self {
        Self::default()
    }

    /// No tools yet, the given limits.
    pub fn with_limits(limits: Limits) -> Self {
        Self {
            tools: Vec::new(),
            executor: executor(&[], limits),
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
        compile_args(&name, &args_schema)?;
        let f = Arc::new(f);
        self.tools
            .push(tool_fn(name, description, args_schema, move |args| {
                let running = f(args);
                async move { running.await.map_err(ToolError::from) }
            }));
        self.executor = executor(&self.tools, self.executor.limits().clone());
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

    /// The limits its calls run within.
    pub fn limits(&self) -> &Limits {
        self.executor.limits()
    }

    /// The executor running the tools' calls: give it to the pipeline
    /// ([`Pipeline::with_tools`](crate::Pipeline::with_tools)) for an agent run to call them.
    pub fn executor(&self) -> Executor {
        self.executor.clone()
    }

    /// The tools' names, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// The arguments schema of a tool, as registered.
    pub fn args_schema(&self, name: &str) -> Option<&Value> {
        self.find(name).map(|t| t.parameters())
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
                let (args, hoisted) = claij_schema::embed(tool.name(), tool.parameters());
                defs.extend(hoisted);
                json!({
                    "type": "object",
                    "properties": {"name": {"const": tool.name()}, "args": args},
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
                "maxItems": self.limits().max_calls,
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
            .map(|t| (t.name(), t.description(), t.parameters()))
            .collect();
        Some(render::tools_section(&docs, self.limits().max_calls))
    }

    /// Runs the calls of a reply's `tools` value through the [`Executor`] and returns one result
    /// per call, in call order.
    ///
    /// `Null` (no `tools`) gives no results; anything but an array gives one error result.
    pub async fn run(&self, calls: &Value) -> Vec<ToolResult> {
        match calls {
            Value::Null => Vec::new(),
            Value::Array(_) => self.executor.run(&calls_of(calls)).await,
            other => vec![ToolResult {
                name: "tools".to_owned(),
                args: other.clone(),
                output: Err(
                    "`tools` must be a list of calls `{\"name\": …, \"args\": {…}}`".to_owned(),
                ),
                origin: ToolOrigin::Rust,
            }],
        }
    }

    fn find(&self, name: &str) -> Option<&FnTool> {
        self.tools.iter().find(|t| t.name() == name)
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
        if self.executor.is_native(ctx) {
            return Ok(());
        }
        if let Some(delta) = self.schema_delta() {
            schema.extend(EXTENSION, delta);
        }
        Ok(())
    }

    fn pre_prompt(&self, prompts: &mut Prompts, ctx: &Context) -> Result<(), BoxError> {
        if !self.executor.is_native(ctx)
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
        if let Some(section) = results_section(&own, self.limits().result_chars) {
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
}

impl fmt::Debug for Tools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tools")
            .field("tools", &self.names())
            .field("limits", self.limits())
            .finish()
    }
}

/// The executor of `tools`: origin [`ToolOrigin::Rust`], calls read from a reply's `tools`.
fn executor(tools: &[FnTool], limits: Limits) -> Executor {
    Executor::new(
        tools
            .iter()
            .map(|t| Arc::new(t.clone()) as Arc<dyn crate::tool::Tool>),
    )
    .with_limits(limits)
    .with_origin(ToolOrigin::Rust)
    .with_reply_calls(|value| match value.get("tools") {
        Some(calls @ Value::Array(_)) => calls_of(calls),
        _ => Vec::new(),
    })
}

/// The calls of a `tools` array, ids made up (`tools-<index>`: the route has none).
fn calls_of(calls: &Value) -> Vec<ToolCall> {
    calls
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(index, item)| {
            let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
            let args = item.get("args").cloned().unwrap_or_else(|| json!({}));
            ToolCall::new(format!("tools-{index}"), name, args)
        })
        .collect()
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

fn compile_args(tool: &str, schema: &Value) -> Result<(), RegisterError> {
    let invalid = |message: String| RegisterError::InvalidSchema {
        tool: tool.to_owned(),
        message,
    };
    if schema.get("$id").is_some() {
        return Err(invalid(
            "`$id` is not supported (the schema is embedded in the reply's)".to_owned(),
        ));
    }
    Validator::new(schema)
        .map(drop)
        .map_err(|e| invalid(e.to_string()))
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
