//! Sub-FSMs: an `fsm` state's `config.fsm` names a built-in machine (`vote`, `meta-debug`), wired
//! here with models resolved as any model name is, or a definition file by its path relative to
//! the file that names it, loaded with its own sub-FSMs (a file that refers back to one on its way
//! is a load error naming the chain). A journal's header keeps the loaded definitions, so a
//! resumed run needs no file.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use claij_fsm::builtin::{meta_debug, vote};
use claij_fsm::journal::SubDefinition;
use claij_fsm::{Action, Definition, DefinitionError, Fsm, Problem, Runner, State};
use claij_schema::Registry;
use serde_json::Value;

use super::Error;
use super::meta_debug::open_models;
use crate::Claij;
use crate::options::ModelOptions;

type Result<T, E = Error> = std::result::Result<T, E>;

/// The built-in machines every run offers by name.
pub(super) const BUILTIN: [&str; 2] = [vote::ID, meta_debug::ID];

/// The sub-FSM files `definition` (read from `file`; `None`, read from stdin: paths relative to
/// the current directory) names, each with its own. `Ok(Err(..))` is a definition problem (a
/// cycle, a file that is no valid definition) at the pointer of the state naming it; `Err` a file
/// that cannot be read.
pub(super) fn load(
    file: Option<&Path>,
    definition: &Definition,
) -> Result<Result<Vec<SubDefinition>, DefinitionError>> {
    let (dir, canonical) = match file {
        None => (PathBuf::from("."), None),
        Some(path) => {
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_owned);
            (dir, path.canonicalize().ok())
        }
    };
    let label = file.and_then(Path::file_name).map_or_else(
        || file.map_or_else(|| "stdin".to_owned(), |p| p.display().to_string()),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut chain = vec![(label, canonical)];
    load_in(&dir, definition, &mut chain)
}

/// The files `chain`'s last definition names, relative to `dir`.
fn load_in(
    dir: &Path,
    definition: &Definition,
    chain: &mut Vec<(String, Option<PathBuf>)>,
) -> Result<Result<Vec<SubDefinition>, DefinitionError>> {
    let mut subs = Vec::new();
    let mut seen = HashSet::new();
    for (i, state) in definition.states.iter().enumerate() {
        if let Some(problem) = builtin_problem(state, i) {
            return Ok(Err(DefinitionError {
                fsm: definition.id.clone(),
                problems: vec![problem],
            }));
        }
        let Some(name) = file_named(state) else {
            continue;
        };
        if !seen.insert(name) {
            continue;
        }
        let pointer = format!("/states/{i}/config/fsm");
        let invalid = |message: String| {
            Ok(Err(DefinitionError {
                fsm: definition.id.clone(),
                problems: vec![Problem {
                    pointer: pointer.clone(),
                    message,
                }],
            }))
        };
        let path = dir.join(name);
        let referrer = chain.last().map_or("", |(label, _)| label.as_str());
        let canonical = path.canonicalize().map_err(|e| {
            Error::Config(format!(
                "{referrer}: {pointer}: cannot read the sub-FSM `{name}` ({}): {e}",
                path.display()
            ))
        })?;
        if let Some(from) = chain
            .iter()
            .position(|(_, seen)| seen.as_ref() == Some(&canonical))
        {
            let mut names: Vec<&str> = chain[from..].iter().map(|(l, _)| l.as_str()).collect();
            names.push(name);
            return invalid(format!(
                "sub-FSMs refer back in a cycle: {}",
                names.join(" -> ")
            ));
        }
        let value = super::read_json(&path)?;
        let child: Definition = match serde_json::from_value(value) {
            Ok(child) => child,
            Err(e) => return invalid(format!("`{name}` is not an FSM definition: {e}")),
        };
        if let Err(problems) = claij_fsm::check(&child) {
            return invalid(format!("`{name}`: {problems}"));
        }
        chain.push((name.to_owned(), Some(canonical.clone())));
        let child_dir = canonical.parent().map_or_else(PathBuf::new, Path::to_owned);
        let nested = load_in(&child_dir, &child, chain)?;
        chain.pop();
        match nested {
            Ok(nested) => subs.push(SubDefinition::new(name, child, nested)),
            Err(problems) => return invalid(format!("`{name}`: {problems}")),
        }
    }
    Ok(Ok(subs))
}

/// The config key naming the models of built-in `name`: voters for the vote, diagnostic models for
/// meta-debugging.
fn models_key(name: &str) -> &'static str {
    if name == vote::ID { "voters" } else { "models" }
}

/// What is wrong with the configuration of a state (at `/states/{index}`) running a built-in: it
/// must name its models.
fn builtin_problem(state: &State, index: usize) -> Option<Problem> {
    let name = state
        .config_str("fsm")
        .filter(|name| state.action == Action::Fsm && BUILTIN.contains(name))?;
    let key = models_key(name);
    let named = state
        .config
        .get(key)
        .and_then(Value::as_array)
        .is_some_and(|list| !list.is_empty() && list.iter().all(Value::is_string));
    (!named).then(|| Problem {
        pointer: format!("/states/{index}/config/{key}"),
        message: format!(
            "the `{name}` sub-FSM needs its models, as `--llm` names them: {{\"{key}\": [\"LLM\", ...]}}"
        ),
    })
}

/// The file an `fsm` state names, if it names one (not a built-in).
fn file_named(state: &State) -> Option<&str> {
    let name = state.config_str("fsm")?;
    (state.action == Action::Fsm && !BUILTIN.contains(&name)).then_some(name)
}

