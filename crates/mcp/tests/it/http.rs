//! Streamable HTTP against `server-everything streamableHttp`, and `mcp-server-fetch` reading a page
//! from a local HTTP server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::hash::{BuildHasher as _, RandomState};
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use claij_mcp::{CallFailure, ClientOptions, Error, HttpServer, McpClient, Restart};
use serde_json::json;

use crate::servers;

/// A port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `server-everything` over streamable HTTP, a child of the test, killed when dropped.
struct HttpEverything {
    child: Child,
    port: u16,
    url: String,
}

impl HttpEverything {
    fn start(dir: &Path) -> Self {
        Self::start_on(dir, free_port())
    }

    fn start_on(dir: &Path, port: u16) -> Self {
        let script =
            dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        let child = Command::new("node")
            .arg(script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Polls the port (the server says nothing when it listens); the limit only catches a hang.
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < servers::HANG_GUARD,
                "server-everything did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
        Self {
            child,
            port,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        self.kill();
    }
}

#[tokio::test]
async fn calls_over_streamable_http() {
    let Some(dir) = servers::require("calls_over_streamable_http") else {
        return;
    };
    let server = HttpEverything::start(&dir);
    let client = McpClient::connect(
        "web",
        HttpServer::new(&server.url),
        ClientOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(client.protocol_version(), "2025-11-25");
    assert_eq!(
        client.server_info().implementation.as_deref(),
        Some("mcp-servers/everything")
    );
    assert_eq!(client.pid(), None, "no process of ours");
    assert!(client.tool("echo").is_some());
    let echo = client
        .call("echo", json!({"message": "over http"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "Echo: over http");
    let sums = futures_util::future::join_all(
        (0..20).map(|i| client.call("get-sum", json!({"a": i, "b": i}))),
    )
    .await;
    for (i, sum) in sums.into_iter().enumerate() {
        assert_eq!(
            sum.unwrap().text(),
            format!("The sum of {i} and {i} is {}.", 2 * i)
        );
    }
    let bad = client.call("echo", json!({"message": 1})).await.unwrap();
    assert!(
        matches!(bad.failure, Some(CallFailure::InvalidArguments { .. })),
        "{bad}"
    );
    let resources = client.resources().await.unwrap();
    assert!(!resources.is_empty());
    client.close().await;
    assert!(!client.is_alive());
}

#[tokio::test]
async fn an_http_server_killed_mid_call_is_an_error_not_a_hang() {
    let Some(dir) = servers::require("an_http_server_killed_mid_call_is_an_error_not_a_hang")
    else {
        return;
    };
    let mut server = HttpEverything::start(&dir);
    let (plain, once_progressed) = servers::signalling_progress(ClientOptions::default());
    let (restarting, again_progressed) = servers::signalling_progress(
        ClientOptions::default().with_restart(Restart::up_to(1, Duration::from_millis(100))),
    );
    let (once, again) = tokio::join!(
        McpClient::connect("web", HttpServer::new(&server.url), plain),
        McpClient::connect("web", HttpServer::new(&server.url), restarting),
    );
    let (once, again) = (once.unwrap(), again.unwrap());
    // Longer than the guard below, with progress every 0.1 s: the kill comes once both calls are
    // under way, and a client that missed it would wait for its own 30 s timeout (a `Timeout`).
    let long = json!({"duration": 600, "steps": 6000});
    let calls = async {
        tokio::join!(
            once.call("trigger-long-running-operation", long.clone()),
            again.call("trigger-long-running-operation", long.clone()),
        )
    };
    let kill = async {
        tokio::join!(once_progressed.notified(), again_progressed.notified());
        server.kill();
    };
    let ((first, second), ()) =
        tokio::time::timeout(servers::HANG_GUARD, async { tokio::join!(calls, kill) })
            .await
            .expect("a call hangs after the server was killed");
    for result in [&first, &second] {
        assert!(
            matches!(result, Err(Error::Dead { server, .. }) if server == "web"),
            "{result:?}"
        );
    }
    assert!(!once.is_alive() && !again.is_alive());
    assert!(once.death().is_some());

    // Later calls fail at once: `Dead`, not a connection attempt ending in a timeout.
    let next = tokio::time::timeout(
        servers::HANG_GUARD,
        once.call("echo", json!({"message": "hello?"})),
    )
    .await
    .expect("a call to a gone server hangs");
    assert!(matches!(next, Err(Error::Dead { .. })), "{next:?}");

    // With a restart policy, the client connects again once the server is back.
    let _back = HttpEverything::start_on(&dir, server.port);
    let echo = again
        .call("echo", json!({"message": "back"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "Echo: back");
    assert_eq!(again.restarts(), 1);
    assert!(again.is_alive());
    tokio::join!(once.close(), again.close());
}

/// Serves `token` on `/page` (and 404 elsewhere, robots.txt included) from a thread; returns the
/// page's URL.
fn serve_page(token: &str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let page = format!(
        "<html><head><title>Token</title></head><body><h1>Token</h1><p>{token}</p></body></html>"
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                match reader.read_line(&mut header) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if header.trim().is_empty() => break,
                    Ok(_) => {}
                }
            }
            let (status, body) = if request_line.starts_with("GET /page ") {
                ("200 OK", page.as_str())
            } else {
                ("404 Not Found", "not here")
            };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    format!("http://127.0.0.1:{port}/page")
}

#[tokio::test]
async fn fetch_reads_a_local_page_when_allowed() {
    let Some(dir) = servers::require("fetch_reads_a_local_page_when_allowed") else {
        return;
    };
    let token = format!(
        "tok-{:016x}",
        RandomState::new().hash_one(std::process::id())
    );
    let url = serve_page(&token);
    let (allowed, refused) = tokio::join!(
        servers::connect("fetch", servers::fetch(&dir, true)),
        servers::connect("fetch", servers::fetch(&dir, false)),
    );
    // A page on loopback: only a hang reaches this, not a loaded machine.
    let slow = Some(servers::HANG_GUARD);
    let (page, no) = tokio::join!(
        allowed.call_with_timeout("fetch", json!({"url": url}), slow),
        refused.call_with_timeout("fetch", json!({"url": url}), slow),
    );
    let page = page.unwrap();
    assert!(!page.is_error, "{page}");
    assert!(page.text().contains(&token), "{page}");
    let no = no.unwrap();
    assert_eq!(no.failure, Some(CallFailure::Tool), "{no}");
    assert!(no.text().contains("--allow-private-ips"), "{no}");
    tokio::join!(allowed.close(), refused.close());
}

/// A server that cannot be reached fails the connection with an error that names the server and
/// never the URL's user info or query string (where tokens hide).
#[tokio::test]
async fn an_unreachable_url_is_an_error_without_its_secrets() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // The listener is dropped: nothing answers on the port.
    let url = format!("http://ada:hunter2@127.0.0.1:{port}/mcp?token=s3cr3t");
    let mut options = ClientOptions::default();
    options.connect_timeout = Duration::from_secs(5);
    let err = McpClient::connect("remote", HttpServer::new(url), options)
        .await
        .unwrap_err();
    let shown = format!("{err} / {err:?}");
    assert_eq!(err.server(), Some("remote"), "{shown}");
    assert!(
        !shown.contains("s3cr3t") && !shown.contains("hunter2"),
        "{shown}"
    );
}

#[tokio::test]
async fn an_http_answer_over_the_size_limit_fails_at_once_naming_the_limit() {
    let Some(dir) =
        servers::require("an_http_answer_over_the_size_limit_fails_at_once_naming_the_limit")
    else {
        return;
    };
    let server = HttpEverything::start(&dir);
    let options = ClientOptions::default().with_max_message_bytes(64 * 1024);
    let client = McpClient::connect("web", HttpServer::new(&server.url), options)
        .await
        .unwrap();
    let fits = client
        .call("echo", json!({"message": "y".repeat(60_000)}))
        .await
        .unwrap();
    assert_eq!(fits.text().len(), "Echo: ".len() + 60_000);
    let call = client.call("echo", json!({"message": "y".repeat(100_000)}));
    let result = tokio::time::timeout(servers::HANG_GUARD, call)
        .await
        .expect("the oversized answer waits for a timeout");
    // rmcp's HTTP transport drops the request without saying why: the error names the limit.
    let Err(Error::Dead { server, reason }) = &result else {
        panic!("not Dead: {result:?}");
    };
    assert_eq!(server, "web");
    assert_eq!(
        reason,
        "the connection closed (as it does on an answer over the limit of 65536 bytes, maxMessageBytes)"
    );
    client.close().await;
}
