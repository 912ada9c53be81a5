//! Models by name: `local`, `provider:model` or an alias of the [`Settings`](crate::settings::Settings), resolved with the
//! configuration's aliases and providers and opened as a backend, its key read from the
//! provider's environment variable; the embedded model loaded once per file.

use std::ffi::OsString;
use std::fmt;
use std::path::Path;
#[cfg(feature = "local")]
use std::path::PathBuf;
use std::sync::Arc;
#[cfg(feature = "local")]
use std::sync::PoisonError;
use std::time::Duration;

#[cfg(feature = "anthropic")]
use claij_backends::Anthropic;
#[cfg(feature = "gemini")]
use claij_backends::Gemini;
#[cfg(feature = "openrouter")]
use claij_backends::OpenRouter;
use claij_backends::openai::{OpenAiCompatible, StructuredFallback};
use claij_backends::{
    Adapter, ApiKey, Backend, HttpBackend, HttpConfig, HttpVersion, ModelTable, OpenAi,
};
#[cfg(feature = "local")]
use claij_local::{DEFAULT_MODEL_FILE, LocalBackend};

use crate::Claij;
use crate::error::{Error, Result};
use crate::settings::{CompatibleSettings, DEFAULT_REMOTE_ALIAS, ProviderSettings, Resolved};

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
    /// A model on an OpenAI-compatible server of the configuration's own.
    Compatible {
        /// The provider entry's name (`[providers.NAME]`).
        provider: String,
        /// The model id, as the server knows it.
        model: String,
    },
}

impl fmt::Display for Llm {
    /// `local` or `provider:model`, as `--llm` takes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Llm::Local => f.write_str("local"),
            Llm::Remote { provider, model } => write!(f, "{}:{model}", provider.name()),
            Llm::Compatible { provider, model } => write!(f, "{provider}:{model}"),
        }
    }
}

/// The providers `--llm PROVIDER:MODEL` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// OpenRouter (`openrouter:`).
    OpenRouter,
    /// OpenAI (`openai:`).
    OpenAi,
    /// Anthropic (`anthropic:`).
    Anthropic,
    /// Google Gemini (`gemini:`).
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
    /// The same backend when it is an OpenAI-compatible server that falls back from a rejected
    /// native request (its mode fallback is for automatic mode only).
    pub fallback: Option<Arc<StructuredFallback>>,
}

impl fmt::Debug for Opened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Opened")
            .field("model", &self.model)
            .field("notice", &self.notice)
            .field("fallback", &self.fallback.is_some())
            .finish_non_exhaustive()
    }
}

