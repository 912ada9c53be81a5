//! `cargo xtask mcp-servers`: the pinned MCP servers that the MCP tests talk to, installed with npm
//! and pip into a cache outside the repository.
//!
//! The layout is a contract with those tests, which find the cache through `CLAIJ_MCP_SERVERS`:
//! - `<dir>/npm/node_modules/<package>/dist/index.js` for each npm package (run with `node`);
//! - `<dir>/venv/bin/<distribution>` for each pip distribution, and `<dir>/venv/bin/python`;
//! - `<dir>/conformance` and `<dir>/conformance-0.2`, the MCP conformance suite's two pinned releases
//!   (see [`crate::conformance`]);
//! - `<dir>/servers.json`, `{"npm": {package: version}, "pip": {distribution: version}}`, written
//!   last, once everything is verified, and removed before anything changes.
//!
//! The two parts are installed independently, each vouched for by its own `installed.json` (written
//! after it verified): the npm tree is built in a temp dir and renamed into place, the venv (whose
//! scripts hold its absolute path, so it cannot move) is removed and rebuilt in place, its
//! `installed.json` deleted first and written last.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Map, Value};

use crate::cache;
use crate::cache::venv;
use crate::long_command;
use crate::test::format_duration;

/// The npm packages and their versions; each runs as
/// `node <dir>/npm/node_modules/<name>/dist/index.js`.
const NPM: [(&str, &str); 3] = [
    ("@modelcontextprotocol/server-everything", "2026.8.31"),
    ("@modelcontextprotocol/server-filesystem", "2026.8.31"),
    ("@modelcontextprotocol/server-memory", "2026.8.31"),
];
/// The pip distributions and their versions; each has a console script of its own name in the venv.
const PIP: [(&str, &str); 3] = [
    ("mcp-server-time", "2026.10.19"),
    ("mcp-server-fetch", "2026.10.24"),
    ("mcp-server-git", "2026.10.19"),
];
/// The stamp that vouches for the whole set, in the cache directory.
const STAMP: &str = "servers.json";
/// The stamp that vouches for one part, in that part's directory.
const PART_STAMP: &str = "installed.json";
/// Temp dirs of installs are named `<prefix><what>-<pid>-<nanos>`; ones older than a day were
/// abandoned.
const TEMP_PREFIX: &str = ".install-";
/// How many lines of a failed command's output its error quotes.
const TAIL_LINES: usize = 15;
/// Prints `<name> <version>` for each distribution named after it, `<name> -` for one not
/// installed.
const VERSIONS_PY: &str = "import sys, importlib.metadata as m; \
    [print(n, next((d.version for d in m.distributions(name=n)), '-')) for n in sys.argv[1:]]";

/// Name to version, as the stamps record them and the installs report them.
type Versions = BTreeMap<String, String>;

/// The two halves of the set, each installed by its own tool into its own directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Npm,
    Pip,
}

/// What `servers.json` records: the verified versions of both parts.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    npm: Versions,
    pip: Versions,
}

pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    cache::MCP_SERVERS.run("mcp-servers", args, ensure_in)
}

/// [`servers_dir`], with the pinned servers installed and verified first if they are not.
pub(crate) fn ensure() -> Result<PathBuf> {
    let dir = servers_dir();
    ensure_in(&dir, false)?;
    Ok(dir)
}

/// The MCP server cache, absolute: `$CLAIJ_MCP_SERVERS`, else `$XDG_CACHE_HOME/claij/mcp-servers`,
/// else `$HOME/.cache/claij/mcp-servers` (else the temp dir's `claij/mcp-servers`).
pub(crate) fn servers_dir() -> PathBuf {
    cache::MCP_SERVERS.dir()
}

