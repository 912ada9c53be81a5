//! Sentence embeddings on the CPU: a BERT sentence encoder (all-MiniLM-L6-v2 by default) run with
//! candle, pooled and normalised as sentence-transformers does, so `embed` gives the reference
//! implementation's vectors.
//! ([`Embedder`] has the details).

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use candle_core::{D, DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// The directory `cargo xtask embed-model` fills under the model cache ([`crate::model_dir`]).
pub const EMBED_MODEL_DIR: &str = "all-MiniLM-L6-v2";
/// The encoder's weights in a model directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// The tokenizer in a model directory.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// The encoder's shape in a model directory.
pub const CONFIG_FILE: &str = "config.json";

/// The default embedding model's directory: [`crate::model_dir`]`/all-MiniLM-L6-v2`.
///
/// ```
/// use std::path::Path;
/// let dir = claij_local::embed_model_dir(|name| (name == "HOME").then(|| "/home/ada".into()));
/// assert_eq!(dir, Path::new("/home/ada/.cache/claij/models/all-MiniLM-L6-v2"));
/// ```
pub fn embed_model_dir(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    crate::model_dir(var).join(EMBED_MODEL_DIR)
}

/// The cosine similarity of two vectors (their dot product when both are L2-normalised, as
/// [`Embedder::embed`]'s are); 0 when either is zero or their lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        return 0.0;
    }
    (dot / (aa.sqrt() * bb.sqrt())) as f32
}

/// How an [`Embedder`] cuts and batches its inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedConfig {
    /// Tokens per input, special tokens included; longer inputs are cut (as sentence-transformers
    /// cuts them). Default 256, the model's `max_seq_length`; at most `max_position_embeddings`.
    pub max_tokens: usize,
    /// Inputs per forward pass. Default 32: a batch's attention scores take
    /// `batch × heads × tokens² × 4` bytes (96 MiB at 32 × 12 × 256²).
    pub batch_size: usize,
    /// Bytes per input; a longer one is refused ([`EmbedError::InputTooLong`]) rather than
    /// tokenised whole only to be cut at `max_tokens`. Default 64 KiB.
    pub max_input_bytes: usize,
}

impl Default for EmbedConfig {
    fn default() -> Self {
        EmbedConfig {
            max_tokens: 256,
            batch_size: 32,
            max_input_bytes: 64 * 1024,
        }
    }
}

impl EmbedConfig {
    /// Sets [`EmbedConfig::max_tokens`].
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: usize) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Sets [`EmbedConfig::batch_size`] (at least 1).
    #[must_use]
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// Sets [`EmbedConfig::max_input_bytes`].
    #[must_use]
    pub fn with_max_input_bytes(mut self, max_input_bytes: usize) -> Self {
        self.max_input_bytes = max_input_bytes;
        self
    }
}

/// Why an embedding model could not be opened or an input not embedded. Each says which file or
/// which input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A model file is missing or unreadable.
    #[error(
        "cannot read {} (fetch the default embedding model with `cargo xtask embed-model` in a claij checkout, or give a directory holding model.safetensors, tokenizer.json and config.json)",
        .path.display()
    )]
    Read {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// A model file is there but is not what it should be (malformed JSON, a torn safetensors file,
    /// a tensor missing).
    #[error(
        "{} is not a usable {what}: {reason} (fetch it again with `cargo xtask embed-model --force`)",
        .path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What it should be.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The files disagree on a dimension (the weights' shapes against config.json, the tokenizer's
    /// vocabulary against the model's), or a setting exceeds what the model supports.
    #[error("{} does not fit: {reason}", .path.display())]
    Dimensions {
        /// The file that does not fit the others (or the setting).
        path: PathBuf,
        /// Which dimensions disagree.
        reason: String,
    },
    /// An input is over [`EmbedConfig::max_input_bytes`].
    #[error(
        "input {index} has {bytes} bytes, over the embedder's limit of {limit} (EmbedConfig::max_input_bytes)"
    )]
    InputTooLong {
        /// The input's index in the call's slice.
        index: usize,
        /// Its length.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The tokenizer failed on an input.
    #[error("cannot tokenise input {index}: {reason}")]
    Tokenize {
        /// The input's index in the call's slice (the batch's first when the tokenizer does not say).
        index: usize,
        /// The tokenizer's message.
        reason: String,
    },
    /// The forward pass failed (a bug or an exhausted machine; the inputs were valid).
    #[error("the embedding model's forward pass failed: {0}")]
    Compute(String),
}