impl Provider {
    /// Every provider, in the order messages list them.
    pub const ALL: [Provider; 4] = [
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

    /// The backend, configured as `settings` say (base URL, body limit, retry budget, gateway),
    /// pricing its responses from `prices`.
    fn backend(
        self,
        key: ApiKey,
        settings: &ProviderSettings,
        prices: &ModelTable,
        claij: &Claij,
    ) -> Result<Arc<dyn Backend>> {
        match self {
            #[cfg(feature = "openrouter")]
            Provider::OpenRouter => {
                let backend = configure(OpenRouter::new(key).with_prices(prices), settings, claij)?;
                // OpenRouter's model list, cached, says what each listed model offers.
                let cache = crate::openrouter::path(|name| claij.var(name));
                let catalog = cache
                    .and_then(|path| crate::openrouter::load(claij, &backend, settings, &path));
                Ok(match catalog {
                    Some(catalog) => Arc::new(backend.with_catalog(catalog)),
                    None => Arc::new(backend),
                })
            }
            Provider::OpenAi => configured(OpenAi::new(key).with_prices(prices), settings, claij),
            #[cfg(feature = "anthropic")]
            Provider::Anthropic => {
                configured(Anthropic::new(key).with_prices(prices), settings, claij)
            }
            #[cfg(feature = "gemini")]
            Provider::Gemini => configured(Gemini::new(key).with_prices(prices), settings, claij),
            #[allow(unreachable_patterns)]
            other => {
                let _ = (key, prices, claij);
                Err(Error::unavailable(format!(
                    "{} is not in this build of claij (its feature `{}` is off)",
                    other.name(),
                    other.name()
                )))
            }
        }
    }
}

/// Parses `--llm`: `local` or `PROVIDER:MODEL`.
pub fn parse(text: &str) -> Result<Llm, String> {
    parse_naming(text, &[])
}

/// [`parse`], an unknown provider's message also naming `own`: the configuration's providers (which
/// the caller matches itself).
pub fn parse_naming(text: &str, own: &[&str]) -> Result<Llm, String> {
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
        let own = if own.is_empty() {
            String::new()
        } else {
            format!(", or one of the configuration's: {}", own.join(", "))
        };
        return Err(format!(
            "unknown provider `{name}`: expected `local` or one of {}{own}",
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

/// Opens the backend `llm` names (an alias, `local` or `provider:model`, resolved with the
/// settings of `claij`). Without one: the local model if `model_path` is given, else the
/// configuration's default model, else OpenRouter's default model when its key is set, else the
/// local model (claij needs no key to answer). [`Claij::open`] and [`Claij::open_with`] call it.
///
/// # Errors
///
/// The name does not resolve, its key is not set, the model cannot be opened.
pub fn open<S: AsRef<str> + ?Sized>(
    llm: Option<&S>,
    model_path: Option<&Path>,
    claij: &Claij,
) -> Result<Opened> {
    let resolved = match llm {
        Some(text) => Some(claij.resolve(text.as_ref())?),
        None => None,
    };
    open_resolved(resolved, model_path, claij)
}

fn open_resolved(
    resolved: Option<Resolved>,
    model_path: Option<&Path>,
    claij: &Claij,
) -> Result<Opened> {
    let config = claij.settings();
    let (resolved, why) = match (resolved, model_path) {
        (Some(resolved), _) => (resolved, None),
        (None, Some(_)) => return open_local(claij, model_path, Some("--model-path")),
        (None, None) => match &config.defaults.llm {
            Some(text) => {
                let why = "defaults.llm in the configuration".to_owned();
                (claij.resolve(text)?, Some(why))
            }
            None => {
                let openrouter = config.provider(Provider::OpenRouter);
                if key(claij, &openrouter.api_key_env)?.is_none() {
                    return open_local(claij, None, Some("no provider key set")).map_err(|e| {
                        e.context("no provider key is set, so claij uses the local model")
                    });
                }
                let why = format!("{} is set", openrouter.api_key_env);
                (claij.resolve(DEFAULT_REMOTE_ALIAS)?, Some(why))
            }
        },
    };
    match (resolved.llm, model_path) {
        (Llm::Local, _) => open_local(claij, model_path, why.as_deref()),
        (Llm::Remote { provider, model }, None) => {
            let prices = config.prices()?;
            let remote = Remote {
                settings: config.provider(provider),
                model: &model,
                name: &resolved.name,
                prices: &prices,
            };
            open_remote(claij, &remote, why.as_deref())
        }
        (Llm::Remote { provider, .. }, Some(_)) => Err(Error::model(format!(
            "--model-path is for the local model, not {}: drop it or use --llm local",
            provider.name()
        ))),
        (Llm::Compatible { provider, model }, None) => {
            let Some(settings) = config.compatible(&provider) else {
                return Err(Error::model(format!(
                    "no provider `{provider}` in the configuration"
                )));
            };
            let compatible = Compatible {
                settings,
                model: &model,
                prices: &*config.prices()?,
            };
            open_compatible(claij, &compatible, why.as_deref())
        }
        (Llm::Compatible { provider, .. }, Some(_)) => Err(Error::model(format!(
            "--model-path is for the local model, not {provider}: drop it or use --llm local"
        ))),
    }
}

/// The model cache (see [`claij_local::model_dir`]).
#[cfg(feature = "local")]
pub fn model_dir(var: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    claij_local::model_dir(var)
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

/// Without the `local` feature there is no embedded model to open.
#[cfg(not(feature = "local"))]
fn open_local(_claij: &Claij, _model_path: Option<&Path>, _why: Option<&str>) -> Result<Opened> {
    Err(Error::unavailable(
        "the local model is not in this build of claij (its feature `local` is off)",
    ))
}

#[cfg(feature = "local")]
fn open_local(claij: &Claij, model_path: Option<&Path>, why: Option<&str>) -> Result<Opened> {
    let path = match model_path {
        Some(path) => path.to_path_buf(),
        None => model_dir(|name| claij.var(name)).join(DEFAULT_MODEL_FILE),
    };
    let model = model_name(&path);
    let backend = load_local(claij, &path)?;
    Ok(Opened {
        backend,
        notice: why.map(|why| format!("using local model {model} ({why})")),
        model,
        fallback: None,
    })
}

/// The local model at `path`, loaded on first use by this `claij` (its models, by canonical
/// path: every opener of the file shares one backend, so the ~270 MB model is read once whatever
/// names it); a [`crate::Notice::LoadingLocal`] says so (loading takes a second or more).
#[cfg(feature = "local")]
fn load_local(claij: &Claij, path: &Path) -> Result<Arc<dyn Backend>> {
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    // Held while loading, so two openers at once still load the file once.
    let mut loaded = claij.local.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(backend) = loaded.get(&key) {
        return Ok(Arc::clone(backend) as Arc<dyn Backend>);
    }
    // CLAIJ_KV_CACHE_MIB bounds the prefix cache (0 turns it off).
    let config = claij_local::LocalConfig::default()
        .with_env(|name| claij.var(name))
        .map_err(Error::config)?;
    claij
        .notices
        .tell(&crate::Notice::LoadingLocal { path: key.clone() });
    // The threads candle's pools are sized to: the process's, read from its environment.
    tracing::debug!(threads = LocalBackend::threads(), "loading the local model");
    let backend = Arc::new(LocalBackend::load_with(&key, config).map_err(Error::local)?);
    loaded.insert(key, Arc::clone(&backend));
    Ok(backend)
}

/// A server of the configuration's own to open: its entry, the model id, and the prices its
/// responses are priced at.
#[derive(Clone, Copy)]
struct Compatible<'a> {
    settings: &'a CompatibleSettings,
    model: &'a str,
    prices: &'a ModelTable,
}

/// A hosted model to open: the provider's settings, the model id, what the user called it, and
/// the prices its responses are priced at.
struct Remote<'a> {
    settings: &'a ProviderSettings,
    model: &'a str,
    name: &'a str,
    prices: &'a ModelTable,
}

fn open_remote(claij: &Claij, remote: &Remote<'_>, why: Option<&str>) -> Result<Opened> {
    let settings = remote.settings;
    let provider = settings.provider;
    let model = remote.model;
    let Some(key) = key(claij, &settings.api_key_env)? else {
        let target = format!("{}:{model}", provider.name());
        let also = if remote.name == target {
            String::new()
        } else {
            format!(" ({target})")
        };
        return Err(Error::key(format!(
            "{} is not set: export it to use --llm {}{also}",
            settings.api_key_env, remote.name
        )));
    };
    Ok(Opened {
        backend: provider.backend(key, settings, remote.prices, claij)?,
        model: model.to_owned(),
        notice: why.map(|why| format!("using {}:{model} ({why})", provider.name())),
        fallback: None,
    })
}

/// An OpenAI-compatible server of the configuration's own. The key is optional: sent when its
/// variable is set. Without `structured_output` in the entry, a rejected native request falls back
/// and what worked is remembered ([`crate::fallback`]).
fn open_compatible(
    claij: &Claij,
    compatible: &Compatible<'_>,
    why: Option<&str>,
) -> Result<Opened> {
    let Compatible {
        settings,
        model,
        prices,
    } = *compatible;
    let mut backend = OpenAiCompatible::new(settings.base_url.clone())
        .with_provider(&settings.name)
        .with_prices(prices);
    if let Some(var) = &settings.api_key_env
        && let Some(key) = key(claij, var)?
    {
        backend = backend.with_key(key);
    }
    let config = with_limits(
        backend.config().clone(),
        settings.max_body_bytes,
        settings.retry_budget,
    );
    let config = with_http(
        config,
        settings.http_version,
        settings.streams_per_connection,
    );
    let config = settings
        .gateway
        .apply(&settings.name, config, &|name| claij.var(name))?;
    let backend = backend.with_config(config);
    let notice = why.map(|why| format!("using {}:{model} ({why})", settings.name));
    let (backend, fallback): (Arc<dyn Backend>, _) = match settings.structured_output {
        Some(dialect) => (Arc::new(backend.with_structured_output(dialect)), None),
        None => {
            let memory = claij.fallback_memory();
            let fallback = Arc::new(StructuredFallback::new(backend, memory));
            (fallback.clone(), Some(fallback))
        }
    };
    Ok(Opened {
        backend,
        model: model.to_owned(),
        notice,
        fallback,
    })
}

/// `backend` with what the configuration sets, shared.
fn configured<A: Adapter + 'static>(
    backend: HttpBackend<A>,
    settings: &ProviderSettings,
    claij: &Claij,
) -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(configure(backend, settings, claij)?))
}

