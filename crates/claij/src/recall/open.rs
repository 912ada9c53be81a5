//! Opening what `[memory.recall]` names: the store ([`open_store`]) and, with feature `local`, the
//! embedded sentence model once per process ([`embedder`]) and the interceptor ([`interceptor`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use claij_interceptors::builtin::recall::MemoryStore;

use super::{
    AuthHeader, ChromaAuth, ChromaOptions, ChromaStore, SqliteOptions, SqliteStore, user_store_path,
};
use crate::error::{Error, ErrorKind, Result};
use crate::settings::memory::{RecallSettings, Store};

/// The store `settings` name, for vectors of `dim` dimensions: the user's SQLite file under
/// `data_dir` ([`user_store_path`]) for `store = "embedded"`, or the server at the URL.
///
/// # Errors
///
/// No data directory ([`ErrorKind::Config`], naming `XDG_DATA_HOME` and `HOME`); a user that is not
/// a plain file name; the file cannot be opened or is not a store of `dim` dimensions (the
/// store's error, naming the file); a server store in a build without one
/// ([`ErrorKind::Unavailable`]).
pub async fn open_store(
    settings: &RecallSettings,
    data_dir: Option<&Path>,
    dim: usize,
) -> Result<Arc<dyn MemoryStore>> {
    match &settings.store {
        Store::Embedded => {
            let user = settings.user_or_env(|name| std::env::var_os(name));
            let data_dir = data_dir.ok_or_else(|| {
                Error::config(
                    "memory.recall.store = \"embedded\": no data directory for the store file \
                     (set XDG_DATA_HOME or HOME)",
                )
            })?;
            let path = user_store_path(data_dir, &user).ok_or_else(|| {
                Error::config(format!(
                    "memory.recall.user = {user:?}: not a plain file name for the store file \
                     (set memory.recall.user)"
                ))
            })?;
            let options = SqliteOptions {
                busy_timeout: Duration::from_millis(settings.busy_timeout_ms as u64),
                max_cache_bytes: settings.max_cache_mib.saturating_mul(1024 * 1024),
                ..SqliteOptions::default()
            };
            let store = SqliteStore::open_with(&path, dim, options)
                .map_err(|e| Error::with_kind(ErrorKind::File, crate::error_chain(&e)))?;
            Ok(Arc::new(store))
        }
        Store::Server(url) => {
            let mut options = ChromaOptions::new(url.clone(), dim)
                .with_collection(settings.collection.clone())
                .with_timeout(Duration::from_millis(settings.timeout_ms as u64));
            if let Some(var) = &settings.token_env {
                let auth =
                    ChromaAuth::from_env(AuthHeader::Bearer, var, |name| std::env::var(name).ok())
                        .map_err(|e| Error::config(format!("memory.recall.token_env: {e}")))?;
                options = options.with_auth(auth);
            }
            let store = ChromaStore::open(options).await.map_err(|e| {
                Error::with_kind(
                    ErrorKind::Backend,
                    format!("memory.recall.store: {}", crate::error_chain(&e)),
                )
            })?;
            Ok(Arc::new(store))
        }
    }
}

#[cfg(feature = "local")]
mod local {
    use std::sync::{Arc, Mutex, PoisonError};

    use claij_interceptors::builtin::recall::{Embedder, Recall};

    use super::open_store;
    use crate::error::{Error, ErrorKind, Result};
    use crate::recall::LocalEmbedder;
    use crate::settings::Settings;

    /// The model, once opened in this process.
    static EMBEDDER: Mutex<Option<LocalEmbedder>> = Mutex::new(None);

    /// The embedded sentence model ([`LocalEmbedder::open_default`]), opened on first use and then
    /// shared by every conversation of the process.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Local`]: the model is missing or broken; the message names the file and
    /// `cargo xtask embed-model`. A failed open is tried again on the next call.
    pub fn embedder() -> Result<LocalEmbedder> {
        let mut slot = EMBEDDER.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(model) = slot.as_ref() {
            return Ok(model.clone());
        }
        let model = LocalEmbedder::open_default().map_err(|e| {
            Error::with_kind(
                ErrorKind::Local,
                format!(
                    "the recall memory's embedding model: {}",
                    crate::error_chain(&e)
                ),
            )
        })?;
        *slot = Some(model.clone());
        Ok(model)
    }

