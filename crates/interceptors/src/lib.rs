//! The claij request pipeline: interceptors that grow the schema and the prompts, a backend call, and a
//! validation-retry loop that returns a valid value or a precise error.
//!
//! ```
//! use std::sync::Arc;
//! use claij_test_support::Scripted;
//! use claij_interceptors::{Chain, Config, Context, Pipeline, from_fn};
//! use serde_json::json;
//!
//! // An interceptor that asks for a `mood` field and keeps it in the context.
//! #[derive(Debug, PartialEq)]
//! struct Mood(String);
//! let mood = from_fn("mood")
//!     .pre_schema(|schema, _| {
//!         schema.extend("mood-v1", json!({"properties": {"mood": {"enum": ["calm", "excited"]}}, "required": ["mood"]}));
//!         Ok(())
//!     })
//!     .post_response(|value, ctx| {
//!         ctx.insert(Mood(value["mood"].as_str().unwrap_or_default().to_owned()));
//!         Ok(())
//!     });
//!
//! let backend = Arc::new(Scripted::replies([r#"{"answer": "hi", "state": "chat", "mood": "Calm"}"#]));
//! let pipeline = Pipeline::new(backend, Config::new("test-model"), Chain::new().with(mood));
//! let mut ctx = Context::default();
//! let answer = futures_executor::block_on(pipeline.ask(&mut ctx, "Hello"))?;
//! assert_eq!(answer.value["mood"], "calm"); // coerced to the enum's case
//! assert_eq!(ctx.get::<Mood>(), Some(&Mood("calm".into())));
//! # Ok::<(), claij_interceptors::Error>(())
//! ```
//!
//! The data flow, per [`Pipeline::ask`]: every interceptor's `pre_schema` adds schema deltas, composed
//! through a [`claij_schema::Registry`] (checked, rolled back when broken, audited, compiled once per
//! distinct schema); `pre_prompt` hooks build the prompts; the schema goes into the system prompt unless
//! the backend enforces it natively; the reply is extracted, repaired, coerced and validated (plus any
//! semantic [check](Pipeline::with_check)); an invalid reply gets the retry prompt, up to
//! [`Config::max_retries`] times; then `post_response` hooks run in reverse order. The [`Answer`] carries
//! the value and every [`Attempt`] with usage totalled.
//!
//! The context keeps the conversation ([`Context::history`], a [`History`]): each request sends its
//! latest messages, as [`Config::history`] ([`HistoryPolicy`]) allows, between the system prompt and
//! the user's input, and each turn adds the input and the valid answer. A retry keeps the request as
//! it was and adds the invalid reply and the correction as two more turns ([`RetryForm`]).
//! [`Pipeline::run_agent`] lets the model call the tools given to the pipeline
//! ([`Pipeline::with_tools`]) within one turn, natively where the backend can, until it answers or a
//! [`Budget`] runs out ([`Pipeline::run_agent_streaming`] shows each step's partial values). Every
//! tool call, by any route, runs through one engine ([`tool`]): a [`Tool`] and the [`Executor`] that
//! owns the argument check and the [`Limits`].
//!
//! Errors: [`Error`]. Hook failures name the interceptor and the stage; retries exhausted carry every
//! attempt, the last violations and the last reply; an agent run out of budget names the bound.
//! Callers branch on [`Error::kind`] and the predicates ([`Error::is_timeout`],
//! [`Error::is_retryable`], [`Error::is_invalid_reply`], [`Error::is_budget`]...), as on reqwest's
//! errors. Each claij crate has its own [`ErrorKind`], naming its own variants (as `std::io` has
//! one): a kind shared by all would mix a schema conflict with an HTTP 429 in one list every crate
//! must match, and would have to live below every crate. What *is* shared is meaning, so it is the
//! predicates that are shared: the same name means the same thing in each crate's error, and an
//! error that wraps another answers from it (claij-fsm's `Error::Llm` from this crate's
//! [`Error::Backend`], which answers from [`claij_backends::Error`]). No wrapper decides again:
//! "retryable" is [`claij_backends::Error::is_retryable`], which the HTTP retry loop and this
//! pipeline's resend both use.

mod budget;
pub mod builtin;
mod chain;
mod context;
mod error;
mod failure_log;
mod history;
mod interceptor;
mod pipeline;
mod prompts;
mod schema;
pub mod several;
pub mod tool;
mod typed;

pub use budget::{Budget, BudgetKind, DEFAULT_MAX_STEPS};
pub use chain::{Chain, Link};
pub use context::{Carried, CarryError, Context, MemoryState, ToolOrigin, ToolResult};
pub use error::{Error, ErrorChain, ErrorKind, Exhausted};
pub use failure_log::{FailureLog, redact};
pub use history::{
    DEFAULT_HISTORY_MESSAGES, DEFAULT_HISTORY_TOKENS, History, HistoryPolicy, estimate_tokens,
};
pub use interceptor::{BoxError, FnInterceptor, Interceptor, OnError, Stage, from_fn};
pub use pipeline::{
    AgentRun, Answer, Attempt, CallReport, Check, Config, CutString, DEFAULT_MAX_REPLY_BYTES,
    EXAMPLE_INTRO, Pipeline, Prepared, RETRY_TEMPERATURE, RetryForm, SchemaFormat, ShowExample,
    StructuredMode, Verdict,
};
pub use prompts::Prompts;
pub use schema::Schema;
pub use tool::{
    DEFAULT_CONCURRENCY, DEFAULT_MAX_CALLS, DEFAULT_RESULT_CHARS, DEFAULT_TIMEOUT, Executor,
    FnTool, Limits, Ran, Tool, ToolError, ToolSet, run_bounded, shares, tool_fn,
};
pub use typed::{Partial, schema_of};
