//! [`TokenCounter`]: a model file's tokenizer and context window, read from its metadata alone.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::Content;

use crate::LoadError;

/// A GGUF model's tokenizer and context window, read from the file's metadata without loading its
/// weights: what a prompt costs in the embedded model's tokens.
///
/// ```no_run
/// let dir = claij_local::model_dir(|name| std::env::var_os(name));
/// let counter = claij_local::TokenCounter::open(dir.join(claij_local::DEFAULT_MODEL_FILE))?;
/// assert!(counter.count("{\"answer\": 42}")? > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TokenCounter {
    path: PathBuf,
    tokenizer: tokenizers::Tokenizer,
    context_length: Option<u32>,
}

impl TokenCounter {
    /// Reads the tokenizer of the model file at `path`.
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`] (naming `cargo xtask model`), [`LoadError::Corrupt`], or
    /// [`LoadError::Unsupported`] for a vocabulary that is not byte-level BPE.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, LoadError> {
        let path = path.as_ref();
        let mut file =
            BufReader::new(File::open(path).map_err(|e| crate::load::open_error(path, e))?);
        let content = Content::read(&mut file).map_err(|e| LoadError::Corrupt {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let tokenizer =
            crate::vocab::tokenizer(&content).map_err(|reason| LoadError::Unsupported {
                path: path.to_owned(),
                reason,
            })?;
        let context_length = content
            .metadata
            .get("llama.context_length")
            .and_then(|v| v.to_u32().ok());
        Ok(Self {
            path: path.to_owned(),
            tokenizer,
            context_length,
        })
    }

    /// The tokens of `text` as the model reads it (no special tokens added).
    ///
    /// # Errors
    ///
    /// The tokenizer fails on the text (the message names the model file).
    pub fn count(&self, text: &str) -> Result<usize, String> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().len())
            .map_err(|e| format!("{}: cannot tokenize: {e}", self.path.display()))
    }

    /// The context window the file declares (`llama.context_length`), if it does.
    pub fn context_length(&self) -> Option<u32> {
        self.context_length
    }

    /// The model file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("path", &self.path)
            .field("context_length", &self.context_length)
            .finish_non_exhaustive()
    }
}
