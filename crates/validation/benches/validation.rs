//! Validation speed on the bench fixtures (`fixtures/bench`): the dispatching validator against plain boon, and the whole
//! reply path (extract, repair, coerce, validate).

use std::hint::black_box;

use claij_validation::{Validator, process};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;

#[path = "../../../fixtures/fixture.rs"]
mod fixtures;

/// A file of the repository's bench fixtures (`fixtures/bench`), parsed.
fn fixture(name: &str) -> Value {
    fixtures::json(&format!("fixtures/bench/{name}"))
}

fn validate(c: &mut Criterion) {
    let mut group = c.benchmark_group("validate");
    for (schema, instances) in [
        ("small", ["small.valid.json", "small.invalid.json"]),
        ("big", ["big.valid.json", "big.invalid.json"]),
    ] {
        let schema_value = fixture(&format!("{schema}.json"));
        let validator = Validator::new(&schema_value).unwrap_or_else(|e| panic!("{e}"));
        let (plain, _) =
            claij_schema::compile_at(&schema_value, &[]).unwrap_or_else(|e| panic!("{e}"));
        for name in instances {
            let instance = fixture(name);
            let id = name.trim_end_matches(".json");
            group.bench_function(format!("claij/{id}"), |b| {
                b.iter(|| black_box(validator.validate(black_box(&instance))))
            });
            let (schemas, root) = plain.as_boon();
            group.bench_function(format!("boon-full-tree/{id}"), |b| {
                b.iter(|| black_box(schemas.validate(black_box(&instance), root).is_ok()))
            });
        }
    }
    // The contract's ids (issue 18): the whole validation of the big valid instance, and the bare check.
    let big = fixture("big.json");
    let validator = Validator::new(&big).unwrap_or_else(|e| panic!("{e}"));
    let valid = fixture("big.valid.json");
    group.bench_function("big_valid", |b| {
        b.iter(|| black_box(validator.validate(black_box(&valid))))
    });
    group.bench_function("is_valid_big", |b| {
        b.iter(|| black_box(validator.is_valid(black_box(&valid))))
    });
    group.finish();

    c.bench_function("compile/big", |b| {
        b.iter(|| black_box(Validator::new(black_box(&big)).map(drop)))
    });
}

fn reply_path(c: &mut Criterion) {
    let validator = Validator::new(&fixture("small.json")).unwrap_or_else(|e| panic!("{e}"));
    let clean = r#"{"answer": "Paris", "state": "done", "summary": "asked for a capital"}"#;
    let messy = "Sure! Here you go:\n```json\n{'answer': 'Paris', 'state': 'done', // the end\n 'summary': 'asked for a capital',}\n```\nAnything else?";
    c.bench_function("process/clean", |b| {
        b.iter(|| black_box(process(black_box(clean), &validator)))
    });
    c.bench_function("process/messy", |b| {
        b.iter(|| black_box(process(black_box(messy), &validator)))
    });
    let big = Validator::new(&fixture("big.json")).unwrap_or_else(|e| panic!("{e}"));
    let reply = fixture("big.valid.json").to_string();
    c.bench_function("process/big_valid", |b| {
        b.iter(|| black_box(process(black_box(&reply), &big)))
    });
}

criterion_group!(benches, validate, reply_path);
criterion_main!(benches);
