//! Properties of repair and extraction, checked with proptest: no panics on any input, valid JSON
//! passes through untouched, JSON embedded in prose is found.

use std::sync::mpsc::RecvTimeoutError;

use claij_validation::extract::{candidates, recover};
use claij_validation::repair::{RepairError, repair};
use proptest::prelude::*;
use serde_json::Value;

/// Characters that exercise the tolerant parser: brackets, quotes of every style, escapes, comments,
/// keywords, numbers, fences, reasoning tags.
const ALPHABET: &[char] = &[
    '{', '}', '[', ']', '(', ')', '"', '\'', '`', '\u{201c}', '\u{201d}', '\u{2018}', '\u{2019}',
    ',', ':', '\\', '/', '*', '#', '+', '.', '-', 'e', 'a', 'u', 'n', 'l', 't', 'r', 'T', 'N', '0',
    '1', '9', ' ', '\n', '\t', '<', '>', '\u{a0}', '\u{feff}', '\u{0}', 'é', '😀',
];

fn jsonish() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(ALPHABET), 0..120)
        .prop_map(|chars| chars.into_iter().collect())
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("json numbers are finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// Repair, recover and candidates on `text`: no panic, and repair is deterministic.
fn exercise(text: &str) {
    let first = repair(text);
    assert_eq!(
        first,
        repair(text),
        "repair is not deterministic on {text:?}"
    );
    let _ = recover(text);
    let _ = candidates(text);
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_strings(text in any::<String>()) {
        exercise(&text);
    }

    #[test]
    fn never_panics_on_json_like_strings(text in jsonish()) {
        exercise(&text);
    }

    #[test]
    fn never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        exercise(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn identity_on_valid_json(value in arbitrary_json()) {
        for text in [serde_json::to_string(&value).unwrap(), serde_json::to_string_pretty(&value).unwrap()] {
            let parsed: Value = serde_json::from_str(&text).unwrap();
            let repaired = repair(&text).unwrap();
            prop_assert_eq!(&repaired.value, &parsed);
            prop_assert!(repaired.fixes.is_empty());
            let recovered = recover(&text).unwrap();
            prop_assert_eq!(&recovered.value, &parsed);
            prop_assert!(recovered.fixes.is_empty());
        }
    }

    #[test]
    fn finds_an_object_in_prose(
        before in "[a-zA-Z0-9 .,!?:;'\n-]{0,60}",
        members in prop::collection::vec(("[a-z]{1,8}", arbitrary_json()), 0..4),
        after in "[a-zA-Z0-9 .,!?:;'\n-]{0,60}",
    ) {
        let object = Value::Object(members.into_iter().collect());
        let reply = format!("{before}{}{after}", serde_json::to_string(&object).unwrap());
        let expected: Value = serde_json::from_str(&serde_json::to_string(&object).unwrap()).unwrap();
        let recovered = recover(&reply).unwrap();
        prop_assert_eq!(recovered.value, expected);
    }
}

/// What a typical messy reply becomes, and the fixes that say how (they go into the trail).
#[test]
fn messy_reply_snapshot() {
    let reply = "<think>They want JSON. {\"draft\": true}</think>\nSure! Here is the result:\n```json\n{\n  \
                 answer: 'Paris',  // the capital\n  \"state\": \"done\",\n  \"confidence\": .9,\n  \
                 \"tags\": [\"geo\", \"europe\",],\n  \"notes\": \"He said \"bonjour\" twice\",\n  \"extra\": None\n";
    insta::assert_json_snapshot!(recover(reply).unwrap());
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let megabyte = 1 << 20;
    for unit in ["[", "{\"a\":", "(", "f(", "[{\"a\":[", "{\"a\":[(", "[1,"] {
        let text = unit.repeat(megabyte / unit.len());
        assert!(
            matches!(repair(&text), Err(RepairError::TooDeep { .. })),
            "{unit}"
        );
        assert!(recover(&text).is_err(), "{unit}");
    }
    // Not nesting at all: `{{` is an object whose key is missing, then junk.
    let braces = "{".repeat(megabyte);
    assert!(repair(&braces).is_err());
}

/// Hostile megabyte replies end (quadratic work on a megabyte would take hours in a debug build); how
/// fast they end is the `adversarial` group of `benches/repair.rs`. Each runs on its own thread
/// under a hang guard of two minutes, which catches a hang, not a speed.
#[test]
fn adversarial_inputs_end() {
    let megabyte = 1 << 20;
    let inputs = [
        "\"a\n".repeat(megabyte / 3),
        "[\"a, ".repeat(megabyte / 5),
        "{\"a\": \"b\" ".repeat(megabyte / 10),
        "\"x\"/*".repeat(megabyte / 5),
        "a\"".repeat(megabyte / 2),
        "{\"a\": \"x, b: ".repeat(megabyte / 13),
        "\"".repeat(megabyte),
        "'".repeat(megabyte),
        "{".repeat(megabyte),
        "}".repeat(megabyte),
        "x".repeat(megabyte),
        "``` x ```".repeat(megabyte / 9),
        "<think>a</think>".repeat(megabyte / 16),
        "<think>a</thinking>{\"a\": [1] ".repeat(megabyte / 30),
        "<json>".repeat(megabyte / 6),
        format!("{{a: {}", "b{c".repeat(megabyte / 3)),
        format!("{{\"a\": {}", "b, c".repeat(megabyte / 4)),
        format!(
            "{{'a': {}{}",
            "'x' y ".repeat(megabyte / 12),
            " ".repeat(megabyte / 2)
        ),
        "[1] {\"a\" ".repeat(megabyte / 10),
        "{\"a\": \"".repeat(megabyte / 7),
    ];
    for text in inputs {
        let head = text.chars().take(12).collect::<String>();
        let (done, ended) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(recover(&text).is_ok()));
        match ended.recv_timeout(std::time::Duration::from_secs(120)) {
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => panic!("{head:?}…: no end after two minutes"),
            Err(RecvTimeoutError::Disconnected) => panic!("{head:?}…: recover panicked"),
        }
    }
}
