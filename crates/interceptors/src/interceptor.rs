//! The [`Interceptor`] trait, its stages and error policy, and closure-built interceptors.

use std::fmt;
use std::future::ready;
use std::sync::Arc;

use claij_backends::BoxFuture;
use claij_validation::Violation;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::{Carried, Context};
use crate::pipeline::Check;
use crate::prompts::Prompts;
use crate::schema::Schema;

/// The error an interceptor's hook returns; the pipeline wraps it with the interceptor and the stage.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One extension of the pipeline, Pedestal-style: each hook is optional.
///
/// - [`pre_request`](Interceptor::pre_request) does async work before the request is prepared (a
///   store looked up for what the new message recalls), keeping its result in the context for the
///   sync hooks below;
/// - [`pre_schema`](Interceptor::pre_schema) adds schema deltas (fields the model must fill in);
/// - [`pre_prompt`](Interceptor::pre_prompt) adds to the prompts (what the model is told);
/// - [`check`](Interceptor::check) judges a reply the schema accepts (a cited note that exists, an
///   index within range): its violations send the reply back for a retry like schema violations;
/// - [`post_response`](Interceptor::post_response) acts on the validated value (stores memory, runs
///   tools) and updates the context for the next turn;
/// - [`carry`](Interceptor::carry) and [`restore`](Interceptor::restore) save what it keeps in the
///   context for the next turn and put it back in another process (a conversation saved in a file),
///   so a turn asked there sees what this one left ([`crate::Chain::carry`]).
///
/// A [`crate::Chain`] runs pre hooks in insertion order and post hooks in reverse.
pub trait Interceptor: Send + Sync {
    /// A short, unique name (`memory`, `tools`): it names the interceptor in errors, logs and audits.
    fn name(&self) -> &str;

    /// Async work before the request's schema and prompts are prepared, with the user's `input`: what
    /// it finds goes in `ctx` (its typed extension map) for [`pre_schema`](Interceptor::pre_schema)
    /// and [`pre_prompt`](Interceptor::pre_prompt) to use. Runs once per turn, in insertion order.
    ///
    /// # Errors
    ///
    /// Anything that stops the interceptor from contributing; see [`OnError`].
    fn pre_request<'a>(
        &'a self,
        input: &'a str,
        ctx: &'a mut Context,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        let _ = (input, ctx);
        Box::pin(ready(Ok(())))
    }

    /// Adds schema deltas for this request.
    ///
    /// # Errors
    ///
    /// Anything that stops the interceptor from contributing; see [`OnError`].
    fn pre_schema(&self, schema: &mut Schema, ctx: &Context) -> Result<(), BoxError> {
        let _ = (schema, ctx);
        Ok(())
    }

    /// Adds to (or rewrites) the prompts for this request.
    ///
    /// # Errors
    ///
    /// Anything that stops the interceptor from contributing; see [`OnError`].
    fn pre_prompt(&self, prompts: &mut Prompts, ctx: &Context) -> Result<(), BoxError> {
        let _ = (prompts, ctx);
        Ok(())
    }

    /// What is wrong with a reply the composed schema accepts, beyond what the schema can say; called
    /// once per attempt whose reply is schema-valid, in insertion order. The violations are fed to the
    /// retry loop like schema violations; one whose `keyword` is empty gets this interceptor's name.
    /// Not called for plain-text answers (no schema).
    fn check(&self, value: &Value, ctx: &Context) -> Vec<Violation> {
        let _ = (value, ctx);
        Vec::new()
    }

    /// Acts on the validated response and updates the context.
    fn post_response<'a>(
        &'a self,
        response: &'a Value,
        ctx: &'a mut Context,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        let _ = (response, ctx);
        Box::pin(ready(Ok(())))
    }

    /// What this interceptor keeps in `ctx` for the next turn, in its own versioned format, for a
    /// conversation saved between processes: `None` when it keeps nothing now. What it returns is
    /// given back to [`restore`](Interceptor::restore) before a later turn.
    ///
    /// # Errors
    ///
    /// When the state cannot be written as JSON.
    fn carry(&self, ctx: &Context) -> Result<Option<Carried>, BoxError> {
        let _ = ctx;
        Ok(None)
    }

    /// Puts what [`carry`](Interceptor::carry) returned (perhaps in an older claij) back in `ctx`.
    ///
    /// # Errors
    ///
    /// A state this version cannot read: a newer format version ([`crate::CarryError::Newer`]) or
    /// a malformed one. Nothing is guessed.
    fn restore(&self, carried: &Carried, ctx: &mut Context) -> Result<(), BoxError> {
        let _ = (carried, ctx);
        Ok(())
    }
}

