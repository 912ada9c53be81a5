//! SEP-1699 over streamable HTTP: when a server closes a call's SSE stream gracefully before the
//! answer, the client waits the stream's `retry` interval and resumes with a GET that carries
//! `Last-Event-ID`, where the answer comes.
//!
//! No SDK server closes a stream on purpose, so the server here is a few lines of HTTP/1.1 on tokio,
//! playing what the conformance suite's `sse-retry` scenario plays.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::sync::{Arc, Mutex};
use std::time::Duration;

use claij_mcp::{ClientOptions, HttpServer, McpClient, StartMode};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// The `retry` the server asks for: longer than any backoff of the client's own (100 ms, doubling
/// up to 1 s), so a client that ignores it reconnects too early.
const RETRY: Duration = Duration::from_millis(3000);
/// The id of the only event on the call's stream (the priming event).
const PRIMING_ID: &str = "call-1";

/// What the server saw, in order.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    /// A POST of this JSON-RPC method.
    Post(String),
    /// The call's stream closed (gracefully), at this instant.
    Closed(Instant),
    /// A GET, with its `Last-Event-ID`, at this instant.
    Get(Option<String>, Instant),
}

#[derive(Default)]
struct State {
    seen: Vec<Seen>,
    /// The call to answer on the resumed stream.
    pending: Option<Value>,
}

type Shared = Arc<Mutex<State>>;

async fn serve(listener: TcpListener, state: Shared) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(connection(socket, Arc::clone(&state)));
    }
}

/// One request per connection (every response says `Connection: close`).
async fn connection(socket: TcpStream, state: Shared) {
    let mut reader = BufReader::new(socket);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).await.unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await.unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut socket = reader;
    if request_line.starts_with("GET") {
        let last_event_id = header("last-event-id");
        let pending = {
            let mut state = state.lock().unwrap();
            state
                .seen
                .push(Seen::Get(last_event_id.clone(), Instant::now()));
            state.pending.take()
        };
        match (last_event_id.as_deref(), pending) {
            (Some(PRIMING_ID), Some(id)) => {
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": "resumed"}]}});
                sse_head(&mut socket).await;
                chunk(&mut socket, &format!("id: call-2\ndata: {answer}\n\n")).await;
                // Stays open until the client lets go.
                let mut rest = [0_u8; 64];
                while matches!(socket.read(&mut rest).await, Ok(n) if n > 0) {}
            }
            // No standalone stream: the resumed GET is the only one this server serves.
            _ => respond(&mut socket, "405 Method Not Allowed", "", "").await,
        }
        return;
    }
    let length: usize = header("content-length").unwrap().parse().unwrap();
    let mut body = vec![0; length];
    socket.read_exact(&mut body).await.unwrap();
    let message: Value = serde_json::from_slice(&body).unwrap();
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    state.lock().unwrap().seen.push(Seen::Post(method.clone()));
    let id = message.get("id").cloned();
    let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    match (method.as_str(), &id) {
        (_, None) => respond(&mut socket, "202 Accepted", "", "").await,
        ("initialize", _) => {
            let result = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "sse-retry", "version": "1.0.0"}});
            respond(&mut socket, "200 OK", "application/json", &reply(result)).await;
        }
        ("tools/list", _) => {
            let tools = json!({"tools": [{"name": "test_reconnection",
                "inputSchema": {"type": "object", "properties": {}}}]});
            respond(&mut socket, "200 OK", "application/json", &reply(tools)).await;
        }
        ("tools/call", Some(id)) => {
            state.lock().unwrap().pending = Some(id.clone());
            sse_head(&mut socket).await;
            let retry = RETRY.as_millis();
            chunk(
                &mut socket,
                &format!("id: {PRIMING_ID}\nretry: {retry}\ndata: \n\n"),
            )
            .await;
            state
                .lock()
                .unwrap()
                .seen
                .push(Seen::Closed(Instant::now()));
            // The last chunk: the response ends as it should, not with a broken connection.
            socket.write_all(b"0\r\n\r\n").await.unwrap();
            socket.flush().await.unwrap();
        }
        _ => {
            let error = json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}});
            respond(
                &mut socket,
                "200 OK",
                "application/json",
                &error.to_string(),
            )
            .await;
        }
    }
}

async fn respond(socket: &mut BufReader<TcpStream>, status: &str, kind: &str, body: &str) {
    let kind = if kind.is_empty() {
        String::new()
    } else {
        format!("Content-Type: {kind}\r\n")
    };
    let head = format!(
        "HTTP/1.1 {status}\r\n{kind}mcp-session-id: s-1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    socket.write_all(body.as_bytes()).await.unwrap();
    socket.flush().await.unwrap();
}

async fn sse_head(socket: &mut BufReader<TcpStream>) {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
                mcp-session-id: s-1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    socket.write_all(head.as_bytes()).await.unwrap();
}

async fn chunk(socket: &mut BufReader<TcpStream>, data: &str) {
    let framed = format!("{:x}\r\n{data}\r\n", data.len());
    socket.write_all(framed.as_bytes()).await.unwrap();
    socket.flush().await.unwrap();
}

// The clock is paused: the retry interval passes as soon as nothing else can happen, and the
// instants the server records are that clock's, so the wait is measured without real time.
#[tokio::test(start_paused = true)]
async fn a_call_stream_closed_gracefully_resumes_with_get_after_the_retry_interval() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let state = Shared::default();
    let server = tokio::spawn(serve(listener, Arc::clone(&state)));

    let options = ClientOptions::default().with_start(StartMode::Initialize);
    let client = McpClient::connect("sse", HttpServer::new(&url), options)
        .await
        .unwrap();
    let outcome = client.call("test_reconnection", json!({})).await.unwrap();
    assert!(!outcome.is_error, "{outcome}");
    assert_eq!(outcome.text(), "resumed");

    let seen = state.lock().unwrap().seen.clone();
    let close = seen
        .iter()
        .position(|s| matches!(s, Seen::Closed(_)))
        .expect("the call's stream was closed");
    let Seen::Closed(closed) = seen[close] else {
        unreachable!()
    };
    // (A standalone GET before the call, without Last-Event-ID, is refused with 405.)
    let resumed: Vec<(Option<String>, Instant)> = seen[close..]
        .iter()
        .filter_map(|s| match s {
            Seen::Get(id, at) => Some((id.clone(), *at)),
            _ => None,
        })
        .collect();
    assert_eq!(
        resumed
            .iter()
            .map(|(id, _)| id.as_deref())
            .collect::<Vec<_>>(),
        [Some(PRIMING_ID)],
        "one GET after the close, with Last-Event-ID: {seen:?}"
    );
    let waited = resumed[0].1 - closed;
    assert!(
        waited >= RETRY,
        "reconnected after {waited:?}, before the retry of {RETRY:?}"
    );
    assert!(
        seen.contains(&Seen::Post("tools/call".to_owned())),
        "{seen:?}"
    );
    client.close().await;
    server.abort();
}
