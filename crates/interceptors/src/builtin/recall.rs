//! The `recall` interceptor: memory by meaning, each turn's summary embedded and the most similar recalled.
//!
//! [`Recall`] asks each reply for the same `summary` as [`Memory`](super::memory::Memory) does
//! (extension [`SUMMARY_EXTENSION`], [`summary_delta`]). After a valid reply it stores the summary
//! (and, with [`RecallConfig::store_exchange`], the user's message and the answer) with its
//! embedding, the time from its [`Clock`] and the session in a [`MemoryStore`]. Before the next
//! request its [`pre_request`](Interceptor::pre_request) hook embeds the new message and recalls the
//! `k` memories most similar to it (at least [`RecallConfig::min_similarity`]), which `pre_prompt`
//! shows with their age, within [`RecallConfig::max_chars`]; the memories that do not fit are left
//! out and the prompt says how many.
//!
//! # Traits
//!
//! - [`Embedder`]: texts to vectors, synchronous (an in-process model is CPU work). The interceptor
//!   never runs it on the async runtime's threads ([`off_runtime`]): inside a tokio runtime it goes
//!   through `spawn_blocking`, outside one (a `block_on` executor) it runs inline.
//! - [`MemoryStore`]: async (`BoxFuture`), since a store may be a server; [`InMemoryStore`] is the
//!   exact-cosine one for tests and small uses, and [`contract`] is the test suite every store
//!   implementation passes.
//!
//! # Carried state
//!
//! `{"session_id": …}` (version [`STATE_VERSION`]): a conversation saved with `--session` keeps the key
//! of its memories, so the next process recalls them.
//!
//! ```
//! use std::sync::Arc;
//! use claij_test_support::Scripted;
//! use claij_interceptors::builtin::recall::{HashedWords, InMemoryStore, Recall};
//! use claij_interceptors::{Chain, Config, Context, Pipeline};
//!
//! let backend = Arc::new(Scripted::replies([
//!     r#"{"answer": "Noted.", "state": "chat", "summary": "The user's locker number is 47."}"#,
//!     r#"{"answer": "47.", "state": "chat", "summary": "The user asked for their locker number."}"#,
//! ]));
//! let embedder = Arc::new(HashedWords::new(64));
//! let store = Arc::new(InMemoryStore::new(64));
//! let recall = Recall::new(embedder, store.clone()).with_session("s1");
//! let pipeline = Pipeline::new(backend.clone(), Config::new("m"), Chain::new().with(recall));
//! let mut ctx = Context::default();
//! futures_executor::block_on(pipeline.ask(&mut ctx, "My locker number is 47"))?;
//! futures_executor::block_on(pipeline.ask(&mut ctx, "What is my locker number?"))?;
//! let second = backend.requests()[1].system.clone().unwrap_or_default();
//! assert!(second.contains("The user's locker number is 47."));
//! # Ok::<(), claij_interceptors::Error>(())
//! ```

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use claij_backends::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::debug;

pub use super::memory::{SUMMARY_EXTENSION, summary_delta};
use crate::context::{Carried, Context};
use crate::interceptor::{BoxError, Interceptor};
use crate::prompts::Prompts;
use crate::schema::Schema;

pub mod contract;
pub mod scenario;
mod store;

pub use store::InMemoryStore;

/// The version of what the interceptor carries ([`Interceptor::carry`]): `{"session_id": …}`.
pub const STATE_VERSION: u32 = 1;

/// Texts to vectors, all of [`Embedder::dim`] dimensions, in the order given.
///
/// Synchronous: an in-process model is CPU work. [`Recall`] runs it through `spawn_blocking` inside
/// a tokio runtime, so an implementation may take its time but should not itself block on async IO.
pub trait Embedder: Send + Sync + fmt::Debug + 'static {
    /// The dimensions of every vector.
    fn dim(&self) -> usize;

    /// One vector per text.
    ///
    /// # Errors
    ///
    /// Anything the model reports (a text too long, a broken model file).
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, BoxError>;
}

