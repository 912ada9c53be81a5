//! Counting tokens as a model reads them (feature `tokens`): OpenAI's `o200k_base` (the default)
//! and `cl100k_base` encodings, or (feature `local`) the embedded model's own tokenizer, read from
//! its model file; and the context window of a model by name ([`context_window`]).
//!
//! ```
//! use claij::tokens::Tokenizer;
//!
//! let counter = Tokenizer::O200kBase.open()?;
//! assert_eq!(counter.count("{answer: string}")?, 5);
//! assert!("gpt2".parse::<Tokenizer>().is_err()); // the error names the choices
//! # Ok::<(), claij::tokens::Error>(())
//! ```

use std::path::PathBuf;
use std::str::FromStr;

use crate::Claij;
use crate::model::Provider;

/// The tokenizers by name, as `--tokenizer` takes them.
pub const NAMES: &[&str] = &["o200k_base", "cl100k_base", "local"];

/// A tokenizer to count with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Tokenizer {
    /// OpenAI's `o200k_base` (GPT-4o, GPT-4.1, o-series, GPT-5): the default.
    #[default]
    O200kBase,
    /// OpenAI's `cl100k_base` (GPT-4, GPT-3.5).
    Cl100kBase,
    /// The tokenizer of a GGUF model file (the embedded model's: [`Tokenizer::local`]).
    Local(PathBuf),
}

/// Counting failed, or no such tokenizer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A tokenizer name that is none of [`NAMES`].
    #[error("unknown tokenizer `{name}`: expected one of {}", NAMES.join(", "))]
    Unknown {
        /// The name given.
        name: String,
    },
    /// `local` in a build without the embedded model (feature `local`).
    #[error(
        "the local tokenizer needs the embedded model, not in this build of claij (its feature `local` is off)"
    )]
    LocalUnavailable,
    /// The model file cannot be read (a missing file names `cargo xtask model`).
    #[cfg(feature = "local")]
    #[error(transparent)]
    Model(#[from] Box<claij_local::LoadError>),
    /// The tokenizer failed on a text.
    #[error("{tokenizer}: {reason}")]
    Tokenize {
        /// The tokenizer.
        tokenizer: String,
        /// Why.
        reason: String,
    },
}

impl FromStr for Tokenizer {
    type Err = Error;

    /// `o200k_base` or `cl100k_base`; `local` is the embedded model's at the default model cache
    /// of this process's environment (use [`Tokenizer::named`] to read a [`Claij`]'s variables).
    fn from_str(name: &str) -> Result<Self, Error> {
        Self::named(name, |var| std::env::var_os(var))
    }
}

impl Tokenizer {
    /// The tokenizer `name` (one of [`NAMES`]); `local` is the embedded model's file in the model
    /// cache that `var` (a variable lookup, e.g. [`Claij::var`]) names ([`crate::model::model_dir`]).
    ///
    /// # Errors
    ///
    /// [`Error::Unknown`] naming the choices.
    pub fn named(
        name: &str,
        var: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, Error> {
        match name {
            "o200k_base" => Ok(Self::O200kBase),
            "cl100k_base" => Ok(Self::Cl100kBase),
            "local" => Ok(Self::local(var)),
            _ => Err(Error::Unknown {
                name: name.to_owned(),
            }),
        }
    }

    /// The embedded model's tokenizer: the default model file in the cache `var` names.
    pub fn local(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Self {
        #[cfg(feature = "local")]
        {
            Self::Local(crate::model::model_dir(var).join(claij_local::DEFAULT_MODEL_FILE))
        }
        #[cfg(not(feature = "local"))]
        {
            let _ = var;
            Self::Local(PathBuf::from("local"))
        }
    }

    /// Its name, as [`NAMES`] says it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
            Self::Local(_) => "local",
        }
    }

    /// A counter with this tokenizer (a local model file's tokenizer is read from its metadata:
    /// the weights are not loaded).
    ///
    /// # Errors
    ///
    /// For [`Tokenizer::Local`]: [`Error::Model`] when the file is missing (naming the path and
    /// `cargo xtask model`), damaged or of another vocabulary; [`Error::LocalUnavailable`] without
    /// the feature `local`.
    pub fn open(&self) -> Result<Counter, Error> {
        let inner = match self {
            Self::O200kBase => Inner::Bpe(tiktoken_rs::o200k_base_singleton()),
            Self::Cl100kBase => Inner::Bpe(tiktoken_rs::cl100k_base_singleton()),
            #[cfg(feature = "local")]
            Self::Local(path) => Inner::Local(Box::new(
                claij_local::TokenCounter::open(path).map_err(Box::new)?,
            )),
            #[cfg(not(feature = "local"))]
            Self::Local(_) => return Err(Error::LocalUnavailable),
        };
        Ok(Counter {
            name: self.name(),
            inner,
        })
    }
}

