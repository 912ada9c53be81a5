//! Where the matrix lives and how a run joins it: under a lock, merged with what is there, written
//! atomically (a temp file renamed over the old one), the run appended to the history.
//!
//! The directory is the user's (`$XDG_DATA_HOME/claij`, else `~/.local/share/claij`), which claij
//! reads from any directory, unless `--out` names another.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use super::matrix::{Matrix, Record, merge};

/// The matrix claij reads.
pub(super) const JSON: &str = "compat-matrix.json";
/// The same, for people.
pub(super) const MARKDOWN: &str = "compat-matrix.md";
/// A line per run, never rewritten.
pub(super) const HISTORY: &str = "compat-history.jsonl";
/// Held from reading the matrix to writing it, so two runs at once both land.
pub(super) const LOCK: &str = "compat-matrix.lock";

/// What a run left where.
#[derive(Debug)]
pub(super) struct Stored {
    /// The merged matrix, every run so far.
    pub matrix: Matrix,
    pub json: PathBuf,
    pub markdown: PathBuf,
    pub history: PathBuf,
}

/// The user's matrix directory: `$XDG_DATA_HOME/claij` (absolute, non-empty), else
/// `$HOME/.local/share/claij`, as claij looks it up; `var` reads the environment.
pub(super) fn data_dir(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let var = |name| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("XDG_DATA_HOME")
        .filter(|dir| dir.is_absolute())
        .or_else(|| var("HOME").map(|home| home.join(".local").join("share")))
        .map(|data| data.join("claij"))
}

/// Merges `run` (its records stamped `at`) into the matrix in `dir`, rewrites the matrix's JSON and
/// Markdown (`command` in its header) and appends the run to the history, all under the lock.
///
/// # Errors
///
/// An IO failure, or a matrix file that is not one (named with the record's pointer): it is left
/// as it is rather than overwritten.
pub(super) fn store(run: &[Record], dir: &Path, at: &str, command: &str) -> Result<Stored> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let _lock = lock(&dir.join(LOCK))?;
    let json = dir.join(JSON);
    let old = read_records(&json)?;
    let stamped: Vec<Record> = run
        .iter()
        .map(|r| Record {
            at: Some(at.to_owned()),
            ..r.clone()
        })
        .collect();
    let matrix = Matrix::from_records(&merge(&old, &stamped));
    write_atomic(
        &json,
        &(serde_json::to_string_pretty(&matrix.to_json(at))? + "\n"),
    )?;
    let markdown = dir.join(MARKDOWN);
    write_atomic(&markdown, &matrix.to_markdown(at, command))?;
    let history = dir.join(HISTORY);
    let line = Matrix::from_records(&stamped).history_line(at) + "\n";
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(&history)
        .and_then(|mut file| file.write_all(line.as_bytes()))
        .with_context(|| format!("cannot append to {}", history.display()))?;
    Ok(Stored {
        matrix,
        json,
        markdown,
        history,
    })
}

/// The records of the matrix at `path`; none when there is no file yet.
pub(super) fn read_records(path: &Path) -> Result<Vec<Record>> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let value: Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not JSON, so not merged into (move it away to start a new matrix)",
            path.display()
        )
    })?;
    let Some(records) = value.get("records").and_then(Value::as_array) else {
        bail!(
            "{}: /records: not an array, so not merged into (move it away to start a new matrix)",
            path.display()
        );
    };
    records
        .iter()
        .enumerate()
        .map(|(i, record)| {
            Record::from_value(record).map_err(|why| {
                anyhow::anyhow!(
                    "{}: /records/{i}: {why}, so not merged into (move it away to start a new matrix)",
                    path.display()
                )
            })
        })
        .collect()
}

/// Writes `text` to a temp file beside `path` and renames it over `path`: a reader sees the old
/// file or the new one, never half of one.
pub(super) fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let name = path
        .file_name()
        .map_or_else(|| "matrix".into(), |n| n.to_string_lossy().into_owned());
    let temp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = File::create(&temp)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.sync_all()
        })
        .and_then(|()| fs::rename(&temp, path));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written.with_context(|| format!("cannot write {}", path.display()))
}

/// Takes the lock file's lock, saying so when another run holds it and waiting for it.
fn lock(path: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            println!(
                "waiting for {} (another `cargo xtask integration` is writing the matrix)",
                path.display()
            );
            std::io::stdout().flush()?;
            file.lock()
                .with_context(|| format!("cannot lock {}", path.display()))?;
        }
        Err(TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock {}", path.display()));
        }
    }
    Ok(file)
}
