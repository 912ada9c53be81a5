//! The HTTP clients of one backend ("lanes"), each with its own connection pool, so that calls over
//! HTTP/2 spread over several connections instead of queueing on one.
//!
//! A reqwest client keeps one HTTP/2 connection per host, and a server lets each connection carry
//! at most `SETTINGS_MAX_CONCURRENT_STREAMS` requests at once (often 100 to 256); past that, the
//! client queues. So a call takes the lane with the fewest calls in flight, and a new lane (a new
//! client, so a new connection) opens when every lane already carries
//! [`HttpConfig::streams_per_connection`] calls. Over HTTP/1.1 one client is enough: its pool opens
//! a connection per call in flight.

use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::{HttpConfig, HttpVersion};

/// How a lane's client is built, taken from the backend's [`HttpConfig`].
#[derive(Debug, Clone, PartialEq)]
struct Recipe {
    connect_timeout: Duration,
    user_agent: String,
    version: HttpVersion,
}

/// The lanes of one backend; clones of the backend share them.
#[derive(Debug)]
pub(super) struct Lanes {
    recipe: Recipe,
    /// Calls per lane before another one opens; `usize::MAX`: one lane (HTTP/1.1).
    cap: usize,
    lanes: Mutex<Vec<Arc<Lane>>>,
}

#[derive(Debug)]
struct Lane {
    client: reqwest::Client,
    in_flight: AtomicUsize,
}

/// A lane's client, held for one call (retries and a stream's body included): the lane counts
/// the call until this is dropped.
#[derive(Debug)]
pub(super) struct Lease {
    lane: Arc<Lane>,
}

impl Lanes {
    /// No lane yet: the first call opens one.
    pub(super) fn new(config: &HttpConfig) -> Lanes {
        let recipe = Recipe {
            connect_timeout: config.connect_timeout,
            user_agent: config.user_agent.clone(),
            version: config.http_version,
        };
        let cap = if config.may_speak_http2() {
            usize::try_from(config.streams_per_connection.max(1)).unwrap_or(usize::MAX)
        } else {
            usize::MAX
        };
        Lanes {
            recipe,
            cap,
            lanes: Mutex::new(Vec::new()),
        }
    }

    /// The least-loaded lane, or a new one when every lane carries `cap` calls.
    ///
    /// # Errors
    ///
    /// The client of a new lane cannot be built (reqwest's message).
    pub(super) fn lease(&self) -> Result<Lease, reqwest::Error> {
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        let least = lanes
            .iter()
            .min_by_key(|lane| lane.in_flight.load(Ordering::Relaxed));
        let lane = match least {
            Some(lane) if lane.in_flight.load(Ordering::Relaxed) < self.cap => lane.clone(),
            _ => {
                let lane = Arc::new(Lane {
                    client: self.client()?,
                    in_flight: AtomicUsize::new(0),
                });
                lanes.push(lane.clone());
                lane
            }
        };
        lane.in_flight.fetch_add(1, Ordering::Relaxed);
        Ok(Lease { lane })
    }

    fn client(&self) -> Result<reqwest::Client, reqwest::Error> {
        let builder = reqwest::Client::builder()
            .connect_timeout(self.recipe.connect_timeout)
            .user_agent(self.recipe.user_agent.clone());
        let builder = match self.recipe.version {
            HttpVersion::Auto => builder,
            HttpVersion::Http1 => builder.http1_only(),
            HttpVersion::Http2 => builder.http2_prior_knowledge(),
        };
        builder.build()
    }
}

impl Deref for Lease {
    type Target = reqwest::Client;

    fn deref(&self) -> &reqwest::Client {
        &self.lane.client
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.lane.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}
