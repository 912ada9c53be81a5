//! The load bench's processes: mock servers in child processes sharing one port on 127.0.0.1
//! (`SO_REUSEPORT`: the kernel spreads the client's connections over them), speaking HTTP/1.1 or
//! HTTP/2 without TLS (h2c, prior knowledge, at most [`MOCK_STREAMS`] streams per connection), and
//! the guards that stop every child by its PID when the bench ends, fails or panics.
//!
//! A child is the bench's own executable re-run with `CLAIJ_LOAD_ROLE` set (`mock`, or `client` for
//! the load client, which `load.rs` runs). Each child also dies with the bench (`PR_SET_PDEATHSIG`),
//! and a mock stops when its standard input closes, so none outlives a killed bench.

#![allow(
    dead_code,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a bench fails loudly; children talk to the bench over stdout"
)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::mock::{complete_request, process_cpu, response};

/// The variable that gives a child its role.
pub(crate) const ROLE: &str = "CLAIJ_LOAD_ROLE";

/// Set to a file name, the client runs under `heaptrack -o FILE` (where a call's memory goes:
/// `heaptrack_print -f FILE.zst`); its figures then include heaptrack's overhead.
pub(crate) const HEAPTRACK: &str = "CLAIJ_LOAD_HEAPTRACK";
const LATENCY_MS: &str = "CLAIJ_LOAD_LATENCY_MS";
const PORT: &str = "CLAIJ_LOAD_PORT";
const REPLY: &str = "CLAIJ_LOAD_REPLY";
const WIRE: &str = "CLAIJ_LOAD_WIRE";

/// The most streams an HTTP/2 mock lets one connection carry at once
/// (`SETTINGS_MAX_CONCURRENT_STREAMS`), as a provider's server does (100 to 256).
pub(crate) const MOCK_STREAMS: u32 = 100;

/// The HTTP version between the load client and the mocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// HTTP/1.1: one connection per call in flight.
    Http1,
    /// HTTP/2 without TLS (prior knowledge): many calls per connection.
    Http2,
}

impl Wire {
    /// As the variables and the report write it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Wire::Http1 => "http1",
            Wire::Http2 => "http2",
        }
    }

    /// As a row's label writes it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Wire::Http1 => "HTTP/1.1",
            Wire::Http2 => "HTTP/2",
        }
    }

    /// The wire `name` names.
    pub(crate) fn named(name: &str) -> Wire {
        match name {
            "http1" => Wire::Http1,
            "http2" => Wire::Http2,
            other => panic!("unknown wire {other:?} (expected http1 or http2)"),
        }
    }
}

/// The pending connections one mock's listener holds (the kernel caps it at `net.core.somaxconn`).
const BACKLOG: u32 = 16 * 1024;

/// A child process, killed (by its PID) and reaped when dropped.
pub(crate) struct Spawned {
    pub(crate) child: Child,
    what: String,
}

impl Spawned {
    /// Spawns `command`, naming it `what` in errors.
    pub(crate) fn spawn(mut command: Command, what: impl Into<String>) -> Spawned {
        let what = what.into();
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the {what}: {e}"));
        Spawned { child, what }
    }

    /// The command that re-runs this bench as `role`.
    pub(crate) fn command(role: &str) -> Command {
        let exe = std::env::current_exe().expect("the bench's own executable");
        let mut command = match std::env::var_os(HEAPTRACK) {
            Some(out) if role == "client" => {
                let mut heaptrack = Command::new("heaptrack");
                heaptrack.arg("-o").arg(out).arg(exe);
                heaptrack
            }
            _ => Command::new(exe),
        };
        command.env(ROLE, role).stderr(Stdio::inherit());
        command
    }

    /// Waits for the child's exit for at most `limit`; past it the child is killed and the bench
    /// panics naming it, never hangs.
    pub(crate) fn wait(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(None) => panic!(
                    "the {} (pid {}) did not finish within {} s; killed",
                    self.what,
                    self.child.id(),
                    limit.as_secs()
                ),
                Err(e) => panic!("cannot wait for the {}: {e}", self.what),
            }
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // `Child::kill` sends SIGKILL to this child's PID only.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What the mocks say of themselves, summed over the fleet.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MockStats {
    pub(crate) answered: u64,
    pub(crate) connections: u64,
    /// User + system CPU of the mock processes.
    pub(crate) cpu: Duration,
    /// The time past the latency from a request read to its reply written, summed and at most.
    pub(crate) added_sum: Duration,
    pub(crate) added_max: Duration,
}

