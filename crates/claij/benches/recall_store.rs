//! The embedded memory store (`claij::recall::SqliteStore`, feature `recall`): search latency at
//! 10,000 and 100,000 memories of 384 dimensions (seeded random unit vectors, one session, k = 5)
//! with the default vector cache (`max_cache_bytes` 64 MiB: all of 10,000, about 41,000 of 100,000,
//! the rest read from the file), with every vector cached (`_cache_all`) and with none
//! (`_uncached`, every vector read from the file), and add throughput (one record per transaction,
//! and 100 per transaction).
//!
//! The same searches on a Chroma server (`claij::recall::ChromaStore`): the bench starts its own
//! server from the cache `cargo xtask chroma` fills (`CLAIJ_CHROMA`), loads the memories once in
//! requests of 1,000 (the load time of each size is printed), then measures search at 10,000 and
//! 100,000 memories and an add of 1,000 memories in one request. Without the install the Chroma
//! groups are skipped, saying so; under `CI=true` that fails the bench instead.
//!
//! `cargo bench -p claij --features recall --bench recall_store`

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, SystemTime};

use claij::interceptors::builtin::recall::{MemoryStore, Query, Record};
use claij::recall::{ChromaOptions, ChromaStore, SqliteOptions, SqliteStore};
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

/// Chroma's search at 10k and 100k memories and its add of 1,000, on a server of the bench's own.
fn chroma(c: &mut Criterion) {
    let Some(server) = claij_test_support::chroma::start_or_skip("recall_store chroma") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("recall_store");
    group.sample_size(20);
    for (n, name) in [(10_000, "10k"), (100_000, "100k")] {
        let options =
            ChromaOptions::new(server.url(), DIM).with_collection(format!("bench_{name}"));
        let store = runtime.block_on(ChromaStore::open(options)).unwrap();
        let mut rng = Rng(42);
        let started = std::time::Instant::now();
        for (i, chunk) in records(&mut rng, "m", n).chunks(1_000).enumerate() {
            let mut chunk = chunk.to_vec();
            for r in &mut chunk {
                r.id = format!("{}-{i}", r.id);
            }
            runtime.block_on(store.add(chunk)).unwrap();
        }
        let loaded = started.elapsed();
        assert_eq!(runtime.block_on(store.count()).unwrap(), n);
        #[allow(clippy::print_stderr, reason = "the bench reports the one-off load")]
        {
            eprintln!(
                "recall_store chroma: loaded {n} memories of {DIM} dims in requests of 1,000 in {:.1} s ({:.0} memories/s)",
                loaded.as_secs_f64(),
                n as f64 / loaded.as_secs_f64()
            );
        }
        let query = rng.unit();
        group.bench_function(format!("chroma_search_{name}"), |b| {
            b.iter(|| {
                let hits = runtime
                    .block_on(store.search(Query {
                        session: Some("bench"),
                        vector: &query,
                        k: 5,
                        min_similarity: -1.0,
                    }))
                    .unwrap();
                assert_eq!(hits.len(), 5);
                black_box(hits)
            });
        });
    }
    let store = runtime
        .block_on(ChromaStore::open(
            ChromaOptions::new(server.url(), DIM).with_collection("bench_add"),
        ))
        .unwrap();
    let mut rng = Rng(7);
    let mut batch = 0usize;
    group.sample_size(10);
    group.throughput(Throughput::Elements(1_000));
    group.bench_function("chroma_add_1000_per_request", |b| {
        b.iter_batched(
            || {
                batch += 1;
                records(&mut rng, &format!("b{batch}-"), 1_000)
            },
            |records| runtime.block_on(store.add(records)).unwrap(),
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

criterion_group!(benches, search, add, chroma);
criterion_main!(benches);
