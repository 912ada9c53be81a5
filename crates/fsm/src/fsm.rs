//! A checked definition with everything a run needs precomputed: each state's output schema, its
//! validator (with discriminator dispatch on `id`) and its prompt.

use std::collections::HashMap;
use std::sync::Arc;

use claij_validation::{Validator, Violation};
use serde_json::Value;

use crate::check::check;
use crate::definition::{Definition, Transition, TransitionId};
use crate::error::Error;
use crate::prompts::state_prompt;
use crate::schema::{IdStyle, state_schema};

/// A state machine ready to run. Cheap to share (`Arc<Fsm>`).
#[derive(Debug)]
pub struct Fsm {
    definition: Definition,
    style: IdStyle,
    states: HashMap<String, Outputs>,
}

/// A state's possible outputs.
#[derive(Debug)]
struct Outputs {
    schema: Value,
    validator: Arc<Validator>,
    prompt: String,
}

impl Fsm {
    /// Checks `definition` and compiles every state's output schema (`id` as `["from", "to"]`).
    ///
    /// # Errors
    ///
    /// [`Error::Definition`] listing every problem.
    pub fn new(definition: Definition) -> Result<Self, Error> {
        Self::with_id_style(definition, IdStyle::Array)
    }

    /// [`Fsm::new`] with events naming their transition in `style`.
    ///
    /// # Errors
    ///
    /// As [`Fsm::new`].
    pub fn with_id_style(definition: Definition, style: IdStyle) -> Result<Self, Error> {
        check(&definition)?;
        let mut states = HashMap::new();
        let mut names: Vec<String> = definition.states.iter().map(|s| s.id.clone()).collect();
        names.push(crate::definition::START.to_owned());
        for name in names {
            let Some(schema) = state_schema(&definition, &name, style) else {
                continue;
            };
            let validator = Validator::new(&schema).map_err(|e| {
                Error::Definition(crate::check::DefinitionError {
                    fsm: definition.id.clone(),
                    problems: vec![crate::check::Problem {
                        pointer: format!("/states/{name}"),
                        message: format!("the output schema does not compile: {e}"),
                    }],
                })
            })?;
            let state = definition.state(&name).unwrap_or_else(|| {
                crate::definition::State::new(name.clone(), crate::definition::Action::Llm)
            });
            let prompt = state_prompt(&definition, &state, style);
            states.insert(
                name,
                Outputs {
                    schema,
                    validator: Arc::new(validator),
                    prompt,
                },
            );
        }
        Ok(Self {
            definition,
            style,
            states,
        })
    }

    /// Parses and checks a definition.
    ///
    /// # Errors
    ///
    /// [`Error::Parse`] or [`Error::Definition`].
    pub fn from_json(text: &str) -> Result<Self, Error> {
        Self::new(Definition::from_json(text)?)
    }

    /// The definition.
    pub fn definition(&self) -> &Definition {
        &self.definition
    }

    /// The machine's id.
    pub fn id(&self) -> &str {
        &self.definition.id
    }

    /// How events name their transition.
    pub fn id_style(&self) -> IdStyle {
        self.style
    }

    /// The schema of what `state` may emit: the `oneOf` of its outgoing transitions.
    pub fn output_schema(&self, state: &str) -> Option<&Value> {
        self.states.get(state).map(|o| &o.schema)
    }

    /// The system prompt of `state`.
    pub fn prompt(&self, state: &str) -> Option<&str> {
        self.states.get(state).map(|o| o.prompt.as_str())
    }

    /// The transition `event` takes out of `state`, after validating it against the state's outputs.
    ///
    /// # Errors
    ///
    /// The violations: for an unknown `id`, one that lists the valid ids.
    pub fn route(&self, state: &str, event: &Value) -> Result<&Transition, Vec<Violation>> {
        let Some(outputs) = self.states.get(state) else {
            return Err(vec![violation(format!(
                "no transition leaves state `{state}`"
            ))]);
        };
        outputs.validator.validate(event)?;
        let id = event.get("id").and_then(TransitionId::from_value);
        id.as_ref()
            .and_then(|id| self.definition.transition(&id.from, &id.to))
            .filter(|t| t.id.from == state)
            .ok_or_else(|| {
                let valid: Vec<String> = self
                    .definition
                    .outgoing(state)
                    .map(|t| crate::schema::id_value(t, self.style).to_string())
                    .collect();
                vec![violation(format!(
                    "invalid transition id {}; valid ids are {}",
                    event
                        .get("id")
                        .map_or_else(|| "(none)".to_owned(), Value::to_string),
                    valid.join(", ")
                ))]
            })
    }

    /// The validator of `state`'s outputs.
    pub fn validator(&self, state: &str) -> Option<&Arc<Validator>> {
        self.states.get(state).map(|o| &o.validator)
    }
}

fn violation(message: String) -> Violation {
    Violation {
        instance_pointer: "/id".to_owned(),
        schema_pointer: String::new(),
        keyword: "const".to_owned(),
        message,
    }
}
