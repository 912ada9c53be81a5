//! Interrupts: a per-run handle holding the flag and the cleanup hooks, changed together under one
//! lock, so no interrupt can fall between a check and a registration.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

type Hook = Box<dyn FnOnce() + Send>;

/// Stops a run from outside. Clones share the flag.
///
/// Actions that start work outside their future (a subprocess, an MCP call on another task) register
/// a cleanup with [`Interrupt::on_interrupt`]; [`Interrupt::interrupt`] sets the flag and runs every
/// hook once; the runner drops the action in flight (which cancels model calls) and takes the
/// `interrupted` transition.
#[derive(Clone)]
pub struct Interrupt {
    inner: Arc<Mutex<Inner>>,
    flag: watch::Sender<bool>,
}

struct Inner {
    interrupted: bool,
    hooks: Vec<Hook>,
}

impl Default for Interrupt {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interrupt")
            .field("interrupted", &self.is_interrupted())
            .finish_non_exhaustive()
    }
}

impl Interrupt {
    /// A handle not interrupted yet.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                interrupted: false,
                hooks: Vec::new(),
            })),
            flag: watch::Sender::new(false),
        }
    }

    /// Whether [`Interrupt::interrupt`] was called.
    pub fn is_interrupted(&self) -> bool {
        self.lock().interrupted
    }

    /// Sets the flag and runs every registered hook (once; later calls do nothing).
    pub fn interrupt(&self) {
        let hooks = {
            let mut inner = self.lock();
            if inner.interrupted {
                return;
            }
            inner.interrupted = true;
            std::mem::take(&mut inner.hooks)
        };
        self.flag.send_replace(true);
        for hook in hooks {
            hook();
        }
    }

    /// Runs `hook` on interrupt; at once if the run is already interrupted.
    pub fn on_interrupt(&self, hook: impl FnOnce() + Send + 'static) {
        let mut inner = self.lock();
        if inner.interrupted {
            drop(inner);
            hook();
        } else {
            inner.hooks.push(Box::new(hook));
        }
    }

    /// Completes when the run is interrupted.
    pub async fn interrupted(&self) {
        let mut receiver = self.flag.subscribe();
        // `wait_for` checks the current value first; an error means the sender is gone, which cannot
        // happen while `self` holds it.
        let _ = receiver.wait_for(|interrupted| *interrupted).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
