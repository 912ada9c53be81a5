//! The model options a request is made with (the model, its mode, retries, limits, sampling),
//! and the one rule that turns them, the configuration's `[defaults]` and the compatibility
//! matrix into the pipeline's [`Config`]: each from its option, else `[defaults]`, else the
//! matrix's measured choice, else the built-in default. Where the matrix is read, a model it
//! marks unsupported for structured output comes back with a warning for the caller to show.

pub mod parse;

use std::num::NonZeroUsize;
use std::path::PathBuf;

use claij_interceptors::{Config, StructuredMode};

use crate::matrix::Choice;
use crate::settings::{Defaults, Settings};

/// The most retries an option or the configuration may ask for per call.
pub const MAX_RETRIES: usize = 100;

/// The range of `max_reply_bytes` (option and `[defaults]`): 1 KiB to 1 GiB.
pub const REPLY_BYTES: std::ops::RangeInclusive<usize> = 1024..=1 << 30;

/// The largest token limit per model call.
pub const MAX_TOKENS: u32 = 10_000_000;

/// The most threads the local model may be given.
pub const MAX_THREADS: usize = 1024;

/// The highest sampling temperature (the providers' widest range is 0 to 2).
pub const MAX_TEMPERATURE: f32 = 2.0;

/// Which model and how it is called; `None` leaves a knob to `[defaults]`, the matrix or the
/// built-in default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelOptions {
    /// The model: an alias, `local` or `provider:model`; `None`: the configuration's
    /// `defaults.llm`, else gemini-flash when OpenRouter's key is set, else local.
    pub llm: Option<String>,
    /// The local model's GGUF file; `None`: the default file in the model cache.
    pub model_path: Option<PathBuf>,
    /// How the schema reaches the model.
    pub mode: Option<StructuredMode>,
    /// Retries after the first attempt when a reply is invalid.
    pub max_retries: Option<usize>,
    /// Token limit per attempt.
    pub max_tokens: Option<u32>,
    /// The longest reply searched for JSON, in bytes.
    pub max_reply_bytes: Option<usize>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Seed, for backends that sample reproducibly.
    pub seed: Option<u64>,
    /// Threads the local model computes with.
    pub threads: Option<NonZeroUsize>,
    /// The compatibility matrix to consult; `None`: the user's, when there is one
    /// ([`crate::matrix::default_path`]).
    pub matrix: Option<PathBuf>,
}

/// What the compatibility matrix says about a model: its choice (when the options and
/// `[defaults]` leave it something to decide) and warnings for the user.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MatrixAdvice {
    /// The matrix's choice of mode and retries.
    pub choice: Option<Choice>,
    /// One-line warnings (a model marked unsupported, a named matrix that cannot be read).
    pub warnings: Vec<String>,
}

/// The retries when neither a flag, `[defaults]` nor the matrix says.
pub const DEFAULT_MAX_RETRIES: usize = 3;

/// The token limit a request to `provider` carries when the options do not say: the embedded
/// model's own default, so that a reply it cuts names the limit; a hosted provider applies its
/// own (`None`).
pub fn default_max_tokens(provider: &str) -> Option<u32> {
    #[cfg(feature = "local")]
    {
        (provider == "local").then(|| claij_local::LocalConfig::default().max_tokens)
    }
    #[cfg(not(feature = "local"))]
    {
        let _ = provider;
        None
    }
}

impl ModelOptions {
    /// The pipeline's knobs for `model`: each from its flag, else the configuration's `[defaults]`,
    /// else the matrix's `measured` choice (mode and retries), else the built-in default.
    pub fn config(&self, model: String, defaults: &Defaults, measured: Option<&Choice>) -> Config {
        let mut config = Config::new(model);
        config.max_retries = self
            .max_retries
            .or(defaults.max_retries)
            .or(measured.map(|c| c.max_retries))
            .unwrap_or(DEFAULT_MAX_RETRIES);
        config.structured = self
            .mode
            .or(defaults.mode)
            .or(measured.and_then(|c| c.mode))
            .unwrap_or_default();
        config.max_tokens = self.max_tokens;
        if let Some(limit) = self.max_reply_bytes.or(defaults.max_reply_bytes) {
            config.max_reply_bytes = limit;
        }
        config.temperature = self.temperature;
        config.seed = self.seed;
        config
    }

