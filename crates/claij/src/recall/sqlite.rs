//! [`SqliteStore`]: memories in one SQLite file, vectors as little-endian `f32` BLOBs, searched by
//! exact cosine in Rust.
//!
//! The file is in WAL mode with a busy timeout, so two processes writing at once wait for each
//! other instead of failing; every `add` is one transaction (all or none). A `claij_schema` table
//! holds the schema version and the vectors' dimensions: a newer version, or another dimension, is
//! refused with an error naming the file, at open and at every operation after it (another process
//! may upgrade the file while this one has it open). Reads are bounded: a record's text is at most
//! [`SqliteOptions::max_text_bytes`] and its vector exactly `dim` floats, or the read fails naming
//! the file and the record. SQLite's failures a user meets are typed ([`SqliteError::Busy`],
//! [`SqliteError::DiskFull`], [`SqliteError::ReadOnly`], [`SqliteError::CannotOpen`]), each naming
//! the file.
//!
//! Search keeps vectors in memory (with the ids and sessions, not the texts), at most
//! [`SqliteOptions::max_cache_bytes`] of them, and re-reads them only when `PRAGMA data_version`
//! says another connection wrote. Past the bound the cache holds the file's oldest records (by
//! insertion) that fit, and every search reads the newer ones from the file: still exact, only
//! slower, its memory bounded (the `k` best so far). The texts of the top `k` are read from the file.
//!
//! The [`MemoryStore`] operations run off the async runtime ([`off_runtime`]): inside a tokio
//! runtime on its blocking pool, so a search's scan or a wait on another process's lock never holds
//! up a runtime worker; outside one, inline. An operation whose future is dropped still runs to its
//! end (an add is still all or none).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use claij_backends::BoxFuture;
use claij_interceptors::builtin::recall::{
    Forget, Hit, MemoryStore, Query, Record, StoreError, off_runtime,
};
use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};
use tracing::debug;

use super::{from_millis, to_millis};

/// The schema version this build writes and reads; a file of a newer one is refused.
pub const SCHEMA_VERSION: i64 = 1;
/// How long a write waits for another process's write to finish before failing
/// ([`SqliteOptions::busy_timeout`]).
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest text a record may hold, in bytes ([`SqliteOptions::max_text_bytes`]).
pub const DEFAULT_MAX_TEXT_BYTES: usize = 64 * 1024;
/// The most memory the vector cache takes, in bytes ([`SqliteOptions::max_cache_bytes`]): 64 MiB,
/// about 41,000 memories of 384 dimensions.
pub const DEFAULT_MAX_CACHE_BYTES: usize = 64 * 1024 * 1024;
/// The most dimensions a store's vectors may have.
pub const MAX_DIM: usize = 16_384;

/// How a [`SqliteStore`] is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqliteOptions {
    /// How long a statement waits for another connection's lock ([`DEFAULT_BUSY_TIMEOUT`]); past
    /// it the operation fails with [`SqliteError::Busy`].
    pub busy_timeout: Duration,
    /// The longest text a record may hold, checked on add and on read ([`DEFAULT_MAX_TEXT_BYTES`]).
    pub max_text_bytes: usize,
    /// The most memory the vectors kept between searches may take, in bytes
    /// ([`DEFAULT_MAX_CACHE_BYTES`]), each cached record counted as its vector (`4 × dim` bytes),
    /// its id, its session and under 100 bytes of bookkeeping. Past it the cache holds the file's
    /// oldest records that fit and a search reads the rest from the file: the same hits, more time.
    /// `0` keeps none: every search reads every vector from the file.
    pub max_cache_bytes: usize,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            max_text_bytes: DEFAULT_MAX_TEXT_BYTES,
            max_cache_bytes: DEFAULT_MAX_CACHE_BYTES,
        }
    }
}

