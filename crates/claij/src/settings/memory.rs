//! `[memory]`: how a conversation's `memory` interceptor remembers ([`MemorySettings`], what
//! `Builder::memory` takes), read from the configuration with every error at `FILE:LINE: key`.
//!
//! ```toml
//! [memory]
//! strategy = "recall"        # bounded (the default), window, hierarchical or recall
//!
//! [memory.bounded]
//! max_chars = 2000           # the defaults
//! max_summaries = 20
//!
//! [memory.window]
//! size = 10
//!
//! [memory.hierarchical]
//! every = 5
//!
//! [memory.recall]
//! k = 5                      # the most memories recalled per turn
//! min_similarity = 0.2       # the lowest cosine similarity recalled, -1 to 1
//! max_chars = 1500           # the recalled memories' budget in the prompt
//! store_exchange = false     # keep the user's message and the answer with the summary
//! store = "embedded"         # the per-user SQLite file, or a Chroma server's http:// URL
//! collection = "claij_memories" # the server's collection
//! user = "ada"               # whose store file: default $USER, else "default"
//! max_cache_mib = 64         # the embedded store's vectors kept in memory (0: none; past it, read from the file)
//! busy_timeout_ms = 5000     # how long the embedded store waits for another process's lock
//! timeout_ms = 30000         # a server store's time per request
//! token_env = "CHROMA_TOKEN" # a server store's token: the variable holding it (sent as a Bearer token)
//! ```
//!
//! ```
//! use claij::settings::{Settings, memory::{Store, Strategy}};
//!
//! let text = "[memory]\nstrategy = \"recall\"\n[memory.recall]\nk = 3\n";
//! let settings = Settings::parse(text, std::path::Path::new("config.toml"))?;
//! assert_eq!(settings.memory.strategy, Strategy::Recall);
//! assert_eq!(settings.memory.recall.k, 3);
//! assert_eq!(settings.memory.recall.store, Store::Embedded);
//! # Ok::<(), claij::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;

use toml::Value;

use super::{Fail, Settings, as_str, as_table, whole_in};
use crate::error::Result;

/// The most memories recalled per turn (`memory.recall.k`, `--recall-k`).
pub const MAX_RECALL_K: usize = 1_000;
/// The largest character budget of any memory (`max_chars`, `--recall-max-chars`): 1 MB of text.
pub const MAX_MEMORY_CHARS: usize = 1_000_000;
/// The largest count of summaries, window size or refresh period.
pub const MAX_MEMORY_COUNT: usize = 100_000;
/// The default window of [`Strategy::Window`]: the last 10 summaries.
pub const DEFAULT_WINDOW: usize = 10;
/// The default refresh period of [`Strategy::Hierarchical`]: long-term insights every 5 turns.
pub const DEFAULT_EVERY: u64 = 5;
/// The default `max_cache_mib` (the embedded store's `SqliteOptions::max_cache_bytes`, 64 MiB).
pub const DEFAULT_CACHE_MIB: usize = 64;
/// The default `busy_timeout_ms` (the embedded store's `SqliteOptions::busy_timeout`, 5 s).
pub const DEFAULT_BUSY_TIMEOUT_MS: usize = 5_000;
/// The default `timeout_ms` of a server store's request (30 s).
pub const DEFAULT_SERVER_TIMEOUT_MS: usize = 30_000;
/// The longest `timeout_ms`: ten minutes.
pub const MAX_SERVER_TIMEOUT_MS: usize = 600_000;
/// The largest `max_cache_mib`: 64 GiB.
pub const MAX_CACHE_MIB: usize = 65_536;
/// The longest `busy_timeout_ms`: ten minutes.
pub const MAX_BUSY_TIMEOUT_MS: usize = 600_000;
/// The default collection of a server store.
pub const DEFAULT_COLLECTION: &str = "claij_memories";

/// How the `memory` interceptor remembers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Every summary, oldest dropped past a character and a count budget (the default).
    #[default]
    Bounded,
    /// The last N summaries.
    Window,
    /// The summaries since the last refresh, and long-term insights rewritten every N turns.
    Hierarchical,
    /// Memory by meaning: each turn's summary embedded and stored, the most similar recalled
    /// (features `recall` and `local`).
    Recall,
}

impl Strategy {
    /// Every strategy, in the order [`Strategy::name`] lists them.
    pub const ALL: [Strategy; 4] = [
        Strategy::Bounded,
        Strategy::Window,
        Strategy::Hierarchical,
        Strategy::Recall,
    ];

    /// `bounded`, `window`, `hierarchical` or `recall`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Bounded => "bounded",
            Strategy::Window => "window",
            Strategy::Hierarchical => "hierarchical",
            Strategy::Recall => "recall",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        Strategy::ALL
            .into_iter()
            .find(|s| s.name() == text)
            .ok_or_else(|| {
                format!("expected one of bounded, window, hierarchical, recall (got {text:?})")
            })
    }
}

