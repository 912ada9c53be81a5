//! The validator's compiled check against boon on generated instances of the bench schemas
//! (`fixtures/bench`): instances built by walking the schema (so most reach deep into the tagged
//! unions, with a wrong turn here and there), and the valid fixtures with random edits. Each gets the
//! same verdict from [`Validator::is_valid`], [`Validator::validate`] and plain boon.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::LazyLock;

use claij_validation::{FastPath, Validator};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

#[path = "../../../fixtures/fixture.rs"]
mod fixtures;

/// A file of the repository's bench fixtures (`fixtures/bench`), or the message naming it.
fn fixture(name: &str) -> Result<Value, String> {
    fixtures::try_json(&format!("fixtures/bench/{name}"))
}

struct Bench {
    schema: Value,
    validator: Validator,
    boon: claij_schema::CompiledSchema,
    valid: Value,
}

/// The small and the big bench schema, or the message naming the fixture that could not be read
/// (each test panics with it through [`bench`], rather than the later ones finding the lock poisoned).
static BENCH: LazyLock<Result<Vec<Bench>, String>> = LazyLock::new(|| {
    ["small", "big"]
        .iter()
        .map(|name| {
            let schema = fixture(&format!("{name}.json"))?;
            Ok(Bench {
                validator: Validator::new(&schema).unwrap(),
                boon: claij_schema::compile(&schema).unwrap(),
                valid: fixture(&format!("{name}.valid.json"))?,
                schema,
            })
        })
        .collect()
});

/// The bench schema `which` (0: small, 1: big).
fn bench(which: usize) -> &'static Bench {
    &fixtures::loaded(&BENCH)[which]
}

/// The three verdicts agree.
fn agree(bench: &Bench, instance: &Value) -> Result<bool, TestCaseError> {
    let (schemas, root) = bench.boon.as_boon();
    let boon = schemas.validate(instance, root).is_ok();
    prop_assert_eq!(
        bench.validator.is_valid(instance),
        boon,
        "is_valid on {}",
        instance
    );
    prop_assert_eq!(
        bench.validator.validate(instance).is_ok(),
        boon,
        "validate on {}",
        instance
    );
    Ok(boon)
}

/// A small deterministic generator, seeded by proptest (which then shrinks the seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap()
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 1000 < percent * 10
    }
    fn rarely(&mut self) -> bool {
        self.next() % 1000 < 3
    }
}

fn leaf(rng: &mut Rng) -> Value {
    match rng.below(7) {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => json!(rng.below(200) as i64 - 100),
        3 => json!(rng.below(1000) as f64 / 8.0),
        4 => json!(
            [
                "x",
                "",
                "US",
                "call_abcd1234",
                "a@b.c",
                "2024-05-01T10:00:00Z",
                "usd"
            ][rng.below(7)]
        ),
        5 => json!([]),
        _ => json!({}),
    }
}

