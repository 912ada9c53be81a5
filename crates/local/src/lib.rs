//! claij's embedded model: a [`Backend`] run in-process on the CPU, whose output is constrained to
//! the request's JSON Schema: structured answers with no network, no key and no server.
//!
//! [`LocalBackend`] loads a llama-architecture GGUF file (the default is SmolLM2-135M-Instruct, fetched
//! by `cargo xtask model` in a claij checkout) with [candle], builds its tokenizer and chat template
//! from the file's own metadata, and decodes with [llguidance]: at every step the tokens that cannot
//! continue a schema-valid document are masked out, so a constrained answer is valid JSON of the
//! schema's shape by construction. Give it schemas compiled with claij-schema's `Dialect::Llguidance`
//! (the pipeline does): that dialect inlines references, rewrites `oneOf`, drops what the engine
//! cannot enforce and bounds strings and arrays so a small model cannot loop inside a string forever.
//! A schema the engine still rejects is retried in its lenient mode, then refused with
//! [`Error::BadRequest`]. Whatever the grammar does not enforce, the caller's validator still checks.
//!
//! ```no_run
//! use claij_local::LocalBackend;
//! use claij_backends::{Backend, ChatRequest, Message};
//! use serde_json::json;
//!
//! let backend = LocalBackend::load("SmolLM2-135M-Instruct.Q4_1.gguf")?;
//! let schema = json!({
//!     "type": "object",
//!     "properties": {"answer": {"type": "string", "maxLength": 80}},
//!     "required": ["answer"],
//!     "additionalProperties": false
//! });
//! let request = ChatRequest::new("local")
//!     .message(Message::user("What is the capital of France?"))
//!     .structured("response", schema, true)
//!     .max_tokens(64);
//! let response = futures_executor::block_on(backend.complete(&request))?;
//! let value: serde_json::Value = serde_json::from_str(&response.content)?;
//! assert!(value["answer"].is_string());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! How it runs:
//! - The model is loaded once and shared by clones of the backend; requests take turns (one
//!   generation at a time), each on its own blocking thread, so an async runtime is never blocked.
//! - A prefix cache keeps the keys and values of earlier prompts: a request that starts with the
//!   same tokens as one before it (a retry, the next FSM state with the same system prompt and
//!   schema, the next chat turn) reads only the rest ([`Timings::cached_tokens`],
//!   [`Usage::cached_tokens`]). Prompts are read in chunks of 32 tokens and reused in whole chunks,
//!   so the arithmetic, and a greedy answer, is the same with or without the cache. Its memory is
//!   bounded by [`LocalConfig::kv_cache_mib`] (least recently used prompts evicted first).
//! - Prompts are read with each layer's weights expanded to f32 for dense matrix products
//!   ([`PrefillWeights`]); generated tokens use the quantised weights.
//! - Dropping the future of [`Backend::complete`] (or the stream) stops generation before the next
//!   token; claij-backends' `Cancellable` (its `http` feature) works too.
//! - Weights in Q4_1, for which candle has no fast CPU kernel, are re-quantised to Q8_0 once and
//!   cached next to the model file ([`Requantize`]).
//! - candle sizes its thread pools once per process from `CANDLE_NUM_THREADS` / `RAYON_NUM_THREADS`
//!   (default: the physical cores); [`LocalBackend::threads`] says what it uses. Set them before the
//!   first load; the `claij` binary's `--threads` does.
//! - A token-limit stop is reported as [`FinishReason::Length`], so a caller knows the answer may be
//!   cut off. A constrained document is closed rather than cut: near the limit, a sampled token is
//!   kept only when the grammar's shortest way to finish the document still fits after it, otherwise
//!   that completion is written instead ([`Generation::closed_early`]), so the reply stays valid.
//!   Only a limit too small for the shortest document (or one needing over 256 tokens to finish)
//!   still cuts it. Usage counts prompt and generated tokens; the cost is zero.
//! - Where the grammar masks a token the model wanted (`",` after the last property), its
//!   probability goes to its longest allowed prefix (`"`), so strings end where the model meant them
//!   to, not with a comma inside (`"IT,"`).
//! - Without a temperature it decodes greedily: the same request gives the same reply. Its
//!   capabilities say so ([`Capabilities::greedy_default`]), and the pipeline samples its retries.
//!
//! [`Embedder`] is the crate's second model: a sentence encoder (all-MiniLM-L6-v2, fetched by
//! `cargo xtask embed-model` into [`embed_model_dir`]) giving one L2-normalised vector per input, as
//! sentence-transformers computes it:
//!
//! ```no_run
//! let embedder = claij_local::Embedder::open(claij_local::embed_model_dir(|name| std::env::var_os(name)))?;
//! let vectors = embedder.embed(&["My dog is called Biscuit.", "What is my dog's name?"])?;
//! assert_eq!(vectors[0].len(), embedder.dim());
//! # Ok::<(), claij_local::EmbedError>(())
//! ```
//!
//! The [`Backend`] trait and the request and response types are claij-backends'; this crate is
//! the one that pulls in candle, llguidance and tokenizers, so claij-backends builds without them.
//!
//! [candle]: https://docs.rs/candle-core
//! [llguidance]: https://docs.rs/llguidance

