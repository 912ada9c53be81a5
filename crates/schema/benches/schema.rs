//! Benchmarks of claij-schema on the big bench schema (`fixtures/bench`): compact rendering and each dialect's compilation;
//! the rendering's size in tokens goes to `<target>/claij/bench-render.json`.
#![allow(clippy::print_stdout, clippy::expect_used)] // a bench fails loudly
#![allow(missing_docs)] // criterion_group! generates undocumented public items

use std::hint::black_box;

use claij_schema::dialect::Dialect;
use claij_schema::render::{to_compact, to_json};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;

#[path = "../../../fixtures/fixture.rs"]
mod fixtures;

/// A schema of the repository's bench fixtures (`fixtures/bench`).
fn fixture(name: &str) -> Value {
    fixtures::json(&format!("fixtures/bench/{name}"))
}

/// Prompt size in o200k tokens, minified JSON against the compact form (a size, printed once, not timed),
/// also written to `<target>/claij/bench-render.json` for the goals table.
fn print_token_counts() {
    let bpe = tiktoken_rs::o200k_base_singleton();
    let mut report = serde_json::Map::new();
    for (key, name) in [("small", "small.json"), ("big", "big.json")] {
        let schema = fixture(name);
        let minified = bpe.encode_ordinary(&to_json(&schema)).len();
        let compact = bpe.encode_ordinary(&to_compact(&schema)).len();
        let percent = 100.0 * compact as f64 / minified as f64;
        println!("{name}: minified {minified} tokens, compact {compact} tokens ({percent:.1}%)");
        report.insert(
            key.to_owned(),
            serde_json::json!({
                "minified_tokens": minified,
                "compact_tokens": compact,
                "compact_percent_of_minified": percent,
            }),
        );
    }
    report.insert("tokenizer".to_owned(), "o200k_base".into());
    let dir = target_dir().join("claij");
    std::fs::create_dir_all(&dir).expect("create target/claij");
    let path = dir.join("bench-render.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&report).expect("a JSON map"),
    )
    .expect("write the report");
    println!("wrote {}", path.display());
}

fn target_dir() -> std::path::PathBuf {
    // Benches run from the package directory; the workspace target is two levels up unless overridden.
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target")
        })
}

fn schema(c: &mut Criterion) {
    print_token_counts();
    let big = fixture("big.json");
    c.bench_function("render/to_compact/big", |b| {
        b.iter(|| to_compact(black_box(&big)))
    });
    c.bench_function("render/to_json/big", |b| {
        b.iter(|| to_json(black_box(&big)))
    });
    for dialect in Dialect::ALL {
        c.bench_function(&format!("dialect/{dialect}/big"), |b| {
            b.iter(|| dialect.compile(black_box(&big)))
        });
    }
}

criterion_group!(benches, schema);
criterion_main!(benches);
