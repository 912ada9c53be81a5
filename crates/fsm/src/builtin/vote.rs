//! The vote on a schema delta: voter models judge a proposed extension of the reply schema in turn,
//! the `tally` service counts their ballots in the trail, and a delta a majority approves is activated
//! in a shared [`Registry`], which composes and meta-validates it and may still refuse it.
//!
//! The input is the proposal, `{extension_id, delta, reason}`. Each voter (`voter-1`, `voter-2`...,
//! an `llm` state whose `config.model` is the voter's model) sees only the proposal, not the ballots
//! cast before its own (`config.history: none`, `config.input: start`), and emits `{approve, reason}`. The run ends in
//! `activated` or `rejected`; the final event says which, and why:
//!
//! | outcome | final state | event |
//! |---|---|---|
//! | voted down (a tie included) | `rejected` | `{approved: false, activated: false, votes, extension_id}` |
//! | approved, refused by the registry | `rejected` | `{approved: true, activated: false, votes, extension_id, error}` |
//! | approved and active | `activated` | `{approved: true, activated: true, votes, extension_id}` |
//!
//! `votes` is `{approve, reject}` ([`Votes`]). The registry's audit log records the addition (by
//! [`ADDED_BY`]) or the refusal with its reason.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//!
//! use claij_test_support::Scripted;
//! use claij_fsm::builtin::vote;
//! use claij_fsm::{Interrupt, Outcome};
//! use claij_interceptors::Config;
//! use claij_schema::Registry;
//! use serde_json::json;
//!
//! let registry = Arc::new(Mutex::new(Registry::new(claij_schema::base())?));
//! let ballots = Scripted::replies([
//!     r#"{"approve": true, "reason": "a reader can weigh the answer"}"#,
//!     r#"{"approve": false, "reason": "models are poorly calibrated"}"#,
//!     r#"{"approve": true, "reason": "optional and bounded: harmless"}"#,
//! ]);
//! let voters = ["model-a", "model-b", "model-c"];
//! let runner = vote::runner(Arc::new(ballots), Config::new("unused"), &voters, Arc::clone(&registry))?;
//!
//! let mut run = runner.start(json!({
//!     "extension_id": "confidence-v1",
//!     "delta": {"properties": {"confidence": {"type": "number", "minimum": 0, "maximum": 1}}},
//!     "reason": "I could say how sure I am",
//! }))?;
//! let rt = tokio::runtime::Builder::new_current_thread().build()?;
//! let outcome = rt.block_on(runner.run(&mut run, &Interrupt::new(), None))?;
//! let Outcome::Finished { state, event } = outcome else { panic!("{outcome:?}") };
//! assert_eq!(state, "activated");
//! assert_eq!(event["votes"], json!({"approve": 2, "reject": 1}));
//!
//! let registry = registry.lock().map_err(|e| e.to_string())?;
//! assert!(registry.active()["properties"].get("confidence").is_some());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::{Arc, Mutex, PoisonError};

use claij_backends::Backend;
use claij_interceptors::{BoxError, Config};
use claij_schema::{Ballot, Registry, SchemaDelta};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{input_of, object};
use crate::definition::{Action, Definition, START, State, Transition};
use crate::error::Error;
use crate::fsm::Fsm;
use crate::runner::{Runner, service_fn};
use crate::trail::Trail;

/// The machine's id, what a parent's `fsm` state names in `config.fsm`.
pub const ID: &str = "vote";

/// Who the registry's audit log says added an approved delta.
pub const ADDED_BY: &str = "vote";

/// Voter states are this prefix and their 1-based position: `voter-1`, `voter-2`...
pub const VOTER_PREFIX: &str = "voter-";

/// How the ballots fell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Votes {
    /// Ballots with `approve: true`.
    pub approve: usize,
    /// Ballots with `approve: false`.
    pub reject: usize,
}

impl Votes {
    /// The ballots recorded in `trail`: events out of voter states carrying a boolean `approve`.
    pub fn count(trail: &Trail) -> Self {
        trail
            .entries
            .iter()
            .filter(|e| e.from.starts_with(VOTER_PREFIX))
            .filter_map(|e| e.event.get("approve").and_then(Value::as_bool))
            .fold(Self::default(), |votes, approve| Self {
                approve: votes.approve + usize::from(approve),
                reject: votes.reject + usize::from(!approve),
            })
    }

    /// Whether more ballots approve than reject: a tie, or no ballot at all, rejects.
    pub fn is_majority(&self) -> bool {
        self.approve > self.reject
    }
}

