//! The worker: the HTTP endpoint the Restate server calls, serving the `ClaijFsm` workflow and the
//! `ClaijConversation` object with one [`Wiring`], and refusing (401) every request not signed by
//! a server whose request-identity key it was given ([`Worker::with_identity_keys`]).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use restate_sdk::prelude::{Endpoint, HttpServer};
use tokio::net::TcpListener;

use crate::conversation::ClaijConversation;
use crate::error::{Error, Result};
use crate::identity::{self, IdentityKey};
use crate::wiring::{Runners, Wiring};
use crate::workflow::ClaijFsm;

/// How many machines' runners a worker keeps built, by default.
pub const DEFAULT_RUNNER_CACHE: usize = 64;

/// A worker: bind it to an address, register that address with the server
/// ([`crate::Client::register`]), and runs go through it.
pub struct Worker {
    wiring: Arc<dyn Wiring>,
    runner_cache: usize,
    identity_keys: Vec<IdentityKey>,
}

impl Worker {
    /// A worker with `wiring`.
    pub fn new(wiring: impl Wiring) -> Self {
        Self {
            wiring: Arc::new(wiring),
            runner_cache: DEFAULT_RUNNER_CACHE,
            identity_keys: Vec::new(),
        }
    }

    /// Serve only requests signed by a Restate server whose request-identity public key is one
    /// of `keys` (any other, and an unsigned one, gets 401 before any handler runs). Without keys
    /// (the default) every request is served: listen on loopback only.
    #[must_use]
    pub fn with_identity_keys(mut self, keys: impl IntoIterator<Item = IdentityKey>) -> Self {
        self.identity_keys.extend(keys);
        self
    }

    /// Keep at most `limit` machines' runners built (default [`DEFAULT_RUNNER_CACHE`]).
    #[must_use]
    pub fn with_runner_cache(mut self, limit: usize) -> Self {
        self.runner_cache = limit.max(1);
        self
    }

    /// The Restate endpoint with the workflow and the conversation object bound, verifying the
    /// identity keys.
    ///
    /// # Errors
    ///
    /// [`Error::IdentityKey`]: restate-sdk refuses a key (not after [`IdentityKey`]'s parse, which
    /// is the same check).
    pub fn endpoint(&self) -> Result<Endpoint> {
        let runners = Arc::new(Runners::new(Arc::clone(&self.wiring), self.runner_cache));
        let mut builder = Endpoint::builder()
            .bind(ClaijFsm {
                runners: Arc::clone(&runners),
            })
            .bind(ClaijConversation { runners });
        if !self.identity_keys.is_empty() {
            identity::install_crypto();
        }
        for key in &self.identity_keys {
            builder = builder
                .identity_key(key.as_str())
                .map_err(|e| Error::IdentityKey {
                    key: format!("`{key}`"),
                    reason: e.to_string(),
                })?;
        }
        Ok(builder.build())
    }

    /// Serves on `listener` until `shutdown` completes.
    ///
    /// # Errors
    ///
    /// [`Worker::endpoint`]'s, before anything is served.
    pub async fn serve(self, listener: TcpListener, shutdown: impl Future) -> Result<()> {
        let endpoint = self.endpoint()?;
        if self.identity_keys.is_empty() {
            tracing::info!("restate worker: no identity keys, every request is served");
        } else {
            let keys = self.identity_keys.len();
            tracing::info!(
                keys,
                "restate worker: only requests signed with its keys are served"
            );
        }
        HttpServer::new(endpoint)
            .serve_with_cancel(listener, shutdown)
            .await;
        Ok(())
    }
}

/// Binds `bind` and serves `wiring`'s worker until `shutdown` completes (no identity keys: see
/// [`Worker::with_identity_keys`]).
///
/// # Errors
///
/// [`Error::Serve`] when the address cannot be bound.
pub async fn serve(bind: SocketAddr, wiring: impl Wiring, shutdown: impl Future) -> Result<()> {
    let listener = TcpListener::bind(bind)
        .await
        .map_err(|source| Error::Serve { bind, source })?;
    tracing::info!(%bind, "restate worker listening");
    Worker::new(wiring).serve(listener, shutdown).await
}