/// The hooks that can fail, as a closed set: the four of a request, and saving and restoring what
/// an interceptor carries between turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Async work before the request is prepared ([`Interceptor::pre_request`]).
    PreRequest,
    /// Adding schema deltas.
    PreSchema,
    /// Building prompts.
    PrePrompt,
    /// Acting on the response.
    PostResponse,
    /// Saving what is carried to the next turn ([`Interceptor::carry`]).
    Carry,
    /// Restoring what was carried ([`Interceptor::restore`]).
    Restore,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::PreRequest => "pre_request",
            Stage::PreSchema => "pre_schema",
            Stage::PrePrompt => "pre_prompt",
            Stage::PostResponse => "post_response",
            Stage::Carry => "carry",
            Stage::Restore => "restore",
        })
    }
}

/// What the pipeline does when an interceptor's hook fails (or its schema delta is rejected).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// Fail the whole request with [`crate::Error::Hook`] (the default).
    #[default]
    Fail,
    /// Log a warning, record the failure on the answer, and go on without this hook's contribution.
    Skip,
}

type PreSchemaFn = dyn Fn(&mut Schema, &Context) -> Result<(), BoxError> + Send + Sync;
type PrePromptFn = dyn Fn(&mut Prompts, &Context) -> Result<(), BoxError> + Send + Sync;
type PostFn = dyn Fn(&Value, &mut Context) -> Result<(), BoxError> + Send + Sync;

/// An interceptor made of closures (like tower's `layer_fn` or axum's `from_fn`).
///
/// ```
/// use claij_interceptors::{Interceptor, from_fn};
///
/// let shout = from_fn("shout").pre_prompt(|prompts, _ctx| {
///     prompts.system_push("Answer in capitals.");
///     Ok(())
/// });
/// assert_eq!(shout.name(), "shout");
/// ```
#[derive(Clone)]
pub struct FnInterceptor {
    name: String,
    pre_schema: Option<Arc<PreSchemaFn>>,
    pre_prompt: Option<Arc<PrePromptFn>>,
    check: Option<Arc<Check>>,
    post_response: Option<Arc<PostFn>>,
}

/// An interceptor named `name` with no hooks yet; add them with its builder methods.
pub fn from_fn(name: impl Into<String>) -> FnInterceptor {
    FnInterceptor {
        name: name.into(),
        pre_schema: None,
        pre_prompt: None,
        check: None,
        post_response: None,
    }
}

impl FnInterceptor {
    /// Sets the `pre_schema` hook.
    #[must_use]
    pub fn pre_schema(
        mut self,
        f: impl Fn(&mut Schema, &Context) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Self {
        self.pre_schema = Some(Arc::new(f));
        self
    }

    /// Sets the `pre_prompt` hook.
    #[must_use]
    pub fn pre_prompt(
        mut self,
        f: impl Fn(&mut Prompts, &Context) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Self {
        self.pre_prompt = Some(Arc::new(f));
        self
    }

    /// Sets the `check` hook.
    #[must_use]
    pub fn check(
        mut self,
        f: impl Fn(&Value, &Context) -> Vec<Violation> + Send + Sync + 'static,
    ) -> Self {
        self.check = Some(Arc::new(f));
        self
    }

    /// Sets the `post_response` hook (a synchronous one; implement [`Interceptor`] for async work).
    #[must_use]
    pub fn post_response(
        mut self,
        f: impl Fn(&Value, &mut Context) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Self {
        self.post_response = Some(Arc::new(f));
        self
    }
}

impl Interceptor for FnInterceptor {
    fn name(&self) -> &str {
        &self.name
    }

    fn pre_schema(&self, schema: &mut Schema, ctx: &Context) -> Result<(), BoxError> {
        self.pre_schema.as_ref().map_or(Ok(()), |f| f(schema, ctx))
    }

    fn pre_prompt(&self, prompts: &mut Prompts, ctx: &Context) -> Result<(), BoxError> {
        self.pre_prompt.as_ref().map_or(Ok(()), |f| f(prompts, ctx))
    }

    fn check(&self, value: &Value, ctx: &Context) -> Vec<Violation> {
        self.check.as_ref().map_or_else(Vec::new, |f| f(value, ctx))
    }

    fn post_response<'a>(
        &'a self,
        response: &'a Value,
        ctx: &'a mut Context,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        let result = self
            .post_response
            .as_ref()
            .map_or(Ok(()), |f| f(response, ctx));
        Box::pin(ready(result))
    }
}

impl fmt::Debug for FnInterceptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnInterceptor")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
