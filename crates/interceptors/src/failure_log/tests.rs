//! The failure log through a pipeline: no form of secret in a prompt or a reply reaches the file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use claij_test_support::Scripted;
use claij_test_support::secrets::secret_forms;
use proptest::prelude::*;

use crate::{Chain, Config, Context, FailureLog, Pipeline};

const VALID: &str = r#"{"answer": "4", "state": "done"}"#;

/// A fresh file in a directory of this process.
fn log_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("claij-failure-log-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

/// Runs one call whose first reply is invalid and carries `reply`, asked `input`; the log's text.
fn logged(path: &Path, input: &str, reply: &str) -> String {
    let invalid = serde_json::json!({"answer": reply}).to_string();
    let backend = Scripted::replies([invalid, VALID.to_owned()]);
    let pipeline = Pipeline::new(Arc::new(backend), Config::new("test-model"), Chain::new())
        .with_failure_log(FailureLog::new(path));
    futures_executor::block_on(pipeline.ask(&mut Context::default(), input)).unwrap();
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn groq_keys_and_api_key_headers_are_redacted() {
    // The log once had its own rules, which missed these forms the cassette scrubber caught.
    let path = log_path("forms.jsonl");
    let text = logged(
        &path,
        "x-api-key: live0123456789abcdef",
        "gsk_0123456789abcdefghij and https://ada:pw0123456789@proxy.invalid/v1",
    );
    for secret in [
        "live0123456789abcdef",
        "0123456789abcdefghij",
        "pw0123456789",
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    assert!(text.contains("x-api-key: ***"), "{text}");
    assert!(text.contains("gsk_***"), "{text}");
    assert!(text.contains("https://***@proxy.invalid/v1"), "{text}");
    std::fs::remove_file(&path).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Every form of secret, in the prompt and in the invalid reply, is redacted in the log.
    #[test]
    fn no_form_of_secret_reaches_the_log(
        secret in "[A-Za-z0-9]{16,40}",
        other in any::<String>(),
    ) {
        let path = log_path("prop.jsonl");
        let forms = secret_forms(&secret);
        let input = forms.join(&format!(" {other} "));
        let reply = forms.join(" , ");
        let text = logged(&path, &input, &reply);
        std::fs::remove_file(&path).unwrap();
        prop_assert!(!text.is_empty());
        prop_assert!(!text.contains(&secret) || other.contains(&secret), "{text}");
    }
}
