//! [`SqliteStore`]: memories in one SQLite file, vectors as little-endian `f32` BLOBs, searched by
//! exact cosine in Rust.
//!
//! The file is in WAL mode with a busy timeout, so two processes writing at once wait for each
//! other instead of failing; every `add` is one transaction (all or none). A `claij_schema` table
//! holds the schema version and the vectors' dimensions: a newer version, or another dimension, is
//! refused with an error naming the file. Reads are bounded: a record's text is at most
//! [`SqliteOptions::max_text_bytes`] and its vector exactly `dim` floats, or the read fails naming
//! the file and the record.
//!
//! Search keeps the vectors in memory (with the ids and sessions, not the texts) and re-reads them
//! only when `PRAGMA data_version` says another connection wrote; the texts of the top `k` are read
//! from the file.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use claij_backends::BoxFuture;
use claij_interceptors::builtin::recall::{Forget, Hit, MemoryStore, Query, Record, StoreError};
use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};

use super::{from_millis, to_millis};

/// The schema version this build writes and reads; a file of a newer one is refused.
pub const SCHEMA_VERSION: i64 = 1;
/// How long a write waits for another process's write to finish before failing
/// ([`SqliteOptions::busy_timeout`]).
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest text a record may hold, in bytes ([`SqliteOptions::max_text_bytes`]).
pub const DEFAULT_MAX_TEXT_BYTES: usize = 64 * 1024;
/// The most dimensions a store's vectors may have.
pub const MAX_DIM: usize = 16_384;

/// How a [`SqliteStore`] is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqliteOptions {
    /// How long a statement waits for another connection's lock ([`DEFAULT_BUSY_TIMEOUT`]).
    pub busy_timeout: Duration,
    /// The longest text a record may hold, checked on add and on read ([`DEFAULT_MAX_TEXT_BYTES`]).
    pub max_text_bytes: usize,
    /// Keep the vectors in memory between searches (on by default); off, every search reads them.
    pub cache_vectors: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            max_text_bytes: DEFAULT_MAX_TEXT_BYTES,
            cache_vectors: true,
        }
    }
}

/// What went wrong in a [`SqliteStore`], the source of a [`StoreError::Engine`] whose `store` is the
/// file's path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteError {
    /// SQLite failed: the file is not a database, is locked past the busy timeout, the disk is full.
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
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

