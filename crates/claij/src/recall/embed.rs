//! The embedded sentence model (all-MiniLM-L6-v2 on candle, `claij_local::Embedder`) as the
//! [`recall`](claij_interceptors::builtin::recall) interceptor's [`Embedder`].

use std::path::Path;

use claij_interceptors::BoxError;
use claij_interceptors::builtin::recall::Embedder;
use claij_local::{EmbedError, embed_model_dir};

/// claij's embedded sentence model behind the recall interceptor's [`Embedder`] trait. Cheap to
/// clone (the weights are shared).
#[derive(Debug, Clone)]
pub struct LocalEmbedder(claij_local::Embedder);

impl LocalEmbedder {
    /// Opens the model in `dir` (the three files `cargo xtask embed-model` fetches).
    ///
    /// # Errors
    ///
    /// [`EmbedError`] naming the missing or corrupt file.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        claij_local::Embedder::open(dir).map(Self)
    }

    /// Opens the model where claij looks for it: `CLAIJ_MODEL_DIR`, else the cache's
    /// `models/all-MiniLM-L6-v2`.
    ///
    /// # Errors
    ///
    /// As [`LocalEmbedder::open`].
    pub fn open_default() -> Result<Self, EmbedError> {
        Self::open(embed_model_dir(|name| std::env::var_os(name)))
    }

    /// The model it wraps.
    pub fn model(&self) -> &claij_local::Embedder {
        &self.0
    }
}

impl From<claij_local::Embedder> for LocalEmbedder {
    fn from(model: claij_local::Embedder) -> Self {
        Self(model)
    }
}

impl Embedder for LocalEmbedder {
    fn dim(&self) -> usize {
        self.0.dim()
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, BoxError> {
        Ok(self.0.embed(texts)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The adapter hands the interceptor the model's own vectors, one per text, in order.
    #[test]
    fn the_adapter_gives_the_models_vectors_in_order() {
        let dir = embed_model_dir(|name| std::env::var_os(name));
        let Some(_) = claij_test_support::local_model_or_skip(
            "the_adapter_gives_the_models_vectors_in_order",
            dir.join(claij_local::WEIGHTS_FILE),
            |name| std::env::var_os(name),
        ) else {
            return;
        };
        let embedder = LocalEmbedder::open(&dir).expect("the embedding model opens");
        let texts = vec![
            "The user's cat is called Miso.".to_owned(),
            "What is the capital of France?".to_owned(),
        ];
        let vectors = Embedder::embed(&embedder, &texts).expect("embeds");
        assert_eq!(Embedder::dim(&embedder), 384);
        assert_eq!(vectors, embedder.model().embed(&texts).expect("embeds"));
        let alone = embedder.model().embed(&texts[1..]).expect("embeds");
        assert!(claij_local::cosine(&vectors[1], &alone[0]) > 0.999);
        assert!(claij_local::cosine(&vectors[0], &vectors[1]) < 0.5);
    }
}