impl From<candle_core::Error> for EmbedError {
    fn from(err: candle_core::Error) -> Self {
        EmbedError::Compute(err.to_string())
    }
}

/// A sentence-embedding model loaded in memory. Cheap to clone (clones share the model); `embed`
/// takes `&self` and may run on several threads at once.
///
/// ```
/// use claij_local::{Embedder, cosine, embed_model_dir};
///
/// let dir = embed_model_dir(|name| std::env::var_os(name)); // fetched by `cargo xtask embed-model`
/// # if !dir.exists() && std::env::var_os("CI").is_none() { return Ok(()); } // not fetched: nothing to run
/// let embedder = Embedder::open(&dir)?;
/// let v = embedder.embed(&["My dog is called Biscuit.", "I like blue.", "What is my dog's name?"])?;
/// assert_eq!(v[0].len(), embedder.dim()); // 384
/// assert!(cosine(&v[2], &v[0]) > cosine(&v[2], &v[1])); // the question is nearest its answer
/// # Ok::<(), claij_local::EmbedError>(())
/// ```
///
/// What it does, in the reference's order (sentence-transformers' `modules.json` for the model):
/// - The tokenizer (`tokenizer.json`) cuts an input at [`EmbedConfig::max_tokens`] tokens (256, the
///   model's `max_seq_length`; the file's own 128 and its fixed padding are replaced) and pads a batch
///   to its longest input only.
/// - The encoder (`config.json`, `model.safetensors`) gives one vector per token.
/// - Pooling: the mean over the input's own tokens (the attention mask), never the padding.
/// - The mean is L2-normalised, so the dot product of two embeddings is their cosine.
///
/// Inputs are encoded in batches of [`EmbedConfig::batch_size`]; an input over
/// [`EmbedConfig::max_input_bytes`] is refused with [`EmbedError::InputTooLong`] before any work.
/// candle's threads are set per process as for the chat model: `CANDLE_NUM_THREADS` /
/// `RAYON_NUM_THREADS` before the first use ([`Embedder::threads`] says what it uses).
#[derive(Clone)]
pub struct Embedder {
    inner: Arc<Inner>,
}

