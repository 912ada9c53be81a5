//! [`Claij`], the value a program builds once: the [`Settings`], where provider keys and `${VAR}`
//! values come from, the embedded models it has loaded and the structured-output fallback memory;
//! it opens models by name. Nothing is shared between two values, and nothing is process-wide.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use claij_backends::openai::FallbackMemory;

use crate::error::Result;
use crate::model::Opened;
use crate::settings::{Resolved, Settings};

/// Reads a variable (a provider key, a `${NAME}` of the configuration); `None`: unset.
type Vars = Arc<dyn Fn(&str) -> Option<OsString> + Send + Sync>;

/// Told what happens as it happens.
type Listener = Box<dyn Fn(&Notice) + Send + Sync>;

/// Something worth telling the user while it happens; [`Claij::on_notice`] receives them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice {
    /// The embedded model is being loaded (a second or more).
    LoadingLocal {
        /// The model file.
        path: PathBuf,
    },
    /// A server of the configuration's own rejected native structured output: what is used from
    /// now on, and whether it was remembered (the whole line, for people).
    Fallback {
        /// What was learned and where it was kept.
        message: String,
    },
    /// A conversation's schema extensions crossed the compaction budget and a compaction was
    /// proposed: what the approver decided, the token figures and each rewrite.
    Compaction {
        /// The report ([`crate::extensions::CompactionReport`]'s `Display`).
        message: String,
    },
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::LoadingLocal { path } => {
                write!(f, "loading the local model from {}", path.display())
            }
            Notice::Fallback { message } | Notice::Compaction { message } => f.write_str(message),
        }
    }
}

/// Where notices go: set after the fallback memory (which tells it) may already exist.
#[derive(Default)]
pub(crate) struct Notices {
    listener: RwLock<Option<Listener>>,
}

impl Notices {
    /// Tells `notice` to the listener, if there is one.
    pub(crate) fn tell(&self, notice: &Notice) {
        let listener = self.listener.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(listener) = listener.as_ref() {
            listener(notice);
        }
    }
}

/// The embedded models a [`Claij`] has loaded, by canonical path: every opener of the same file
/// (`local`, an alias, the default choice, voters, a state's model) shares one backend, so the
/// model is read once per value.
#[cfg(feature = "local")]
pub(crate) type LocalModels =
    std::sync::Mutex<std::collections::BTreeMap<PathBuf, Arc<claij_local::LocalBackend>>>;

/// claij, configured: settings, variables, loaded models and the fallback memory; it opens models
/// by name ([`Claij::open`]).
///
/// ```
/// use claij::{Claij, settings::Settings};
///
/// let settings = Settings::builder()
///     .alias("fast", "openai:gpt-4o-mini")
///     .build()?;
/// let claij = Claij::new(settings).with_var("OPENAI_API_KEY", "sk-test");
/// let resolved = claij.resolve("fast")?;
/// assert_eq!(resolved.llm.to_string(), "openai:gpt-4o-mini");
/// # Ok::<(), claij::Error>(())
/// ```
pub struct Claij {
    settings: Settings,
    vars: Vars,
    #[cfg(feature = "local")]
    pub(crate) local: LocalModels,
    fallback_file: Option<PathBuf>,
    fallback: OnceLock<Arc<FallbackMemory>>,
    pub(crate) notices: Arc<Notices>,
    /// The base URLs whose OpenRouter model list this value failed to fetch: not fetched (nor
    /// warned about) again by this value; the next run tries again.
    #[cfg(feature = "openrouter")]
    pub(crate) model_list_failed: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl fmt::Debug for Claij {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Claij")
            .field("settings", &self.settings)
            .field("fallback_file", &self.fallback_file)
            .finish_non_exhaustive()
    }
}

impl Claij {
    /// claij with `settings`, no variables (give keys with [`Claij::with_var`] or
    /// [`Claij::with_vars`]), an empty fallback memory kept for this value only.
    #[must_use]
    pub fn new(settings: Settings) -> Self {
        Self {
            settings,
            vars: Arc::new(|_| None),
            #[cfg(feature = "local")]
            local: LocalModels::default(),
            fallback_file: None,
            fallback: OnceLock::new(),
            notices: Arc::default(),
            #[cfg(feature = "openrouter")]
            model_list_failed: std::sync::Mutex::default(),
        }
    }

