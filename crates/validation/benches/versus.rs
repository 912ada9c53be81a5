//! claij's validator against the `jsonschema` crate on the bench fixtures (`fixtures/bench`), in one
//! process: the goals table's "claij / jsonschema, big.valid.json" ratio is `versus/claij_is_valid/big.valid`
//! over `versus/jsonschema_is_valid/big.valid` from the same run.
//!
//! Both validators are compiled once, outside the timing, with the same semantics (draft 2020-12,
//! `format` asserted: claij-schema compiles with format assertions on), and must agree on every
//! instance's verdict before anything is timed. The ids, per instance:
//! - `claij_is_valid`, `jsonschema_is_valid`: the yes/no verdict.
//! - `claij_validate`, `jsonschema_validate`: every violation (claij's `validate`, jsonschema's
//!   `iter_errors` collected), the same work as the verdict on a valid instance.
//!
//! Each pair runs claij then jsonschema, instance by instance, so a busy neighbour skews both
//! alike. Run alone: `cargo bench -p claij-validation --bench versus -- versus`.

use std::hint::black_box;

use claij_validation::Validator;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;

#[path = "../../../fixtures/fixture.rs"]
mod fixtures;

/// A file of the repository's bench fixtures (`fixtures/bench`), parsed.
fn fixture(name: &str) -> Value {
    fixtures::json(&format!("fixtures/bench/{name}"))
}

fn versus(c: &mut Criterion) {
    let mut group = c.benchmark_group("versus");
    for (schema, instances) in [
        ("big", &["big.valid.json", "big.invalid.json"][..]),
        ("small", &["small.valid.json", "small.invalid.json"][..]),
    ] {
        let schema = fixture(&format!("{schema}.json"));
        let claij = Validator::new(&schema).unwrap_or_else(|e| panic!("{e}"));
        let theirs = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&schema)
            .unwrap_or_else(|e| panic!("jsonschema: {e}"));
        for name in instances {
            let instance = fixture(name);
            let valid = claij.is_valid(&instance);
            assert_eq!(
                valid,
                theirs.is_valid(&instance),
                "claij and jsonschema disagree on {name}"
            );
            assert_eq!(valid, name.ends_with(".valid.json"), "{name}");
            let id = name.trim_end_matches(".json");
            group.bench_function(format!("claij_is_valid/{id}"), |b| {
                b.iter(|| black_box(claij.is_valid(black_box(&instance))))
            });
            group.bench_function(format!("jsonschema_is_valid/{id}"), |b| {
                b.iter(|| black_box(theirs.is_valid(black_box(&instance))))
            });
            group.bench_function(format!("claij_validate/{id}"), |b| {
                b.iter(|| black_box(claij.validate(black_box(&instance))))
            });
            group.bench_function(format!("jsonschema_validate/{id}"), |b| {
                b.iter(|| black_box(theirs.iter_errors(black_box(&instance)).collect::<Vec<_>>()))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, versus);
criterion_main!(benches);
