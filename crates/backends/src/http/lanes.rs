//! The HTTP connections of one backend ("lanes"), so that calls over HTTP/2 spread over several
//! connections instead of queueing on one.
//!
//! A server lets each HTTP/2 connection carry at most `SETTINGS_MAX_CONCURRENT_STREAMS` requests
//! at once (often 100 to 256); past that, the client queues. So a call takes the lane with the
//! fewest calls in flight, and a new lane (a new connection) opens when every lane already carries
//! [`HttpConfig::streams_per_connection`] calls, or as many as the server allows if that is fewer.
//! Over HTTP/1.1 one lane (one reqwest client) is enough: its pool opens a connection per call in
//! flight.
//!
//! A lane is one of two kinds. With `http_version = "http2"` on plain `http://` and no proxy
//! variable set, a lane is one HTTP/2 connection driven directly ([`super::direct`]: a few hundred
//! bytes a call in flight instead of reqwest's ~22 kB). Otherwise it is a reqwest client (`auto`
//! and `http1`, which negotiate or speak HTTP/1.1; `http2` over TLS; `http2` when a proxy variable
//! is set, so that a proxy is never bypassed: [`proxy_variable`]).
//!
//! Lanes shrink after a burst: a lane idle (no call) for longer than [`LANE_IDLE`] is closed when
//! the next call comes, keeping one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::HeaderMap;
use tokio::time::Instant;
use tracing::debug;

use super::transport::{Failure, Reply};
use super::{HttpConfig, HttpVersion, direct};

/// How long a lane may stay without a call before it is closed (reqwest's pool keeps an idle
/// connection as long).
pub(super) const LANE_IDLE: Duration = Duration::from_secs(90);

/// The environment variables through which reqwest sends a plain `http://` request to a proxy.
const PROXY_VARIABLES: [&str; 4] = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"];

/// How a lane's connection is made, taken from the backend's [`HttpConfig`].
#[derive(Debug, Clone, PartialEq)]
struct Recipe {
    connect_timeout: Duration,
    user_agent: String,
    version: HttpVersion,
    /// HTTP/2 driven directly ([`super::direct`]), not through reqwest.
    direct: bool,
}

/// The lanes of one backend; clones of the backend share them.
#[derive(Debug)]
pub(super) struct Lanes {
    recipe: Recipe,
    /// Calls per lane before another one opens; `usize::MAX`: one lane (HTTP/1.1).
    cap: usize,
    /// The most streams the server allows on a connection, as last seen on any direct lane
    /// ([`direct::Connection`]); `usize::MAX` until seen.
    server_limit: Arc<AtomicUsize>,
    lanes: Mutex<Vec<Arc<Lane>>>,
}

#[derive(Debug)]
struct Lane {
    via: Via,
    in_flight: AtomicUsize,
    /// When the last call left this lane.
    idle_since: Mutex<Instant>,
}

#[derive(Debug)]
enum Via {
    Reqwest(reqwest::Client),
    Direct(direct::Connection),
}

/// A lane, held for one call (retries and a stream's body included): the lane counts the call
/// until this is dropped.
#[derive(Debug)]
pub(super) struct Lease {
    lane: Arc<Lane>,
}

impl Lanes {
    /// No lane yet: the first call opens one.
    pub(super) fn new(config: &HttpConfig) -> Lanes {
        let plain = config
            .base_url
            .get(..7)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
        let proxy = proxy_variable(|name| std::env::var(name).ok());
        if let (HttpVersion::Http2, true, Some(name)) = (config.http_version, plain, proxy) {
            debug!(
                variable = name,
                "a proxy is set: HTTP/2 goes through reqwest, which honours it"
            );
        }
        let recipe = Recipe {
            connect_timeout: config.connect_timeout,
            user_agent: config.user_agent.clone(),
            version: config.http_version,
            direct: config.http_version == HttpVersion::Http2 && plain && proxy.is_none(),
        };
        let cap = if config.may_speak_http2() {
            usize::try_from(config.streams_per_connection.max(1)).unwrap_or(usize::MAX)
        } else {
            usize::MAX
        };
        Lanes {
            recipe,
            cap,
            server_limit: Arc::new(AtomicUsize::new(usize::MAX)),
            lanes: Mutex::new(Vec::new()),
        }
    }