/// Where memories are kept and searched by similarity. Async: a store may be a server.
///
/// Every implementation passes the [`contract`] suite.
pub trait MemoryStore: Send + Sync + fmt::Debug {
    /// Adds `records`, all or none.
    ///
    /// # Errors
    ///
    /// [`StoreError::WrongDimension`] for an embedding of another dimension than the store's,
    /// [`StoreError::Duplicate`] for an id already stored (or twice in `records`), or what the
    /// store's engine reports.
    fn add<'a>(&'a self, records: Vec<Record>) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The at most `query.k` records most similar to `query.vector` (cosine), at least
    /// `query.min_similarity`, of `query.session` when given, most similar first.
    ///
    /// # Errors
    ///
    /// [`StoreError::WrongDimension`] for a vector of another dimension, or the engine's error.
    fn search<'a>(&'a self, query: Query<'a>) -> BoxFuture<'a, Result<Vec<Hit>, StoreError>>;

    /// The records of `session` (all when `None`), oldest first.
    ///
    /// # Errors
    ///
    /// What the store's engine reports.
    fn list<'a>(
        &'a self,
        session: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Record>, StoreError>>;

    /// Removes the records `which` names; returns how many were removed.
    ///
    /// # Errors
    ///
    /// What the store's engine reports.
    fn forget<'a>(&'a self, which: Forget) -> BoxFuture<'a, Result<usize, StoreError>>;
}

/// One memory: a turn's summary (and exchange) with its embedding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Unique in the store.
    pub id: String,
    /// The conversation it belongs to.
    pub session: String,
    /// What is recalled: the turn's summary, and the exchange when configured.
    pub text: String,
    /// The embedding of `text`.
    pub embedding: Vec<f32>,
    /// When it was stored.
    pub created_at: SystemTime,
}

/// A similarity search ([`MemoryStore::search`]).
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// Only this session's records; all when `None`.
    pub session: Option<&'a str>,
    /// The vector searched for.
    pub vector: &'a [f32],
    /// The most records returned.
    pub k: usize,
    /// The lowest cosine similarity returned.
    pub min_similarity: f32,
}

/// A record found by [`MemoryStore::search`].
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The record.
    pub record: Record,
    /// Its cosine similarity to the query vector, in [-1, 1].
    pub similarity: f32,
}

/// What [`MemoryStore::forget`] removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forget {
    /// These records.
    Ids(Vec<String>),
    /// Every record of this session.
    Session(String),
}

/// Why a store failed, saying where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A vector of another dimension than the store's.
    #[error("{store}: {what} has {found} dimensions, the store holds {expected}")]
    WrongDimension {
        /// The store (`in-memory`, a file, a URL).
        store: String,
        /// The record (`record "id"`) or `the query vector`.
        what: String,
        /// The store's dimensions.
        expected: usize,
        /// The vector's.
        found: usize,
    },
    /// A record id already stored (nothing of its batch was added).
    #[error("{store}: record \"{id}\" is already stored")]
    Duplicate {
        /// The store.
        store: String,
        /// The id.
        id: String,
    },
    /// The store's engine failed (a file, a server).
    #[error("{store}: {source}")]
    Engine {
        /// The store.
        store: String,
        /// What the engine said.
        source: BoxError,
    },
}

/// The time, injectable so tests never read the wall clock.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now.
    fn now(&self) -> SystemTime;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that says what it is set to (for tests and replays): starts at `start`, moved by
/// [`ManualClock::advance`].
#[derive(Debug)]
pub struct ManualClock {
    since_epoch_ms: AtomicU64,
}