mod cache;
mod counter;
mod embed;
mod generate;
mod load;
mod model;
mod sample;
#[cfg(test)]
mod tests;
mod vocab;

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_channel::{mpsc, oneshot};
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use serde_json::Value;

use self::cache::PrefixCache;
pub use self::counter::TokenCounter;
pub use self::embed::{
    CONFIG_FILE, EMBED_MODEL_DIR, EmbedConfig, EmbedError, Embedder, TOKENIZER_FILE, WEIGHTS_FILE,
    cosine, embed_model_dir,
};
use self::model::{Model, Sequence};
use self::sample::Sampler;
use self::vocab::Vocab;
use claij_backends::{
    Backend, BoxFuture, BoxStream, Capabilities, ChatRequest, ChatResponse, Error, ErrorContext,
    FinishReason, SchemaDialect, StreamEvent, Usage,
};

/// The default model's file name, as `cargo xtask model` stores it.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The model cache `cargo xtask model` fills: `$CLAIJ_MODEL_DIR`, else `$XDG_CACHE_HOME/claij/models`,
/// else `$HOME/.cache/claij/models`, else the temp dir's `claij/models`. Empty variables count as
/// unset and a relative `XDG_CACHE_HOME` is ignored, as in xtask/src/model.rs (keep the two in step).
///
/// The library reads no environment: `var` looks a variable up (pass `std::env::var_os`).
///
/// ```
/// use std::path::Path;
/// let dir = claij_local::model_dir(|name| (name == "HOME").then(|| "/home/ada".into()));
/// assert_eq!(dir, Path::new("/home/ada/.cache/claij/models"));
/// ```
pub fn model_dir(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    let var = |name| {
        var(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    };
    var("CLAIJ_MODEL_DIR")
        .or_else(|| {
            var("XDG_CACHE_HOME")
                .filter(|cache| cache.is_absolute())
                .map(|cache| cache.join("claij").join("models"))
        })
        .or_else(|| var("HOME").map(|home| home.join(".cache").join("claij").join("models")))
        .unwrap_or_else(|| std::env::temp_dir().join("claij").join("models"))
}

/// The variable [`LocalConfig::with_env`] reads the prefix cache's limit from, in MiB.
pub const KV_CACHE_ENV: &str = "CLAIJ_KV_CACHE_MIB";

/// A model run in-process. Cheap to clone: clones share the loaded model.
#[derive(Clone)]
pub struct LocalBackend {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    config: LocalConfig,
    model: Model,
    /// The prefix cache; holding the lock is a turn on the model (one generation at a time).
    turn: Mutex<PrefixCache<Sequence>>,
    vocab: Vocab,
    grammars: ParserFactory,
    context_length: usize,
    report: LoadReport,
}

/// How a [`LocalBackend`] loads and decodes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LocalConfig {
    /// Whether a request's schema constrains decoding ([`Decoding::Constrained`], the default) or is
    /// only described in the prompt.
    pub decoding: Decoding,
    /// What to do with weights candle decodes slowly.
    pub requantize: Requantize,
    /// Nucleus sampling's probability mass, used when a request sets a temperature above 0.
    pub top_p: f32,
    /// The seed when a request names none.
    pub seed: u64,
    /// The token limit when a request sets none.
    pub max_tokens: u32,
    /// Divides the logits of tokens among the last [`LocalConfig::repeat_window`] generated ones
    /// (tokens of punctuation and whitespace only excepted): 1.0 turns it off. Small models otherwise repeat a phrase
    /// until a string's length bound.
    pub repeat_penalty: f32,
    /// How many of the last generated tokens the penalty looks at.
    pub repeat_window: usize,
    /// The most memory, in MiB, the prefix cache may hold: keys and values of earlier prompts, so a
    /// request that starts like one of them (a retry, the next FSM state with the same system prompt
    /// and schema, the next chat turn) reads only its new tokens. The least recently used prompts
    /// are evicted first; 0 turns the cache off. Default 256 (about 5,600 tokens of
    /// SmolLM2-135M); the `claij` binary reads `CLAIJ_KV_CACHE_MIB` ([`LocalConfig::with_env`]).
    pub kv_cache_mib: usize,
    /// How the prompt's matrix products are computed.
    pub prefill: PrefillWeights,
}