struct Inner {
    model: BertModel,
    tokenizer: Tokenizer,
    dim: usize,
    config: EmbedConfig,
    dir: PathBuf,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("dir", &self.inner.dir)
            .field("dim", &self.inner.dim)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads `dir/config.json`, `dir/tokenizer.json` and `dir/model.safetensors` with the default
    /// [`EmbedConfig`].
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        Self::open_with(dir, EmbedConfig::default())
    }

    /// As [`Embedder::open`], with `config`.
    pub fn open_with(dir: impl AsRef<Path>, config: EmbedConfig) -> Result<Self, EmbedError> {
        let started = Instant::now();
        let dir = dir.as_ref();
        let config_path = dir.join(CONFIG_FILE);
        let bert: Config =
            serde_json::from_slice(&read(&config_path)?).map_err(|err| EmbedError::Corrupt {
                path: config_path.clone(),
                what: "BERT configuration",
                reason: err.to_string(),
            })?;
        check_config(&bert, &config, &config_path)?;
        let tokenizer_path = dir.join(TOKENIZER_FILE);
        let tokenizer = load_tokenizer(&read(&tokenizer_path)?, &bert, &config, &tokenizer_path)?;
        let weights_path = dir.join(WEIGHTS_FILE);
        let weights = read(&weights_path)?;
        let model = load_model(weights, &bert, &weights_path)?;
        tracing::debug!(
            dir = %dir.display(),
            dim = bert.hidden_size,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "embedding model loaded"
        );
        Ok(Embedder {
            inner: Arc::new(Inner {
                model,
                tokenizer,
                dim: bert.hidden_size,
                config,
                dir: dir.to_owned(),
            }),
        })
    }

    /// The length of every embedding (384 for all-MiniLM-L6-v2).
    pub fn dim(&self) -> usize {
        self.inner.dim
    }

    /// The settings it was opened with.
    pub fn config(&self) -> &EmbedConfig {
        &self.inner.config
    }

    /// The threads candle computes with in this process (fixed at its first use, from
    /// `CANDLE_NUM_THREADS` / `RAYON_NUM_THREADS`, default the physical cores).
    pub fn threads() -> usize {
        candle_core::utils::get_num_threads()
    }

    /// One L2-normalised vector of [`Embedder::dim`] floats per input, in order. Inputs are cut at
    /// [`EmbedConfig::max_tokens`] tokens; an input over [`EmbedConfig::max_input_bytes`] fails
    /// the call before any is embedded.
    pub fn embed<S: AsRef<str>>(&self, inputs: &[S]) -> Result<Vec<Vec<f32>>, EmbedError> {
        check_inputs(inputs, self.inner.config.max_input_bytes)?;
        let mut vectors = Vec::with_capacity(inputs.len());
        for (number, chunk) in inputs.chunks(self.inner.config.batch_size).enumerate() {
            let first = number * self.inner.config.batch_size;
            vectors.extend(self.embed_batch(chunk, first)?);
        }
        Ok(vectors)
    }

    /// The token ids of each input as the model reads them (special tokens included, no padding).
    pub fn token_ids<S: AsRef<str>>(&self, inputs: &[S]) -> Result<Vec<Vec<u32>>, EmbedError> {
        check_inputs(inputs, self.inner.config.max_input_bytes)?;
        let mut ids = Vec::with_capacity(inputs.len());
        for (index, input) in inputs.iter().enumerate() {
            let encoding = self
                .inner
                .tokenizer
                .encode(input.as_ref(), true)
                .map_err(|err| EmbedError::Tokenize {
                    index,
                    reason: err.to_string(),
                })?;
            ids.push(encoding.get_ids().to_vec());
        }
        Ok(ids)
    }

    /// One forward pass over `inputs` (padded to the longest), `first` being the index of
    /// `inputs[0]` in the caller's slice (for errors).
    fn embed_batch<S: AsRef<str>>(
        &self,
        inputs: &[S],
        first: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        let texts: Vec<&str> = inputs.iter().map(AsRef::as_ref).collect();
        let encodings = self
            .inner
            .tokenizer
            .encode_batch(texts, true)
            .map_err(|err| EmbedError::Tokenize {
                index: first,
                reason: err.to_string(),
            })?;
        let batch = encodings.len();
        let tokens = encodings.first().map_or(0, tokenizers::Encoding::len);
        let (mut ids, mut types, mut mask) = (Vec::new(), Vec::new(), Vec::new());
        for (offset, encoding) in encodings.iter().enumerate() {
            if encoding.len() != tokens {
                return Err(EmbedError::Tokenize {
                    index: first + offset,
                    reason: format!(
                        "{} tokens after padding, expected {tokens} like the batch's first",
                        encoding.len()
                    ),
                });
            }
            ids.extend_from_slice(encoding.get_ids());
            types.extend_from_slice(encoding.get_type_ids());
            mask.extend_from_slice(encoding.get_attention_mask());
        }
        let device = Device::Cpu;
        let ids = Tensor::from_vec(ids, (batch, tokens), &device)?;
        let types = Tensor::from_vec(types, (batch, tokens), &device)?;
        let mask = Tensor::from_vec(mask, (batch, tokens), &device)?;
        let hidden = self.inner.model.forward(&ids, &types, Some(&mask))?;
        let dims = hidden.dims();
        if dims != [batch, tokens, self.inner.dim] {
            return Err(EmbedError::Dimensions {
                path: self.inner.dir.join(WEIGHTS_FILE),
                reason: format!(
                    "the encoder gave {dims:?}, expected [{batch}, {tokens}, {}]",
                    self.inner.dim
                ),
            });
        }
        let pooled = normalize(&masked_mean(&hidden, &mask)?)?;
        Ok(pooled.to_vec2::<f32>()?)
    }
}

/// The mean of `hidden` (`[batch, tokens, dim]`) over each input's own tokens, `mask`
/// (`[batch, tokens]`, 1 for a token, 0 for padding) weighting them: `[batch, dim]`.
fn masked_mean(hidden: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
    summed.broadcast_div(&counts)
}

