//! OpenRouter's model list (`GET /api/v1/models`), cached in claij's cache directory, so each
//! model's `supported_parameters` decide its native output, tools and temperature
//! ([`ModelCatalog`]) without a network call on every run.
//!
//! The file, `$XDG_CACHE_HOME/claij/openrouter-models.json` (else `~/.cache/claij/...`), holds the
//! list as the endpoint sent it, with where and when it was fetched:
//!
//! ```json
//! {"version": 1, "base_url": "https://openrouter.ai/api/v1", "fetched_at": 1765090000,
//!  "body": {"data": [{"id": "google/gemini-2.5-flash", "supported_parameters": ["tools", ...]}]}}
//! ```
//!
//! `claij models --refresh` ([`refresh`]) fetches it. Opening an OpenRouter model ([`load`]) then
//! reads it without a network call while it is younger than `[providers.openrouter]
//! models_max_age_secs` ([`DEFAULT_MAX_AGE`], a day, by default); an older one is fetched again
//! through the backend (its client, key, timeouts and body limit), and kept when that fails, with a
//! warning. A file that is not such a list (torn, hand-edited, over [`MAX_BYTES`]) is refetched with
//! a warning naming it. Without the file, or for another base URL (a proxy, a test double), the
//! capabilities stay guessed: nothing is fetched until `claij models --refresh` asks for it.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use claij_backends::openai::{ModelCatalog, OpenRouter};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::settings::ProviderSettings;

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
    /// The base URL it was fetched from.
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
/// `base_url` at `fetched_at`: to a temporary file beside `path`, then renamed over it, so a reader
/// never sees half a file.
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
        base_url: base_url.to_owned(),
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
                backend.config().base_url
            ),
            e,
        )
    })?;
    write(path, &backend.config().base_url, now(), &body)?;
    Ok(Arc::new(catalog))
}

/// The catalog to open an OpenRouter model with, from the cache at `path` (see the module's
/// notes): the cached one while fresh, else fetched again; `None` (capabilities guessed) when
/// there is no list for this base URL. Never fails: what goes wrong is a warning.
pub fn load(
    backend: &OpenRouter,
    settings: &ProviderSettings,
    path: &Path,
) -> Option<Arc<ModelCatalog>> {
    let base_url = &backend.config().base_url;
    let max_age = settings.models_max_age.unwrap_or(DEFAULT_MAX_AGE);
    let stale = match read(path) {
        Ok(None) => {
            tracing::debug!(file = %path.display(), "no cached OpenRouter model list: capabilities guessed (`claij models --refresh` fetches it)");
            return None;
        }
        Ok(Some(cached)) if &cached.base_url != base_url => {
            tracing::debug!(file = %path.display(), cached = %cached.base_url, "the cached OpenRouter model list is another base URL's: capabilities guessed");
            return None;
        }
        Ok(Some(cached)) if cached.age(now()) <= max_age => return Some(cached.catalog),
        Ok(Some(cached)) => Some(cached),
        Err(e) => {
            tracing::warn!("{}: fetching it again", crate::error_chain(&e));
            None
        }
    };
    match fetch(backend, path) {
        Ok(catalog) => Some(catalog),
        Err(e) => {
            let kept = if stale.is_some() {
                "the cached one is used"
            } else {
                "capabilities guessed"
            };
            tracing::warn!(
                "cannot refresh OpenRouter's model list ({}): {kept}",
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
    /// Where it came from.
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
        base_url: backend.config().base_url.clone(),
    })
}

#[cfg(test)]
mod tests;
