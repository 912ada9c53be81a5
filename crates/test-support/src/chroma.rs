//! A Chroma vector database server for a test, from the cache `cargo xtask chroma` fills
//! (`$CLAIJ_CHROMA`): [`start_or_skip`] starts one on a free loopback port with its data in a
//! directory of its own, waits for its heartbeat, and the [`Server`] kills it (its PID only) and
//! removes the directory when dropped. A missing install skips the test, saying so, except under
//! CI ([`crate::is_ci`]), where it fails it; a server that does not start fails the test with the
//! end of its log.
//!
//! ```no_run
//! let Some(server) = claij_test_support::chroma::start_or_skip("my_test") else {
//!     return;
//! };
//! let url = server.url(); // http://127.0.0.1:<port>
//! # let _ = url;
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::net::free_ports;
use crate::server::{ServerProcess, WAIT_LIMIT, get, venv_install_or_skip, venv_python};

/// The variable naming the cache.
pub const VAR: &str = "CLAIJ_CHROMA";
/// The heartbeat the server answers once it is ready.
pub const HEARTBEAT: &str = "/api/v2/heartbeat";

/// A running Chroma server, killed (by its PID) and its data removed when dropped.
#[derive(Debug)]
pub struct Server {
    // Dropped in this order: the process killed first, then its directory removed.
    process: ServerProcess,
    dir: Dir,
    port: u16,
}

/// A directory removed when dropped.
#[derive(Debug)]
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The install (`$CLAIJ_CHROMA`, else the default cache), or `None` when it is missing: the test
/// `test` is skipped, saying to run `cargo xtask chroma`.
///
/// # Panics
///
/// Under CI, when the install is missing.
pub fn install_or_skip(test: &str) -> Option<PathBuf> {
    venv_install_or_skip(test, VAR, "chroma", "cargo xtask chroma")
}

/// A server started from the install ([`install_or_skip`]), or `None` (skipped) when there is none.
///
/// # Panics
///
/// Under CI when the install is missing; when the server does not start (with its log).
pub fn start_or_skip(test: &str) -> Option<Server> {
    install_or_skip(test).map(|install| Server::start(&install))
}

/// The command that runs the server of `install` on `port` of 127.0.0.1, its data in `data`:
/// `<install>/venv/bin/python -I -c "import chromadb_rust_bindings; chromadb_rust_bindings.cli([...])"`
/// (the wheel's `chroma` script imports the Python client, whose dependencies the install leaves
/// out), with no `CHROMA_*` variable of the developer's.
pub fn command(install: &Path, data: &Path, port: u16) -> Command {
    let mut command = Command::new(venv_python(install));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("CHROMA_") {
            command.env_remove(&name);
        }
    }
    let args = [
        "chroma".to_owned(),
        "run".to_owned(),
        "--path".to_owned(),
        data.display().to_string(),
        "--host".to_owned(),
        "127.0.0.1".to_owned(),
        "--port".to_owned(),
        port.to_string(),
    ];
    let list = args
        .iter()
        .map(|a| format!("'{}'", a.replace('\\', "\\\\").replace('\'', "\\'")))
        .collect::<Vec<_>>()
        .join(", ");
    command.args([
        "-I",
        "-c",
        &format!("import chromadb_rust_bindings; chromadb_rust_bindings.cli([{list}])"),
    ]);
    command
}

impl Server {
    /// Starts the server of `install` on a free port of 127.0.0.1, its data and log in a new
    /// temporary directory, and waits until `GET /api/v2/heartbeat` answers 200.
    ///
    /// # Panics
    ///
    /// The server cannot be started, exits, or does not answer within the wait's bound: the
    /// message holds the end of its log.
    #[allow(clippy::unwrap_used, reason = "a test harness fails the test loudly")]
    pub fn start(install: &Path) -> Server {
        let [port] = free_ports().unwrap();
        let dir = Dir(std::env::temp_dir().join(format!(
            "claij-chroma-{}-{port}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        )));
        let data = dir.0.join("data");
        std::fs::create_dir_all(&data).unwrap();
        let log = dir.0.join("chroma.log");
        let out = std::fs::File::create(&log).unwrap();
        let err = out.try_clone().unwrap();
        let child = command(install, &data, port)
            .current_dir(&dir.0)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start Chroma ({}): {e}",
                    venv_python(install).display()
                )
            });
        let mut server = Server {
            process: ServerProcess::new("Chroma", child, &log),
            dir,
            port,
        };
        server.process.wait_for_within(
            "Chroma's answer 200 to GET /api/v2/heartbeat",
            WAIT_LIMIT,
            || {
                get(port, HEARTBEAT)
                    .is_some_and(|(s, _)| s == 200)
                    .then_some(())
            },
        );
        server
    }

    /// Its base URL: `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The directory of its data and log (removed on drop).
    pub fn dir(&self) -> &Path {
        &self.dir.0
    }

    /// The end of its log, for a failure message.
    pub fn log_tail(&self) -> String {
        self.process.log_tail()
    }
}

#[cfg(test)]
mod tests;