/// What went wrong in a [`SqliteStore`], the source of a [`StoreError::Engine`] whose `store` is the
/// file's path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteError {
    /// SQLite failed otherwise: the file is not a database, is torn.
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Another connection (another process) kept the file locked past
    /// [`SqliteOptions::busy_timeout`].
    #[error(
        "another connection kept the file locked past the busy timeout of {timeout:?} \
         (busy_timeout; memory.recall.busy_timeout_ms): {error}"
    )]
    Busy {
        /// The timeout waited.
        timeout: Duration,
        /// What SQLite said.
        error: rusqlite::Error,
    },
    /// The disk is full (or the file reached SQLite's page limit): the operation was rolled back.
    #[error("the disk is full: nothing of this operation was written ({0})")]
    DiskFull(rusqlite::Error),
    /// The file, or the directory that holds it and its `-wal` and `-shm` files, is read-only.
    #[error(
        "the file or its directory is read-only: claij writes the file, and its -wal and -shm \
         files beside it ({0})"
    )]
    ReadOnly(rusqlite::Error),
    /// The file cannot be opened or made: its directory is not writable, or it is not a file.
    #[error(
        "the file cannot be opened or created: its directory must be writable, since claij \
         creates the file and its -wal and -shm files there ({0})"
    )]
    CannotOpen(rusqlite::Error),
    /// The file could not be put in WAL mode (a file system without shared memory, such as some
    /// network file systems).
    #[error("journal_mode stayed {0}: the store needs WAL, which this file system may not hold")]
    NotWal(String),
    /// The directory of the file could not be made.
    #[error("creating the directory {dir}: {source}")]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file was written by a newer claij.
    #[error("schema version {found} is newer than the {supported} this claij reads: upgrade claij")]
    NewerSchema {
        /// The file's version.
        found: i64,
        /// [`SCHEMA_VERSION`].
        supported: i64,
    },
    /// The file's schema table is not one this claij wrote.
    #[error("the claij_schema table is malformed: {0}")]
    BadSchema(String),
    /// The file holds vectors of other dimensions than asked for.
    #[error("the store holds {stored}-dimension vectors, opened for {requested}")]
    Dimensions {
        /// The file's.
        stored: usize,
        /// The caller's.
        requested: usize,
    },
    /// Dimensions of 0 or above [`MAX_DIM`].
    #[error("{0} dimensions: a store's vectors have 1 to {MAX_DIM}")]
    BadDimensions(usize),
    /// A record's text is longer than [`SqliteOptions::max_text_bytes`] (on add).
    #[error(
        "record \"{id}\": its text is {len} bytes, above the limit of {limit} (max_text_bytes)"
    )]
    TextTooLong {
        /// The record.
        id: String,
        /// Its text's length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// A stored record cannot be read back: a vector of the wrong size or not finite, a text too
    /// long or not UTF-8, a bad time.
    #[error("record \"{id}\" is corrupt: {what}")]
    Corrupt {
        /// The record (as far as it could be read).
        id: String,
        /// What is wrong.
        what: String,
    },
}

impl SqliteError {
    /// SQLite's failures a user can act on, typed; the rest as they are.
    fn classified(self, busy_timeout: Duration) -> Self {
        let Self::Sqlite(error) = self else {
            return self;
        };
        match error.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Self::Busy {
                timeout: busy_timeout,
                error,
            },
            Some(ErrorCode::DiskFull) => Self::DiskFull(error),
            Some(ErrorCode::ReadOnly) => Self::ReadOnly(error),
            Some(ErrorCode::CannotOpen) => Self::CannotOpen(error),
            _ => Self::Sqlite(error),
        }
    }
}

/// A [`MemoryStore`] in one SQLite file, for one user: see the [module](self) for how it is kept.
///
/// Its [`MemoryStore`] methods run off the async runtime ([`off_runtime`]); [`SqliteStore::open`]
/// and [`SqliteStore::count`] run on the calling thread.
#[derive(Debug)]
pub struct SqliteStore {
    shared: Arc<Shared>,
}

/// The store's state, shared with the blocking tasks that run its operations.
#[derive(Debug)]
struct Shared {
    path: PathBuf,
    name: String,
    dim: usize,
    options: SqliteOptions,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    conn: Connection,
    cache: Option<Cache>,
}

/// The vectors as of `data_version`, at most [`SqliteOptions::max_cache_bytes`] of them.
struct Cache {
    data_version: i64,
    rows: Vec<Row>,
    /// What `rows` takes, as [`Shared::row_bytes`] counts it.
    bytes: usize,
    /// Every record of the file whose rowid is at or below this is in `rows`; a search reads those
    /// above it from the file.
    through: i64,
    /// Whether `rows` holds every record of the file: only then may the store's own adds extend it.
    complete: bool,
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("data_version", &self.data_version)
            .field("rows", &self.rows.len())
            .field("bytes", &self.bytes)
            .field("through", &self.through)
            .field("complete", &self.complete)
            .finish()
    }
}