/// The weights a prompt is read with (generated tokens always use the quantised ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PrefillWeights {
    /// The weights expanded to f32 when the model loads, then dense matrix products over the
    /// whole prompt: about twice as fast (the default), for 4 bytes per weight more memory (about
    /// 410 MiB for SmolLM2-135M).
    #[default]
    F32,
    /// The weights as loaded (Q8_0 after re-quantisation).
    Quantized,
}

/// Whether the request's schema constrains the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Decoding {
    /// Tokens that cannot continue a schema-valid document are masked out.
    #[default]
    Constrained,
    /// The schema only goes in the prompt: what a model produces on its own (for measuring
    /// first-try validity, or for schemas the grammar engine cannot take).
    Unconstrained,
}

/// Re-quantisation of Q4_1 weights to Q8_0 (4 to 5 times faster to decode on CPU, 1.5 times larger).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Requantize {
    /// Once, into a cache file in this directory (`None`: next to the model); in memory when the
    /// directory is not writable. The cache is rebuilt when the model file changes.
    Cached(Option<PathBuf>),
    /// At every load, in memory (about a second for a 135M model).
    InMemory,
    /// Never: run the weights as they are.
    Off,
}

/// What loading did, for logs and benchmarks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadReport {
    /// The model file.
    pub path: PathBuf,
    /// Wall time of the whole load.
    pub load_time: Duration,
    /// Tensors re-quantised to Q8_0 (now or when the cache was made).
    pub requantized_tensors: usize,
    /// The cache file the weights came from or were written to.
    pub cache: Option<PathBuf>,
    /// Whether the weights came from the cache.
    pub from_cache: bool,
}

/// One generation, with what it cost. [`LocalBackend::generate`] returns it; the [`Backend`] methods
/// turn it into a [`ChatResponse`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Generation {
    /// The answer.
    pub text: String,
    /// Why it stopped: [`FinishReason::Stop`] at an end token, the grammar's end or a stop sequence;
    /// [`FinishReason::Length`] at the token limit or the end of the context window.
    pub finish_reason: FinishReason,
    /// Prompt and generated tokens (cost zero).
    pub usage: Usage,
    /// Whether a schema constrained the output.
    pub constrained: bool,
    /// Whether the token limit was about to cut a constrained document and the decoder closed it
    /// with the grammar's shortest completion instead (the finish reason is still
    /// [`FinishReason::Length`]: fields may be cut short, but the document is whole).
    pub closed_early: bool,
    /// Where the time went.
    pub timings: Timings,
}

