//! Benchmarks of claij-schema on the big bench schema (`fixtures/bench`): compact rendering and each dialect's compilation.
#![allow(clippy::print_stdout)]
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

/// Prompt size in o200k tokens, minified JSON against the compact form (a size, printed once, not timed).
fn print_token_counts() {
    let bpe = tiktoken_rs::o200k_base_singleton();
    for name in ["small.json", "big.json"] {
        let schema = fixture(name);
        let minified = bpe.encode_ordinary(&to_json(&schema)).len();
        let compact = bpe.encode_ordinary(&to_compact(&schema)).len();
        println!(
            "{name}: minified {minified} tokens, compact {compact} tokens ({:.1}%)",
            100.0 * compact as f64 / minified as f64
        );
    }
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
