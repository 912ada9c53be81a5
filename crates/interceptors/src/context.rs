//! [`Context`]: what a conversation carries from turn to turn.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::history::History;

/// The state of a conversation: the well-known parts interceptors share, plus a typed extension map for
/// anything else (the FSM routing state is one: `builtin::fsm_routing::RoutingState`).
///
/// ```
/// use claij_interceptors::Context;
///
/// #[derive(Debug, PartialEq)]
/// struct Budget(u32);
///
/// let mut ctx = Context::default();
/// ctx.insert(Budget(3));
/// assert_eq!(ctx.get::<Budget>(), Some(&Budget(3)));
/// ctx.get_mut::<Budget>().unwrap().0 -= 1;
/// assert_eq!(ctx.remove::<Budget>(), Some(Budget(2)));
/// ```
#[derive(Default)]
pub struct Context {
    /// What the memory interceptor remembers.
    pub memory: MemoryState,
    /// Results of tool calls from the previous turn, for the next prompt; each interceptor that runs
    /// tools replaces the results of its own [`ToolOrigin`] and leaves the others.
    pub tool_results: Vec<ToolResult>,
    /// Completed turns (a turn is one successful `ask`).
    pub turn: u64,
    /// The conversation's messages, which the pipeline sends before each new user turn (windowed by
    /// [`Config::history`](crate::Config::history)) and appends each turn to.
    pub history: History,
    extensions: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

/// What is remembered across turns.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MemoryState {
    /// Summaries, oldest first (each strategy decides how many are kept).
    pub summaries: Vec<String>,
    /// Longer-lived insights (the hierarchical strategy refreshes them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insights: Option<String>,
}

impl MemoryState {
    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.summaries.is_empty() && self.insights.is_none()
    }
}

/// The outcome of one tool call, kept for the next turn's prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The tool, as the model named it.
    pub name: String,
    /// The arguments the model gave.
    pub args: Value,
    /// The tool's output, or why it failed (a bad argument, a timeout, an error).
    pub output: Result<Value, String>,
    /// What ran the tool: each interceptor shows and replaces only the results of its own origin.
    pub origin: ToolOrigin,
}

/// What ran a tool call, so interceptors sharing [`Context::tool_results`] tell their results apart
/// whatever the tools are called.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolOrigin {
    /// A Rust function registered with the `tools` interceptor.
    Rust,
    /// A tool of an MCP server, called by the `mcp` interceptor.
    Mcp {
        /// The server's name in the configuration.
        server: String,
    },
    /// A tool run by another interceptor, named by it.
    Other {
        /// The interceptor's name ([`crate::Interceptor::name`]).
        interceptor: String,
    },
}

/// What one interceptor keeps in the [`Context`] for the next turn, as a conversation is saved
/// ([`Interceptor::carry`](crate::Interceptor::carry)): the `state` in the interceptor's own format,
/// and that format's `version`, so a later claij reads (or migrates) an older state and an older one
/// refuses a newer state rather than lose it.
///
/// ```
/// use claij_interceptors::{Carried, MemoryState};
///
/// let memory = MemoryState { summaries: vec!["likes tea".into()], insights: None };
/// let carried = Carried::new(1, &memory)?;
/// assert_eq!(carried.read::<MemoryState>(1)?, memory);
/// // A state from a newer format than this reader knows is refused, never misread.
/// let newer = Carried { version: 2, state: carried.state.clone() };
/// assert_eq!(newer.read::<MemoryState>(1).unwrap_err().to_string(),
///     "saved in version 2 of its format, newer than this claij reads (up to 1)");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Carried {
    /// The version of the interceptor's format the state is in (from 1).
    pub version: u32,
    /// The state.
    pub state: Value,
}

/// Why a [`Carried`] state cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CarryError {
    /// Saved by a newer claij, in a format version this one does not know.
    #[error("saved in version {found} of its format, newer than this claij reads (up to {newest})")]
    Newer {
        /// The state's version.
        found: u32,
        /// The newest version this reader knows.
        newest: u32,
    },
    /// The state does not have the shape its version says.
    #[error("not a version {version} state")]
    Malformed {
        /// The state's version.
        version: u32,
        /// What serde said.
        source: serde_json::Error,
    },
}

impl Carried {
    /// `state` in version `version` of its format.
    ///
    /// # Errors
    ///
    /// When `state` does not serialize to JSON (a map with non-string keys).
    pub fn new(version: u32, state: &impl Serialize) -> Result<Self, serde_json::Error> {
        Ok(Self {
            version,
            state: serde_json::to_value(state)?,
        })
    }

    /// The state as a `T`, for a reader that knows versions up to `newest` of the format (a reader
    /// that migrates older versions matches on [`Carried::version`] first).
    ///
    /// # Errors
    ///
    /// [`CarryError::Newer`] for a version above `newest`, [`CarryError::Malformed`] when the state
    /// does not deserialize.
    pub fn read<T: DeserializeOwned>(&self, newest: u32) -> Result<T, CarryError> {
        if self.version > newest {
            return Err(CarryError::Newer {
                found: self.version,
                newest,
            });
        }
        T::deserialize(&self.state).map_err(|source| CarryError::Malformed {
            version: self.version,
            source,
        })
    }
}

impl Context {
    /// Stores a value of type `T`, replacing any previous one.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) -> Option<T> {
        self.extensions
            .insert(TypeId::of::<T>(), Box::new(value))
            .and_then(|old| old.downcast::<T>().ok().map(|b| *b))
    }

    /// The stored value of type `T`.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.extensions
            .get(&TypeId::of::<T>())
            .and_then(|b| b.downcast_ref::<T>())
    }

    /// The stored value of type `T`, mutably.
    pub fn get_mut<T: Any + Send + Sync>(&mut self) -> Option<&mut T> {
        self.extensions
            .get_mut(&TypeId::of::<T>())
            .and_then(|b| b.downcast_mut::<T>())
    }

    /// The stored value of type `T`, or a default one stored now.
    pub fn get_or_default<T: Any + Send + Sync + Default>(&mut self) -> &mut T {
        let entry = self
            .extensions
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(T::default()));
        // The entry was stored under T's own TypeId, so the downcast cannot fail; a fresh default is a
        // harmless answer if it ever did.
        if !entry.is::<T>() {
            *entry = Box::new(T::default());
        }
        #[allow(clippy::unwrap_used, reason = "checked just above")]
        entry.downcast_mut::<T>().unwrap()
    }

    /// Removes and returns the stored value of type `T`.
    pub fn remove<T: Any + Send + Sync>(&mut self) -> Option<T> {
        self.extensions
            .remove(&TypeId::of::<T>())
            .and_then(|b| b.downcast::<T>().ok().map(|b| *b))
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("memory", &self.memory)
            .field("tool_results", &self.tool_results)
            .field("turn", &self.turn)
            .field("history", &self.history.len())
            .field("extensions", &self.extensions.len())
            .finish()
    }
}