    /// The least-loaded lane, or a new one when every lane carries as many calls as it may; lanes
    /// idle for longer than [`LANE_IDLE`] closed first (one kept).
    ///
    /// # Errors
    ///
    /// The client of a new lane cannot be built (reqwest's message).
    pub(super) fn lease(&self) -> Result<Lease, reqwest::Error> {
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        if lanes.len() > 1 {
            let now = Instant::now();
            let mut keep = lanes.len();
            lanes.retain(|lane| {
                let idle = lane.in_flight.load(Ordering::Relaxed) == 0
                    && now.saturating_duration_since(lane.idle_since()) > LANE_IDLE;
                if idle && keep > 1 {
                    keep -= 1;
                    return false;
                }
                true
            });
        }
        let least = lanes
            .iter()
            .min_by_key(|lane| lane.in_flight.load(Ordering::Relaxed));
        let lane = match least {
            Some(lane) if lane.in_flight.load(Ordering::Relaxed) < self.limit(lane) => lane.clone(),
            _ => {
                let lane = Arc::new(Lane {
                    via: self.via()?,
                    in_flight: AtomicUsize::new(0),
                    idle_since: Mutex::new(Instant::now()),
                });
                lanes.push(lane.clone());
                lane
            }
        };
        lane.in_flight.fetch_add(1, Ordering::Relaxed);
        Ok(Lease { lane })
    }

