//! Sentence-embedding throughput: criterion times one `Embedder::embed` call on a batch of 64 short
//! sentences (~12 tokens each) at 1 and 2 candle threads; its throughput line is sentences per second
//! (`embed/64_short/threads_N`).
//!
//! candle fixes its thread count once per process, so this process runs itself again per thread
//! count (`CANDLE_NUM_THREADS`, `RAYON_NUM_THREADS`), passing criterion's arguments on.
//! Needs the model in the cache (`cargo xtask embed-model`); `CLAIJ_MODEL_DIR` overrides the
//! directory. Run alone: `cargo bench -p claij-local --bench embed`.

#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::hint::black_box;
use std::process::Command;
use std::time::Duration;

use claij_local::Embedder;
use criterion::{Criterion, Throughput};

/// Set in the child runs: the thread count they measure.
const CHILD: &str = "CLAIJ_EMBED_BENCH_THREADS";
const BATCH: usize = 64;

fn sentences() -> Vec<String> {
    let subjects = [
        "The meeting",
        "My dog",
        "The user",
        "Our train",
        "The report",
        "Her sister",
        "The cafe",
        "This invoice",
    ];
    let endings = [
        "was moved to Thursday at 10am.",
        "likes the colour blue best.",
        "is three years old today.",
        "left the station at noon.",
        "needs a reply by Friday.",
        "lives in the capital of France.",
        "opens again next Monday morning.",
        "was paid in full last week.",
    ];
    subjects
        .iter()
        .flat_map(|subject| {
            endings
                .iter()
                .map(move |ending| format!("{subject} {ending}"))
        })
        .take(BATCH)
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = claij_local::embed_model_dir(|name| std::env::var_os(name));
    if !dir.join(claij_local::WEIGHTS_FILE).is_file() {
        println!(
            "embed: skipped, no embedding model at {} (run `cargo xtask embed-model`)",
            dir.display()
        );
        return;
    }
    let Ok(threads) = std::env::var(CHILD) else {
        let exe = std::env::current_exe().expect("own path");
        for threads in ["1", "2"] {
            let status = Command::new(&exe)
                .args(&args)
                .env(CHILD, threads)
                .env("CANDLE_NUM_THREADS", threads)
                .env("RAYON_NUM_THREADS", threads)
                .status()
                .expect("run the bench child");
            assert!(
                status.success(),
                "embed bench with {threads} thread(s) failed"
            );
        }
        return;
    };
    let embedder = Embedder::open(&dir).expect("the embedding model opens");
    let batch = sentences();
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("embed");
    group.throughput(Throughput::Elements(BATCH as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function(format!("64_short/threads_{threads}"), |b| {
        b.iter(|| black_box(embedder.embed(black_box(&batch)).expect("embeds")));
    });
    group.finish();
    criterion.final_summary();
}
