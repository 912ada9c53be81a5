//! The model options `ask`, `chat`, `fsm run|resume` and `suite run` share (one `#[command(flatten)]`
//! set), and the one rule that turns them, the configuration's `[defaults]` and the compatibility
//! matrix into the pipeline's [`Config`]; where the matrix is read, a model it marks unsupported
//! for structured output gets a one-line warning on stderr.

use std::io::Write as _;
use std::num::NonZeroUsize;
use std::path::PathBuf;

use claij_interceptors::{Config, StructuredMode};

use crate::config::Defaults;
use crate::models::Choice;

/// Which model and how it is called.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct ModelOptions {
    /// The model: an alias (`claij config show` lists them; `local` is the embedded model) or
    /// PROVIDER:MODEL, PROVIDER one of openrouter, openai, anthropic, gemini, or a provider of the
    /// configuration's own (`kind = "openai-compatible"`). Default: the
    /// configuration's `defaults.llm`, else gemini-flash when OPENROUTER_API_KEY is set, else local.
    #[arg(long, value_name = "ALIAS|PROVIDER:MODEL")]
    pub llm: Option<String>,
    /// The local model's GGUF file; default SmolLM2-135M-Instruct.Q4_1.gguf in the model cache
    /// ($CLAIJ_MODEL_DIR, else $XDG_CACHE_HOME/claij/models, else ~/.cache/claij/models).
    #[arg(long, value_name = "FILE")]
    pub model_path: Option<PathBuf>,
    /// How the schema reaches the model.
    /// Default: the configuration's `defaults.mode`, else the compatibility matrix's choice, else auto.
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// Retries after the first attempt when a reply is invalid. Default: the configuration's
    /// `defaults.max_retries`, else the compatibility matrix's choice, else 3.
    #[arg(long, value_name = "N", value_parser = crate::args::retries)]
    pub max_retries: Option<usize>,
    /// Token limit per attempt: a reply that reaches it is cut there (and says so). Default: 512
    /// for the local model, else the provider's own limit.
    #[arg(long, value_name = "N", value_parser = crate::args::tokens)]
    pub max_tokens: Option<u32>,
    /// The longest reply searched for JSON, in bytes: a longer one is an invalid attempt whose
    /// retry asks for less. Default: the configuration's `defaults.max_reply_bytes`, else 1 MiB.
    #[arg(long, value_name = "BYTES", value_parser = crate::args::reply_bytes)]
    pub max_reply_bytes: Option<usize>,
    /// Sampling temperature (the local model decodes greedily without one).
    #[arg(long, value_name = "T", value_parser = crate::args::temperature)]
    pub temperature: Option<f32>,
    /// Seed, for backends that sample reproducibly.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Threads the local model computes with (default: the physical cores).
    #[arg(long, value_name = "N", value_parser = crate::args::threads)]
    pub threads: Option<NonZeroUsize>,
    /// The compatibility matrix to consult (default: `$XDG_DATA_HOME/claij/compat-matrix.json`,
    /// else `~/.local/share/claij/compat-matrix.json`, which `cargo xtask integration` writes; a
    /// `target/` under the current directory is not consulted). `suite run` never consults one.
    #[arg(long, value_name = "FILE", value_parser = matrix_file)]
    pub matrix: Option<PathBuf>,
}

/// `--mode`: how the schema reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Native structured output if the backend has it, else a forced tool, else the prompt.
    Auto,
    /// The provider's structured output (for the local model: constrained decoding).
    Native,
    /// The schema as a tool the model must call.
    Tool,
    /// The schema in the system prompt only.
    Prompted,
}

/// The retries when neither a flag, `[defaults]` nor the matrix says.
pub(crate) const DEFAULT_MAX_RETRIES: usize = 3;

/// The token limit a request to `provider` carries when `--max-tokens` does not say: the embedded
/// model's own default, so that a reply it cuts names the limit and its flag; a hosted provider
/// applies its own (`None`).
pub(crate) fn default_max_tokens(provider: &str) -> Option<u32> {
    (provider == "local").then(|| claij_local::LocalConfig::default().max_tokens)
}

impl From<Mode> for StructuredMode {
    fn from(mode: Mode) -> Self {
        match mode {
            Mode::Auto => StructuredMode::Auto,
            Mode::Native => StructuredMode::Native,
            Mode::Tool => StructuredMode::Tool,
            Mode::Prompted => StructuredMode::Prompted,
        }
    }
}

impl ModelOptions {
    /// The pipeline's knobs for `model`: each from its flag, else the configuration's `[defaults]`,
    /// else the matrix's `measured` choice (mode and retries), else the built-in default.
    pub(crate) fn config(
        &self,
        model: String,
        defaults: &Defaults,
        measured: Option<&Choice>,
    ) -> Config {
        let mut config = Config::new(model);
        config.max_retries = self
            .max_retries
            .or(defaults.max_retries)
            .or(measured.map(|c| c.max_retries))
            .unwrap_or(DEFAULT_MAX_RETRIES);
        config.structured = self
            .mode
            .map(StructuredMode::from)
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

    /// Whether the flags and `[defaults]` together set both the mode and the retries, leaving the
    /// compatibility matrix nothing to decide.
    pub(crate) fn decided(&self, defaults: &Defaults) -> bool {
        (self.mode.is_some() || defaults.mode.is_some())
            && (self.max_retries.is_some() || defaults.max_retries.is_some())
    }

    /// What the compatibility matrix (`--matrix`, else the user's, when there is one) chooses for
    /// `model` (or the `--llm` text naming it), when the flags and `[defaults]` leave it something
    /// to decide. Whatever they decide, a model the matrix marks unsupported for structured output
    /// gets a warning on stderr first, as does a `--matrix` file that cannot be read.
    pub(crate) fn matrix_choice(&self, model: &str, defaults: &Defaults) -> Option<Choice> {
        let path = self.matrix.clone().or_else(crate::models::default_path)?;
        let matrix = match crate::models::read(&path) {
            Ok(matrix) => matrix,
            Err(err) => {
                // The user's own file is best effort; a file named on the command line is not.
                if self.matrix.is_some() {
                    warn(&format!(
                        "warning: {}",
                        crate::one_line(&format!("{err:#}"))
                    ));
                }
                return None;
            }
        };
        let mut names = vec![model];
        if let Some(llm) = self.llm.as_deref() {
            names.push(llm);
        }
        if let Some(why) = crate::models::unsupported(&matrix, &names) {
            warn(&unsupported_warning(
                self.llm.as_deref().unwrap_or(model),
                &why,
            ));
        }
        if self.decided(defaults) {
            return None;
        }
        crate::models::choice_for(&matrix, &names)
    }
}

/// The warning for a model the compatibility matrix marks unsupported for structured output.
pub(crate) fn unsupported_warning(model: &str, why: &str) -> String {
    format!(
        "warning: the compatibility matrix marks {model} unsupported for structured output: {why}; \
         replies may never validate"
    )
}

/// `--matrix FILE`: a file that reads as a compatibility matrix, or a usage error saying why.
fn matrix_file(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    crate::models::read(&path).map_err(|err| crate::one_line(&format!("{err:#}")))?;
    Ok(path)
}

/// One line on stderr; a closed stderr is no reason to stop.
fn warn(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The line saying what the compatibility matrix chose, for stderr.
pub(crate) fn matrix_notice(choice: &Choice) -> String {
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
