//! One definition of a CI run, and where a model test finds the model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::PathBuf;

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

#[cfg(feature = "local")]
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "claij-backends-testing-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[cfg(feature = "local")]
#[test]
fn the_model_is_found_in_the_model_dir_or_skipped() {
    use super::local_model_or_skip;
    use crate::local::DEFAULT_MODEL_FILE;

    let dir = scratch("found");
    let text = dir.to_str().unwrap();
    assert_eq!(
        local_model_or_skip("t", lookup(&[("CLAIJ_MODEL_DIR", text), ("CI", "false")])),
        None
    );
    std::fs::write(dir.join(DEFAULT_MODEL_FILE), b"gguf").unwrap();
    assert_eq!(
        local_model_or_skip("t", lookup(&[("CLAIJ_MODEL_DIR", text), ("CI", "true")])),
        Some(dir.join(DEFAULT_MODEL_FILE))
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(feature = "local")]
#[test]
#[should_panic(expected = "t: CI is set and the model is missing")]
fn a_missing_model_under_ci_fails() {
    let dir = scratch("missing");
    let _ = super::local_model_or_skip(
        "t",
        lookup(&[("CLAIJ_MODEL_DIR", dir.to_str().unwrap()), ("CI", "1")]),
    );
}
