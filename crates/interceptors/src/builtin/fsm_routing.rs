//! The `fsm_routing` interceptor: `state` constrained to the allowed next states, the model told where
//! it is and where it may go, and every transition recorded in the context.
//!
//! Where the conversation is lives in the context's typed map as a [`RoutingState`]
//! (`ctx.get::<RoutingState>()`). The allowed next states come from a transition table given to
//! [`FsmRouting::new`] (looked up with [`RoutingState::current`] as the current state), or, without a
//! table or before the first state, from [`RoutingState::allowed`]. When neither says anything (or the
//! context holds no `RoutingState`) the interceptor constrains nothing.
//!
//! **Schema delta** (extension [`EXTENSION_ID`]), for allowed states `review` and `draft`:
//!
//! ```json
//! {"properties": {"state": {"enum": ["review", "draft"]}}, "required": ["state"]}
//! ```
//!
//! The base schema already defines `state` as a string, so composition keeps both as
//! `{"allOf": [base's, {"enum": [...]}]}`. Coercion fixes the case of a state (`Review` to `review`);
//! any other state is an `enum` violation, and the model is asked again.
//!
//! **Prompt text**, added to the system prompt:
//!
//! ```text
//! You are in state `draft`. Set `state` to the next state, one of: `review`, `draft`.
//! ```
//!
//! The first sentence only when there is a current state. With one choice the second reads
//! ``Set `state` to `done`, the only next state.``
//!
//! **After the response**, the new state is checked against the allowed ones once more, then
//! [`RoutingState::current`] becomes it, [`RoutingState::allowed`] becomes its next states from the
//! table (or is cleared without a table: the caller sets them for the next turn), and a [`Route`]
//! is appended to the [`Routes`] log in the context.
//!
//! ```
//! use std::sync::Arc;
//! use claij_test_support::Scripted;
//! use claij_interceptors::builtin::fsm_routing::{FsmRouting, RoutingState, Routes};
//! use claij_interceptors::{Chain, Config, Context, Pipeline};
//!
//! let routing = FsmRouting::new([("draft", vec!["review"]), ("review", vec!["approved", "draft"])]);
//! let backend = Arc::new(Scripted::replies([
//!     r#"{"answer": "done", "state": "approved"}"#, // not allowed from `draft`: retried
//!     r#"{"answer": "sent", "state": "review"}"#,
//! ]));
//! let pipeline = Pipeline::new(backend, Config::new("test-model"), Chain::new().with(routing));
//! let mut ctx = Context::default();
//! ctx.insert(RoutingState::at("draft"));
//! let answer = futures_executor::block_on(pipeline.ask(&mut ctx, "Send it for review"))?;
//! assert_eq!(answer.retries(), 1);
//! let routing = ctx.get::<RoutingState>().unwrap();
//! assert_eq!(routing.current.as_deref(), Some("review"));
//! assert_eq!(routing.allowed, ["approved", "draft"]);
//! let log = ctx.get::<Routes>().unwrap();
//! assert_eq!(log.0[0].from.as_deref(), Some("draft"));
//! assert_eq!(log.0[0].to, "review");
//! # Ok::<(), claij_interceptors::Error>(())
//! ```

use std::collections::BTreeMap;

use claij_backends::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tracing::info;

use crate::context::Context;
use crate::interceptor::{BoxError, Interceptor};
use crate::prompts::Prompts;
use crate::schema::Schema;

/// The interceptor's name.
pub const NAME: &str = "fsm_routing";

/// The extension id of its schema delta.
pub const EXTENSION_ID: &str = "fsm-routing-v1";

/// The interceptor: constrains `state`, tells the model, records transitions.
#[derive(Debug, Clone, Default)]
pub struct FsmRouting {
    /// State -> allowed next states; every target is also a key (with no next states if it had none).
    table: Option<BTreeMap<String, Vec<String>>>,
}

