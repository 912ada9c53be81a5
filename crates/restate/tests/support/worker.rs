//! [`Worker`]: a Restate worker (the endpoint Restate calls, say `claij serve restate`) run as a
//! child process on a fixed loopback port, so a test can kill it with SIGKILL mid-run and start it
//! again where Restate expects it.

use std::fs::File;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use super::{START_LIMIT, TempDir, free_ports, log_tail, poll, test_name};

/// Builds the worker's command for a port; the command must serve on 127.0.0.1 at that port.
type MakeCommand = Box<dyn Fn(u16) -> Command + Send + Sync>;

/// A worker process listening on 127.0.0.1:[`Worker::port`]; killed with SIGKILL when dropped.
pub(crate) struct Worker {
    make: MakeCommand,
    port: u16,
    child: Option<Child>,
    /// Its stdout and stderr, appended across restarts.
    log: PathBuf,
    /// Holds the log; dropped last.
    dir: TempDir,
}

impl Worker {
    /// Picks a free port, runs `make(port)` and waits until the worker accepts connections there.
    ///
    /// # Panics
    ///
    /// When the worker exits or does not listen within the start limit (quoting its output).
    #[track_caller]
    pub(crate) fn spawn(make: impl Fn(u16) -> Command + Send + Sync + 'static) -> Worker {
        let dir = TempDir::new("restate-worker");
        let [port] = free_ports::<1>();
        let mut worker = Worker {
            make: Box::new(make),
            port,
            child: None,
            log: dir.path().join("worker.log"),
            dir,
        };
        worker.start();
        worker
    }

    /// The port it serves on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`, the deployment URI to register with Restate.
    pub(crate) fn uri(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The running process's PID, if it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Its output so far, across restarts.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills it with SIGKILL (no chance to finish anything) and reaps it.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills it if it runs, then starts it again on the same port and waits until it listens.
    #[track_caller]
    pub(crate) fn restart(&mut self) {
        self.kill();
        self.start();
    }

    #[track_caller]
    fn start(&mut self) {
        let mut command = (self.make)(self.port);
        let out = File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        command
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let child = command.spawn().unwrap_or_else(|err| {
            panic!(
                "{}: cannot start the worker {command:?}: {err}",
                test_name()
            )
        });
        let child = self.child.insert(child);
        let port = self.port;
        let listening = poll(START_LIMIT, || {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(Err(status));
            }
            TcpStream::connect(("127.0.0.1", port)).ok().map(|_| Ok(()))
        });
        let problem = match listening {
            Some(Ok(())) => return,
            Some(Err(status)) => format!("exited ({status})"),
            None => format!("did not listen on 127.0.0.1:{port} within {START_LIMIT:?}"),
        };
        self.kill();
        panic!(
            "{}: the worker {command:?} {problem}; {}",
            test_name(),
            log_tail(&self.log)
        );
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "{}: the test failed; the worker on port {} {}",
                test_name(),
                self.port,
                log_tail(&self.log)
            );
        }
        self.kill();
    }
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("port", &self.port)
            .field("pid", &self.pid())
            .field("log", &self.log)
            .finish_non_exhaustive()
    }
}
