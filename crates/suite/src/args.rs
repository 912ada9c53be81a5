//! The model flags of `claij-suite run` (those of `claij ask`, without `--matrix`: the suites
//! measure what the matrix records and never consult one) and the value parsers of its numeric
//! flags, each checked against its range when the command line is parsed (a usage error naming the
//! range, exit 2).

use std::num::NonZeroUsize;
use std::path::PathBuf;

use claij::settings::Defaults;
use claij_interceptors::{Config, StructuredMode};

// The parsers and ranges `claij ask` checks too: one definition, the library's.
/// `--timeout`: seconds, a finite number above 0 and at most a day.
pub(crate) use claij::options::parse::seconds;
use claij::options::parse::{reply_bytes, retries, temperature, threads, tokens};

/// Which model and how it is called.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct ModelFlags {
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
    /// How the schema reaches the model (a test that pins a mode keeps it).
    /// Default: the configuration's `defaults.mode`, else auto.
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// Retries after the first attempt when a reply is invalid. Default: 1, the design's test
    /// setting.
    #[arg(long, value_name = "N", value_parser = retries)]
    pub max_retries: Option<usize>,
    /// Token limit per attempt: a reply that reaches it is cut there (and says so). Default: 512
    /// for the local model, else the provider's own limit.
    #[arg(long, value_name = "N", value_parser = tokens)]
    pub max_tokens: Option<u32>,
    /// The longest reply searched for JSON, in bytes: a longer one is an invalid attempt whose
    /// retry asks for less. Default: the configuration's `defaults.max_reply_bytes`, else 1 MiB.
    #[arg(long, value_name = "BYTES", value_parser = reply_bytes)]
    pub max_reply_bytes: Option<usize>,
    /// Sampling temperature (the local model decodes greedily without one).
    #[arg(long, value_name = "T", value_parser = temperature)]
    pub temperature: Option<f32>,
    /// Seed, for backends that sample reproducibly.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Threads the local model computes with (default: the physical cores).
    #[arg(long, value_name = "N", value_parser = threads)]
    pub threads: Option<NonZeroUsize>,
}

/// `--mode`: how the schema reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Mode {
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

impl ModelFlags {
    /// The pipeline's knobs for `model` ([`claij::options::ModelOptions::config`]), never from a
    /// compatibility matrix.
    pub(crate) fn config(&self, model: String, defaults: &Defaults) -> Config {
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
            matrix: None,
        }
        .config(model, defaults, None)
    }
}
