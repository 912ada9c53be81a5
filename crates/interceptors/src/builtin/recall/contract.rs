//! The contract every [`MemoryStore`] passes: run [`all`] (or each check) against a fresh store.
//!
//! Each check takes an empty store of [`DIM`]-dimensional vectors and returns `Err` with what broke,
//! so a store crate runs it from its own tests:
//!
//! ```
//! use claij_interceptors::builtin::recall::{InMemoryStore, contract};
//!
//! futures_executor::block_on(contract::all(|| InMemoryStore::new(contract::DIM)))?;
//! # Ok::<(), String>(())
//! ```
//!
//! Times are whole seconds and vectors exact in `f32`, so a store that keeps milliseconds or
//! `f32` passes; similarities are compared within [`TOLERANCE`].

use std::future::Future;
use std::time::{Duration, SystemTime};

use super::{Forget, MemoryStore, Query, Record, StoreError};

/// The dimensions of the contract's vectors.
pub const DIM: usize = 4;
/// How far a store's similarity may be from the exact cosine.
pub const TOLERANCE: f32 = 1e-4;

/// A record of `session` with `embedding`, `secs` seconds after the epoch.
pub fn record(id: &str, session: &str, embedding: [f32; DIM], secs: u64) -> Record {
    Record {
        id: id.to_owned(),
        session: session.to_owned(),
        text: format!("memory {id}"),
        embedding: embedding.to_vec(),
        created_at: SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
    }
}

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(what()) }
}

fn query<'a>(vector: &'a [f32], session: Option<&'static str>, k: usize, floor: f32) -> Query<'a> {
    Query {
        session,
        vector,
        k,
        min_similarity: floor,
    }
}

/// Four records of session `a` at known angles to `[1, 0, 0, 0]` (cosines 1, 0.8, 0.6, 0) and one
/// of session `b` equal to the query.
async fn seed(store: &dyn MemoryStore) -> Result<(), String> {
    store
        .add(vec![
            record("a1", "a", [1.0, 0.0, 0.0, 0.0], 10),
            record("a2", "a", [0.8, 0.6, 0.0, 0.0], 20),
            record("a3", "a", [0.6, 0.0, 0.8, 0.0], 30),
            record("a4", "a", [0.0, 0.0, 0.0, 1.0], 40),
        ])
        .await
        .map_err(|e| format!("adding four records: {e}"))?;
    store
        .add(vec![record("b1", "b", [1.0, 0.0, 0.0, 0.0], 50)])
        .await
        .map_err(|e| format!("adding a fifth record: {e}"))
}

const Q: [f32; DIM] = [1.0, 0.0, 0.0, 0.0];

fn ids(hits: &[super::Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.record.id.as_str()).collect()
}

/// Search returns the most similar first, with their cosine similarity, and the records as added.
///
/// # Errors
///
/// What broke.
pub async fn search_orders_by_similarity(store: &dyn MemoryStore) -> Result<(), String> {
    seed(store).await?;
    let hits = store
        .search(query(&Q, Some("a"), 10, -1.0))
        .await
        .map_err(|e| format!("search: {e}"))?;
    ensure(ids(&hits) == ["a1", "a2", "a3", "a4"], || {
        format!(
            "expected a1, a2, a3, a4 most similar first, got {:?}",
            ids(&hits)
        )
    })?;
    for (hit, expected) in hits.iter().zip([1.0, 0.8, 0.6, 0.0]) {
        ensure((hit.similarity - expected).abs() <= TOLERANCE, || {
            format!(
                "{} has similarity {}, expected {expected}",
                hit.record.id, hit.similarity
            )
        })?;
    }
    let expected = record("a2", "a", [0.8, 0.6, 0.0, 0.0], 20);
    let got = &hits[1].record;
    ensure(
        got.id == expected.id
            && got.session == expected.session
            && got.text == expected.text
            && got.created_at == expected.created_at
            && got
                .embedding
                .iter()
                .zip(&expected.embedding)
                .all(|(a, b)| (a - b).abs() <= TOLERANCE),
        || format!("a2 came back as {got:?}, was added as {expected:?}"),
    )
}

