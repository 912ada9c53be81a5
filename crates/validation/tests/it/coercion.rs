//! Schema-aligned parsing of everyday replies: claij's own cases (`tests/corpora/everyday.jsonl`) read
//! the way `process` reads a reply, with `coerce::align` deciding every reply whose values do not
//! validate as they are.

use claij_validation::coerce::align;
use claij_validation::extract::{candidates, is_prose};
use claij_validation::repair::repair;
use claij_validation::{Fix, FixKind, Outcome, Validator};
use serde_json::Value;

/// A reply read as `process` reads it: the first value found that validates as it is, else
/// [`align`] over all the values found.
fn read(reply: &str, validator: &Validator) -> Outcome {
    let mut recovered: Vec<(Value, Vec<Fix>)> = Vec::new();
    for candidate in candidates(reply) {
        if is_prose(&candidate.text) {
            continue;
        }
        let Ok(repaired) = repair(&candidate.text) else {
            continue;
        };
        let mut fixes = candidate.fixes;
        fixes.extend(repaired.fixes);
        if validator.is_valid(&repaired.value) {
            return Outcome::Valid {
                value: repaired.value,
                fixes,
            };
        }
        recovered.push((repaired.value, fixes));
    }
    align(reply, recovered, validator).unwrap_or(Outcome::NoJson {
        reason: "no value".to_owned(),
    })
}

fn cases() -> Vec<Value> {
    let text = crate::fixtures::text("crates/validation/tests/corpora/everyday.jsonl");
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn kind_name(kind: FixKind) -> String {
    serde_json::to_value(kind)
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn everyday_replies() {
    let cases = cases();
    assert!(cases.len() >= 50, "{} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let id = case["id"].as_str().unwrap();
        let reply = case["input"].as_str().unwrap();
        let validator = Validator::new(&case["schema"]).unwrap();
        let outcome = read(reply, &validator);
        let wanted = case["outcome"].as_str().unwrap();
        let got = match &outcome {
            Outcome::Valid { .. } => "valid",
            Outcome::Invalid { .. } => "invalid",
            Outcome::NoJson { .. } => "no_json",
        };
        if got != wanted {
            failures.push(format!("{id}: {wanted} expected, got {outcome:?}"));
            continue;
        }
        assert_eq!(case["expects_error"], wanted != "valid", "{id}");
        let Outcome::Valid { value, fixes } = &outcome else {
            continue;
        };
        if *value != case["expected"] {
            failures.push(format!("{id}: {} expected, got {value}", case["expected"]));
        }
        if let Some(kinds) = case["fixes"].as_array() {
            let got: Vec<String> = fixes.iter().map(|f| kind_name(f.kind)).collect();
            let wanted: Vec<&str> = kinds.iter().map(|k| k.as_str().unwrap()).collect();
            if got != wanted {
                failures.push(format!("{id}: fixes {wanted:?} expected, got {got:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The choice among several values is recorded, and says which value won.
#[test]
fn best_candidate_is_recorded() {
    let validator = Validator::new(&serde_json::json!({
        "type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}
    }))
    .unwrap();
    let reply = "Draft: {\"m\": 1}. Final: {\"n\": \"2\"}";
    let Outcome::Valid { value, fixes } = read(reply, &validator) else {
        panic!()
    };
    assert_eq!(value, serde_json::json!({"n": 2}));
    let last = fixes.last().unwrap();
    assert_eq!(last.kind, FixKind::BestCandidate);
    assert!(last.before.starts_with("value 2 of "), "{last:?}");
    assert!(fixes.iter().any(|f| f.kind == FixKind::StringToNumber));
}

/// A value that already validates is never changed: the big fixture (40-way tool union, optional
/// fields as `anyOf [T, null]`, enums) coerces to itself with no fix.
#[test]
fn a_valid_value_is_left_alone() {
    let schema = crate::fixture("big.json");
    let valid = crate::fixture("big.valid.json");
    let (value, fixes) = claij_validation::coerce::coerce(valid.clone(), &schema);
    assert!(fixes.is_empty(), "{fixes:?}");
    assert_eq!(value, valid);
    let small = crate::fixture("small.json");
    let (_, fixes) = claij_validation::coerce::coerce(crate::fixture("small.valid.json"), &small);
    assert!(fixes.is_empty(), "{fixes:?}");
}

/// Coercion fixes the big fixture's value when fields are written the everyday way.
#[test]
fn big_value_written_the_everyday_way() {
    let validator = Validator::new(&crate::fixture("big.json")).unwrap();
    let valid = crate::fixture("big.valid.json");
    let mut everyday = valid.clone();
    everyday["confidence"] = "0.75".into();
    everyday["priority"] = "Low, I'd say".into();
    let Some(Outcome::Valid { value, fixes }) = align("", vec![(everyday, Vec::new())], &validator)
    else {
        panic!()
    };
    assert_eq!(value, valid);
    let kinds: Vec<FixKind> = fixes.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [FixKind::StringToNumber, FixKind::EnumFromProse]);
    assert_eq!(fixes[1].pointer, "/priority");
}
