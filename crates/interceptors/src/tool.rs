//! The one tool engine: a [`Tool`] (name, description, arguments' JSON Schema, call), and the
//! [`Executor`] that runs the calls of one model reply, whichever route they came by.
//!
//! A tool call reaches a tool by one of three routes, each a thin layer over an [`Executor`]:
//! - **native**: an agent run ([`Pipeline::run_agent`](crate::Pipeline::run_agent)) on a backend with
//!   tools sends the executors given with [`Pipeline::with_tools`](crate::Pipeline::with_tools) in the
//!   request, and the model's calls come back as the response's tool calls;
//! - **`oneOf`**: a field of the reply (the `tools` interceptor's `tools`, the MCP interceptor's
//!   `mcp_calls`), whose items are a `oneOf` with one branch per tool; its calls run after the reply
//!   (an `ask`), or within the turn (an agent run on a backend without tools);
//! - **FSM**: a `service` state answering a JSON-RPC `tools/call` request (`claij_mcp::mcp_fsm`).
//!
//! The executor owns what every route shares, so a limit means the same on each ([`Limits`]):
//! - the argument check: raw native arguments that are not JSON are extracted and repaired first, as
//!   a reply is ([`claij_validation::extract::recover`]; cut-off arguments are refused, not guessed),
//!   then checked against the tool's schema ([`Tool::check`]);
//! - [`Limits::max_calls`]: the most calls of **one model reply** (an agent run's step, an FSM state's
//!   event) that run; later ones are not run and their result names `max_calls`. There is no total
//!   per run: an agent run's steps are bounded by its [`Budget`](crate::Budget), an FSM run's by the
//!   runner's transition limit;
//! - [`Limits::concurrency`]: how many of them run at once;
//! - [`Limits::timeout`]: how long one call may take before it is dropped;
//! - [`Limits::result_chars`]: how many characters of one reply's results the model sees, shared by
//!   them (short ones whole, the rest sharing what is left: [`shares`]); a cut result says so. The
//!   results themselves ([`ToolResult`]) keep every character: the budget is what the model is shown;
//! - the origin each [`ToolResult`] records ([`Tool::origin`]).
//!
//! ```
//! use std::sync::Arc;
//! use claij_backends::ToolCall;
//! use claij_interceptors::{Executor, Limits, Tool, tool_fn};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let add = tool_fn(
//!     "add", "Adds two integers.",
//!     json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
//!            "required": ["a", "b"]}),
//!     |args| async move { Ok(json!(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0))) },
//! );
//! let executor = Executor::new([Arc::new(add) as Arc<dyn Tool>])
//!     .with_limits(Limits { max_calls: 2, ..Limits::default() });
//! let results = executor.run(&[
//!     ToolCall::new("1", "add", json!({"a": 1, "b": 2})),
//!     ToolCall::new("2", "add", json!("{'a': 3, 'b': 4,}")), // raw text, repaired first
//!     ToolCall::new("3", "add", json!({"a": 5, "b": 6})),    // past max_calls
//! ]).await;
//! assert_eq!(results[0].output, Ok(json!(3)));
//! assert_eq!(results[1].output, Ok(json!(7)));
//! assert_eq!(results[2].output, Err("not run: at most 2 calls per reply (max_calls)".to_owned()));
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use claij_backends::{BoxFuture, ToolCall, ToolSpec};
use claij_validation::{FixKind, Validator, Violation};
use futures_util::stream::{self, StreamExt as _};
use serde_json::Value;
use tracing::{Instrument as _, debug, warn};

use crate::context::{Context, ToolOrigin, ToolResult};
use crate::interceptor::BoxError;

#[cfg(test)]
mod tests;

/// One tool the model can call, by any route: a Rust function (the `tools` interceptor's, or
/// [`tool_fn`]), an MCP server's tool (`claij_mcp`), the `eval` sandbox.
pub trait Tool: Send + Sync {
    /// The name the model calls it by: 1 to 64 ASCII letters, digits, `_` and `-` where it goes
    /// natively (what providers accept for functions).
    fn name(&self) -> &str;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// The JSON Schema of its arguments (an object).
    fn parameters(&self) -> &Value;

    /// What runs it, recorded in each [`ToolResult`]; [`ToolOrigin::Rust`] unless it says.
    fn origin(&self) -> ToolOrigin {
        ToolOrigin::Rust
    }