/// Makes `dir` hold the pinned servers. A matching `servers.json` with every entry point in place
/// means nothing to do; otherwise each part its own stamp does not vouch for is installed again.
fn ensure_in(dir: &Path, force: bool) -> Result<()> {
    let stamp_path = dir.join(STAMP);
    if !force && is_complete(dir) {
        return Ok(());
    }
    fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create the MCP server cache {}: set CLAIJ_MCP_SERVERS to a writable directory",
            dir.display()
        )
    })?;
    cache::remove_abandoned_temps(dir, TEMP_PREFIX);
    // servers.json vouches for everything, so it goes before anything changes.
    remove_if_present(&stamp_path)?;
    for part in [Part::Npm, Part::Pip] {
        let problem = if force {
            Some("--force".to_owned())
        } else {
            part.check(&part.dir(dir)).err()
        };
        let Some(problem) = problem else {
            continue;
        };
        println!(
            "mcp-servers: {part}: {problem}: installing {}",
            part.requirements().join(" ")
        );
        let started = Instant::now();
        part.install(dir)?;
        println!(
            "mcp-servers: {part}: installed and verified in {}",
            format_duration(started.elapsed())
        );
    }
    crate::conformance::ensure_in(dir, force)?;
    write_atomically(&stamp_path, &Stamp::pinned().to_text())
}

/// Whether `servers.json` matches the pins and every entry point is there: the fast path, which
/// reads one small file and stats a few more.
fn is_complete(dir: &Path) -> bool {
    let stamp = fs::read_to_string(dir.join(STAMP))
        .ok()
        .and_then(|text| Stamp::parse(&text));
    stamp.is_some_and(|stamp| stamp == Stamp::pinned())
        && crate::conformance::is_installed(dir)
        && [Part::Npm, Part::Pip].iter().all(|part| {
            part.entry_points(&part.dir(dir))
                .iter()
                .all(|p| p.is_file())
        })
}

impl Part {
    /// The part's directory inside the cache.
    fn dir(self, cache: &Path) -> PathBuf {
        cache.join(match self {
            Part::Npm => "npm",
            Part::Pip => "venv",
        })
    }

    fn pinned(self) -> Versions {
        let pins: &[(&str, &str)] = match self {
            Part::Npm => &NPM,
            Part::Pip => &PIP,
        };
        pins.iter()
            .map(|(name, version)| ((*name).to_owned(), (*version).to_owned()))
            .collect()
    }

    /// `name@version` for npm, `name==version` for pip.
    fn requirements(self) -> Vec<String> {
        let separator = match self {
            Part::Npm => "@",
            Part::Pip => "==",
        };
        self.pinned()
            .iter()
            .map(|(name, version)| format!("{name}{separator}{version}"))
            .collect()
    }

    /// The files the tests run, under the part's directory `part_dir`.
    fn entry_points(self, part_dir: &Path) -> Vec<PathBuf> {
        match self {
            Part::Npm => NPM
                .iter()
                .map(|(name, _)| {
                    part_dir
                        .join("node_modules")
                        .join(name)
                        .join("dist")
                        .join("index.js")
                })
                .collect(),
            Part::Pip => std::iter::once("python")
                .chain(PIP.iter().map(|(name, _)| *name))
                .map(|name| part_dir.join("bin").join(name))
                .collect(),
        }
    }

    /// Whether the part's own stamp vouches for the pins and its entry points are there; if not,
    /// why.
    fn check(self, part_dir: &Path) -> Result<(), String> {
        let stamp = part_dir.join(PART_STAMP);
        let text = match fs::read_to_string(&stamp) {
            Ok(text) => text,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return Err("not installed yet".to_owned());
            }
            Err(err) => return Err(format!("cannot read {}: {err}", stamp.display())),
        };
        let Some(installed) = serde_json::from_str(&text)
            .ok()
            .and_then(|value| parse_versions(&value))
        else {
            return Err(format!("{} is malformed", stamp.display()));
        };
        let differences = differences(&self.pinned(), &installed);
        if !differences.is_empty() {
            return Err(format!("installed {}", differences.join(", ")));
        }
        match self
            .entry_points(part_dir)
            .into_iter()
            .find(|p| !p.is_file())
        {
            Some(missing) => Err(format!("{} is missing", missing.display())),
            None => Ok(()),
        }
    }

    fn install(self, cache: &Path) -> Result<()> {
        match self {
            Part::Npm => install_npm(cache),
            Part::Pip => install_pip(cache),
        }
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Part::Npm => "npm",
            Part::Pip => "pip",
        })
    }
}

