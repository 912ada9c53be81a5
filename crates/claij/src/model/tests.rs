//! Unit tests of model names: `provider:model` strings, the model cache's directory, a local
//! model's name.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[cfg(feature = "local")]
use std::ffi::OsString;
use std::path::Path;

use super::{self as llm, Llm, Provider};

#[track_caller]
fn check_llm(text: &str, expected: Result<Llm, &str>) {
    match (llm::parse(text), expected) {
        (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
        (Err(got), Err(part)) => assert!(got.contains(part), "{text}: {got}"),
        (got, want) => panic!("{text}: got {got:?}, expected {want:?}"),
    }
}

fn remote(provider: Provider, model: &str) -> Llm {
    Llm::Remote {
        provider,
        model: model.to_owned(),
    }
}

#[test]
fn llm_values() {
    check_llm("local", Ok(Llm::Local));
    check_llm(
        "openrouter:google/gemini-2.5-flash",
        Ok(remote(Provider::OpenRouter, "google/gemini-2.5-flash")),
    );
    check_llm("openai:gpt-5", Ok(remote(Provider::OpenAi, "gpt-5")));
    check_llm(
        "anthropic:claude-sonnet-4-5",
        Ok(remote(Provider::Anthropic, "claude-sonnet-4-5")),
    );
    check_llm(
        "gemini:gemini-2.5-flash",
        Ok(remote(Provider::Gemini, "gemini-2.5-flash")),
    );
    // A model id may itself hold a colon (OpenRouter's `:free` variants).
    check_llm(
        "openrouter:meta-llama/llama-3.3-70b-instruct:free",
        Ok(remote(
            Provider::OpenRouter,
            "meta-llama/llama-3.3-70b-instruct:free",
        )),
    );
    check_llm("gpt-5", Err("expected `local` or PROVIDER:MODEL"));
    check_llm("mistral:large", Err("unknown provider `mistral`"));
    check_llm("openai:", Err("no model after `openai:`"));
    check_llm("Local", Err("expected `local`"));
}

#[cfg(feature = "local")]
#[track_caller]
fn check_model_dir(vars: &[(&str, &str)], expected: &Path) {
    let var = |name: &str| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(v))
    };
    assert_eq!(llm::model_dir(var), expected, "{vars:?}");
}

#[cfg(feature = "local")]
#[test]
fn model_dir_follows_xtask() {
    check_model_dir(
        &[
            ("CLAIJ_MODEL_DIR", "/models"),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ],
        Path::new("/models"),
    );
    check_model_dir(
        &[
            ("CLAIJ_MODEL_DIR", ""),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ],
        Path::new("/xdg/claij/models"),
    );
    check_model_dir(
        &[("XDG_CACHE_HOME", "relative"), ("HOME", "/home/u")],
        Path::new("/home/u/.cache/claij/models"),
    );
    check_model_dir(&[], &std::env::temp_dir().join("claij").join("models"));
}

#[test]
fn model_names() {
    let name = |p: &str| llm::model_name(Path::new(p));
    assert_eq!(
        name("/cache/SmolLM2-135M-Instruct.Q4_1.gguf"),
        "SmolLM2-135M-Instruct"
    );
    assert_eq!(name("model.gguf"), "model");
    assert_eq!(name(".gguf"), "local");
}

/// `http_version` and `streams_per_connection` reach a built-in provider's backend; unset, the
/// backend's defaults stay.
#[cfg(feature = "openrouter")]
#[test]
fn the_http_settings_reach_the_backend() {
    use claij_backends::http::{DEFAULT_STREAMS_PER_CONNECTION, HttpVersion};

    let open = |text: &str| {
        let settings =
            crate::settings::Settings::parse(text, Path::new("/etc/claij.toml")).unwrap();
        let claij = crate::Claij::new(settings).with_var("OPENROUTER_API_KEY", "sk-or-test");
        super::openrouter(&claij).unwrap()
    };
    let backend =
        open("[providers.openrouter]\nhttp_version = \"http2\"\nstreams_per_connection = 7\n");
    assert_eq!(backend.config().http_version, HttpVersion::Http2);
    assert_eq!(backend.config().streams_per_connection, 7);
    let backend = open("");
    assert_eq!(backend.config().http_version, HttpVersion::Auto);
    assert_eq!(
        backend.config().streams_per_connection,
        DEFAULT_STREAMS_PER_CONNECTION
    );
}
