//! [`ChromaStore`]: memories in a Chroma vector database server, over its HTTP API v2, for many
//! machines sharing one store.
//!
//! One collection (default [`DEFAULT_COLLECTION`]) in cosine space holds every session's memories:
//! the record's text is the document, its session and time (`created_ms`, milliseconds since the
//! epoch) are metadata, so a search on a session is a `where` filter and a distance is
//! `1 − cosine`. Opening gets or creates the collection and refuses one of other dimensions or of
//! another space.
//!
//! Chroma keeps the old record when an id is added again and says nothing, so `add` asks for the
//! batch's ids first and refuses a known one ([`StoreError::Duplicate`]); a batch larger than
//! [`ChromaOptions::max_batch`] goes in several requests, and when one fails the requests that
//! went before are deleted again, so an add is all or none. (Two clients adding the same new id at
//! the same moment can both pass the check: the first write wins, as in Chroma itself.)
//!
//! Every request has a timeout ([`ChromaOptions::timeout`]) and every reply body a cap
//! ([`ChromaOptions::max_reply_bytes`]); a failure is a [`ChromaError`] naming the URL with its
//! credentials and query left out, never the token ([`ChromaAuth`]).

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use claij_backends::BoxFuture;
use claij_backends::redact::{redact_secret, redact_text, redact_url, redact_urls_in};
use claij_interceptors::builtin::recall::{Forget, Hit, MemoryStore, Query, Record, StoreError};
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{MAX_DIM, from_millis, to_millis};

/// The collection memories go to unless [`ChromaOptions::collection`] says otherwise.
pub const DEFAULT_COLLECTION: &str = "claij_memories";
/// How long one request may take, connecting and reading the reply included
/// ([`ChromaOptions::timeout`]).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most records sent or asked for in one request ([`ChromaOptions::max_batch`]); lowered to the
/// server's own `max_batch_size` when that is smaller.
pub const DEFAULT_MAX_BATCH: usize = 1_000;
/// The largest reply body read, in bytes ([`ChromaOptions::max_reply_bytes`]).
pub const DEFAULT_MAX_REPLY_BYTES: usize = 64 * 1024 * 1024;
/// Chroma's default tenant.
pub const DEFAULT_TENANT: &str = "default_tenant";
/// Chroma's default database.
pub const DEFAULT_DATABASE: &str = "default_database";
/// How much of an error reply's body an error quotes, in characters.
const QUOTED_CHARS: usize = 300;

/// The header a token goes in ([`ChromaAuth`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthHeader {
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// `x-chroma-token: <token>`.
    XChromaToken,
}

/// A token sent with every request; its [`Debug`] never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct ChromaAuth {
    header: AuthHeader,
    token: String,
}

impl fmt::Debug for ChromaAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChromaAuth")
            .field("header", &self.header)
            .field("token", &"***")
            .finish()
    }
}

impl ChromaAuth {
    /// `token` in `header`.
    pub fn new(header: AuthHeader, token: impl Into<String>) -> Self {
        Self {
            header,
            token: token.into(),
        }
    }

