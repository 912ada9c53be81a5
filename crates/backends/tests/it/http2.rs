//! Tests: the HTTP version (`HttpConfig::http_version`) and HTTP/2 lanes against servers on
//! 127.0.0.1: an h2c server (the `h2` crate, prior knowledge) that caps its streams, and a raw
//! socket that records the first bytes a client sends.

#![cfg(feature = "openai")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use claij_backends::http::{HttpConfig, HttpVersion, RetryPolicy};
use claij_backends::openai::OpenAi;
use claij_backends::{ApiKey, Backend, StreamEvent};
use futures_util::StreamExt as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::http::{KEY, completion, request};

/// The most a test waits for all its calls: a guard against a hang (calls queued behind a
/// connection's stream cap never reach the server), never a measure of speed.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// What an [`H2Server`] saw.
#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    requests: AtomicUsize,
}

/// An HTTP/2-only server (h2c, prior knowledge) on 127.0.0.1 that lets each connection carry at
/// most `max_streams` requests at once (`SETTINGS_MAX_CONCURRENT_STREAMS`) and holds every
/// answer until `hold` requests have arrived, so that they are all in flight together.
struct H2Server {
    url: String,
    seen: Arc<Seen>,
}

impl H2Server {
    async fn start(max_streams: u32, hold: usize, stream: bool) -> H2Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Seen::default());
        let (arrived_tx, arrived) = watch::channel(0usize);
        let arrived_tx = Arc::new(arrived_tx);
        let counts = seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    continue;
                };
                counts.connections.fetch_add(1, Ordering::SeqCst);
                let (counts, arrived_tx, arrived) =
                    (counts.clone(), arrived_tx.clone(), arrived.clone());
                tokio::spawn(async move {
                    let mut connection = h2::server::Builder::new()
                        .max_concurrent_streams(max_streams)
                        .handshake::<_, bytes::Bytes>(socket)
                        .await
                        .unwrap();
                    while let Some(Ok((request, mut respond))) = connection.accept().await {
                        let (counts, arrived_tx, mut arrived) =
                            (counts.clone(), arrived_tx.clone(), arrived.clone());
                        tokio::spawn(async move {
                            let mut body = request.into_body();
                            while let Some(Ok(chunk)) = body.data().await {
                                let _ = body.flow_control().release_capacity(chunk.len());
                            }
                            counts.requests.fetch_add(1, Ordering::SeqCst);
                            arrived_tx.send_modify(|n| *n += 1);
                            let chunk = serde_json::json!({
                                "id": "chatcmpl-test", "object": "chat.completion.chunk",
                                "created": 1, "model": "gpt-4o-mini",
                                "choices": [{"index": 0, "delta": {"content": "4"},
                                             "finish_reason": "stop"}]
                            });
                            let content_type = if stream {
                                "text/event-stream"
                            } else {
                                "application/json"
                            };
                            let response = http::Response::builder()
                                .status(200)
                                .header("content-type", content_type)
                                .body(())
                                .unwrap();
                            if stream {
                                // The headers and the first event at once, the end when all have
                                // arrived: the stream holds its connection's place while read.
                                let mut send = respond.send_response(response, false).unwrap();
                                let first = format!("data: {chunk}\n\n");
                                let _ = send.send_data(bytes::Bytes::from(first), false);
                                let _ = arrived.wait_for(|n| *n >= hold).await;
                                let _ =
                                    send.send_data(bytes::Bytes::from("data: [DONE]\n\n"), true);
                            } else {
                                let _ = arrived.wait_for(|n| *n >= hold).await;
                                let reply = completion(r#"{"answer": "4"}"#).to_string();
                                let mut send = respond.send_response(response, false).unwrap();
                                let _ = send.send_data(bytes::Bytes::from(reply), true);
                            }
                        });
                    }
                });
            }
        });
        H2Server { url, seen }
    }
}

fn backend(url: &str, version: HttpVersion, streams: u32) -> OpenAi {
    OpenAi::new(ApiKey::new(KEY)).with_config(
        HttpConfig::new(url)
            .with_retry(RetryPolicy::none())
            .with_request_timeout(HANG_GUARD)
            .with_http_version(version)
            .with_streams_per_connection(streams),
    )
}

/// Ten calls at once, four streams per connection allowed by the server and by the backend: three
/// connections (4 + 4 + 2), every call answered. With one connection six calls would wait behind
/// the server's cap, never reach it, and the server (holding answers until all ten arrive) would
/// never answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_past_the_stream_cap_go_over_another_connection() {
    let server = H2Server::start(4, 10, false).await;
    let backend = Arc::new(backend(&server.url, HttpVersion::Http2, 4));
    let calls: Vec<_> = (0..10)
        .map(|_| {
            let backend = backend.clone();
            tokio::spawn(async move { backend.complete(&request()).await })
        })
        .collect();
    let all = tokio::time::timeout(HANG_GUARD, futures_util::future::join_all(calls))
        .await
        .expect("every call answered: none queued behind a connection's stream cap");
    for reply in all {
        let reply = reply.unwrap().expect("an answer over HTTP/2");
        assert_eq!(reply.content, r#"{"answer": "4"}"#);
    }
    assert_eq!(server.seen.requests.load(Ordering::SeqCst), 10);
    assert_eq!(server.seen.connections.load(Ordering::SeqCst), 3);
}