/// What the built-in machines are wired with.
struct Builtins<'a> {
    /// Where models are resolved.
    claij: &'a Claij,
    /// How models are called.
    options: &'a ModelOptions,
    /// Where the vote activates approved schema deltas.
    registry: Arc<Mutex<Registry>>,
}

impl Builtins<'_> {
    /// The built-in `name` as `state` (at `/states/{index}`) configures it.
    fn runner(&self, name: &str, state: &State, index: usize) -> Result<Runner> {
        if let Some(problem) = builtin_problem(state, index) {
            return Err(Error::Config(format!(
                "{}: {}",
                problem.pointer, problem.message
            )));
        }
        let models = |key: &str| -> Vec<String> {
            let list = state.config.get(key).and_then(Value::as_array);
            list.map(|l| {
                l.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
        };
        let config = self
            .options
            .config(String::new(), &self.claij.settings().defaults, None);
        let fsm = |e: claij_fsm::Error| Error::Fsm(e);
        if name == vote::ID {
            let names = models(models_key(name));
            let (routed, voters) = open_models(&names, self.claij)?;
            let voters: Vec<&str> = voters.iter().map(String::as_str).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            // The audit log names each voter as the state's `voters` does.
            return vote::runner_naming(
                Arc::new(routed),
                config,
                &voters,
                &names,
                Arc::clone(&self.registry),
            )
            .map_err(fsm);
        }
        let (routed, diagnostic) = open_models(&models(models_key(name)), self.claij)?;
        let diagnostic: Vec<&str> = diagnostic.iter().map(String::as_str).collect();
        // A remedy is tried by asking the failing state again, which only a run watching that
        // state can do (`--meta-debug`, `config.meta_debug`); here its remedy is recorded.
        let verify = |_| async {
            Err::<bool, claij_interceptors::BoxError>(
                "a remedy is tried on the failing state itself: enable meta-debugging on it \
                 (--meta-debug or its config.meta_debug)"
                    .into(),
            )
        };
        meta_debug::runner(Arc::new(routed), config, &diagnostic, verify).map_err(fsm)
    }
}

/// Whether a machine of the tree (`definition` and its sub-FSM files `subs`) runs the built-in vote.
pub(super) fn runs_vote(definition: &Definition, subs: &[SubDefinition]) -> bool {
    let votes = |d: &Definition| {
        d.states
            .iter()
            .any(|s| s.action == Action::Fsm && s.config_str("fsm") == Some(vote::ID))
    };
    votes(definition) || subs.iter().any(|s| runs_vote(&s.definition, &s.sub_fsms))
}

/// `runner` with the sub-FSMs its machine's `fsm` states name: built-ins wired by `builtins`, the
/// others from `subs` (loaded files, or a journal's header), each made by `make` and given its own.
/// A name found nowhere is left for the runner to report when the state runs.
fn attach(
    mut runner: Runner,
    subs: &[SubDefinition],
    make: &mut dyn FnMut(Fsm) -> Result<Runner>,
    builtins: &Builtins<'_>,
) -> Result<Runner> {
    let definition = runner.fsm().definition().clone();
    let mut seen = HashSet::new();
    for (index, state) in definition.states.iter().enumerate() {
        let Some(name) = state
            .config_str("fsm")
            .filter(|_| state.action == Action::Fsm)
        else {
            continue;
        };
        if !seen.insert(name) {
            continue;
        }
        let child = if BUILTIN.contains(&name) {
            builtins.runner(name, state, index)?
        } else if let Some(sub) = subs.iter().find(|s| s.name == name) {
            let child = make(Fsm::new(sub.definition.clone())?)?;
            attach(child, &sub.sub_fsms, make, builtins)?
        } else {
            continue;
        };
        runner = runner.with_sub_fsm_named(name, child);
    }
    Ok(runner)
}

/// The runner of `fsm` with its sub-FSMs (`subs`: loaded files or a journal's header, and the
/// built-ins) and meta-debugging (`meta_debug`, or a state's `config.meta_debug`) on every machine
/// of the tree. `make` builds a machine's runner with its services and models. The built-in vote
/// activates into `registry`, the run's one registry when it has one (proposals), else a
/// registry of its own.
pub(super) fn build(
    fsm: Fsm,
    subs: &[SubDefinition],
    meta_debug: &super::meta_debug::MetaDebug<'_>,
    options: &ModelOptions,
    claij: &Claij,
    registry: Option<Arc<Mutex<Registry>>>,
    make: &mut dyn FnMut(Fsm) -> Result<Runner>,
) -> Result<Runner> {
    let mut definitions = vec![fsm.definition().clone()];
    let mut pending: Vec<&SubDefinition> = subs.iter().collect();
    while let Some(sub) = pending.pop() {
        definitions.push(sub.definition.clone());
        pending.extend(&sub.sub_fsms);
    }
    let definitions: Vec<&Definition> = definitions.iter().collect();
    let diagnostics = super::meta_debug::diagnostics(meta_debug, &definitions, options, claij)?;
    let mut make = |fsm: Fsm| -> Result<Runner> {
        let runner = make(fsm)?;
        Ok(match &diagnostics {
            Some(diagnostics) => runner.with_meta_debug(diagnostics.clone()),
            None => runner,
        })
    };
    let builtins = Builtins {
        claij,
        options,
        registry: match registry {
            Some(registry) => registry,
            None => Arc::new(Mutex::new(
                Registry::new(claij_schema::base()).map_err(|e| Error::Config(e.to_string()))?,
            )),
        },
    };
    let runner = make(fsm)?;
    attach(runner, subs, &mut make, &builtins)
}
