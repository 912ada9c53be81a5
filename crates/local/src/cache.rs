//! The prefix cache: keys and values of earlier prompts, kept so a request that starts with the same
//! tokens (a retry, the next FSM state with the same system prompt and schema, the next chat turn)
//! reads only what is new. Bounded by [`super::LocalConfig::kv_cache_mib`]: the least recently used
//! entries are evicted first, and a prompt too long for the whole budget is kept cut to fit.

use toktrie::TokenId;

use super::model::CHUNK;

/// What the cache holds per entry: something that can be cut to its first tokens.
pub(super) trait Prefix: Sized {
    /// The first `len` tokens' worth, or `None` when cutting fails.
    fn cut(&self, len: usize) -> Option<Self>;
}

/// Entries keyed by their tokens, each a whole number of chunks long.
pub(super) struct PrefixCache<T> {
    entries: Vec<Entry<T>>,
    limit_bytes: usize,
    bytes_per_token: usize,
    clock: u64,
}

struct Entry<T> {
    tokens: Vec<TokenId>,
    value: T,
    used: u64,
}

/// How many leading tokens of `prompt` a cached `tokens` can supply: their common prefix, leaving at
/// least one prompt token to read (its logits are the first answer's), rounded down to the grid.
pub(super) fn reusable(cached: &[TokenId], prompt: &[TokenId]) -> usize {
    let common = cached
        .iter()
        .zip(prompt)
        .take_while(|(a, b)| a == b)
        .count()
        .min(prompt.len().saturating_sub(1));
    common / CHUNK * CHUNK
}

impl<T: Prefix> PrefixCache<T> {
    /// An empty cache holding at most `limit_bytes`, an entry costing `bytes_per_token` per token.
    pub(super) fn new(limit_bytes: usize, bytes_per_token: usize) -> Self {
        Self {
            entries: Vec::new(),
            limit_bytes,
            bytes_per_token: bytes_per_token.max(1),
            clock: 0,
        }
    }

    /// The entry supplying the most leading tokens of `prompt`, and how many it supplies.
    pub(super) fn lookup(&mut self, prompt: &[TokenId]) -> Option<(usize, &T)> {
        self.clock += 1;
        let clock = self.clock;
        let entry = self
            .entries
            .iter_mut()
            .map(|e| (reusable(&e.tokens, prompt), e))
            .filter(|(n, _)| *n > 0)
            .max_by_key(|(n, e)| (*n, e.used))?;
        entry.1.used = clock;
        Some((entry.0, &entry.1.value))
    }

