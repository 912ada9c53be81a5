//! Meta-debugging for `claij fsm run|resume`: `--meta-debug[=LLM,...]` (or a state's
//! `config.meta_debug`) diagnoses an `llm` state that runs out of retries, or whose validation
//! failure repeats across turns, with other models, resolved as `--llm` resolves one; without a list, the models the compatibility matrix measured passing
//! every test. The models are served by one [`Routed`] backend, by model name.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Result, anyhow};
use claij_backends::{Backend, BoxFuture, Capabilities, ChatRequest, ChatResponse};
use claij_fsm::Definition;
use claij_fsm::builtin::meta_debug::Diagnostics;

use crate::ask::{ModelOptions, llm};
use claij::Claij;

/// `--meta-debug`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct MetaDebugFlags {
    /// Diagnose every `llm` state that runs out of retries, or whose validation failure repeats
    /// across turns, with another model (a prompt remedy is tried at once and kept for the rest of
    /// the run, and the journal; a schema remedy goes to `--approve` with `--interceptors
    /// proposals` and, approved, is tried at once too): the models listed (aliases or
    /// `provider:model`, as `--llm`), else those the compatibility matrix measured passing every
    /// test. A state's `config.meta_debug: true` enables it for that state alone.
    #[arg(long = "meta-debug", value_name = "LLM,...", num_args = 0..=1, require_equals = true, value_delimiter = ',')]
    meta_debug: Option<Vec<String>>,
}

/// Several opened models behind one backend: a request goes to the backend of its `model`, under the
/// name that backend knows it by.
pub(crate) struct Routed {
    models: BTreeMap<String, (Arc<dyn Backend>, String)>,
    /// The provider of every model, when they share one (`local` for the embedded model, as the
    /// same model is called anywhere else); else `routed`.
    provider: String,
}

impl Backend for Routed {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn capabilities(&self, model: &str) -> Capabilities {
        self.models
            .get(model)
            .map(|(backend, name)| backend.capabilities(name))
            .unwrap_or_default()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, claij_backends::Error>> {
        Box::pin(async move {
            let Some((backend, name)) = self.models.get(&request.model) else {
                return Err(claij_backends::Error::ModelNotFound {
                    context: claij_backends::ErrorContext::new("routed"),
                    model: request.model.clone(),
                });
            };
            let mut request = request.clone();
            name.clone_into(&mut request.model);
            backend.complete(&request).await
        })
    }
}

/// Opens each of `specs` as `--llm` opens one: one backend serving them all, and the name each
/// one's requests use (its resolved model name, so the run's own model is recognised as itself).
pub(crate) fn open_models(specs: &[String], claij: &Claij) -> Result<(Routed, Vec<String>)> {
    let mut models = BTreeMap::new();
    let mut names = Vec::new();
    for spec in specs {
        let opened = llm::open(Some(spec.as_str()), None, claij)
            .map_err(|e| anyhow!("model `{spec}`: {e:#}"))?;
        names.push(opened.model.clone());
        models.insert(opened.model.clone(), (opened.backend, opened.model));
    }
    let mut providers = models.values().map(|(backend, _)| backend.provider());
    let provider = match providers.next() {
        Some(first) if providers.all(|p| p == first) => first.to_owned(),
        _ => "routed".to_owned(),
    };
    Ok((Routed { models, provider }, names))
}

/// The meta-debugging `flags` and `definitions` ask for, if any: every state with `--meta-debug`,
/// else the states whose `config.meta_debug` is `true`.
pub(super) fn diagnostics(
    flags: &MetaDebugFlags,
    definitions: &[&Definition],
    options: &ModelOptions,
    claij: &Claij,
) -> Result<Option<Diagnostics>> {
    let by_state = definitions.iter().any(|d| {
        d.states
            .iter()
            .any(|s| s.config.get("meta_debug") == Some(&serde_json::Value::Bool(true)))
    });
    if flags.meta_debug.is_none() && !by_state {
        return Ok(None);
    }
    let listed = flags.meta_debug.clone().unwrap_or_default();
    let specs = if listed.is_empty() {
        known_to_work(claij.settings().data_dir.as_deref())
    } else {
        listed
    };
    if specs.is_empty() {
        return Err(anyhow!(
            "meta-debugging needs diagnostic models: name them with --meta-debug=LLM,... (or measure \
             some with `cargo xtask integration`, whose compatibility matrix lists those that work)"
        ));
    }
    let (routed, mut names) = open_models(&specs, claij)?;
    let mut seen = std::collections::HashSet::new();
    names.retain(|name| seen.insert(name.clone()));
    let config = options.config(String::new(), &claij.settings().defaults, None);
    let diagnostics = Diagnostics::new(Arc::new(routed), config, names);
    Ok(Some(if flags.meta_debug.is_some() {
        diagnostics.for_every_state()
    } else {
        diagnostics
    }))
}

/// The models the compatibility matrix measured passing every test they ran, best first-try
/// validity first.
fn known_to_work(data_dir: Option<&std::path::Path>) -> Vec<String> {
    let Some(matrix) =
        claij::matrix::default_path(data_dir).and_then(|p| claij::matrix::read(&p).ok())
    else {
        return Vec::new();
    };
    let mut good: Vec<_> = claij::matrix::choices(&matrix)
        .into_iter()
        .filter(|c| c.measured.0 > 0 && c.measured.1 == c.measured.0)
        .collect();
    // First-try validity as a fraction of tests, compared without floats: a/b > c/d iff ad > cb.
    good.sort_by(|a, b| {
        let (ta, _, fa) = a.measured;
        let (tb, _, fb) = b.measured;
        (fb * ta).cmp(&(fa * tb))
    });
    good.into_iter().map(|c| c.model).collect()
}