    /// Checks arguments against [`Tool::parameters`] before a call; the default compiles the
    /// schema each time (implementations keep a compiled [`Validator`]). A schema that does not
    /// compile checks nothing: the tool is the authority on its own arguments.
    ///
    /// # Errors
    ///
    /// Every violation, located in `arguments`.
    fn check(&self, arguments: &Value) -> Result<(), Vec<Violation>> {
        match Validator::new(self.parameters()) {
            Ok(validator) => validator.validate(arguments),
            Err(_) => Ok(()),
        }
    }

    /// Runs one call whose arguments passed [`Tool::check`]: its output, or why it failed.
    fn call(&self, arguments: Value) -> BoxFuture<'_, Result<Value, ToolError>>;
}

/// Why a call has no output: the tool's own failure, or a limit or check of the [`Executor`] that
/// kept it from running (each naming the limit). Its text is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// No tool has this name.
    #[error("unknown tool `{name}`; the tools are: {}", list(available))]
    Unknown {
        /// The name called.
        name: String,
        /// The tools there are.
        available: Vec<String>,
    },
    /// The arguments are not JSON (nor repairable), or violate the tool's schema; not run.
    #[error("invalid arguments, not run: {reason}")]
    InvalidArguments {
        /// What is wrong: each violation at its pointer, or why the text is not an object.
        reason: String,
    },
    /// The call came after [`Limits::max_calls`] calls of its reply; not run.
    #[error("not run: at most {max_calls} calls per reply (max_calls)")]
    MaxCalls {
        /// The limit.
        max_calls: usize,
    },
    /// The call took longer than [`Limits::timeout`] and was dropped.
    #[error("timed out after {} (timeout)", humantime::format_duration(*after))]
    Timeout {
        /// The limit.
        after: Duration,
    },
    /// The tool panicked; the process goes on.
    #[error("the tool panicked: {0}")]
    Panicked(String),
    /// A call with a timeout needs a tokio runtime with its timer; none was running.
    #[error("not run: tool calls need a tokio runtime (for their timeouts)")]
    NoRuntime,
}

impl ToolError {
    /// Whether a limit of the [`Executor`] stopped the call ([`ToolError::MaxCalls`],
    /// [`ToolError::Timeout`]).
    pub fn is_limit(&self) -> bool {
        matches!(self, ToolError::MaxCalls { .. } | ToolError::Timeout { .. })
    }

    /// Whether [`ToolError::Timeout`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, ToolError::Timeout { .. })
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::Failed(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::Failed(message.to_owned())
    }
}

impl From<BoxError> for ToolError {
    fn from(error: BoxError) -> Self {
        ToolError::Failed(error.to_string())
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// The limits of an [`Executor`], the same on every route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The most calls of one model reply (an agent run's step, a reply's field, an FSM state's
    /// event) that run (default [`DEFAULT_MAX_CALLS`]); later ones are not run, their result says
    /// `max_calls`. The `oneOf` field's `maxItems` too.
    pub max_calls: usize,
    /// How many of them run at once (default [`DEFAULT_CONCURRENCY`]; 0 counts as 1).
    pub concurrency: usize,
    /// Longest one call may take before it is dropped, its result saying `timeout` (default
    /// [`DEFAULT_TIMEOUT`]; `None`: no bound of the executor's, the tool's own applies, as an MCP
    /// client's request timeout).
    pub timeout: Option<Duration>,
    /// Characters of one reply's results the model sees, shared by them (default
    /// [`DEFAULT_RESULT_CHARS`]); a longer result is cut, and the model is told where and why.
    pub result_chars: usize,
}

/// The default [`Limits::max_calls`].
pub const DEFAULT_MAX_CALLS: usize = 8;
/// The default [`Limits::concurrency`].
pub const DEFAULT_CONCURRENCY: usize = 4;
/// The default [`Limits::timeout`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default [`Limits::result_chars`].
pub const DEFAULT_RESULT_CHARS: usize = 4000;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_calls: DEFAULT_MAX_CALLS,
            concurrency: DEFAULT_CONCURRENCY,
            timeout: Some(DEFAULT_TIMEOUT),
            result_chars: DEFAULT_RESULT_CHARS,
        }
    }
}

/// Where an [`Executor`]'s tools come from: a fixed list, or one that changes (an MCP server's
/// tools, fetched again when it says they changed).
pub trait ToolSet: Send + Sync {
    /// The tools now, in the order the model is shown them.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

impl ToolSet for Vec<Arc<dyn Tool>> {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.clone()
    }
}

