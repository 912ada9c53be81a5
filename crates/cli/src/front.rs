//! The front door as the command line uses it: one [`Claij`] per process, built by `main` on first
//! use from `--config` and the environment and handed down to the commands; its notices go to
//! stderr (the fallback's unless quieted by `--json`, the local model's load on a terminal only).

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::{Result, anyhow};
use claij::{Claij, Notice};

/// The process's [`Claij`], built once when a command first needs it.
#[derive(Debug)]
pub(crate) struct Front {
    /// `--config FILE`.
    config: Option<PathBuf>,
    /// The value, or the error building it said (`{:#}`), built once.
    claij: OnceLock<Result<Arc<Claij>, String>>,
    /// Whether the fallback's lessons stay off stderr (`--json`, whose stderr is for errors).
    quiet: Arc<AtomicBool>,
}

impl Front {
    /// The front door of a run with `config` (`--config`).
    pub(crate) fn new(config: Option<PathBuf>) -> Self {
        Self {
            config,
            claij: OnceLock::new(),
            quiet: Arc::default(),
        }
    }

    /// The process's [`Claij`]: the settings read once (`--config`, else the environment), keys
    /// and `${VAR}` values from the environment, the fallback memory in the user's cache.
    ///
    /// # Errors
    ///
    /// The configuration cannot be read or is invalid (the same error each time).
    pub(crate) fn claij(&self) -> Result<&Claij> {
        self.shared_ref().map(|claij| &**claij)
    }

    /// The process's [`Claij`], shared ([`Front::claij`]): for what outlives a borrow (a state
    /// machine's wiring, a Restate worker).
    ///
    /// # Errors
    ///
    /// As [`Front::claij`].
    pub(crate) fn shared(&self) -> Result<Arc<Claij>> {
        self.shared_ref().map(Arc::clone)
    }

    fn shared_ref(&self) -> Result<&Arc<Claij>> {
        self.claij
            .get_or_init(|| {
                let settings = claij::settings::Settings::from_env_with(self.config.as_deref())
                    .map_err(|e| format!("{:#}", anyhow::Error::from(e)))?;
                let quiet = Arc::clone(&self.quiet);
                Ok(Arc::new(
                    Claij::new(settings)
                        .with_env()
                        .on_notice(move |notice| tell(notice, &quiet)),
                ))
            })
            .as_ref()
            .map_err(|e| anyhow!("{e}"))
    }

    /// The process's settings ([`Front::claij`]).
    ///
    /// # Errors
    ///
    /// As [`Front::claij`].
    pub(crate) fn settings(&self) -> Result<&claij::settings::Settings> {
        Ok(self.claij()?.settings())
    }

    /// Keeps the fallback's lessons off stderr (`--json`), or not.
    pub(crate) fn set_quiet(&self, quiet: bool) {
        self.quiet.store(quiet, Ordering::Relaxed);
    }
}

/// A notice on stderr: the local model's load on a terminal only (it takes a second or more), a
/// lesson of the fallback unless `quiet`. Best effort: a closed stderr must not fail the call.
fn tell(notice: &Notice, quiet: &AtomicBool) {
    let mut err = std::io::stderr();
    let show = match notice {
        Notice::LoadingLocal { .. } => err.is_terminal(),
        _ => !quiet.load(Ordering::Relaxed),
    };
    if show {
        let _ = writeln!(err, "{notice}");
    }
}
