//! Where a model test finds the model: at the path given, skipped outside CI, a failure under CI.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use crate::lookup;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "claij-test-support-model-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_model_is_found_at_its_path_or_skipped() {
    use super::local_model_or_skip;

    let dir = scratch("found");
    let model = dir.join("model.gguf");
    assert_eq!(
        local_model_or_skip("t", &model, lookup(&[("CI", "false")])),
        None
    );
    std::fs::write(&model, b"gguf").unwrap();
    assert_eq!(
        local_model_or_skip("t", &model, lookup(&[("CI", "true")])),
        Some(model.clone())
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[should_panic(expected = "t: CI is set and the model is missing")]
fn a_missing_model_under_ci_fails() {
    let dir = scratch("missing");
    let _ = super::local_model_or_skip("t", dir.join("model.gguf"), lookup(&[("CI", "1")]));
}
