//! Repair speed: valid JSON against `serde_json` (the fast path), throughput on malformed JSON
//! (`big.valid.json` with single quotes and trailing commas) and on the inputs of the repair corpora.
//!
//! The `adversarial` group runs `recover` on 160 KB hostile replies (empty objects back to back, fences,
//! unbalanced quotes, deep brackets, open members, objects scattered in prose): each must stay linear.
//!
//! The `coerce` group is schema-aligned coercion: `coerce/big_valid` walks the big valid value (what a
//! valid reply would pay if coercion ran; `process` never runs it on a value that validates),
//! `coerce/big_two_fixes` is `align` on that value with two fields to coerce (the cost when it runs),
//! `coerce/everyday` reads the 54 replies of `tests/corpora/everyday.jsonl` through `align`.
//!
//! Run with `cargo bench -p claij-validation --bench repair` (`-- adversarial` for the hostile ones).

use std::hint::black_box;

use claij_validation::Validator;
use claij_validation::coerce::{align, coerce};
use claij_validation::extract::{candidates, is_prose, recover};
use claij_validation::repair::repair;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::Value;

#[path = "../../../fixtures/fixture.rs"]
mod fixtures;

/// `valid` with single quotes for double ones and a trailing comma before every closing bracket.
fn malformed(valid: &str) -> String {
    let mut out = String::with_capacity(valid.len() + valid.len() / 8);
    for c in valid.chars() {
        match c {
            '"' => out.push('\''),
            '}' | ']' => {
                out.push(',');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// The inputs of both repair corpora.
fn corpus_inputs() -> Vec<String> {
    [
        "crates/validation/tests/corpora/jsonrepair.jsonl",
        "crates/validation/tests/corpora/json_repair_py.jsonl",
    ]
    .iter()
    .flat_map(|file| {
        fixtures::text(file)
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter_map(|row| row.get("input").and_then(Value::as_str).map(str::to_owned))
            .collect::<Vec<_>>()
    })
    .collect()
}

fn valid(c: &mut Criterion) {
    let text = fixtures::text("fixtures/bench/big.valid.json");
    let mut group = c.benchmark_group("valid");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("serde_json::from_str", |b| {
        b.iter(|| black_box(serde_json::from_str::<Value>(black_box(&text)).is_ok()))
    });
    group.bench_function("repair", |b| {
        b.iter(|| black_box(repair(black_box(&text)).is_ok()))
    });
    group.bench_function("recover", |b| {
        b.iter(|| black_box(recover(black_box(&text)).is_ok()))
    });
    group.finish();
}

fn malformed_json(c: &mut Criterion) {
    let text = malformed(&fixtures::text("fixtures/bench/big.valid.json"));
    assert!(repair(&text).is_ok(), "the malformed fixture must repair");
    let mut group = c.benchmark_group("malformed");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("repair", |b| {
        b.iter(|| black_box(repair(black_box(&text)).is_ok()))
    });
    let reply = format!("Here is the result:\n```json\n{text}\n```\nLet me know if you need more.");
    group.throughput(Throughput::Bytes(reply.len() as u64));
    group.bench_function("recover-from-prose", |b| {
        b.iter(|| black_box(recover(black_box(&reply)).is_ok()))
    });
    group.finish();
}

fn corpora(c: &mut Criterion) {
    let inputs = corpus_inputs();
    let bytes: usize = inputs.iter().map(String::len).sum();
    let mut group = c.benchmark_group("corpora");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("recover-all-inputs", |b| {
        b.iter(|| {
            for input in &inputs {
                black_box(recover(black_box(input)).is_ok());
            }
        })
    });
    group.finish();
}

/// 160 KB replies built to make extraction or repair quadratic.
fn adversarial(c: &mut Criterion) {
    const SIZE: usize = 160 * 1024;
    let scattered: String = (0..SIZE / 10)
        .map(|i| format!("x {{\"a\":{i}}} "))
        .collect();
    let cases = [
        ("empty-objects", "{}".repeat(SIZE / 2)),
        ("fences", "```\n".repeat(SIZE / 4)),
        ("unbalanced-quotes", "\"a".repeat(SIZE / 2)),
        ("deep-arrays", "[".repeat(SIZE)),
        ("open-members", "{\"a\":".repeat(SIZE / 5)),
        ("objects-in-prose", scattered),
    ];
    let mut group = c.benchmark_group("adversarial");
    group.sample_size(10);
    for (name, reply) in &cases {
        group.throughput(Throughput::Bytes(reply.len() as u64));
        group.bench_function(*name, |b| {
            b.iter(|| black_box(recover(black_box(reply)).is_ok()))
        });
    }
    group.finish();
}

/// Schema-aligned coercion: skipped on a valid reply, what it costs when it runs.
fn coercion(c: &mut Criterion) {
    let schema: Value =
        serde_json::from_str(&fixtures::text("fixtures/bench/big.json")).unwrap_or_default();
    let valid: Value =
        serde_json::from_str(&fixtures::text("fixtures/bench/big.valid.json")).unwrap_or_default();
    let validator = Validator::new(&schema).unwrap_or_else(|e| panic!("big.json: {e}"));
    assert!(validator.is_valid(&valid), "big.valid.json must validate");
    let mut two_fixes = valid.clone();
    two_fixes["confidence"] = Value::String("0.75".to_owned());
    two_fixes["priority"] = Value::String("Low, I'd say".to_owned());
    let fixed = align("", vec![(two_fixes.clone(), Vec::new())], &validator);
    assert!(
        fixed.is_some_and(|o| o.is_valid()),
        "the two fields must coerce"
    );
    let mut group = c.benchmark_group("coerce");
    group.bench_function("big_valid", |b| {
        b.iter(|| black_box(coerce(black_box(valid.clone()), &schema).1.len()))
    });
    group.bench_function("big_two_fixes", |b| {
        b.iter(|| {
            let recovered = vec![(black_box(two_fixes.clone()), Vec::new())];
            black_box(align("", recovered, &validator).is_some_and(|o| o.is_valid()))
        })
    });
    let cases = everyday_cases();
    group.throughput(Throughput::Elements(cases.len() as u64));
    group.bench_function("everyday", |b| {
        b.iter(|| {
            for (reply, validator) in &cases {
                black_box(read(black_box(reply), validator));
            }
        })
    });
    group.finish();
}

/// The replies and schemas of `tests/corpora/everyday.jsonl`.
fn everyday_cases() -> Vec<(String, Validator)> {
    let text = fixtures::text("crates/validation/tests/corpora/everyday.jsonl");
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|case| {
            let reply = case.get("input")?.as_str()?.to_owned();
            Some((reply, Validator::new(case.get("schema")?).ok()?))
        })
        .collect()
}

/// A reply read the way `process` reads it: a value valid as it is, else `align` over all values.
fn read(reply: &str, validator: &Validator) -> bool {
    let mut recovered = Vec::new();
    for candidate in candidates(reply) {
        if is_prose(&candidate.text) {
            continue;
        }
        if let Ok(repaired) = repair(&candidate.text) {
            if validator.is_valid(&repaired.value) {
                return true;
            }
            recovered.push((repaired.value, candidate.fixes));
        }
    }
    align(reply, recovered, validator).is_some_and(|o| o.is_valid())
}

criterion_group!(
    benches,
    valid,
    malformed_json,
    corpora,
    adversarial,
    coercion
);
criterion_main!(benches);