    /// The token in the environment variable `var`, looked up with `lookup` (pass
    /// `|name| std::env::var(name).ok()`).
    ///
    /// # Errors
    ///
    /// [`ChromaError::MissingToken`] naming `var` when it is unset or empty.
    pub fn from_env(
        header: AuthHeader,
        var: &str,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ChromaError> {
        match lookup(var).filter(|token| !token.is_empty()) {
            Some(token) => Ok(Self::new(header, token)),
            None => Err(ChromaError::MissingToken {
                var: var.to_owned(),
            }),
        }
    }
}

/// How a [`ChromaStore`] is reached: [`ChromaOptions::new`] takes the server's URL and the
/// vectors' dimensions, the rest has defaults.
#[derive(Clone)]
pub struct ChromaOptions {
    /// The server's base URL (`http://127.0.0.1:8000`).
    pub url: String,
    /// The collection ([`DEFAULT_COLLECTION`]).
    pub collection: String,
    /// The vectors' dimensions.
    pub dim: usize,
    /// The most one request may take ([`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// The most records in one request ([`DEFAULT_MAX_BATCH`]).
    pub max_batch: usize,
    /// The largest reply body read ([`DEFAULT_MAX_REPLY_BYTES`]).
    pub max_reply_bytes: usize,
    /// The tenant ([`DEFAULT_TENANT`]).
    pub tenant: String,
    /// The database ([`DEFAULT_DATABASE`]).
    pub database: String,
    /// A token sent with every request, if any.
    pub auth: Option<ChromaAuth>,
}

impl fmt::Debug for ChromaOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChromaOptions")
            .field("url", &redact_url(&self.url))
            .field("collection", &self.collection)
            .field("dim", &self.dim)
            .field("timeout", &self.timeout)
            .field("max_batch", &self.max_batch)
            .field("max_reply_bytes", &self.max_reply_bytes)
            .field("tenant", &self.tenant)
            .field("database", &self.database)
            .field("auth", &self.auth)
            .finish()
    }
}

impl ChromaOptions {
    /// The server at `url`, `dim`-dimensional vectors, every other option its default.
    pub fn new(url: impl Into<String>, dim: usize) -> Self {
        Self {
            url: url.into(),
            collection: DEFAULT_COLLECTION.to_owned(),
            dim,
            timeout: DEFAULT_TIMEOUT,
            max_batch: DEFAULT_MAX_BATCH,
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            tenant: DEFAULT_TENANT.to_owned(),
            database: DEFAULT_DATABASE.to_owned(),
            auth: None,
        }
    }

    /// The same in `collection`.
    #[must_use]
    pub fn with_collection(mut self, collection: impl Into<String>) -> Self {
        self.collection = collection.into();
        self
    }

    /// The same with `timeout`.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same with `max_batch`.
    #[must_use]
    pub fn with_max_batch(mut self, max_batch: usize) -> Self {
        self.max_batch = max_batch;
        self
    }

    /// The same with `max_reply_bytes`.
    #[must_use]
    pub fn with_max_reply_bytes(mut self, max_reply_bytes: usize) -> Self {
        self.max_reply_bytes = max_reply_bytes;
        self
    }

    /// The same sending `auth`.
    #[must_use]
    pub fn with_auth(mut self, auth: ChromaAuth) -> Self {
        self.auth = Some(auth);
        self
    }
}