/// A stream holds its place on a connection until it ends, not only until its headers: three
/// streams at once reading their bodies fill a connection (three streams each), so three more go
/// over a second one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_holds_its_place_on_a_connection_while_read() {
    let server = H2Server::start(3, 6, true).await;
    let backend = Arc::new(backend(&server.url, HttpVersion::Http2, 3));
    let (reading_tx, mut reading) = tokio::sync::mpsc::unbounded_channel();
    let start = |backend: Arc<OpenAi>, reading_tx: tokio::sync::mpsc::UnboundedSender<()>| {
        tokio::spawn(async move {
            let request = request();
            let mut stream = backend.stream(&request);
            let mut events = Vec::new();
            while let Some(event) = stream.next().await {
                events.push(event.map_err(|e| e.to_string())?);
                let _ = reading_tx.send(());
            }
            Ok::<_, String>(events)
        })
    };
    let mut calls: Vec<_> = (0..3)
        .map(|_| start(backend.clone(), reading_tx.clone()))
        .collect();
    let guard = tokio::time::timeout(HANG_GUARD, async {
        for _ in 0..3 {
            reading.recv().await;
        }
    });
    guard
        .await
        .expect("the first three streams deliver their first event");
    calls.extend((0..3).map(|_| start(backend.clone(), reading_tx.clone())));
    let all = tokio::time::timeout(HANG_GUARD, futures_util::future::join_all(calls))
        .await
        .expect("every stream answered: none queued behind a connection's stream cap");
    for events in all {
        let events = events.unwrap().expect("a stream over HTTP/2");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, StreamEvent::Text(text) if text == "4")),
            "{events:?}"
        );
    }
    assert_eq!(server.seen.connections.load(Ordering::SeqCst), 2);
}

/// Sequential calls reuse the first connection: a lane opens only when the others are full.
#[tokio::test]
async fn calls_one_at_a_time_share_one_connection() {
    let server = H2Server::start(100, 0, false).await;
    let backend = backend(&server.url, HttpVersion::Http2, 100);
    for _ in 0..5 {
        backend.complete(&request()).await.unwrap();
    }
    assert_eq!(server.seen.connections.load(Ordering::SeqCst), 1);
    assert_eq!(server.seen.requests.load(Ordering::SeqCst), 5);
}

/// What a client sends to a server that answers one HTTP/1.1 request: the whole request, or the
/// first 24 bytes when they are HTTP/2's preface.
async fn first_bytes(version: HttpVersion) -> Vec<u8> {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut seen = vec![0u8; 24];
        socket.read_exact(&mut seen).await.unwrap();
        if !seen.starts_with(b"PRI * HTTP/2.0") {
            // Read the rest of the request (headers and the JSON body), then answer it.
            let mut rest = vec![0u8; 64 * 1024];
            let mut all = seen.clone();
            while !all.ends_with(b"}") {
                let n = socket.read(&mut rest).await.unwrap();
                if n == 0 {
                    break;
                }
                all.extend_from_slice(&rest[..n]);
            }
            let body = completion(r#"{"answer": "4"}"#).to_string();
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(reply.as_bytes()).await.unwrap();
            return all;
        }
        seen
    });
    let backend = backend(&url, version, 100);
    let _ = tokio::time::timeout(HANG_GUARD, backend.complete(&request())).await;
    server.await.unwrap()
}

/// `http1` and `auto` on plain `http://` speak HTTP/1.1; `http2` opens with HTTP/2's preface
/// (prior knowledge).
#[tokio::test]
async fn the_version_decides_what_is_spoken_on_plain_http() {
    for (version, http2) in [
        (HttpVersion::Http1, false),
        (HttpVersion::Auto, false),
        (HttpVersion::Http2, true),
    ] {
        let seen = first_bytes(version).await;
        assert_eq!(
            seen.starts_with(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
            http2,
            "{version}: {:?}",
            String::from_utf8_lossy(&seen)
        );
        if !http2 {
            assert!(seen.starts_with(b"POST /v1/chat/completions HTTP/1.1\r\n"));
        }
    }
}

/// `http1` against an HTTP/2-only server: the call fails (a typed error), it never speaks HTTP/2.
#[tokio::test]
async fn http1_never_speaks_http2() {
    let server = H2Server::start(100, 0, false).await;
    let backend = backend(&server.url, HttpVersion::Http1, 100);
    let reply = tokio::time::timeout(HANG_GUARD, backend.complete(&request()))
        .await
        .expect("no hang");
    assert!(reply.is_err(), "{reply:?}");
    assert_eq!(server.seen.requests.load(Ordering::SeqCst), 0);
}

#[test]
fn versions_parse_and_print_as_the_configuration_writes_them() {
    for version in HttpVersion::ALL {
        assert_eq!(version.name().parse::<HttpVersion>(), Ok(version));
    }
    let refused = "h2".parse::<HttpVersion>().unwrap_err();
    assert!(
        refused.contains("\"auto\", \"http1\" or \"http2\""),
        "{refused}"
    );
    assert_eq!(HttpVersion::default(), HttpVersion::Auto);
}