struct Row {
    id: String,
    session: String,
    vector: Vec<f32>,
    norm: f32,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS claij_schema (
    version INTEGER NOT NULL,
    dim INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS memories (
    id TEXT NOT NULL UNIQUE,
    session TEXT NOT NULL,
    text TEXT NOT NULL,
    embedding BLOB NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_by_session ON memories (session, created_ms);
";

impl SqliteStore {
    /// Opens (or creates, with its directory) the store at `path` for `dim`-dimensional vectors,
    /// with the [default options](SqliteOptions::default).
    ///
    /// # Errors
    ///
    /// A [`StoreError::Engine`] naming the file, its source a [`SqliteError`]: not a database, a
    /// newer schema, other dimensions, a directory that cannot be made or written.
    pub fn open(path: impl Into<PathBuf>, dim: usize) -> Result<Self, StoreError> {
        Self::open_with(path, dim, SqliteOptions::default())
    }

    /// [`SqliteStore::open`] with `options`.
    ///
    /// # Errors
    ///
    /// As [`SqliteStore::open`].
    pub fn open_with(
        path: impl Into<PathBuf>,
        dim: usize,
        options: SqliteOptions,
    ) -> Result<Self, StoreError> {
        let path = path.into();
        let name = path.display().to_string();
        let fail = |e: SqliteError| engine(&name, e.classified(options.busy_timeout));
        if dim == 0 || dim > MAX_DIM {
            return Err(fail(SqliteError::BadDimensions(dim)));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| {
                fail(SqliteError::CreateDir {
                    dir: dir.to_owned(),
                    source,
                })
            })?;
        }
        let conn = prepare(&path, dim, options).map_err(fail)?;
        Ok(Self {
            shared: Arc::new(Shared {
                path,
                name,
                dim,
                options,
                inner: Mutex::new(Inner { conn, cache: None }),
            }),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The vectors' dimensions.
    pub fn dim(&self) -> usize {
        self.shared.dim
    }

    /// How many records the file holds (every session). Runs on the calling thread.
    ///
    /// # Errors
    ///
    /// What SQLite reports, naming the file.
    pub fn count(&self) -> Result<usize, StoreError> {
        let shared = &self.shared;
        let inner = shared.lock();
        let n: i64 = inner
            .conn
            .query_row("SELECT count(*) FROM memories", [], |r| r.get(0))
            .map_err(|e| shared.fail(e.into()))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Runs `work` on the shared state off the async runtime.
    fn run<'a, T, F>(&'a self, work: F) -> BoxFuture<'a, Result<T, StoreError>>
    where
        T: Send + 'static,
        F: FnOnce(&Shared) -> Result<T, StoreError> + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            off_runtime(move || work(&shared))
                .await
                .map_err(|e| StoreError::Engine {
                    store: self.shared.name.clone(),
                    source: format!("the store's {e}").into(),
                })?
        })
    }

    #[cfg(test)]
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.shared.lock()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fail(&self, e: SqliteError) -> StoreError {
        engine(&self.name, e.classified(self.options.busy_timeout))
    }

    fn sql(&self, e: rusqlite::Error) -> StoreError {
        self.fail(e.into())
    }

    fn wrong_dim(&self, what: String, found: usize) -> StoreError {
        StoreError::WrongDimension {
            store: self.name.clone(),
            what,
            expected: self.dim,
            found,
        }
    }

    /// What a cached row takes: its vector, id and session, and the row itself.
    fn row_bytes(&self, id: &str, session: &str) -> usize {
        self.dim * 4 + id.len() + session.len() + std::mem::size_of::<Row>()
    }

    /// The file's schema is still one this claij reads: another process may have upgraded it
    /// since the store was opened.
    fn check_schema(&self, conn: &Connection) -> Result<(), StoreError> {
        read_schema(conn)
            .and_then(|rows| verify_schema(&rows, self.dim))
            .map_err(|e| self.fail(e))
    }

    fn add_now(&self, records: Vec<Record>) -> Result<(), StoreError> {
        let mut seen = HashSet::new();
        for r in &records {
            if r.embedding.len() != self.dim {
                return Err(self.wrong_dim(format!("record \"{}\"", r.id), r.embedding.len()));
            }
            if r.text.len() > self.options.max_text_bytes {
                return Err(self.fail(SqliteError::TextTooLong {
                    id: r.id.clone(),
                    len: r.text.len(),
                    limit: self.options.max_text_bytes,
                }));
            }
            if !seen.insert(r.id.as_str()) {
                return Err(self.duplicate(&r.id));
            }
        }
        let mut guard = self.lock();
        let inner = &mut *guard;
        let tx = inner
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.sql(e))?;
        self.check_schema(&tx)?;
        let mut rowids = Vec::with_capacity(records.len());
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO memories (id, session, text, embedding, created_ms) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(|e| self.sql(e))?;
            for r in &records {
                let inserted = insert.execute(params![
                    r.id,
                    r.session,
                    r.text,
                    to_blob(&r.embedding),
                    to_millis(r.created_at)
                ]);
                match inserted {
                    Ok(_) => rowids.push(tx.last_insert_rowid()),
                    Err(e) if e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
                        return Err(self.duplicate(&r.id));
                    }
                    Err(e) => return Err(self.sql(e)),
                }
            }
        }
        tx.commit().map_err(|e| self.sql(e))?;
        // Our own commit leaves `data_version` as it was: the cache takes the records itself.
        if let Some(cache) = inner.cache.as_mut() {
            for (r, rowid) in records.into_iter().zip(rowids) {
                let size = self.row_bytes(&r.id, &r.session);
                if cache.complete && cache.bytes + size <= self.options.max_cache_bytes {
                    cache.bytes += size;
                    cache.through = cache.through.max(rowid);
                    cache.rows.push(row(r.id, r.session, r.embedding));
                } else if rowid <= cache.through {
                    // SQLite reused a rowid the cache covers (the newest record was forgotten)
                    // but the record does not fit: read the cache again at the next search.
                    inner.cache = None;
                    break;
                } else {
                    // Past the bound: this record and the later ones are read from the file.
                    cache.complete = false;
                }
            }
        }
        Ok(())
    }

    fn duplicate(&self, id: &str) -> StoreError {
        StoreError::Duplicate {
            store: self.name.clone(),
            id: id.to_owned(),
        }
    }

    fn search_now(&self, query: Query<'_>) -> Result<Vec<Hit>, StoreError> {
        if query.vector.len() != self.dim {
            return Err(self.wrong_dim("the query vector".to_owned(), query.vector.len()));
        }
        if query.k == 0 {
            return Ok(Vec::new());
        }
        let mut guard = self.lock();
        let inner = &mut *guard;
        // One read transaction: the vectors scored and the texts read are of one snapshot.
        let tx = inner.conn.transaction().map_err(|e| self.sql(e))?;
        self.check_schema(&tx)?;
        let version = data_version(&tx).map_err(|e| self.sql(e))?;
        if inner
            .cache
            .as_ref()
            .is_none_or(|c| c.data_version != version)
        {
            inner.cache = None;
            inner.cache = Some(self.load_cache(&tx, version).map_err(|e| self.fail(e))?);
        }
        let mut best = Best::new(query);
        // `None` when the cache holds every record: nothing is left to read from the file.
        let through = match inner.cache.as_ref() {
            Some(cache) => {
                for r in &cache.rows {
                    if query.session.is_none_or(|s| r.session == s) {
                        best.offer(best.similarity(&r.vector, r.norm), &r.id);
                    }
                }
                (!cache.complete).then_some(cache.through)
            }
            None => Some(i64::MIN),
        };
        if let Some(through) = through {
            self.scan_file(&tx, through, query, &mut best)
                .map_err(|e| self.fail(e))?;
        }
        let best = best.into_sorted();
        let mut hits = Vec::with_capacity(best.len());
        {
            let mut read = tx
                .prepare(
                    "SELECT id, session, text, embedding, created_ms FROM memories WHERE id = ?1",
                )
                .map_err(|e| self.sql(e))?;
            for (similarity, id) in best {
                let record = read
                    .query_row([&id], |r| Ok(self.record(r)))
                    .optional()
                    .map_err(|e| self.sql(e))?;
                // Gone since the vectors were read (forgotten by another connection): not a hit.
                if let Some(record) = record {
                    hits.push(Hit {
                        record: record.map_err(|e| self.fail(e))?,
                        similarity,
                    });
                }
            }
        }
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(hits)
    }

    /// The file's vectors in rowid order, as many as fit in [`SqliteOptions::max_cache_bytes`].
    fn load_cache(&self, conn: &Connection, data_version: i64) -> Result<Cache, SqliteError> {
        let limit = self.options.max_text_bytes;
        let mut cache = Cache {
            data_version,
            rows: Vec::new(),
            bytes: 0,
            through: i64::MIN,
            complete: true,
        };
        let mut stmt =
            conn.prepare("SELECT rowid, id, session, embedding FROM memories ORDER BY rowid")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let rowid: i64 = r.get(0)?;
            let id = text(r, 1, "its id", "?", limit)?;
            let session = text(r, 2, "its session", &id, limit)?;
            let size = self.row_bytes(&id, &session);
            if cache.bytes + size > self.options.max_cache_bytes {
                debug!(
                    store = self.name,
                    cached = cache.rows.len(),
                    max_cache_bytes = self.options.max_cache_bytes,
                    "the vector cache is full; searches read the newer records from the file"
                );
                cache.complete = false;
                break;
            }
            let mut vector = Vec::with_capacity(self.dim);
            read_vector(r, 3, &id, self.dim, &mut vector)?;
            cache.bytes += size;
            cache.through = rowid;
            cache.rows.push(row(id, session, vector));
        }
        Ok(cache)
    }

    /// Scores the records of the query's session above rowid `through`, read from the file one at
    /// a time (only the `k` best are kept).
    fn scan_file(
        &self,
        conn: &Connection,
        through: i64,
        query: Query<'_>,
        best: &mut Best,
    ) -> Result<(), SqliteError> {
        let mut stmt = match query.session {
            Some(_) => conn
                .prepare("SELECT id, embedding FROM memories WHERE session = ?2 AND rowid > ?1")?,
            None => {
                conn.prepare("SELECT id, embedding FROM memories WHERE rowid > ?1 AND ?2 IS NULL")?
            }
        };
        let mut rows = stmt.query(params![through, query.session])?;
        let mut vector = Vec::with_capacity(self.dim);
        while let Some(r) = rows.next()? {
            let id = text_ref(r, 0, "its id", "?", self.options.max_text_bytes)?;
            read_vector(r, 1, id, self.dim, &mut vector)?;
            let norm = dot(&vector, &vector).sqrt();
            best.offer(best.similarity(&vector, norm), id);
        }
        Ok(())
    }

    /// A full record from `SELECT id, session, text, embedding, created_ms`, each column checked.
    fn record(&self, r: &rusqlite::Row<'_>) -> Result<Record, SqliteError> {
        let limit = self.options.max_text_bytes;
        let id = text(r, 0, "its id", "?", limit)?;
        let session = text(r, 1, "its session", &id, limit)?;
        let body = text(r, 2, "its text", &id, limit)?;
        let mut embedding = Vec::with_capacity(self.dim);
        read_vector(r, 3, &id, self.dim, &mut embedding)?;
        let ms: i64 = r
            .get(4)
            .map_err(|e| corrupt(&id, format!("its time: {e}")))?;
        Ok(Record {
            created_at: from_millis(ms).ok_or_else(|| corrupt(&id, format!("its time {ms} ms")))?,
            id,
            session,
            text: body,
            embedding,
        })
    }

    fn list_now(&self, session: Option<&str>) -> Result<Vec<Record>, StoreError> {
        let mut inner = self.lock();
        let tx = inner.conn.transaction().map_err(|e| self.sql(e))?;
        self.check_schema(&tx)?;
        let run = || -> Result<Vec<Record>, SqliteError> {
            let mut stmt = tx.prepare(
                "SELECT id, session, text, embedding, created_ms FROM memories \
                 WHERE ?1 IS NULL OR session = ?1 ORDER BY created_ms, rowid",
            )?;
            let mut rows = stmt.query([session])?;
            let mut out = Vec::new();
            while let Some(r) = rows.next()? {
                out.push(self.record(r)?);
            }
            Ok(out)
        };
        let out = run().map_err(|e| self.fail(e))?;
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(out)
    }

    fn forget_now(&self, which: &Forget) -> Result<usize, StoreError> {
        let mut inner = self.lock();
        let tx = inner
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.sql(e))?;
        self.check_schema(&tx)?;
        let removed = match which {
            Forget::Ids(ids) => {
                let mut n = 0;
                {
                    let mut delete = tx
                        .prepare("DELETE FROM memories WHERE id = ?1")
                        .map_err(|e| self.sql(e))?;
                    for id in ids {
                        n += delete.execute([id]).map_err(|e| self.sql(e))?;
                    }
                }
                n
            }
            Forget::Session(session) => tx
                .execute("DELETE FROM memories WHERE session = ?1", [session])
                .map_err(|e| self.sql(e))?,
        };
        tx.commit().map_err(|e| self.sql(e))?;
        if let Some(cache) = inner.cache.as_mut() {
            let before = cache.rows.len();
            match which {
                Forget::Ids(ids) => {
                    let ids: HashSet<&str> = ids.iter().map(String::as_str).collect();
                    cache.rows.retain(|r| !ids.contains(r.id.as_str()));
                }
                Forget::Session(session) => cache.rows.retain(|r| &r.session != session),
            }
            if cache.rows.len() != before {
                cache.bytes = cache
                    .rows
                    .iter()
                    .map(|r| self.row_bytes(&r.id, &r.session))
                    .sum();
            }
        }
        Ok(removed)
    }
}

