//! A bound on one message from a stdio server: [`LimitedReader`] sits between the server's stdout and
//! rmcp's line reader. A line within the limit passes unchanged. A longer one is cut at the limit (a
//! newline ends the part already passed on, which rmcp then drops as unparsable), the rest is read
//! and thrown away without being kept, and when it is the answer to a request (it has a top-level `id`
//! and no `method`) a JSON-RPC error naming the size and the limit is put in its place, so the request
//! fails at once instead of waiting for its timeout. rmcp's own limit (16 MiB, dropped silently) is
//! set above this one.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher as _;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};
use tracing::{debug, warn};

/// The JSON-RPC error code of the answer put in place of an oversized one (implementation-defined
/// server error range). Recognised by the nonce in its data, not by the code.
const TOO_LARGE_CODE: i32 = -32_000;
/// The key of the error's data that holds the nonce and the sizes.
const DATA_KEY: &str = "claijMessageTooLarge";
/// Longest top-level key or `id` kept while scanning.
const KEY_CAP: usize = 16;
const ID_CAP: usize = 128;
/// Bytes read from the server at a time.
const CHUNK: usize = 64 * 1024;

/// What the connection shares with its reader: the limit, the nonce of its synthetic errors, and
/// how far an oversized message being thrown away has got.
#[derive(Debug)]
pub(crate) struct Limit {
    bytes: usize,
    nonce: u64,
    discarding: AtomicU64,
}

/// An oversized message, as the synthetic error reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Oversized {
    /// Bytes of the message seen (all of it, or as far as it had come when the error was sent).
    pub size: u64,
    /// The limit.
    pub limit: usize,
}

impl Limit {
    pub(crate) fn new(bytes: usize) -> Arc<Self> {
        Arc::new(Self {
            bytes,
            nonce: RandomState::new().hash_one(std::process::id()),
            discarding: AtomicU64::new(0),
        })
    }

    /// The limit, in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The oversized message a JSON-RPC error's `data` reports, when this reader sent it (a server
    /// cannot guess the nonce).
    pub(crate) fn recognise(&self, data: Option<&Value>) -> Option<Oversized> {
        let report = data?.get(DATA_KEY)?;
        (report.get("nonce")?.as_u64()? == self.nonce).then(|| Oversized {
            size: report.get("bytes").and_then(Value::as_u64).unwrap_or(0),
            limit: self.bytes,
        })
    }

    /// The message being thrown away right now, if any (a server still sending it when a request
    /// times out).
    pub(crate) fn in_progress(&self) -> Option<Oversized> {
        match self.discarding.load(Ordering::SeqCst) {
            0 => None,
            size => Some(Oversized {
                size,
                limit: self.bytes,
            }),
        }
    }
}

/// The stream of lines, each within the limit.
pub(crate) struct LimitedReader<R> {
    inner: R,
    lines: Lines,
    raw: Box<[u8]>,
    out: Vec<u8>,
    pos: usize,
}

impl<R> LimitedReader<R> {
    pub(crate) fn new(inner: R, limit: Arc<Limit>, server: &str) -> Self {
        Self {
            inner,
            lines: Lines::new(limit, server),
            raw: vec![0; CHUNK].into_boxed_slice(),
            out: Vec::new(),
            pos: 0,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LimitedReader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.pos < this.out.len() {
                let n = (this.out.len() - this.pos).min(buf.remaining());
                buf.put_slice(&this.out[this.pos..this.pos + n]);
                this.pos += n;
                return Poll::Ready(Ok(()));
            }
            this.out.clear();
            this.pos = 0;
            let mut raw = ReadBuf::new(&mut this.raw);
            match Pin::new(&mut this.inner).poll_read(cx, &mut raw) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(err)) => return Poll::Ready(Err(err)),
                Poll::Ready(Ok(())) => {
                    let read = raw.filled();
                    if read.is_empty() {
                        // End of stream.
                        return Poll::Ready(Ok(()));
                    }
                    this.lines.feed(read, &mut this.out);
                }
            }
        }
    }
}

/// The pure part: bytes in, bytes out, one line at a time.
pub(crate) struct Lines {
    limit: Arc<Limit>,
    server: String,
    /// Bytes of the current line so far (without its newline).
    len: u64,
    /// The current line passed the limit.
    over: bool,
    /// Its error has been put out.
    answered: bool,
    scan: Scan,
}

impl Lines {
    pub(crate) fn new(limit: Arc<Limit>, server: &str) -> Self {
        Self {
            limit,
            server: server.to_owned(),
            len: 0,
            over: false,
            answered: false,
            scan: Scan::default(),
        }
    }

