//! The models of `llm` states: the run's own (`--llm`, as `claij ask` picks it) and, for a state whose
//! `config.model` names one, a backend of that state's own, resolved through the configuration's
//! aliases and providers exactly as `--llm` is.

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::Arc;

use anyhow::{Result, anyhow};
use claij_backends::Backend;
use claij_fsm::{Action, Definition, Runner};
use claij_interceptors::{Config, StructuredMode};

use crate::ask::{ModelOptions, llm, model};
use crate::config::Settings;

/// An opened model and the pipeline configuration to call it with.
pub(crate) struct Opened {
    pub backend: Arc<dyn Backend>,
    pub config: Config,
}

/// Opens `llm` (an alias, `local` or `provider:model`; `None` for the default choice) with the
/// model options and the configuration's defaults, saying on stderr what was chosen when `--llm`
/// did not say.
pub(crate) fn open(
    llm: Option<&str>,
    options: &ModelOptions,
    settings: &Settings,
) -> Result<Opened> {
    // `--model-path` is the local model's: a state naming a hosted model does not take it.
    let local = llm.is_none_or(|text| {
        settings
            .resolve(text)
            .is_ok_and(|resolved| resolved.llm == llm::Llm::Local)
    });
    let model_path = options.model_path.as_deref().filter(|_| local);
    let opened = llm::open(llm, model_path, settings)?;
    let mut err = std::io::stderr();
    if let Some(notice) = &opened.notice {
        writeln!(err, "{notice}")?;
    }
    // The matrix is looked up under the name this model was given.
    let mut named = options.clone();
    if llm.is_some() {
        named.llm = llm.map(str::to_owned);
    }
    let measured = named.matrix_choice(&opened.model, &settings.defaults);
    if let Some(choice) = &measured {
        writeln!(err, "{}", model::matrix_notice(choice))?;
    }
    let config = named.config(opened.model, &settings.defaults, measured.as_ref());
    if let Some(fallback) = &opened.fallback {
        // As `claij ask`: an explicit --mode native keeps to native output.
        fallback.set_mode_fallback(config.structured == StructuredMode::Auto);
    }
    Ok(Opened {
        backend: opened.backend,
        config,
    })
}

/// Whether an `llm` state asks the run's own model (it names none in `config.model`).
pub(super) fn needs_default(definition: &Definition) -> bool {
    definition
        .states
        .iter()
        .any(|s| s.action == Action::Llm && s.config_str("model").is_none())
}

/// `runner` with a backend of its own for every `llm` state whose `config.model` names a model
/// (states naming the same model share one backend; `--model-path` is only for `local`).
///
/// # Errors
///
/// A model that does not resolve or cannot be opened, named with the state's pointer
/// (`/states/2/config/model`).
pub(super) fn per_state(
    mut runner: Runner,
    definition: &Definition,
    options: &ModelOptions,
    settings: &Settings,
) -> Result<Runner> {
    let mut opened: HashMap<&str, (Arc<dyn Backend>, Config)> = HashMap::new();
    for (i, state) in definition.states.iter().enumerate() {
        if state.action != Action::Llm {
            continue;
        }
        let Some(name) = state.config_str("model") else {
            continue;
        };
        if !opened.contains_key(name) {
            let model = open(Some(name), options, settings)
                .map_err(|e| anyhow!("/states/{i}/config/model: {e:#}"))?;
            opened.insert(name, (model.backend, model.config));
        }
        if let Some((backend, config)) = opened.get(name) {
            runner = runner.with_llm_for(state.id.clone(), Arc::clone(backend), config.clone());
        }
    }
    Ok(runner)
}