/// An instance of `schema` (a subschema of `root`), right most of the time.
fn generate(root: &Value, schema: &Value, rng: &mut Rng, depth: u32) -> Value {
    if depth > 12 || rng.rarely() {
        return leaf(rng);
    }
    if let Some(Value::String(r)) = schema.get("$ref")
        && let Some(target) = r.strip_prefix('#').and_then(|p| root.pointer(p))
    {
        return generate(root, target, rng, depth + 1);
    }
    for keyword in ["oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = schema.get(keyword) {
            let branch = &branches[rng.below(branches.len())];
            return generate(root, branch, rng, depth + 1);
        }
    }
    if let Some(c) = schema.get("const")
        && !rng.rarely()
    {
        return c.clone();
    }
    if let Some(Value::Array(values)) = schema.get("enum")
        && !rng.rarely()
    {
        return values[rng.below(values.len())].clone();
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts[rng.below(ts.len())].as_str().unwrap_or(""),
        _ => "",
    };
    let num = |k: &str| schema.get(k).and_then(Value::as_f64);
    match ty {
        "object" => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            if let Some(Value::Object(props)) = schema.get("properties") {
                for (name, sub) in props {
                    let wanted = if required.contains(&name.as_str()) {
                        97
                    } else {
                        50
                    };
                    if rng.chance(wanted) {
                        out.insert(name.clone(), generate(root, sub, rng, depth + 1));
                    }
                }
            }
            if rng.rarely() {
                out.insert("extra".to_owned(), leaf(rng));
            }
            Value::Object(out)
        }
        "array" => {
            let min = num("minItems").unwrap_or(0.0) as usize;
            let max = num("maxItems").map_or(min + 3, |m| m as usize).min(min + 3);
            let len = min + rng.below(max.saturating_sub(min) + 1) + usize::from(rng.rarely());
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            Value::Array(
                (0..len)
                    .map(|_| generate(root, &items, rng, depth + 1))
                    .collect(),
            )
        }
        "integer" | "number" => {
            let lo = num("minimum").unwrap_or(-50.0);
            let hi = num("maximum").unwrap_or(lo + 100.0);
            let span = (hi - lo).max(1.0);
            let x = if rng.rarely() {
                hi + 1.0
            } else {
                lo + (rng.below(1000) as f64 / 1000.0) * span
            };
            if ty == "integer" && !rng.rarely() {
                json!(x.round().clamp(lo, hi) as i64)
            } else {
                json!(x)
            }
        }
        "string" => {
            let pool = [
                "call_abcd1234",
                "call_x",
                "US",
                "us",
                "a@b.c",
                "ab",
                "2024-05-01T10:00:00Z",
                "",
                "Paris",
            ];
            // Mostly a string that fits the pattern or format, when the pool has one.
            let fits: Vec<&str> = pool
                .iter()
                .copied()
                .filter(|s| {
                    schema
                        .get("pattern")
                        .and_then(Value::as_str)
                        .is_none_or(|p| regex::Regex::new(p).is_ok_and(|r| r.is_match(s)))
                        && (schema.get("format").is_none() || s.starts_with("2024"))
                })
                .collect();
            if !fits.is_empty() && rng.chance(97) {
                json!(fits[rng.below(fits.len())])
            } else {
                json!(pool[rng.below(pool.len())])
            }
        }
        "boolean" => json!(rng.chance(50)),
        "null" => Value::Null,
        _ => leaf(rng),
    }
}

/// One random edit of `value`: a leaf replaced, a key dropped or added, an item duplicated.
fn edit(value: &mut Value, rng: &mut Rng) {
    match value {
        Value::Object(map) if !map.is_empty() && rng.chance(70) => {
            let key = map.keys().nth(rng.below(map.len())).cloned().unwrap();
            match rng.below(4) {
                0 => {
                    map.shift_remove(&key);
                }
                1 => {
                    map.insert("extra".to_owned(), leaf(rng));
                }
                _ => edit(map.get_mut(&key).unwrap(), rng),
            }
        }
        Value::Array(items) if !items.is_empty() && rng.chance(70) => {
            let i = rng.below(items.len());
            if rng.chance(20) {
                let copy = items[i].clone();
                items.push(copy);
            } else {
                edit(&mut items[i], rng);
            }
        }
        _ => *value = leaf(rng),
    }
}

#[test]
fn the_bench_schemas_take_the_fast_path() {
    assert_eq!(bench(0).validator.fast_path(), FastPath::Full);
    // The big schema's two `format: date-time` fields are checked without boon too: a valid
    // instance never reaches boon.
    assert_eq!(bench(1).validator.fast_path(), FastPath::Full);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Instances generated from the schema: the check agrees with boon, and a fair share is valid.
    #[test]
    fn generated_instances_get_boons_verdict(seed in 1..u64::MAX, which in 0..2usize) {
        let bench = bench(which);
        let mut rng = Rng(seed);
        let instance = generate(&bench.schema, &bench.schema, &mut rng, 0);
        agree(bench, &instance)?;
    }

    /// The valid fixtures after a few random edits.
    #[test]
    fn edited_fixtures_get_boons_verdict(seed in 1..u64::MAX, which in 0..2usize, edits in 1..4usize) {
        let bench = bench(which);
        let mut rng = Rng(seed);
        let mut instance = bench.valid.clone();
        for _ in 0..edits {
            edit(&mut instance, &mut rng);
        }
        agree(bench, &instance)?;
    }
}

/// The generator is worth its salt: it reaches valid and invalid instances of the big schema alike.
#[test]
fn generated_big_instances_are_both_valid_and_invalid() {
    let bench = bench(1);
    let (mut valid, mut invalid) = (0, 0);
    for seed in 1..400 {
        let mut rng = Rng(seed * 7919);
        let instance = generate(&bench.schema, &bench.schema, &mut rng, 0);
        if agree(bench, &instance).unwrap() {
            valid += 1;
        } else {
            invalid += 1;
        }
    }
    eprintln!("{valid} valid, {invalid} invalid");
    assert!(
        valid > 40 && invalid > 40,
        "{valid} valid, {invalid} invalid"
    );
}
