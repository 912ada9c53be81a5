//! The `eval` interceptor (the design's REPL interceptor): the model runs code in a sandbox and sees
//! the result on its next turn.
#![cfg(feature = "eval")]
//!
//! [`Eval`] adds an optional `eval` field to the reply: a [Rhai](https://rhai.rs) script (a small,
//! Rust-like embedded language). After the reply is validated the script runs in a sandbox, and the
//! [`EvalResult`] (its value as JSON or why it failed, and what it printed) goes into the [`Context`]'s
//! typed extensions and into the next turn's prompt. A reply without `eval` clears the previous result.
//!
//! ```
//! use claij_interceptors::builtin::eval::Eval;
//! use serde_json::json;
//!
//! let result = Eval::new().run_blocking("let x = 6; print(`x is ${x}`); x * 7");
//! assert_eq!(result.outcome, Ok(json!(42)));
//! assert_eq!(result.output, "x is 6");
//! ```
//!
//! # Sandbox
//!
//! The script can compute, and nothing else: Rhai reaches nothing outside the engine unless the host
//! registers it, and this build registers no host function and has no module system (`import` is a
//! syntax error, so no file is ever loaded). `print` and `debug` are captured, never written to stdout.
//! [`Limits`] bound the operations, the nesting of calls and expressions, the size of strings, arrays
//! and maps, the code's length and the wall-clock time (checked every few hundred operations). Rhai
//! checks sizes as values go through functions and operators (a map filled by `m[key] = value` is
//! checked when it is next used), so between checks the operation limit and the clock bound memory.
//! Every failure (syntax, a limit, the timeout, a runtime error) is an [`EvalError`] in the result, not
//! an error of the pipeline.
//!
//! [`Eval::run`] runs the script on a thread of its own (with a large stack, so the nesting limits,
//! not the stack, stop deep recursion) and awaits it without blocking the executor; it works on any
//! executor. The thread always ends within about [`Limits::wall_clock`], even when the awaiting future
//! is dropped.
//!
//! # Schema delta
//!
//! Extension `eval-v1` ([`EXTENSION`], [`Eval::schema_delta`]):
//!
//! ```
//! # use claij_interceptors::builtin::eval::Eval;
//! # use serde_json::json;
//! assert_eq!(Eval::new().schema_delta(), json!({"properties": {"eval": {
//!     "type": "string",
//!     "description": "Rhai code to run in a sandbox after this reply; its value and printed output come \
//!         back to you on the next turn. Omit when you need no computation",
//!     "maxLength": 10000
//! }}}));
//! ```
//!
//! # Prompt
//!
//! A system-prompt section explaining the language and the limits ([`Eval::prompt_section`]), and when
//! the previous reply ran code, its result ([`result_section`]), cut to [`Limits::max_output`]
//! characters:
//!
//! ```text
//! Result of the `eval` code of your previous reply:
//! ok: 42
//! printed:
//! x is 6
//! ```

use std::fmt;
use std::time::Duration;

use claij_backends::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tracing::debug;

use crate::context::{Carried, Context};
use crate::interceptor::{BoxError, Interceptor};
use crate::prompts::Prompts;
use crate::schema::Schema;

mod sandbox;
#[cfg(test)]
mod tests;

/// The extension id of the `eval` schema delta.
pub const EXTENSION: &str = "eval-v1";
/// The version of what the interceptor carries to the next turn ([`Interceptor::carry`]): the last
/// reply's [`EvalResult`] as JSON.
pub const STATE_VERSION: u32 = 1;

/// The stack of the thread a script runs on: ample for the default nesting limits even in debug builds.
const STACK_SIZE: usize = 16 * 1024 * 1024;

/// The `eval` interceptor.
#[derive(Debug, Clone, Default)]
pub struct Eval {
    limits: Limits,
}

/// What a script may use.
///
/// As in Rhai, zero lifts the limit on operations, on the nesting of expressions and on the sizes of
/// strings, arrays and maps. The wall clock, the call depth, the code's length and the output always
/// apply (zero allows none).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Operations (roughly, expressions evaluated) per run (default 1,000,000).
    pub max_operations: u64,
    /// Wall-clock time per run (default 1 s).
    pub wall_clock: Duration,
    /// Nesting of function calls (default 32).
    pub max_call_depth: usize,
    /// Nesting of expressions at the top level (default 64).
    pub max_expr_depth: usize,
    /// Nesting of expressions in function bodies (default 32).
    pub max_function_expr_depth: usize,
    /// Characters of a string (default 65,536).
    pub max_string_len: usize,
    /// Items of an array (default 10,000).
    pub max_array_len: usize,
    /// Entries of a map (default 10,000).
    pub max_map_len: usize,
    /// Characters of code (default 10,000; the schema's `maxLength`).
    pub max_code_len: usize,
    /// Characters of printed output kept, and of the value and output shown in the prompt (default 4,000).
    pub max_output: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_operations: 1_000_000,
            wall_clock: Duration::from_secs(1),
            max_call_depth: 32,
            max_expr_depth: 64,
            max_function_expr_depth: 32,
            max_string_len: 65_536,
            max_array_len: 10_000,
            max_map_len: 10_000,
            max_code_len: 10_000,
            max_output: 4_000,
        }
    }
}

