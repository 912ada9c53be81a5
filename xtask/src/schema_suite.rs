//! `cargo xtask schema-suite`: the official JSON-Schema-Test-Suite (draft 2020-12 and draft-07), for
//! the test that holds claij-validation's compiled check to boon's verdicts.
//!
//! It comes from a package registry, not from GitHub: the `jsonschema` source distribution on PyPI
//! vendors the suite under `json/tests/`. pip downloads the pinned sdist (nothing is installed or
//! built), its sha256 is checked against the one recorded here, and the two draft folders are
//! extracted with `tar`.
//!
//! The layout is a contract with `crates/validation/tests/schema_suite.rs`, which finds the cache
//! through `CLAIJ_SCHEMA_SUITE`: `<dir>/tests/draft2020-12/**.json` and `<dir>/tests/draft7/**.json`
//! as in the suite, and `<dir>/installed.json` (`{"jsonschema": VERSION, "sha256": SHA256}`), written
//! last, vouching for them.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::cache::{self, Cache};
use crate::cmd::Cmd;
use crate::mcp_servers::{remove_if_present, replace_dir, temp_path, write_atomically};

/// The cache (`cargo xtask schema-suite`).
pub(crate) const CACHE: Cache = Cache {
    var: "CLAIJ_SCHEMA_SUITE",
    folder: "schema-suite",
};
/// The source distribution vendoring the suite, and its pinned version.
const DISTRIBUTION: &str = "jsonschema";
const VERSION: &str = "4.23.0";
/// The sha256 of `jsonschema-4.23.0.tar.gz` as PyPI serves it.
const SHA256: &str = "d71497fef26351a33265337fa77ffeb82423f3ea21283cd9467bb03999266bc4";
/// The drafts taken from the suite.
const DRAFTS: &[&str] = &["draft2020-12", "draft7"];
/// Vouches for the extracted files, written last.
const STAMP: &str = "installed.json";
/// The folder of the suite in the cache.
const FOLDER: &str = "tests";

pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    let (dir, force) = match CACHE.dir_args("schema-suite", args) {
        Ok(parsed) => parsed,
        Err(message) => return crate::usage_error(&message),
    };
    ensure_in(&dir, force)?;
    println!("{}", dir.display());
    Ok(ExitCode::SUCCESS)
}

/// [`suite_dir`], with the pinned suite extracted and verified first if it is not.
pub(crate) fn ensure() -> Result<PathBuf> {
    let dir = suite_dir();
    ensure_in(&dir, false)?;
    Ok(dir)
}

/// The suite cache, absolute: `$CLAIJ_SCHEMA_SUITE`, else `$XDG_CACHE_HOME/claij/schema-suite`,
/// else `$HOME/.cache/claij/schema-suite`.
pub(crate) fn suite_dir() -> PathBuf {
    CACHE.dir()
}

/// The stamp's text.
fn stamp_text() -> String {
    let stamp = json!({DISTRIBUTION: VERSION, "sha256": SHA256});
    serde_json::to_string_pretty(&stamp).unwrap_or_default() + "\n"
}

/// Whether `dir` holds the pinned suite; if not, why.
fn check(dir: &Path) -> Result<(), String> {
    let text = fs::read_to_string(dir.join(STAMP)).map_err(|_| "not extracted yet".to_owned())?;
    let stamp: Value = serde_json::from_str(&text).map_err(|_| format!("{STAMP} is malformed"))?;
    let expected: Value = serde_json::from_str(&stamp_text()).unwrap_or_default();
    if stamp != expected {
        return Err(format!("{STAMP} records {stamp}, pinned {expected}"));
    }
    for draft in DRAFTS {
        let folder = dir.join(FOLDER).join(draft);
        if !folder.join("type.json").is_file() {
            return Err(format!("{} is missing", folder.display()));
        }
    }
    Ok(())
}

/// Makes `dir` hold the pinned suite; a stamp that vouches for files that are there means nothing to do.
fn ensure_in(dir: &Path, force: bool) -> Result<()> {
    if !force && check(dir).is_ok() {
        return Ok(());
    }
    println!(
        "schema-suite: fetching the JSON-Schema-Test-Suite from the {DISTRIBUTION} {VERSION} sdist"
    );
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    cache::remove_abandoned_temps(dir, ".install-suite");
    let temp = temp_path(dir, "suite");
    fs::create_dir(&temp).with_context(|| format!("cannot create {}", temp.display()))?;
    let result = fetch_into(&temp).and_then(|()| {
        remove_if_present(&dir.join(STAMP))?;
        replace_dir(dir, &temp.join("extracted"), FOLDER)?;
        write_atomically(&dir.join(STAMP), &stamp_text())
    });
    if temp.exists() {
        let _ = fs::remove_dir_all(&temp);
    }
    result
}