/// OpenRouter as the configuration sets it up (key, base URL, limits, gateway), for what is not a
/// model call: fetching its model list ([`crate::openrouter::refresh`]).
///
/// # Errors
///
/// Its key is not set, or its gateway settings do not apply.
#[cfg(feature = "openrouter")]
pub(crate) fn openrouter(claij: &Claij) -> Result<OpenRouter> {
    let settings = claij.settings().provider(Provider::OpenRouter);
    let Some(key) = key(claij, &settings.api_key_env)? else {
        return Err(Error::key(format!(
            "{} is not set: export it to fetch OpenRouter's model list",
            settings.api_key_env
        )));
    };
    configure(OpenRouter::new(key), settings, claij)
}

/// `backend` with what the configuration sets: `base_url`, `max_body_bytes`, `retry_budget_secs`,
/// `http_version`, `streams_per_connection`, `headers`, `query` and `auth_header` (their variables read now).
fn configure<A: Adapter + 'static>(
    backend: HttpBackend<A>,
    settings: &ProviderSettings,
    claij: &Claij,
) -> Result<HttpBackend<A>> {
    let mut config = backend.config().clone();
    if let Some(url) = &settings.base_url {
        config = config.with_base_url(url.clone());
    }
    let config = with_limits(config, settings.max_body_bytes, settings.retry_budget);
    let config = with_http(
        config,
        settings.http_version,
        settings.streams_per_connection,
    );
    let config = settings
        .gateway
        .apply(settings.provider.name(), config, &|name| claij.var(name))?;
    Ok(backend.with_config(config))
}