impl MockStats {
    /// The change from `before` to `self` (the maximum is the fleet's since it started).
    pub(crate) fn since(self, before: MockStats) -> MockStats {
        MockStats {
            answered: self.answered - before.answered,
            connections: self.connections - before.connections,
            cpu: self.cpu.saturating_sub(before.cpu),
            added_sum: self.added_sum.saturating_sub(before.added_sum),
            added_max: self.added_max,
        }
    }
}

struct MockProcess {
    process: Spawned,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// `count` mock processes answering on one port of 127.0.0.1 after `latency`; dropping it kills
/// them.
pub(crate) struct Fleet {
    /// The base URL, up to `/v1`.
    pub(crate) url: String,
    mocks: Vec<MockProcess>,
}

impl Fleet {
    /// Starts the mocks, each answering every request with `content` as a chat completion over
    /// `wire`.
    pub(crate) fn start(count: usize, latency: Duration, content: &str, wire: Wire) -> Fleet {
        let mut fleet = Fleet {
            url: String::new(),
            mocks: Vec::with_capacity(count),
        };
        let mut port = 0u16;
        for index in 0..count {
            let mut command = Spawned::command("mock");
            command
                .env(LATENCY_MS, latency.as_millis().to_string())
                .env(PORT, port.to_string())
                .env(REPLY, content)
                .env(WIRE, wire.name())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped());
            // A local guard: a mock that fails to start is killed while the bench unwinds.
            let mut process = Spawned::spawn(command, format!("mock process {index}"));
            let stdin = process.child.stdin.take().expect("piped");
            let mut stdout = BufReader::new(process.child.stdout.take().expect("piped"));
            let mut line = String::new();
            stdout.read_line(&mut line).expect("the mock's port");
            let bound: u16 = line.trim().parse().unwrap_or_else(|_| {
                panic!("mock process {index} did not start (it said {line:?})")
            });
            if index == 0 {
                port = bound;
            }
            fleet.mocks.push(MockProcess {
                process,
                stdin,
                stdout,
            });
        }
        fleet.url = format!("http://127.0.0.1:{port}/v1");
        fleet
    }

    /// The mocks' counts so far.
    pub(crate) fn stats(&mut self) -> MockStats {
        let mut sum = MockStats::default();
        for (index, mock) in self.mocks.iter_mut().enumerate() {
            writeln!(mock.stdin, "stats").expect("ask a mock for its counts");
            mock.stdin.flush().expect("ask a mock for its counts");
            let mut line = String::new();
            mock.stdout.read_line(&mut line).expect("a mock's counts");
            let value: Value = serde_json::from_str(&line)
                .unwrap_or_else(|_| panic!("mock process {index} said {line:?}"));
            let number = |name: &str| value[name].as_u64().expect("a count");
            sum.answered += number("answered");
            sum.connections += number("connections");
            sum.cpu += Duration::from_micros(number("cpu_us"));
            sum.added_sum += Duration::from_micros(number("added_sum_us"));
            sum.added_max = sum
                .added_max
                .max(Duration::from_micros(number("added_max_us")));
        }
        sum
    }

    /// The PIDs of the mocks.
    pub(crate) fn pids(&self) -> Vec<u32> {
        self.mocks.iter().map(|m| m.process.child.id()).collect()
    }
}

/// Makes a child process die when the bench does (Linux).
#[allow(unsafe_code, reason = "prctl with integer arguments")]
pub(crate) fn die_with_parent() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_PDEATHSIG takes a signal number and touches no memory.
        let _ = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    }
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (children inherit it) and returns the soft
/// limit now in force, and the hard one.
#[allow(
    unsafe_code,
    reason = "getrlimit/setrlimit fill and read a struct they are given"
)]
pub(crate) fn raise_open_files() -> (u64, u64) {
    // SAFETY: an all-zero rlimit is a valid value; getrlimit writes only into it.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `limit` is a valid, writable rlimit.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    assert_eq!(rc, 0, "getrlimit(RLIMIT_NOFILE) failed");
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: `raised` is a valid rlimit read by the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    (limit.rlim_cur, limit.rlim_max)
}

