//! The tokenizers by name, their counts, and the errors of an unknown name or a missing model file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use super::{Error, NAMES, Tokenizer};

/// A text the two OpenAI encodings split differently.
const TEXT: &str = "{answer: string // The reply, in the user's language\n  confidence?: number}";

#[test]
fn o200k_base_is_the_default_and_counts_its_own_tokens() {
    assert_eq!(Tokenizer::default(), Tokenizer::O200kBase);
    let o200k = Tokenizer::O200kBase.open().unwrap();
    assert_eq!(o200k.name(), "o200k_base");
    assert_eq!(
        o200k.count(TEXT).unwrap(),
        tiktoken_rs::o200k_base_singleton()
            .encode_ordinary(TEXT)
            .len()
    );
    assert_eq!(o200k.count(TEXT).unwrap(), 18);
}

#[test]
fn cl100k_base_counts_with_its_own_encoding() {
    let cl100k: Tokenizer = "cl100k_base".parse().unwrap();
    let counter = cl100k.open().unwrap();
    assert_eq!(counter.name(), "cl100k_base");
    assert_eq!(counter.count(TEXT).unwrap(), 19);
}

#[test]
fn an_unknown_tokenizer_names_the_choices() {
    let Err(e @ Error::Unknown { .. }) = "gpt2".parse::<Tokenizer>() else {
        panic!("gpt2 parsed");
    };
    assert_eq!(
        e.to_string(),
        "unknown tokenizer `gpt2`: expected one of o200k_base, cl100k_base, local"
    );
    assert_eq!(NAMES.len(), 3);
}

#[test]
fn local_is_the_model_file_in_the_cache_the_variables_name() {
    let var = claij_test_support::lookup(&[("CLAIJ_MODEL_DIR", "/models")]);
    let local = Tokenizer::named("local", var).unwrap();
    assert_eq!(
        local,
        Tokenizer::Local(PathBuf::from("/models").join(claij_local::DEFAULT_MODEL_FILE))
    );
}

#[test]
fn a_missing_model_file_names_its_path_and_cargo_xtask_model() {
    let path = std::env::temp_dir().join("claij-tokens-no-such-model.gguf");
    let e = Tokenizer::Local(path.clone()).open().unwrap_err();
    let text = e.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("cargo xtask model"), "{text}");
}

#[test]
fn local_counts_with_the_embedded_models_tokenizer() {
    let var = |name: &str| std::env::var_os(name);
    let Tokenizer::Local(path) = Tokenizer::local(var) else {
        unreachable!()
    };
    let Some(path) = claij_test_support::local_model_or_skip(
        "local_counts_with_the_embedded_models_tokenizer",
        path,
        var,
    ) else {
        return;
    };
    let counter = Tokenizer::Local(path.clone()).open().unwrap();
    assert_eq!(counter.name(), "local");
    // SmolLM2's own byte-level BPE (49,152 tokens), not an OpenAI encoding's.
    assert_eq!(counter.count(TEXT).unwrap(), 18);
    let word = "Schemaextensionsintheprompt";
    assert_eq!(counter.count(word).unwrap(), 5);
    assert_ne!(Tokenizer::O200kBase.open().unwrap().count(word).unwrap(), 5);
    let window = claij_local::TokenCounter::open(&path)
        .unwrap()
        .context_length();
    assert_eq!(window, Some(8192));
}

#[test]
fn a_requests_schema_tokens_are_its_rendering_natively_or_in_the_prompt() {
    use claij_backends::{ChatRequest, OutputMode, SharedJson, StructuredOutput};
    let schema = serde_json::json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]});
    let rendering = claij_schema::to_compact(&schema);
    let o200k = Tokenizer::O200kBase.open().unwrap();
    let mut native = ChatRequest::new("m");
    native.structured_output = Some(StructuredOutput {
        name: "response".into(),
        schema: SharedJson::new(schema.clone()),
        strict: true,
        mode: OutputMode::Native,
    });
    assert_eq!(
        super::schema_tokens(&native),
        Some(o200k.count(&rendering).unwrap())
    );
    let mut prompted = ChatRequest::new("m");
    prompted.system = Some(format!(
        "Be brief.\n\nRespond with only a JSON value that conforms to this schema. No prose, no code fences.\n\n{rendering}"
    ));
    assert_eq!(
        super::schema_tokens(&prompted),
        Some(o200k.count(&rendering).unwrap())
    );
    prompted.system = Some("Be brief.".into());
    assert_eq!(super::schema_tokens(&prompted), None);
}