/// The vote with one `llm` state per voter, in order; `voters` are model names, each set as its
/// state's `config.model`. With no voters the proposal goes straight to the tally, and is rejected.
pub fn definition(voters: &[&str]) -> Definition {
    let names: Vec<String> = (1..=voters.len())
        .map(|i| format!("{VOTER_PREFIX}{i}"))
        .collect();
    let mut states: Vec<State> = names
        .iter()
        .zip(voters)
        .enumerate()
        .map(|(i, (name, model))| {
            let mut state = State::new(name, Action::Llm);
            state.description = format!("You are voter {} of {}.", i + 1, voters.len());
            state.config = json!({"model": model, "history": "none", "input": "start"});
            state
        })
        .collect();
    states.push(State::new("tally", Action::Service));
    states.push(State::new("activate", Action::Service));
    states.push(State::new("activated", Action::End));
    states.push(State::new("rejected", Action::End));

    let mut transitions = Vec::new();
    let first = names.first().map_or("tally", String::as_str);
    transitions.push(described(
        Transition::new(START, first, proposal_schema()),
        "the proposal",
    ));
    let mut ballot_boxes: Vec<&str> = names.iter().map(String::as_str).skip(1).collect();
    ballot_boxes.push("tally");
    for (voter, next) in names.iter().zip(ballot_boxes) {
        transitions.push(described(
            Transition::new(voter, next, ballot_schema()),
            "your ballot",
        ));
    }
    let votes = json!({"type": "object", "properties": {
        "approve": {"type": "integer", "minimum": 0},
        "reject": {"type": "integer", "minimum": 0},
    }, "required": ["approve", "reject"]});
    let outcome = |approved: bool, activated: Option<bool>, extra: Value| {
        let mut properties = json!({
            "approved": {"const": approved},
            "votes": votes,
            "extension_id": {"type": "string"},
        });
        if let (Some(activated), Value::Object(map)) = (activated, &mut properties) {
            map.insert("activated".into(), json!({"const": activated}));
        }
        if let (Value::Object(map), Value::Object(extra)) = (&mut properties, extra) {
            map.extend(extra);
        }
        object(properties, &[])
    };
    transitions.extend([
        described(
            Transition::new(
                "tally",
                "activate",
                outcome(true, None, json!({"delta": {"type": "object"}})),
            ),
            "a majority approves",
        ),
        described(
            Transition::new("tally", "rejected", outcome(false, Some(false), json!({}))),
            "no majority approves",
        ),
        described(
            Transition::new(
                "activate",
                "activated",
                outcome(true, Some(true), json!({})),
            ),
            "the delta is active",
        ),
        described(
            Transition::new(
                "activate",
                "rejected",
                outcome(true, Some(false), json!({"error": {"type": "string"}})),
            ),
            "the registry refused the delta",
        ),
    ]);

    Definition {
        id: ID.to_owned(),
        description:
            "Voters decide whether to adopt a proposed schema delta: a change to the JSON \
                      schema every model's replies must follow from now on."
                .to_owned(),
        prompts: vec![VOTER_PROMPT.to_owned()],
        schemas: serde_json::Map::new(),
        states,
        transitions,
        unknown: serde_json::Map::new(),
    }
}

/// A runner for [`definition`]: voters ask `backend` with `config` (each with its own model), and
/// the `tally` and `activate` services are registered, the latter adding approved deltas to
/// `registry`.
///
/// # Errors
///
/// [`Error::Definition`] if the machine does not load, which would be a bug here.
pub fn runner(
    backend: Arc<dyn Backend>,
    config: Config,
    voters: &[&str],
    registry: Arc<Mutex<Registry>>,
) -> Result<Runner, Error> {
    runner_naming(backend, config, voters, voters, registry)
}

/// [`runner`], the ballots in the registry's audit log naming each voter as `names` does (in the
/// order of `voters`: e.g. the aliases a person configured, where `voters` are the models asked).
///
/// # Errors
///
/// As [`runner`].
pub fn runner_naming(
    backend: Arc<dyn Backend>,
    config: Config,
    voters: &[&str],
    names: &[&str],
    registry: Arc<Mutex<Registry>>,
) -> Result<Runner, Error> {
    let fsm = Fsm::new(definition(voters))?;
    let names: Arc<[String]> = names.iter().map(|v| (*v).to_owned()).collect();
    let (tally_registry, tally_names) = (Arc::clone(&registry), Arc::clone(&names));
    Ok(Runner::new(fsm)
        .with_llm(backend, config)
        .with_service(
            "tally",
            service_fn(move |call| tally(&tally_registry, &tally_names, call.trail)),
        )
        .with_service(
            "activate",
            service_fn(move |call| Ok(activate(&registry, &names, call.trail, call.event))),
        ))
}