    /// How many lanes are open.
    #[cfg(test)]
    pub(super) fn count(&self) -> usize {
        self.lanes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether calls go over HTTP/2 driven directly.
    #[cfg(test)]
    pub(super) fn is_direct(&self) -> bool {
        self.recipe.direct
    }

    fn via(&self) -> Result<Via, reqwest::Error> {
        if self.recipe.direct {
            return Ok(Via::Direct(direct::Connection::new(
                self.recipe.connect_timeout,
                &self.recipe.user_agent,
                self.server_limit.clone(),
            )));
        }
        let builder = reqwest::Client::builder()
            .connect_timeout(self.recipe.connect_timeout)
            .user_agent(self.recipe.user_agent.clone());
        let builder = match self.recipe.version {
            HttpVersion::Auto => builder,
            HttpVersion::Http1 => builder.http1_only(),
            HttpVersion::Http2 => builder.http2_prior_knowledge(),
        };
        builder.build().map(Via::Reqwest)
    }

    /// The calls `lane` may carry: the cap, or fewer when the server allows fewer streams on a
    /// connection (seen on a direct lane: reqwest's connections queue past it instead).
    fn limit(&self, lane: &Lane) -> usize {
        match &lane.via {
            Via::Reqwest(_) => self.cap,
            Via::Direct(_) => self
                .cap
                .min(self.server_limit.load(Ordering::Relaxed).max(1)),
        }
    }
}

impl Lane {
    fn idle_since(&self) -> Instant {
        *self
            .idle_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Lease {
    /// Sends one request on this lane (`body` empty: none) and waits for the response's head.
    pub(super) async fn send(
        &self,
        method: reqwest::Method,
        url: &reqwest::Url,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Reply, Failure> {
        match &self.lane.via {
            Via::Direct(connection) => connection
                .send(method, url, headers, body)
                .await
                .map(Reply::Direct),
            Via::Reqwest(client) => {
                let mut request = client.request(method, url.clone()).headers(headers.clone());
                if !body.is_empty() {
                    request = request.body(body);
                }
                request
                    .send()
                    .await
                    .map(Reply::Reqwest)
                    .map_err(Failure::Reqwest)
            }
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.lane.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            *self
                .lane
                .idle_since
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Instant::now();
        }
    }
}

/// The proxy variable that would send a plain `http://` request through a proxy, if one is set
/// (not empty). `NO_PROXY` is not weighed: with any of them set, HTTP/2 goes through reqwest, which
/// applies them all, so the direct path never bypasses a proxy.
pub(super) fn proxy_variable(lookup: impl Fn(&str) -> Option<String>) -> Option<&'static str> {
    PROXY_VARIABLES
        .into_iter()
        .find(|name| lookup(name).is_some_and(|value| !value.trim().is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(url: &str, version: HttpVersion, streams: u32) -> HttpConfig {
        HttpConfig::new(url)
            .with_http_version(version)
            .with_streams_per_connection(streams)
    }

    /// After a burst over three lanes and [`LANE_IDLE`] without a call, the next call closes the
    /// idle lanes; before that time they stay; when all are idle one stays.
    #[tokio::test(start_paused = true)]
    async fn lanes_idle_past_the_pool_timeout_close_but_one() {
        let lanes = Lanes::new(&config("http://127.0.0.1:9/v1", HttpVersion::Http2, 2));
        let burst: Vec<_> = (0..5).map(|_| lanes.lease().unwrap()).collect();
        assert_eq!(lanes.count(), 3);
        drop(burst);
        tokio::time::advance(LANE_IDLE).await;
        drop(lanes.lease().unwrap());
        assert_eq!(lanes.count(), 3, "not idle for longer than LANE_IDLE yet");
        tokio::time::advance(Duration::from_secs(1)).await;
        drop(lanes.lease().unwrap());
        assert_eq!(
            lanes.count(),
            1,
            "the two idle lanes closed, the one just used kept"
        );
        tokio::time::advance(LANE_IDLE * 2).await;
        drop(lanes.lease().unwrap());
        assert_eq!(lanes.count(), 1, "all idle: one kept");
    }

    /// A lane carrying a call is never closed however long it has been since a call left it.
    #[tokio::test(start_paused = true)]
    async fn a_lane_with_a_call_in_flight_stays() {
        let lanes = Lanes::new(&config("http://127.0.0.1:9/v1", HttpVersion::Http2, 1));
        let long = lanes.lease().unwrap();
        let other = lanes.lease().unwrap();
        drop(other);
        tokio::time::advance(LANE_IDLE * 2).await;
        let _next = lanes.lease().unwrap();
        assert_eq!(lanes.count(), 2, "{lanes:?}");
        drop(long);
    }

    #[test]
    fn http2_on_plain_http_is_direct_unless_a_proxy_is_set() {
        let direct = |url: &str, version| Lanes::new(&config(url, version, 100)).is_direct();
        let no_proxy = proxy_variable(|name| std::env::var(name).ok()).is_none();
        assert_eq!(direct("http://127.0.0.1/v1", HttpVersion::Http2), no_proxy);
        assert!(!direct("https://127.0.0.1/v1", HttpVersion::Http2));
        assert!(!direct("http://127.0.0.1/v1", HttpVersion::Auto));
        assert!(!direct("http://127.0.0.1/v1", HttpVersion::Http1));
    }

    #[test]
    fn any_proxy_variable_for_plain_http_is_found() {
        for name in PROXY_VARIABLES {
            let found = proxy_variable(|asked| (asked == name).then(|| "http://proxy:3128".into()));
            assert_eq!(found, Some(name));
        }
        assert_eq!(proxy_variable(|_| None), None);
        assert_eq!(
            proxy_variable(|_| Some("  ".into())),
            None,
            "empty is unset"
        );
        let https_only = proxy_variable(|asked| {
            (asked == "HTTPS_PROXY" || asked == "NO_PROXY").then(|| "http://proxy:3128".into())
        });
        assert_eq!(
            https_only, None,
            "HTTPS_PROXY does not apply to http:// URLs"
        );
    }
}
