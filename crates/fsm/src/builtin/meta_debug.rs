//! Meta-debugging: when one model keeps failing validation, another model works out why and suggests
//! a fix, a prompt fix is applied, and the failing model is tried again with it.
//!
//! The input is a [`Symptom`]: `{model, system, request, response, violations, attempts}`. The states:
//!
//! - `detect` (service): a repeated failure has at least `config.min_failures` failed attempts (2
//!   unless set) and violations to show; anything else ends in `undiagnosed`.
//! - `select` (service): the first diagnostic model that is not the failing one, as the `analyze-N`
//!   state whose `config.model` it is (`config.model` is fixed per state, so each diagnostic model
//!   has its own `analyze-N` and `suggest-N`); none left ends in `undiagnosed`.
//! - `analyze-N` (llm): why the model fails, `{analysis}`.
//! - `suggest-N` (llm): one fix, `{fix_kind: "prompt"|"schema"|"model", suggestion}`.
//! - `apply` (service): a prompt fix appends the suggestion to the failing model's system prompt and
//!   goes on to `verify` with the [`Remedy`]; a schema or model fix is recorded and ends in `unfixed`
//!   with `applied: false`, for a person or the caller to act on (unless the state's
//!   `config.verify_schema` is `true`, as the runner sets it with a remedy approver: then a schema
//!   fix with a `delta` goes on to `verify` too).
//! - `verify` (service): the caller's closure asks the failing model again with the fix and says
//!   whether its reply is now valid: `fixed` or `unfixed`. (Under [`Runner::with_meta_debug`] with
//!   a remedy approver, a schema fix with a `delta` comes here too: put to the approver, then
//!   tried; declined, it ends in `unfixed` with `applied: false`.)
//!
//! Every final event carries `diagnosed` and `fixed`; after `apply` also `applied`, `fix_kind` and
//! `suggestion`, and `system` (the amended prompt) when the fix was applied. The transitions into
//! `select` and the `analyze-N` states only pass the failure on, so they are `omit`, and the
//! `analyze-N` states read no history (`config.history: "none"`): the diagnostic model sees the
//! failure once.
//!
//! Run by hand as below, or automatically with [`Runner::with_meta_debug`] and [`Diagnostics`]: a
//! watched `llm` state that runs out of retries is diagnosed, its verification is the state asked
//! again with the remedy, and a prompt remedy stays applied to the state for the rest of the run. A
//! schema remedy's delta goes to the runner's [`crate::RemedyApprover`], if it has one, and once
//! approved the state is asked again with its extended schema; each remedy records its [`Effect`].
//!
//! ```
//! use std::sync::Arc;
//!
//! use claij_test_support::Scripted;
//! use claij_fsm::builtin::meta_debug::{self, Remedy};
//! use claij_fsm::{Interrupt, Outcome};
//! use claij_interceptors::Config;
//! use serde_json::json;
//!
//! let diagnostician = Scripted::replies([
//!     r#"{"analysis": "it wraps the JSON in a markdown fence and calls the field `reply`"}"#,
//!     r#"{"fix_kind": "prompt", "suggestion": "Reply with the bare JSON object; its field is `answer`."}"#,
//! ]);
//! // The caller's check: ask the failing model again with `fix.system` (here, a stand-in).
//! let verify = |fix: Remedy| async move { Ok(fix.system.contains("bare JSON")) };
//! let runner = meta_debug::runner(Arc::new(diagnostician), Config::new("unused"), &["big-model"], verify)?;
//!
//! let mut run = runner.start(json!({
//!     "model": "small-model",
//!     "system": "Answer the question.",
//!     "request": "What is 2 + 2?",
//!     "response": "```json\n{\"reply\": \"4\"}\n```",
//!     "violations": [{"instance_pointer": "", "schema_pointer": "/required", "keyword": "required",
//!                     "message": "missing property `answer`"}],
//!     "attempts": 3,
//! }))?;
//! let rt = tokio::runtime::Builder::new_current_thread().build()?;
//! let outcome = rt.block_on(runner.run(&mut run, &Interrupt::new(), None))?;
//! let Outcome::Finished { state, event } = outcome else { panic!("{outcome:?}") };
//! assert_eq!(state, "fixed");
//! assert_eq!(event["fixed"], json!(true));
//! assert!(event["system"].as_str().unwrap_or_default().ends_with("its field is `answer`."));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::future::Future;
use std::sync::Arc;