type ReadCalls = dyn Fn(&Value) -> Vec<ToolCall> + Send + Sync;

/// A call with its arguments repaired, its origin, and its tool or why it does not run.
type Admitted = (ToolCall, ToolOrigin, Result<Arc<dyn Tool>, ToolError>);

/// Runs the calls of one model reply against a [`ToolSet`] within [`Limits`]: the one engine
/// behind every route (see the [module docs](self)). Cheap to clone: clones share the tools.
#[derive(Clone)]
pub struct Executor {
    set: Arc<dyn ToolSet>,
    limits: Limits,
    /// The calls a reply makes through the `oneOf` field of the interceptor this executor serves.
    read: Option<Arc<ReadCalls>>,
    /// The origin of a call that names no tool.
    origin: ToolOrigin,
}

/// One call as the [`Executor`] ran it: the call (its arguments repaired when they were text),
/// what ran it, and its output or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    /// The call.
    pub call: ToolCall,
    /// What ran it ([`Tool::origin`]; the executor's own for an unknown tool).
    pub origin: ToolOrigin,
    /// The output, or why there is none.
    pub output: Result<Value, ToolError>,
}

impl Ran {
    /// As kept in the context and shown to the model: the error as its text.
    pub fn into_result(self) -> ToolResult {
        ToolResult {
            name: self.call.name,
            args: self.call.arguments,
            output: self.output.map_err(|e| e.to_string()),
            origin: self.origin,
        }
    }
}