impl ManualClock {
    /// A clock at `start`.
    pub fn new(start: SystemTime) -> Self {
        let ms = start
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Self {
            since_epoch_ms: AtomicU64::new(ms),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.since_epoch_ms.fetch_add(ms, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(self.since_epoch_ms.load(Ordering::Relaxed))
    }
}

/// How much is recalled and stored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecallConfig {
    /// The most memories recalled per request (default 5).
    pub k: usize,
    /// The lowest cosine similarity recalled (default 0.2). On all-MiniLM-L6-v2 a question often
    /// scores 0.2 to 0.3 against the fact it asks about: in `cargo xtask bench`'s recall@k probes,
    /// 0.3 kept 19 of 25 facts at k = 5, 0.2 kept 24 (N = 10 distracting turns).
    pub min_similarity: f32,
    /// The most characters of recalled memories in the prompt (default 1,500, about 375 tokens);
    /// the memories past it are left out, most similar kept, and the prompt says how many.
    pub max_chars: usize,
    /// Whether a memory holds the user's message and the answer besides the summary (default no).
    pub store_exchange: bool,
}

impl Default for RecallConfig {
    fn default() -> Self {
        Self {
            k: 5,
            min_similarity: 0.2,
            max_chars: 1_500,
            store_exchange: false,
        }
    }
}

/// The recall interceptor; its name is `recall`. See the [module docs](self).
#[derive(Debug)]
pub struct Recall {
    embedder: Arc<dyn Embedder>,
    store: Arc<dyn MemoryStore>,
    clock: Arc<dyn Clock>,
    config: RecallConfig,
    session: String,
    /// Makes this instance's record ids unique (the wall clock, the process id and a counter at
    /// creation): two processes on one session never collide.
    instance: String,
}

/// Counts the interceptors made in this process, for [`Recall::instance`].
static INSTANCES: AtomicU64 = AtomicU64::new(0);

/// The conversation's session, in the context (restored from what was carried, or the interceptor's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecallSession {
    /// The key of the conversation's memories in the store.
    pub session_id: String,
}

/// What `pre_request` found for this turn, which `pre_prompt` shows and `post_response` stores with.
#[derive(Debug, Clone, Default)]
pub struct Recalled {
    /// The user's message of this turn.
    pub input: String,
    /// The memories recalled, most similar first.
    pub hits: Vec<Hit>,
    /// When they were recalled (their ages are counted from here).
    pub at: Option<SystemTime>,
}

impl Recall {
    /// Recall through `embedder` and `store`, with [`RecallConfig::default`], the wall clock and a
    /// new session id (replaced by a restored one; see [`Recall::with_session`]).
    pub fn new(embedder: Arc<dyn Embedder>, store: Arc<dyn MemoryStore>) -> Self {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let nanos = clock
            .now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let pid = std::process::id();
        let n = INSTANCES.fetch_add(1, Ordering::Relaxed);
        Self {
            embedder,
            store,
            clock,
            config: RecallConfig::default(),
            session: format!("s{nanos:x}-{pid:x}"),
            instance: format!("{nanos:x}-{pid:x}-{n:x}"),
        }
    }

    /// The same with `config`.
    #[must_use]
    pub fn with_config(mut self, config: RecallConfig) -> Self {
        self.config = config;
        self
    }

    /// The same reading time from `clock`.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The same keeping memories under `session` (until a carried session is restored).
    #[must_use]
    pub fn with_session(mut self, session: impl Into<String>) -> Self {
        self.session = session.into();
        self
    }

    /// The configuration.
    pub fn config(&self) -> &RecallConfig {
        &self.config
    }

    fn session_of(&self, ctx: &Context) -> String {
        ctx.get::<RecallSession>()
            .map_or_else(|| self.session.clone(), |s| s.session_id.clone())
    }

    async fn embed_one(&self, text: String) -> Result<Vec<f32>, BoxError> {
        let embedder = Arc::clone(&self.embedder);
        let texts = vec![text];
        let vectors = off_runtime(move || embedder.embed(&texts))
            .await
            .map_err(|e| format!("the embedder's {e}"))??;
        let vector = vectors
            .into_iter()
            .next()
            .ok_or("the embedder returned no vector for one text")?;
        if vector.len() != self.embedder.dim() {
            return Err(format!(
                "the embedder returned {} dimensions, it says {}",
                vector.len(),
                self.embedder.dim()
            )
            .into());
        }
        Ok(vector)
    }
}