/// The peak resident set of this process (`VmHWM`) and the current one (`VmRSS`), in bytes.
pub(crate) fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().strip_suffix("kB"))
            .and_then(|kb| kb.trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// The mock process: binds `CLAIJ_LOAD_PORT` on 127.0.0.1 (0: any) with `SO_REUSEPORT`, prints
/// the port, answers until its standard input closes, and prints its counts as a JSON line for each
/// `stats` line it reads.
pub(crate) fn mock_main() {
    die_with_parent();
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    let latency = Duration::from_millis(var(LATENCY_MS).parse().expect("a latency in ms"));
    let port: u16 = var(PORT).parse().expect("a port");
    let reply: Arc<[u8]> = response(&var(REPLY)).into();
    let wire = Wire::named(&var(WIRE));
    // HTTP/2 sends the body alone, its status and headers as a HEADERS frame.
    let body = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| bytes::Bytes::copy_from_slice(&reply[at + 4..]))
        .expect("the reply's body");
    let stats = Arc::new(Counts::default());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the mock's runtime");
    let listener = runtime.block_on(async {
        let socket = TcpSocket::new_v4().expect("a socket");
        socket.set_reuseport(true).expect("SO_REUSEPORT");
        socket
            .bind(([127, 0, 0, 1], port).into())
            .expect("bind the mock");
        socket.listen(BACKLOG).expect("listen")
    });
    let bound = listener.local_addr().expect("its address").port();
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{bound}").expect("say the port");
        out.flush().expect("say the port");
    }
    let counts = stats.clone();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            match line {
                Ok(line) if line.trim() == "stats" => {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{}", counts.json());
                    let _ = out.flush();
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        // The bench closed our stdin (it ended, or died): stop.
        std::process::exit(0);
    });
    runtime.block_on(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            stats.connections.fetch_add(1, Ordering::Relaxed);
            match wire {
                Wire::Http1 => tokio::spawn(serve(stream, latency, reply.clone(), stats.clone())),
                Wire::Http2 => tokio::spawn(serve_h2(stream, latency, body.clone(), stats.clone())),
            };
        }
    });
}

#[derive(Default)]
struct Counts {
    answered: AtomicU64,
    connections: AtomicU64,
    added_sum_us: AtomicU64,
    added_max_us: AtomicU64,
}

impl Counts {
    fn json(&self) -> Value {
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        json!({
            "answered": get(&self.answered),
            "connections": get(&self.connections),
            "cpu_us": u64::try_from(process_cpu().as_micros()).unwrap_or(u64::MAX),
            "added_sum_us": get(&self.added_sum_us),
            "added_max_us": get(&self.added_max_us),
        })
    }
}

/// Answers requests on one keep-alive connection until the client closes it.
async fn serve(mut stream: TcpStream, latency: Duration, reply: Arc<[u8]>, counts: Arc<Counts>) {
    let _ = stream.set_nodelay(true);
    // Small: ten thousand connections each hold one.
    let mut buffer = Vec::with_capacity(4 * 1024);
    loop {
        let length = loop {
            if let Some(length) = complete_request(&buffer) {
                break length;
            }
            if buffer.capacity() - buffer.len() < 1024 {
                buffer.reserve(4 * 1024);
            }
            match stream.read_buf(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        };
        buffer.drain(..length);
        let read = Instant::now();
        tokio::time::sleep(latency).await;
        if stream.write_all(&reply).await.is_err() {
            return;
        }
        let added =
            u64::try_from(read.elapsed().saturating_sub(latency).as_micros()).unwrap_or(u64::MAX);
        counts.answered.fetch_add(1, Ordering::Relaxed);
        counts.added_sum_us.fetch_add(added, Ordering::Relaxed);
        counts.added_max_us.fetch_max(added, Ordering::Relaxed);
    }
}

/// Answers the streams of one HTTP/2 connection (h2c, prior knowledge), each after `latency`,
/// until the client closes it.
async fn serve_h2(stream: TcpStream, latency: Duration, body: bytes::Bytes, counts: Arc<Counts>) {
    let _ = stream.set_nodelay(true);
    let handshake = h2::server::Builder::new()
        .max_concurrent_streams(MOCK_STREAMS)
        .handshake::<_, bytes::Bytes>(stream)
        .await;
    let Ok(mut connection) = handshake else {
        return;
    };
    while let Some(Ok((request, mut respond))) = connection.accept().await {
        let (body, counts) = (body.clone(), counts.clone());
        tokio::spawn(async move {
            let mut incoming = request.into_body();
            while let Some(Ok(chunk)) = incoming.data().await {
                let _ = incoming.flow_control().release_capacity(chunk.len());
            }
            let read = Instant::now();
            tokio::time::sleep(latency).await;
            let response = http::Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .header("content-length", body.len())
                .header("x-request-id", "req_bench")
                .body(())
                .expect("a response head");
            let Ok(mut send) = respond.send_response(response, false) else {
                return;
            };
            if send.send_data(body, true).is_err() {
                return;
            }
            let added = u64::try_from(read.elapsed().saturating_sub(latency).as_micros())
                .unwrap_or(u64::MAX);
            counts.answered.fetch_add(1, Ordering::Relaxed);
            counts.added_sum_us.fetch_add(added, Ordering::Relaxed);
            counts.added_max_us.fetch_max(added, Ordering::Relaxed);
        });
    }
}
