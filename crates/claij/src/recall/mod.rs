//! Memory by meaning's stores (feature `recall`): where the [`recall`] interceptor keeps its
//! memories. [`SqliteStore`] is the embedded default, one SQLite file per user that needs no server;
//! [`ChromaStore`] keeps them in a Chroma vector database server, for many machines
//! (`ChromaStore::open(ChromaOptions::new(url, dim)).await`).
//! With feature `local` too, [`LocalEmbedder`] is the embedded sentence model (all-MiniLM-L6-v2)
//! that turns a memory's text into its vector.
//!
//! ```
//! use claij::interceptors::builtin::recall::{MemoryStore, Query, Record};
//! use claij::recall::SqliteStore;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(dir.path().join("ada.sqlite3"), 3)?;
//! let fact = Record {
//!     id: "turn-2".into(),
//!     session: "trip".into(),
//!     text: "The user's cat is called Miso.".into(),
//!     embedding: vec![1.0, 0.0, 0.0],
//!     created_at: std::time::SystemTime::UNIX_EPOCH,
//! };
//! futures_executor::block_on(store.add(vec![fact]))?;
//! let query = Query { session: Some("trip"), vector: &[0.9, 0.1, 0.0], k: 3, min_similarity: 0.5 };
//! let hits = futures_executor::block_on(store.search(query))?;
//! assert_eq!(hits[0].record.text, "The user's cat is called Miso.");
//! # Ok(())
//! # }
//! ```
//!
//! [`recall`]: claij_interceptors::builtin::recall

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub mod chroma;
#[cfg(feature = "local")]
mod embed;
#[cfg(feature = "local")]
mod manage;
mod open;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod scenario_tests;
pub mod sqlite;

#[cfg(feature = "local")]
pub use embed::LocalEmbedder;
#[cfg(feature = "local")]
pub use manage::{Memories, Shown, lines, to_json};
pub use open::open_store;
#[cfg(feature = "local")]
pub use open::{embedder, interceptor};

pub use chroma::{
    AuthHeader, ChromaAuth, ChromaError, ChromaOptions, ChromaStore, DEFAULT_COLLECTION,
    DEFAULT_DATABASE, DEFAULT_MAX_BATCH, DEFAULT_MAX_REPLY_BYTES, DEFAULT_TENANT, DEFAULT_TIMEOUT,
};
pub use sqlite::{
    DEFAULT_BUSY_TIMEOUT, DEFAULT_MAX_CACHE_BYTES, DEFAULT_MAX_TEXT_BYTES, MAX_DIM, SCHEMA_VERSION,
    SqliteError, SqliteOptions, SqliteStore,
};

/// Milliseconds since the epoch (negative before), saturating: a record's time in a store.
pub(crate) fn to_millis(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

/// [`to_millis`] back, `None` when out of `SystemTime`'s range.
pub(crate) fn from_millis(ms: i64) -> Option<SystemTime> {
    let d = Duration::from_millis(ms.unsigned_abs());
    if ms >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(d)
    } else {
        SystemTime::UNIX_EPOCH.checked_sub(d)
    }
}

/// The directory of the per-user store files under a data directory: `<data_dir>/memory`.
pub fn memory_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("memory")
}

/// A user's store file under a data directory: `<data_dir>/memory/<user>.sqlite3`, or `None` when
/// `user` is empty or not a plain file name (a `/`, `\`, `..` or a leading `.`), so a user name
/// never points outside the directory.
pub fn user_store_path(data_dir: &Path, user: &str) -> Option<PathBuf> {
    let plain = !user.is_empty()
        && !user.starts_with('.')
        && !user.contains(['/', '\\', '\0'])
        && user.len() <= 128;
    plain.then(|| memory_dir(data_dir).join(format!("{user}.sqlite3")))
}

/// [`user_store_path`] under [`crate::settings::data_dir`]: `None` when there is no data directory
/// (no `XDG_DATA_HOME` or `HOME`) or the user name is not a plain file name.
pub fn default_user_store_path(user: &str) -> Option<PathBuf> {
    user_store_path(&crate::settings::data_dir()?, user)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_file_stays_in_the_memory_directory() {
        let data = Path::new("/data/claij");
        assert_eq!(
            user_store_path(data, "ada"),
            Some(PathBuf::from("/data/claij/memory/ada.sqlite3"))
        );
        for bad in ["", "../x", "a/b", "a\\b", ".hidden", &"x".repeat(129)] {
            assert_eq!(user_store_path(data, bad), None, "{bad:?}");
        }
    }
}
