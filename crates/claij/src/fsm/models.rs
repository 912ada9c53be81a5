//! The models of `llm` states: the run's own ([`ModelOptions::llm`], chosen as for any request)
//! and, for a state whose `config.model` names one, a backend of that state's own, resolved
//! through the configuration's aliases and providers exactly as the run's own is.

use std::collections::HashMap;
use std::sync::Arc;

use claij_backends::Backend;
use claij_fsm::{Action, Definition, Runner};
use claij_interceptors::{Config, StructuredMode};

use super::Error;
use crate::Claij;
use crate::model::Llm;
use crate::options::ModelOptions;

type Result<T, E = Error> = std::result::Result<T, E>;

/// An opened model and the pipeline configuration to call it with.
pub struct Opened {
    /// The model's backend.
    pub backend: Arc<dyn Backend>,
    /// How it is called: the options over the configuration's `[defaults]` and the compatibility
    /// matrix's choice.
    pub config: Config,
}

/// Opens `llm` (an alias, `local` or `provider:model`; `None` for the default choice) with
/// `options` and the configuration's defaults. What the caller may want to show is given to
/// `notice`, a line each: what was chosen when `llm` did not say, the matrix's warnings and
/// choice.
///
/// # Errors
///
/// [`Error::Model`]: the name does not resolve, the model cannot be opened (a key not set...).
pub fn open(
    llm: Option<&str>,
    options: &ModelOptions,
    claij: &Claij,
    notice: &dyn Fn(&str),
) -> Result<Opened> {
    let settings = claij.settings();
    // `model_path` is the local model's: a state naming a hosted model does not take it.
    let local = llm.is_none_or(|text| {
        settings
            .resolve(text)
            .is_ok_and(|resolved| resolved.llm == Llm::Local)
    });
    let model_path = options.model_path.as_deref().filter(|_| local);
    let opened =
        crate::model::open(llm, model_path, claij).map_err(|e| Error::Model(format!("{e:#}")))?;
    if let Some(text) = &opened.notice {
        notice(text);
    }
    options
        .check_mode(&settings.defaults, opened.backend.as_ref(), &opened.model)
        .map_err(|e| Error::Model(e.to_string()))?;
    // The matrix is looked up under the name this model was given.
    let mut named = options.clone();
    if llm.is_some() {
        named.llm = llm.map(str::to_owned);
    }
    let advice = named.matrix_choice(&opened.model, settings);
    for warning in &advice.warnings {
        notice(warning);
    }
    let measured = advice.choice;
    if let Some(choice) = &measured {
        notice(&crate::options::matrix_notice(choice));
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

/// The models of a run, each opened once whichever of its machines (its own or a sub-FSM's) asks
/// for it: the run's own model and those `llm` states name in `config.model`, so a choice made for
/// the run's own is said once. Names that resolve to the same local model file (the default
/// choice, `local`, an alias, a voter) share one backend ([`crate::model::open`]); each name
/// keeps its own pipeline configuration.
pub(super) struct Models<'a> {
    options: &'a ModelOptions,
    claij: &'a Claij,
    notice: &'a dyn Fn(&str),
    /// By the name given (`None`: the run's own).
    opened: HashMap<Option<String>, (Arc<dyn Backend>, Config)>,
}

impl<'a> Models<'a> {
    /// No model opened yet: each is opened when a machine first needs it.
    pub(super) fn new(
        options: &'a ModelOptions,
        claij: &'a Claij,
        notice: &'a dyn Fn(&str),
    ) -> Self {
        Models {
            options,
            claij,
            notice,
            opened: HashMap::new(),
        }
    }

    /// `runner` (of `definition`) with the run's own model when a state asks for it, and a backend
    /// for every `llm` state whose `config.model` names a model (`model_path` is only for
    /// `local`).
    ///
    /// # Errors
    ///
    /// A model that does not resolve or cannot be opened; a state's is named with the state's
    /// pointer (`/states/2/config/model`).
    pub(super) fn wire(&mut self, mut runner: Runner, definition: &Definition) -> Result<Runner> {
        if needs_default(definition) {
            let (backend, config) = self.get(None)?;
            runner = runner.with_llm(backend, config);
        }
        for (i, state) in definition.states.iter().enumerate() {
            let Some(name) = state
                .config_str("model")
                .filter(|_| state.action == Action::Llm)
            else {
                continue;
            };
            let (backend, config) = self
                .get(Some(name))
                .map_err(|e| Error::Model(format!("/states/{i}/config/model: {e}")))?;
            runner = runner.with_llm_for(state.id.clone(), backend, config);
        }
        Ok(runner)
    }

    /// The model named `llm` (`None`: the run's own), opened on first use.
    fn get(&mut self, llm: Option<&str>) -> Result<(Arc<dyn Backend>, Config)> {
        let key = llm.map(str::to_owned);
        if let Some((backend, config)) = self.opened.get(&key) {
            return Ok((Arc::clone(backend), config.clone()));
        }
        let name = llm.or(self.options.llm.as_deref());
        let model = open(name, self.options, self.claij, self.notice)?;
        let opened = (model.backend, model.config);
        self.opened.insert(key, opened.clone());
        Ok(opened)
    }
}

/// Whether an `llm` state asks the run's own model (it names none in `config.model`).
fn needs_default(definition: &Definition) -> bool {
    definition
        .states
        .iter()
        .any(|s| s.action == Action::Llm && s.config_str("model").is_none())
}