    /// claij as the environment says: the settings [`Settings::from_env`] finds, keys and
    /// `${VAR}` values from the process's environment, the fallback memory kept in
    /// `$XDG_CACHE_HOME/claij/structured-output.json` (else `~/.cache/claij/...`).
    ///
    /// # Errors
    ///
    /// As [`Settings::from_env`].
    pub fn from_env() -> Result<Self> {
        Ok(Self::new(Settings::from_env()?).with_env())
    }

    /// The same, its variables read from the process's environment, and its fallback memory
    /// kept in the cache file the environment names ([`crate::fallback::path`]).
    #[must_use]
    pub fn with_env(self) -> Self {
        let file = crate::fallback::path(|name| std::env::var_os(name));
        self.with_vars(|name| std::env::var_os(name))
            .with_fallback_file(file)
    }

    /// The same, its variables read with `vars` (`None`: unset).
    #[must_use]
    pub fn with_vars(
        mut self,
        vars: impl Fn(&str) -> Option<OsString> + Send + Sync + 'static,
    ) -> Self {
        self.vars = Arc::new(vars);
        self
    }

    /// The same with the variable `name` set to `value` (over the earlier variables).
    #[must_use]
    pub fn with_var(mut self, name: &str, value: impl Into<OsString>) -> Self {
        let earlier = Arc::clone(&self.vars);
        let (name, value) = (name.to_owned(), value.into());
        self.vars = Arc::new(move |wanted| {
            if wanted == name {
                Some(value.clone())
            } else {
                earlier(wanted)
            }
        });
        self
    }

    /// The same, its fallback memory read from and written to `file` (`None`: this value only).
    #[must_use]
    pub fn with_fallback_file(mut self, file: Option<PathBuf>) -> Self {
        self.fallback_file = file;
        self.fallback = OnceLock::new();
        self
    }

    /// The same, telling `listener` what happens as it happens ([`Notice`]).
    #[must_use]
    pub fn on_notice(self, listener: impl Fn(&Notice) + Send + Sync + 'static) -> Self {
        *self
            .notices
            .listener
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(Box::new(listener));
        self
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The variable `name` as this value sees it; empty counts as unset.
    #[must_use]
    pub fn var(&self, name: &str) -> Option<OsString> {
        (self.vars)(name).filter(|v| !v.is_empty())
    }

    /// Resolves a model name: an alias, `local`, or `provider:model` ([`Settings::resolve`]).
    ///
    /// # Errors
    ///
    /// The name is neither an alias nor `provider:model`, or names an unknown provider.
    pub fn resolve(&self, name: &str) -> Result<Resolved> {
        self.settings.resolve(name)
    }

    /// Opens the model `name` (an alias, `local` or `provider:model`), its key read from the
    /// provider's variable.
    ///
    /// # Errors
    ///
    /// The name does not resolve; the provider's key is not set; the provider or the local model
    /// is not in this build; the local model cannot be loaded.
    pub fn open(&self, name: &str) -> Result<Opened> {
        crate::model::open(Some(name), None, self)
    }

    /// Opens `name`, or without one the default model (the settings' `defaults.llm`, else
    /// OpenRouter's default model when its key is set, else the local model); `model_path`: the
    /// local model's file.
    ///
    /// # Errors
    ///
    /// As [`Claij::open`]; a `model_path` with a hosted model.
    pub fn open_with(&self, name: Option<&str>, model_path: Option<&Path>) -> Result<Opened> {
        crate::model::open(name, model_path, self)
    }

    /// The structured-output fallback memory of this value, read from its file on first use.
    pub fn fallback_memory(&self) -> Arc<FallbackMemory> {
        self.fallback
            .get_or_init(|| {
                let notices = Arc::clone(&self.notices);
                let memory = crate::fallback::open(self.fallback_file.clone(), move |line| {
                    notices.tell(&Notice::Fallback { message: line });
                });
                Arc::new(memory)
            })
            .clone()
    }
}

#[cfg(test)]
mod tests;