impl Executor {
    /// An executor of a fixed list of tools, default [`Limits`].
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        Self::of(Arc::new(tools.into_iter().collect::<Vec<_>>()))
    }

    /// An executor of the tools `set` has at each call, default [`Limits`].
    pub fn of(set: Arc<dyn ToolSet>) -> Self {
        Self {
            set,
            limits: Limits::default(),
            read: None,
            origin: ToolOrigin::Other {
                interceptor: "tools".to_owned(),
            },
        }
    }

    /// The same executor with other limits.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The same executor, finding a reply's calls with `read` (the `oneOf` route: a field of the
    /// reply), so an agent run on a backend without native tools runs them within the turn.
    #[must_use]
    pub fn with_reply_calls(
        mut self,
        read: impl Fn(&Value) -> Vec<ToolCall> + Send + Sync + 'static,
    ) -> Self {
        self.read = Some(Arc::new(read));
        self
    }

    /// The same executor, recording `origin` for a call that names none of its tools.
    #[must_use]
    pub fn with_origin(mut self, origin: ToolOrigin) -> Self {
        self.origin = origin;
        self
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The tools now.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.set.tools()
    }

    /// The tools as native function specs.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools()
            .iter()
            .map(|t| ToolSpec::new(t.name(), t.description(), t.parameters().clone()))
            .collect()
    }

    /// The calls `value` (a valid reply) makes through this executor's `oneOf` field, in order;
    /// none without one ([`Executor::with_reply_calls`]).
    pub fn calls_in(&self, value: &Value) -> Vec<ToolCall> {
        self.read
            .as_ref()
            .map(|read| read(value))
            .unwrap_or_default()
    }

    /// Whether this executor's tools go natively in the turn `ctx` is being prepared for (an agent
    /// run on a backend with tools, given this executor): the interceptor offering them through a
    /// reply's field then leaves its field and its tool list out.
    pub fn is_native(&self, ctx: &Context) -> bool {
        ctx.get::<NativeTools>()
            .is_some_and(|native| native.0.contains(&self.id()))
    }

    /// Runs the calls of one reply ([`Executor::run_calls`]), as results for the context.
    pub async fn run(&self, calls: &[ToolCall]) -> Vec<ToolResult> {
        self.run_calls(calls)
            .await
            .into_iter()
            .map(Ran::into_result)
            .collect()
    }

    /// Runs the calls of one reply: each admitted or refused (an unknown tool; past
    /// [`Limits::max_calls`]; arguments that are text and cannot be repaired into an object, or
    /// that violate the tool's schema), the admitted ones at most [`Limits::concurrency`] at once,
    /// each under [`Limits::timeout`]; a panic is an error too. One result per call, in order.
    pub async fn run_calls(&self, calls: &[ToolCall]) -> Vec<Ran> {
        let tools = self.tools();
        let admitted: Vec<Admitted> = calls
            .iter()
            .enumerate()
            .map(|(index, call)| self.admit(&tools, index, call))
            .collect();
        let timeout = self.limits.timeout;
        // A vector rather than `map` keeps the future `Send`: rust-lang/rust#102211.
        let running: Vec<_> = admitted
            .iter()
            .map(|(call, _, tool)| async move {
                match tool {
                    Ok(tool) => run_one(tool.as_ref(), call, timeout).await,
                    Err(why) => Err(why.clone()),
                }
            })
            .collect();
        let outputs = run_bounded(running, self.limits.concurrency).await;
        admitted
            .into_iter()
            .zip(outputs)
            .map(|((call, origin, _), output)| Ran {
                call,
                origin,
                output,
            })
            .collect()
    }

    /// `call` (the `index`th of its reply) with its arguments repaired, its origin, and its tool
    /// or why it does not run: past `max_calls` (whatever it names), an unknown tool, arguments
    /// that cannot be repaired or violate the schema.
    fn admit(&self, tools: &[Arc<dyn Tool>], index: usize, call: &ToolCall) -> Admitted {
        let mut call = call.clone();
        let tool = tools.iter().find(|t| t.name() == call.name);
        let origin = tool.map_or_else(|| self.origin.clone(), |t| t.origin());
        if index >= self.limits.max_calls {
            let why = ToolError::MaxCalls {
                max_calls: self.limits.max_calls,
            };
            return (call, origin, Err(why));
        }
        let Some(tool) = tool else {
            let why = ToolError::Unknown {
                name: call.name.clone(),
                available: tools.iter().map(|t| t.name().to_owned()).collect(),
            };
            return (call, origin, Err(why));
        };
        if let Value::String(raw) = &call.arguments {
            match recover_arguments(raw) {
                Ok((value, n_fixes)) => {
                    warn!(tool = %call.name, id = %call.id, n_fixes, "tool call arguments repaired");
                    call.arguments = value;
                }
                Err(reason) => {
                    return (call, origin, Err(ToolError::InvalidArguments { reason }));
                }
            }
        }
        if let Err(violations) = tool.check(&call.arguments) {
            let found: Vec<String> = violations.iter().map(ToString::to_string).collect();
            let why = ToolError::InvalidArguments {
                reason: found.join("; "),
            };
            return (call, origin, Err(why));
        }
        (call, origin, Ok(Arc::clone(tool)))
    }

    /// `texts` (one reply's results, in order) cut to share [`Limits::result_chars`], each cut one
    /// marked by `mark(shown, total)`: what the model is shown of them.
    pub fn budget(&self, texts: &[String], mark: impl Fn(usize, usize) -> String) -> Vec<String> {
        let lengths: Vec<usize> = texts.iter().map(|t| t.chars().count()).collect();
        shares(&lengths, self.limits.result_chars)
            .into_iter()
            .zip(texts)
            .map(|(keep, text)| match text.char_indices().nth(keep) {
                Some((end, _)) => format!("{}{}", &text[..end], mark(keep, text.chars().count())),
                None => text.clone(),
            })
            .collect()
    }

    /// What identifies this executor's tools (its clones share it).
    fn id(&self) -> usize {
        Arc::as_ptr(&self.set).cast::<()>() as usize
    }
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.tools().iter().map(|t| t.name().to_owned()).collect();
        f.debug_struct("Executor")
            .field("tools", &names)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Put in the context by an agent run whose tools go natively: the ids of those executors.
pub(crate) struct NativeTools(pub(crate) Vec<usize>);

impl NativeTools {
    /// The marker for `executors`.
    pub(crate) fn of<'a>(executors: impl IntoIterator<Item = &'a Executor>) -> Self {
        Self(executors.into_iter().map(Executor::id).collect())
    }
}

/// How many characters each of texts of `lengths` may keep so that together they fit `budget`:
/// texts shorter than an even share keep everything, the others split what remains evenly ("water
/// filling"). How [`Limits::result_chars`] is shared by one reply's results on every route.
///
/// ```
/// assert_eq!(claij_interceptors::shares(&[2, 100, 100], 50), [2, 24, 24]);
/// ```
pub fn shares(lengths: &[usize], budget: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| lengths[i]);
    let mut shares = vec![0; lengths.len()];
    let mut remaining = budget;
    for (k, &i) in order.iter().enumerate() {
        let fair = remaining / (lengths.len() - k);
        shares[i] = lengths[i].min(fair);
        remaining -= shares[i];
    }
    shares
}

