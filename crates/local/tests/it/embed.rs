//! The sentence-embedding model end to end, against sentence-transformers' own outputs
//! (`fixtures/embeddings/all-minilm-l6-v2-reference.json`, source and licence in its README), from
//! the cache `cargo xtask embed-model` fills. Under `CI=true` a missing model fails these tests.

#![allow(
    clippy::print_stderr,
    reason = "a skip and the measured cosines are said on stderr"
)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use claij_local::{EmbedConfig, EmbedError, Embedder, cosine};
use claij_test_support::is_ci;
use serde_json::Value;

use crate::fixtures;

const REFERENCE: &str = "fixtures/embeddings/all-minilm-l6-v2-reference.json";

/// The model directory: `$CLAIJ_MODEL_DIR/all-MiniLM-L6-v2` or the default cache's.
fn model_dir() -> PathBuf {
    claij_local::embed_model_dir(|name| std::env::var_os(name))
}

/// The directory when its weights are there; `None` (after saying why) outside CI; a failure
/// under CI.
fn model_dir_or_skip(test: &str) -> Option<PathBuf> {
    let dir = model_dir();
    if dir.join(claij_local::WEIGHTS_FILE).is_file() {
        return Some(dir);
    }
    assert!(
        !is_ci(|name| std::env::var_os(name)),
        "{test}: CI is set and the embedding model is missing at {}: run `cargo xtask embed-model`",
        dir.display()
    );
    eprintln!(
        "{test}: skipped: no embedding model at {} (run `cargo xtask embed-model`)",
        dir.display()
    );
    None
}

fn embedder(test: &str) -> Option<&'static Embedder> {
    static EMBEDDER: OnceLock<Option<Embedder>> = OnceLock::new();
    EMBEDDER
        .get_or_init(|| {
            let dir = model_dir_or_skip(test)?;
            Some(Embedder::open(&dir).expect("the cached embedding model opens"))
        })
        .as_ref()
}

struct Reference {
    texts: Vec<String>,
    ids: Vec<Vec<u32>>,
    embeddings: Vec<Vec<f32>>,
    similarity: Vec<Vec<f32>>,
}

fn reference() -> Reference {
    let value = fixtures::json(REFERENCE);
    let sentences = value["sentences"].as_array().unwrap();
    let floats = |v: &Value| -> Vec<f32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect()
    };
    Reference {
        texts: sentences
            .iter()
            .map(|s| s["text"].as_str().unwrap().to_owned())
            .collect(),
        ids: sentences
            .iter()
            .map(|s| {
                s["input_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|id| u32::try_from(id.as_u64().unwrap()).unwrap())
                    .collect()
            })
            .collect(),
        embeddings: sentences.iter().map(|s| floats(&s["embedding"])).collect(),
        similarity: value["similarity_matrix"]
            .as_array()
            .unwrap()
            .iter()
            .map(floats)
            .collect(),
    }
}

/// The four sentences have 9 to 15 tokens, so in one batch three of them are padded: only the
/// masked mean gives the reference there (an unmasked one still matches the longest).
#[test]
fn the_four_sentences_in_one_batch_match_sentence_transformers() {
    let Some(embedder) = embedder("embed") else {
        return;
    };
    let reference = reference();
    assert_eq!(embedder.dim(), 384);
    let lengths: Vec<usize> = reference.ids.iter().map(Vec::len).collect();
    assert!(
        lengths.iter().min() < lengths.iter().max(),
        "the batch must mix lengths: {lengths:?}"
    );
    assert_eq!(embedder.token_ids(&reference.texts).unwrap(), reference.ids);
    let vectors = embedder.embed(&reference.texts).unwrap();
    assert_eq!(vectors.len(), 4);
    let cosines: Vec<f32> = vectors
        .iter()
        .zip(&reference.embeddings)
        .map(|(ours, theirs)| cosine(ours, theirs))
        .collect();
    eprintln!("cosine with sentence-transformers, per sentence: {cosines:.7?}");
    for ((text, vector), cos) in reference.texts.iter().zip(&vectors).zip(&cosines) {
        assert_eq!(vector.len(), 384, "{text}");
        let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{text}: norm {norm}");
        assert!(*cos >= 0.999, "{text}: cosine {cos} with the reference");
    }
}

/// The six pairs rank as the reference ranks them, each within 0.01 of its cosine.
#[test]
fn the_pairs_rank_by_similarity_as_the_reference_ranks_them() {
    let Some(embedder) = embedder("embed") else {
        return;
    };
    let reference = reference();
    let vectors = embedder.embed(&reference.texts).unwrap();
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for i in 0..4 {
        for j in i + 1..4 {
            let similarity = cosine(&vectors[i], &vectors[j]);
            let expected = reference.similarity[i][j];
            assert!(
                (similarity - expected).abs() < 0.01,
                "pair ({i}, {j}): {similarity}, reference {expected}"
            );
            ours.push(((i, j), similarity));
            theirs.push(((i, j), expected));
        }
    }
    let order = |pairs: &mut Vec<((usize, usize), f32)>| {
        pairs.sort_by(|a, b| b.1.total_cmp(&a.1));
        pairs.iter().map(|(pair, _)| *pair).collect::<Vec<_>>()
    };
    assert_eq!(order(&mut ours), order(&mut theirs));
}