impl Interceptor for Recall {
    fn name(&self) -> &str {
        "recall"
    }

    fn pre_request<'a>(
        &'a self,
        input: &'a str,
        ctx: &'a mut Context,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            let session = self.session_of(ctx);
            ctx.insert(Recalled {
                input: input.to_owned(),
                hits: Vec::new(),
                at: None,
            });
            let vector = self.embed_one(input.to_owned()).await?;
            let hits = self
                .store
                .search(Query {
                    session: Some(&session),
                    vector: &vector,
                    k: self.config.k,
                    min_similarity: self.config.min_similarity,
                })
                .await?;
            debug!(session, recalled = hits.len(), "recall");
            ctx.insert(Recalled {
                input: input.to_owned(),
                hits,
                at: Some(self.clock.now()),
            });
            ctx.insert(RecallSession {
                session_id: session,
            });
            Ok(())
        })
    }

    fn pre_schema(&self, schema: &mut Schema, _ctx: &Context) -> Result<(), BoxError> {
        schema.extend(SUMMARY_EXTENSION, summary_delta());
        Ok(())
    }

    fn pre_prompt(&self, prompts: &mut Prompts, ctx: &Context) -> Result<(), BoxError> {
        if let Some(recalled) = ctx.get::<Recalled>()
            && let Some(section) = section(
                &recalled.hits,
                recalled.at.unwrap_or_else(|| self.clock.now()),
                self.config.max_chars,
            )
        {
            prompts.system_push(&section);
        }
        Ok(())
    }

    fn post_response<'a>(
        &'a self,
        response: &'a Value,
        ctx: &'a mut Context,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            let Some(summary) = response
                .get("summary")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
            else {
                debug!(turn = ctx.turn, "reply has no summary; nothing stored");
                return Ok(());
            };
            let session = self.session_of(ctx);
            let input = ctx
                .get::<Recalled>()
                .map(|r| r.input.clone())
                .unwrap_or_default();
            let text = if self.config.store_exchange {
                let answer = response.get("answer").map_or_else(
                    || response.to_string(),
                    |a| a.as_str().map_or_else(|| a.to_string(), str::to_owned),
                );
                format!("{summary}\nUser: {input}\nAnswer: {answer}")
            } else {
                summary.to_owned()
            };
            let embedding = self.embed_one(text.clone()).await?;
            let record = Record {
                id: format!("{session}-{}-{}", ctx.turn, self.instance),
                session: session.clone(),
                text,
                embedding,
                created_at: self.clock.now(),
            };
            self.store.add(vec![record]).await?;
            ctx.insert(RecallSession {
                session_id: session,
            });
            Ok(())
        })
    }

    fn carry(&self, ctx: &Context) -> Result<Option<Carried>, BoxError> {
        let state = RecallSession {
            session_id: self.session_of(ctx),
        };
        Ok(Some(Carried::new(STATE_VERSION, &state)?))
    }

    fn restore(&self, carried: &Carried, ctx: &mut Context) -> Result<(), BoxError> {
        let state: RecallSession = carried.read(STATE_VERSION)?;
        ctx.insert(state);
        Ok(())
    }
}

/// Runs `work` off the async runtime's threads: inside a tokio runtime through
/// `tokio::task::spawn_blocking` (so a slow or waiting `work` leaves the runtime's workers free,
/// even on a current-thread runtime), outside one (a `block_on` executor) inline. For the CPU work of
/// an [`Embedder`] and the blocking IO of an embedded [`MemoryStore`].
///
/// The work runs to its end even if the returned future is dropped before it.
///
/// # Errors
///
/// `task failed: …` when the work panicked or the runtime shut down before it ran (the panic is
/// not resumed in the caller).
///
/// ```
/// # use claij_interceptors::builtin::recall::off_runtime;
/// let inline = futures_executor::block_on(off_runtime(|| 6 * 7))?;
/// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
/// let pooled = runtime.block_on(off_runtime(|| 6 * 7))?;
/// assert_eq!((inline, pooled), (42, 42));
/// # Ok::<(), claij_interceptors::BoxError>(())
/// ```
pub async fn off_runtime<T, F>(work: F) -> Result<T, BoxError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| format!("task failed: {e}").into())
    } else {
        Ok(work())
    }
}