/// The outputs of `calls`, in their order, at most `concurrency` of them running at once (0 counts
/// as 1).
///
/// ```
/// # futures_executor::block_on(async {
/// let outputs = claij_interceptors::run_bounded((1..=3).map(|n| async move { n * 2 }), 2).await;
/// assert_eq!(outputs, [2, 4, 6]);
/// # });
/// ```
pub async fn run_bounded<F: Future>(
    calls: impl IntoIterator<Item = F>,
    concurrency: usize,
) -> Vec<F::Output> {
    // Futures do nothing until polled: `buffered` starts at most `concurrency` of them (and their
    // timeouts) at a time, and yields in their order.
    stream::iter(calls)
        .buffered(concurrency.max(1))
        .collect()
        .await
}

/// A tool made of a name, a description, an arguments schema and an async function (the
/// arguments' schema compiled once; one that does not compile checks nothing).
///
/// ```
/// use claij_interceptors::{Tool, tool_fn};
/// use serde_json::json;
///
/// let echo = tool_fn("echo", "Returns its input.", json!({"type": "object"}), |args| async move { Ok(args) });
/// assert_eq!(echo.name(), "echo");
/// ```
pub fn tool_fn<F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    parameters: Value,
    f: F,
) -> FnTool
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    let validator = Validator::new(&parameters).ok().map(Arc::new);
    FnTool {
        name: name.into(),
        description: description.into(),
        parameters: Arc::new(parameters),
        validator,
        origin: ToolOrigin::Rust,
        call: Arc::new(move |args| Box::pin(f(args))),
    }
}

type Handler = dyn Fn(Value) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;

/// A [`Tool`] made with [`tool_fn`].
#[derive(Clone)]
pub struct FnTool {
    name: String,
    description: String,
    parameters: Arc<Value>,
    validator: Option<Arc<Validator>>,
    origin: ToolOrigin,
    call: Arc<Handler>,
}

impl FnTool {
    /// The same tool with another origin.
    #[must_use]
    pub fn with_origin(mut self, origin: ToolOrigin) -> Self {
        self.origin = origin;
        self
    }
}

impl Tool for FnTool {
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
        self.origin.clone()
    }

    fn check(&self, arguments: &Value) -> Result<(), Vec<Violation>> {
        self.validator
            .as_ref()
            .map_or(Ok(()), |v| v.validate(arguments))
    }

    fn call(&self, arguments: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        (self.call)(arguments)
    }
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Runs one admitted call under the timeout; the tool's error, the timeout and a panic become
/// the error.
async fn run_one(
    tool: &dyn Tool,
    call: &ToolCall,
    timeout: Option<Duration>,
) -> Result<Value, ToolError> {
    let span = crate::pipeline::spans::execute_tool(call);
    let started = std::time::Instant::now();
    let output = async {
        let running = CatchPanic(tool.call(call.arguments.clone()));
        let Some(after) = timeout else {
            return running
                .await
                .unwrap_or_else(|p| Err(ToolError::Panicked(p)));
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(ToolError::NoRuntime);
        }
        match tokio::time::timeout(after, running).await {
            Ok(Ok(output)) => output,
            Ok(Err(panic)) => Err(ToolError::Panicked(panic)),
            Err(_) => Err(ToolError::Timeout { after }),
        }
    }
    .instrument(span.clone())
    .await;
    crate::pipeline::spans::record_tool_output(
        &span,
        &output.as_ref().map_err(ToString::to_string).cloned(),
    );
    debug!(
        tool = %call.name,
        ok = output.is_ok(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "tool call"
    );
    output
}

/// A native call's raw arguments (text the provider could not parse) as a JSON object, extracted
/// and repaired as a reply is, with the number of fixes made; or why not, for the model: no JSON in
/// the text, a value that is not an object, or one that was cut off (a repaired truncation could
/// run a tool with half its arguments).
pub(crate) fn recover_arguments(raw: &str) -> Result<(Value, usize), String> {
    let repaired = claij_validation::extract::recover(raw)
        .map_err(|e| format!("the arguments are not JSON ({e})"))?;
    if repaired
        .fixes
        .iter()
        .any(|fix| fix.kind == FixKind::Truncation)
    {
        return Err("the arguments were cut off before their end".to_owned());
    }
    if !repaired.value.is_object() {
        return Err("the arguments are not a JSON object".to_owned());
    }
    Ok((repaired.value, repaired.fixes.len()))
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
