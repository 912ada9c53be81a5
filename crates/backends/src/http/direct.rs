//! HTTP/2 driven directly with the `h2` crate, for a backend that speaks HTTP/2 on purpose over
//! plain `http://` (`http_version = "http2"`: h2c by prior knowledge): one connection per lane,
//! its task spawned once, and per call only the stream's state in the connection, the request's
//! head and the call's own future.
//!
//! reqwest over hyper costs about 22 kB a call in flight (its pending request, hyper-util's
//! request future, hyper's per-request send task, header maps and the body copied for its retry
//! and redirect layers); 10,000 calls in flight stay under 100 MB only without them. Everything
//! else a call does is unchanged: the request timeout, the retries (a dead connection is replaced
//! on the next request: [`Connection`] reconnects once its task has ended or an error said the
//! connection is gone), cancellation (dropping the future resets the stream), the body limits
//! (counted where the body is read, [`super::transport`]).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{ACCEPT, CONTENT_LENGTH, HeaderMap, HeaderValue, USER_AGENT};
use tokio::net::TcpStream;
use tracing::debug;

use super::transport::Failure;

/// The receive window of a stream (2 MiB) and of a connection (5 MiB): hyper's, so that a long
/// reply is not held back by flow control. A window is a permission, not an allocation.
const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 5 * 1024 * 1024;