/// The outcome of the code of one reply, kept in the [`Context`] (`ctx.get::<EvalResult>()`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalResult {
    /// The code, as the model wrote it.
    pub code: String,
    /// The value of the code's last expression as JSON (`null` for none), or why there is none.
    pub outcome: Result<Value, EvalError>,
    /// What the code printed with `print` and `debug`, one line each, cut at [`Limits::max_output`].
    pub output: String,
}

/// Why code produced no value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EvalError {
    /// The code does not parse.
    #[error("syntax error: {message}")]
    Syntax {
        /// Rhai's message, with the line and position.
        message: String,
    },
    /// The code went past one of the [`Limits`].
    #[error("limit exceeded: {message}")]
    Limit {
        /// Which limit, and where.
        message: String,
    },
    /// The code ran past [`Limits::wall_clock`].
    #[error("timed out after {}", humantime::format_duration(*after))]
    Timeout {
        /// The limit.
        after: Duration,
    },
    /// The code failed while running (an unknown function, a type mismatch, a thrown value...).
    #[error("runtime error: {message}")]
    Runtime {
        /// Rhai's message, with the line and position.
        message: String,
    },
    /// `eval` was not a string.
    #[error("`eval` must be a string of Rhai code")]
    NotCode,
}

impl Eval {
    /// The interceptor with the default [`Limits`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The interceptor with other limits.
    pub fn with_limits(limits: Limits) -> Self {
        Self { limits }
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The schema delta (see the [module docs](self)).
    pub fn schema_delta(&self) -> Value {
        json!({"properties": {"eval": {
            "type": "string",
            "description": "Rhai code to run in a sandbox after this reply; its value and printed output \
                come back to you on the next turn. Omit when you need no computation",
            "maxLength": self.limits.max_code_len,
        }}})
    }

    /// The system-prompt section explaining `eval`.
    pub fn prompt_section(&self) -> String {
        let l = &self.limits;
        let operations = if l.max_operations == 0 {
            String::new()
        } else {
            format!("{} operations, ", l.max_operations)
        };
        format!(
            "Code evaluation: to compute something exactly, put a Rhai script in `eval`. Rhai is like \
             Rust without types: `let x = 40; x + 2`, `fn f(n) {{ n * 2 }}`, `if`, `while`, \
             `for i in 0..10 {{}}`, arrays `[1, 2]`, object maps `#{{a: 1}}`, strings with \
             interpolation `` `x = ${{x}}` ``; integers are 64-bit, `/` on integers divides whole \
             numbers (write `7.0 / 2.0` for 3.5). The value of the last expression and anything passed \
             to `print` come back to you on the next turn. The script runs sandboxed: no files, \
             network, processes or modules; at most {operations}{wall} of time, calls nested {calls} \
             deep, strings of {string} characters, arrays and maps of {items} items.",
            wall = humantime::format_duration(l.wall_clock),
            calls = l.max_call_depth,
            string = l.max_string_len,
            items = l.max_array_len.max(l.max_map_len),
        )
    }

    /// Runs `code` on a thread of its own and awaits the result without blocking the executor.
    pub async fn run(&self, code: &str) -> EvalResult {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let owned = code.to_owned();
        let limits = self.limits.clone();
        let spawned = std::thread::Builder::new()
            .name("claij-eval".to_owned())
            .stack_size(STACK_SIZE)
            .spawn(move || {
                // The receiver may be gone (the caller gave up): nothing to do then.
                let _ = sender.send(sandbox::evaluate(&owned, &limits));
            });
        if let Err(e) = spawned {
            return EvalResult::failed(
                code,
                EvalError::Runtime {
                    message: format!("cannot start the sandbox thread: {e}"),
                },
            );
        }
        receiver.await.unwrap_or_else(|_| {
            EvalResult::failed(
                code,
                EvalError::Runtime {
                    message: "the evaluation panicked".to_owned(),
                },
            )
        })
    }

    /// Runs `code` on the calling thread, which it blocks for up to about [`Limits::wall_clock`].
    pub fn run_blocking(&self, code: &str) -> EvalResult {
        sandbox::evaluate(code, &self.limits)
    }

    /// The sandbox as a [`Tool`](crate::Tool) named `eval`, taking `{"code": "<Rhai script>"}`, for
    /// a route where the model calls tools by name (the FSM's `tools/call` service, an agent run):
    /// its output is the script's value, or `{"value": …, "printed": "…"}` when the script printed
    /// something; a script that fails is the call's error.
    ///
    /// The `eval` interceptor itself is not a tool call: its reply field holds one script per reply,
    /// run after it under the sandbox's own [`Limits`], with no name to choose and no calls to count.
    ///
    /// ```
    /// use claij_interceptors::builtin::eval::Eval;
    /// use claij_interceptors::{Executor, Tool};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let tool = Eval::new().tool();
    /// assert_eq!(tool.name(), "eval");
    /// let results = Executor::new([std::sync::Arc::new(tool) as std::sync::Arc<dyn Tool>])
    ///     .run(&[claij_backends::ToolCall::new("1", "eval", json!({"code": "print(\"hi\"); 6 * 7"}))])
    ///     .await;
    /// assert_eq!(results[0].output, Ok(json!({"value": 42, "printed": "hi"})));
    /// # }
    /// ```
    pub fn tool(&self) -> EvalTool {
        EvalTool {
            parameters: json!({
                "type": "object",
                "properties": {"code": {"type": "string", "maxLength": self.limits.max_code_len}},
                "required": ["code"],
            }),
            eval: self.clone(),
        }
    }
}

/// The `eval` sandbox as a [`Tool`](crate::Tool) ([`Eval::tool`]).
#[derive(Debug, Clone)]
pub struct EvalTool {
    eval: Eval,
    parameters: Value,
}

impl crate::tool::Tool for EvalTool {
    fn name(&self) -> &str {
        "eval"
    }