use claij_backends::{Backend, BoxFuture};
use claij_interceptors::{BoxError, Config, Exhausted};
use claij_validation::Violation;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{input_of, object};
use crate::definition::{Action, Definition, START, State, Transition};
use crate::error::Error;
use crate::fsm::Fsm;
use crate::runner::{Runner, Service, ServiceCall, service_fn};

/// The machine's id, what a parent's `fsm` state names in `config.fsm`.
pub const ID: &str = "meta-debug";

/// Failed attempts that make a failure repeated, unless `detect`'s `config.min_failures` says
/// otherwise.
pub const MIN_FAILURES: u64 = 2;

/// Meta-debugging that acts, for [`Runner::with_meta_debug`]: when an `llm` state runs out of
/// retries, this machine runs on its failure with these diagnostic models; a prompt remedy is
/// verified by asking the failing state again with it, and kept for the rest of the run.
///
/// It watches the states whose `config.meta_debug` is `true`, or every `llm` state after
/// [`Diagnostics::for_every_state`].
#[derive(Clone)]
pub struct Diagnostics {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) config: Config,
    pub(crate) models: Vec<String>,
    every_state: bool,
}

impl Diagnostics {
    /// The diagnostic `models`, in order of preference, asked through `backend` with `config` (its
    /// model replaced by each). The failing model is never picked to diagnose itself.
    pub fn new(
        backend: Arc<dyn Backend>,
        config: Config,
        models: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            backend,
            config,
            models: models.into_iter().map(Into::into).collect(),
            every_state: false,
        }
    }

    /// Watch every `llm` state, not only those whose `config.meta_debug` is `true`.
    #[must_use]
    pub fn for_every_state(mut self) -> Self {
        self.every_state = true;
        self
    }

    /// Whether `state`'s failures are diagnosed.
    pub fn watches(&self, state: &State) -> bool {
        state.action == Action::Llm
            && (self.every_state || state.config.get("meta_debug") == Some(&Value::Bool(true)))
    }

    /// The diagnostic models.
    pub fn models(&self) -> &[String] {
        &self.models
    }
}

impl std::fmt::Debug for Diagnostics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Diagnostics")
            .field("provider", &self.backend.provider())
            .field("models", &self.models)
            .field("every_state", &self.every_state)
            .finish()
    }
}

/// What a model failing validation showed: the machine's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Symptom {
    /// The failing model.
    pub model: String,
    /// The system prompt it was given.
    #[serde(default)]
    pub system: String,
    /// What it was asked.
    pub request: String,
    /// Its last reply, as sent.
    pub response: String,
    /// What was wrong with that reply.
    pub violations: Vec<Violation>,
    /// How many replies failed.
    pub attempts: usize,
}

/// A remedy to try (the suggested fix, applied): what `verify`'s closure is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Remedy {
    /// The failing model, to ask again.
    pub model: String,
    /// What it was asked.
    pub request: String,
    /// What kind of remedy (`fix_kind` on the wire).
    #[serde(rename = "fix_kind")]
    pub kind: RemedyKind,
    /// The diagnostic model's suggestion.
    pub suggestion: String,
    /// The system prompt to ask with: for a prompt fix, the original with the suggestion appended.
    pub system: String,
    /// For a schema remedy that adds fields: the schema delta (`properties`, perhaps `required`)
    /// the diagnostic model proposes, for the proposals' approver to decide on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<Value>,
    /// What trying it did, when the runner tried it ([`crate::Runner::with_meta_debug`]; a schema
    /// remedy only with [`crate::Runner::with_remedy_approver`]); `None` when it was only recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<Effect>,
}

/// What a remedy did when the runner tried it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Effect {
    /// The failing state, asked again with it, gave a valid reply.
    Validated,
    /// Asked again with it, the state still gave no valid reply (or the call failed).
    Invalid,
    /// A schema remedy whose delta the approver declined: not tried.
    Declined,
}