/// A [`MemoryStore`] in one SQLite file, for one user: see the [module](self) for how it is kept.
///
/// Its methods run on the calling thread (file IO, and a wait of up to the busy timeout when
/// another process is writing) and return a ready future.
#[derive(Debug)]
pub struct SqliteStore {
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

/// The vectors as of `data_version`.
#[derive(Debug)]
struct Cache {
    data_version: i64,
    rows: Vec<Row>,
}

#[derive(Debug)]
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
    /// newer schema, other dimensions, a directory that cannot be made.
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
        let fail = |e: SqliteError| engine(&name, e);
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
            path,
            name,
            dim,
            options,
            inner: Mutex::new(Inner { conn, cache: None }),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The vectors' dimensions.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// How many records the file holds (every session).
    ///
    /// # Errors
    ///
    /// What SQLite reports, naming the file.
    pub fn count(&self) -> Result<usize, StoreError> {
        let inner = self.lock();
        let n: i64 = inner
            .conn
            .query_row("SELECT count(*) FROM memories", [], |r| r.get(0))
            .map_err(|e| self.fail(e.into()))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fail(&self, e: SqliteError) -> StoreError {
        engine(&self.name, e)
    }

    fn wrong_dim(&self, what: String, found: usize) -> StoreError {
        StoreError::WrongDimension {
            store: self.name.clone(),
            what,
            expected: self.dim,
            found,
        }
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
        let mut inner = self.lock();
        let tx = inner
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.fail(e.into()))?;
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO memories (id, session, text, embedding, created_ms) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(|e| self.fail(e.into()))?;
            for r in &records {
                let inserted = insert.execute(params![
                    r.id,
                    r.session,
                    r.text,
                    to_blob(&r.embedding),
                    to_millis(r.created_at)
                ]);
                match inserted {
                    Ok(_) => {}
                    Err(e) if e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
                        return Err(self.duplicate(&r.id));
                    }
                    Err(e) => return Err(self.fail(e.into())),
                }
            }
        }
        tx.commit().map_err(|e| self.fail(e.into()))?;
        // Our own commit leaves `data_version` as it was: the cache takes the records itself.
        if let Some(cache) = inner.cache.as_mut() {
            cache.rows.extend(
                records
                    .into_iter()
                    .map(|r| row(r.id, r.session, r.embedding)),
            );
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
        let tx = inner.conn.transaction().map_err(|e| self.fail(e.into()))?;
        let loaded;
        let rows: &[Row] = if self.options.cache_vectors {
            let version = data_version(&tx).map_err(|e| self.fail(e.into()))?;
            if inner
                .cache
                .as_ref()
                .is_none_or(|c| c.data_version != version)
            {
                inner.cache = None;
                let rows = self.read_vectors(&tx, None).map_err(|e| self.fail(e))?;
                inner.cache = Some(Cache {
                    data_version: version,
                    rows,
                });
            }
            inner.cache.as_ref().map_or(&[], |c| c.rows.as_slice())
        } else {
            loaded = self
                .read_vectors(&tx, query.session)
                .map_err(|e| self.fail(e))?;
            &loaded
        };
        let best = top_k(rows, query);
        let mut hits = Vec::with_capacity(best.len());
        {
            let mut read = tx
                .prepare(
                    "SELECT id, session, text, embedding, created_ms FROM memories WHERE id = ?1",
                )
                .map_err(|e| self.fail(e.into()))?;
            for (similarity, i) in best {
                let id = &rows[i].id;
                let record = read
                    .query_row([id], |r| Ok(self.record(r)))
                    .optional()
                    .map_err(|e| self.fail(e.into()))?;
                // Gone since the vectors were read (forgotten by another connection): not a hit.
                if let Some(record) = record {
                    hits.push(Hit {
                        record: record.map_err(|e| self.fail(e))?,
                        similarity,
                    });
                }
            }
        }
        tx.commit().map_err(|e| self.fail(e.into()))?;
        Ok(hits)
    }

    /// The ids, sessions and vectors of `session` (all when `None`), each checked.
    fn read_vectors(
        &self,
        conn: &Connection,
        session: Option<&str>,
    ) -> Result<Vec<Row>, SqliteError> {
        let mut stmt = conn.prepare(
            "SELECT id, session, embedding FROM memories WHERE ?1 IS NULL OR session = ?1",
        )?;
        let mut rows = stmt.query([session])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let id = text(r, 0, "its id", "?", self.options.max_text_bytes)?;
            let session = text(r, 1, "its session", &id, self.options.max_text_bytes)?;
            let vector = vector(r, 2, &id, self.dim)?;
            out.push(row(id, session, vector));
        }
        Ok(out)
    }

    /// A full record from `SELECT id, session, text, embedding, created_ms`, each column checked.
    fn record(&self, r: &rusqlite::Row<'_>) -> Result<Record, SqliteError> {
        let limit = self.options.max_text_bytes;
        let id = text(r, 0, "its id", "?", limit)?;
        let session = text(r, 1, "its session", &id, limit)?;
        let body = text(r, 2, "its text", &id, limit)?;
        let embedding = vector(r, 3, &id, self.dim)?;
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
        let inner = self.lock();
        let run = || -> Result<Vec<Record>, SqliteError> {
            let mut stmt = inner.conn.prepare(
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
        run().map_err(|e| self.fail(e))
    }

    fn forget_now(&self, which: &Forget) -> Result<usize, StoreError> {
        let mut inner = self.lock();
        let tx = inner
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.fail(e.into()))?;
        let removed = match which {
            Forget::Ids(ids) => {
                let mut n = 0;
                {
                    let mut delete = tx
                        .prepare("DELETE FROM memories WHERE id = ?1")
                        .map_err(|e| self.fail(e.into()))?;
                    for id in ids {
                        n += delete.execute([id]).map_err(|e| self.fail(e.into()))?;
                    }
                }
                n
            }
            Forget::Session(session) => tx
                .execute("DELETE FROM memories WHERE session = ?1", [session])
                .map_err(|e| self.fail(e.into()))?,
        };
        tx.commit().map_err(|e| self.fail(e.into()))?;
        if let Some(cache) = inner.cache.as_mut() {
            match which {
                Forget::Ids(ids) => {
                    let ids: HashSet<&str> = ids.iter().map(String::as_str).collect();
                    cache.rows.retain(|r| !ids.contains(r.id.as_str()));
                }
                Forget::Session(session) => cache.rows.retain(|r| &r.session != session),
            }
        }
        Ok(removed)
    }
}

