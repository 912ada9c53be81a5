//! The validator on the bench fixtures (`fixtures/bench`) and on generated instances.

use std::sync::LazyLock;

use claij_validation::Validator;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::fixture;

#[test]
fn big_valid_is_valid() {
    let v = Validator::new(&fixture("big.json")).unwrap();
    assert_eq!(v.validate(&fixture("big.valid.json")), Ok(()));
    let v = Validator::new(&fixture("small.json")).unwrap();
    assert_eq!(v.validate(&fixture("small.valid.json")), Ok(()));
}

#[test]
fn big_invalid_reports_each_planted_violation_once() {
    let v = Validator::new(&fixture("big.json")).unwrap();
    let violations = v.validate(&fixture("big.invalid.json")).unwrap_err();
    insta::assert_json_snapshot!(violations);
}

#[test]
fn small_invalid() {
    let v = Validator::new(&fixture("small.json")).unwrap();
    let violations = v.validate(&fixture("small.invalid.json")).unwrap_err();
    insta::assert_json_snapshot!(violations);
}

/// The union dispatch must agree with plain boon on every verdict.
#[test]
fn dispatch_agrees_with_plain_boon_on_big() {
    let schema = fixture("big.json");
    let (plain, _) = claij_schema::compile_at(&schema, &[]).unwrap();
    let (schemas, root) = plain.as_boon();
    let v = Validator::new(&schema).unwrap();
    let valid = fixture("big.valid.json");
    let mut mutated = Vec::new();
    mutate(&valid, &mut mutated);
    assert!(mutated.len() > 100, "{}", mutated.len());
    for instance in &mutated {
        assert_eq!(
            schemas.validate(instance, root).is_ok(),
            v.is_valid(instance),
            "{instance}"
        );
    }
}

/// Single-point mutations of a value: each leaf replaced by values of other types.
fn mutate(value: &Value, out: &mut Vec<Value>) {
    let replacements = [
        json!(null),
        json!("x"),
        json!(-1),
        json!(1.5),
        json!([]),
        json!({}),
    ];
    let mut paths = Vec::new();
    leaves(value, String::new(), &mut paths);
    for path in paths {
        for r in &replacements {
            let mut copy = value.clone();
            if let Some(slot) = copy.pointer_mut(&path) {
                *slot = r.clone();
                out.push(copy);
            }
        }
    }
}

fn leaves(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                leaves(
                    v,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                leaves(v, format!("{at}/{i}"), out);
            }
        }
        _ => out.push(at),
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The bench schemas' validators, or the message naming the fixture that could not be read (each
/// test that reads them panics with it, rather than the later ones finding the lock poisoned).
static VALIDATORS: LazyLock<Result<Vec<Validator>, String>> = LazyLock::new(|| {
    Ok([
        crate::try_fixture("small.json")?,
        crate::try_fixture("big.json")?,
        claij_schema::base(),
    ]
    .iter()
    .map(|s| Validator::new(s).unwrap())
    .collect())
});

proptest! {
    /// Every violation pointer resolves in the instance, whatever the instance.
    #[test]
    fn violation_pointers_resolve(instance in arb_json()) {
        for v in crate::fixtures::loaded(&VALIDATORS) {
            if let Err(violations) = v.validate(&instance) {
                for violation in violations {
                    prop_assert!(
                        instance.pointer(&violation.instance_pointer).is_some(),
                        "{} does not resolve in {}", violation.instance_pointer, instance
                    );
                }
            }
        }
    }

    /// Instances built to match the base schema validate.
    #[test]
    fn generated_base_instances_validate(answer in ".*", state in "[a-z_]{0,12}", extra in arb_json()) {
        let v = Validator::new(&claij_schema::base()).unwrap();
        let instance = json!({"answer": answer, "state": state, "extra": extra});
        prop_assert!(v.is_valid(&instance));
    }
}

#[test]
fn process_outcomes() {
    use claij_validation::{Outcome, process};
    let v = Validator::new(&claij_schema::base()).unwrap();
    let cases = [
        ("I cannot help with that.", "no_json"),
        ("", "no_json"),
        (
            "<think>{\"answer\": \"x\", \"state\": \"s\"}</think> no idea",
            "no_json",
        ),
        ("{\"answer\": 1, \"state\": \"s\"}", "valid"), // 1 coerced to "1"
        ("{\"answer\": [], \"state\": \"s\"}", "invalid"),
        (
            "first {\"a\": 1} then {\"answer\": \"x\", \"state\": \"s\"}",
            "valid",
        ),
        ("{\"answer\": \"x\", \"sta", "invalid"),
    ];
    for (reply, want) in cases {
        let got = match process(reply, &v) {
            Outcome::Valid { .. } => "valid",
            Outcome::Invalid { .. } => "invalid",
            Outcome::NoJson { .. } => "no_json",
        };
        assert_eq!(got, want, "{reply}");
    }
    let Outcome::NoJson { reason } = process("Sorry, no.", &v) else {
        panic!()
    };
    assert_eq!(reason, "the reply is prose without a JSON value");
    // Why no JSON, by what went wrong: nothing, prose, or repair giving up (with its position).
    let reason = |reply: &str| match process(reply, &v) {
        Outcome::NoJson { reason } => reason,
        other => panic!("{reply:?}: {other:?}"),
    };
    assert_eq!(reason("  "), "the reply is empty");
    assert_eq!(
        reason("Sorry, no."),
        "the reply is prose without a JSON value"
    );
    let deep = reason(&"[".repeat(100_000));
    assert!(
        deep.starts_with("no JSON value could be recovered: nesting deeper than"),
        "{deep}"
    );
}
