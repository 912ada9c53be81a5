//! FSM definitions as data: the serde types of a definition file.
//!
//! ```json
//! {
//!   "id": "review",
//!   "description": "A chairman asks reviewers for opinions, then decides.",
//!   "prompts": ["You coordinate a code review."],
//!   "schemas": {"opinion": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
//!   "states": [
//!     {"id": "chairman", "action": "llm", "prompts": ["Decide who reviews next, or finish."]},
//!     {"id": "reviewer", "action": "llm"},
//!     {"id": "end", "action": "end"}
//!   ],
//!   "transitions": [
//!     {"id": ["start", "chairman"], "schema": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}},
//!     {"id": ["chairman", "reviewer"], "schema": {"$ref": "#/$defs/opinion"}, "description": "ask a reviewer"},
//!     {"id": ["reviewer", "chairman"], "schema": {"$ref": "#/$defs/opinion"}},
//!     {"id": ["chairman", "end"], "schema": {"$ref": "#/$defs/opinion"}, "description": "the verdict"}
//!   ]
//! }
//! ```
//!
//! `start` is the entry: the first event is validated against the transitions out of it. `start`,
//! `end` and `interrupted` exist without being declared (`end` and `interrupted` as terminal states).
//! `xitions` is accepted for `transitions`, the name the original system used. A key none of these
//! types has is kept (`unknown`) and refused by [`check`](crate::check), which names the key it was
//! probably meant to be; annotations (`$comment`, `x-owner`, any key starting with `$` or `x-`) are
//! allowed and written back.

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The implicit entry state.
pub const START: &str = "start";
/// The implicit terminal state.
pub const END: &str = "end";
/// The terminal state an interrupted run goes to.
pub const INTERRUPTED: &str = "interrupted";

/// A state machine, as written in a definition file.
///
/// `states` and `transitions` are required, except that one missing beside a key that is its
/// misspelling (`transitons`) reads as empty, so that [`check`](crate::check) names that key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawDefinition")]
#[non_exhaustive]
pub struct Definition {
    /// A name for the machine.
    pub id: String,
    /// What it is for (shown to models).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Prompts every `llm` state sees.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<String>,
    /// Shared schemas, referred to as `#/$defs/<name>` from transitions.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub schemas: Map<String, Value>,
    /// The states.
    pub states: Vec<State>,
    /// The transitions (`xitions` in the original system's files).
    pub transitions: Vec<Transition>,
    /// Keys this version does not know, kept as written: [`check`](crate::check) refuses each one
    /// (a misspelt `prompt` would otherwise vanish), except annotations: keys starting with `$` or
    /// `x-`.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    pub unknown: Map<String, Value>,
}

/// A definition as read, before its required lists are checked for.
#[derive(Deserialize)]
struct RawDefinition {
    id: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    prompts: Vec<String>,
    #[serde(default)]
    schemas: Map<String, Value>,
    states: Option<Vec<State>>,
    #[serde(alias = "xitions")]
    transitions: Option<Vec<Transition>>,
    #[serde(flatten)]
    unknown: Map<String, Value>,
}

impl TryFrom<RawDefinition> for Definition {
    type Error = String;

    fn try_from(raw: RawDefinition) -> Result<Self, String> {
        let misspelt = |field: &str| {
            raw.unknown
                .keys()
                .any(|key| crate::check::misspelling_of(key) == Some(field))
        };
        let states = match raw.states {
            Some(states) => states,
            None if misspelt("states") => Vec::new(),
            None => return Err("missing field `states`".into()),
        };
        let transitions = match raw.transitions {
            Some(transitions) => transitions,
            None if misspelt("transitions") => Vec::new(),
            None => return Err("missing field `transitions`".into()),
        };
        Ok(Definition {
            id: raw.id,
            description: raw.description,
            prompts: raw.prompts,
            schemas: raw.schemas,
            states,
            transitions,
            unknown: raw.unknown,
        })
    }
}

/// One state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct State {
    /// Its name, unique in the machine.
    pub id: String,
    /// What happens in it.
    #[serde(default)]
    pub action: Action,
    /// What it is for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Prompts the model sees in this state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<String>,
    /// Action settings: `{"service": NAME}` for `service`, `{"fsm": ID, "trail": "omit"|"summary"|"full"}`
    /// for `fsm`, `{"model": NAME, "history": "full"|"none", "input": "entered"|"start"}` for `llm`
    /// (`history: none`: no trail before the input; `input: start`: the input is the run's first event
    /// rather than the one that entered the state), anything a custom action reads.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub config: Value,
    /// Keys this version does not know, kept as written: [`check`](crate::check) refuses each one
    /// (a misspelt `prompt` would otherwise vanish), except annotations: keys starting with `$` or
    /// `x-`.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    pub unknown: Map<String, Value>,
}

/// What a state does.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Action {
    /// Ask a model: its output must be one of the state's outgoing transitions.
    #[default]
    Llm,
    /// Run a registered Rust service.
    Service,
    /// Run a sub-FSM.
    Fsm,
    /// Wait for a person's input.
    Human,
    /// Stop: a terminal state.
    End,
    /// An action registered under this name.
    Custom(String),
}

/// One transition: an edge, and the schema of the event that takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Transition {
    /// `[from, to]`.
    pub id: TransitionId,
    /// The event's schema (the `id` property is added).
    #[serde(default = "any_object")]
    pub schema: Value,
    /// Prompts shown when this transition is an option.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<String>,
    /// Not recorded in the trail (nor replayed to models).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub omit: bool,
    /// When to take it (shown to models).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Keys this version does not know, kept as written: [`check`](crate::check) refuses each one
    /// (a misspelt `prompt` would otherwise vanish), except annotations: keys starting with `$` or
    /// `x-`.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    pub unknown: Map<String, Value>,
}