/// What a remedy changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RemedyKind {
    /// Text for the failing model's system prompt (applied and verified).
    Prompt,
    /// A change to the schema (recorded; with a remedy approver, proposed, and verified when approved).
    Schema,
    /// Another model, or model-specific handling (recorded).
    Model,
}

impl Remedy {
    /// A remedy of `kind` for `model`, asked `request`: `suggestion`, and the system prompt to ask
    /// with (for a prompt remedy, the original with the suggestion appended).
    pub fn new(
        model: impl Into<String>,
        request: impl Into<String>,
        kind: RemedyKind,
        suggestion: impl Into<String>,
        system: impl Into<String>,
    ) -> Self {
        Self {
            model: model.into(),
            request: request.into(),
            kind,
            suggestion: suggestion.into(),
            system: system.into(),
            delta: None,
            effect: None,
        }
    }

    /// The same remedy proposing the schema delta `delta`.
    #[must_use]
    pub fn with_delta(mut self, delta: Value) -> Self {
        self.delta = Some(delta);
        self
    }
}

impl Symptom {
    /// The failure the pipeline reported when `model` ran out of retries: the system prompt and the
    /// request of its first attempt, its last reply and violations, and how many attempts failed. A
    /// last reply with no JSON in it is one violation at the root saying why, so the failure is
    /// diagnosed like any other.
    pub fn from_exhausted(model: impl Into<String>, exhausted: &Exhausted) -> Self {
        let first = exhausted.attempts.first().map(|a| &a.request);
        let request = first
            .and_then(|r| r.messages.last())
            .map(|m| m.content.clone())
            .unwrap_or_default();
        Self {
            model: model.into(),
            system: first.and_then(|r| r.system.clone()).unwrap_or_default(),
            request,
            response: exhausted.last_response().to_owned(),
            violations: match exhausted.no_json() {
                Some(reason) if exhausted.violations().is_empty() => vec![Violation {
                    instance_pointer: String::new(),
                    schema_pointer: String::new(),
                    keyword: "json".to_owned(),
                    message: format!("no JSON: {reason}"),
                }],
                _ => exhausted.violations().to_vec(),
            },
            attempts: exhausted.attempts.len(),
        }
    }