/// Where a generation's time went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Timings {
    /// Tokens in the prompt.
    pub prompt_tokens: usize,
    /// Time to evaluate the prompt.
    pub prefill: Duration,
    /// Prompt tokens whose keys and values came from the prefix cache (not evaluated again).
    pub cached_tokens: usize,
    /// Tokens generated, forced ones included.
    pub generated_tokens: usize,
    /// Tokens the grammar forced (no sampling needed; evaluated with the next step).
    pub forced_tokens: usize,
    /// Model evaluations after the prompt.
    pub forward_passes: usize,
    /// Time from the end of the prompt to the last token.
    pub decode: Duration,
    /// Time to compile the schema into a grammar.
    pub grammar_compile: Duration,
    /// Token masks computed.
    pub masks: usize,
    /// Time spent computing them.
    pub mask_total: Duration,
}

/// Why a model cannot be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// There is no file at the path.
    #[error(
        "model file {} not found: fetch the default model with `cargo xtask model` (in a claij checkout), or give the path of a llama-architecture GGUF file",
        .path.display()
    )]
    NotFound {
        /// The path tried.
        path: PathBuf,
    },
    /// The file is not a complete GGUF model.
    #[error(
        "model file {} is damaged or not a GGUF model ({reason}): fetch it again with `cargo xtask model --force`",
        .path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A GGUF file this backend cannot run.
    #[error("model file {} is not supported: {reason}", .path.display())]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The file cannot be read.
    #[error("cannot read model file {}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
}

impl Default for LocalConfig {
    fn default() -> Self {
        Self {
            decoding: Decoding::Constrained,
            requantize: Requantize::Cached(None),
            top_p: 0.95,
            seed: 0,
            max_tokens: 512,
            repeat_penalty: 1.1,
            repeat_window: 64,
            kv_cache_mib: 256,
            prefill: PrefillWeights::F32,
        }
    }
}

impl LocalConfig {
    /// The same configuration with another decoding mode.
    #[must_use]
    pub fn with_decoding(mut self, decoding: Decoding) -> Self {
        self.decoding = decoding;
        self
    }

    /// The same configuration with another re-quantisation policy.
    #[must_use]
    pub fn with_requantize(mut self, requantize: Requantize) -> Self {
        self.requantize = requantize;
        self
    }

    /// The same configuration with another default token limit.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The same configuration with another repetition penalty (1.0: none) over the last `window` tokens.
    #[must_use]
    pub fn with_repeat_penalty(mut self, penalty: f32, window: usize) -> Self {
        self.repeat_penalty = penalty;
        self.repeat_window = window;
        self
    }

    /// The same configuration with another prefix-cache limit in MiB (0: no cache).
    #[must_use]
    pub fn with_kv_cache_mib(mut self, mib: usize) -> Self {
        self.kv_cache_mib = mib;
        self
    }

    /// The same configuration with other weights for reading prompts.
    #[must_use]
    pub fn with_prefill(mut self, prefill: PrefillWeights) -> Self {
        self.prefill = prefill;
        self
    }

    /// The same configuration with `CLAIJ_KV_CACHE_MIB` applied when `var` has it (pass
    /// `std::env::var_os`; the library reads no environment itself).
    ///
    /// # Errors
    ///
    /// A message naming the variable when its value is not a whole number of MiB.
    ///
    /// ```
    /// use claij_local::LocalConfig;
    /// let config = LocalConfig::default().with_env(|name| (name == "CLAIJ_KV_CACHE_MIB").then(|| "64".into()))?;
    /// assert_eq!(config.kv_cache_mib, 64);
    /// # Ok::<(), String>(())
    /// ```
    pub fn with_env(
        mut self,
        var: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, String> {
        if let Some(value) = var(KV_CACHE_ENV).filter(|v| !v.is_empty()) {
            let text = value.to_string_lossy();
            self.kv_cache_mib = text.trim().parse().map_err(|_| {
                format!("{KV_CACHE_ENV}={text:?} is not a whole number of MiB (0 turns the prefix cache off)")
            })?;
        }
        Ok(self)
    }

    /// The same configuration with another default seed and nucleus mass.
    #[must_use]
    pub fn with_sampling(mut self, seed: u64, top_p: f32) -> Self {
        self.seed = seed;
        self.top_p = top_p;
        self
    }
}

impl LocalBackend {
    /// Loads the model at `path` with the default configuration. Blocks for about a second (longer
    /// the first time a Q4_1 model is re-quantised); from async code, call it on a blocking thread.
    ///
    /// # Errors
    ///
    /// [`LoadError`]: no file, a damaged file, an unsupported architecture or vocabulary.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, LoadError> {
        Self::load_with(path, LocalConfig::default())
    }