/// A transition's id: the states it connects. Written `["from", "to"]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransitionId {
    /// The state it leaves.
    pub from: String,
    /// The state it enters.
    pub to: String,
}

fn any_object() -> Value {
    Value::Object(Map::from_iter([(
        "type".to_owned(),
        Value::String("object".to_owned()),
    )]))
}

impl Definition {
    /// Parses a definition from JSON text.
    ///
    /// # Errors
    ///
    /// serde_json's error, with line and column, when the text is not a definition.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The state named `id`, declared or implicit (`start`, `end`, `interrupted`).
    pub fn state(&self, id: &str) -> Option<State> {
        if let Some(state) = self.states.iter().find(|s| s.id == id) {
            return Some(state.clone());
        }
        let implicit = |action| State {
            id: id.to_owned(),
            action,
            description: String::new(),
            prompts: Vec::new(),
            config: Value::Null,
            unknown: Map::new(),
        };
        match id {
            START => Some(implicit(Action::Custom(START.to_owned()))),
            END | INTERRUPTED => Some(implicit(Action::End)),
            _ => None,
        }
    }

    /// Transitions leaving `state`, in definition order.
    pub fn outgoing<'a>(&'a self, state: &'a str) -> impl Iterator<Item = &'a Transition> + 'a {
        self.transitions.iter().filter(move |t| t.id.from == state)
    }

    /// The transition `[from, to]`.
    pub fn transition(&self, from: &str, to: &str) -> Option<&Transition> {
        self.transitions
            .iter()
            .find(|t| t.id.from == from && t.id.to == to)
    }
}

impl State {
    /// A state with an action and nothing else.
    pub fn new(id: impl Into<String>, action: Action) -> Self {
        Self {
            id: id.into(),
            action,
            description: String::new(),
            prompts: Vec::new(),
            config: Value::Null,
            unknown: Map::new(),
        }
    }

    /// Whether the run stops here.
    pub fn is_terminal(&self) -> bool {
        self.action == Action::End
    }

    /// A string setting from `config`.
    pub fn config_str(&self, key: &str) -> Option<&str> {
        self.config.get(key).and_then(Value::as_str)
    }
}

impl Transition {
    /// A transition with a schema and nothing else.
    pub fn new(from: impl Into<String>, to: impl Into<String>, schema: Value) -> Self {
        Self {
            id: TransitionId::new(from, to),
            schema,
            prompts: Vec::new(),
            omit: false,
            description: String::new(),
            unknown: Map::new(),
        }
    }
}

impl TransitionId {
    /// `[from, to]`.
    pub fn new(from: impl Into<String>, to: impl Into<String>) -> Self {
        Self {
            from: from.into(),
            to: to.into(),
        }
    }

    /// The id as JSON: `["from", "to"]`.
    pub fn to_value(&self) -> Value {
        Value::Array(vec![
            Value::String(self.from.clone()),
            Value::String(self.to.clone()),
        ])
    }

    /// The string form `from->to`, for decoders that cannot take array constants.
    pub fn to_arrow(&self) -> String {
        format!("{}->{}", self.from, self.to)
    }

    /// Reads an event's `id`: `["from", "to"]` or `"from->to"`.
    pub fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Array(parts) => match parts.as_slice() {
                [Value::String(from), Value::String(to)] => Some(Self::new(from, to)),
                _ => None,
            },
            Value::String(s) => s.split_once("->").map(|(f, t)| Self::new(f, t)),
            _ => None,
        }
    }
}

impl fmt::Display for TransitionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{:?}, {:?}]", self.from, self.to)
    }
}

impl Serialize for TransitionId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(2))?;
        seq.serialize_element(&self.from)?;
        seq.serialize_element(&self.to)?;
        seq.end()
    }
}

impl<'de> Deserialize<'de> for TransitionId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Pair;
        impl<'de> Visitor<'de> for Pair {
            type Value = TransitionId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a transition id: [\"from\", \"to\"] or \"from->to\"")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TransitionId, A::Error> {
                let from: String = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let to: String = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(3, &self));
                }
                Ok(TransitionId::new(from, to))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<TransitionId, E> {
                s.split_once("->")
                    .map(|(f, t)| TransitionId::new(f, t))
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Str(s), &self))
            }
        }
        deserializer.deserialize_any(Pair)
    }
}

impl Action {
    /// The built-in actions, as written in definition files.
    pub const BUILT_IN: [&'static str; 5] = ["llm", "service", "fsm", "human", "end"];

    /// For a custom action whose name looks like a misspelt built-in one (`lm`, `Human`), that
    /// built-in action's name: a program that runs no custom actions can say "did you mean".
    pub fn misspelt_built_in(&self) -> Option<&'static str> {
        match self {
            Action::Custom(name) => crate::check::closest(name, &Self::BUILT_IN),
            _ => None,
        }
    }

    /// The name written in definition files.
    pub fn as_str(&self) -> &str {
        match self {
            Action::Llm => "llm",
            Action::Service => "service",
            Action::Fsm => "fsm",
            Action::Human => "human",
            Action::End => "end",
            Action::Custom(name) => name,
        }
    }
}

impl Serialize for Action {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Ok(match name.as_str() {
            "llm" => Action::Llm,
            "service" => Action::Service,
            "fsm" => Action::Fsm,
            "human" => Action::Human,
            "end" => Action::End,
            _ => Action::Custom(name),
        })
    }
}
