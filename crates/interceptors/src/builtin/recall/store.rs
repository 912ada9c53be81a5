//! [`InMemoryStore`]: exact cosine search over records kept in memory, for tests and small uses.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use claij_backends::BoxFuture;

use super::{Forget, Hit, MemoryStore, Query, Record, StoreError, cosine};

const NAME: &str = "in-memory store";

/// A [`MemoryStore`] in memory: every search compares the query with every record (exact cosine),
/// so it suits tests and a few thousand memories; nothing survives the process.
#[derive(Debug)]
pub struct InMemoryStore {
    dim: usize,
    records: Mutex<Vec<Record>>,
}

impl InMemoryStore {
    /// An empty store of `dim`-dimensional vectors.
    pub fn new(dim: usize) -> Self {
        Self {
            dim,
            records: Mutex::new(Vec::new()),
        }
    }

    fn check_dim(&self, what: impl FnOnce() -> String, found: usize) -> Result<(), StoreError> {
        if found == self.dim {
            return Ok(());
        }
        Err(StoreError::WrongDimension {
            store: NAME.to_owned(),
            what: what(),
            expected: self.dim,
            found,
        })
    }

    fn add_now(&self, new: Vec<Record>) -> Result<(), StoreError> {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let mut ids: HashSet<&str> = records.iter().map(|r| r.id.as_str()).collect();
        for record in &new {
            self.check_dim(
                || format!("record \"{}\"", record.id),
                record.embedding.len(),
            )?;
            if !ids.insert(record.id.as_str()) {
                return Err(StoreError::Duplicate {
                    store: NAME.to_owned(),
                    id: record.id.clone(),
                });
            }
        }
        records.extend(new);
        Ok(())
    }

    fn search_now(&self, query: Query<'_>) -> Result<Vec<Hit>, StoreError> {
        self.check_dim(|| "the query vector".to_owned(), query.vector.len())?;
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let mut hits: Vec<Hit> = records
            .iter()
            .filter(|r| query.session.is_none_or(|s| r.session == s))
            .map(|r| Hit {
                similarity: cosine(&r.embedding, query.vector),
                record: r.clone(),
            })
            .filter(|h| h.similarity >= query.min_similarity)
            .collect();
        hits.sort_by(|a, b| {
            b.similarity
                .total_cmp(&a.similarity)
                .then_with(|| a.record.id.cmp(&b.record.id))
        });
        hits.truncate(query.k);
        Ok(hits)
    }

    fn list_now(&self, session: Option<&str>) -> Vec<Record> {
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<Record> = records
            .iter()
            .filter(|r| session.is_none_or(|s| r.session == s))
            .cloned()
            .collect();
        out.sort_by_key(|r| r.created_at);
        out
    }

    fn forget_now(&self, which: &Forget) -> usize {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let before = records.len();
        match which {
            Forget::Ids(ids) => records.retain(|r| !ids.contains(&r.id)),
            Forget::Session(session) => records.retain(|r| &r.session != session),
        }
        before - records.len()
    }
}

impl MemoryStore for InMemoryStore {
    fn add<'a>(&'a self, records: Vec<Record>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(std::future::ready(self.add_now(records)))
    }

    fn search<'a>(&'a self, query: Query<'a>) -> BoxFuture<'a, Result<Vec<Hit>, StoreError>> {
        Box::pin(std::future::ready(self.search_now(query)))
    }

    fn list<'a>(
        &'a self,
        session: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Record>, StoreError>> {
        Box::pin(std::future::ready(Ok(self.list_now(session))))
    }

    fn forget<'a>(&'a self, which: Forget) -> BoxFuture<'a, Result<usize, StoreError>> {
        Box::pin(std::future::ready(Ok(self.forget_now(&which))))
    }
}
