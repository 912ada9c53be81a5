//! How a worker turns a run's machine into a [`Runner`] (models, services, sub-FSMs), and a
//! conversation into a [`Pipeline`]: the [`Wiring`] trait, and the cache of runners a worker keeps.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use claij_backends::BoxFuture;
use claij_fsm::Runner;
use claij_interceptors::{BoxError, Pipeline};

use crate::types::Machine;

/// What a worker runs with: the models, services and MCP servers it has. Implemented by the CLI
/// (the configuration `claij fsm run` uses) and by tests (scripted backends).
pub trait Wiring: Send + Sync + 'static {
    /// The runner of `machine`, its sub-FSMs registered, its states wired to this worker's models
    /// and services.
    fn runner<'a>(&'a self, machine: &'a Machine) -> BoxFuture<'a, Result<Runner, BoxError>>;

    /// The pipeline a conversation's turns are asked through (`None`: this worker serves no
    /// conversations).
    fn conversation(&self) -> Option<Arc<Pipeline>> {
        None
    }
}

/// A [`Wiring`] from a closure, for runners that need no IO to build.
pub fn wiring_fn<F>(f: F) -> impl Wiring
where
    F: Fn(&Machine) -> Result<Runner, BoxError> + Send + Sync + 'static,
{
    struct FnWiring<F>(F);
    impl<F> Wiring for FnWiring<F>
    where
        F: Fn(&Machine) -> Result<Runner, BoxError> + Send + Sync + 'static,
    {
        fn runner<'a>(&'a self, machine: &'a Machine) -> BoxFuture<'a, Result<Runner, BoxError>> {
            let runner = (self.0)(machine);
            Box::pin(async move { runner })
        }
    }
    FnWiring(f)
}

/// The runners a worker built, by machine: a run is driven by many handler invocations (each
/// replay, each `provide`), and building a runner may start MCP servers.
pub(crate) struct Runners {
    wiring: Arc<dyn Wiring>,
    built: Mutex<HashMap<String, Arc<Runner>>>,
    limit: usize,
}

impl Runners {
    pub(crate) fn new(wiring: Arc<dyn Wiring>, limit: usize) -> Self {
        Self {
            wiring,
            built: Mutex::new(HashMap::new()),
            limit,
        }
    }

    pub(crate) fn wiring(&self) -> &Arc<dyn Wiring> {
        &self.wiring
    }

    /// The runner of `machine`, built once.
    pub(crate) async fn get(&self, machine: &Machine) -> Result<Arc<Runner>, BoxError> {
        let key = serde_json::to_string(machine)?;
        if let Some(runner) = self.lock().get(&key) {
            return Ok(Arc::clone(runner));
        }
        let runner = Arc::new(self.wiring.runner(machine).await?);
        let mut built = self.lock();
        if built.len() >= self.limit {
            // Many machines: start over rather than grow without bound.
            built.clear();
        }
        Ok(Arc::clone(built.entry(key).or_insert(runner)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Runner>>> {
        self.built.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