    /// Refuses a mode the flags (`--mode`) or `[defaults]` force on a model that lacks it, before
    /// any request: `tool` where `backend` has no tools for `model`, `native` where it has no
    /// native structured output. A mode the compatibility matrix chose, and `auto`, always pass.
    ///
    /// # Errors
    ///
    /// [`crate::ErrorKind::Model`], one line naming the flag (or the configuration key) and the
    /// model.
    pub fn check_mode(
        &self,
        defaults: &Defaults,
        backend: &dyn claij_backends::Backend,
        model: &str,
    ) -> crate::Result<()> {
        let (mode, source) = match (self.mode, defaults.mode) {
            (Some(mode), _) => (mode, "--mode"),
            (None, Some(mode)) => (mode, "defaults.mode in the configuration,"),
            (None, None) => return Ok(()),
        };
        let capabilities = backend.capabilities(model);
        let (name, lacking) = match mode {
            StructuredMode::Tool if !capabilities.tools => ("tool", "tools"),
            StructuredMode::Native if !capabilities.native_json_schema => {
                ("native", "native structured output")
            }
            _ => return Ok(()),
        };
        let provider = backend.provider();
        Err(crate::Error::model(format!(
            "{source} {name}: {provider}:{model} has no {lacking}; use --mode auto or --mode prompted"
        )))
    }

    /// Whether the flags and `[defaults]` together set both the mode and the retries, leaving the
    /// compatibility matrix nothing to decide.
    pub fn decided(&self, defaults: &Defaults) -> bool {
        (self.mode.is_some() || defaults.mode.is_some())
            && (self.max_retries.is_some() || defaults.max_retries.is_some())
    }

    /// What the compatibility matrix (`matrix`, else the user's in the settings' data directory,
    /// when there is one) chooses for
    /// `model` (or the `llm` text naming it), when the options and `[defaults]` leave it
    /// something to decide. Whatever they decide, a model the matrix marks unsupported for
    /// structured output comes with a warning, as does a named matrix file that cannot be read.
    pub fn matrix_choice(&self, model: &str, settings: &Settings) -> MatrixAdvice {
        let defaults = &settings.defaults;
        let mut advice = MatrixAdvice::default();
        let user = || crate::matrix::default_path(settings.data_dir.as_deref());
        let Some(path) = self.matrix.clone().or_else(user) else {
            return advice;
        };
        let matrix = match crate::matrix::read(&path) {
            Ok(matrix) => matrix,
            Err(err) => {
                // The user's own file is best effort; a file named by the caller is not.
                if self.matrix.is_some() {
                    let text = crate::one_line(&crate::error_chain(&err));
                    advice.warnings.push(format!("warning: {text}"));
                }
                return advice;
            }
        };
        let mut names = vec![model];
        if let Some(llm) = self.llm.as_deref() {
            names.push(llm);
        }
        if let Some(why) = crate::matrix::unsupported(&matrix, &names) {
            let named = self.llm.as_deref().unwrap_or(model);
            advice.warnings.push(unsupported_warning(named, &why));
        }
        if !self.decided(defaults) {
            advice.choice = crate::matrix::choice_for(&matrix, &names);
        }
        advice
    }
}

/// The warning for a model the compatibility matrix marks unsupported for structured output.
pub fn unsupported_warning(model: &str, why: &str) -> String {
    format!(
        "warning: the compatibility matrix marks {model} unsupported for structured output: {why}; \
         replies may never validate"
    )
}

/// The line saying what the compatibility matrix chose, for stderr.
pub fn matrix_notice(choice: &Choice) -> String {
    format!(
        "compatibility matrix: {} with {} {} for {} ({})",
        match choice.mode {
            Some(StructuredMode::Native) => "native output",
            Some(StructuredMode::Tool) => "a forced tool",
            Some(StructuredMode::Prompted) => "the schema in the prompt",
            _ => "auto mode",
        },
        choice.max_retries,
        if choice.max_retries == 1 {
            "retry"
        } else {
            "retries"
        },
        choice.model,
        choice.why
    )
}

#[cfg(test)]
mod tests;