/// Where recalled memories are kept.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Store {
    /// The user's SQLite file under the data directory (`<data_dir>/memory/<user>.sqlite3`):
    /// no server (the default).
    #[default]
    Embedded,
    /// A vector database server (Chroma) at this `http://` or `https://` URL.
    Server(String),
}

impl fmt::Display for Store {
    /// `embedded`, or the URL without its user info, query or fragment.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Store::Embedded => f.write_str("embedded"),
            Store::Server(url) => f.write_str(&claij_backends::redact::redact_url(url)),
        }
    }
}

impl FromStr for Store {
    type Err = String;

    /// `embedded`, or an `http://` or `https://` URL (a trailing `/` is dropped).
    fn from_str(text: &str) -> std::result::Result<Self, String> {
        if text == "embedded" {
            return Ok(Store::Embedded);
        }
        let rest = text
            .strip_prefix("http://")
            .or_else(|| text.strip_prefix("https://"));
        match rest {
            Some(host)
                if !host.trim_end_matches('/').is_empty()
                    && !text.contains(char::is_whitespace) =>
            {
                Ok(Store::Server(text.trim_end_matches('/').to_owned()))
            }
            _ => Err(format!(
                "expected \"embedded\" or a server's http:// or https:// URL (got {text:?})"
            )),
        }
    }
}

/// `[memory.recall]`: what the recall strategy recalls and where it keeps memories.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallSettings {
    /// `k`: the most memories recalled per turn (default 5).
    pub k: usize,
    /// `min_similarity`: the lowest cosine similarity recalled (default 0.2).
    pub min_similarity: f32,
    /// `max_chars`: the most characters of recalled memories in the prompt (default 1,500); past
    /// it the least similar are left out, and the prompt says how many.
    pub max_chars: usize,
    /// `store_exchange`: a memory holds the user's message and the answer besides the summary.
    pub store_exchange: bool,
    /// `store`: where memories are kept.
    pub store: Store,
    /// `collection`: a server store's collection (default [`DEFAULT_COLLECTION`]).
    pub collection: String,
    /// `user`: whose store file (`None`: [`RecallSettings::user_or_env`]).
    pub user: Option<String>,
    /// `max_cache_mib`: the embedded store's vector cache, in MiB (default 64; 0 keeps none). Past
    /// it the newer memories are read from the file at each search, still exact.
    pub max_cache_mib: usize,
    /// `busy_timeout_ms`: how long the embedded store waits for another process's lock (default
    /// 5,000).
    pub busy_timeout_ms: usize,
    /// `timeout_ms`: a server store's time for each request (default 30,000).
    pub timeout_ms: usize,
    /// `token_env`: the environment variable holding a server store's token, sent as
    /// `Authorization: Bearer` (default none: no token).
    pub token_env: Option<String>,
}

impl Default for RecallSettings {
    fn default() -> Self {
        let config = claij_interceptors::builtin::recall::RecallConfig::default();
        Self {
            k: config.k,
            min_similarity: config.min_similarity,
            max_chars: config.max_chars,
            store_exchange: config.store_exchange,
            store: Store::Embedded,
            collection: DEFAULT_COLLECTION.to_owned(),
            user: None,
            max_cache_mib: DEFAULT_CACHE_MIB,
            busy_timeout_ms: DEFAULT_BUSY_TIMEOUT_MS,
            timeout_ms: DEFAULT_SERVER_TIMEOUT_MS,
            token_env: None,
        }
    }
}

impl RecallSettings {
    /// The user whose store is opened: `user`, else `$USER` (when set and not empty), else
    /// `default`.
    #[must_use]
    pub fn user_or_env(&self, var: impl Fn(&str) -> Option<std::ffi::OsString>) -> String {
        self.user.clone().unwrap_or_else(|| {
            var("USER")
                .map(|v| v.to_string_lossy().into_owned())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| "default".to_owned())
        })
    }

    /// The interceptor's configuration.
    #[must_use]
    pub fn config(&self) -> claij_interceptors::builtin::recall::RecallConfig {
        claij_interceptors::builtin::recall::RecallConfig {
            k: self.k,
            min_similarity: self.min_similarity,
            max_chars: self.max_chars,
            store_exchange: self.store_exchange,
        }
    }
}