impl MemoryStore for SqliteStore {
    fn add<'a>(&'a self, records: Vec<Record>) -> BoxFuture<'a, Result<(), StoreError>> {
        self.run(move |s| s.add_now(records))
    }

    fn search<'a>(&'a self, query: Query<'a>) -> BoxFuture<'a, Result<Vec<Hit>, StoreError>> {
        let session = query.session.map(str::to_owned);
        let vector = query.vector.to_vec();
        let (k, min_similarity) = (query.k, query.min_similarity);
        self.run(move |s| {
            s.search_now(Query {
                session: session.as_deref(),
                vector: &vector,
                k,
                min_similarity,
            })
        })
    }

    fn list<'a>(
        &'a self,
        session: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Record>, StoreError>> {
        let session = session.map(str::to_owned);
        self.run(move |s| s.list_now(session.as_deref()))
    }

    fn forget<'a>(&'a self, which: Forget) -> BoxFuture<'a, Result<usize, StoreError>> {
        self.run(move |s| s.forget_now(&which))
    }
}

fn engine(name: &str, e: SqliteError) -> StoreError {
    StoreError::Engine {
        store: name.to_owned(),
        source: Box::new(e),
    }
}

/// Opens `path`: busy timeout, WAL, the schema made or checked in one immediate transaction.
fn prepare(path: &Path, dim: usize, options: SqliteOptions) -> Result<Connection, SqliteError> {
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(options.busy_timeout)?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(SqliteError::NotWal(mode));
    }
    // NORMAL is durable across a process crash in WAL mode (a power cut may lose the last commits).
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(SCHEMA)?;
    let rows = read_schema(&tx)?;
    if rows.is_empty() {
        tx.execute(
            "INSERT INTO claij_schema (version, dim) VALUES (?1, ?2)",
            params![SCHEMA_VERSION, i64::try_from(dim).unwrap_or(i64::MAX)],
        )?;
    } else {
        verify_schema(&rows, dim)?;
    }
    tx.commit()?;
    Ok(conn)
}