/// Where the conversation's state machine is: kept in the context's typed map
/// (`ctx.get::<RoutingState>()`, `ctx.insert(RoutingState::at("draft"))`) and moved by
/// [`FsmRouting::transition`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RoutingState {
    /// The current state (`None` before the first move).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// The states the model may move to next, when routing has no table or no current state (set by
    /// the caller; cleared by a move without a table, replaced by the table's next states with one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<String>,
}

impl RoutingState {
    /// In state `state`, the next states left to the transition table.
    pub fn at(state: impl Into<String>) -> Self {
        Self {
            current: Some(state.into()),
            allowed: Vec::new(),
        }
    }

    /// Before any state, allowed to move to `states`.
    pub fn allowing<I>(states: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        Self {
            current: None,
            allowed: states.into_iter().map(Into::into).collect(),
        }
    }
}

/// One move of the conversation's state machine: the route it took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// The state before (`None` on the first move).
    pub from: Option<String>,
    /// The state after.
    pub to: String,
    /// The turn that made it ([`Context::turn`] during the call, counted from 0).
    pub turn: u64,
}

/// Every route taken so far, oldest first: kept in the context's typed map
/// (`ctx.get::<Routes>()`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Routes(pub Vec<Route>);

/// Why routing failed; the pipeline reports it as a hook error of `fsm_routing`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoutingError {
    /// The current state is not in the transition table.
    #[error("state `{state}` is not in the transition table")]
    UnknownState {
        /// The current state.
        state: String,
    },
    /// The current state has no next states: the conversation is over.
    #[error("state `{state}` is terminal: it has no transitions")]
    Terminal {
        /// The current state.
        state: String,
    },
    /// The response moved to a state that is not allowed (the schema normally prevents it).
    #[error("transition from {} to `{to}` is not allowed (allowed: {})", from_name(.from), .allowed.join(", "))]
    NotAllowed {
        /// The current state.
        from: Option<String>,
        /// The state the response named.
        to: String,
        /// The states allowed.
        allowed: Vec<String>,
    },
    /// The response has no string `state` although routing was active.
    #[error("the response has no string `state`")]
    MissingState,
}

impl FsmRouting {
    /// Routing by a transition table: from each state (the key) to its allowed next states.
    ///
    /// A state that appears only as a target is terminal. Duplicate targets are kept once, in their
    /// first position (the order is the order of the `enum` the model sees).
    pub fn new<I, S, N>(table: I) -> Self
    where
        I: IntoIterator<Item = (S, N)>,
        S: Into<String>,
        N: IntoIterator,
        N::Item: Into<String>,
    {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (state, next) in table {
            let entry = map.entry(state.into()).or_default();
            for n in next {
                let n = n.into();
                if !entry.contains(&n) {
                    entry.push(n);
                }
            }
        }
        let targets: Vec<String> = map.values().flatten().cloned().collect();
        for t in targets {
            map.entry(t).or_default();
        }
        Self { table: Some(map) }
    }

    /// Routing by [`RoutingState::allowed`] alone (set by the caller each turn).
    pub fn from_context() -> Self {
        Self::default()
    }

    /// The states the model may move to now: from the table when it knows the current state, else
    /// [`RoutingState::allowed`]; `None` when neither constrains anything (or the context holds no
    /// [`RoutingState`]).
    ///
    /// # Errors
    ///
    /// [`RoutingError::UnknownState`] when there is a table and a current state it does not know,
    /// [`RoutingError::Terminal`] when the current state has no next states.
    pub fn allowed(&self, ctx: &Context) -> Result<Option<Vec<String>>, RoutingError> {
        let Some(routing) = ctx.get::<RoutingState>() else {
            return Ok(None);
        };
        if let (Some(table), Some(state)) = (&self.table, &routing.current) {
            return match table.get(state) {
                Some(next) if next.is_empty() => Err(RoutingError::Terminal {
                    state: state.clone(),
                }),
                Some(next) => Ok(Some(next.clone())),
                None => Err(RoutingError::UnknownState {
                    state: state.clone(),
                }),
            };
        }
        if routing.allowed.is_empty() {
            return Ok(None);
        }
        let mut allowed: Vec<String> = Vec::new();
        for s in &routing.allowed {
            if !allowed.contains(s) {
                allowed.push(s.clone());
            }
        }
        Ok(Some(allowed))
    }