/// Search returns at most `k` records, and none for `k = 0`.
///
/// # Errors
///
/// What broke.
pub async fn search_keeps_k(store: &dyn MemoryStore) -> Result<(), String> {
    seed(store).await?;
    let hits = store
        .search(query(&Q, Some("a"), 2, -1.0))
        .await
        .map_err(|e| format!("search: {e}"))?;
    ensure(ids(&hits) == ["a1", "a2"], || {
        format!("k = 2: expected a1, a2, got {:?}", ids(&hits))
    })?;
    let none = store
        .search(query(&Q, Some("a"), 0, -1.0))
        .await
        .map_err(|e| format!("search: {e}"))?;
    ensure(none.is_empty(), || {
        format!("k = 0 returned {:?}", ids(&none))
    })
}

/// Search leaves out records below the similarity floor.
///
/// # Errors
///
/// What broke.
pub async fn search_keeps_the_floor(store: &dyn MemoryStore) -> Result<(), String> {
    seed(store).await?;
    let hits = store
        .search(query(&Q, Some("a"), 10, 0.7))
        .await
        .map_err(|e| format!("search: {e}"))?;
    ensure(ids(&hits) == ["a1", "a2"], || {
        format!(
            "floor 0.7: expected a1 (1.0), a2 (0.8), got {:?}",
            ids(&hits)
        )
    })
}

/// Search with a session returns only its records; without one, every session's.
///
/// # Errors
///
/// What broke.
pub async fn search_filters_the_session(store: &dyn MemoryStore) -> Result<(), String> {
    seed(store).await?;
    let b = store
        .search(query(&Q, Some("b"), 10, -1.0))
        .await
        .map_err(|e| format!("search: {e}"))?;
    ensure(ids(&b) == ["b1"], || {
        format!("session b: expected b1, got {:?}", ids(&b))
    })?;
    let all = store
        .search(query(&Q, None, 10, 0.9))
        .await
        .map_err(|e| format!("search: {e}"))?;
    let mut found = ids(&all);
    found.sort_unstable();
    ensure(found == ["a1", "b1"], || {
        format!("any session, floor 0.9: expected a1 and b1, got {found:?}")
    })?;
    let none = store
        .search(query(&Q, Some("c"), 10, -1.0))
        .await
        .map_err(|e| format!("search: {e}"))?;
    ensure(none.is_empty(), || {
        format!("an unknown session returned {:?}", ids(&none))
    })
}

/// List returns a session's records (or all) oldest first.
///
/// # Errors
///
/// What broke.
pub async fn list_is_oldest_first(store: &dyn MemoryStore) -> Result<(), String> {
    seed(store).await?;
    let a = store
        .list(Some("a"))
        .await
        .map_err(|e| format!("list: {e}"))?;
    let a: Vec<&str> = a.iter().map(|r| r.id.as_str()).collect();
    ensure(a == ["a1", "a2", "a3", "a4"], || {
        format!("list a: expected a1..a4 oldest first, got {a:?}")
    })?;
    let all = store.list(None).await.map_err(|e| format!("list: {e}"))?;
    let all: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
    ensure(all == ["a1", "a2", "a3", "a4", "b1"], || {
        format!("list all: expected a1..a4, b1 oldest first, got {all:?}")
    })
}

/// Forget by ids and by session removes those records only and says how many.
///
/// # Errors
///
/// What broke.
pub async fn forget_removes_what_it_names(store: &dyn MemoryStore) -> Result<(), String> {
    seed(store).await?;
    let n = store
        .forget(Forget::Ids(vec!["a2".into(), "nope".into()]))
        .await
        .map_err(|e| format!("forget ids: {e}"))?;
    ensure(n == 1, || {
        format!("forgetting a2 and an unknown id removed {n}")
    })?;
    let hits = store
        .search(query(&Q, Some("a"), 10, -1.0))
        .await
        .map_err(|e| format!("search: {e}"))?;
    ensure(ids(&hits) == ["a1", "a3", "a4"], || {
        format!("after forgetting a2, search found {:?}", ids(&hits))
    })?;
    let n = store
        .forget(Forget::Session("a".into()))
        .await
        .map_err(|e| format!("forget session: {e}"))?;
    ensure(n == 3, || {
        format!("forgetting session a removed {n}, expected 3")
    })?;
    let left = store.list(None).await.map_err(|e| format!("list: {e}"))?;
    let left: Vec<&str> = left.iter().map(|r| r.id.as_str()).collect();
    ensure(left == ["b1"], || {
        format!("after forgetting a, left {left:?}")
    })
}