    fn description(&self) -> &str {
        "Runs Rhai code in a sandbox: its value, and what it printed."
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    fn call(&self, arguments: Value) -> BoxFuture<'_, Result<Value, crate::tool::ToolError>> {
        Box::pin(async move {
            let code = arguments.get("code").and_then(Value::as_str).unwrap_or("");
            let result = self.eval.run(code).await;
            let value = result
                .outcome
                .map_err(|e| crate::tool::ToolError::Failed(e.to_string()))?;
            Ok(if result.output.is_empty() {
                value
            } else {
                json!({"value": value, "printed": result.output})
            })
        })
    }
}

impl EvalResult {
    /// A result without a value or output.
    pub fn failed(code: &str, error: EvalError) -> Self {
        Self {
            code: code.to_owned(),
            outcome: Err(error),
            output: String::new(),
        }
    }
}

impl fmt::Display for EvalResult {
    /// The value (as JSON) or the error.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.outcome {
            Ok(value) => write!(f, "{value}"),
            Err(e) => write!(f, "{e}"),
        }
    }
}

/// The system-prompt section showing the result of the previous reply's code: the value or the error,
/// then what was printed, each cut to `max_output` characters.
///
/// ```
/// use claij_interceptors::builtin::eval::{Eval, result_section};
///
/// let result = Eval::new().run_blocking("print(\"hi\"); 6 * 7");
/// assert_eq!(result_section(&result, 4000), "\
/// Result of the `eval` code of your previous reply:
/// ok: 42
/// printed:
/// hi");
/// ```
pub fn result_section(result: &EvalResult, max_output: usize) -> String {
    let mut out = "Result of the `eval` code of your previous reply:\n".to_owned();
    match &result.outcome {
        Ok(value) => {
            out.push_str("ok: ");
            out.push_str(&cut(&value.to_string(), max_output));
        }
        Err(e) => {
            out.push_str("error: ");
            out.push_str(&cut(&e.to_string(), max_output));
        }
    }
    if !result.output.is_empty() {
        out.push_str("\nprinted:\n");
        out.push_str(&cut(&result.output, max_output));
    }
    out
}

/// The first `keep` characters of `text`, with a note of how many were cut; all of it when it fits.
fn cut(text: &str, keep: usize) -> String {
    let total = text.chars().count();
    if total <= keep {
        return text.to_owned();
    }
    let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    format!("{}… ({} more characters)", &text[..end], total - keep)
}

impl Interceptor for Eval {
    fn name(&self) -> &str {
        "eval"
    }

    fn pre_schema(&self, schema: &mut Schema, _ctx: &Context) -> Result<(), BoxError> {
        schema.extend(EXTENSION, self.schema_delta());
        Ok(())
    }

    fn pre_prompt(&self, prompts: &mut Prompts, ctx: &Context) -> Result<(), BoxError> {
        prompts.system_push(&self.prompt_section());
        if let Some(result) = ctx.get::<EvalResult>() {
            prompts.system_push(&result_section(result, self.limits.max_output));
        }
        Ok(())
    }

    fn post_response<'a>(
        &'a self,
        response: &'a Value,
        ctx: &'a mut Context,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            let result = match response.get("eval") {
                None | Some(Value::Null) => None,
                Some(Value::String(code)) => Some(self.run(code).await),
                Some(other) => Some(EvalResult::failed(&other.to_string(), EvalError::NotCode)),
            };
            match result {
                Some(result) => {
                    debug!(
                        ok = result.outcome.is_ok(),
                        code_len = result.code.len(),
                        "eval"
                    );
                    ctx.insert(result);
                }
                None => {
                    ctx.remove::<EvalResult>();
                }
            }
            Ok(())
        })
    }

    fn carry(&self, ctx: &Context) -> Result<Option<Carried>, BoxError> {
        match ctx.get::<EvalResult>() {
            Some(result) => Ok(Some(Carried::new(STATE_VERSION, result)?)),
            None => Ok(None),
        }
    }

    fn restore(&self, carried: &Carried, ctx: &mut Context) -> Result<(), BoxError> {
        ctx.insert(carried.read::<EvalResult>(STATE_VERSION)?);
        Ok(())
    }
}