/// Downloads the sdist into `temp`, verifies it and extracts the drafts into `temp/extracted`.
fn fetch_into(temp: &Path) -> Result<()> {
    let pip = find_pip().ok_or_else(|| {
        anyhow!("pip is not available (tried `python3 -m pip`, `pip3`, `pip`): install python3-pip")
    })?;
    let download = temp.join("download");
    // `download` only fetches the sdist; pip reads its metadata with the build backend it gets from
    // the registry into an isolated environment, and installs nothing.
    pip.args([
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "--quiet",
        "--no-input",
        "--no-binary=:all:",
        "--dest",
    ])
    .arg(&download)
    .arg(format!("{DISTRIBUTION}=={VERSION}"))
    .env("PIP_ROOT_USER_ACTION", "ignore")
    .run()
    .map_err(|err| {
        anyhow!("{err:#}: check the network and pip's index settings (pip config list)")
    })?;
    let archive = download.join(format!("{DISTRIBUTION}-{VERSION}.tar.gz"));
    let sha256 = sha256_file(&archive)?;
    if sha256 != SHA256 {
        bail!(
            "{} has sha256 {sha256}, expected {SHA256}: clear pip's cache (pip cache purge) and try again",
            archive.display()
        );
    }
    let root = format!("{DISTRIBUTION}-{VERSION}/json/tests");
    let unpacked = temp.join("unpacked");
    fs::create_dir(&unpacked).with_context(|| format!("cannot create {}", unpacked.display()))?;
    let mut tar = Cmd::new("tar")
        .arg("-xzf")
        .arg(&archive)
        .arg("-C")
        .arg(&unpacked);
    for draft in DRAFTS {
        tar = tar.arg(format!("{root}/{draft}"));
    }
    tar.run()
        .context("cannot extract the suite (is `tar` installed?)")?;
    fs::rename(unpacked.join(&root), temp.join("extracted"))
        .context("the sdist's json/tests moved: the pinned version's layout changed")?;
    check_extracted(&temp.join("extracted"))
}

/// Each draft folder is there and holds test files.
fn check_extracted(dir: &Path) -> Result<()> {
    for draft in DRAFTS {
        let file = dir.join(draft).join("type.json");
        if !file.is_file() {
            bail!(
                "the sdist has no {}: the pinned version's layout changed",
                file.display()
            );
        }
    }
    Ok(())
}

fn find_pip() -> Option<Cmd> {
    [
        Cmd::new("python3").args(["-m", "pip"]),
        Cmd::new("pip3"),
        Cmd::new("pip"),
    ]
    .into_iter()
    .find(|pip| pip.clone().arg("--version").succeeds_quietly())
}

fn sha256_file(path: &Path) -> Result<String> {
    let hash = || -> std::io::Result<String> {
        let mut file = fs::File::open(path)?;
        let mut hasher = Sha256::new();
        let mut buffer = vec![0; 1 << 16];
        loop {
            let read = file.read(&mut buffer)?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
        }
        Ok(hasher
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect())
    };
    hash().with_context(|| format!("cannot read {}", path.display()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_vouches_only_for_the_pinned_version_with_its_files() {
        let dir =
            std::env::temp_dir().join(format!("claij-schema-suite-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        assert_eq!(check(&dir), Err("not extracted yet".to_owned()));
        write_atomically(&dir.join(STAMP), &stamp_text()).unwrap();
        assert!(check(&dir).unwrap_err().ends_with("is missing"));
        for draft in DRAFTS {
            let folder = dir.join(FOLDER).join(draft);
            fs::create_dir_all(&folder).unwrap();
            fs::write(folder.join("type.json"), "[]").unwrap();
        }
        assert_eq!(check(&dir), Ok(()));
        fs::write(dir.join(STAMP), r#"{"jsonschema": "4.0.0", "sha256": "x"}"#).unwrap();
        assert!(check(&dir).unwrap_err().contains("pinned"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
