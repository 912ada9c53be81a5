//! recall@k of a held fact after N distracting turns (issue 33): the `recall` interceptor on the
//! embedded sentence model (all-MiniLM-L6-v2, `claij::recall::LocalEmbedder`) at k = 1, 3, 5 against
//! the `memory` interceptor's `bounded` (`Bounded::default()`) and `window` (`Window::new(10)`)
//! strategies, at N = 10, 50 and 200, over the probes of `fixtures/recall/probes.json`, each
//! conversation run through the real pipeline with a scripted model (see `recall_at_k/harness.rs`).
//! The same recall at k = 5 on `HashedWords` (words hashed, no meaning) is the lexical baseline.
//!
//! Not a criterion bench: it reports fractions, not times. It writes the table to stdout and
//! `target/claij/bench-recall.md` (`cargo xtask bench` prints it at the end), and the counts to
//! `target/claij/bench-recall.json` for the goals table. The pipeline embeds one text per call, so
//! every text of the corpus is embedded once first, in batches of 64, and looked up in the runs.
//!
//! Needs the embedding model (`cargo xtask embed-model`; `CLAIJ_MODEL_DIR` overrides the
//! directory): without it the bench says so and writes nothing, and fails under `CI=true`.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

#[path = "recall_at_k/harness.rs"]
mod harness;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use claij::interceptors::builtin::recall::{Embedder, HashedWords, RecallConfig, cosine};
use claij::recall::LocalEmbedder;
use harness::{Cell, Corpus, Precomputed, Strategy, WINDOW_SIZE};
use serde_json::{Map, Value, json};

/// The distracting turns between the fact and the question.
const NS: [usize; 3] = [10, 50, 200];
/// The recall interceptor's k (5 is its default).
const KS: [usize; 3] = [1, 3, 5];
/// Texts per call of the model when embedding the corpus ahead.
const BATCH: usize = 64;

fn main() {
    // `cargo bench` passes `--bench` and maybe a filter: run unless filtered out.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args
        .iter()
        .find(|a| !a.starts_with('-'))
        .is_some_and(|f| !"recall_at_k".contains(f.as_str()))
    {
        return;
    }
    let dir = claij::local::embed_model_dir(|name| std::env::var_os(name));
    let weights = dir.join(claij::local::WEIGHTS_FILE);
    if !weights.is_file() {
        let why = format!(
            "recall_at_k: no embedding model at {} (run `cargo xtask embed-model`)",
            weights.display()
        );
        if claij_test_support::is_ci(|name| std::env::var_os(name)) {
            eprintln!("{why}; CI is set, so this is a failure");
            std::process::exit(1);
        }
        println!("{why}: skipped");
        return;
    }
    let started = Instant::now();
    let corpus = Corpus::load().expect("fixtures/recall/probes.json");
    let model: Arc<dyn Embedder> =
        Arc::new(LocalEmbedder::open(&dir).expect("the embedding model"));
    let texts = corpus.texts();
    let embedding = Instant::now();
    let precomputed = Arc::new(Precomputed::new(model, &texts, BATCH).expect("embed the corpus"));
    let embed_s = embedding.elapsed().as_secs_f64();
    let embedder: Arc<dyn Embedder> = precomputed.clone();
    let mut strategies: Vec<Strategy> = KS.iter().map(|&k| Strategy::Recall { k }).collect();
    strategies.extend([Strategy::Bounded, Strategy::Window]);
    let running = Instant::now();
    let cells = harness::measure(&corpus, &NS, &strategies, &embedder).expect("a probe's run");
    let lexical: Arc<dyn Embedder> = Arc::new(HashedWords::new(384));
    let baseline = harness::measure(&corpus, &NS, &[Strategy::Recall { k: 5 }], &lexical)
        .expect("a probe's run");
    let run_s = running.elapsed().as_secs_f64();
    let total_s = started.elapsed().as_secs_f64();
    let timing = Timing {
        texts: texts.len(),
        embed_s,
        run_s,
        total_s,
        misses: precomputed.misses(),
    };

    // Each question's similarity to its fact's summary: a miss at every N under the floor is the
    // floor's, not the distractors'.
    let similarity: Vec<f32> = corpus
        .probes
        .iter()
        .map(|p| {
            let v = embedder
                .embed(&[p.question.clone(), p.fact.summary.clone()])
                .expect("embed");
            cosine(&v[0], &v[1])
        })
        .collect();
    let report = markdown(&corpus, &cells, &baseline, &timing, &similarity);
    print!("{report}");
    let out = target_dir().join("claij");
    std::fs::create_dir_all(&out).expect("create target/claij");
    std::fs::write(out.join("bench-recall.md"), &report).expect("write bench-recall.md");
    let summary = summary(&corpus, &cells, &baseline, &timing);
    std::fs::write(
        out.join("bench-recall.json"),
        serde_json::to_string_pretty(&summary).expect("JSON"),
    )
    .expect("write bench-recall.json");
}

