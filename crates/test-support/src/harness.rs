//! Running a binary of the workspace as its integration tests do: [`run`] isolates it from the
//! developer's configuration and data, feeds it stdin and collects a [`Run`]; [`Files`], a temporary
//! directory of a test's own; [`assert_one_line_error`], how a failure must look.
//!
//! ```no_run
//! use claij_test_support::harness::{Files, run};
//!
//! let files = Files::new(&[("schema.json", r#"{"type": "object"}"#)]);
//! let schema = files.path("schema.json");
//! let out = run("claij", &["validate", "--schema", &schema, "-"], "{}", &[]);
//! assert_eq!(out.code, 0, "{}", out.stderr);
//! ```

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What a run printed and how it ended.
#[derive(Debug)]
pub struct Run {
    /// The exit code (-1 when a signal ended it).
    pub code: i32,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// Runs `program` with `args`, `stdin` and environment changes: `(name, Some(value))` sets,
/// `(name, None)` removes. Unless `env` names them, the developer's configuration (`CLAIJ_CONFIG`,
/// `XDG_CONFIG_HOME`) and data directory (imported prices, the compatibility matrix) are out of the
/// run's sight.
///
/// # Panics
///
/// The program cannot be started, or its output is not UTF-8: the test fails.
#[allow(clippy::unwrap_used, reason = "a test harness fails the test loudly")]
pub fn run(
    program: impl AsRef<Path>,
    args: &[&str],
    stdin: &str,
    env: &[(&str, Option<&str>)],
) -> Run {
    let mut command = Command::new(program.as_ref());
    let names = |names: &[&str]| env.iter().any(|(name, _)| names.contains(name));
    if !names(&["CLAIJ_CONFIG", "XDG_CONFIG_HOME", "HOME"]) {
        command.env_remove("CLAIJ_CONFIG").env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("claij-tests-no-config"),
        );
    }
    if !names(&["XDG_DATA_HOME", "HOME"]) {
        command.env(
            "XDG_DATA_HOME",
            std::env::temp_dir().join("claij-tests-no-data"),
        );
    }
    for (name, value) in env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let mut child = command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let written = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    // A run that fails before reading stdin (a missing schema file) may close it first.
    if let Err(e) = written {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// A temporary directory with the given files, removed on drop.
#[derive(Debug)]
pub struct Files(pub PathBuf);

impl Files {
    /// A new directory holding `files` (name, text).
    ///
    /// # Panics
    ///
    /// The directory or a file cannot be written: the test fails.
    #[allow(clippy::unwrap_used, reason = "a test harness fails the test loudly")]
    pub fn new(files: &[(&str, &str)]) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "claij-tests-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        Self(dir)
    }

    /// The path of `name` in it, as text for a command line.
    pub fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The run ended with `code` and one line on stderr holding `part`, without a panic.
#[track_caller]
pub fn assert_one_line_error(run: &Run, code: i32, part: &str) {
    assert_eq!(run.code, code, "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(part), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}