    /// Loads the model at `path`.
    ///
    /// # Errors
    ///
    /// As [`LocalBackend::load`].
    pub fn load_with(path: impl AsRef<Path>, config: LocalConfig) -> Result<Self, LoadError> {
        let path = path.as_ref();
        let mut loaded = load::load(path, &config.requantize)?;
        if config.prefill == PrefillWeights::F32 {
            // The f32 weights prompts are read with, expanded now rather than in the first request.
            let started = std::time::Instant::now();
            loaded
                .weights
                .expand_dense()
                .map_err(|e| LoadError::Unsupported {
                    path: path.to_owned(),
                    reason: format!("expanding the weights to f32: {e}"),
                })?;
            loaded.report.load_time += started.elapsed();
        }
        let mut grammars =
            ParserFactory::new_simple(&loaded.vocab.env).map_err(|e| LoadError::Unsupported {
                path: path.to_owned(),
                reason: format!("the grammar engine rejects the vocabulary: {e}"),
            })?;
        grammars.quiet();
        tracing::debug!(
            model = %loaded.name,
            load_ms = loaded.report.load_time.as_millis() as u64,
            requantized = loaded.report.requantized_tensors,
            from_cache = loaded.report.from_cache,
            "local model loaded"
        );
        let cache = PrefixCache::new(
            config.kv_cache_mib.saturating_mul(1 << 20),
            loaded.weights.kv_bytes_per_token(),
        );
        Ok(Self {
            inner: Arc::new(Inner {
                name: loaded.name,
                config,
                model: loaded.weights,
                turn: Mutex::new(cache),
                vocab: loaded.vocab,
                grammars,
                context_length: loaded.context_length,
                report: loaded.report,
            }),
        })
    }

    /// The model's name (from the file's metadata, else its file name).
    pub fn model_name(&self) -> &str {
        &self.inner.name
    }

    /// The model's context window in tokens.
    pub fn context_length(&self) -> usize {
        self.inner.context_length
    }

    /// What loading did.
    pub fn load_report(&self) -> &LoadReport {
        &self.inner.report
    }

    /// The configuration it was loaded with.
    pub fn config(&self) -> &LocalConfig {
        &self.inner.config
    }

    /// The threads candle computes with in this process (fixed at its first use).
    pub fn threads() -> usize {
        candle_core::utils::get_num_threads()
    }

    /// The prompt the model sees for `request`, in the model's chat template: the system prompt,
    /// the schema when the request has one, the conversation, the start of the answer.
    pub fn prompt(&self, request: &ChatRequest) -> String {
        let mut system = request.system.clone().unwrap_or_default();
        if let Some(structured) = &request.structured_output {
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            system.push_str(
                "Respond with only a JSON value that conforms to this JSON Schema. No prose, no code fences.\n\n",
            );
            system.push_str(&schema_for_prompt(&structured.schema));
        }
        let system = (!system.is_empty()).then_some(system.as_str());
        self.inner.vocab.template.render(system, &request.messages)
    }

    /// The size of [`LocalBackend::prompt`] for `request`, in tokens. [`Backend::stream`] sends it
    /// first, as a [`Usage`] with only the input tokens, before the prompt is read.
    ///
    /// # Errors
    ///
    /// [`Error::Other`] when the tokenizer fails.
    pub fn prompt_tokens(&self, request: &ChatRequest) -> Result<usize, Error> {
        self.inner
            .vocab
            .encode(&self.prompt(request))
            .map(|tokens| tokens.len())
            .map_err(|e| Error::other("local", e))
    }

