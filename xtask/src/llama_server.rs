//! `cargo xtask llama-server`: llama.cpp's Python server (`llama-cpp-python[server]`, pinned), the
//! real OpenAI-compatible server the CLI's `openai-compatible` tests start, installed with pip into
//! a venv in a cache outside the repository.
//!
//! The layout is a contract with those tests, which find the cache through `CLAIJ_LLAMA_SERVER`:
//! `<dir>/venv/bin/python` runs `-m llama_cpp.server`, and `<dir>/installed.json`
//! (`{"llama-cpp-python": "<version>"}`) vouches for it: deleted before the venv changes, written
//! last, once the installed version is verified.
//!
//! PyPI has no binary wheel for Linux, so pip builds llama.cpp from source (cmake comes as a build
//! dependency): about 8 to 10 minutes on 2 cores, with `CMAKE_BUILD_PARALLEL_LEVEL` the cores
//! unless set. pip keeps the built wheel in `<dir>/pip-cache`, so a rebuilt venv takes seconds.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};

use crate::cache;
use crate::mcp_servers::{capture, remove_if_present, runs, write_atomically};
use crate::test::format_duration;

/// The distribution and its pinned version.
const DISTRIBUTION: &str = "llama-cpp-python";
const VERSION: &str = "0.3.36";
/// What pip installs: the server extra brings FastAPI, uvicorn and the rest.
const REQUIREMENT: &str = "llama-cpp-python[server]==0.3.36";
/// The stamp in the cache directory.
const STAMP: &str = "installed.json";
/// Prints the installed version of the distribution, after importing the server module (so a
/// broken build or a missing extra fails here, not in the tests).
const VERIFY_PY: &str = "import importlib.metadata as m, llama_cpp.server.app; \
    print(m.version('llama-cpp-python'))";

pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    let (dir, force) = match cache::LLAMA_SERVER.dir_args("llama-server", args) {
        Ok(parsed) => parsed,
        Err(message) => return crate::usage_error(&message),
    };
    ensure_in(&dir, force)?;
    println!("{}", dir.display());
    Ok(ExitCode::SUCCESS)
}

/// [`server_dir`], with the pinned server installed and verified first if it is not.
pub(crate) fn ensure() -> Result<PathBuf> {
    let dir = server_dir();
    ensure_in(&dir, false)?;
    Ok(dir)
}

/// The server cache, absolute: `$CLAIJ_LLAMA_SERVER`, else `$XDG_CACHE_HOME/claij/llama-server`,
/// else `$HOME/.cache/claij/llama-server` (else the temp dir's `claij/llama-server`).
pub(crate) fn server_dir() -> PathBuf {
    cache::LLAMA_SERVER.dir()
}

/// The stamp's text for `version`.
fn stamp_text(version: &str) -> String {
    let mut object = serde_json::Map::new();
    object.insert(DISTRIBUTION.to_owned(), version.into());
    serde_json::to_string_pretty(&serde_json::Value::Object(object)).unwrap_or_default() + "\n"
}

/// Whether `dir` holds the pinned server; if not, why.
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
        Some(_) if !python(dir).is_file() => Err(format!("{} is missing", python(dir).display())),
        Some(_) => Ok(()),
    }
}

/// The venv's python, which runs `-m llama_cpp.server`.
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
        "llama-server: {problem}: installing {REQUIREMENT} (a build from source: about 10 minutes \
         on 2 cores, once; the wheel is then cached)"
    );
    let started = Instant::now();
    install(dir)?;
    println!(
        "llama-server: installed and verified in {}",
        format_duration(started.elapsed())
    );
    Ok(())
}

/// Rebuilds `<dir>/venv` in place (a venv cannot move), the stamp removed first and written last.
fn install(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create the llama-server cache {}: set CLAIJ_LLAMA_SERVER to a writable directory",
            dir.display()
        )
    })?;
    remove_if_present(&dir.join(STAMP))?;
    let venv = dir.join("venv");
    if fs::symlink_metadata(&venv).is_ok() {
        fs::remove_dir_all(&venv)
            .with_context(|| format!("cannot remove the old venv {}", venv.display()))?;
    }
    let system_python = ["python3", "python"]
        .into_iter()
        .find(|python| runs(python))
        .ok_or_else(|| anyhow!("python is not available (tried `python3`, `python`)"))?;
    let mut create = Command::new(system_python);
    create.args(["-m", "venv"]).arg(&venv);
    capture(&mut create, dir).map_err(|err| {
        anyhow!("{err:#}\ncannot create a venv: on Debian and Ubuntu, install python3-venv")
    })?;
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
    .arg(REQUIREMENT);
    if std::env::var_os("CMAKE_BUILD_PARALLEL_LEVEL").is_none() {
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        pip.env("CMAKE_BUILD_PARALLEL_LEVEL", cores.to_string());
    }
    capture(&mut pip, dir).map_err(|err| {
        anyhow!(
            "{err:#}\nthe build needs a C++ compiler (g++) and pip's index \
             (check pip config list)"
        )
    })?;
    let mut verify = Command::new(python(dir));
    verify.args(["-I", "-c", VERIFY_PY]);
    let version = capture(&mut verify, dir)?.trim().to_owned();
    if version != VERSION {
        bail!("pip installed {DISTRIBUTION} {version}, not the pinned {VERSION}");
    }
    write_atomically(&dir.join(STAMP), &stamp_text(&version))
}