/// What went wrong with a [`ChromaStore`]; every URL in it is shown without credentials or query.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChromaError {
    /// The URL does not parse, or is not `http`/`https`.
    #[error("the Chroma URL {url} is not an http(s) URL: {why}")]
    BadUrl {
        /// The URL, redacted.
        url: String,
        /// Why.
        why: String,
    },
    /// An option is out of range.
    #[error("{option} = {value}: {why}")]
    BadOption {
        /// The option (`dim`, `max_batch`, `collection`, ...).
        option: &'static str,
        /// Its value.
        value: String,
        /// What it must be.
        why: String,
    },
    /// The token's environment variable is unset or empty.
    #[error("the Chroma token variable {var} is not set")]
    MissingToken {
        /// The variable.
        var: String,
    },
    /// No connection to the server.
    #[error("{method} {url}: cannot connect: {why}")]
    Connect {
        /// The request's method.
        method: String,
        /// The URL, redacted.
        url: String,
        /// Why.
        why: String,
    },
    /// The server did not answer within the timeout.
    #[error("{method} {url}: no complete reply within {} (timeout)", humantime::format_duration(*.timeout))]
    Timeout {
        /// The request's method.
        method: String,
        /// The URL, redacted.
        url: String,
        /// The timeout.
        timeout: Duration,
    },
    /// Another transport failure (the connection reset midway, a TLS error).
    #[error("{method} {url}: {why}")]
    Transport {
        /// The request's method.
        method: String,
        /// The URL, redacted.
        url: String,
        /// Why.
        why: String,
    },
    /// The server refused the request as too large (413): fewer records per request help.
    #[error(
        "{method} {url}: 413 Payload Too Large with {records} records in the request (lower max_batch)"
    )]
    TooLarge {
        /// The request's method.
        method: String,
        /// The URL, redacted.
        url: String,
        /// The records sent.
        records: usize,
    },
    /// An error status.
    #[error("{method} {url}: {status}: {message}")]
    Status {
        /// The request's method.
        method: String,
        /// The URL, redacted.
        url: String,
        /// The status.
        status: u16,
        /// Chroma's error and message, or the start of the body, redacted.
        message: String,
    },
    /// The reply body is larger than [`ChromaOptions::max_reply_bytes`].
    #[error(
        "{method} {url}: the reply is larger than the limit of {limit} bytes (max_reply_bytes)"
    )]
    ReplyTooLarge {
        /// The request's method.
        method: String,
        /// The URL, redacted.
        url: String,
        /// The limit.
        limit: usize,
    },
    /// The reply is not the JSON this client expects.
    #[error("{method} {url}: malformed reply: {why}")]
    Malformed {
        /// The request's method.
        method: String,
        /// The URL, redacted.
        url: String,
        /// What is wrong.
        why: String,
    },
    /// The collection holds vectors of other dimensions.
    #[error("collection {collection} holds {stored}-dimension vectors, opened for {requested}")]
    Dimensions {
        /// The collection.
        collection: String,
        /// Its dimensions.
        stored: usize,
        /// The caller's.
        requested: usize,
    },
    /// The collection measures distance otherwise than by cosine.
    #[error("collection {collection} uses the {space} distance, not cosine")]
    Space {
        /// The collection.
        collection: String,
        /// Its space.
        space: String,
    },
}

/// A [`MemoryStore`] in a Chroma server: see the [module](self). Its [`Debug`] shows the server
/// without credentials.
pub struct ChromaStore {
    client: reqwest::Client,
    /// `<url>/api/v2/tenants/<tenant>/databases/<database>/collections/<id>`.
    base: String,
    /// `chroma <url> collection <name>`, the `store` of a [`StoreError`].
    name: String,
    collection: String,
    dim: usize,
    max_batch: usize,
    max_reply_bytes: usize,
    timeout: Duration,
    auth: Option<ChromaAuth>,
}

impl fmt::Debug for ChromaStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChromaStore")
            .field("store", &self.name)
            .field("dim", &self.dim)
            .field("max_batch", &self.max_batch)
            .field("max_reply_bytes", &self.max_reply_bytes)
            .field("timeout", &self.timeout)
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

/// A name Chroma takes in a path: letters, digits, `.`, `_` and `-`, 3 to 512 of them.
fn check_name(option: &'static str, value: &str) -> Result<(), ChromaError> {
    let ok = (3..=512).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(ChromaError::BadOption {
            option,
            value: value.chars().take(64).collect(),
            why: "3 to 512 letters, digits, `.`, `_` or `-`".to_owned(),
        })
    }
}

#[derive(Deserialize)]
struct PreFlight {
    max_batch_size: usize,
}

#[derive(Deserialize)]
struct Collection {
    id: String,
    #[serde(default)]
    dimension: Option<usize>,
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    configuration_json: Option<Value>,
}

#[derive(Deserialize)]
struct GetReply {
    ids: Vec<String>,
    #[serde(default)]
    documents: Option<Vec<Option<String>>>,
    #[serde(default)]
    embeddings: Option<Vec<Option<Vec<f32>>>>,
    #[serde(default)]
    metadatas: Option<Vec<Option<Metadata>>>,
}

