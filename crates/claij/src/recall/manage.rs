//! [`Memories`]: the recall memory's store as a person looks after it (`claij memory
//! list|search|forget`): opened from the settings, searched by the embedded model, shown as rows
//! with their age, for people or as JSON.

use std::sync::Arc;
use std::time::SystemTime;

use claij_interceptors::builtin::recall::{
    Embedder as _, Forget, Hit, MemoryStore, Query, Record, age,
};
use serde_json::{Value, json};

use super::{LocalEmbedder, embedder, open_store};
use crate::error::{Error, ErrorKind, Result};
use crate::settings::Settings;

/// The store `[memory.recall]` names, with the embedded model that searches it.
#[derive(Debug)]
pub struct Memories {
    store: Arc<dyn MemoryStore>,
    embedder: LocalEmbedder,
}

/// One memory as shown: the record, and its similarity when it was found by a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    /// The memory.
    pub record: Record,
    /// Its cosine similarity to the search, for a search.
    pub similarity: Option<f32>,
}

impl Memories {
    /// Opens the embedded model ([`embedder`]) and the store of `settings`' `[memory.recall]`
    /// ([`open_store`], under the settings' data directory).
    ///
    /// # Errors
    ///
    /// As [`embedder`] and [`open_store`].
    pub async fn open(settings: &Settings) -> Result<Self> {
        let embedder = embedder()?;
        let recall = &settings.memory.recall;
        let store = open_store(recall, settings.data_dir.as_deref(), embedder.dim()).await?;
        Ok(Self { store, embedder })
    }

    /// The memories of `session` (all when `None`), oldest first.
    ///
    /// # Errors
    ///
    /// The store's, naming it.
    pub async fn list(&self, session: Option<&str>) -> Result<Vec<Shown>> {
        let records = self.store.list(session).await.map_err(store_error)?;
        Ok(records
            .into_iter()
            .map(|record| Shown {
                record,
                similarity: None,
            })
            .collect())
    }

    /// The `k` memories most similar to `text` (of `session` when given), most similar first,
    /// however little similar.
    ///
    /// # Errors
    ///
    /// The model's ([`ErrorKind::Local`]) or the store's.
    pub async fn search(&self, text: &str, k: usize, session: Option<&str>) -> Result<Vec<Shown>> {
        let vectors = self.embedder.embed(&[text.to_owned()]).map_err(|e| {
            Error::with_kind(ErrorKind::Local, format!("embedding the search: {e}"))
        })?;
        let vector = vectors.into_iter().next().unwrap_or_default();
        let query = Query {
            session,
            vector: &vector,
            k,
            min_similarity: -1.0,
        };
        let hits = self.store.search(query).await.map_err(store_error)?;
        Ok(hits
            .into_iter()
            .map(|Hit { record, similarity }| Shown {
                record,
                similarity: Some(similarity),
            })
            .collect())
    }

    /// Removes what `which` names; how many memories were removed.
    ///
    /// # Errors
    ///
    /// The store's.
    pub async fn forget(&self, which: Forget) -> Result<usize> {
        self.store.forget(which).await.map_err(store_error)
    }
}

fn store_error(e: claij_interceptors::builtin::recall::StoreError) -> Error {
    Error::with_kind(ErrorKind::File, crate::error_chain(&e))
}

/// `rows` for people at `now`, a line each: the id, the session, the age, the similarity (for a
/// search) and the text on one line; `no memories` when there are none.
///
/// ```
/// # use std::time::{Duration, SystemTime};
/// # use claij::interceptors::builtin::recall::Record;
/// # use claij::recall::{Shown, lines};
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(86_400);
/// let record = Record { id: "m1".into(), session: "trip".into(), text: "The cat is\nMiso.".into(),
///     embedding: vec![], created_at: now - Duration::from_secs(120) };
/// let rows = [Shown { record, similarity: Some(0.8123) }];
/// assert_eq!(lines(&rows, now), "m1  trip  2 minutes ago  0.812  The cat is Miso.");
/// assert_eq!(lines(&[], now), "no memories");
/// ```
#[must_use]
pub fn lines(rows: &[Shown], now: SystemTime) -> String {
    if rows.is_empty() {
        return "no memories".to_owned();
    }
    rows.iter()
        .map(|row| {
            let r = &row.record;
            let similarity = row
                .similarity
                .map_or_else(String::new, |s| format!("{s:.3}  "));
            let text = r.text.split_whitespace().collect::<Vec<_>>().join(" ");
            format!(
                "{}  {}  {}  {similarity}{text}",
                r.id,
                r.session,
                age(now, r.created_at)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `rows` as a JSON array at `now`: `{"id", "session", "text", "created_at"` (RFC 3339)`, "age",
/// "similarity"}` (the similarity only for a search).
#[must_use]
pub fn to_json(rows: &[Shown], now: SystemTime) -> Value {
    rows.iter()
        .map(|row| {
            let r = &row.record;
            let mut value = json!({
                "id": r.id,
                "session": r.session,
                "text": r.text,
                "created_at": humantime::format_rfc3339_seconds(r.created_at).to_string(),
                "age": age(now, r.created_at),
            });
            if let Some(similarity) = row.similarity {
                value["similarity"] = json!(similarity);
            }
            value
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_listing_has_no_similarity_and_json_has_every_field() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(3 * 86_400);
        let record = Record {
            id: "m1".into(),
            session: "s".into(),
            text: "a  b".into(),
            embedding: vec![1.0],
            created_at: SystemTime::UNIX_EPOCH + Duration::from_secs(86_400),
        };
        let rows = [Shown {
            record,
            similarity: None,
        }];
        assert_eq!(lines(&rows, now), "m1  s  2 days ago  a b");
        assert_eq!(
            to_json(&rows, now),
            json!([{"id": "m1", "session": "s", "text": "a  b",
                    "created_at": "1970-01-02T00:00:00Z", "age": "2 days ago"}])
        );
    }
}
