//! The one rule for the model options: flag, else `[defaults]`, else the matrix, else built in.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use claij_interceptors::StructuredMode;

use super::{DEFAULT_MAX_RETRIES, ModelOptions};
use crate::matrix::Choice;
use crate::settings::Defaults;

/// The options the command line's flags (`--max-retries 0`, ...) give, set one by one.
fn flags(args: &[&str]) -> ModelOptions {
    let mut options = ModelOptions::default();
    for pair in args.chunks(2) {
        let [flag, value] = pair else {
            panic!("{args:?}: a flag without its value");
        };
        match *flag {
            "--max-retries" => options.max_retries = Some(value.parse().unwrap()),
            "--mode" => {
                options.mode = Some(match *value {
                    "auto" => StructuredMode::Auto,
                    "native" => StructuredMode::Native,
                    "tool" => StructuredMode::Tool,
                    "prompted" => StructuredMode::Prompted,
                    other => panic!("mode {other}"),
                });
            }
            "--max-reply-bytes" => options.max_reply_bytes = Some(value.parse().unwrap()),
            "--temperature" => options.temperature = Some(value.parse().unwrap()),
            "--seed" => options.seed = Some(value.parse().unwrap()),
            "--max-tokens" => options.max_tokens = Some(value.parse().unwrap()),
            other => panic!("flag {other}"),
        }
    }
    options
}

fn measured(mode: StructuredMode, max_retries: usize) -> Choice {
    Choice {
        model: "m".to_owned(),
        mode: Some(mode),
        max_retries,
        why: String::new(),
        measured: (1, 1, 1),
        schema_tokens: None,
    }
}

#[track_caller]
fn check(
    args: &[&str],
    defaults: &Defaults,
    matrix: Option<&Choice>,
    expected: (usize, StructuredMode, usize),
) {
    let config = flags(args).config("m".to_owned(), defaults, matrix);
    assert_eq!(
        (
            config.max_retries,
            config.structured,
            config.max_reply_bytes
        ),
        expected
    );
}

#[test]
fn flags_then_defaults_then_the_matrix_then_built_in() {
    let built_in = claij_interceptors::DEFAULT_MAX_REPLY_BYTES;
    let none = Defaults::default();
    let defaults = Defaults {
        max_retries: Some(1),
        mode: Some(StructuredMode::Prompted),
        max_reply_bytes: Some(4096),
        ..Defaults::default()
    };
    let matrix = measured(StructuredMode::Tool, 5);
    check(
        &[],
        &none,
        None,
        (DEFAULT_MAX_RETRIES, StructuredMode::Auto, built_in),
    );
    check(
        &[],
        &none,
        Some(&matrix),
        (5, StructuredMode::Tool, built_in),
    );
    check(
        &[],
        &defaults,
        Some(&matrix),
        (1, StructuredMode::Prompted, 4096),
    );
    check(
        &[
            "--max-retries",
            "0",
            "--mode",
            "native",
            "--max-reply-bytes",
            "2048",
        ],
        &defaults,
        Some(&matrix),
        (0, StructuredMode::Native, 2048),
    );
}

#[test]
fn sampling_flags_reach_the_config() {
    let config = flags(&["--temperature", "0.5", "--seed", "7", "--max-tokens", "64"]).config(
        "m".to_owned(),
        &Defaults::default(),
        None,
    );
    assert_eq!(
        (config.temperature, config.seed, config.max_tokens),
        (Some(0.5), Some(7), Some(64))
    );
}

#[test]
fn the_matrix_decides_only_what_flags_and_defaults_leave_open() {
    let retries_only = Defaults {
        max_retries: Some(2),
        ..Defaults::default()
    };
    assert!(!flags(&[]).decided(&Defaults::default()));
    assert!(!flags(&[]).decided(&retries_only));
    assert!(flags(&["--mode", "tool"]).decided(&retries_only));
    assert!(flags(&["--mode", "tool", "--max-retries", "1"]).decided(&Defaults::default()));
}

/// The local model's requests carry its own limit (which the command line's `--max-tokens` help
/// names, tested there); a hosted provider's carry none unless the options say.
#[cfg(feature = "local")]
#[test]
fn the_local_model_has_a_default_token_limit() {
    let limit = super::default_max_tokens("local").unwrap();
    assert_eq!(limit, claij_local::LocalConfig::default().max_tokens);
    assert_eq!(super::default_max_tokens("openrouter"), None);
}

/// A forced mode the model lacks is refused, naming where it was forced: the flag, else
/// `defaults.mode`; `auto` and a mode the model has pass.
#[test]
fn a_forced_mode_the_model_lacks_is_refused() {
    let backend = claij_backends::OpenAi::new(claij_backends::ApiKey::new("sk-test"));
    let tool = |mode| Defaults {
        mode,
        ..Defaults::default()
    };
    let none = Defaults::default();
    let flag = flags(&["--mode", "tool"]);
    let e = flag.check_mode(&none, &backend, "o1-mini").unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Model);
    assert_eq!(
        e.to_string(),
        "--mode tool: openai:o1-mini has no tools; use --mode auto or --mode prompted"
    );
    flag.check_mode(&none, &backend, "gpt-4o").unwrap();
    let configured = ModelOptions::default();
    let e = configured
        .check_mode(
            &tool(Some(StructuredMode::Native)),
            &backend,
            "gpt-3.5-turbo",
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("defaults.mode in the configuration, native: openai:gpt-3.5-turbo"),
        "{e}"
    );
    configured.check_mode(&none, &backend, "o1-mini").unwrap();
    configured
        .check_mode(&tool(Some(StructuredMode::Auto)), &backend, "o1-mini")
        .unwrap();
}