/// `[memory]`: the strategy and every strategy's sizes (only the chosen one's are used).
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySettings {
    /// `strategy` (default [`Strategy::Bounded`]).
    pub strategy: Strategy,
    /// `bounded.max_chars`: the summaries' character budget (default 2,000).
    pub bounded_max_chars: usize,
    /// `bounded.max_summaries`: the most summaries kept (default 20).
    pub bounded_max_summaries: usize,
    /// `window.size`: the summaries kept (default [`DEFAULT_WINDOW`]).
    pub window_size: usize,
    /// `hierarchical.every`: turns between long-term insight refreshes (default [`DEFAULT_EVERY`]).
    pub hierarchical_every: u64,
    /// `[memory.recall]`.
    pub recall: RecallSettings,
}

impl Default for MemorySettings {
    fn default() -> Self {
        let bounded = claij_interceptors::builtin::memory::Bounded::default();
        Self {
            strategy: Strategy::Bounded,
            bounded_max_chars: bounded.max_chars,
            bounded_max_summaries: bounded.max_summaries,
            window_size: DEFAULT_WINDOW,
            hierarchical_every: DEFAULT_EVERY,
            recall: RecallSettings::default(),
        }
    }
}

/// What a caller (a command line's flags) sets over `[memory]`: each `Some` replaces the setting
/// ([`MemorySettings::overridden`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryOverrides {
    /// Over `strategy`.
    pub strategy: Option<Strategy>,
    /// Over `recall.k`.
    pub k: Option<usize>,
    /// Over `recall.min_similarity`.
    pub min_similarity: Option<f32>,
    /// Over `recall.max_chars`.
    pub max_chars: Option<usize>,
    /// Over `recall.store`.
    pub store: Option<Store>,
}

impl MemorySettings {
    /// These settings with `overrides` over them.
    #[must_use]
    pub fn overridden(mut self, overrides: &MemoryOverrides) -> Self {
        self.strategy = overrides.strategy.unwrap_or(self.strategy);
        let recall = &mut self.recall;
        recall.k = overrides.k.unwrap_or(recall.k);
        recall.min_similarity = overrides.min_similarity.unwrap_or(recall.min_similarity);
        recall.max_chars = overrides.max_chars.unwrap_or(recall.max_chars);
        if let Some(store) = &overrides.store {
            recall.store = store.clone();
        }
        self
    }

    /// The summary strategy's interceptor (`None` for [`Strategy::Recall`], which is another
    /// interceptor: see `claij::recall::interceptor`).
    #[must_use]
    pub fn summaries(&self) -> Option<claij_interceptors::builtin::memory::Memory> {
        use claij_interceptors::builtin::memory::{Bounded, Hierarchical, Memory, Window};
        let bounded = Bounded::default();
        match self.strategy {
            Strategy::Bounded => Some(Memory::new(
                Bounded::new(self.bounded_max_chars, self.bounded_max_summaries)
                    .with_max_summary_chars(bounded.max_summary_chars.min(self.bounded_max_chars)),
            )),
            Strategy::Window => Some(Memory::new(Window::new(self.window_size))),
            Strategy::Hierarchical => Some(Memory::new(Hierarchical::new(self.hierarchical_every))),
            Strategy::Recall => None,
        }
    }
}

