//! End-to-end tests of the `claij-suite` binary (the suites `cargo xtask integration` runs) against
//! a mock OpenRouter: exit codes, the JSON records on stdout, stderr.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

mod conformance;
mod local_model;
mod openrouter;
mod suite;

/// What a run printed and how it ended.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn claij_suite(args: &[&str], stdin: &str) -> Run {
    claij_suite_env(args, stdin, &[])
}

/// Runs `claij-suite` with environment changes: `(name, Some(value))` sets, `(name, None)` removes.
fn claij_suite_env(args: &[&str], stdin: &str, env: &[(&str, Option<&str>)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_claij-suite"));
    // A developer's own configuration must not change what the tests see: unless a test says where
    // the configuration is, there is none.
    if !env
        .iter()
        .any(|(name, _)| matches!(*name, "CLAIJ_CONFIG" | "XDG_CONFIG_HOME" | "HOME"))
    {
        command.env_remove("CLAIJ_CONFIG").env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("claij-tests-no-config"),
        );
    }
    // Nor the developer's data directory (imported prices, the compatibility matrix).
    if !env
        .iter()
        .any(|(name, _)| matches!(*name, "XDG_DATA_HOME" | "HOME"))
    {
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
    // A run that fails before reading stdin may close it first.
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
struct Files(PathBuf);

impl Files {
    fn new(files: &[(&str, &str)]) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "claij-suite-{}-{}",
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

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[track_caller]
fn assert_one_line_error(run: &Run, code: i32, part: &str) {
    assert_eq!(run.code, code, "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(part), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}