    /// Keeps `value`, the keys and values of `tokens` (a whole number of chunks). An entry that is a
    /// prefix of it is replaced; when it is a prefix of an entry already there, nothing changes but
    /// that entry's age. Evicts the least recently used entries to stay within the limit.
    pub(super) fn insert(&mut self, tokens: Vec<TokenId>, value: T) {
        self.clock += 1;
        let clock = self.clock;
        if let Some(longer) = self
            .entries
            .iter_mut()
            .find(|e| e.tokens.starts_with(&tokens))
        {
            longer.used = clock;
            return;
        }
        self.entries.retain(|e| !tokens.starts_with(&e.tokens));
        let capacity = self.limit_bytes / self.bytes_per_token / CHUNK * CHUNK;
        let (tokens, value) = if tokens.len() > capacity {
            tracing::debug!(
                tokens = tokens.len(),
                kept = capacity,
                limit_bytes = self.limit_bytes,
                "a prompt's keys and values exceed the local model's kv_cache_mib: the cache keeps the prefix that fits"
            );
            if capacity == 0 {
                return;
            }
            match value.cut(capacity) {
                Some(value) => (tokens[..capacity].to_vec(), value),
                None => return,
            }
        } else {
            (tokens, value)
        };
        if tokens.is_empty() {
            return;
        }
        self.entries.push(Entry {
            tokens,
            value,
            used: clock,
        });
        while self.bytes() > self.limit_bytes {
            let Some(oldest) = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.used)
                .map(|(i, _)| i)
            else {
                break;
            };
            let evicted = self.entries.swap_remove(oldest);
            tracing::debug!(
                tokens = evicted.tokens.len(),
                limit_bytes = self.limit_bytes,
                "the local model's key-value cache is at its limit (kv_cache_mib): evicted the least recently used prefix"
            );
        }
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.entries
            .iter()
            .map(|e| e.tokens.len() * self.bytes_per_token)
            .sum()
    }

    /// Entries held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for keys and values: the token count.
    #[derive(Debug, Clone, PartialEq)]
    struct Fake(usize);

    impl Prefix for Fake {
        fn cut(&self, len: usize) -> Option<Self> {
            Some(Fake(len.min(self.0)))
        }
    }

    fn tokens(seed: u32, len: usize) -> Vec<TokenId> {
        (0..len as u32).map(|i| seed * 10_000 + i).collect()
    }

    #[test]
    fn reuse_is_the_common_prefix_on_the_grid_leaving_a_token_to_read() {
        let cached = tokens(1, 3 * CHUNK);
        assert_eq!(
            reusable(&cached, &cached),
            2 * CHUNK,
            "the last token is always read"
        );
        let mut longer = cached.clone();
        longer.push(7);
        assert_eq!(reusable(&cached, &longer), 3 * CHUNK);
        let mut diverging = cached.clone();
        diverging[CHUNK + 5] = 0;
        assert_eq!(reusable(&cached, &diverging), CHUNK);
        assert_eq!(reusable(&cached, &tokens(2, 3 * CHUNK)), 0);
        assert_eq!(reusable(&cached, &cached[..CHUNK - 1]), 0);
    }

    #[test]
    fn lookup_picks_the_longest_reusable_entry() {
        let mut cache = PrefixCache::new(usize::MAX, 1);
        let a = tokens(1, 4 * CHUNK);
        let mut b = a[..2 * CHUNK].to_vec();
        b.extend(tokens(3, 2 * CHUNK));
        cache.insert(a[..CHUNK].to_vec(), Fake(CHUNK));
        cache.insert(b.clone(), Fake(b.len()));
        let mut prompt = b.clone();
        prompt.extend(tokens(4, 10));
        assert_eq!(cache.lookup(&prompt), Some((4 * CHUNK, &Fake(4 * CHUNK))));
        assert_eq!(cache.lookup(&a), Some((2 * CHUNK, &Fake(4 * CHUNK))));
        assert_eq!(cache.lookup(&tokens(9, 100)), None);
    }

    #[test]
    fn a_longer_entry_replaces_its_prefixes() {
        let mut cache = PrefixCache::new(usize::MAX, 1);
        let a = tokens(1, 3 * CHUNK);
        cache.insert(a[..CHUNK].to_vec(), Fake(CHUNK));
        cache.insert(a.clone(), Fake(a.len()));
        assert_eq!(cache.len(), 1);
        cache.insert(a[..2 * CHUNK].to_vec(), Fake(2 * CHUNK));
        assert_eq!(cache.len(), 1, "a prefix of an entry adds nothing");
        assert_eq!(cache.bytes(), 3 * CHUNK);
    }

    #[test]
    fn the_limit_evicts_the_least_recently_used_and_cuts_what_cannot_fit() {
        // Room for 4 chunks of tokens at 2 bytes each.
        let mut cache = PrefixCache::new(4 * CHUNK * 2, 2);
        let (a, b, c) = (tokens(1, 2 * CHUNK), tokens(2, 2 * CHUNK), tokens(3, CHUNK));
        cache.insert(a.clone(), Fake(a.len()));
        cache.insert(b.clone(), Fake(b.len()));
        assert_eq!(cache.bytes(), 4 * CHUNK * 2);
        // `a` was used more recently than `b`: `b` goes.
        assert!(cache.lookup(&[a.clone(), vec![0]].concat()).is_some());
        cache.insert(c.clone(), Fake(c.len()));
        assert_eq!(cache.len(), 2);
        assert!(cache.lookup(&[b, vec![0]].concat()).is_none());
        assert!(cache.lookup(&[a, vec![0]].concat()).is_some());
        // Longer than the whole budget: kept cut to it, alone.
        let long = tokens(4, 6 * CHUNK + 3);
        cache.insert(long.clone(), Fake(long.len()));
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.lookup(&long), Some((4 * CHUNK, &Fake(4 * CHUNK))));
        // A zero budget keeps nothing.
        let mut off = PrefixCache::new(0, 2);
        off.insert(tokens(5, CHUNK), Fake(CHUNK));
        assert_eq!(off.len(), 0);
    }
}