struct Timing {
    texts: usize,
    embed_s: f64,
    run_s: f64,
    total_s: f64,
    /// Texts the runs embedded that were not embedded ahead (0 when the corpus covers them all).
    misses: usize,
}

fn cell(cells: &[Cell], strategy: Strategy, n: usize) -> &Cell {
    cells
        .iter()
        .find(|c| c.strategy == strategy && c.n == n)
        .expect("every strategy and N measured")
}

fn fraction(cell: &Cell) -> String {
    format!(
        "{}/{} ({:.0}%)",
        cell.held.len(),
        cell.probes,
        100.0 * cell.held.len() as f64 / cell.probes.max(1) as f64
    )
}

/// The table (strategy x N x k), the probes each strategy missed at k = 5, and the times.
fn markdown(
    corpus: &Corpus,
    cells: &[Cell],
    baseline: &[Cell],
    timing: &Timing,
    similarity: &[f32],
) -> String {
    let probes = corpus.probes.len();
    let mut out = format!(
        "## recall@k of a held fact after N distracting turns ({probes} probes, all-MiniLM-L6-v2)\n\n\
         A fact in turn 2, N distracting turns, then a question worded apart from it; held when the \
         fact's summary is in the question's prompt (recall: among the recalled memories; bounded, \
         window: in the memory section, the same for every k).\n\n\
         | strategy | k | N = 10 | N = 50 | N = 200 |\n|---|---|---|---|---|\n"
    );
    let mut row = |name: &str, k: &str, strategy: Strategy, from: &[Cell]| {
        let figures: Vec<String> = NS
            .iter()
            .map(|&n| fraction(cell(from, strategy, n)))
            .collect();
        let _ = writeln!(out, "| {name} | {k} | {} |", figures.join(" | "));
    };
    for k in KS {
        row("recall", &k.to_string(), Strategy::Recall { k }, cells);
    }
    row(
        "bounded (Bounded::default())",
        "any",
        Strategy::Bounded,
        cells,
    );
    row(
        &format!("window (Window::new({WINDOW_SIZE}))"),
        "any",
        Strategy::Window,
        cells,
    );
    row(
        "recall on HashedWords (no meaning, lexical baseline)",
        "5",
        Strategy::Recall { k: 5 },
        baseline,
    );
    let _ = writeln!(
        out,
        "\nmissed by recall at k = 5 (the question's cosine similarity to the fact's summary; the \
         recall floor is {}):",
        RecallConfig::default().min_similarity
    );
    for n in NS {
        let held = &cell(cells, Strategy::Recall { k: 5 }, n).held;
        let missed: Vec<String> = corpus
            .probes
            .iter()
            .zip(similarity)
            .filter(|(p, _)| !held.contains(&p.id))
            .map(|(p, s)| format!("{} ({s:.3})", p.id))
            .collect();
        let _ = writeln!(
            out,
            "- N = {n}: {}",
            if missed.is_empty() {
                "none".to_owned()
            } else {
                missed.join(", ")
            }
        );
    }
    let _ = writeln!(
        out,
        "\n{} texts embedded in batches of {BATCH} in {:.1} s; the {} conversations ran in {:.1} s; \
         {:.1} s in all ({} texts embedded outside the batches)",
        timing.texts,
        timing.embed_s,
        probes * (cells.len() + baseline.len()),
        timing.run_s,
        timing.total_s,
        timing.misses,
    );
    out
}

/// `bench-recall.json`: `{"probes": 25, "recall": {"k5": {"n10": 24, …}, …}, "bounded": {"n10": …},
/// "window": …, "lexical_baseline": {"k5": …}, …}`, counts of probes held.
fn summary(corpus: &Corpus, cells: &[Cell], baseline: &[Cell], timing: &Timing) -> Value {
    let by_n = |strategy: Strategy, from: &[Cell]| -> Value {
        let mut map = Map::new();
        for n in NS {
            map.insert(format!("n{n}"), json!(cell(from, strategy, n).held.len()));
        }
        Value::Object(map)
    };
    let mut recall = Map::new();
    for k in KS {
        recall.insert(format!("k{k}"), by_n(Strategy::Recall { k }, cells));
    }
    json!({
        "model": "all-MiniLM-L6-v2",
        "probes": corpus.probes.len(),
        "recall": recall,
        "bounded": by_n(Strategy::Bounded, cells),
        "window": by_n(Strategy::Window, cells),
        "window_size": WINDOW_SIZE,
        "lexical_baseline": {"k5": by_n(Strategy::Recall { k: 5 }, baseline)},
        "texts_embedded": timing.texts,
        "embed_s": timing.embed_s,
        "run_s": timing.run_s,
        "total_s": timing.total_s,
    })
}

fn target_dir() -> PathBuf {
    // benches run from the package directory; the workspace target is two levels up unless overridden.
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}