impl MemoryStore for SqliteStore {
    fn add<'a>(&'a self, records: Vec<Record>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(std::future::ready(self.add_now(records)))
    }

    fn search<'a>(&'a self, query: Query<'a>) -> BoxFuture<'a, Result<Vec<Hit>, StoreError>> {
        Box::pin(std::future::ready(self.search_now(query)))
    }

    fn list<'a>(
        &'a self,
        session: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Record>, StoreError>> {
        Box::pin(std::future::ready(self.list_now(session)))
    }

    fn forget<'a>(&'a self, which: Forget) -> BoxFuture<'a, Result<usize, StoreError>> {
        Box::pin(std::future::ready(self.forget_now(&which)))
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
        return Err(SqliteError::Sqlite(rusqlite::Error::InvalidParameterName(
            format!("journal_mode stayed {mode}, WAL was asked for"),
        )));
    }
    // NORMAL is durable across a process crash in WAL mode (a power cut may lose the last commits).
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(SCHEMA)?;
    let rows: Vec<(i64, i64)> = {
        let mut stmt = tx.prepare("SELECT version, dim FROM claij_schema")?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?
    };
    match rows.as_slice() {
        [] => {
            tx.execute(
                "INSERT INTO claij_schema (version, dim) VALUES (?1, ?2)",
                params![SCHEMA_VERSION, i64::try_from(dim).unwrap_or(i64::MAX)],
            )?;
        }
        [(version, _)] if *version > SCHEMA_VERSION => {
            return Err(SqliteError::NewerSchema {
                found: *version,
                supported: SCHEMA_VERSION,
            });
        }
        [(version, stored)] if *version >= 1 => {
            let stored = usize::try_from(*stored).unwrap_or(0);
            if stored != dim {
                return Err(SqliteError::Dimensions {
                    stored,
                    requested: dim,
                });
            }
        }
        other => {
            return Err(SqliteError::BadSchema(format!(
                "expected one row (version, dim), found {other:?}"
            )));
        }
    }
    tx.commit()?;
    Ok(conn)
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
    let s = std::str::from_utf8(bytes).map_err(|e| corrupt(id, format!("{what}: {e}")))?;
    Ok(s.to_owned())
}

/// Column `i` as exactly `dim` finite little-endian `f32`s.
fn vector(r: &rusqlite::Row<'_>, i: usize, id: &str, dim: usize) -> Result<Vec<f32>, SqliteError> {
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
    let v: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if let Some(at) = v.iter().position(|x| !x.is_finite()) {
        return Err(corrupt(
            id,
            format!("its vector's value {at} is not finite"),
        ));
    }
    Ok(v)
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

/// The at most `k` rows of the query's session most similar to its vector and at least its floor,
/// as (similarity, index), most similar first, ties by id.
fn top_k(rows: &[Row], query: Query<'_>) -> Vec<(f32, usize)> {
    let qnorm = dot(query.vector, query.vector).sqrt();
    let mut scored: Vec<(f32, usize)> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| query.session.is_none_or(|s| r.session == s))
        .map(|(i, r)| {
            let s = if r.norm == 0.0 || qnorm == 0.0 {
                0.0
            } else {
                dot(&r.vector, query.vector) / (r.norm * qnorm)
            };
            (s, i)
        })
        .filter(|(s, _)| *s >= query.min_similarity)
        .collect();
    let order = |a: &(f32, usize), b: &(f32, usize)| {
        b.0.total_cmp(&a.0)
            .then_with(|| rows[a.1].id.cmp(&rows[b.1].id))
    };
    if scored.len() > query.k {
        scored.select_nth_unstable_by(query.k - 1, order);
        scored.truncate(query.k);
    }
    scored.sort_by(order);
    scored
}

#[cfg(test)]
mod tests;