/// A question finds the sentence that answers it: what recall by meaning relies on.
#[test]
fn a_question_is_nearest_to_the_sentence_about_it() {
    let Some(embedder) = embedder("embed") else {
        return;
    };
    let reference = reference();
    let memories = embedder.embed(&reference.texts).unwrap();
    let questions = [
        ("Which colour does the user like best?", 0),
        ("What is the name of my dog?", 1),
        ("When is the meeting?", 3),
    ];
    for (question, expected) in questions {
        let query = &embedder.embed(&[question]).unwrap()[0];
        let scores: Vec<f32> = memories.iter().map(|m| cosine(query, m)).collect();
        let best = (0..scores.len())
            .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
            .unwrap();
        assert_eq!(best, expected, "{question}: {scores:?}");
    }
}

/// Alone (no padding) or in a batch, and across batch boundaries, a sentence gets one vector.
#[test]
fn batching_and_padding_do_not_change_a_vector() {
    let Some(dir) = model_dir_or_skip("embed") else {
        return;
    };
    let Some(embedder) = embedder("embed") else {
        return;
    };
    let texts = reference().texts;
    let together = embedder.embed(&texts).unwrap();
    let small = Embedder::open_with(&dir, EmbedConfig::default().with_batch_size(3)).unwrap();
    let split = small.embed(&texts).unwrap();
    for (index, text) in texts.iter().enumerate() {
        let alone = &embedder.embed(&[text]).unwrap()[0];
        let cos_alone = cosine(alone, &together[index]);
        let cos_split = cosine(&split[index], &together[index]);
        assert!(cos_alone > 0.99999, "{text}: alone {cos_alone}");
        assert!(cos_split > 0.99999, "{text}: split batches {cos_split}");
    }
    assert!(embedder.embed::<&str>(&[]).unwrap().is_empty());
}

/// An input longer than the model reads is cut at 256 tokens, [SEP] kept, as the reference does.
#[test]
fn a_long_input_is_cut_at_256_tokens() {
    let Some(embedder) = embedder("embed") else {
        return;
    };
    let long = "blue ".repeat(1000);
    let ids = &embedder.token_ids(&[long.as_str()]).unwrap()[0];
    assert_eq!(ids.len(), 256);
    assert_eq!((ids[0], ids[255]), (101, 102));
    let vectors = embedder.embed(&[long.as_str(), "blue"]).unwrap();
    assert_eq!(vectors.len(), 2);
}

#[test]
fn an_input_over_the_byte_limit_is_refused_before_any_work() {
    let Some(dir) = model_dir_or_skip("embed") else {
        return;
    };
    let embedder =
        Embedder::open_with(&dir, EmbedConfig::default().with_max_input_bytes(16)).unwrap();
    let err = embedder
        .embed(&["short", "this one is over sixteen bytes"])
        .unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::InputTooLong {
                index: 1,
                bytes: 30,
                limit: 16
            }
        ),
        "{err:?}"
    );
}

/// A scratch model directory: links to the real files, and `replace` written instead.
fn scratch(name: &str, real: &Path, replace: &[(&str, Vec<u8>)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("claij-embed-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for file in [
        claij_local::CONFIG_FILE,
        claij_local::TOKENIZER_FILE,
        claij_local::WEIGHTS_FILE,
    ] {
        match replace.iter().find(|(name, _)| *name == file) {
            Some((_, bytes)) => std::fs::write(dir.join(file), bytes).unwrap(),
            None => std::os::unix::fs::symlink(real.join(file), dir.join(file)).unwrap(),
        }
    }
    dir
}

#[test]
fn weights_of_another_shape_than_the_config_are_refused_naming_the_weights() {
    let Some(real) = model_dir_or_skip("embed") else {
        return;
    };
    let mut config: Value =
        serde_json::from_slice(&std::fs::read(real.join(claij_local::CONFIG_FILE)).unwrap())
            .unwrap();
    config["hidden_size"] = 768.into();
    let dir = scratch(
        "dims",
        &real,
        &[(
            claij_local::CONFIG_FILE,
            serde_json::to_vec(&config).unwrap(),
        )],
    );
    let err = Embedder::open(&dir).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    let message = err.to_string();
    assert!(matches!(err, EmbedError::Dimensions { .. }), "{err:?}");
    assert!(
        message.starts_with(&format!(
            "{} does not fit",
            dir.join("model.safetensors").display()
        )),
        "{message}"
    );
}

#[test]
fn a_torn_weights_file_is_refused_naming_it() {
    let Some(real) = model_dir_or_skip("embed") else {
        return;
    };
    let mut head = std::fs::read(real.join(claij_local::WEIGHTS_FILE)).unwrap();
    head.truncate(1 << 20);
    let dir = scratch("torn", &real, &[(claij_local::WEIGHTS_FILE, head)]);
    let err = Embedder::open(&dir).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        matches!(&err, EmbedError::Corrupt { path, .. } if path.ends_with("model.safetensors")),
        "{err:?}"
    );
}

#[test]
fn a_tokenizer_that_is_not_json_is_refused_naming_it() {
    let Some(real) = model_dir_or_skip("embed") else {
        return;
    };
    let dir = scratch(
        "tokenizer",
        &real,
        &[(claij_local::TOKENIZER_FILE, b"{\"model\": ".to_vec())],
    );
    let err = Embedder::open(&dir).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        matches!(&err, EmbedError::Corrupt { path, .. } if path.ends_with("tokenizer.json")),
        "{err:?}"
    );
}