    /// Generates the answer to `request` on the calling thread; stops early, with
    /// [`Error::Cancelled`], once `cancel` is set.
    ///
    /// # Errors
    ///
    /// [`Error::ContextLengthExceeded`] for a prompt that does not fit, [`Error::BadRequest`] for a
    /// schema the grammar engine cannot take, [`Error::Cancelled`], [`Error::Other`] when the model
    /// fails.
    pub fn generate(
        &self,
        request: &ChatRequest,
        cancel: &AtomicBool,
    ) -> Result<Generation, Error> {
        self.generate_streaming(request, cancel, &mut |_| {})
    }

    /// [`LocalBackend::generate`], handing the answer to `on_text` as it grows.
    ///
    /// # Errors
    ///
    /// As [`LocalBackend::generate`].
    pub fn generate_streaming(
        &self,
        request: &ChatRequest,
        cancel: &AtomicBool,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Generation, Error> {
        check_no_tools(request)?;
        let inner = &*self.inner;
        let prompt = inner
            .vocab
            .encode(&self.prompt(request))
            .map_err(|e| Error::other("local", e))?;
        if prompt.len() >= inner.context_length {
            return Err(Error::ContextLengthExceeded {
                context: context(),
                message: format!(
                    "the prompt is {} tokens; {} has a context window of {}",
                    prompt.len(),
                    inner.name,
                    inner.context_length
                ),
            });
        }
        let (matcher, grammar_compile) = self.matcher(request)?;
        let max_tokens = request.max_tokens.unwrap_or(inner.config.max_tokens).max(1) as usize;
        let max_tokens = max_tokens.min(inner.context_length - prompt.len());
        let sampler = Sampler::new(
            request.temperature,
            inner.config.top_p,
            request.seed.unwrap_or(inner.config.seed),
        );
        let mut cache = inner.turn.lock().unwrap_or_else(PoisonError::into_inner);
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled { context: context() });
        }
        let mut sequence = match cache.lookup(&prompt) {
            Some((reused, cached)) => cached.prefix(reused).map_err(|e| {
                Error::other("local", format!("cannot reuse the cached prefix: {e}"))
            })?,
            None => Sequence::default(),
        };
        let job = generate::Job {
            prompt: &prompt,
            max_tokens,
            context_length: inner.context_length,
            sampler,
            penalty: generate::Penalty {
                factor: inner.config.repeat_penalty,
                window: inner.config.repeat_window,
            },
            matcher,
            stop: &request.stop,
            cancel,
            prefill: match inner.config.prefill {
                PrefillWeights::F32 => model::Prefill::Dense,
                PrefillWeights::Quantized => model::Prefill::Quantized,
            },
        };
        let result = generate::run(&inner.model, &mut sequence, &inner.vocab, job, on_text);
        // The prompt's whole chunks are what a later request can reuse (also after a cancelled or
        // failed generation, as far as the prompt was read).
        if sequence.exact > 0
            && let Ok(kept) = sequence.truncated(sequence.exact)
        {
            cache.insert(kept.tokens.clone(), kept);
        }
        drop(cache);
        let mut generation = result?;
        generation.timings.grammar_compile = grammar_compile;
        tracing::debug!(
            model = %inner.name,
            prompt_tokens = generation.timings.prompt_tokens,
            cached_tokens = generation.timings.cached_tokens,
            output_tokens = generation.timings.generated_tokens,
            prefill_ms = generation.timings.prefill.as_millis() as u64,
            decode_ms = generation.timings.decode.as_millis() as u64,
            finish = ?generation.finish_reason,
            "local generation"
        );
        Ok(generation)
    }

    /// The grammar matcher for the request's schema, when decoding is constrained.
    fn matcher(&self, request: &ChatRequest) -> Result<(Option<Matcher>, Duration), Error> {
        let started = std::time::Instant::now();
        let Some(structured) = &request.structured_output else {
            return Ok((None, Duration::ZERO));
        };
        if self.inner.config.decoding == Decoding::Unconstrained {
            return Ok((None, Duration::ZERO));
        }
        let strict = grammar_schema(&structured.schema, false);
        let matcher = match self.compile(strict) {
            Ok(m) => m,
            Err(first) => {
                // Lenient mode drops what the engine cannot enforce; the caller's validator still
                // checks it.
                let lenient = grammar_schema(&structured.schema, true);
                let matcher = self.compile(lenient).map_err(|_| Error::BadRequest {
                    context: context(),
                    message: format!(
                        "the schema cannot be turned into a decoding grammar (compile it with claij-schema's Llguidance dialect first): {first}"
                    ),
                })?;
                tracing::warn!(error = %first, "schema compiled only in llguidance's lenient mode");
                matcher
            }
        };
        Ok((Some(matcher), started.elapsed()))
    }

    fn compile(&self, schema: Value) -> Result<Matcher, String> {
        let parser = self
            .inner
            .grammars
            .create_parser(TopLevelGrammar::from_json_schema(schema));
        let matcher = Matcher::new(parser);
        match matcher.get_error() {
            Some(e) => Err(e),
            None => Ok(matcher),
        }
    }
}