/// Each row of `[batch, dim]` divided by its L2 norm (at least 1e-12, as torch's `normalize`).
fn normalize(vectors: &Tensor) -> candle_core::Result<Tensor> {
    let norms = vectors
        .sqr()?
        .sum_keepdim(D::Minus1)?
        .sqrt()?
        .clamp(1e-12f32, f32::MAX)?;
    vectors.broadcast_div(&norms)
}

fn read(path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|source| EmbedError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Refuses the first input over `limit` bytes.
fn check_inputs<S: AsRef<str>>(inputs: &[S], limit: usize) -> Result<(), EmbedError> {
    match inputs
        .iter()
        .enumerate()
        .find(|(_, input)| input.as_ref().len() > limit)
    {
        Some((index, input)) => Err(EmbedError::InputTooLong {
            index,
            bytes: input.as_ref().len(),
            limit,
        }),
        None => Ok(()),
    }
}

/// The configuration's shape must be one the encoder can be built with, and hold the settings.
fn check_config(bert: &Config, config: &EmbedConfig, path: &Path) -> Result<(), EmbedError> {
    let fail = |reason: String| {
        Err(EmbedError::Dimensions {
            path: path.to_owned(),
            reason,
        })
    };
    if bert.hidden_size == 0 || bert.num_attention_heads == 0 {
        return fail("hidden_size and num_attention_heads must be positive".to_owned());
    }
    if !bert.hidden_size.is_multiple_of(bert.num_attention_heads) {
        return fail(format!(
            "hidden_size {} is not a multiple of num_attention_heads {}",
            bert.hidden_size, bert.num_attention_heads
        ));
    }
    if config.max_tokens < 2 || config.max_tokens > bert.max_position_embeddings {
        return fail(format!(
            "EmbedConfig::max_tokens {} must be between 2 and the model's max_position_embeddings {}",
            config.max_tokens, bert.max_position_embeddings
        ));
    }
    Ok(())
}

/// The tokenizer in `bytes`, cutting at `max_tokens` and padding to a batch's longest input (the
/// file's own settings, 128 and fixed padding for all-MiniLM-L6-v2, are not the reference's).
fn load_tokenizer(
    bytes: &[u8],
    bert: &Config,
    config: &EmbedConfig,
    path: &Path,
) -> Result<Tokenizer, EmbedError> {
    let corrupt = |reason: String| EmbedError::Corrupt {
        path: path.to_owned(),
        what: "tokenizer",
        reason,
    };
    let mut tokenizer = Tokenizer::from_bytes(bytes).map_err(|err| corrupt(err.to_string()))?;
    let vocabulary = tokenizer.get_vocab_size(true);
    if vocabulary > bert.vocab_size {
        return Err(EmbedError::Dimensions {
            path: path.to_owned(),
            reason: format!(
                "its vocabulary has {vocabulary} tokens, more than the model's vocab_size {}",
                bert.vocab_size
            ),
        });
    }
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: config.max_tokens,
            ..TruncationParams::default()
        }))
        .map_err(|err| corrupt(err.to_string()))?;
    let pad_id = u32::try_from(bert.pad_token_id).map_err(|err| corrupt(err.to_string()))?;
    let pad_token = tokenizer
        .id_to_token(pad_id)
        .ok_or_else(|| corrupt(format!("it has no token for pad_token_id {pad_id}")))?;
    tokenizer.with_padding(Some(PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        pad_id,
        pad_token,
        ..PaddingParams::default()
    }));
    Ok(tokenizer)
}

/// The encoder from the safetensors bytes, read into memory (no memory map, no unsafe).
fn load_model(weights: Vec<u8>, bert: &Config, path: &Path) -> Result<BertModel, EmbedError> {
    let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).map_err(
        |err| EmbedError::Corrupt {
            path: path.to_owned(),
            what: "safetensors file",
            reason: err.to_string(),
        },
    )?;
    BertModel::load(vb, bert).map_err(|err| {
        let reason = err.to_string();
        if reason.contains("shape mismatch") {
            EmbedError::Dimensions {
                path: path.to_owned(),
                reason: format!("its tensors do not have config.json's shapes: {reason}"),
            }
        } else {
            EmbedError::Corrupt {
                path: path.to_owned(),
                what: "BERT encoder",
                reason,
            }
        }
    })
}
