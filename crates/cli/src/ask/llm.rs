//! Which backend `claij ask` talks to: `--llm`, the provider keys in the environment, the local model.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use claij_backends::local::{DEFAULT_MODEL_FILE, LocalBackend};
use claij_backends::{Anthropic, ApiKey, Backend, Gemini, OpenAi, OpenRouter};

/// The model used when no `--llm` is given and `OPENROUTER_API_KEY` is set.
pub const DEFAULT_OPENROUTER_MODEL: &str = "google/gemini-2.5-flash";

/// A `--llm` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Llm {
    /// The embedded model.
    Local,
    /// A hosted model.
    Remote {
        /// Who serves it.
        provider: Provider,
        /// The model id, as the provider knows it.
        model: String,
    },
}

/// The providers `--llm PROVIDER:MODEL` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    OpenRouter,
    OpenAi,
    Anthropic,
    Gemini,
}

/// An open backend and what to call it.
pub struct Opened {
    /// The backend.
    pub backend: Arc<dyn Backend>,
    /// The model, for requests and reports.
    pub model: String,
    /// Which backend was chosen when `--llm` did not say, for stderr.
    pub notice: Option<String>,
}

impl Provider {
    const ALL: [Provider; 4] = [
        Provider::OpenRouter,
        Provider::OpenAi,
        Provider::Anthropic,
        Provider::Gemini,
    ];

    /// The name in `--llm`.
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenRouter => "openrouter",
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
        }
    }

    /// The environment variable holding the key.
    pub fn key_var(self) -> &'static str {
        match self {
            Provider::OpenRouter => "OPENROUTER_API_KEY",
            Provider::OpenAi => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            Provider::Gemini => "GEMINI_API_KEY",
        }
    }

    fn backend(self, key: ApiKey) -> Arc<dyn Backend> {
        match self {
            Provider::OpenRouter => Arc::new(OpenRouter::new(key)),
            Provider::OpenAi => Arc::new(OpenAi::new(key)),
            Provider::Anthropic => Arc::new(Anthropic::new(key)),
            Provider::Gemini => Arc::new(Gemini::new(key)),
        }
    }
}

/// Parses `--llm`: `local` or `PROVIDER:MODEL`.
pub fn parse(text: &str) -> Result<Llm, String> {
    if text == "local" {
        return Ok(Llm::Local);
    }
    let names = || Provider::ALL.map(Provider::name).join(", ");
    let Some((name, model)) = text.split_once(':') else {
        return Err(format!(
            "expected `local` or PROVIDER:MODEL with PROVIDER one of {}",
            names()
        ));
    };
    let Some(provider) = Provider::ALL.into_iter().find(|p| p.name() == name) else {
        return Err(format!(
            "unknown provider `{name}`: expected `local` or one of {}",
            names()
        ));
    };
    if model.trim().is_empty() {
        return Err(format!("no model after `{name}:`"));
    }
    Ok(Llm::Remote {
        provider,
        model: model.to_owned(),
    })
}

/// Opens the backend `--llm` names. Without `--llm`: the local model if `--model-path` is given,
/// else OpenRouter when its key is set, else the local model (claij needs no key to answer).
pub fn open(llm: Option<&Llm>, model_path: Option<&Path>) -> Result<Opened> {
    match (llm, model_path) {
        (Some(Llm::Local), _) => open_local(model_path, None),
        (Some(Llm::Remote { provider, model }), None) => open_remote(*provider, model, None),
        (Some(Llm::Remote { provider, .. }), Some(_)) => bail!(
            "--model-path is for the local model, not {}: drop it or use --llm local",
            provider.name()
        ),
        (None, Some(_)) => open_local(model_path, Some("--model-path")),
        (None, None) => {
            let openrouter = Provider::OpenRouter;
            if key(openrouter)?.is_some() {
                let why = format!("{} is set", openrouter.key_var());
                open_remote(openrouter, DEFAULT_OPENROUTER_MODEL, Some(&why))
            } else {
                open_local(None, Some("no provider key set"))
                    .context("no provider key is set, so claij uses the local model")
            }
        }
    }
}

/// The model cache (see [`claij_backends::local::model_dir`]).
pub fn model_dir(var: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    claij_backends::local::model_dir(var)
}

/// The name to show for a model file: its name up to the first dot (`SmolLM2-135M-Instruct` for
/// `SmolLM2-135M-Instruct.Q4_1.gguf`). The file's own metadata name is often a training-run label.
pub fn model_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy())
        .and_then(|name| name.split('.').next().map(str::to_owned))
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "local".to_owned())
}

fn open_local(model_path: Option<&Path>, why: Option<&str>) -> Result<Opened> {
    let path = match model_path {
        Some(path) => path.to_path_buf(),
        None => model_dir(|name| std::env::var_os(name)).join(DEFAULT_MODEL_FILE),
    };
    let model = model_name(&path);
    let backend = LocalBackend::load(&path)?;
    Ok(Opened {
        backend: Arc::new(backend),
        notice: why.map(|why| format!("using local model {model} ({why})")),
        model,
    })
}

fn open_remote(provider: Provider, model: &str, why: Option<&str>) -> Result<Opened> {
    let Some(key) = key(provider)? else {
        bail!(
            "{} is not set: export it to use --llm {}:{model}",
            provider.key_var(),
            provider.name()
        );
    };
    Ok(Opened {
        backend: provider.backend(key),
        model: model.to_owned(),
        notice: why.map(|why| format!("using {}:{model} ({why})", provider.name())),
    })
}

/// The provider's key from the environment; empty counts as unset. The key is never shown.
fn key(provider: Provider) -> Result<Option<ApiKey>> {
    match std::env::var(provider.key_var()) {
        Ok(key) if key.trim().is_empty() => Ok(None),
        Ok(key) => Ok(Some(ApiKey::new(key.trim()))),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            bail!("{} is not valid UTF-8", provider.key_var())
        }
    }
}
