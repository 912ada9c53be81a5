//! OpenRouter's model list (`GET /api/v1/models`), cached in claij's cache directory, so each
//! model's `supported_parameters` decide its native output, tools and temperature
//! ([`ModelCatalog`]) without a network call on every run.
//!
//! The file, `$XDG_CACHE_HOME/claij/openrouter-models.json` (else `~/.cache/claij/...`), holds the
//! list as the endpoint sent it, with where (the base URL as [`redact_url`] shows it: no user info
//! or query, which may hold a key) and when it was fetched:
//!
//! ```json
//! {"version": 1, "base_url": "https://openrouter.ai/api/v1", "fetched_at": 1765090000,
//!  "body": {"data": [{"id": "google/gemini-2.5-flash", "supported_parameters": ["tools", ...]}]}}
//! ```
//!
//! Opening an OpenRouter model ([`load`]) reads it without a network call while it is younger than
//! `[providers.openrouter] models_max_age_secs` ([`DEFAULT_MAX_AGE`], a day, by default). Without
//! a list for the backend's base URL, with an older one, or with a file that is not such a list
//! (torn, hand-edited, over [`MAX_BYTES`]: a warning names it), the list is fetched then, through
//! the backend (its client, key, timeouts and body limit), and cached. When that fetch fails, one
//! warning line says so and names `model_list`; the model opens with the stale list, else with
//! capabilities guessed; the same [`crate::Claij`] value does not try that base URL again, the next
//! run does (no failure is cached on disk). `[providers.openrouter] model_list = "off"` (a proxy
//! that blocks the endpoint) fetches nothing on opening: a cached list is used however old, and
//! `claij models --refresh` ([`refresh`]) still fetches it.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use claij_backends::openai::{ModelCatalog, OpenRouter};
use claij_backends::redact::redact_url;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::settings::{ModelList, ProviderSettings};

/// The file's name in the claij cache.
pub const FILE_NAME: &str = "openrouter-models.json";

/// How old the cached list may be before opening a model fetches it again, unless
/// `models_max_age_secs` says otherwise.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// The most bytes read from the file (the backend's default body limit): a bigger one is refetched.
pub const MAX_BYTES: u64 = 32 * 1024 * 1024;

/// The file's format version.
const VERSION: u32 = 1;

/// `$XDG_CACHE_HOME/claij/openrouter-models.json` (an absolute `XDG_CACHE_HOME`), else
/// `$HOME/.cache/claij/openrouter-models.json`; `None` without either. Empty variables count as unset.
pub fn path(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    crate::fallback::path(var).map(|p| p.with_file_name(FILE_NAME))
}

/// The cached list, as the file holds it.
#[derive(Serialize, Deserialize)]
struct File<'a> {
    version: u32,
    base_url: String,
    /// Seconds since the Unix epoch.
    fetched_at: u64,
    #[serde(borrow)]
    body: &'a RawValue,
}

/// A cached list read back: its catalog, where and when it was fetched.
#[derive(Debug, Clone)]
pub struct Cached {
    /// What it says of each model.
    pub catalog: Arc<ModelCatalog>,
    /// The base URL it was fetched from, as [`redact_url`] shows it.
    pub base_url: String,
    /// When it was fetched, in seconds since the Unix epoch.
    pub fetched_at: u64,
}

impl Cached {
    /// Its age at `now` (seconds since the Unix epoch); none when it was fetched later.
    pub fn age(&self, now: u64) -> Duration {
        Duration::from_secs(now.saturating_sub(self.fetched_at))
    }
}

/// Seconds since the Unix epoch, now.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The list cached at `path`: `Ok(None)` when there is no file.
///
/// # Errors
///
/// [`crate::ErrorKind::Io`] when it cannot be read; [`crate::ErrorKind::File`], naming the file,
/// when it is not a cached list (torn, hand-edited, another version, over [`MAX_BYTES`]).
pub fn read(path: &Path) -> Result<Option<Cached>> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(format!("cannot read {}", path.display()), e)),
    };
    let mut text = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
    let bad = |why: String| {
        Error::file(format!(
            "{}: not a cached OpenRouter model list ({why}); `claij models --refresh` rewrites it",
            path.display()
        ))
    };
    if text.len() as u64 > MAX_BYTES {
        return Err(bad(format!("over {MAX_BYTES} bytes")));
    }
    let file: File<'_> = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
    if file.version != VERSION {
        return Err(bad(format!("version {}, expected {VERSION}", file.version)));
    }
    let catalog = ModelCatalog::from_json(file.body.get().as_bytes())
        .map_err(|e| bad(format!("body: {e}")))?;
    Ok(Some(Cached {
        catalog: Arc::new(catalog),
        base_url: file.base_url,
        fetched_at: file.fetched_at,
    }))
}

/// Writes `body` (a models-endpoint body, already read as a catalog) as the list fetched from
/// `base_url` (kept as [`redact_url`] shows it) at `fetched_at`: to a temporary file beside
/// `path`, then renamed over it, so a reader never sees half a file.
///
/// # Errors
///
/// [`crate::ErrorKind::Io`] naming the file.
pub fn write(path: &Path, base_url: &str, fetched_at: u64, body: &[u8]) -> Result<()> {
    let io = |e| Error::io(format!("cannot write {}", path.display()), e);
    let body: &RawValue = serde_json::from_slice(body)
        .map_err(|e| Error::file_because("the model list is not JSON", e))?;
    let file = File {
        version: VERSION,
        base_url: redact_url(base_url),
        fetched_at,
        body,
    };
    let text = serde_json::to_vec(&file).map_err(|e| io(std::io::Error::other(e)))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let temporary = path.with_extension(format!("json.{}.tmp", std::process::id()));
    std::fs::write(&temporary, text).map_err(io)?;
    std::fs::rename(&temporary, path).map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        io(e)
    })
}