/// The rows of `claij_schema`, `(version, dim)`.
fn read_schema(conn: &Connection) -> Result<Vec<(i64, i64)>, SqliteError> {
    let mut stmt = conn.prepare("SELECT version, dim FROM claij_schema")?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// One row, of a version this claij reads, for `dim` dimensions.
fn verify_schema(rows: &[(i64, i64)], dim: usize) -> Result<(), SqliteError> {
    match rows {
        [(version, _)] if *version > SCHEMA_VERSION => Err(SqliteError::NewerSchema {
            found: *version,
            supported: SCHEMA_VERSION,
        }),
        [(version, stored)] if *version >= 1 => {
            let stored = usize::try_from(*stored).unwrap_or(0);
            if stored == dim {
                Ok(())
            } else {
                Err(SqliteError::Dimensions {
                    stored,
                    requested: dim,
                })
            }
        }
        other => Err(SqliteError::BadSchema(format!(
            "expected one row (version, dim), found {other:?}"
        ))),
    }
}

fn data_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0))
}

fn corrupt(id: &str, what: String) -> SqliteError {
    SqliteError::Corrupt {
        id: id.to_owned(),
        what,
    }
}

/// Column `i` as text of at most `limit` bytes, checked before it is copied.
fn text(
    r: &rusqlite::Row<'_>,
    i: usize,
    what: &str,
    id: &str,
    limit: usize,
) -> Result<String, SqliteError> {
    text_ref(r, i, what, id, limit).map(str::to_owned)
}