/// Installs into a temp dir inside `cache`, verifies, and only then renames it to `<cache>/npm`:
/// `node_modules` holds no absolute paths, so it moves intact, and a cut-short install never
/// replaces a good tree. The temp dir is removed in every case.
fn install_npm(cache: &Path) -> Result<()> {
    let temp = temp_path(cache, "npm");
    fs::create_dir(&temp).with_context(|| format!("cannot create {}", temp.display()))?;
    let result = install_npm_into(cache, &temp).and_then(|()| replace_dir(cache, &temp, "npm"));
    if temp.exists()
        && let Err(err) = fs::remove_dir_all(&temp)
    {
        println!(
            "mcp-servers: warning: cannot remove {}: {err}",
            temp.display()
        );
    }
    result
}

fn install_npm_into(cache: &Path, temp: &Path) -> Result<()> {
    if !runs("npm") {
        bail!(
            "npm is not available: install Node.js with npm (the tests run these servers with node)"
        );
    }
    let mut npm = npm_install(cache, temp);
    npm.args(Part::Npm.requirements());
    npm_run(&mut npm, cache)?;
    let mut installed = Versions::new();
    for (name, _) in NPM {
        let manifest = temp.join("node_modules").join(name).join("package.json");
        let version = fs::read_to_string(&manifest)
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .and_then(|value| value.get("version")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| "-".to_owned());
        installed.insert(name.to_owned(), version);
    }
    verify(Part::Npm, temp, &installed)
}

/// Rebuilds `<cache>/venv` in place (a venv cannot move: its scripts name its python by absolute
/// path). Its stamp goes first and comes back last, so a half-built venv is never trusted.
fn install_pip(cache: &Path) -> Result<()> {
    let venv = Part::Pip.dir(cache);
    remove_if_present(&venv.join(PART_STAMP))?;
    if fs::symlink_metadata(&venv).is_ok() {
        fs::remove_dir_all(&venv)
            .with_context(|| format!("cannot remove the old venv {}", venv.display()))?;
    }
    venv::create(venv::python()?, &venv, cache)?;
    let venv_python = venv.join("bin").join("python");
    let mut pip = venv::pip_install(&venv_python, &cache.join("pip-cache"));
    pip.args(Part::Pip.requirements());
    capture(&mut pip, cache).map_err(|err| {
        anyhow!("{err:#}\ncheck the network and pip's index settings (pip config list)")
    })?;
    let mut versions = Command::new(&venv_python);
    versions
        .args(["-I", "-c", VERSIONS_PY])
        .args(PIP.iter().map(|(name, _)| name));
    let installed = parse_version_lines(&capture(&mut versions, cache)?);
    verify(Part::Pip, &venv, &installed)
}

/// Fails unless `installed` is what `part` pins and its entry points are under `part_dir`; on
/// success writes the part's stamp there.
fn verify(part: Part, part_dir: &Path, installed: &Versions) -> Result<()> {
    let differences = differences(&part.pinned(), installed);
    if !differences.is_empty() {
        bail!(
            "{part} installed {}, not the pinned versions",
            differences.join(", ")
        );
    }
    if let Some(missing) = part
        .entry_points(part_dir)
        .into_iter()
        .find(|p| !p.is_file())
    {
        bail!(
            "{part} installed the pinned versions but there is no {}: the packages' layout changed",
            missing.display()
        );
    }
    let text = serde_json::to_string_pretty(&versions_value(installed))? + "\n";
    write_atomically(&part_dir.join(PART_STAMP), &text)
}