/// The system-prompt section showing `hits` (most similar first) with their ages at `now`, within
/// `max_chars` characters of memories; `None` when nothing was recalled.
///
/// ```
/// # use std::time::{Duration, SystemTime};
/// # use claij_interceptors::builtin::recall::{Hit, Record, section};
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(10 * 86_400);
/// let hit = |text: &str, ago: u64| Hit {
///     record: Record { id: text.into(), session: "s".into(), text: text.into(), embedding: vec![],
///         created_at: now - Duration::from_secs(ago) },
///     similarity: 0.9,
/// };
/// let hits = [hit("The user's locker number is 47.", 3 * 86_400), hit("The user likes tea.", 120)];
/// assert_eq!(section(&hits, now, 1_500).as_deref(), Some(
/// "Recalled memories: notes from earlier turns of this conversation that relate to the new message, most related first. Rely on them when the user refers to something said before.
/// - (3 days ago) The user's locker number is 47.
/// - (2 minutes ago) The user likes tea."));
/// ```
pub fn section(hits: &[Hit], now: SystemTime, max_chars: usize) -> Option<String> {
    if hits.is_empty() {
        return None;
    }
    let mut out = String::from(
        "Recalled memories: notes from earlier turns of this conversation that relate to the new \
         message, most related first. Rely on them when the user refers to something said before.",
    );
    let mut used = 0;
    let mut shown = 0;
    for hit in hits {
        let line = format!(
            "- ({}) {}",
            age(now, hit.record.created_at),
            hit.record.text.trim()
        );
        let len = line.chars().count();
        if used + len > max_chars {
            break;
        }
        used += len;
        shown += 1;
        out.push('\n');
        out.push_str(&line);
    }
    let left_out = hits.len() - shown;
    if left_out > 0 {
        let (n, s) = (left_out, if left_out == 1 { "memory" } else { "memories" });
        out.push_str(&format!(
            "\n({n} more recalled {s} left out to stay within the recall budget of {max_chars} characters.)"
        ));
    }
    Some(out)
}

/// How long ago `then` was at `now`: `just now`, `5 minutes ago`, `1 hour ago`, `3 days ago`.
pub fn age(now: SystemTime, then: SystemTime) -> String {
    let secs = now.duration_since(then).map_or(0, |d| d.as_secs());
    let (n, unit) = match secs {
        0..60 => return "just now".to_owned(),
        60..3_600 => (secs / 60, "minute"),
        3_600..86_400 => (secs / 3_600, "hour"),
        _ => (secs / 86_400, "day"),
    };
    if n == 1 {
        format!("1 {unit} ago")
    } else {
        format!("{n} {unit}s ago")
    }
}

/// A deterministic test double for [`Embedder`], not a language model: each lower-cased word
/// (letters and digits) is hashed (FNV-1a) into one of `dim` buckets, and the counts are
/// L2-normalised. Texts sharing words are similar; nothing else is understood.
#[derive(Debug, Clone, Copy)]
pub struct HashedWords {
    dim: usize,
}

impl HashedWords {
    /// Vectors of `dim` dimensions (at least 1).
    pub fn new(dim: usize) -> Self {
        Self { dim: dim.max(1) }
    }

    /// The vector of one text.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0_f32; self.dim];
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in word.to_lowercase().bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
            let bucket = usize::try_from(h % self.dim as u64).unwrap_or(0);
            v[bucket] += 1.0;
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

impl Embedder for HashedWords {
    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, BoxError> {
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}

/// The cosine similarity of `a` and `b` (0 when either is all zeros).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

#[cfg(test)]
mod tests;