/// Column `i` as text of at most `limit` bytes, borrowed from the row.
fn text_ref<'r>(
    r: &'r rusqlite::Row<'_>,
    i: usize,
    what: &str,
    id: &str,
    limit: usize,
) -> Result<&'r str, SqliteError> {
    let bytes = match r.get_ref(i)? {
        rusqlite::types::ValueRef::Text(b) => b,
        other => {
            return Err(corrupt(
                id,
                format!("{what} is a {:?}, not text", other.data_type()),
            ));
        }
    };
    if bytes.len() > limit {
        return Err(corrupt(
            id,
            format!(
                "{what} is {} bytes, above the limit of {limit} (max_text_bytes)",
                bytes.len()
            ),
        ));
    }
    std::str::from_utf8(bytes).map_err(|e| corrupt(id, format!("{what}: {e}")))
}

/// Column `i` as exactly `dim` finite little-endian `f32`s, into `out` (cleared first).
fn read_vector(
    r: &rusqlite::Row<'_>,
    i: usize,
    id: &str,
    dim: usize,
    out: &mut Vec<f32>,
) -> Result<(), SqliteError> {
    let bytes = match r.get_ref(i)? {
        rusqlite::types::ValueRef::Blob(b) => b,
        other => {
            return Err(corrupt(
                id,
                format!("its vector is a {:?}, not a BLOB", other.data_type()),
            ));
        }
    };
    if bytes.len() != dim * 4 {
        return Err(corrupt(
            id,
            format!(
                "its vector is {} bytes, expected {} ({dim} f32)",
                bytes.len(),
                dim * 4
            ),
        ));
    }
    out.clear();
    out.extend(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    );
    if let Some(at) = out.iter().position(|x| !x.is_finite()) {
        return Err(corrupt(
            id,
            format!("its vector's value {at} is not finite"),
        ));
    }
    Ok(())
}

fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn row(id: String, session: String, vector: Vec<f32>) -> Row {
    let norm = dot(&vector, &vector).sqrt();
    Row {
        id,
        session,
        vector,
        norm,
    }
}

/// The dot product, in eight lanes the compiler vectorises.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0_f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            lanes[l] += x[l] * y[l];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// The at most `k` records most similar to a query and at least its floor, kept as they are
/// offered (cached or read from the file): memory for `k` ids, whatever the number scored.
struct Best<'q> {
    vector: &'q [f32],
    norm: f32,
    k: usize,
    floor: f32,
    /// The worst kept on top.
    heap: BinaryHeap<Candidate>,
}

/// A scored id, ordered worst first: lower similarity, then (on a tie) the greater id.
struct Candidate {
    similarity: f32,
    id: String,
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .similarity
            .total_cmp(&self.similarity)
            .then_with(|| self.id.cmp(&other.id))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

impl<'q> Best<'q> {
    fn new(query: Query<'q>) -> Self {
        Self {
            vector: query.vector,
            norm: dot(query.vector, query.vector).sqrt(),
            k: query.k,
            floor: query.min_similarity,
            heap: BinaryHeap::new(),
        }
    }

    /// The cosine of `vector` (of norm `norm`) and the query's; 0 when either is all zeros.
    fn similarity(&self, vector: &[f32], norm: f32) -> f32 {
        if norm == 0.0 || self.norm == 0.0 {
            0.0
        } else {
            dot(vector, self.vector) / (norm * self.norm)
        }
    }

    fn offer(&mut self, similarity: f32, id: &str) {
        if similarity.is_nan() || similarity < self.floor || self.k == 0 {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(Candidate {
                similarity,
                id: id.to_owned(),
            });
            return;
        }
        let better =
            self.heap
                .peek()
                .is_some_and(|worst| match similarity.total_cmp(&worst.similarity) {
                    Ordering::Greater => true,
                    Ordering::Equal => id < worst.id.as_str(),
                    Ordering::Less => false,
                });
        if better {
            self.heap.pop();
            self.heap.push(Candidate {
                similarity,
                id: id.to_owned(),
            });
        }
    }

    /// (similarity, id), most similar first, ties by id.
    fn into_sorted(self) -> Vec<(f32, String)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|c| (c.similarity, c.id))
            .collect()
    }
}

#[cfg(test)]
mod tests;