/// Counts tokens with one tokenizer ([`Tokenizer::open`]).
pub struct Counter {
    name: &'static str,
    inner: Inner,
}

enum Inner {
    Bpe(&'static tiktoken_rs::CoreBPE),
    #[cfg(feature = "local")]
    Local(Box<claij_local::TokenCounter>),
}

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counter").field("name", &self.name).finish()
    }
}

impl Counter {
    /// The tokens of `text` (special tokens' names counted as text, as a prompt carries them).
    ///
    /// # Errors
    ///
    /// [`Error::Tokenize`]: the local model's tokenizer failed on the text.
    pub fn count(&self, text: &str) -> Result<usize, Error> {
        match &self.inner {
            Inner::Bpe(bpe) => Ok(bpe.encode_ordinary(text).len()),
            #[cfg(feature = "local")]
            Inner::Local(counter) => counter.count(text).map_err(|reason| Error::Tokenize {
                tokenizer: self.name.to_owned(),
                reason,
            }),
        }
    }

    /// The tokenizer's name ([`NAMES`]).
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// The sentence that ends the instruction before the schema a prompted request carries at the end
/// of its system prompt (the pipeline's schema section).
const SECTION_END: &str = "No prose, no code fences.\n\n";

/// The o200k_base tokens of the schema `request` shows the model, as the compatibility matrix
/// records them: the compact rendering ([`claij_schema::to_compact`]) of the schema it sends
/// natively or as a tool, else the schema section that ends its system prompt (prompted), as
/// written there; `None` when it carries no schema.
///
/// ```
/// use claij::backends::ChatRequest;
///
/// let mut request = ChatRequest::new("m");
/// assert_eq!(claij::tokens::schema_tokens(&request), None);
/// request.system = Some("Be brief.\n\nRespond with only a JSON value. No prose, no code fences.\n\n{answer: string}".into());
/// assert_eq!(claij::tokens::schema_tokens(&request), Some(5));
/// ```
pub fn schema_tokens(request: &claij_backends::ChatRequest) -> Option<usize> {
    let bpe = tiktoken_rs::o200k_base_singleton();
    if let Some(structured) = &request.structured_output {
        let rendering = claij_schema::to_compact(structured.schema.value());
        return Some(bpe.encode_ordinary(&rendering).len());
    }
    let system = request.system.as_deref()?;
    let (_, section) = system.rsplit_once(SECTION_END)?;
    Some(bpe.encode_ordinary(section).len())
}

/// The context window of the model `name` (an alias, `local` or `provider:model`, resolved with
/// `claij`'s settings) in tokens, without opening it (no key needed, nothing fetched): the model
/// table's ([`crate::prices::table`], the built-in one and the configuration's), else what the
/// provider's backend says of the model; `local`'s from its model file. `None` when nothing says.
///
/// # Errors
///
/// The name does not resolve; the configuration's prices cannot be read.
pub fn context_window(claij: &Claij, name: &str) -> crate::Result<Option<u32>> {
    use crate::model::Llm;
    let resolved = claij.resolve(name)?;
    let table = claij.settings().prices()?;
    Ok(match resolved.llm {
        Llm::Local => local_window(claij),
        Llm::Remote { provider, model } => table
            .find_for(provider.name(), &model)
            .and_then(|m| m.context_window)
            .or_else(|| provider_window(provider, &model)),
        Llm::Compatible { provider, model } => table
            .find_for(&provider, &model)
            .and_then(|m| m.context_window),
    })
}

/// What the provider's backend says of the model's window, where it says it without a key.
fn provider_window(provider: Provider, model: &str) -> Option<u32> {
    match provider {
        #[cfg(feature = "anthropic")]
        Provider::Anthropic => claij_backends::anthropic::capabilities(model).context_window,
        _ => {
            let _ = model;
            None
        }
    }
}

/// The embedded model's context window, from its file's metadata (`None` when it cannot be read).
fn local_window(claij: &Claij) -> Option<u32> {
    #[cfg(feature = "local")]
    {
        let Tokenizer::Local(path) = Tokenizer::local(|var| claij.var(var)) else {
            return None;
        };
        claij_local::TokenCounter::open(path)
            .ok()
            .and_then(|c| c.context_length())
    }
    #[cfg(not(feature = "local"))]
    {
        let _ = claij;
        None
    }
}

#[cfg(test)]
mod tests;