impl Settings {
    /// `[memory]`: `strategy`, and the tables `bounded`, `window`, `hierarchical`, `recall`.
    pub(super) fn read_memory(&mut self, value: &Value, fail: &Fail<'_>) -> Result<()> {
        let memory = &mut self.memory;
        for (key, value) in as_table(value, &["memory"], fail)? {
            let keys = ["memory", key.as_str()];
            match key.as_str() {
                "strategy" => {
                    memory.strategy = as_str(value, &keys, fail)?
                        .parse()
                        .map_err(|e: String| fail(&keys, &e))?;
                }
                "bounded" | "window" | "hierarchical" | "recall" => {
                    for (inner, value) in as_table(value, &keys, fail)? {
                        let keys = ["memory", key.as_str(), inner.as_str()];
                        read_inner(memory, &keys, value, fail)?;
                    }
                }
                _ => {
                    return Err(fail(
                        &keys,
                        "unknown key (expected strategy, bounded, window, hierarchical or recall)",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// One key of `[memory.bounded]`, `[memory.window]`, `[memory.hierarchical]` or `[memory.recall]`.
fn read_inner(
    memory: &mut MemorySettings,
    keys: &[&str; 3],
    value: &Value,
    fail: &Fail<'_>,
) -> Result<()> {
    let count = |value: &Value| {
        whole_in(
            value,
            1..=MAX_MEMORY_COUNT,
            &format!("a whole number from 1 to {MAX_MEMORY_COUNT}"),
            keys,
            fail,
        )
    };
    let chars = |value: &Value| {
        whole_in(
            value,
            1..=MAX_MEMORY_CHARS,
            &format!("a whole number of characters from 1 to {MAX_MEMORY_CHARS}"),
            keys,
            fail,
        )
    };
    let recall = &mut memory.recall;
    match (keys[1], keys[2]) {
        ("bounded", "max_chars") => memory.bounded_max_chars = chars(value)?,
        ("bounded", "max_summaries") => memory.bounded_max_summaries = count(value)?,
        ("window", "size") => memory.window_size = count(value)?,
        ("hierarchical", "every") => {
            memory.hierarchical_every = u64::try_from(count(value)?).unwrap_or(u64::MAX);
        }
        ("recall", "k") => {
            recall.k = whole_in(
                value,
                1..=MAX_RECALL_K,
                &format!("a whole number from 1 to {MAX_RECALL_K}"),
                keys,
                fail,
            )?;
        }
        ("recall", "min_similarity") => {
            recall.min_similarity = similarity(
                value
                    .as_float()
                    .or_else(|| value.as_integer().map(|n| n as f64)),
            )
            .map_err(|e| fail(keys, &e))?;
        }
        ("recall", "max_chars") => recall.max_chars = chars(value)?,
        ("recall", "store_exchange") => {
            recall.store_exchange = value
                .as_bool()
                .ok_or_else(|| fail(keys, "expected true or false"))?;
        }
        ("recall", "store") => {
            recall.store = as_str(value, keys, fail)?
                .parse()
                .map_err(|e: String| fail(keys, &e))?;
        }
        ("recall", "collection") => {
            let name = as_str(value, keys, fail)?;
            recall.collection = collection(name).map_err(|e| fail(keys, &e))?;
        }
        ("recall", "max_cache_mib") => {
            recall.max_cache_mib = whole_in(
                value,
                0..=MAX_CACHE_MIB,
                &format!("a whole number of MiB from 0 to {MAX_CACHE_MIB}"),
                keys,
                fail,
            )?;
        }
        ("recall", "busy_timeout_ms") => {
            recall.busy_timeout_ms = whole_in(
                value,
                0..=MAX_BUSY_TIMEOUT_MS,
                &format!("a whole number of milliseconds from 0 to {MAX_BUSY_TIMEOUT_MS}"),
                keys,
                fail,
            )?;
        }
        ("recall", "timeout_ms") => {
            recall.timeout_ms = whole_in(
                value,
                1..=MAX_SERVER_TIMEOUT_MS,
                &format!("a whole number of milliseconds from 1 to {MAX_SERVER_TIMEOUT_MS}"),
                keys,
                fail,
            )?;
        }
        ("recall", "token_env") => {
            let var = as_str(value, keys, fail)?;
            if var.is_empty() || var.contains(['=', '\0']) {
                return Err(fail(keys, "expected the name of an environment variable"));
            }
            recall.token_env = Some(var.to_owned());
        }
        ("recall", "user") => {
            let user = as_str(value, keys, fail)?;
            if !plain_user(user) {
                return Err(fail(
                    keys,
                    "expected a plain file name (not empty, no `/`, `\\` or leading `.`, at most 128 bytes)",
                ));
            }
            recall.user = Some(user.to_owned());
        }
        (table, _) => {
            let expected = match table {
                "bounded" => "max_chars or max_summaries",
                "window" => "size",
                "hierarchical" => "every",
                _ => {
                    "k, min_similarity, max_chars, store_exchange, store, collection, user, \
                     max_cache_mib, busy_timeout_ms, timeout_ms or token_env"
                }
            };
            return Err(fail(keys, &format!("unknown key (expected {expected})")));
        }
    }
    Ok(())
}

/// Whether `user` may name a store file: not empty, no `/`, `\\` or NUL, no leading `.`, at most
/// 128 bytes (as `claij::recall::user_store_path` checks).
#[must_use]
pub fn plain_user(user: &str) -> bool {
    !user.is_empty()
        && !user.starts_with('.')
        && !user.contains(['/', '\\', '\0'])
        && user.len() <= 128
}

/// A similarity floor: a finite number from -1 to 1.
///
/// # Errors
///
/// Not a number, or out of range (the message says what is expected).
pub fn similarity(value: Option<f64>) -> std::result::Result<f32, String> {
    match value {
        Some(x) if x.is_finite() && (-1.0..=1.0).contains(&x) => Ok(x as f32),
        _ => Err("expected a cosine similarity from -1 to 1".to_owned()),
    }
}

/// A server collection's name: 3 to 512 letters, digits, `_`, `-` or `.`.
///
/// # Errors
///
/// Another name (the message says what is expected).
pub fn collection(name: &str) -> std::result::Result<String, String> {
    let ok = (3..=512).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(name.to_owned())
    } else {
        Err("expected a collection name of 3 to 512 letters, digits, `_`, `-` or `.`".to_owned())
    }
}

#[cfg(test)]
mod tests;
