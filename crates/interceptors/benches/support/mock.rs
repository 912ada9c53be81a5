//! An OpenAI-like chat completions server on 127.0.0.1 for the call benches (these, and
//! claij-backends' `http` bench, which includes this file): HTTP/1.1 keep-alive,
//! its own thread and single-threaded runtime (so its CPU can be told apart from the client's), a
//! fixed latency per request, replies from a list taken in turn (say an invalid one, then a valid
//! one, for a retry). Dropping it stops it.

#![allow(
    dead_code,
    clippy::expect_used,
    reason = "each bench uses part of it; a bench fails loudly"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

/// A running mock server.
pub(crate) struct Mock {
    /// The base URL, up to `/v1`.
    pub(crate) url: String,
    stop: Option<oneshot::Sender<()>>,
    cpu: mpsc::UnboundedSender<std::sync::mpsc::Sender<Duration>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Mock {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Mock {
    /// A server answering each request after `latency` with the next of `contents` (cycling), each
    /// as the content of an OpenAI chat completion.
    pub(crate) fn start(latency: Duration, contents: Vec<String>) -> Self {
        Self::start_on(latency, contents, None)
    }

    /// [`Mock::start`] with the server's thread pinned to `cpu` when given.
    pub(crate) fn start_on(latency: Duration, contents: Vec<String>, cpu: Option<usize>) -> Self {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel();
        let (cpu_tx, mut cpu_rx) = mpsc::unbounded_channel::<std::sync::mpsc::Sender<Duration>>();
        let thread = std::thread::spawn(move || {
            if let Some(cpu) = cpu {
                pin_thread(Some(cpu));
            }
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the mock's runtime");
            runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind the mock");
                ready_tx
                    .send(listener.local_addr().expect("its address"))
                    .expect("ready");
                let replies: Arc<[Vec<u8>]> = contents.iter().map(|c| response(c)).collect();
                let next = Arc::new(AtomicUsize::new(0));
                let accept = async {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            continue;
                        };
                        tokio::spawn(serve(stream, latency, replies.clone(), next.clone()));
                    }
                };
                let answer_cpu = async {
                    while let Some(reply) = cpu_rx.recv().await {
                        let _ = reply.send(thread_cpu());
                    }
                };
                tokio::select! {
                    () = accept => {}
                    () = answer_cpu => {}
                    _ = stop_rx => {}
                }
            });
        });
        let address = ready_rx.recv().expect("the mock started");
        Self {
            url: format!("http://{address}/v1"),
            stop: Some(stop_tx),
            cpu: cpu_tx,
            thread: Some(thread),
        }
    }

    /// The CPU time the server's thread has used so far.
    pub(crate) fn cpu(&self) -> Duration {
        let (tx, rx) = std::sync::mpsc::channel();
        self.cpu.send(tx).expect("the mock runs");
        rx.recv().expect("the mock answers")
    }
}

/// Pins the calling thread to one CPU, or with `None` lets it run on any again (Linux; elsewhere
/// nothing).
#[allow(unsafe_code, reason = "sched_setaffinity reads a CPU set it is given")]
pub(crate) fn pin_thread(cpu: Option<usize>) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: an all-zero cpu_set_t is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let all = 0..libc::CPU_SETSIZE as usize;
        for c in cpu.map_or(all, |c| c..c + 1) {
            // SAFETY: `c` is below CPU_SETSIZE, so the bit is inside `set`.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        // SAFETY: `set` is a valid cpu_set_t of the size given; pid 0 is the calling thread.
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        assert_eq!(rc, 0, "sched_setaffinity failed");
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpu;
}

/// A chat completion carrying `content`, as OpenAI sends it, with its HTTP head.
pub(crate) fn response(content: &str) -> Vec<u8> {
    let body = json!({
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1_741_569_952,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": null, "annotations": []},
            "logprobs": null,
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 142, "completion_tokens": 18, "total_tokens": 160},
        "system_fingerprint": "fp_bench"
    })
    .to_string();
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         x-request-id: req_bench\r\n\r\n",
        body.len()
    );
    [head.into_bytes(), body.into_bytes()].concat()
}

/// Answers requests on one keep-alive connection until the client closes it.
async fn serve(
    mut stream: TcpStream,
    latency: Duration,
    replies: Arc<[Vec<u8>]>,
    next: Arc<AtomicUsize>,
) {
    let _ = stream.set_nodelay(true);
    let mut buffer = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let length = loop {
            if let Some(length) = complete_request(&buffer) {
                break length;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        buffer.drain(..length);
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let reply = &replies[next.fetch_add(1, Ordering::Relaxed) % replies.len()];
        if stream.write_all(reply).await.is_err() {
            return;
        }
    }
}

/// The length of the first complete request in `buffer` (head and `content-length` body).
pub(crate) fn complete_request(buffer: &[u8]) -> Option<usize> {
    let end = buffer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&buffer[..end]).ok()?;
    let body = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let total = end + 4 + body;
    (buffer.len() >= total).then_some(total)
}

/// User plus system CPU time of the calling thread (`getrusage(RUSAGE_THREAD)`).
pub(crate) fn thread_cpu() -> Duration {
    rusage(libc::RUSAGE_THREAD)
}

/// User plus system CPU time of the whole process (`getrusage(RUSAGE_SELF)`).
pub(crate) fn process_cpu() -> Duration {
    rusage(libc::RUSAGE_SELF)
}

#[allow(unsafe_code, reason = "getrusage fills a struct it is given")]
fn rusage(who: libc::c_int) -> Duration {
    // SAFETY: an all-zero rusage is a valid value, and getrusage writes only into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage for the duration of the call.
    let rc = unsafe { libc::getrusage(who, &mut usage) };
    assert_eq!(rc, 0, "getrusage failed");
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

#[path = "../../../../fixtures/fixture.rs"]
mod fixtures;

/// A file of the repository's bench fixtures (`fixtures/bench`), as text.
pub(crate) fn fixture(name: &str) -> String {
    fixtures::text(&format!("fixtures/bench/{name}"))
}