/// `config` with the `max_body_bytes` and `retry_budget_secs` the configuration sets.
fn with_limits(
    mut config: HttpConfig,
    max_body_bytes: Option<u64>,
    retry_budget: Option<Duration>,
) -> HttpConfig {
    if let Some(limit) = max_body_bytes {
        config = config.with_max_body_bytes(limit);
    }
    if let Some(budget) = retry_budget {
        let retry = config.retry.with_max_total(budget);
        config = config.with_retry(retry);
    }
    config
}

/// `config` with the `http_version` and `streams_per_connection` the configuration sets.
fn with_http(
    mut config: HttpConfig,
    version: Option<HttpVersion>,
    streams: Option<u32>,
) -> HttpConfig {
    if let Some(version) = version {
        config = config.with_http_version(version);
    }
    if let Some(streams) = streams {
        config = config.with_streams_per_connection(streams);
    }
    config
}

/// A key from the variable `var` (as `claij` reads variables); empty counts as unset. The key is
/// never shown.
fn key(claij: &Claij, var: &str) -> Result<Option<ApiKey>> {
    match claij.var(var).map(OsString::into_string) {
        Some(Ok(key)) if key.trim().is_empty() => Ok(None),
        Some(Ok(key)) => Ok(Some(ApiKey::new(key.trim()))),
        None => Ok(None),
        Some(Err(_)) => Err(Error::key(format!("{var} is not valid UTF-8"))),
    }
}

#[cfg(test)]
mod tests;