    /// The failure as the machine's input event.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// The machine, with an `analyze-N` and a `suggest-N` state per diagnostic model, in order of
/// preference; each state's `config.model` is its model.
pub fn definition(diagnostic_models: &[&str]) -> Definition {
    let mut states = vec![
        State::new("detect", Action::Service),
        State::new("select", Action::Service),
    ];
    states[0].config = json!({"min_failures": MIN_FAILURES});
    let candidates: Vec<Value> = (1..=diagnostic_models.len())
        .zip(diagnostic_models)
        .map(|(n, model)| json!({"model": model, "state": format!("analyze-{n}")}))
        .collect();
    states[1].config = json!({"candidates": candidates});

    let failure = failure_schema();
    let mut transitions = vec![
        Transition::new(START, "detect", failure.clone()),
        omitted(Transition::new("detect", "select", failure.clone())),
        Transition::new("detect", "undiagnosed", undiagnosed_schema()),
        Transition::new("select", "undiagnosed", undiagnosed_schema()),
    ];
    for (n, model) in (1..=diagnostic_models.len()).zip(diagnostic_models) {
        let (analyze, suggest) = (format!("analyze-{n}"), format!("suggest-{n}"));
        let mut state = State::new(&analyze, Action::Llm);
        state.config = json!({"model": model, "history": "none"});
        state.prompts = vec![ANALYZE_PROMPT.to_owned()];
        states.push(state);
        let mut state = State::new(&suggest, Action::Llm);
        state.config = json!({"model": model});
        state.prompts = vec![SUGGEST_PROMPT.to_owned()];
        states.push(state);
        transitions.push(omitted(Transition::new(
            "select",
            &analyze,
            failure.clone(),
        )));
        transitions.push(Transition::new(&analyze, &suggest, analysis_schema()));
        transitions.push(Transition::new(&suggest, "apply", suggestion_schema()));
    }
    states.extend([
        State::new("apply", Action::Service),
        State::new("verify", Action::Service),
        State::new("fixed", Action::End),
        State::new("unfixed", Action::End),
        State::new("undiagnosed", Action::End),
    ]);
    let fix = object(
        json!({
            "model": {"type": "string"},
            "request": {"type": "string"},
            "fix_kind": {"enum": ["prompt", "schema"]},
            "suggestion": {"type": "string"},
            "system": {"type": "string"},
            "delta": {"type": "object"},
        }),
        &["delta"],
    );
    // A declined schema remedy leaves `verify` unapplied.
    let mut verify_unfixed = outcome_schema(true, false);
    verify_unfixed["properties"]["applied"] = json!({"type": "boolean"});
    transitions.extend([
        Transition::new("apply", "verify", fix),
        Transition::new("apply", "unfixed", outcome_schema(false, false)),
        Transition::new("verify", "fixed", outcome_schema(true, true)),
        Transition::new("verify", "unfixed", verify_unfixed),
    ]);

    Definition {
        id: ID.to_owned(),
        description: "A model keeps failing to produce valid output; find out why and fix it."
            .to_owned(),
        prompts: vec![FAILURE_PROMPT.to_owned()],
        schemas: serde_json::Map::new(),
        states,
        transitions,
        unknown: serde_json::Map::new(),
    }
}

/// A runner for [`definition`]: the diagnostic models ask `backend` with `config` (each state with
/// its own model), and `verify` is called with a prompt [`Remedy`] to ask the failing model again,
/// returning whether its reply is now valid (an error ends the run in `unfixed` with the error).
///
/// # Errors
///
/// [`Error::Definition`] if the machine does not load, which would be a bug here.
pub fn runner<F, Fut>(
    backend: Arc<dyn Backend>,
    config: Config,
    diagnostic_models: &[&str],
    verify: F,
) -> Result<Runner, Error>
where
    F: Fn(Remedy) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<bool, BoxError>> + Send + 'static,
{
    runner_with(backend, config, diagnostic_models, verify, false)
}

/// What the runner's own verification (a remedy tried on the failing state) came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Applied, and the state's reply validated.
    Fixed,
    /// Applied, and the state still failed.
    Unfixed,
    /// Not applied: the schema remedy was declined.
    NotApplied,
}

impl From<bool> for Verdict {
    fn from(fixed: bool) -> Self {
        if fixed { Self::Fixed } else { Self::Unfixed }
    }
}

/// [`runner`] with `verify` saying whether the remedy was applied too; with `verify_schema`, a
/// schema remedy with a delta goes to `verify` as a prompt remedy does (the runner puts it to its
/// remedy approver there), so the machine's last transition says what became of it.
pub(crate) fn runner_with<F, Fut, V>(
    backend: Arc<dyn Backend>,
    config: Config,
    diagnostic_models: &[&str],
    verify: F,
    verify_schema: bool,
) -> Result<Runner, Error>
where
    F: Fn(Remedy) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<V, BoxError>> + Send + 'static,
    V: Into<Verdict>,
{
    let mut definition = definition(diagnostic_models);
    if verify_schema && let Some(apply) = definition.states.iter_mut().find(|s| s.id == "apply") {
        apply.config = json!({"verify_schema": true});
    }
    let fsm = Fsm::new(definition)?;
    Ok(Runner::new(fsm)
        .with_llm(backend, config)
        .with_service("detect", service_fn(|call| Ok(detect(call))))
        .with_service("select", service_fn(|call| Ok(select(call))))
        .with_service("apply", service_fn(apply))
        .with_service("verify", Verify(verify)))
}

/// What the diagnostic model is told in every state.
const FAILURE_PROMPT: &str = "\
The first message describes another model's failure: `model` is the failing model, `system` the \
system prompt it was given, `request` what it was asked, `response` its last reply, `violations` \
what was wrong with that reply (JSON pointers and messages), `attempts` how many of its replies failed.";