impl std::fmt::Debug for LocalBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalBackend")
            .field("model", &self.inner.name)
            .field("path", &self.inner.report.path)
            .field("context_length", &self.inner.context_length)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// The embedded model has no native tools ([`Capabilities::tools`] is false): a request offering
/// some is refused rather than answered as if they were not there. Tools reach it through the
/// schema (the pipeline's `oneOf` of calls), which its grammar enforces.
fn check_no_tools(request: &ChatRequest) -> Result<(), Error> {
    let forced = matches!(
        request.tool_choice,
        Some(claij_backends::ToolChoice::Required | claij_backends::ToolChoice::Tool(_))
    );
    if request.tools.is_empty() && !forced {
        return Ok(());
    }
    Err(Error::BadRequest {
        context: ErrorContext::new("local"),
        message: "the local model has no native tools; offer them in the schema instead".to_owned(),
    })
}

impl Backend for LocalBackend {
    fn provider(&self) -> &str {
        "local"
    }

    fn capabilities(&self, _model: &str) -> Capabilities {
        let capabilities = Capabilities::prompted()
            .with_streaming(true)
            .with_greedy_default(true)
            .with_context_window(u32::try_from(self.inner.context_length).unwrap_or(u32::MAX));
        match self.inner.config.decoding {
            Decoding::Constrained => capabilities.with_schema_dialect(SchemaDialect::Llguidance),
            Decoding::Unconstrained => capabilities,
        }
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, Error>> {
        let (sender, receiver) = oneshot::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let guard = CancelOnDrop(Arc::clone(&cancel));
        let backend = self.clone();
        let owned = request.clone();
        let traced = Traced::current();
        let spawned = std::thread::Builder::new()
            .name("claij-local".to_owned())
            .spawn(move || {
                traced.run_then(
                    || backend.generate(&owned, &cancel),
                    |result| {
                        let _ = sender.send(result.map(|g| backend.response(g)));
                    },
                );
            });
        Box::pin(async move {
            let _guard = guard;
            spawned.map_err(|e| Error::other("local", format!("cannot start a thread: {e}")))?;
            receiver
                .await
                .unwrap_or_else(|_| Err(Error::other("local", "the generation thread failed")))
        })
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest) -> BoxStream<'a, Result<StreamEvent, Error>> {
        let (sender, receiver) = mpsc::unbounded();
        let cancel = Arc::new(AtomicBool::new(false));
        let guard = CancelOnDrop(Arc::clone(&cancel));
        let backend = self.clone();
        let owned = request.clone();
        let events = sender.clone();
        let traced = Traced::current();
        let spawned = std::thread::Builder::new()
            .name("claij-local".to_owned())
            .spawn(move || {
                let last = events.clone();
                traced.run_then(
                    || {
                        let _ = events
                            .unbounded_send(Ok(StreamEvent::Model(backend.inner.name.clone())));
                        // The prompt's size alone, before the prompt is read (seconds for a long
                        // one), so a caller can show progress; the final usage follows the text.
                        if let Ok(tokens) = backend.prompt_tokens(&owned) {
                            let _ = events.unbounded_send(Ok(StreamEvent::Usage(Usage {
                                input_tokens: tokens as u64,
                                ..Usage::default()
                            })));
                        }
                        let mut on_text = |text: &str| {
                            if !text.is_empty() {
                                let _ =
                                    events.unbounded_send(Ok(StreamEvent::Text(text.to_owned())));
                            }
                        };
                        match backend.generate_streaming(&owned, &cancel, &mut on_text) {
                            Ok(generation) => {
                                let _ =
                                    events.unbounded_send(Ok(StreamEvent::Usage(generation.usage)));
                                Ok(StreamEvent::Finish(generation.finish_reason))
                            }
                            Err(e) => Err(e),
                        }
                    },
                    |end| {
                        let _ = last.unbounded_send(end);
                    },
                );
            });
        if let Err(e) = spawned {
            let _ = sender.unbounded_send(Err(Error::other(
                "local",
                format!("cannot start a thread: {e}"),
            )));
        }
        drop(sender);
        Box::pin(GuardedStream {
            receiver,
            _guard: guard,
        })
    }
}

