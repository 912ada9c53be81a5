//! A command an install step runs that can take minutes (pip building llama.cpp, pip installing
//! Phoenix, npm): its output goes to a log file in the cache as it comes, and a heartbeat line every
//! [`HEARTBEAT`] says it is alive, how long it has run and where its output is, so an install is
//! never silent for minutes.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::test::format_duration;

/// How often a command still running says so.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(30);
/// How often the command's exit is checked.
const POLL: Duration = Duration::from_millis(100);

/// When to say that a command is still running: every `every` of its run.
#[derive(Debug)]
pub(crate) struct Heartbeat {
    every: Duration,
    next: Duration,
}

impl Heartbeat {
    /// The first beat `every` after the start; none if `every` is zero.
    pub(crate) fn new(every: Duration) -> Heartbeat {
        Heartbeat { every, next: every }
    }

    /// Whether a beat is due `elapsed` after the start. At most one per call: the next is due
    /// `every` after the last one that was due (beats missed while the caller was busy are not
    /// made up).
    pub(crate) fn due(&mut self, elapsed: Duration) -> bool {
        if self.every.is_zero() || elapsed < self.next {
            return false;
        }
        while self.next <= elapsed {
            self.next += self.every;
        }
        true
    }
}

/// What a finished command printed, and how it ended.
#[derive(Debug)]
pub(crate) struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// A short name for `command`, for its log file and heartbeat: `pip install` for
/// `python -m pip install ...`, `npm install`, `venv`, `python`.
pub(crate) fn label(command: &Command) -> String {
    let args: Vec<&OsStr> = command.get_args().collect();
    let word = |arg: Option<&&OsStr>| {
        arg.and_then(|a| a.to_str())
            .filter(|a| !a.is_empty() && a.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
            .filter(|a| !a.starts_with('-'))
            .map(str::to_owned)
    };
    let (first, rest) = match args.first().and_then(|a| a.to_str()) {
        Some("-m") => (word(args.get(1)), args.get(2)),
        _ => (
            Path::new(command.get_program())
                .file_name()
                .and_then(|name| name.to_str())
                .map(str::to_owned),
            args.first(),
        ),
    };
    let first = first.unwrap_or_else(|| "command".to_owned());
    match word(rest) {
        Some(second) => format!("{first} {second}"),
        None => first,
    }
}

/// Runs `command` (stdin closed, stdout and stderr piped), copying its output to `log` (created
/// anew, under a first line that shows the command as `shown`) as it comes while keeping it, and
/// calls `say` with a heartbeat line every `every` until it exits.
///
/// # Errors
///
/// The log cannot be written or the command cannot be started (the error says which).
pub(crate) fn run_logged(
    command: &mut Command,
    shown: &str,
    log: &Path,
    every: Duration,
    say: &mut dyn FnMut(String),
) -> io::Result<Finished> {
    let open = || -> io::Result<File> {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = File::create(log)?;
        writeln!(file, "$ {shown}")?;
        Ok(file)
    };
    // Not `NotFound` (which the caller takes for a missing program): the log is what failed.
    let file =
        open().map_err(|e| io::Error::other(format!("cannot write {}: {e}", log.display())))?;
    let file = Arc::new(Mutex::new(file));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let copy = |pipe: Option<Box<dyn io::Read + Send>>| {
        let file = Arc::clone(&file);
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let Some(mut pipe) = pipe else {
                return kept;
            };
            let mut chunk = [0u8; 8192];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                kept.extend_from_slice(&chunk[..n]);
                let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
                // A log that cannot be written loses lines, not the command's output.
                let _ = file.write_all(&chunk[..n]);
                let _ = file.flush();
            }
            kept
        })
    };
    let stdout = copy(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = copy(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let mut heartbeat = Heartbeat::new(every);
    let what = label(command);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        let elapsed = started.elapsed();
        if heartbeat.due(elapsed) {
            say(format!(
                "{what}: still running after {}; its output so far: {}",
                format_duration(elapsed),
                log.display()
            ));
        }
        std::thread::sleep(POLL.min(every.max(Duration::from_millis(1))));
    };
    let joined = |handle: std::thread::JoinHandle<Vec<u8>>| handle.join().unwrap_or_default();
    Ok(Finished {
        status,
        stdout: joined(stdout),
        stderr: joined(stderr),
    })
}
