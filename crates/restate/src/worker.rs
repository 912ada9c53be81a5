//! The worker: the HTTP endpoint the Restate server calls, serving the `ClaijFsm` workflow and the
//! `ClaijConversation` object with one [`Wiring`].

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use restate_sdk::prelude::{Endpoint, HttpServer};
use tokio::net::TcpListener;

use crate::conversation::ClaijConversation;
use crate::error::{Error, Result};
use crate::wiring::{Runners, Wiring};
use crate::workflow::ClaijFsm;

/// How many machines' runners a worker keeps built, by default.
pub const DEFAULT_RUNNER_CACHE: usize = 64;

/// A worker: bind it to an address, register that address with the server
/// ([`crate::Client::register`]), and runs go through it.
pub struct Worker {
    wiring: Arc<dyn Wiring>,
    runner_cache: usize,
}

impl Worker {
    /// A worker with `wiring`.
    pub fn new(wiring: impl Wiring) -> Self {
        Self {
            wiring: Arc::new(wiring),
            runner_cache: DEFAULT_RUNNER_CACHE,
        }
    }

    /// Keep at most `limit` machines' runners built (default [`DEFAULT_RUNNER_CACHE`]).
    #[must_use]
    pub fn with_runner_cache(mut self, limit: usize) -> Self {
        self.runner_cache = limit.max(1);
        self
    }

    /// The Restate endpoint with the workflow and the conversation object bound.
    pub fn endpoint(&self) -> Endpoint {
        let runners = Arc::new(Runners::new(Arc::clone(&self.wiring), self.runner_cache));
        Endpoint::builder()
            .bind(ClaijFsm {
                runners: Arc::clone(&runners),
            })
            .bind(ClaijConversation { runners })
            .build()
    }

    /// Serves on `listener` until `shutdown` completes.
    pub async fn serve(self, listener: TcpListener, shutdown: impl Future) {
        HttpServer::new(self.endpoint())
            .serve_with_cancel(listener, shutdown)
            .await;
    }
}

/// Binds `bind` and serves `wiring`'s worker until `shutdown` completes.
///
/// # Errors
///
/// [`Error::Serve`] when the address cannot be bound.
pub async fn serve(bind: SocketAddr, wiring: impl Wiring, shutdown: impl Future) -> Result<()> {
    let listener = TcpListener::bind(bind)
        .await
        .map_err(|source| Error::Serve { bind, source })?;
    tracing::info!(%bind, "restate worker listening");
    Worker::new(wiring).serve(listener, shutdown).await;
    Ok(())
}