#[derive(Deserialize)]
struct QueryReply {
    ids: Vec<Vec<String>>,
    #[serde(default)]
    documents: Option<Vec<Vec<Option<String>>>>,
    #[serde(default)]
    embeddings: Option<Vec<Vec<Option<Vec<f32>>>>>,
    #[serde(default)]
    metadatas: Option<Vec<Vec<Option<Metadata>>>>,
    #[serde(default)]
    distances: Option<Vec<Vec<Option<f32>>>>,
}

#[derive(Deserialize)]
struct Deleted {
    #[serde(default)]
    deleted: Option<usize>,
}

/// A record's or collection's metadata.
type Metadata = serde_json::Map<String, Value>;

/// The metadata key of a record's session.
const SESSION_KEY: &str = "session";
/// The metadata key of a record's time, milliseconds since the epoch.
const TIME_KEY: &str = "created_ms";
/// The collection metadata key of the vectors' dimensions.
const DIM_KEY: &str = "claij_dim";

impl ChromaStore {
    /// Connects to the server, checks its limits and gets or creates the collection (cosine space).
    ///
    /// # Errors
    ///
    /// A [`ChromaError`]: a bad URL or option, the server unreachable or failing, a collection of
    /// other dimensions or another space.
    pub async fn open(options: ChromaOptions) -> Result<ChromaStore, ChromaError> {
        let shown = redact_url(options.url.trim_end_matches('/'));
        let url = reqwest::Url::parse(&options.url).map_err(|e| ChromaError::BadUrl {
            url: shown.clone(),
            why: e.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ChromaError::BadUrl {
                url: shown,
                why: format!("the scheme is {}", url.scheme()),
            });
        }
        if options.dim == 0 || options.dim > MAX_DIM {
            return Err(ChromaError::BadOption {
                option: "dim",
                value: options.dim.to_string(),
                why: format!("1 to {MAX_DIM}"),
            });
        }
        for (option, value) in [
            ("max_batch", options.max_batch),
            ("max_reply_bytes", options.max_reply_bytes),
        ] {
            if value == 0 {
                return Err(ChromaError::BadOption {
                    option,
                    value: "0".to_owned(),
                    why: "at least 1".to_owned(),
                });
            }
        }
        if options.timeout.is_zero() {
            return Err(ChromaError::BadOption {
                option: "timeout",
                value: "0s".to_owned(),
                why: "longer than zero".to_owned(),
            });
        }
        check_name("collection", &options.collection)?;
        check_name("tenant", &options.tenant)?;
        check_name("database", &options.database)?;
        let client = reqwest::Client::builder()
            .timeout(options.timeout)
            .connect_timeout(options.timeout)
            .build()
            .map_err(|e| ChromaError::Transport {
                method: "CONNECT".to_owned(),
                url: shown.clone(),
                why: e.to_string(),
            })?;
        let root = options.url.trim_end_matches('/').to_owned();
        let collections = format!(
            "{root}/api/v2/tenants/{}/databases/{}/collections",
            options.tenant, options.database
        );
        let mut store = ChromaStore {
            client,
            base: collections.clone(),
            name: format!("chroma {shown} collection {}", options.collection),
            collection: options.collection.clone(),
            dim: options.dim,
            max_batch: options.max_batch,
            max_reply_bytes: options.max_reply_bytes,
            timeout: options.timeout,
            auth: options.auth,
        };
        let pre: PreFlight = store
            .call(
                Method::GET,
                &format!("{root}/api/v2/pre-flight-checks"),
                None,
                0,
            )
            .await?;
        store.max_batch = store.max_batch.min(pre.max_batch_size.max(1));
        let body = json!({
            "name": options.collection,
            "get_or_create": true,
            "configuration": {"hnsw": {"space": "cosine"}},
            "metadata": {DIM_KEY: options.dim},
        });
        let collection: Collection = store
            .call(Method::POST, &collections, Some(body), 0)
            .await?;
        let dims = collection
            .metadata
            .as_ref()
            .and_then(|m| m.get(DIM_KEY)?.as_u64())
            .and_then(|d| usize::try_from(d).ok())
            .into_iter()
            .chain(collection.dimension);
        for stored in dims {
            if stored != options.dim {
                return Err(ChromaError::Dimensions {
                    collection: options.collection,
                    stored,
                    requested: options.dim,
                });
            }
        }
        let space = collection
            .configuration_json
            .as_ref()
            .and_then(|c| {
                c.pointer("/hnsw/space")
                    .or_else(|| c.pointer("/spann/space"))
            })
            .and_then(Value::as_str);
        if let Some(space) = space.filter(|s| *s != "cosine") {
            return Err(ChromaError::Space {
                collection: options.collection,
                space: space.to_owned(),
            });
        }
        let id = &collection.id;
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(store.malformed(
                &Method::POST,
                &collections,
                format!("collection id {id:?}"),
            ));
        }
        store.base = format!("{collections}/{id}");
        Ok(store)
    }

    /// The collection's name.
    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// The vectors' dimensions.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The most records in one request: [`ChromaOptions::max_batch`], or the server's limit when
    /// lower.
    pub fn max_batch(&self) -> usize {
        self.max_batch
    }

    /// How many records the collection holds (every session).
    ///
    /// # Errors
    ///
    /// The request failed ([`StoreError::Engine`], its source a [`ChromaError`]).
    pub async fn count(&self) -> Result<usize, StoreError> {
        let url = format!("{}/count", self.base);
        self.call(Method::GET, &url, None, 0)
            .await
            .map_err(|e| self.fail(e))
    }

    /// Deletes the whole collection from the server (every session's memories).
    ///
    /// # Errors
    ///
    /// The request failed ([`StoreError::Engine`], its source a [`ChromaError`]).
    pub async fn delete_collection(self) -> Result<(), StoreError> {
        let url = self
            .base
            .rsplit_once('/')
            .map_or_else(String::new, |(collections, _)| {
                format!("{collections}/{}", self.collection)
            });
        self.call::<Value>(Method::DELETE, &url, None, 0)
            .await
            .map(drop)
            .map_err(|e| self.fail(e))
    }

    fn fail(&self, e: ChromaError) -> StoreError {
        StoreError::Engine {
            store: self.name.clone(),
            source: Box::new(e),
        }
    }

    fn malformed(&self, method: &Method, url: &str, why: impl Into<String>) -> ChromaError {
        ChromaError::Malformed {
            method: method.to_string(),
            url: self.show(url),
            why: why.into(),
        }
    }

    /// `url` as errors show it: the base redacted, the path as is.
    fn show(&self, url: &str) -> String {
        redact_url(url)
    }

    /// `text` from the server, with the token and anything secret-looking removed.
    fn scrub(&self, text: &str) -> String {
        let text = redact_urls_in(text);
        match &self.auth {
            Some(auth) => redact_secret(&text, &auth.token).into_owned(),
            None => text.into_owned(),
        }
    }

    /// One request: `body` as JSON, the reply read up to the cap and parsed as `T`. `records` is how
    /// many records the request carries (for a 413's message).
    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        url: &str,
        body: Option<Value>,
        records: usize,
    ) -> Result<T, ChromaError> {
        let mut request = self.client.request(method.clone(), url);
        if let Some(body) = &body {
            request = request.json(body);
        }
        if let Some(auth) = &self.auth {
            request = match auth.header {
                AuthHeader::Bearer => request.bearer_auth(&auth.token),
                AuthHeader::XChromaToken => request.header("x-chroma-token", &auth.token),
            };
        }
        let transport = |e: reqwest::Error| self.transport(&method, url, &e);
        let mut response = request.send().await.map_err(transport)?;
        let status = response.status();
        let limit = self.max_reply_bytes;
        let too_large = || ChromaError::ReplyTooLarge {
            method: method.to_string(),
            url: self.show(url),
            limit,
        };
        if response
            .content_length()
            .is_some_and(|n| usize::try_from(n).map_or(true, |n| n > limit))
        {
            return Err(too_large());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if bytes.len() + chunk.len() > limit {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            return Err(ChromaError::TooLarge {
                method: method.to_string(),
                url: self.show(url),
                records,
            });
        }
        if !status.is_success() {
            return Err(ChromaError::Status {
                method: method.to_string(),
                url: self.show(url),
                status: status.as_u16(),
                message: self.error_message(&bytes),
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| self.malformed(&method, url, e.to_string()))
    }

    /// Chroma's `{"error": …, "message": …}`, else the start of the body.
    fn error_message(&self, body: &[u8]) -> String {
        #[derive(Deserialize)]
        struct ErrorReply {
            error: String,
            message: String,
        }
        let text = match serde_json::from_slice::<ErrorReply>(body) {
            Ok(reply) => format!("{}: {}", reply.error, reply.message),
            Err(_) => String::from_utf8_lossy(body).into_owned(),
        };
        let text: String = text.chars().take(QUOTED_CHARS).collect();
        let text = redact_text(&text).into_owned();
        if text.trim().is_empty() {
            "(no body)".to_owned()
        } else {
            self.scrub(&text)
        }
    }

    fn transport(&self, method: &Method, url: &str, e: &reqwest::Error) -> ChromaError {
        let (method, url) = (method.to_string(), self.show(url));
        if e.is_timeout() {
            return ChromaError::Timeout {
                method,
                url,
                timeout: self.timeout,
            };
        }
        let mut why = Vec::new();
        let mut source = std::error::Error::source(e);
        while let Some(inner) = source {
            why.push(inner.to_string());
            source = inner.source();
        }
        let why = if why.is_empty() {
            e.to_string()
        } else {
            why.join(": ")
        };
        let why = self.scrub(&why);
        if e.is_connect() {
            ChromaError::Connect { method, url, why }
        } else {
            ChromaError::Transport { method, url, why }
        }
    }

    fn wrong_dim(&self, what: String, found: usize) -> StoreError {
        StoreError::WrongDimension {
            store: self.name.clone(),
            what,
            expected: self.dim,
            found,
        }
    }

    async fn add_now(&self, records: Vec<Record>) -> Result<(), StoreError> {
        let mut seen = HashSet::new();
        for r in &records {
            if r.embedding.len() != self.dim {
                return Err(self.wrong_dim(format!("record \"{}\"", r.id), r.embedding.len()));
            }
            if !seen.insert(r.id.as_str()) {
                return Err(self.duplicate(&r.id));
            }
        }
        // Chroma keeps the old record of a known id without a word: ask first.
        for chunk in records.chunks(self.max_batch) {
            let ids: Vec<&str> = chunk.iter().map(|r| r.id.as_str()).collect();
            let known = self.get(json!({"ids": ids, "include": []})).await?;
            if let Some(id) = known.ids.first() {
                return Err(self.duplicate(id));
            }
        }
        let url = format!("{}/add", self.base);
        let mut added: Vec<&str> = Vec::new();
        for chunk in records.chunks(self.max_batch) {
            let body = json!({
                "ids": chunk.iter().map(|r| &r.id).collect::<Vec<_>>(),
                "embeddings": chunk.iter().map(|r| &r.embedding).collect::<Vec<_>>(),
                "documents": chunk.iter().map(|r| &r.text).collect::<Vec<_>>(),
                "metadatas": chunk.iter().map(|r| json!({
                    SESSION_KEY: r.session,
                    TIME_KEY: to_millis(r.created_at),
                })).collect::<Vec<_>>(),
            });
            if let Err(e) = self
                .call::<Value>(Method::POST, &url, Some(body), chunk.len())
                .await
            {
                // All or none: take back what the batch's earlier requests added.
                if !added.is_empty() {
                    let undo: Vec<String> = added.iter().map(|id| (*id).to_owned()).collect();
                    if let Err(undo_error) = self.forget_now(Forget::Ids(undo)).await {
                        tracing::warn!(
                            store = %self.name,
                            error = %undo_error,
                            "could not take back the first part of a failed add"
                        );
                    }
                }
                return Err(self.fail(e));
            }
            added.extend(chunk.iter().map(|r| r.id.as_str()));
        }
        Ok(())
    }

    fn duplicate(&self, id: &str) -> StoreError {
        StoreError::Duplicate {
            store: self.name.clone(),
            id: id.to_owned(),
        }
    }

    async fn get(&self, body: Value) -> Result<GetReply, StoreError> {
        let url = format!("{}/get", self.base);
        let reply: GetReply = self
            .call(Method::POST, &url, Some(body), 0)
            .await
            .map_err(|e| self.fail(e))?;
        Ok(reply)
    }

    /// A record from the `i`th entries of a reply's columns.
    fn record(
        &self,
        url: &str,
        id: String,
        document: Option<String>,
        embedding: Option<Vec<f32>>,
        metadata: Option<&Metadata>,
    ) -> Result<Record, StoreError> {
        let bad = |why: String| self.fail(self.malformed(&Method::POST, url, why));
        let embedding =
            embedding.ok_or_else(|| bad(format!("record \"{id}\" has no embedding")))?;
        if embedding.len() != self.dim {
            return Err(bad(format!(
                "record \"{id}\" has {} dimensions, the collection {}",
                embedding.len(),
                self.dim
            )));
        }
        let metadata = metadata.ok_or_else(|| bad(format!("record \"{id}\" has no metadata")))?;
        let session = metadata
            .get(SESSION_KEY)
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("record \"{id}\" has no `{SESSION_KEY}`")))?
            .to_owned();
        let created_at = metadata
            .get(TIME_KEY)
            .and_then(Value::as_i64)
            .and_then(from_millis)
            .ok_or_else(|| bad(format!("record \"{id}\" has no valid `{TIME_KEY}`")))?;
        Ok(Record {
            text: document.unwrap_or_default(),
            id,
            session,
            embedding,
            created_at,
        })
    }

    async fn search_now(&self, query: Query<'_>) -> Result<Vec<Hit>, StoreError> {
        if query.vector.len() != self.dim {
            return Err(self.wrong_dim("the query vector".to_owned(), query.vector.len()));
        }
        if query.k == 0 {
            return Ok(Vec::new());
        }
        let url = format!("{}/query", self.base);
        let mut body = json!({
            "query_embeddings": [query.vector],
            "n_results": query.k.min(i32::MAX as usize),
            "include": ["documents", "metadatas", "distances", "embeddings"],
        });
        if let Some(session) = query.session {
            body["where"] = json!({SESSION_KEY: session});
        }
        let reply: QueryReply = self
            .call(Method::POST, &url, Some(body), 0)
            .await
            .map_err(|e| self.fail(e))?;
        let bad = |why: &str| self.fail(self.malformed(&Method::POST, &url, why));
        fn first<T>(column: Option<Vec<Vec<T>>>) -> Option<Vec<T>> {
            column.and_then(|c| c.into_iter().next())
        }
        let missing = |name: &str| bad(&format!("no {name} for the query"));
        let ids = reply.ids.into_iter().next().unwrap_or_default();
        let documents = first(reply.documents).ok_or_else(|| missing("documents"))?;
        let embeddings = first(reply.embeddings).ok_or_else(|| missing("embeddings"))?;
        let metadatas = first(reply.metadatas).ok_or_else(|| missing("metadatas"))?;
        let distances = first(reply.distances).ok_or_else(|| missing("distances"))?;
        let n = ids.len();
        if [
            documents.len(),
            embeddings.len(),
            metadatas.len(),
            distances.len(),
        ] != [n; 4]
        {
            return Err(bad("the reply's columns differ in length"));
        }
        let mut hits = Vec::with_capacity(n);
        for ((((id, document), embedding), metadata), distance) in ids
            .into_iter()
            .zip(documents)
            .zip(embeddings)
            .zip(metadatas)
            .zip(distances)
        {
            let distance =
                distance.ok_or_else(|| bad(&format!("record \"{id}\" has no distance")))?;
            let similarity = (1.0 - distance).clamp(-1.0, 1.0);
            if similarity < query.min_similarity || hits.len() >= query.k {
                continue;
            }
            let record = self.record(&url, id, document, embedding, metadata.as_ref())?;
            hits.push(Hit { record, similarity });
        }
        hits.sort_by(|a, b| b.similarity.total_cmp(&a.similarity));
        Ok(hits)
    }

    async fn list_now(&self, session: Option<&str>) -> Result<Vec<Record>, StoreError> {
        let url = format!("{}/get", self.base);
        let mut out = Vec::new();
        loop {
            let mut body = json!({
                "include": ["documents", "metadatas", "embeddings"],
                "limit": self.max_batch,
                "offset": out.len(),
            });
            if let Some(session) = session {
                body["where"] = json!({SESSION_KEY: session});
            }
            let page = self.get(body).await?;
            let n = page.ids.len();
            let bad = |why: &str| self.fail(self.malformed(&Method::POST, &url, why));
            let documents = page.documents.ok_or_else(|| bad("no documents"))?;
            let embeddings = page.embeddings.ok_or_else(|| bad("no embeddings"))?;
            let metadatas = page.metadatas.ok_or_else(|| bad("no metadatas"))?;
            if [documents.len(), embeddings.len(), metadatas.len()] != [n; 3] || n > self.max_batch
            {
                return Err(bad("the reply's columns differ in length"));
            }
            for (((id, document), embedding), metadata) in page
                .ids
                .into_iter()
                .zip(documents)
                .zip(embeddings)
                .zip(metadatas)
            {
                out.push(self.record(&url, id, document, embedding, metadata.as_ref())?);
            }
            if n < self.max_batch {
                break;
            }
        }
        // Stable: records of one millisecond stay in the server's order.
        out.sort_by_key(|r| r.created_at);
        Ok(out)
    }

    async fn forget_now(&self, which: Forget) -> Result<usize, StoreError> {
        let url = format!("{}/delete", self.base);
        let bodies: Vec<Value> = match &which {
            Forget::Ids(ids) => {
                // Chroma counts every id it was asked to delete, stored or not: ask which are.
                let mut bodies = Vec::new();
                for chunk in ids.chunks(self.max_batch) {
                    let known = self.get(json!({"ids": chunk, "include": []})).await?;
                    if !known.ids.is_empty() {
                        bodies.push(json!({"ids": known.ids}));
                    }
                }
                bodies
            }
            Forget::Session(session) => vec![json!({"where": {SESSION_KEY: session}})],
        };
        let mut removed = 0;
        for body in bodies {
            let records = body["ids"].as_array().map_or(0, Vec::len);
            let reply: Deleted = self
                .call(Method::POST, &url, Some(body), records)
                .await
                .map_err(|e| self.fail(e))?;
            removed += reply.deleted.unwrap_or(records);
        }
        Ok(removed)
    }
}

impl MemoryStore for ChromaStore {
    fn add<'a>(&'a self, records: Vec<Record>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.add_now(records))
    }

    fn search<'a>(&'a self, query: Query<'a>) -> BoxFuture<'a, Result<Vec<Hit>, StoreError>> {
        Box::pin(self.search_now(query))
    }

    fn list<'a>(
        &'a self,
        session: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Record>, StoreError>> {
        Box::pin(self.list_now(session))
    }

    fn forget<'a>(&'a self, which: Forget) -> BoxFuture<'a, Result<usize, StoreError>> {
        Box::pin(self.forget_now(which))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