const ANALYZE_PROMPT: &str = "\
Analyze why this model is failing. Is the prompt unclear or contradictory? Is the schema too complex \
or ambiguous for it? Or can this model not follow it at all? Name the cause the violations point to.";

const SUGGEST_PROMPT: &str = "\
Suggest one fix for the cause found. `prompt`: the suggestion is text appended verbatim to the \
failing model's system prompt, so write it to that model. `schema`: the suggestion says how to \
change the schema, and when the change adds fields, `delta` is the partial JSON Schema to merge \
(new `properties`, perhaps `required`), proposed to whoever approves schema changes. `model`: the suggestion names another model or model-specific handling. Prefer a \
prompt fix when one can work: it is the only kind tried straight away.";

fn failure_schema() -> Value {
    object(
        json!({
            "model": {"type": "string"},
            "system": {"type": "string"},
            "request": {"type": "string"},
            "response": {"type": "string"},
            "violations": {"type": "array", "items": {"type": "object", "properties": {
                "instance_pointer": {"type": "string"},
                "message": {"type": "string"},
            }, "required": ["message"]}},
            "attempts": {"type": "integer", "minimum": 1},
        }),
        &["system"],
    )
}

fn undiagnosed_schema() -> Value {
    object(
        json!({
            "diagnosed": {"const": false},
            "fixed": {"const": false},
            "reason": {"type": "string"},
        }),
        &[],
    )
}

fn analysis_schema() -> Value {
    object(
        json!({"analysis": {"type": "string", "description": "why the model fails"}}),
        &[],
    )
}

fn suggestion_schema() -> Value {
    object(
        json!({
            "fix_kind": {"enum": ["prompt", "schema", "model"]},
            "suggestion": {"type": "string"},
            "delta": {"type": "object", "description": "a schema fix's added fields, as a partial JSON Schema"},
        }),
        &["delta"],
    )
}

fn outcome_schema(applied: bool, fixed: bool) -> Value {
    let mut properties = json!({
        "diagnosed": {"const": true},
        "fixed": {"const": fixed},
        "applied": {"const": applied},
        "fix_kind": {"enum": ["prompt", "schema", "model"]},
        "suggestion": {"type": "string"},
        "system": {"type": "string"},
        "delta": {"type": "object"},
        "error": {"type": "string"},
    });
    if !applied && let Value::Object(map) = &mut properties {
        map.remove("system");
    }
    object(properties, &["error", "delta"])
}

fn omitted(mut transition: Transition) -> Transition {
    transition.omit = true;
    transition
}

/// The `detect` service: on to `select` with the failure if it is repeated.
fn detect(call: &ServiceCall<'_>) -> Value {
    let min = call
        .state
        .config
        .get("min_failures")
        .and_then(Value::as_u64)
        .unwrap_or(MIN_FAILURES);
    let attempts = call.event["attempts"].as_u64().unwrap_or(0);
    let violations = call.event["violations"].as_array().map_or(0, Vec::len);
    let reason = if attempts < min {
        let attempts = usize::try_from(attempts).unwrap_or(usize::MAX);
        format!(
            "{}; a repeated failure has at least {min}",
            crate::error::count(attempts, "failed attempt")
        )
    } else if violations == 0 {
        "no violations: nothing to diagnose".to_owned()
    } else {
        return with_id(call.event, "detect", "select");
    };
    json!({"id": ["detect", "undiagnosed"], "diagnosed": false, "fixed": false, "reason": reason})
}

