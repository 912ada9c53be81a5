//! A minimal HTTP/1.0 client over `std::net` for the server's admin and ingress APIs: one request
//! per connection, the server closes it when done, so no chunked bodies and no dependency.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// How long one request may wait for its answer (a deployment's registration calls the worker).
const READ_LIMIT: Duration = Duration::from_secs(600);

/// A response: its status and its body as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) body: String,
}

/// `method path` on 127.0.0.1:`port`, with `body` as JSON when given; `None` when nothing answers
/// (refused, reset, or not HTTP).
pub(crate) fn request(port: u16, method: &str, path: &str, body: Option<&str>) -> Option<Response> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(READ_LIMIT)).ok()?;
    let mut head = format!("{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n");
    if let Some(body) = body {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).ok()?;
    if let Some(body) = body {
        stream.write_all(body.as_bytes()).ok()?;
    }
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    parse(&response)
}

/// `GET path`: the status, or `None` when nothing answers.
pub(crate) fn get_status(port: u16, path: &str) -> Option<u16> {
    request(port, "GET", path, None).map(|response| response.status)
}

fn parse(bytes: &[u8]) -> Option<Response> {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some(Response {
        status,
        body: body.to_owned(),
    })
}
