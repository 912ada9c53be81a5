//! `claij ask`: one turn with a model, answered as a JSON document valid against a schema.
//!
//! The flow: choose and open the backend ([`llm`]), load the conversation ([`session`]), run the
//! pipeline (schema deltas from the interceptors, the validation-retry loop) on a current-thread
//! runtime, save the conversation, print the value and what each attempt cost ([`report`]).

pub(crate) mod llm;
mod report;
mod session;
#[cfg(test)]
mod tests;

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context as _, Result};
use claij_interceptors::builtin::memory::Memory;
use claij_interceptors::{Chain, Config, Error, Pipeline, StructuredMode};

use crate::Status;
use crate::input;

use self::llm::Llm;
use self::session::Session;

/// Arguments of `claij ask`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to ask.
    prompt: String,
    /// The response schema (a JSON Schema file); default the base response schema (`answer`, `state`).
    #[arg(long, short, value_name = "FILE")]
    schema: Option<String>,
    /// The model: `local` (the embedded model) or PROVIDER:MODEL, PROVIDER one of openrouter, openai,
    /// anthropic, gemini. Default: openrouter:google/gemini-2.5-flash when OPENROUTER_API_KEY is set,
    /// else local.
    #[arg(long, value_name = "local|PROVIDER:MODEL", value_parser = llm::parse)]
    llm: Option<Llm>,
    /// The local model's GGUF file; default SmolLM2-135M-Instruct.Q4_1.gguf in the model cache
    /// ($CLAIJ_MODEL_DIR, else $XDG_CACHE_HOME/claij/models, else ~/.cache/claij/models).
    #[arg(long, value_name = "FILE")]
    model_path: Option<PathBuf>,
    /// Interceptors to run, comma-separated, in order.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "NAME[,NAME...]")]
    interceptors: Vec<Interceptor>,
    /// Carry the conversation (turn counter and memory) in this JSON file: read before the turn if it
    /// exists, written after a valid answer. Use with `--interceptors memory`.
    #[arg(long, value_name = "FILE")]
    memory: Option<PathBuf>,
    /// How the schema reaches the model.
    #[arg(long, value_enum, default_value_t = Mode::Auto)]
    mode: Mode,
    /// Retries after the first attempt when a reply is invalid.
    #[arg(long, default_value_t = 3, value_name = "N")]
    max_retries: usize,
    /// Token limit per attempt.
    #[arg(long, value_name = "N")]
    max_tokens: Option<u32>,
    /// Sampling temperature (the local model decodes greedily without one).
    #[arg(long, value_name = "T")]
    temperature: Option<f32>,
    /// Seed, for backends that sample reproducibly.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Threads the local model computes with (default: the physical cores).
    #[arg(long, value_name = "N")]
    threads: Option<NonZeroUsize>,
    /// Print `{"value", "attempts", "usage", "elapsed_ms"}` on stdout; stderr only for errors.
    #[arg(long)]
    json: bool,
}

/// The interceptors `--interceptors` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Interceptor {
    /// Every reply carries a `summary`; later turns are reminded of them.
    Memory,
}

/// `--mode`: how the schema reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    /// Native structured output if the backend has it, else a forced tool, else the prompt.
    Auto,
    /// The provider's structured output (for the local model: constrained decoding).
    Native,
    /// The schema as a tool the model must call.
    Tool,
    /// The schema in the system prompt only.
    Prompted,
}

impl Args {
    /// `--threads`: the process sets it in the environment before any thread starts.
    pub fn threads(&self) -> Option<NonZeroUsize> {
        self.threads
    }
}

/// Asks once; exit 0 with a valid answer, 1 when every attempt was invalid.
pub fn run(args: &Args) -> Result<Status> {
    let base = match &args.schema {
        Some(path) => {
            let schema = input::read_json(path)?;
            claij_schema::check(&schema).with_context(|| input::name(path).to_owned())?;
            Some(schema)
        }
        None => None,
    };
    let session = match &args.memory {
        Some(path) => Session::load(path)?,
        None => Session::default(),
    };
    let opened = llm::open(args.llm.as_ref(), args.model_path.as_deref())?;
    if let Some(notice) = &opened.notice
        && !args.json
    {
        report::notice(notice)?;
    }
    let mut pipeline = Pipeline::new(opened.backend, config(args, opened.model), chain(args));
    if base.is_some() {
        pipeline = pipeline.with_base_schema(base);
    }
    let mut ctx = session.into_context();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let started = Instant::now();
    let result = runtime.block_on(pipeline.ask(&mut ctx, &args.prompt));
    let elapsed = started.elapsed();
    match result {
        Ok(answer) => {
            if let Some(path) = &args.memory {
                Session::of(&ctx).save(path)?;
            }
            report::answer(&answer, elapsed, args.json)?;
            Ok(Status::Ok)
        }
        Err(Error::RetriesExhausted(exhausted)) => {
            report::exhausted(&exhausted, elapsed, args.json)?;
            Ok(Status::Invalid)
        }
        Err(e) => Err(e.into()),
    }
}

/// The pipeline's knobs from the arguments.
fn config(args: &Args, model: String) -> Config {
    let mut config = Config::new(model);
    config.max_retries = args.max_retries;
    config.structured = match args.mode {
        Mode::Auto => StructuredMode::Auto,
        Mode::Native => StructuredMode::Native,
        Mode::Tool => StructuredMode::Tool,
        Mode::Prompted => StructuredMode::Prompted,
    };
    config.max_tokens = args.max_tokens;
    config.temperature = args.temperature;
    config.seed = args.seed;
    config
}

/// The interceptors named by `--interceptors`, in order, each once.
fn chain(args: &Args) -> Chain {
    let mut chain = Chain::new();
    let mut added = Vec::new();
    for &name in &args.interceptors {
        if added.contains(&name) {
            continue;
        }
        added.push(name);
        match name {
            Interceptor::Memory => chain.push(Memory::default()),
        }
    }
    chain
}
