//! Meta-debugging of a run ([`super::Options::meta_debug`], or a state's `config.meta_debug`):
//! an `llm` state that runs out of retries, or whose validation failure repeats across turns, is
//! diagnosed by other models, resolved as any model name is; without a list, the models the
//! compatibility matrix measured passing every test. The models are served by one [`Routed`]
//! backend, by model name.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use claij_backends::{Backend, BoxFuture, Capabilities, ChatRequest, ChatResponse};
use claij_fsm::Definition;
use claij_fsm::builtin::meta_debug::Diagnostics;

use super::Error;
use crate::Claij;
use crate::options::ModelOptions;

/// What meta-debugging a run asks for: `listed` (`Some`: every state, by these models, or the
/// matrix's when empty; `None`: only states whose `config.meta_debug` is `true`), the matrix
/// the models come from when none are listed.
pub(super) struct MetaDebug<'a> {
    pub listed: Option<&'a [String]>,
    pub matrix: Option<&'a Path>,
}

/// Several opened models behind one backend: a request goes to the backend of its `model`, under the
/// name that backend knows it by.
pub(super) struct Routed {
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

/// Opens each of `specs` as any model name is opened: one backend serving them all, and the name
/// each one's requests use (its resolved model name, so the run's own model is recognised as
/// itself).
pub(super) fn open_models(specs: &[String], claij: &Claij) -> Result<(Routed, Vec<String>), Error> {
    let mut models = BTreeMap::new();
    let mut names = Vec::new();
    for spec in specs {
        let opened = crate::model::open(Some(spec.as_str()), None, claij)
            .map_err(|e| Error::Model(format!("model `{spec}`: {e:#}")))?;
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

/// The meta-debugging `asked` and `definitions` ask for, if any: every state with a list (even
/// an empty one), else the states whose `config.meta_debug` is `true`.
pub(super) fn diagnostics(
    asked: &MetaDebug<'_>,
    definitions: &[&Definition],
    options: &ModelOptions,
    claij: &Claij,
) -> Result<Option<Diagnostics>, Error> {
    let by_state = definitions.iter().any(|d| {
        d.states
            .iter()
            .any(|s| s.config.get("meta_debug") == Some(&serde_json::Value::Bool(true)))
    });
    if asked.listed.is_none() && !by_state {
        return Ok(None);
    }
    let listed = asked.listed.map(<[String]>::to_vec).unwrap_or_default();
    let specs = if listed.is_empty() {
        known_to_work(asked.matrix)
    } else {
        listed
    };
    if specs.is_empty() {
        return Err(Error::NoDiagnosticModels);
    }
    let (routed, mut names) = open_models(&specs, claij)?;
    let mut seen = std::collections::HashSet::new();
    names.retain(|name| seen.insert(name.clone()));
    let config = options.config(String::new(), &claij.settings().defaults, None);
    let diagnostics = Diagnostics::new(Arc::new(routed), config, names);
    Ok(Some(if asked.listed.is_some() {
        diagnostics.for_every_state()
    } else {
        diagnostics
    }))
}

/// The models the compatibility matrix at `path` measured passing every test they ran, best
/// first-try validity first.
fn known_to_work(path: Option<&Path>) -> Vec<String> {
    let Some(matrix) = path.and_then(|p| crate::matrix::read(p).ok()) else {
        return Vec::new();
    };
    let mut good: Vec<_> = crate::matrix::choices(&matrix)
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
