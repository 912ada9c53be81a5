//! `cargo xtask collector`: a real OpenTelemetry collector for the CLI's tracing test, Arize Phoenix
//! (`arize-phoenix`, pinned, with every dependency pinned by `collector/constraints.txt`), installed
//! with pip into a venv in a cache outside the repository.
//!
//! Phoenix receives OTLP over HTTP (`/v1/traces`, protobuf) and stores the spans in SQLite, where its
//! REST API (`GET /v1/projects/{project}/spans`) reads them back: the test sends `claij`'s spans there
//! and asserts what arrived.
//!
//! The layout is a contract with that test, which finds the cache through `CLAIJ_COLLECTOR`:
//! `<dir>/venv/bin/python` imports `phoenix`, and `<dir>/installed.json`
//! (`{"arize-phoenix": "<version>"}`) vouches for it: deleted before the venv changes, written last,
//! once the installed version is verified. `<dir>/constraints.txt` is the copy of the constraints
//! the venv was installed with; when the repository's differ, the venv is installed again.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};

use crate::cache;
use crate::mcp_servers::{capture, remove_if_present, write_atomically};
use crate::test::format_duration;

/// The distribution and its pinned version.
const DISTRIBUTION: &str = "arize-phoenix";
const VERSION: &str = "20.26.1";
/// Every other package pip installs with it, at the version it had when the pin was chosen.
const CONSTRAINTS: &str = include_str!("collector/constraints.txt");
/// The Python versions the pinned Phoenix supports (its `Requires-Python`), as (major, minor).
const PYTHON_OLDEST: (u32, u32) = (3, 11);
const PYTHON_NEWEST: (u32, u32) = (3, 14);
/// The stamp in the cache directory.
const STAMP: &str = "installed.json";
/// The copy of [`CONSTRAINTS`] the venv was installed with, in the cache directory.
const CONSTRAINTS_FILE: &str = "constraints.txt";
/// Prints the installed version of the distribution, after importing the server's entry point (so
/// a broken install fails here, not in the test).
const VERIFY_PY: &str = "import importlib.metadata as m, phoenix.server.main; \
    print(m.version('arize-phoenix'))";
/// Prints `major minor` of the running Python.
const PYTHON_VERSION_PY: &str = "import sys; print(*sys.version_info[:2])";

pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    let (dir, force) = match cache::COLLECTOR.dir_args("collector", args) {
        Ok(parsed) => parsed,
        Err(message) => return crate::usage_error(&message),
    };
    ensure_in(&dir, force)?;
    println!("{}", dir.display());
    Ok(ExitCode::SUCCESS)
}

/// [`collector_dir`], with the pinned collector installed and verified first if it is not.
pub(crate) fn ensure() -> Result<PathBuf> {
    let dir = collector_dir();
    ensure_in(&dir, false)?;
    Ok(dir)
}

/// The collector cache, absolute: `$CLAIJ_COLLECTOR`, else `$XDG_CACHE_HOME/claij/collector`,
/// else `$HOME/.cache/claij/collector` (else the temp dir's `claij/collector`).
pub(crate) fn collector_dir() -> PathBuf {
    cache::COLLECTOR.dir()
}

/// The stamp's text for `version`.
fn stamp_text(version: &str) -> String {
    let mut object = serde_json::Map::new();
    object.insert(DISTRIBUTION.to_owned(), version.into());
    serde_json::to_string_pretty(&serde_json::Value::Object(object)).unwrap_or_default() + "\n"
}

/// Whether `dir` holds the pinned collector, installed with the current constraints; if not, why.
fn check(dir: &Path) -> Result<(), String> {
    let stamp = dir.join(STAMP);
    let Ok(text) = fs::read_to_string(&stamp) else {
        return Err("not installed yet".to_owned());
    };
    let installed = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get(DISTRIBUTION)?.as_str().map(str::to_owned));
    match installed {
        None => Err(format!("{} is malformed", stamp.display())),
        Some(version) if version != VERSION => {
            Err(format!("installed {version} (pinned {VERSION})"))
        }
        Some(_)
            if fs::read_to_string(dir.join(CONSTRAINTS_FILE))
                .ok()
                .as_deref()
                != Some(CONSTRAINTS) =>
        {
            Err("installed with other constraints".to_owned())
        }
        Some(_) if !python(dir).is_file() => Err(format!("{} is missing", python(dir).display())),
        Some(_) => Ok(()),
    }
}