    /// Appends to `out` what rmcp is to see of `input`.
    pub(crate) fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        while !input.is_empty() {
            let newline = input.iter().position(|b| *b == b'\n');
            let (line, rest) = match newline {
                Some(i) => (&input[..i], &input[i + 1..]),
                None => (input, &[][..]),
            };
            self.scan.feed(line);
            if !self.over {
                let room = (self.limit.bytes as u64).saturating_sub(self.len);
                if line.len() as u64 <= room {
                    out.extend_from_slice(line);
                } else {
                    // `room` fits in usize: it is at most the limit.
                    out.extend_from_slice(&line[..usize::try_from(room).unwrap_or(0)]);
                    out.push(b'\n');
                    self.over = true;
                }
            }
            self.len += line.len() as u64;
            if self.over {
                self.limit
                    .discarding
                    .store(self.len.max(1), Ordering::SeqCst);
                if !self.answered && self.scan.is_response() {
                    self.answer(out);
                }
            }
            if newline.is_some() {
                self.end_line(out);
            }
            input = rest;
        }
    }

    fn end_line(&mut self, out: &mut Vec<u8>) {
        if self.over {
            self.limit.discarding.store(0, Ordering::SeqCst);
            if !self.answered && !self.scan.has_method {
                self.answer(out);
            }
            if !self.answered {
                let what = if self.scan.has_method {
                    "a request or notification"
                } else {
                    "a message without an id"
                };
                warn!(
                    server = self.server,
                    size = self.len,
                    limit = self.limit.bytes,
                    what,
                    "mcp server sent a message over the size limit; dropped"
                );
            }
        } else {
            out.push(b'\n');
        }
        self.len = 0;
        self.over = false;
        self.answered = false;
        self.scan = Scan::default();
    }

    /// Puts out the error answering the oversized response's request.
    fn answer(&mut self, out: &mut Vec<u8>) {
        let Some(id) = self.scan.id() else { return };
        self.answered = true;
        // The request fails with an error saying this: a warning would say it twice.
        debug!(
            server = self.server,
            size = self.len,
            limit = self.limit.bytes,
            "mcp server answered with a message over the size limit; the request fails"
        );
        let error = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": TOO_LARGE_CODE,
                "message": format!(
                    "the answer is {} bytes or more, over the limit of {} bytes",
                    self.len, self.limit.bytes
                ),
                "data": {DATA_KEY: {"nonce": self.limit.nonce, "bytes": self.len, "limit": self.limit.bytes}},
            }
        });
        out.extend_from_slice(error.to_string().as_bytes());
        out.push(b'\n');
    }
}

/// Which top-level key a value belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Key {
    #[default]
    Other,
    Id,
}

/// Just enough of a JSON tokenizer to find a message's top-level `id`, and whether it has a `method`
/// (a request or notification) or a `result`/`error` (a response), in one pass, keeping O(1) state.
#[derive(Debug, Default)]
struct Scan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    expect_key: bool,
    in_key: bool,
    key: Vec<u8>,
    current: Key,
    capturing_id: bool,
    id: Vec<u8>,
    id_done: bool,
    has_method: bool,
    has_result: bool,
}

impl Scan {
    fn feed(&mut self, mut bytes: &[u8]) {
        while let Some((&b, rest)) = bytes.split_first() {
            let plain = !matches!(b, b'"' | b'\\');
            if plain && self.in_string && !self.in_key && !self.capturing_id && !self.escaped {
                // The fast path: the inside of a long string value, up to its next quote or escape.
                match rest.iter().position(|c| matches!(c, b'"' | b'\\')) {
                    Some(i) => bytes = &rest[i..],
                    None => return,
                }
                continue;
            }
            self.byte(b);
            bytes = rest;
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            self.capture(b);
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.in_key {
                    self.in_key = false;
                    self.end_key();
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.in_key = true;
                    self.key.clear();
                } else {
                    self.capture(b);
                }
            }
            b'{' | b'[' => {
                self.capture(b);
                self.depth = self.depth.saturating_add(1);
                if self.depth == 1 {
                    self.expect_key = b == b'{';
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_id();
                } else {
                    self.capture(b);
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 => {
                self.expect_key = false;
                if self.current == Key::Id && !self.id_done {
                    self.capturing_id = true;
                    self.id.clear();
                }
            }
            b',' if self.depth == 1 => {
                self.end_id();
                self.expect_key = true;
            }
            b' ' | b'\t' | b'\r' => {}
            _ => self.capture(b),
        }
    }

    fn capture(&mut self, b: u8) {
        if self.in_key {
            if self.key.len() <= KEY_CAP {
                self.key.push(b);
            }
        } else if self.capturing_id && self.id.len() <= ID_CAP {
            self.id.push(b);
        }
    }

    fn end_key(&mut self) {
        // The closing quote was captured.
        let key = self.key.strip_suffix(b"\"").unwrap_or(&self.key);
        self.current = match key {
            b"id" => Key::Id,
            b"method" => {
                self.has_method = true;
                Key::Other
            }
            b"result" | b"error" => {
                self.has_result = true;
                Key::Other
            }
            _ => Key::Other,
        };
    }

    fn end_id(&mut self) {
        if self.capturing_id {
            self.capturing_id = false;
            self.id_done = true;
        }
    }

    /// The `id`, when it is complete and a number or a string.
    fn id(&self) -> Option<Value> {
        if !self.id_done || self.id.len() > ID_CAP {
            return None;
        }
        serde_json::from_slice::<Value>(&self.id)
            .ok()
            .filter(|id| id.is_number() || id.is_string())
    }

    /// Whether this is known to be an answer to one of our requests, with its id.
    fn is_response(&self) -> bool {
        self.id_done && self.has_result && !self.has_method
    }
}

#[cfg(test)]
mod tests;
