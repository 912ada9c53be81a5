//! Tests of the sequence matcher: which patterns it takes, and that it gives the regex's verdict on
//! every string tried (hand-picked ones, then generated ones over each pattern's alphabet).

use proptest::prelude::*;

use super::*;
use crate::validator::fast::ecma_regex;

/// Patterns the matcher takes: the bench schemas' and their like.
const TAKEN: &[&str] = &[
    "^call_[a-z0-9]{4,32}$",
    "^[A-Z]{2}$",
    "^[^@\\s]+@[^@\\s]+$",
    "^\\d{3}-\\d{4}$",
    "^[a-z]+\\.[a-z]{2,}",
    "^v?[0-9]+$",
    "^[-a-c]*x[0-9-]?$",
    "^\\w+\\s\\S+$",
    "^é[α-ω]{1,3}$",
    "^$",
    "^ab",
    "^x\\.y[a-z]*$",
    "^ab-é[0-9]{2}$",
];

/// Patterns it leaves to the regex: not plain, or a repeated item could give a character back.
const REFUSED: &[&str] = &[
    "call_[a-z]+$",
    "^a*a$",
    "^[a-z]*[a-c]$",
    "^[a-z]+\\d?[0-9a-f]$",
    "^[^@]+[^ ]+$",
    "^(ab)+$",
    "^a|b$",
    "^.+$",
    "^a+?$",
    "^a{2}?$",
    "^[a-z&&[^x]]$",
    "^[a-z--x]$",
    "^[]a]$",
    "^[a-]b]$",
    "^\\bword$",
    "^\\u0041$",
    "^a{,3}$",
    "^[\\D]$",
    "^a\\$",
];

#[track_caller]
fn agrees(pattern: &str, s: &str) {
    let sequence = Sequence::parse(pattern).unwrap_or_else(|| panic!("{pattern} refused"));
    let regex = ecma_regex(pattern).unwrap();
    assert_eq!(
        sequence.is_match(s),
        regex.is_match(s),
        "{pattern} on {s:?}"
    );
}

#[test]
fn plain_sequences_are_taken_and_others_refused() {
    for pattern in TAKEN {
        assert!(Sequence::parse(pattern).is_some(), "{pattern} refused");
        assert!(ecma_regex(pattern).is_some(), "{pattern}");
    }
    for pattern in REFUSED {
        assert_eq!(Sequence::parse(pattern), None, "{pattern} taken");
    }
}

#[test]
fn the_bench_patterns_match_as_the_regex_does() {
    let cases: &[(&str, &[&str])] = &[
        (
            "^call_[a-z0-9]{4,32}$",
            &[
                "call_0001abcd",
                "call_abc",
                "call_abcd",
                "CALL-1",
                "call_",
                "call_0001abcd\n",
                "xcall_abcd",
            ],
        ),
        ("^[A-Z]{2}$", &["DE", "D", "DEU", "de", "D1", ""]),
        (
            "^[^@\\s]+@[^@\\s]+$",
            &[
                "ada@example.org",
                "@example.org",
                "ada@",
                "a da@x",
                "ada@x@y",
                "ada@x\u{2003}",
                "ada@x\u{2002}",
                "ådå@ëx",
            ],
        ),
        (
            "^[a-z]+\\.[a-z]{2,}",
            &["a.bc", "a.b", "a.bcd!", ".bc", "ab"],
        ),
    ];
    for (pattern, strings) in cases {
        for s in *strings {
            agrees(pattern, s);
        }
        agrees(pattern, &format!("call_{}", "a".repeat(32)));
        agrees(pattern, &format!("call_{}", "a".repeat(33)));
    }
}

#[test]
fn the_leading_single_characters_are_compared_as_one_prefix() {
    let prefix = |pattern: &str| Sequence::parse(pattern).map(|s| s.prefix);
    assert_eq!(prefix("^call_[a-z0-9]{4,32}$").as_deref(), Some("call_"));
    assert_eq!(prefix("^x\\.y[a-z]*$").as_deref(), Some("x.y"));
    // Not one ASCII character exactly once: negated, a class, repeated, optional, non-ASCII.
    for pattern in [
        "^[^c]a$",
        "^[ab]c$",
        "^a{2}b$",
        "^v?[0-9]+$",
        "^é[α-ω]{1,3}$",
    ] {
        assert_eq!(prefix(pattern).as_deref(), Some(""), "{pattern}");
    }
    assert_eq!(prefix("^ab-é[0-9]{2}$").as_deref(), Some("ab-"));
    for s in [
        "",
        "c",
        "cal",
        "call",
        "call_",
        "call_é",
        "calé_abcd",
        "Call_abcd",
        "call_abcd",
    ] {
        agrees("^call_[a-z0-9]{4,32}$", s);
    }
    for s in ["ab-é12", "ab-e12", "ab-", "ab", "ab-é1", "áb-é12"] {
        agrees("^ab-é[0-9]{2}$", s);
    }
}

proptest! {
    #[test]
    fn every_taken_pattern_agrees_with_the_regex(
        index in 0..TAKEN.len(),
        s in "[a-zA-Z0-9_@. \\-éαβω\u{2003}\u{2002}]{0,12}",
    ) {
        agrees(TAKEN[index], &s);
    }
}