/// The venv's python, which imports `phoenix`.
fn python(dir: &Path) -> PathBuf {
    dir.join("venv").join("bin").join("python")
}

fn ensure_in(dir: &Path, force: bool) -> Result<()> {
    let problem = if force {
        "--force".to_owned()
    } else {
        match check(dir) {
            Ok(()) => return Ok(()),
            Err(problem) => problem,
        }
    };
    println!(
        "collector: {problem}: installing {DISTRIBUTION}=={VERSION} and its pinned dependencies \
         (about 850 MB; a minute or two)"
    );
    let started = Instant::now();
    install(dir)?;
    println!(
        "collector: installed and verified in {}",
        format_duration(started.elapsed())
    );
    Ok(())
}

/// Rebuilds `<dir>/venv` in place (a venv cannot move), the stamp removed first and written last.
fn install(dir: &Path) -> Result<()> {
    let system_python = system_python()?;
    fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create the collector cache {}: set CLAIJ_COLLECTOR to a writable directory",
            dir.display()
        )
    })?;
    remove_if_present(&dir.join(STAMP))?;
    let venv = dir.join("venv");
    if fs::symlink_metadata(&venv).is_ok() {
        fs::remove_dir_all(&venv)
            .with_context(|| format!("cannot remove the old venv {}", venv.display()))?;
    }
    let mut create = Command::new(system_python);
    create.args(["-m", "venv"]).arg(&venv);
    capture(&mut create, dir).map_err(|err| {
        anyhow!("{err:#}\ncannot create a venv: on Debian and Ubuntu, install python3-venv")
    })?;
    let constraints = dir.join(CONSTRAINTS_FILE);
    write_atomically(&constraints, CONSTRAINTS)?;
    let mut pip = Command::new(python(dir));
    pip.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        "--cache-dir",
    ])
    .arg(dir.join("pip-cache"))
    .arg("--constraint")
    .arg(&constraints)
    .arg(format!("{DISTRIBUTION}=={VERSION}"));
    capture(&mut pip, dir).map_err(|err| {
        anyhow!("{err:#}\ncheck the network and pip's index settings (pip config list)")
    })?;
    let mut verify = Command::new(python(dir));
    verify.args(["-I", "-c", VERIFY_PY]);
    let version = capture(&mut verify, dir)?.trim().to_owned();
    if version != VERSION {
        bail!("pip installed {DISTRIBUTION} {version}, not the pinned {VERSION}");
    }
    write_atomically(&dir.join(STAMP), &stamp_text(&version))
}

/// `python3` (else `python`) when it is a Python the pinned Phoenix supports; else an error saying
/// what to install.
fn system_python() -> Result<&'static str> {
    let mut found = Vec::new();
    for program in ["python3", "python"] {
        let mut command = Command::new(program);
        command.args(["-I", "-c", PYTHON_VERSION_PY]);
        let Ok(output) = command.output() else {
            continue;
        };
        let Some(version) = output
            .status
            .success()
            .then(|| parse_python_version(&String::from_utf8_lossy(&output.stdout)))
            .flatten()
        else {
            continue;
        };
        if supported(version) {
            return Ok(program);
        }
        found.push(format!("`{program}` is {}.{}", version.0, version.1));
    }
    let (oldest, newest) = (PYTHON_OLDEST, PYTHON_NEWEST);
    let want = format!(
        "{DISTRIBUTION} {VERSION} needs Python {}.{} to {}.{} with its venv module (on Debian and \
         Ubuntu: python3 and python3-venv)",
        oldest.0, oldest.1, newest.0, newest.1
    );
    if found.is_empty() {
        bail!("python is not available (tried `python3`, `python`): {want}");
    }
    bail!("{}: {want}", found.join(", "))
}

/// `3 11` → (3, 11).
fn parse_python_version(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.split_whitespace().map(str::parse);
    match (parts.next(), parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor)), None) => Some((major, minor)),
        _ => None,
    }
}

fn supported(version: (u32, u32)) -> bool {
    (PYTHON_OLDEST..=PYTHON_NEWEST).contains(&version)
}