/// Moves `new` to `<cache>/<name>`, moving whatever was there aside first and then removing it.
pub(crate) fn replace_dir(cache: &Path, new: &Path, name: &str) -> Result<()> {
    let target = cache.join(name);
    let old = temp_path(cache, &format!("old-{name}"));
    let had_old = fs::symlink_metadata(&target).is_ok();
    if had_old {
        fs::rename(&target, &old)
            .with_context(|| format!("cannot move {} aside", target.display()))?;
    }
    fs::rename(new, &target)
        .with_context(|| format!("cannot move {} into place", target.display()))?;
    if had_old && let Err(err) = fs::remove_dir_all(&old) {
        println!(
            "mcp-servers: warning: cannot remove {}: {err}",
            old.display()
        );
    }
    Ok(())
}

/// For each pinned name whose installed version differs: `name 1.2 (pinned 1.3)`, or
/// `name: none (pinned 1.3)`; then `name 1.0 (not pinned)` for each extra.
fn differences(pinned: &Versions, installed: &Versions) -> Vec<String> {
    let mut found = Vec::new();
    for (name, version) in pinned {
        match installed.get(name).map(String::as_str) {
            Some(got) if got == version => {}
            None | Some("-") => found.push(format!("no {name} (pinned {version})")),
            Some(got) => found.push(format!("{name} {got} (pinned {version})")),
        }
    }
    for (name, version) in installed {
        if !pinned.contains_key(name) {
            found.push(format!("{name} {version} (not pinned)"));
        }
    }
    found
}

/// [`VERSIONS_PY`]'s output as versions; lines that are not `<name> <version>` are skipped.
fn parse_version_lines(text: &str) -> Versions {
    text.lines()
        .filter_map(|line| line.trim().split_once(' '))
        .map(|(name, version)| (name.to_owned(), version.trim().to_owned()))
        .collect()
}

/// A JSON object of strings as versions; `None` for anything else.
fn parse_versions(value: &Value) -> Option<Versions> {
    value
        .as_object()?
        .iter()
        .map(|(name, version)| Some((name.clone(), version.as_str()?.to_owned())))
        .collect()
}

fn versions_value(versions: &Versions) -> Value {
    Value::Object(
        versions
            .iter()
            .map(|(name, version)| (name.clone(), Value::String(version.clone())))
            .collect::<Map<_, _>>(),
    )
}

impl Stamp {
    fn pinned() -> Stamp {
        Stamp {
            npm: Part::Npm.pinned(),
            pip: Part::Pip.pinned(),
        }
    }

    /// Pretty JSON, `npm` then `pip`, each name to its version.
    fn to_text(&self) -> String {
        let mut object = Map::new();
        object.insert("npm".to_owned(), versions_value(&self.npm));
        object.insert("pip".to_owned(), versions_value(&self.pip));
        let text = serde_json::to_string_pretty(&Value::Object(object)).unwrap_or_default();
        text + "\n"
    }

    /// The stamp in `text`, or `None` when it is not JSON, or `npm` or `pip` is missing or not an
    /// object of strings. Other keys are ignored.
    fn parse(text: &str) -> Option<Stamp> {
        let value: Value = serde_json::from_str(text).ok()?;
        Some(Stamp {
            npm: parse_versions(value.get("npm")?)?,
            pip: parse_versions(value.get("pip")?)?,
        })
    }
}

/// `npm install` of exact versions into `temp`, with npm's cache under `cache`; the packages are
/// added by the caller. npm only reads stdin for prompts, and none of these flags leaves it one to
/// ask.
/// npm's `<os>-<arch>` suffix of platform packages (`linux-x64`, `darwin-arm64`) for Rust's names
/// of an OS and an architecture; `None` where such packages are not published.
pub(crate) fn npm_platform(os: &str, arch: &str) -> Option<String> {
    let os = match os {
        "linux" => "linux",
        "macos" => "darwin",
        _ => return None,
    };
    let arch = match arch {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        _ => return None,
    };
    Some(format!("{os}-{arch}"))
}

pub(crate) fn npm_install(cache: &Path, temp: &Path) -> Command {
    let mut npm = Command::new("npm");
    npm.args(["install", "--prefix"])
        .arg(temp)
        .arg("--cache")
        .arg(cache.join("npm-cache"))
        .args([
            "--no-audit",
            "--no-fund",
            "--save-exact",
            "--prefer-offline",
            "--no-update-notifier",
            "--no-progress",
        ]);
    npm
}

