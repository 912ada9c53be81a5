//! One definition of a CI run; a lookup of a test's own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::{is_ci, lookup};

#[test]
fn ci_is_true_in_any_case_or_1() {
    for (value, expected) in [
        ("true", true),
        ("TRUE", true),
        ("True", true),
        ("1", true),
        ("", false),
        ("0", false),
        ("false", false),
        ("yes", false),
    ] {
        assert_eq!(is_ci(lookup(&[("CI", value)])), expected, "CI={value:?}");
    }
    assert!(!is_ci(lookup(&[])));
}

#[test]
fn a_lookup_knows_only_its_variables_the_first_of_a_name_wins() {
    let var = lookup(&[("A", "1"), ("B", ""), ("A", "2")]);
    assert_eq!(var("A"), Some("1".into()));
    assert_eq!(var("B"), Some("".into()));
    assert_eq!(var("C"), None);
}