/// One lane's HTTP/2 connection, opened on its first request and again after it died.
#[derive(Debug)]
pub(super) struct Connection {
    connect_timeout: Duration,
    user_agent: Option<HeaderValue>,
    /// The open connection (a handle and whether its task runs), cloned by each request.
    current: Mutex<Option<Live>>,
    /// Held while a connection opens.
    connecting: tokio::sync::Mutex<()>,
    /// The most streams the server allows at once on a connection (its
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`), as last seen on any lane of the backend (one server);
    /// `usize::MAX` until seen.
    server_limit: Arc<AtomicUsize>,
}

/// An open connection: a handle to send on, and whether its task still runs.
#[derive(Debug, Clone)]
struct Live {
    send: h2::client::SendRequest<Bytes>,
    alive: Arc<AtomicBool>,
}

/// A response's head and its body, still to be read.
#[derive(Debug)]
pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) headers: HeaderMap,
    body: h2::RecvStream,
}

impl Reply {
    /// The next piece of the body (its flow-control capacity given back at once), `None` at its end.
    pub(super) async fn chunk(&mut self) -> Result<Option<Bytes>, Failure> {
        match self.body.data().await {
            None => Ok(None),
            Some(Err(e)) => Err(Failure::H2(e)),
            Some(Ok(chunk)) => {
                // Only fails when the stream is already gone: its next read says so.
                let _ = self.body.flow_control().release_capacity(chunk.len());
                Ok(Some(chunk))
            }
        }
    }
}

impl Connection {
    pub(super) fn new(
        connect_timeout: Duration,
        user_agent: &str,
        server_limit: Arc<AtomicUsize>,
    ) -> Connection {
        Connection {
            connect_timeout,
            user_agent: HeaderValue::from_str(user_agent).ok(),
            current: Mutex::new(None),
            connecting: tokio::sync::Mutex::new(()),
            server_limit,
        }
    }

    /// Sends one request (`body` empty: none, the headers end the stream) and waits for the
    /// response's head.
    ///
    /// What a call's future holds while it waits is kept small (it is most of a call's memory):
    /// the connect is boxed apart (once per connection), and the request's head is built only
    /// once the connection can take it, then handed to h2 at once.
    #[expect(
        clippy::manual_async_fn,
        reason = "an async fn holds its arguments twice in its future"
    )]
    pub(super) fn send<'a>(
        &'a self,
        method: reqwest::Method,
        url: &'a reqwest::Url,
        headers: &'a HeaderMap,
        body: Bytes,
    ) -> impl Future<Output = Result<Reply, Failure>> + 'a {
        // An async block, not an async function: the arguments are held once, not also as the
        // locals an async function binds them to.
        async move {
            let live = match self.current() {
                Some(live) => live,
                None => Box::pin(self.reconnect(url)).await?,
            };
            let Live { send, alive } = live;
            let gone = |e: h2::Error| {
                alive.store(false, Ordering::Release);
                Failure::H2(e)
            };
            let mut send = send.ready().await.map_err(gone)?;
            let request = self.request(method, url, headers, body.len())?;
            let end = body.is_empty();
            let (response, mut stream) = send.send_request(request, end).map_err(gone)?;
            if !end {
                // Buffered by h2 and sent as the server's window allows; `Bytes` is shared, not copied.
                stream.send_data(body, true).map_err(gone)?;
            }
            // `usize::MAX` until the server's SETTINGS arrived: what was seen before stays.
            let limit = send.current_max_send_streams();
            if limit != usize::MAX {
                self.server_limit.store(limit, Ordering::Relaxed);
            }
            drop(send);
            let response = response.await.map_err(|e| {
                if e.is_go_away() || e.is_io() {
                    alive.store(false, Ordering::Release);
                }
                Failure::H2(e)
            })?;
            let (head, body) = response.into_parts();
            Ok(Reply {
                status: head.status.as_u16(),
                headers: head.headers,
                body,
            })
        }
    }

    /// The request's head: the call's headers, the user agent, `accept` and the body's length as
    /// reqwest sends them.
    fn request(
        &self,
        method: reqwest::Method,
        url: &reqwest::Url,
        headers: &HeaderMap,
        length: usize,
    ) -> Result<http::Request<()>, Failure> {
        let mut request = http::Request::new(());
        *request.method_mut() = method;
        *request.uri_mut() = http::Uri::try_from(url.as_str()).map_err(|_| Failure::Uri)?;
        let mut head = HeaderMap::with_capacity(headers.len() + 3);
        for (name, value) in headers {
            head.append(name, value.clone());
        }
        if let Some(agent) = &self.user_agent {
            head.insert(USER_AGENT, agent.clone());
        }
        if !head.contains_key(ACCEPT) {
            head.insert(ACCEPT, HeaderValue::from_static("*/*"));
        }
        if length > 0 {
            head.insert(CONTENT_LENGTH, HeaderValue::from(length));
        }
        *request.headers_mut() = head;
        Ok(request)
    }

    /// The live connection, if there is one and its task still runs.
    fn current(&self) -> Option<Live> {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        current
            .as_ref()
            .filter(|live| live.alive.load(Ordering::Acquire))
            .cloned()
    }

    /// Opens a connection (one call at a time: the others wait for it and share it).
    async fn reconnect(&self, url: &reqwest::Url) -> Result<Live, Failure> {
        let _connecting = self.connecting.lock().await;
        if let Some(live) = self.current() {
            return Ok(live);
        }
        let open = tokio::time::timeout(self.connect_timeout, connect(url))
            .await
            .map_err(|_| Failure::ConnectTimeout)??;
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(open.clone());
        Ok(open)
    }
}

/// A TCP connection to `url`'s host, HTTP/2's preface and settings sent on it, its task spawned.
async fn connect(url: &reqwest::Url) -> Result<Live, Failure> {
    let host = url.host_str().ok_or(Failure::Uri)?;
    let port = url.port_or_known_default().ok_or(Failure::Uri)?;
    let tcp = TcpStream::connect(format!("{host}:{port}"))
        .await
        .map_err(Failure::Connect)?;
    // Requests are small and answered at once: no waiting to fill a segment.
    let _ = tcp.set_nodelay(true);
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .handshake::<_, Bytes>(tcp)
        .await
        .map_err(Failure::Handshake)?;
    let alive = Arc::new(AtomicBool::new(true));
    let flag = alive.clone();
    tokio::spawn(async move {
        // Ends when the server closes or breaks the connection, or when every handle (every lane
        // and call holding it) is dropped.
        if let Err(error) = connection.await {
            debug!(%error, "HTTP/2 connection ended");
        }
        flag.store(false, Ordering::Release);
    });
    Ok(Live { send, alive })
}