/// The `select` service: the first candidate in `config.candidates` that is not the failing model.
fn select(call: &ServiceCall<'_>) -> Value {
    let failing = call.event["model"].as_str().unwrap_or_default();
    let chosen = call.state.config["candidates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["model"].as_str() != Some(failing))
        .find_map(|c| c["state"].as_str());
    match chosen {
        Some(state) => with_id(call.event, "select", state),
        None => json!({"id": ["select", "undiagnosed"], "diagnosed": false, "fixed": false,
                       "reason": format!("no diagnostic model other than `{failing}`")}),
    }
}

/// The `apply` service: a prompt fix goes on to `verify`, and so does a schema fix with a delta when
/// the state's `config.verify_schema` is `true`; other fixes are recorded and end the run.
fn apply(call: &ServiceCall<'_>) -> Result<Value, BoxError> {
    let event = call.event;
    let failure = input_of(call.trail).ok_or("no failure in the trail")?;
    // Only what the fix needs: violations may be any objects with a message.
    let field = |key: &str| failure[key].as_str().unwrap_or_default().to_owned();
    let kind: RemedyKind = serde_json::from_value(event["fix_kind"].clone())?;
    let suggestion = event["suggestion"].as_str().unwrap_or_default().to_owned();
    let delta = event.get("delta").filter(|d| d.is_object()).cloned();
    let verify_schema = call.state.config.get("verify_schema") == Some(&Value::Bool(true));
    if kind == RemedyKind::Schema
        && verify_schema
        && let Some(delta) = delta
    {
        let fix = Remedy::new(
            field("model"),
            field("request"),
            kind,
            suggestion,
            field("system"),
        )
        .with_delta(delta);
        return Ok(with_id(&serde_json::to_value(fix)?, "apply", "verify"));
    }
    if kind != RemedyKind::Prompt {
        tracing::info!(model = %field("model"), ?kind, "fix recorded, not applied");
        let mut out = json!({"id": ["apply", "unfixed"], "diagnosed": true, "fixed": false,
                             "applied": false, "fix_kind": kind, "suggestion": suggestion});
        if let (Some(delta @ Value::Object(_)), Value::Object(map)) = (event.get("delta"), &mut out)
            && kind == RemedyKind::Schema
        {
            map.insert("delta".into(), delta.clone());
        }
        return Ok(out);
    }
    let system = field("system");
    let system = if system.trim().is_empty() {
        suggestion.clone()
    } else {
        format!("{}\n\n{suggestion}", system.trim_end())
    };
    let fix = Remedy {
        model: field("model"),
        request: field("request"),
        kind,
        suggestion,
        system,
        delta: None,
        effect: None,
    };
    Ok(with_id(&serde_json::to_value(fix)?, "apply", "verify"))
}

/// The `verify` service: the caller's closure says whether the fix works.
struct Verify<F>(F);

impl<F, Fut, V> Service for Verify<F>
where
    F: Fn(Remedy) -> Fut + Send + Sync,
    Fut: Future<Output = Result<V, BoxError>> + Send + 'static,
    V: Into<Verdict>,
{
    fn call<'a>(&'a self, call: ServiceCall<'a>) -> BoxFuture<'a, Result<Value, BoxError>> {
        let fix: Result<Remedy, _> = serde_json::from_value(call.event.clone());
        Box::pin(async move {
            let fix = fix?;
            let verdict = (self.0)(fix.clone()).await.map(Into::into);
            let fixed = matches!(verdict, Ok(Verdict::Fixed));
            let applied = !matches!(verdict, Ok(Verdict::NotApplied));
            tracing::info!(model = %fix.model, fixed, applied, "fix verified");
            let to = if fixed { "fixed" } else { "unfixed" };
            let mut out = json!({"id": ["verify", to], "diagnosed": true, "fixed": fixed,
                                 "applied": applied, "fix_kind": fix.kind,
                                 "suggestion": fix.suggestion, "system": fix.system});
            if let Value::Object(map) = &mut out {
                if let Some(delta) = fix.delta {
                    map.insert("delta".into(), delta);
                }
                if let Err(error) = verdict {
                    map.insert("error".into(), Value::String(error.to_string()));
                }
            }
            Ok(out)
        })
    }
}

/// `event` with its `id` set to `[from, to]` (first, as the runner writes it).
fn with_id(event: &Value, from: &str, to: &str) -> Value {
    let mut out = serde_json::Map::new();
    out.insert("id".into(), json!([from, to]));
    if let Value::Object(map) = event {
        out.extend(
            map.iter()
                .filter(|(k, _)| *k != "id")
                .map(|(k, v)| (k.clone(), v.clone())),
        );
    }
    Value::Object(out)
}
