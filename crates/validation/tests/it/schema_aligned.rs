//! Coercion toward the schema measured on a corpus (`tests/coercion/cases.json`): each case a schema, a
//! reply as a model writes it, and the value `process` must make of it or `"refused"` (no valid value:
//! ambiguity, or data the reply does not hold). Prints the pass rate per category; fails below the
//! floor, and on any refused case read into a value.
//!
//! Measure: `cargo test -p claij-validation --test it schema_aligned -- --nocapture`

use std::collections::BTreeMap;

use claij_validation::{Outcome, Validator, process};
use serde_json::Value;

/// The share of cases that must pass, overall (per mille).
const FLOOR_PER_MILLE: usize = 990;

#[test]
fn schema_aligned_corpus() {
    let corpus: Value = serde_json::from_str(&crate::fixtures::text(
        "crates/validation/tests/coercion/cases.json",
    ))
    .unwrap();
    let cases = corpus["cases"].as_array().unwrap();
    assert!(cases.len() >= 100, "{} cases", cases.len());
    // category -> (passed, total)
    let mut tally: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut invented = Vec::new();
    for case in cases {
        let category = case["category"].as_str().unwrap();
        let name = case["name"].as_str().unwrap();
        let reply = case["reply"].as_str().unwrap();
        let validator = Validator::new(&case["schema"]).unwrap();
        let outcome = process(reply, &validator);
        let refused = case["expect"] == "refused";
        let passed = match (&outcome, refused) {
            (Outcome::Valid { value, .. }, true) => {
                invented.push(format!("{category}/{name}: refused expected, got {value}"));
                false
            }
            (_, true) => true,
            (Outcome::Valid { value, .. }, false) => *value == case["expect"]["value"],
            (_, false) => false,
        };
        if !passed {
            failures.push(format!(
                "{category}/{name}: {} expected, got {}",
                case["expect"],
                match &outcome {
                    Outcome::Valid { value, .. } => value.to_string(),
                    other => format!("{other:?}"),
                }
            ));
        }
        let entry = tally.entry(category).or_default();
        entry.0 += usize::from(passed);
        entry.1 += 1;
    }
    let (passed, total) = tally
        .values()
        .fold((0, 0), |(p, t), (cp, ct)| (p + cp, t + ct));
    for (category, (p, t)) in &tally {
        println!(
            "{category:<10} {p:>3}/{t:<3} {:>5.1}%",
            100.0 * *p as f64 / *t as f64
        );
    }
    println!(
        "{:<10} {passed:>3}/{total:<3} {:>5.1}%",
        "overall",
        100.0 * passed as f64 / total as f64
    );
    for failure in &failures {
        println!("  failed: {failure}");
    }
    assert!(invented.is_empty(), "{}", invented.join("\n"));
    assert!(
        passed * 1000 >= FLOOR_PER_MILLE * total,
        "{passed}/{total} below the floor of {FLOOR_PER_MILLE} per mille:\n{}",
        failures.join("\n")
    );
}
