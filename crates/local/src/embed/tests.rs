//! Unit tests of the embedder's pooling, normalisation and checks (no model needed; the model's
//! outputs against the reference are in tests/it/embed.rs).

use super::*;

fn tensor(rows: &[&[f32]]) -> Tensor {
    let width = rows[0].len();
    let flat: Vec<f32> = rows.iter().flat_map(|row| row.iter().copied()).collect();
    Tensor::from_vec(flat, (rows.len(), width), &Device::Cpu).unwrap()
}

#[test]
fn the_mean_ignores_padding_however_large_its_vectors() {
    // Two inputs of 3 positions, dim 2: the first has 2 tokens and one pad whose vector is huge.
    let hidden = Tensor::from_vec(
        vec![
            1.0f32, 2.0, 3.0, 4.0, 1000.0, -1000.0, 5.0, 5.0, 7.0, 1.0, 0.0, 3.0,
        ],
        (2, 3, 2),
        &Device::Cpu,
    )
    .unwrap();
    let mask = Tensor::from_vec(vec![1u32, 1, 0, 1, 1, 1], (2, 3), &Device::Cpu).unwrap();
    let mean = masked_mean(&hidden, &mask)
        .unwrap()
        .to_vec2::<f32>()
        .unwrap();
    assert_eq!(mean, vec![vec![2.0, 3.0], vec![4.0, 3.0]]);
}

#[test]
fn an_all_padding_row_pools_to_zero_not_nan() {
    let hidden = Tensor::from_vec(vec![3.0f32, 4.0], (1, 1, 2), &Device::Cpu).unwrap();
    let mask = Tensor::from_vec(vec![0u32], (1, 1), &Device::Cpu).unwrap();
    let pooled = normalize(&masked_mean(&hidden, &mask).unwrap()).unwrap();
    assert_eq!(pooled.to_vec2::<f32>().unwrap(), vec![vec![0.0, 0.0]]);
}

#[test]
fn rows_are_scaled_to_unit_length() {
    let rows = normalize(&tensor(&[&[3.0, 4.0], &[0.0, -2.0]]))
        .unwrap()
        .to_vec2::<f32>()
        .unwrap();
    assert_eq!(rows, vec![vec![0.6, 0.8], vec![0.0, -1.0]]);
}

#[test]
fn cosine_of_parallel_orthogonal_and_mismatched_vectors() {
    assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
    assert_eq!(cosine(&[1.0, 0.0], &[0.0, 3.0]), 0.0);
    assert!((cosine(&[1.0, 0.0], &[-1.0, 0.0]) + 1.0).abs() < 1e-6);
    assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
}

#[test]
fn an_input_over_the_byte_limit_is_refused_naming_it_and_the_limit() {
    let inputs = ["short", "0123456789", "x"];
    assert!(check_inputs(&inputs, 10).is_ok());
    let err = check_inputs(&inputs, 9).unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::InputTooLong {
                index: 1,
                bytes: 10,
                limit: 9
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "input 1 has 10 bytes, over the embedder's limit of 9 (EmbedConfig::max_input_bytes)"
    );
}

fn bert() -> Config {
    serde_json::from_str(
        r#"{"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6,
            "num_attention_heads": 12, "intermediate_size": 1536, "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1, "max_position_embeddings": 512, "type_vocab_size": 2,
            "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0}"#,
    )
    .unwrap()
}

#[test]
fn a_configuration_the_encoder_cannot_take_names_the_file_and_the_numbers() {
    let path = Path::new("/m/config.json");
    assert!(check_config(&bert(), &EmbedConfig::default(), path).is_ok());
    let odd = Config {
        hidden_size: 100,
        ..bert()
    };
    let err = check_config(&odd, &EmbedConfig::default(), path).unwrap_err();
    assert_eq!(
        err.to_string(),
        "/m/config.json does not fit: hidden_size 100 is not a multiple of num_attention_heads 12"
    );
    let long = EmbedConfig::default().with_max_tokens(513);
    let err = check_config(&bert(), &long, path).unwrap_err();
    assert!(err.to_string().contains("max_tokens 513"), "{err}");
}

#[test]
fn a_malformed_tokenizer_is_corrupt_and_named() {
    let path = Path::new("/m/tokenizer.json");
    let err = load_tokenizer(b"{not json", &bert(), &EmbedConfig::default(), path).unwrap_err();
    assert!(
        matches!(
            &err,
            EmbedError::Corrupt {
                what: "tokenizer",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("/m/tokenizer.json is not a usable tokenizer"),
        "{err}"
    );
}

#[test]
fn a_torn_safetensors_file_is_corrupt_and_named() {
    let path = Path::new("/m/model.safetensors");
    // A header length promising more than the file holds.
    let mut torn = 1000u64.to_le_bytes().to_vec();
    torn.extend_from_slice(b"{\"a\":");
    let Err(err) = load_model(torn, &bert(), path) else {
        panic!("a torn file loaded");
    };
    assert!(
        matches!(
            &err,
            EmbedError::Corrupt {
                what: "safetensors file",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("/m/model.safetensors is not a usable"),
        "{err}"
    );
}

#[test]
fn a_missing_directory_names_the_first_file_and_the_fetch_command() {
    let dir = std::env::temp_dir().join(format!("claij-embed-missing-{}", std::process::id()));
    let err = Embedder::open(&dir).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, EmbedError::Read { .. }), "{err:?}");
    assert!(
        message.starts_with(&format!(
            "cannot read {}",
            dir.join("config.json").display()
        )),
        "{message}"
    );
    assert!(message.contains("cargo xtask embed-model"), "{message}");
}

/// tokenizer.json itself pads every input to 128 tokens and cuts at 128; the embedder pads a batch
/// to its longest input and cuts at 256 (the masked mean hides padding, so only this shows it).
#[test]
fn the_tokenizer_pads_a_batch_to_its_longest_input_not_to_the_files_128() {
    let path = crate::embed_model_dir(|name| std::env::var_os(name)).join(TOKENIZER_FILE);
    if !path.is_file() {
        assert!(
            !claij_test_support::is_ci(|name| std::env::var_os(name)),
            "CI is set and {} is missing: run `cargo xtask embed-model`",
            path.display()
        );
        return; // outside CI, the tests in tests/it/embed.rs say the model is missing
    }
    let bytes = std::fs::read(&path).unwrap();
    let tokenizer = load_tokenizer(&bytes, &bert(), &EmbedConfig::default(), &path).unwrap();
    let encodings = tokenizer
        .encode_batch(vec!["What is the capital of France?", "Blue."], true)
        .unwrap();
    let lengths: Vec<usize> = encodings.iter().map(tokenizers::Encoding::len).collect();
    assert_eq!(lengths, [9, 9]);
    assert_eq!(
        encodings[1].get_attention_mask(),
        [1, 1, 1, 1, 0, 0, 0, 0, 0]
    );
    let long = "blue ".repeat(300);
    assert_eq!(tokenizer.encode(long.as_str(), true).unwrap().len(), 256);
}
