//! The model flags `ask`, `chat` and `fsm run|resume` share (one `#[command(flatten)]`
//! set), turned into the library's [`claij::options::ModelOptions`], whose rule makes the
//! pipeline's [`Config`] from them, the configuration's `[defaults]` and the compatibility matrix.

use std::num::NonZeroUsize;
use std::path::PathBuf;

use claij::interceptors::StructuredMode;

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
    /// `target/` under the current directory is not consulted).
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
    /// The library's options these flags give.
    pub(crate) fn to_options(&self) -> claij::options::ModelOptions {
        claij::options::ModelOptions {
            llm: self.llm.clone(),
            model_path: self.model_path.clone(),
            mode: self.mode.map(StructuredMode::from),
            max_retries: self.max_retries,
            max_tokens: self.max_tokens,
            max_reply_bytes: self.max_reply_bytes,
            temperature: self.temperature,
            seed: self.seed,
            threads: self.threads,
            matrix: self.matrix.clone(),
        }
    }
}

/// `--matrix FILE`: a file that reads as a compatibility matrix, or a usage error saying why.
fn matrix_file(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    claij::matrix::read(&path)
        .map_err(|err| crate::exit::one_line(&format!("{:#}", anyhow::Error::from(err))))?;
    Ok(path)
}

#[cfg(test)]
mod tests;