/// An id already stored, or twice in one batch, is [`StoreError::Duplicate`] and nothing of the
/// batch is added.
///
/// # Errors
///
/// What broke.
pub async fn duplicates_are_refused(store: &dyn MemoryStore) -> Result<(), String> {
    seed(store).await?;
    let again = store
        .add(vec![record("c1", "c", Q, 60), record("a1", "a", Q, 70)])
        .await;
    ensure(
        matches!(&again, Err(StoreError::Duplicate { id, .. }) if id == "a1"),
        || format!("adding a1 again: expected Duplicate a1, got {again:?}"),
    )?;
    let twice = store
        .add(vec![record("d1", "d", Q, 60), record("d1", "d", Q, 70)])
        .await;
    ensure(
        matches!(&twice, Err(StoreError::Duplicate { id, .. }) if id == "d1"),
        || format!("d1 twice in a batch: expected Duplicate d1, got {twice:?}"),
    )?;
    let all = store.list(None).await.map_err(|e| format!("list: {e}"))?;
    ensure(all.len() == 5, || {
        format!(
            "refused batches added records: {} stored, expected 5",
            all.len()
        )
    })
}

/// A vector of another dimension is [`StoreError::WrongDimension`] on add (nothing added) and on
/// search.
///
/// # Errors
///
/// What broke.
pub async fn wrong_dimension_is_refused(store: &dyn MemoryStore) -> Result<(), String> {
    seed(store).await?;
    let mut short = record("e1", "e", Q, 60);
    short.embedding.pop();
    let added = store.add(vec![record("e0", "e", Q, 60), short]).await;
    ensure(
        matches!(&added, Err(StoreError::WrongDimension { expected: DIM, found, .. }) if *found == DIM - 1),
        || format!("a 3-dimension record: expected WrongDimension, got {added:?}"),
    )?;
    let all = store.list(None).await.map_err(|e| format!("list: {e}"))?;
    ensure(all.len() == 5, || {
        format!(
            "a refused batch added records: {} stored, expected 5",
            all.len()
        )
    })?;
    let long = [0.5_f32; DIM + 1];
    let searched = store.search(query(&long, None, 3, -1.0)).await;
    ensure(
        matches!(&searched, Err(StoreError::WrongDimension { expected: DIM, found, .. }) if *found == DIM + 1),
        || format!("a 5-dimension query: expected WrongDimension, got {searched:?}"),
    )
}

/// Every check, each on a fresh store from `make`; the first failure names its check.
///
/// # Errors
///
/// The failing check's name and what broke.
pub async fn all<S: MemoryStore>(mut make: impl FnMut() -> S) -> Result<(), String> {
    async fn one<F: Future<Output = Result<(), String>>>(name: &str, f: F) -> Result<(), String> {
        f.await.map_err(|e| format!("{name}: {e}"))
    }
    one(
        "search_orders_by_similarity",
        search_orders_by_similarity(&make()),
    )
    .await?;
    one("search_keeps_k", search_keeps_k(&make())).await?;
    one("search_keeps_the_floor", search_keeps_the_floor(&make())).await?;
    one(
        "search_filters_the_session",
        search_filters_the_session(&make()),
    )
    .await?;
    one("list_is_oldest_first", list_is_oldest_first(&make())).await?;
    one(
        "forget_removes_what_it_names",
        forget_removes_what_it_names(&make()),
    )
    .await?;
    one("duplicates_are_refused", duplicates_are_refused(&make())).await?;
    one(
        "wrong_dimension_is_refused",
        wrong_dimension_is_refused(&make()),
    )
    .await
}