    /// The schema delta constraining `state` to `allowed`.
    pub fn delta(allowed: &[String]) -> Value {
        json!({
            "properties": {"state": {"enum": allowed}},
            "required": ["state"],
        })
    }

    /// The prompt section telling the model where it is and where it may go.
    pub fn prompt(current: Option<&str>, allowed: &[String]) -> String {
        let here = current.map_or_else(String::new, |s| format!("You are in state `{s}`. "));
        match allowed {
            [only] => format!("{here}Set `state` to `{only}`, the only next state."),
            _ => {
                let list: Vec<String> = allowed.iter().map(|s| format!("`{s}`")).collect();
                format!(
                    "{here}Set `state` to the next state, one of: {}.",
                    list.join(", ")
                )
            }
        }
    }

    /// Applies a validated response to the context: checks its `state`, moves the context's
    /// [`RoutingState`] (storing one if there was none), logs the [`Route`]. Returns it (`None`
    /// when the response names no state and routing is inactive).
    ///
    /// # Errors
    ///
    /// The errors of [`FsmRouting::allowed`], [`RoutingError::MissingState`] and
    /// [`RoutingError::NotAllowed`].
    pub fn transition(
        &self,
        response: &Value,
        ctx: &mut Context,
    ) -> Result<Option<Route>, RoutingError> {
        let allowed = self.allowed(ctx)?;
        let Some(to) = response.get("state").and_then(Value::as_str) else {
            return match allowed {
                Some(_) => Err(RoutingError::MissingState),
                None => Ok(None),
            };
        };
        if let Some(allowed) = allowed
            && !allowed.iter().any(|s| s == to)
        {
            return Err(RoutingError::NotAllowed {
                from: ctx.get::<RoutingState>().and_then(|r| r.current.clone()),
                to: to.to_owned(),
                allowed,
            });
        }
        let next = self
            .table
            .as_ref()
            .and_then(|t| t.get(to))
            .cloned()
            .unwrap_or_default();
        let routing = ctx.get_or_default::<RoutingState>();
        let from = routing.current.replace(to.to_owned());
        routing.allowed = next;
        let transition = Route {
            from,
            to: to.to_owned(),
            turn: ctx.turn,
        };
        info!(from = transition.from.as_deref(), to, "transition");
        ctx.get_or_default::<Routes>().0.push(transition.clone());
        Ok(Some(transition))
    }
}

impl Interceptor for FsmRouting {
    fn name(&self) -> &str {
        NAME
    }

    fn pre_schema(&self, schema: &mut Schema, ctx: &Context) -> Result<(), BoxError> {
        if let Some(allowed) = self.allowed(ctx)? {
            schema.extend(EXTENSION_ID, Self::delta(&allowed));
        }
        Ok(())
    }

    fn pre_prompt(&self, prompts: &mut Prompts, ctx: &Context) -> Result<(), BoxError> {
        if let Some(allowed) = self.allowed(ctx)? {
            let current = ctx.get::<RoutingState>().and_then(|r| r.current.as_deref());
            prompts.system_push(&Self::prompt(current, &allowed));
        }
        Ok(())
    }

    fn post_response<'a>(
        &'a self,
        response: &'a Value,
        ctx: &'a mut Context,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            self.transition(response, ctx)?;
            Ok(())
        })
    }
}

fn from_name(from: &Option<String>) -> String {
    from.as_ref()
        .map_or_else(|| "the start".to_owned(), |s| format!("`{s}`"))
}

#[cfg(test)]
mod tests;
