//! Tests: HTTP/2 driven directly (`http_version = "http2"` on plain `http://`) keeps what the
//! transport does through reqwest: a server's lower stream limit respected, a connection the server
//! closed replaced and the call retried, the body limit, typed connect errors, the request's head
//! (user agent, content length, the key) as reqwest sends it. Against h2c servers (the `h2` crate)
//! on 127.0.0.1.

#![cfg(feature = "openai")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use claij_backends::http::{CancelToken, HttpConfig, HttpVersion, RetryPolicy};
use claij_backends::openai::OpenAi;
use claij_backends::{ApiKey, Backend, BodyLimit, Error};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::http::{KEY, assert_no_key, completion, kind, request};

/// A guard against a hang, never a measure of speed.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// What a [`Scripted`] server does with a request.
#[derive(Clone, Copy)]
enum Answer {
    /// A completion, once `hold` requests have arrived (all in flight together).
    Json { hold: usize },
    /// Closes the whole connection without answering.
    Close,
    /// A 200 with `bytes` of body, its length announced or not.
    Big { bytes: usize, announced: bool },
    /// No answer: waits for the client to reset the stream, and counts the reset.
    Hang,
}

/// An h2c server on 127.0.0.1 that lets a connection carry `max_streams` at once and answers each
/// request as `answer(connection number from 0)` says, recording the request heads.
struct Scripted {
    url: String,
    connections: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<http::HeaderMap>>>,
    resets: Arc<AtomicUsize>,
}

impl Scripted {
    async fn start(
        max_streams: u32,
        answer: impl Fn(usize) -> Answer + Send + Sync + 'static,
    ) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (arrived_tx, arrived) = watch::channel(0usize);
        let arrived_tx = Arc::new(arrived_tx);
        let answer = Arc::new(answer);
        let resets = Arc::new(AtomicUsize::new(0));
        let (count, seen, reset) = (connections.clone(), heads.clone(), resets.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let number = count.fetch_add(1, Ordering::SeqCst);
                let (answer, seen, reset) = (answer.clone(), seen.clone(), reset.clone());
                let (arrived_tx, arrived) = (arrived_tx.clone(), arrived.clone());
                tokio::spawn(async move {
                    let mut connection = h2::server::Builder::new()
                        .max_concurrent_streams(max_streams)
                        .handshake::<_, bytes::Bytes>(socket)
                        .await
                        .unwrap();
                    while let Some(Ok((request, mut respond))) = connection.accept().await {
                        let what = answer(number);
                        if matches!(what, Answer::Close) {
                            // Dropping the connection closes the socket under the request.
                            return;
                        }
                        seen.lock().unwrap().push(request.headers().clone());
                        let (arrived_tx, mut arrived) = (arrived_tx.clone(), arrived.clone());
                        let reset = reset.clone();
                        tokio::spawn(async move {
                            if matches!(what, Answer::Hang) {
                                let _ = std::future::poll_fn(|cx| respond.poll_reset(cx)).await;
                                reset.fetch_add(1, Ordering::SeqCst);
                                return;
                            }
                            let mut body = request.into_body();
                            while let Some(Ok(chunk)) = body.data().await {
                                let _ = body.flow_control().release_capacity(chunk.len());
                            }
                            arrived_tx.send_modify(|n| *n += 1);
                            let mut head = http::Response::builder()
                                .status(200)
                                .header("content-type", "application/json");
                            let body = match what {
                                Answer::Json { hold } => {
                                    let _ = arrived.wait_for(|n| *n >= hold).await;
                                    completion(r#"{"answer": "4"}"#).to_string()
                                }
                                Answer::Big { bytes, announced } => {
                                    if announced {
                                        head = head.header("content-length", bytes.to_string());
                                    }
                                    " ".repeat(bytes)
                                }
                                Answer::Close | Answer::Hang => unreachable!(),
                            };
                            let mut send = respond
                                .send_response(head.body(()).unwrap(), false)
                                .unwrap();
                            let _ = send.send_data(bytes::Bytes::from(body), true);
                        });
                    }
                });
            }
        });
        Scripted {
            url,
            connections,
            heads,
            resets,
        }
    }
}

fn config(url: &str) -> HttpConfig {
    HttpConfig::new(url)
        .with_http_version(HttpVersion::Http2)
        .with_request_timeout(HANG_GUARD)
        .with_retry(RetryPolicy::none())
}

fn backend(config: HttpConfig) -> Arc<OpenAi> {
    Arc::new(OpenAi::new(ApiKey::new(KEY)).with_config(config))
}

