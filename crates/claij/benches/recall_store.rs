//! The embedded memory store (`claij::recall::SqliteStore`, feature `recall`): search latency at
//! 10,000 and 100,000 memories of 384 dimensions (seeded random unit vectors, one session, k = 5)
//! with the default vector cache (`max_cache_bytes` 64 MiB: all of 10,000, about 41,000 of 100,000,
//! the rest read from the file), with every vector cached (`_cache_all`) and with none
//! (`_uncached`, every vector read from the file), and add throughput (one record per transaction,
//! and 100 per transaction).
//!
//! `cargo bench -p claij --features recall --bench recall_store`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, SystemTime};

use claij::interceptors::builtin::recall::{MemoryStore, Query, Record};
use claij::recall::{SqliteOptions, SqliteStore};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use futures_executor::block_on;

const DIM: usize = 384;

/// splitmix64: seeded, so every run scores the same vectors.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A random unit vector.
    fn unit(&mut self) -> Vec<f32> {
        let v: Vec<f32> = (0..DIM)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }
}

fn records(rng: &mut Rng, prefix: &str, n: usize) -> Vec<Record> {
    (0..n)
        .map(|i| Record {
            id: format!("{prefix}{i}"),
            session: "bench".into(),
            text: format!("memory {i}: a summary of a turn, about as long as a sentence or two."),
            embedding: rng.unit(),
            created_at: SystemTime::UNIX_EPOCH + Duration::from_secs(i as u64),
        })
        .collect()
}

fn search(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("recall_store");
    group.sample_size(20);
    for (n, name) in [(10_000, "10k"), (100_000, "100k")] {
        let path = dir.path().join(format!("{name}.sqlite3"));
        let mut rng = Rng(42);
        {
            let store = SqliteStore::open(&path, DIM).unwrap();
            block_on(store.add(records(&mut rng, "m", n))).unwrap();
        }
        let query = rng.unit();
        let default = SqliteOptions::default().max_cache_bytes;
        let caches: &[(usize, &str)] = if n == 100_000 {
            &[(default, ""), (usize::MAX, "_cache_all"), (0, "_uncached")]
        } else {
            &[(default, "")]
        };
        for &(max_cache_bytes, suffix) in caches {
            let options = SqliteOptions {
                max_cache_bytes,
                ..SqliteOptions::default()
            };
            let store = SqliteStore::open_with(&path, DIM, options).unwrap();
            group.bench_function(format!("search_{name}{suffix}"), |b| {
                b.iter(|| {
                    let hits = block_on(store.search(Query {
                        session: Some("bench"),
                        vector: &query,
                        k: 5,
                        min_similarity: -1.0,
                    }))
                    .unwrap();
                    black_box(hits)
                });
            });
        }
    }
    group.finish();
}

fn add(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("add.sqlite3"), DIM).unwrap();
    let mut rng = Rng(7);
    let mut batch = 0usize;
    let mut group = c.benchmark_group("recall_store");
    group.sample_size(20);
    for per in [1usize, 100] {
        group.throughput(Throughput::Elements(per as u64));
        group.bench_function(format!("add_{per}_per_transaction"), |b| {
            b.iter_batched(
                || {
                    batch += 1;
                    records(&mut rng, &format!("b{batch}-"), per)
                },
                |records| block_on(store.add(records)).unwrap(),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, search, add);
criterion_main!(benches);
