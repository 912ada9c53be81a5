//! One definition of a CI run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;

use super::is_ci;

/// A lookup that knows only `vars`.
fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| {
        vars.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| OsString::from(v))
    }
}

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
