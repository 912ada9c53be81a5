//! `cargo xtask restate`: the pinned Restate server the `claij-restate` tests start, installed with
//! npm into a cache outside the repository.
//!
//! Restate publishes its server on npm as `@restatedev/restate-server`, a launcher script whose
//! optional dependencies hold one binary per platform, `@restatedev/restate-server-<os>-<arch>`.
//! Only that platform package is installed: it is the binary and nothing else (the launcher adds a
//! node script and an analytics dependency with an install script), and npm runs no install scripts
//! here (`--ignore-scripts`).
//!
//! The layout is a contract with the tests, which find the binary through `CLAIJ_RESTATE_SERVER`
//! (`cargo xtask test` sets it), else at the same place in the default cache:
//! - `<dir>/npm/node_modules/@restatedev/restate-server-<os>-<arch>/bin/restate-server`;
//! - `<dir>/npm/installed.json`, `{"package": NAME, "version": VERSION, "size": BYTES}`, written once
//!   the binary printed the pinned version with `--version`.
//!
//! The tree is built in a temp dir and renamed to `<dir>/npm` only once verified, so a cut-short
//! install never replaces a good one; an install whose stamp, binary size or `--version` disagrees
//! with the pin is never trusted: it is installed again.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};

use crate::cache;
use crate::mcp_servers::{npm_install, npm_run, replace_dir, runs, temp_path, write_atomically};
use crate::test::format_duration;

/// The server's version; the npm packages of all platforms carry it.
pub(crate) const VERSION: &str = "1.7.12";
/// The npm scope and name prefix of the per-platform packages.
const PACKAGE_PREFIX: &str = "@restatedev/restate-server-";
/// The folder inside the cache.
const FOLDER: &str = "npm";
/// Vouches for the install, inside [`FOLDER`].
const STAMP: &str = "installed.json";
/// How [`temp_path`] starts the names of its temp dirs: those a killed install left are removed.
const TEMP_PREFIX: &str = ".install-";

/// What `installed.json` records.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    /// The npm package, `@restatedev/restate-server-<os>-<arch>`.
    package: String,
    /// Its version, which the binary printed.
    version: String,
    /// The binary's size in bytes: a truncated binary differs.
    size: u64,
}

pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    let (dir, force) = match cache::RESTATE.dir_args("restate", args) {
        Ok(parsed) => parsed,
        Err(message) => return crate::usage_error(&message),
    };
    ensure_in(&dir, force)?;
    println!("{}", binary(&dir)?.display());
    Ok(ExitCode::SUCCESS)
}

/// The server binary in [`cache_dir`], installed and verified first if it is not.
pub(crate) fn ensure() -> Result<PathBuf> {
    let dir = cache_dir();
    ensure_in(&dir, false)?;
    binary(&dir)
}

/// The Restate cache, absolute: `$CLAIJ_RESTATE_DIR`, else `$XDG_CACHE_HOME/claij/restate`, else
/// `$HOME/.cache/claij/restate` (else the temp dir's `claij/restate`).
pub(crate) fn cache_dir() -> PathBuf {
    cache::RESTATE.dir()
}

/// Where the server binary of this machine's platform is in the cache `dir`, installed or not; an
/// error when Restate publishes none for it.
pub(crate) fn binary(dir: &Path) -> Result<PathBuf> {
    Ok(binary_in(&dir.join(FOLDER), &package()?))
}

/// Makes `dir` hold the pinned server: nothing to do when its stamp, binary and `--version` agree
/// with the pin (and not `force`); otherwise it is installed again.
fn ensure_in(dir: &Path, force: bool) -> Result<()> {
    let package = package()?;
    let Some(problem) = problem(dir, &package, force) else {
        return Ok(());
    };
    fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create the Restate cache {}: set CLAIJ_RESTATE_DIR to a writable directory",
            dir.display()
        )
    })?;
    cache::remove_abandoned_temps(dir, TEMP_PREFIX);
    println!(
        "restate: {problem}: installing {package}@{VERSION} (a 78 MB package, 216 MB unpacked)"
    );
    let started = Instant::now();
    install(dir, &package)?;
    println!(
        "restate: installed and verified in {}",
        format_duration(started.elapsed())
    );
    Ok(())
}

/// Why the install in `dir` is not to be trusted (`--force` when `force`), or `None` when it is.
fn problem(dir: &Path, package: &str, force: bool) -> Option<String> {
    if force {
        return Some("--force".to_owned());
    }
    check(&dir.join(FOLDER), package).err()
}