    /// The `recall` interceptor `settings`' `[memory.recall]` describes (with the flags over
    /// it): the embedded model ([`embedder`]) and the store ([`open_store`] under the settings'
    /// data directory). Its session id is new: a conversation's carried one replaces it.
    ///
    /// # Errors
    ///
    /// As [`embedder`] and [`open_store`].
    pub async fn interceptor(
        recall: &crate::settings::memory::RecallSettings,
        settings: &Settings,
    ) -> Result<Recall> {
        let embedder = embedder()?;
        let store = open_store(recall, settings.data_dir.as_deref(), embedder.dim()).await?;
        Ok(Recall::new(Arc::new(embedder), store).with_config(recall.config()))
    }
}

#[cfg(feature = "local")]
pub use local::{embedder, interceptor};

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        futures_executor::block_on(f)
    }

    #[test]
    fn the_embedded_store_is_the_users_file_under_the_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        let settings = RecallSettings {
            user: Some("ada".into()),
            ..RecallSettings::default()
        };
        let store = block_on(open_store(&settings, Some(dir.path()), 3)).unwrap();
        drop(store);
        assert!(dir.path().join("memory").join("ada.sqlite3").is_file());
        // The same file again, for other dimensions: the store's error names it.
        let Err(e) = block_on(open_store(&settings, Some(dir.path()), 4)) else {
            panic!("opened 3 dimensions as 4");
        };
        assert!(e.to_string().contains("ada.sqlite3"), "{e}");
        assert_eq!(e.kind(), ErrorKind::File);
    }

    /// `busy_timeout_ms` reaches the store: another connection's lock is waited for that long, and
    /// the error says the timeout and the key.
    #[test]
    fn the_busy_timeout_key_reaches_the_embedded_store() {
        use claij_interceptors::builtin::recall::Record;
        let dir = tempfile::tempdir().unwrap();
        let settings = RecallSettings {
            user: Some("ada".into()),
            busy_timeout_ms: 50,
            ..RecallSettings::default()
        };
        let store = block_on(open_store(&settings, Some(dir.path()), 3)).unwrap();
        let locker =
            rusqlite::Connection::open(dir.path().join("memory").join("ada.sqlite3")).unwrap();
        locker.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let record = Record {
            id: "r1".into(),
            session: "s".into(),
            text: "t".into(),
            embedding: vec![1.0, 0.0, 0.0],
            created_at: std::time::SystemTime::UNIX_EPOCH,
        };
        let e = block_on(store.add(vec![record])).unwrap_err();
        assert!(e.to_string().contains("50ms"), "{e}");
        assert!(
            e.to_string().contains("memory.recall.busy_timeout_ms"),
            "{e}"
        );
    }

    #[test]
    fn no_data_directory_or_a_bad_user_is_a_config_error_naming_the_key() {
        let Err(e) = block_on(open_store(&RecallSettings::default(), None, 3)) else {
            panic!("opened without a data directory");
        };
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(e.to_string().contains("XDG_DATA_HOME"), "{e}");
        let bad = RecallSettings {
            user: Some("../x".into()),
            ..RecallSettings::default()
        };
        let Err(e) = block_on(open_store(&bad, Some(Path::new("/nowhere")), 3)) else {
            panic!("opened a user outside the directory");
        };
        assert!(e.to_string().contains("memory.recall.user"), "{e}");
    }

    /// A server URL opens a Chroma store: nobody listening is a backend error naming the key and
    /// the URL; a token variable that is not set is a configuration error naming it.
    #[test]
    fn a_server_url_opens_the_server_store() {
        let [port] = claij_test_support::net::free_ports::<1>().unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let settings = RecallSettings {
            store: Store::Server(url.clone()),
            timeout_ms: 2_000,
            ..RecallSettings::default()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let Err(e) = rt.block_on(open_store(&settings, None, 3)) else {
            panic!("a server store opened with nobody listening");
        };
        assert_eq!(e.kind(), ErrorKind::Backend);
        let said = e.to_string();
        assert!(said.starts_with("memory.recall.store: "), "{said}");
        assert!(
            said.contains(&url) && said.contains("cannot connect"),
            "{said}"
        );
        let settings = RecallSettings {
            token_env: Some("CLAIJ_TEST_NO_SUCH_TOKEN_VARIABLE".into()),
            ..settings
        };
        let Err(e) = rt.block_on(open_store(&settings, None, 3)) else {
            panic!("a server store opened without its token");
        };
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(
            e.to_string().contains("CLAIJ_TEST_NO_SUCH_TOKEN_VARIABLE"),
            "{e}"
        );
    }
}
