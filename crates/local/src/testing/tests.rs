//! Where a model test finds the model: in the cache, skipped outside CI, a failure under CI.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::PathBuf;

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

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("claij-local-testing-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_model_is_found_in_the_model_dir_or_skipped() {
    use super::local_model_or_skip;
    use crate::DEFAULT_MODEL_FILE;

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

#[test]
#[should_panic(expected = "t: CI is set and the model is missing")]
fn a_missing_model_under_ci_fails() {
    let dir = scratch("missing");
    let _ = super::local_model_or_skip(
        "t",
        lookup(&[("CLAIJ_MODEL_DIR", dir.to_str().unwrap()), ("CI", "1")]),
    );
}