/// Fetches the list through `backend` (from synchronous code, [`HttpBackend::get_blocking`]) and
/// caches it at `path`: the catalog and how many models it lists.
///
/// [`HttpBackend::get_blocking`]: claij_backends::HttpBackend::get_blocking
///
/// # Errors
///
/// [`crate::ErrorKind::Backend`] when the fetch fails, [`crate::ErrorKind::File`] when the body is
/// not a model list, [`crate::ErrorKind::Io`] when the file cannot be written.
pub fn fetch(backend: &OpenRouter, path: &Path) -> Result<Arc<ModelCatalog>> {
    let body = backend
        .get_blocking(claij_backends::openai::MODELS_PATH)
        .map_err(Error::from)?;
    let catalog = ModelCatalog::from_json(&body).map_err(|e| {
        Error::file_because(
            format!(
                "{}/models did not answer with a model list",
                redact_url(&backend.config().base_url)
            ),
            e,
        )
    })?;
    write(path, &backend.config().base_url, now(), &body)?;
    Ok(Arc::new(catalog))
}

/// The catalog to open an OpenRouter model with, from the cache at `path` (see the module's
/// notes): the cached one while fresh, else fetched (once per [`crate::Claij`] value and base URL
/// while fetching fails); `None` (capabilities guessed) when there is no list for this base URL
/// and none could be fetched. With `model_list = "off"` nothing is fetched: the cached list is
/// used however old. Never fails: what goes wrong is one warning line naming `model_list`.
pub fn load(
    claij: &crate::Claij,
    backend: &OpenRouter,
    settings: &ProviderSettings,
    path: &Path,
) -> Option<Arc<ModelCatalog>> {
    let base_url = &backend.config().base_url;
    let shown = redact_url(base_url);
    let auto = settings.model_list == ModelList::Auto;
    let max_age = settings.models_max_age.unwrap_or(DEFAULT_MAX_AGE);
    let stale = match read(path) {
        Ok(Some(cached)) if cached.base_url == shown => {
            if !auto || cached.age(now()) <= max_age {
                return Some(cached.catalog);
            }
            Some(cached)
        }
        Ok(other) => {
            let cached = other.map(|cached| cached.base_url);
            if !auto {
                tracing::debug!(file = %path.display(), ?cached, "no cached OpenRouter model list for {shown} and model_list = \"off\": capabilities guessed (`claij models --refresh` fetches it)");
                return None;
            }
            None
        }
        Err(e) if !auto => {
            tracing::warn!(
                "{}: capabilities guessed (model_list = \"off\")",
                crate::error_chain(&e)
            );
            return None;
        }
        Err(e) => {
            tracing::warn!("{}: fetching it again", crate::error_chain(&e));
            None
        }
    };
    let mut failed = claij
        .model_list_failed
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if failed.contains(base_url) {
        return stale.map(|cached| cached.catalog);
    }
    match fetch(backend, path) {
        Ok(catalog) => Some(catalog),
        Err(e) => {
            failed.insert(base_url.clone());
            let kept = if stale.is_some() {
                "the cached one is used"
            } else {
                "capabilities guessed"
            };
            tracing::warn!(
                "cannot fetch OpenRouter's model list ({}): {kept}; \
                 [providers.openrouter] model_list = \"off\" stops fetching it",
                crate::error_chain(&e)
            );
            stale.map(|cached| cached.catalog)
        }
    }
}

/// What [`refresh`] did, for people and for JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refreshed {
    /// The file written.
    pub path: PathBuf,
    /// How many models the list has.
    pub models: usize,
    /// Where it came from, as [`redact_url`] shows it.
    pub base_url: String,
}

impl Refreshed {
    /// `N models from URL/models cached in FILE`, or as JSON (`{"file", "models", "base_url"}`).
    pub fn render(&self, json: bool) -> String {
        if json {
            let path = self.path.display().to_string();
            let value =
                serde_json::json!({"file": path, "models": self.models, "base_url": self.base_url});
            return value.to_string();
        }
        format!(
            "{} models from {}/models cached in {}",
            self.models,
            self.base_url,
            self.path.display()
        )
    }
}

/// `claij models --refresh`: fetches OpenRouter's model list with the configured OpenRouter
/// provider (key, base URL, limits) and caches it.
///
/// # Errors
///
/// No cache directory (neither `XDG_CACHE_HOME` nor `HOME`), no OpenRouter key, or what
/// [`fetch`] fails with.
pub fn refresh(claij: &crate::Claij) -> Result<Refreshed> {
    let path = path(|name| claij.var(name)).ok_or_else(|| {
        Error::config("no cache directory: set XDG_CACHE_HOME or HOME to keep the model list")
    })?;
    let backend = crate::model::openrouter(claij)?;
    let catalog = fetch(&backend, &path)?;
    Ok(Refreshed {
        path,
        models: catalog.len(),
        base_url: redact_url(&backend.config().base_url),
    })
}

#[cfg(test)]
mod tests;