impl LocalBackend {
    fn response(&self, generation: Generation) -> ChatResponse {
        ChatResponse::text(generation.text)
            .finish_reason(generation.finish_reason)
            .usage(generation.usage)
            .model(self.inner.name.clone())
    }
}

fn context() -> ErrorContext {
    ErrorContext::new("local")
}

/// The caller's subscriber and span (an attempt's `llm.call`), for the generation thread: its
/// events are the call's, in the caller's logs and traces (a thread starts with neither).
struct Traced {
    dispatch: tracing::Dispatch,
    span: tracing::Span,
}

impl Traced {
    fn current() -> Self {
        Self {
            dispatch: tracing::dispatcher::get_default(Clone::clone),
            span: tracing::Span::current(),
        }
    }

    /// Runs `work` in the caller's subscriber and span, lets go of the span, and only then hands
    /// the result to `deliver`. The order matters: the caller may finish the moment it hears of
    /// the result (a command exits and flushes its exporter), and a span this thread still held
    /// would keep the call's span and every ancestor open past that flush, so the whole trace
    /// would be lost.
    fn run_then<T>(self, work: impl FnOnce() -> T, deliver: impl FnOnce(T)) {
        let Self { dispatch, span } = self;
        let value = tracing::dispatcher::with_default(&dispatch, || span.in_scope(work));
        drop(span);
        deliver(value);
    }
}

/// The schema as llguidance takes it: JSON whitespace fixed (a small model otherwise wanders off in
/// spaces), and optionally lenient (unsupported keywords ignored).
fn grammar_schema(schema: &Value, lenient: bool) -> Value {
    let mut schema = match schema {
        Value::Object(_) => schema.clone(),
        // `true` (anything) and other non-object schemas: an unconstrained JSON value.
        _ => serde_json::json!({}),
    };
    if let Value::Object(map) = &mut schema {
        let options = map
            .entry("x-guidance")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Value::Object(options) = options {
            options
                .entry("whitespace_flexible")
                .or_insert(Value::Bool(false));
            if lenient {
                options.insert("lenient".to_owned(), Value::Bool(true));
            }
        }
    }
    schema
}

/// The schema shown to the model: minified, without engine options.
fn schema_for_prompt(schema: &Value) -> String {
    let mut shown = schema.clone();
    if let Value::Object(map) = &mut shown {
        map.remove("x-guidance");
    }
    shown.to_string()
}

/// Sets the flag when the caller stops waiting, so the generation thread stops at the next token.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Stream events from the generation thread; dropping the stream cancels the generation.
struct GuardedStream {
    receiver: mpsc::UnboundedReceiver<Result<StreamEvent, Error>>,
    _guard: CancelOnDrop,
}

impl futures_core::Stream for GuardedStream {
    type Item = Result<StreamEvent, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.receiver).poll_next(cx)
    }
}