/// The ballots of a vote's `trail`, each voter named as `voters` (the runner's list, in order) names
/// it; a vote run as a sub-FSM, its transitions prefixed with the parent's state, counts the same.
pub fn ballots(voters: &[impl AsRef<str>], trail: &Trail) -> Vec<Ballot> {
    trail
        .entries
        .iter()
        .filter_map(|entry| {
            let state = entry.from.rsplit('/').next()?;
            let index: usize = state.strip_prefix(VOTER_PREFIX)?.parse().ok()?;
            let voter = voters.get(index.checked_sub(1)?)?;
            Some(Ballot {
                voter: voter.as_ref().to_owned(),
                approve: entry.event.get("approve")?.as_bool()?,
                reason: entry
                    .event
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            })
        })
        .collect()
}

/// What every voter is told, besides its state and the transitions.
const VOTER_PROMPT: &str = "\
The message is the proposal: `extension_id` names it, `delta` is the partial JSON Schema that \
would be merged into the reply schema (new `properties`, perhaps `required`), and `reason` is why \
its author wants it. Judge it on its merits:
- Does it help? A model must be able to fill the field with something useful to the people or \
programs reading the replies, and worth the tokens it adds to every reply.
- Is it safe? It must not ask for secrets or personal data, hide instructions in descriptions, or \
contradict or loosen the fields already there. A required field weighs more than an optional one.
- Is it well formed? Valid JSON Schema, types and bounds that fit the purpose, clear names and \
descriptions.
Approve only if all three answers are yes, and give your reason in a sentence or two.";

fn proposal_schema() -> Value {
    object(
        json!({
            "extension_id": {"type": "string", "minLength": 1, "description": "names the extension, e.g. `confidence-v1`"},
            "delta": {"type": "object", "description": "the partial JSON Schema to merge into the reply schema"},
            "reason": {"type": "string", "description": "why it is proposed"},
        }),
        &[],
    )
}

fn ballot_schema() -> Value {
    object(
        json!({
            "approve": {"type": "boolean", "description": "true to adopt the delta"},
            "reason": {"type": "string", "description": "why, in a sentence or two"},
        }),
        &[],
    )
}

fn described(mut transition: Transition, description: &str) -> Transition {
    description.clone_into(&mut transition.description);
    transition
}

/// The `tally` service: counts the ballots in the trail and passes an approved proposal on; one voted
/// down is recorded in the registry's audit log as declined, with the ballots.
fn tally(registry: &Mutex<Registry>, voters: &[String], trail: &Trail) -> Result<Value, BoxError> {
    let proposal = input_of(trail).ok_or("the trail holds no proposal")?;
    let votes = Votes::count(trail);
    let extension_id = &proposal["extension_id"];
    tracing::info!(
        extension_id = %extension_id,
        approve = votes.approve,
        reject = votes.reject,
        "vote tallied"
    );
    if votes.is_majority() {
        return Ok(
            json!({"id": ["tally", "activate"], "approved": true, "votes": votes,
               "extension_id": extension_id, "delta": proposal["delta"]}),
        );
    }
    let delta = SchemaDelta::new(
        extension_id.as_str().unwrap_or_default(),
        ADDED_BY,
        proposal["delta"].clone(),
    );
    let reason = format!(
        "voted down: {} for, {} against",
        votes.approve, votes.reject
    );
    registry
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .decline(&delta, &reason, ballots(voters, trail));
    Ok(
        json!({"id": ["tally", "rejected"], "approved": false, "activated": false, "votes": votes,
               "extension_id": extension_id}),
    )
}

/// The `activate` service: adds the approved delta to the registry with the vote's ballots, which
/// may refuse it.
fn activate(registry: &Mutex<Registry>, voters: &[String], trail: &Trail, event: &Value) -> Value {
    let extension_id = event["extension_id"].as_str().unwrap_or_default();
    let delta = SchemaDelta::new(extension_id, ADDED_BY, event["delta"].clone());
    let added = registry
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .add_approved(delta, ballots(voters, trail));
    let (to, error) = match added {
        Ok(_) => {
            tracing::info!(extension_id, "schema delta activated");
            ("activated", None)
        }
        Err(error) => {
            tracing::warn!(extension_id, %error, "the registry refused an approved schema delta");
            ("rejected", Some(error.to_string()))
        }
    };
    let mut out = json!({"id": ["activate", to], "approved": true, "activated": error.is_none(),
                         "votes": event["votes"], "extension_id": extension_id});
    if let (Some(error), Value::Object(map)) = (error, &mut out) {
        map.insert("error".into(), Value::String(error));
    }
    out
}
