//! The interceptors' 60-turn scenario (`claij_interceptors::builtin::recall::scenario`) on the
//! SQLite store and on a real Chroma server, with the same code: the fact of turn 2 recalled on
//! turn 60. With feature `local` and the embedding model in its cache (`cargo xtask embed-model`)
//! the embedder is the real all-MiniLM-L6-v2 ([`super::LocalEmbedder`]); otherwise it is the
//! interceptors' hashed-words embedder. Each test says on stderr which one it ran with.

use std::sync::Arc;

use claij_interceptors::builtin::recall::{Embedder, HashedWords, MemoryStore, scenario};

use super::{ChromaOptions, ChromaStore, SqliteStore};

/// The embedder the scenario runs with, and its name for the test's output.
fn embedder(test: &str) -> Arc<dyn Embedder> {
    #[cfg(feature = "local")]
    {
        let dir = claij_local::embed_model_dir(|name| std::env::var_os(name));
        if claij_test_support::local_model_or_skip(
            test,
            dir.join(claij_local::WEIGHTS_FILE),
            |name| std::env::var_os(name),
        )
        .is_some()
        {
            #[allow(clippy::print_stderr, reason = "the test says which embedder it ran")]
            {
                eprintln!("{test}: with the embedded model all-MiniLM-L6-v2");
            }
            return Arc::new(super::LocalEmbedder::open(&dir).expect("the embedding model opens"));
        }
    }
    #[allow(clippy::print_stderr, reason = "the test says which embedder it ran")]
    {
        eprintln!("{test}: with the hashed-words test embedder (1,024 dimensions)");
    }
    Arc::new(HashedWords::new(1024))
}

/// The scenario on `store`, checked.
async fn recalls_the_fact(store: Arc<dyn MemoryStore>, embedder: Arc<dyn Embedder>) {
    let turns = scenario::run(store.clone(), embedder).await.unwrap();
    scenario::check_recalled(&turns, store.as_ref())
        .await
        .unwrap();
}

#[tokio::test]
async fn the_fact_of_turn_2_is_recalled_on_turn_60_from_sqlite() {
    let embedder = embedder("the_fact_of_turn_2_is_recalled_on_turn_60_from_sqlite");
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("m.sqlite3"), embedder.dim()).unwrap();
    recalls_the_fact(Arc::new(store), embedder).await;
}

#[tokio::test]
async fn the_fact_of_turn_2_is_recalled_on_turn_60_from_chroma() {
    let test = "the_fact_of_turn_2_is_recalled_on_turn_60_from_chroma";
    let Some(server) = claij_test_support::chroma::start_or_skip(test) else {
        return;
    };
    let embedder = embedder(test);
    let store = ChromaStore::open(ChromaOptions::new(server.url(), embedder.dim()))
        .await
        .unwrap();
    recalls_the_fact(Arc::new(store), embedder).await;
}
