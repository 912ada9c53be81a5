//! Memoized compilation: identical schemas (by content) share one compiled form.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A 64-bit content hash of a schema's JSON text (FNV-1a), stable across runs and platforms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SchemaHash(pub u64);

impl SchemaHash {
    /// The hash of a schema's compact JSON text.
    pub fn of(schema: &Value) -> Self {
        Self::of_text(&schema.to_string())
    }

    fn of_text(text: &str) -> Self {
        let mut h = Fnv1a::default();
        h.write(text.as_bytes());
        Self(h.finish())
    }
}

impl fmt::Display for SchemaHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// A thread-safe cache of values compiled from schemas, keyed by schema content.
///
/// Hits are checked against the full schema text, so a hash collision can never return the wrong
/// value. The oldest entries are evicted past the capacity (default 256).
///
/// ```
/// use claij_schema::Memo;
///
/// let memo = Memo::default();
/// let schema = claij_schema::base();
/// let a = memo.get_or_try_insert(&schema, |s| Ok::<_, ()>(s.to_string().len()))?;
/// let b = memo.get_or_try_insert(&schema.clone(), |_| Err(()))?; // not called: a hit
/// assert_eq!(a, b);
/// assert_eq!((memo.stats().hits, memo.stats().misses), (1, 1));
/// # Ok::<(), ()>(())
/// ```
pub struct Memo<T> {
    inner: Mutex<Inner<T>>,
    capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Entries under one hash: the schema text (to rule out collisions) and the compiled value.
type Bucket<T> = Vec<(Arc<str>, Arc<T>)>;

struct Inner<T> {
    entries: HashMap<SchemaHash, Bucket<T>>,
    order: VecDeque<(SchemaHash, Arc<str>)>,
}

/// Hit and miss counts of a [`Memo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MemoStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that compiled.
    pub misses: u64,
    /// Entries held now.
    pub entries: usize,
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Self::with_capacity(256)
    }
}

impl<T> Memo<T> {
    /// A memo holding at most `capacity` compiled schemas (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                order: VecDeque::new(),
            }),
            capacity: capacity.max(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The compiled form of `schema`, compiling it with `compile` on a miss.
    ///
    /// # Errors
    ///
    /// Whatever `compile` returns; failures are not cached.
    pub fn get_or_try_insert<E>(
        &self,
        schema: &Value,
        compile: impl FnOnce(&Value) -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        let text: Arc<str> = schema.to_string().into();
        let hash = SchemaHash::of_text(&text);
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = inner
            .entries
            .get(&hash)
            .and_then(|bucket| bucket.iter().find(|(t, _)| **t == *text))
        {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Arc::clone(&found.1));
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let value = Arc::new(compile(schema)?);
        if inner.order.len() >= self.capacity
            && let Some((old_hash, old_text)) = inner.order.pop_front()
            && let Some(bucket) = inner.entries.get_mut(&old_hash)
        {
            bucket.retain(|(t, _)| *t != old_text);
            if bucket.is_empty() {
                inner.entries.remove(&old_hash);
            }
        }
        inner
            .entries
            .entry(hash)
            .or_default()
            .push((Arc::clone(&text), Arc::clone(&value)));
        inner.order.push_back((hash, text));
        Ok(value)
    }

    /// Hit and miss counters.
    pub fn stats(&self) -> MemoStats {
        let entries = self
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .order
            .len();
        MemoStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            entries,
        }
    }
}

impl<T> fmt::Debug for Memo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Memo")
            .field("capacity", &self.capacity)
            .field("stats", &self.stats())
            .finish()
    }
}

/// FNV-1a, 64 bits: tiny, and stable across Rust versions (unlike `DefaultHasher`).
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn hits_misses_and_eviction() {
        let memo = Memo::with_capacity(2);
        let compile = |s: &Value| Ok::<_, ()>(s.to_string());
        for i in 0..3 {
            memo.get_or_try_insert(&json!({"n": i}), compile).unwrap();
        }
        memo.get_or_try_insert(&json!({"n": 2}), compile).unwrap();
        // {"n": 0} was evicted: compiling it again is a miss.
        memo.get_or_try_insert(&json!({"n": 0}), compile).unwrap();
        let stats = memo.stats();
        assert_eq!((stats.hits, stats.misses, stats.entries), (1, 4, 2));
    }

    #[test]
    fn failures_are_not_cached() {
        let memo: Memo<u8> = Memo::default();
        assert!(memo.get_or_try_insert(&json!({}), |_| Err("no")).is_err());
        assert_eq!(
            *memo
                .get_or_try_insert(&json!({}), |_| Ok::<_, &str>(7))
                .unwrap(),
            7
        );
        assert_eq!(memo.stats().misses, 2);
    }

    #[test]
    fn hash_is_stable() {
        assert_eq!(SchemaHash::of(&json!({})).to_string(), "08f44b07b5901a25");
    }
}