/// Runs an [`npm_install`] from `cache` ([`capture`]); a failure says to check npm's registry settings.
pub(crate) fn npm_run(npm: &mut Command, cache: &Path) -> Result<()> {
    capture(npm, cache).map(drop).map_err(|err| {
        anyhow!("{err:#}\ncheck the network and npm's registry settings (npm config list)")
    })
}

/// Runs `command` from `cwd` with stdin closed, echoing it first, and returns its stdout. Its
/// output also goes to `<cwd>/logs/<label>.log` as it comes, and every
/// [`long_command::HEARTBEAT`] a line says it is still running, for how long, and where that log
/// is (a pip build of llama.cpp takes minutes). A failure names the command, quotes the end of
/// what it printed and names the log.
pub(crate) fn capture(command: &mut Command, cwd: &Path) -> Result<String> {
    capture_with(command, cwd, long_command::HEARTBEAT, &mut |line| {
        println!("{line}");
    })
}

/// [`capture`] with the heartbeat every `every`, said through `say`.
pub(crate) fn capture_with(
    command: &mut Command,
    cwd: &Path,
    every: std::time::Duration,
    say: &mut dyn FnMut(String),
) -> Result<String> {
    let shown = show(command);
    println!("$ {shown}");
    let log = cwd.join("logs").join(format!(
        "{}.log",
        long_command::label(command).replace(' ', "-")
    ));
    command.current_dir(cwd);
    let output = match long_command::run_logged(command, &shown, &log, every, say) {
        Ok(output) => output,
        Err(err) if err.kind() == io::ErrorKind::NotFound => bail!(
            "cannot run `{shown}`: {} is not installed",
            command.get_program().to_string_lossy()
        ),
        Err(err) => {
            return Err(err).with_context(|| {
                format!(
                    "cannot run `{shown}` (its output going to {})",
                    log.display()
                )
            });
        }
    };
    if !output.status.success() {
        bail!(
            "`{shown}` failed ({}){}\nall it printed: {}",
            output.status,
            tail(&output.stderr, &output.stdout),
            log.display()
        );
    }
    String::from_utf8(output.stdout).with_context(|| format!("`{shown}` printed non-UTF-8"))
}

/// The last [`TAIL_LINES`] non-blank lines of `stderr` (of `stdout` if stderr has none), as
/// `; it printed:` and then the lines indented; `, printing nothing` when both are blank.
fn tail(stderr: &[u8], stdout: &[u8]) -> String {
    let lines = |bytes: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(bytes)
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| line.trim_end().to_owned())
            .collect()
    };
    let (lines, from) = match lines(stderr) {
        stderr if stderr.is_empty() => (lines(stdout), "stdout"),
        stderr => (stderr, "stderr"),
    };
    if lines.is_empty() {
        return ", printing nothing".to_owned();
    }
    let start = lines.len().saturating_sub(TAIL_LINES);
    let ends = if start > 0 { " ends" } else { "" };
    let mut text = format!("; its {from}{ends}:");
    for line in &lines[start..] {
        text.push_str("\n    ");
        text.push_str(line);
    }
    text
}

/// Whether `program --version` runs and exits 0, its output discarded.
pub(crate) fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The command as a shell would take it, each word quoted when it needs to be.
fn show(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(quote)
        .collect::<Vec<_>>()
        .join(" ")
}

fn quote(word: &OsStr) -> String {
    let word = word.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.into_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `<cache>/.install-<what>-<pid>-<nanos>`.
pub(crate) fn temp_path(cache: &Path, what: &str) -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    cache.join(format!(
        "{TEMP_PREFIX}{what}-{}-{nanos}",
        std::process::id()
    ))
}

pub(crate) fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => {
            Err(err).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Written to a temp file and renamed, so a reader never sees half of it.
pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".{}", std::process::id()));
    let written = fs::write(&temp, text).and_then(|()| fs::rename(&temp, path));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written.with_context(|| format!("cannot write {}", path.display()))
}