/// Whether the folder `npm` holds the pinned `package`: its stamp names the pin, the binary has the
/// stamped size and prints the pinned version; if not, why.
fn check(npm: &Path, package: &str) -> Result<(), String> {
    let stamp_path = npm.join(STAMP);
    let text = fs::read_to_string(&stamp_path).map_err(|_| "not installed yet".to_owned())?;
    let stamp =
        Stamp::parse(&text).ok_or_else(|| format!("{} is malformed", stamp_path.display()))?;
    if stamp.package != package || stamp.version != VERSION {
        return Err(format!(
            "installed {}@{} (pinned {package}@{VERSION})",
            stamp.package, stamp.version
        ));
    }
    let binary = binary_in(npm, package);
    let size = fs::metadata(&binary)
        .map_err(|_| format!("{} is missing", binary.display()))?
        .len();
    if size != stamp.size {
        return Err(format!(
            "{} has {size} bytes, not the {} installed",
            binary.display(),
            stamp.size
        ));
    }
    let printed = binary_version(&binary)?;
    if printed != VERSION {
        return Err(format!(
            "{} prints version {printed} (pinned {VERSION})",
            binary.display()
        ));
    }
    Ok(())
}

/// Installs `package` into a temp dir inside `cache`, verifies it, stamps it and renames it to
/// `<cache>/npm`; the temp dir is removed in every case.
fn install(cache: &Path, package: &str) -> Result<()> {
    if !runs("npm") {
        bail!("npm is not available: install Node.js with npm (the Restate server comes from npm)");
    }
    let temp = temp_path(cache, FOLDER);
    fs::create_dir(&temp).with_context(|| format!("cannot create {}", temp.display()))?;
    let result =
        install_into(cache, &temp, package).and_then(|()| replace_dir(cache, &temp, FOLDER));
    if temp.exists()
        && let Err(err) = fs::remove_dir_all(&temp)
    {
        println!("restate: warning: cannot remove {}: {err}", temp.display());
    }
    result
}

fn install_into(cache: &Path, temp: &Path, package: &str) -> Result<()> {
    let mut npm = npm_install(cache, temp);
    npm.arg("--ignore-scripts")
        .arg(format!("{package}@{VERSION}"));
    npm_run(&mut npm, cache)?;
    let manifest = temp.join("node_modules").join(package).join("package.json");
    let installed = fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|value| value.get("version")?.as_str().map(str::to_owned))
        .ok_or_else(|| anyhow!("npm installed no readable {}", manifest.display()))?;
    if installed != VERSION {
        bail!("npm installed {package} {installed}, not the pinned {VERSION}");
    }
    let binary = binary_in(temp, package);
    let size = fs::metadata(&binary)
        .with_context(|| {
            format!(
                "{package} {VERSION} has no {}: the package's layout changed",
                binary.display()
            )
        })?
        .len();
    let printed = binary_version(&binary).map_err(|err| anyhow!("{err}"))?;
    if printed != VERSION {
        bail!("the installed server prints version {printed}, not the pinned {VERSION}");
    }
    let stamp = Stamp {
        package: package.to_owned(),
        version: VERSION.to_owned(),
        size,
    };
    write_atomically(&temp.join(STAMP), &stamp.to_text())
}

/// The binary of `package` under the npm prefix `npm`.
fn binary_in(npm: &Path, package: &str) -> PathBuf {
    npm.join("node_modules")
        .join(package)
        .join("bin")
        .join("restate-server")
}

/// The version `binary --version` prints, or why there is none.
fn binary_version(binary: &Path) -> Result<String, String> {
    let output = Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|err| format!("{} does not run: {err}", binary.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} --version failed ({})",
            binary.display(),
            output.status
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    parse_version(&text).ok_or_else(|| {
        format!(
            "{} --version printed {:?}, not `restate-server VERSION`",
            binary.display(),
            text.trim()
        )
    })
}

/// `restate-server 1.7.12` → `1.7.12`.
fn parse_version(text: &str) -> Option<String> {
    let version = text.trim().strip_prefix("restate-server ")?.trim();
    let plausible = !version.is_empty()
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-+".contains(c));
    plausible.then(|| version.to_owned())
}

/// This machine's platform package.
fn package() -> Result<String> {
    package_for(std::env::consts::OS, std::env::consts::ARCH).ok_or_else(|| {
        anyhow!(
            "Restate publishes no server binary on npm for {}-{} (only linux and macos, x86_64 \
             and aarch64)",
            std::env::consts::OS,
            std::env::consts::ARCH
        )
    })
}

/// The `@restatedev/restate-server-<os>-<arch>` package for Rust's names of an OS and an
/// architecture.
fn package_for(os: &str, arch: &str) -> Option<String> {
    crate::mcp_servers::npm_platform(os, arch).map(|platform| format!("{PACKAGE_PREFIX}{platform}"))
}

impl Stamp {
    fn to_text(&self) -> String {
        let value = json!({"package": self.package, "version": self.version, "size": self.size});
        serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
    }

    /// The stamp in `text`, or `None` when it is not JSON or a field is missing or mistyped.
    fn parse(text: &str) -> Option<Stamp> {
        let value: Value = serde_json::from_str(text).ok()?;
        Some(Stamp {
            package: value.get("package")?.as_str()?.to_owned(),
            version: value.get("version")?.as_str()?.to_owned(),
            size: value.get("size")?.as_u64()?,
        })
    }
}