/// The server allows 2 streams a connection, the backend's cap is 100: once a call has seen the
/// server's SETTINGS, six calls held until all six arrive go over three connections, none queued
/// behind the server's limit (where they would never reach the server, which would never answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_allowing_fewer_streams_than_the_cap_gets_more_connections() {
    let held = Arc::new(AtomicUsize::new(0));
    let first = held.clone();
    let server = Scripted::start(2, move |_| {
        let hold = if first.fetch_add(1, Ordering::SeqCst) == 0 {
            1
        } else {
            7
        };
        Answer::Json { hold }
    })
    .await;
    let backend = backend(config(&server.url).with_streams_per_connection(100));
    backend.complete(&request()).await.unwrap();
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let backend = backend.clone();
            tokio::spawn(async move { backend.complete(&request()).await })
        })
        .collect();
    let all = tokio::time::timeout(HANG_GUARD, futures_util::future::join_all(calls))
        .await
        .expect("no call queued behind the server's stream limit");
    for reply in all {
        reply.unwrap().expect("an answer");
    }
    assert_eq!(server.connections.load(Ordering::SeqCst), 3);
}

/// The server closes the first connection under a request: the call fails over it, and its retry
/// goes over a new connection and is answered.
#[tokio::test]
async fn a_connection_the_server_closed_is_replaced_and_the_call_retried() {
    let server = Scripted::start(100, |connection| {
        if connection == 0 {
            Answer::Close
        } else {
            Answer::Json { hold: 0 }
        }
    })
    .await;
    let retry = RetryPolicy::default()
        .with_max_requests(2)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(1));
    let retried = backend(config(&server.url).with_retry(retry));
    let reply = retried
        .complete(&request())
        .await
        .expect("answered on retry");
    assert_eq!(reply.content, r#"{"answer": "4"}"#);
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
    // Without a retry the broken connection is a typed network error, the key nowhere in it.
    let server = Scripted::start(100, |_| Answer::Close).await;
    let error = backend(config(&server.url))
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "Network", "{error:?}");
    assert!(error.is_retryable(), "{error:?}");
    assert_no_key(&error);
}

/// More than `max_body_bytes`, announced or only sent, is `BodyTooLarge` naming the limit.
#[tokio::test]
async fn the_body_limit_holds_over_direct_http2() {
    for announced in [true, false] {
        let server = Scripted::start(100, move |_| Answer::Big {
            bytes: 64 * 1024,
            announced,
        })
        .await;
        let error = backend(config(&server.url).with_max_body_bytes(1024))
            .complete(&request())
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                Error::BodyTooLarge {
                    which: BodyLimit::Body,
                    limit: 1024,
                    ..
                }
            ),
            "announced {announced}: {error:?}"
        );
    }
}

/// Nobody listening: a typed network error saying it could not connect.
#[tokio::test]
async fn no_server_is_a_typed_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let error = backend(config(&url))
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(kind(&error), "Network", "{error:?}");
    assert!(error.to_string().contains("could not connect"), "{error}");
}

/// The request's head carries what reqwest's does: the key, the user agent, the content type and
/// length, `accept`.
#[tokio::test]
async fn the_request_head_is_as_reqwest_sends_it() {
    let server = Scripted::start(100, |_| Answer::Json { hold: 0 }).await;
    backend(config(&server.url).with_user_agent("claij-test/1"))
        .complete(&request())
        .await
        .unwrap();
    let heads = server.heads.lock().unwrap();
    let head = &heads[0];
    let value = |name: &str| head.get(name).and_then(|v| v.to_str().ok()).unwrap_or("");
    assert_eq!(value("authorization"), format!("Bearer {KEY}"));
    assert_eq!(value("user-agent"), "claij-test/1");
    assert_eq!(value("content-type"), "application/json");
    assert_eq!(value("accept"), "*/*");
    assert!(
        value("content-length").parse::<usize>().unwrap() > 0,
        "{head:?}"
    );
}

/// Waits (bounded by [`HANG_GUARD`]) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    tokio::time::timeout(HANG_GUARD, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}"));
}

/// A call cancelled while the server holds its answer ends with `Cancelled`, and the server sees
/// its stream reset (nothing of the call goes on in the background); the next call goes over the
/// same connection.
#[tokio::test]
async fn a_cancelled_call_resets_its_stream() {
    let server = Scripted::start(100, |_| Answer::Hang).await;
    let backend = backend(config(&server.url));
    let token = CancelToken::new();
    let call = {
        let (backend, token) = (backend.clone(), token.clone());
        tokio::spawn(async move { backend.complete_with(&request(), &token).await })
    };
    until("the request reaches the server", || {
        !server.heads.lock().unwrap().is_empty()
    })
    .await;
    token.cancel();
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(kind(&error), "Cancelled", "{error:?}");
    until("the server sees the stream reset", || {
        server.resets.load(Ordering::SeqCst) == 1
    })
    .await;
    let next = tokio::spawn({
        let backend = backend.clone();
        async move { backend.complete(&request()).await }
    });
    until("the next request reaches the server", || {
        server.heads.lock().unwrap().len() == 2
    })
    .await;
    next.abort();
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
}
