//! `--session FILE` (alias `--memory`): the conversation carried from one `claij ask` (or `claij
//! chat`) to the next. Version 3 of the file:
//!
//! ```json
//! {"version": 3, "turn": 3,
//!  "history": {"messages": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "{...}"}]},
//!  "interceptors": {"memory": {"version": 1, "state": {"summaries": ["..."]}},
//!                   "eval": {"version": 1, "state": {"code": "6 * 7", "outcome": {"Ok": 42}, "output": ""}},
//!                   "tools": {"version": 1, "state": [{"name": "now", "args": {}, "output": {"Ok": "2026-..."}, "origin": {"kind": "rust"}}]}},
//!  "project": "NAME", "extensions": {"active": [...], "audit": [...], "compactions": [...]},
//!  "applied": {"active": [...], "audit": [...]}}
//! ```
//!
//! `history` is the pipeline's message history (`Context::history`, already cut to the window of
//! `--history-messages` and `--history-tokens`); `interceptors` is what each interceptor keeps for
//! the next turn (`Chain::carry`: the memory's summaries, the last reply's `eval` result, tool and
//! MCP results the model sees only on the next turn), each under its name in its own versioned
//! format, restored before the next turn (`Chain::restore`); the state of an interceptor a run
//! does not have is kept as it was. `project` is the `--project` the conversation uses (a later
//! run without `--project` keeps it); `extensions` the schema extensions approved with
//! `--interceptors proposals`, their audit log and the compactions in force (each with the
//! extensions it replaced, for `claij schema rollback`); `applied` the schema deltas the last turn's
//! requests were composed of and the audit log of every change (each delta when first applied,
//! changed or dropped, who added it and when: `claij schema audit FILE`). Empty ones are left out.
//!
//! A version 1 (`{turn, memory, extensions}`, no `version`) or 2 file (`memory` and
//! `tool_results` at the top) is read as version 3 (their states moved under `interceptors`:
//! `memory`, and the tool results by origin, `tools` and `mcp`) and written back as one; a newer
//! version is refused ([`SessionError::Newer`]), as is an interceptor's state in a newer format
//! than this claij reads, so an older claij never rewrites, and loses, what it does not know.
//! Keys of the file this version does not know survive a rewrite.
//!
//! One conversation has one writer at a time: a process holds an exclusive lock on the sidecar
//! `FILE.lock` (the file itself is replaced by a rename on every save, so it cannot carry the lock)
//! from before it reads the file until after it wrote it back, and removes `FILE.lock` as it lets
//! go. A process waiting on the lock may thus get it on a file no longer at that path: it then
//! locks what is at the path now (or creates it), so every holder holds the one file at the path,
//! which only a holder removes ([`SessionLock`]). A lock file of a killed process stays behind,
//! unlocked, and is used as any other. The lock spans the model call on
//! purpose: a concurrent `claij ask --session FILE` waits and then starts from the turn before it, so
//! no turn is lost and every turn is asked with the memory of all the turns before it (merging two
//! turns asked from the same memory at write time would keep both summaries but each model would
//! have answered without the other's).

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{Error, Result};
use claij_interceptors::{Carried, Chain, Context, History, MemoryState, Stage};
use claij_schema::{AppliedLog, SavedRegistry, SchemaDelta};
use serde::Deserialize;
use serde_json::{Map, Value, json};

#[cfg(test)]
mod tests;

/// The version of the session file this claij writes (and the newest it reads).
pub const VERSION: u64 = 3;

/// What one invocation hands to the next.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Session {
    /// Completed turns.
    pub turn: u64,
    /// The messages of the conversation, as the pipeline keeps them.
    pub history: History,
    /// What each interceptor keeps for the next turn, by name ([`Chain::carry`]).
    pub carried: BTreeMap<String, Carried>,
    /// The `--project` of the conversation.
    pub project: Option<String>,
    /// The approved schema extensions and their audit log (its `base` is not saved: the schema
    /// of the run that reads it is).
    pub extensions: Option<SavedRegistry>,
    /// The schema deltas that shaped the conversation's requests, and every change of them.
    pub applied: AppliedLog,
    /// The file as read, for the keys this version does not know.
    file: Map<String, Value>,
}

/// A session file this claij cannot read for what it says, not for its syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionError {
    /// Written by a newer claij: its version is above [`VERSION`].
    Newer {
        /// The file.
        path: PathBuf,
        /// Its `version`.
        version: u64,
    },
    /// `version` is not a whole number from 1.
    BadVersion {
        /// The file.
        path: PathBuf,
        /// The `version` as written.
        found: String,
    },
}

/// The keys of the file this version knows.
#[derive(Deserialize)]
struct Known {
    #[serde(default)]
    turn: u64,
    #[serde(default)]
    history: History,
    #[serde(default)]
    interceptors: BTreeMap<String, Carried>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    extensions: Option<Extensions>,
    #[serde(default)]
    applied: AppliedLog,
}

/// The `extensions` key: a [`SavedRegistry`] without its base.
#[derive(serde::Serialize, Deserialize)]
struct Extensions {
    #[serde(default)]
    active: Vec<claij_schema::SchemaDelta>,
    #[serde(default)]
    audit: claij_schema::AuditLog,
    /// The compactions in force, with the deltas each replaced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    compactions: Vec<claij_schema::Compaction>,
}

/// The exclusive lock on a session file's sidecar `FILE.lock`, held until dropped; dropped, it
/// removes `FILE.lock`, then lets go of the lock.
#[derive(Debug)]
pub struct SessionLock {
    /// The lock file, open and locked (closing it unlocks it).
    _file: File,
    /// Where it is.
    path: PathBuf,
}

impl Session {
    /// The session in `path`; a new one when the file does not exist or is empty.
    pub fn load(path: &Path) -> Result<Self> {
        let text =
            match crate::fs::read_file_capped(path, crate::fs::MAX_INPUT_BYTES, "a session file") {
                Ok(text) => text,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Self::default()),
                Err(e) => return Err(Error::io(format!("cannot read {}", path.display()), e)),
            };
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let not_session = || {
            format!(
                "{}: not a claij session file (`{{\"version\": {VERSION}, \"turn\": N, \"interceptors\": {{...}}}}`)",
                path.display()
            )
        };
        let mut file: Map<String, Value> =
            serde_json::from_str(&text).map_err(|e| Error::file_because(not_session(), e))?;
        migrate(&mut file, path)?;
        let known: Known = serde_json::from_value(Value::Object(file.clone()))
            .map_err(|e| Error::file_because(not_session(), e))?;
        Ok(Self {
            turn: known.turn,
            history: known.history,
            carried: known.interceptors,
            project: known.project,
            extensions: known.extensions.map(|e| SavedRegistry {
                base: Value::Null,
                extensions: e.active,
                audit: e.audit,
                compactions: e.compactions,
            }),
            applied: known.applied,
            file,
        })
    }

    /// Whether one more turn can be counted: a counter at its maximum is an error, never a wrap.
    pub fn check_turn(turn: u64, path: Option<&Path>) -> Result<()> {
        if turn < u64::MAX {
            return Ok(());
        }
        let name = path.map_or_else(String::new, |p| format!("{}: ", p.display()));
        Err(Error::session(format!(
            "{name}the turn counter is at its maximum ({}): start a new conversation",
            u64::MAX
        )))
    }

    /// This session carried on by `ctx` after a turn through `chain`: its turn and history, what
    /// each interceptor of `chain` keeps for the next turn (the states of interceptors not in
    /// `chain` as they were), the deltas of the turn's requests (`applied`, recorded in the audit
    /// log when they changed, at `now`), the rest of the file as it was.
    pub fn continued(
        &self,
        ctx: &Context,
        chain: &Chain,
        applied: &[SchemaDelta],
        now: SystemTime,
    ) -> Result<Self> {
        let mut carried = self.carried.clone();
        for name in chain.names() {
            carried.remove(name);
        }
        carried.extend(chain.carry(ctx)?);
        let mut log = self.applied.clone();
        log.record(applied, now);
        Ok(Self {
            turn: ctx.turn,
            history: ctx.history.clone(),
            carried,
            project: self.project.clone(),
            extensions: self.extensions.clone(),
            applied: log,
            file: self.file.clone(),
        })
    }

    /// The same session with the extensions `registry` holds (kept as read when it is `None`).
    #[must_use]
    pub fn with_extensions(mut self, registry: Option<&claij_schema::Registry>) -> Self {
        if let Some(registry) = registry {
            self.extensions = Some(registry.to_saved());
        }
        self
    }

    /// The same session for the project `project` (kept as read when it is `None`).
    #[must_use]
    pub fn with_project(mut self, project: Option<&str>) -> Self {
        if let Some(project) = project {
            self.project = Some(project.to_owned());
        }
        self
    }

    /// The same session started over: no turn, history or interceptor state (`chat`'s `/reset`);
    /// the project, the schema extensions and the audit log are kept.
    #[must_use]
    pub fn reset(mut self) -> Self {
        self.turn = 0;
        self.history = History::default();
        self.carried.clear();
        self
    }

    /// A context that continues this session through `chain`: the turn, the history, and what each
    /// of its interceptors carried (restored by them). `path` names the file in errors.
    pub fn to_context(&self, chain: &Chain, path: Option<&Path>) -> Result<Context> {
        let mut ctx = Context::default();
        ctx.turn = self.turn;
        ctx.history = self.history.clone();
        if let Err(e) = chain.restore(&self.carried, &mut ctx) {
            let file = path.map_or_else(String::new, |p| format!("{}: ", p.display()));
            return Err(match e {
                claij_interceptors::Error::Hook {
                    interceptor,
                    stage: Stage::Restore,
                    source,
                } => Error::session(format!(
                    "{file}`interceptors.{interceptor}`: {}: use a newer claij, or start a new session",
                    claij_interceptors::ErrorChain(source.as_ref())
                )),
                other => {
                    Error::session(format!("{file}{}", claij_interceptors::ErrorChain(&other)))
                }
            });
        }
        Ok(ctx)
    }

    /// The file's JSON: the keys it was read with, the known ones replaced, at [`VERSION`].
    pub fn to_value(&self) -> Result<Value> {
        let mut file = self.file.clone();
        file.insert("version".into(), VERSION.into());
        file.insert("turn".into(), self.turn.into());
        if self.history.is_empty() {
            file.remove("history");
        } else {
            file.insert(
                "history".into(),
                serde_json::to_value(&self.history).map_err(json)?,
            );
        }
        if self.carried.is_empty() {
            file.remove("interceptors");
        } else {
            file.insert(
                "interceptors".into(),
                serde_json::to_value(&self.carried).map_err(json)?,
            );
        }
        match &self.project {
            Some(project) => file.insert("project".into(), project.as_str().into()),
            None => file.remove("project"),
        };
        if let Some(saved) = &self.extensions
            && !(saved.extensions.is_empty() && saved.audit.is_empty())
        {
            let extensions = Extensions {
                active: saved.extensions.clone(),
                audit: saved.audit.clone(),
                compactions: saved.compactions.clone(),
            };
            file.insert(
                "extensions".into(),
                serde_json::to_value(extensions).map_err(json)?,
            );
        }
        if self.applied.is_empty() {
            file.remove("applied");
        } else {
            file.insert(
                "applied".into(),
                serde_json::to_value(&self.applied).map_err(json)?,
            );
        }
        Ok(Value::Object(file))
    }

    /// Writes the session to `path` atomically: a temp file in the same directory, then a rename, so
    /// an interrupted write never leaves half a file.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut text = serde_json::to_string_pretty(&self.to_value()?).map_err(json)?;
        text.push('\n');
        crate::fs::write_atomic(path, text.as_bytes(), None)
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
    }
}

impl SessionLock {
    /// Locks the session file `path` (through `path.lock`, created if need be), waiting for another
    /// process that holds it, then checks that `path` can be written, so a turn is never paid for
    /// and then lost. The lock file is removed when the lock is dropped.
    ///
    /// # Errors
    ///
    /// `path` is a directory or cannot be written; the lock file cannot be made or locked.
    pub fn acquire(path: &Path) -> Result<Self> {
        Self::acquire_with(path, &mut |_| Ok(()))
    }

    /// [`SessionLock::acquire`], calling `waiting` with the lock file's path each time before it
    /// waits for another process's lock.
    pub fn acquire_with(
        path: &Path,
        waiting: &mut dyn FnMut(&Path) -> io::Result<()>,
    ) -> Result<Self> {
        let unwritable = || format!("the session file {} cannot be written", path.display());
        let Some(name) = path.file_name() else {
            return Err(Error::session(format!(
                "{}: {}: not a file name",
                unwritable(),
                path.display()
            )));
        };
        if path.is_dir() {
            return Err(Error::session(format!(
                "{}: {} is a directory",
                unwritable(),
                path.display()
            )));
        }
        let mut lock_name = name.to_owned();
        lock_name.push(".lock");
        let lock_path = path.with_file_name(lock_name);
        let file = loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&lock_path)
                .map_err(|e| Error::io(format!("{}: {}", unwritable(), lock_path.display()), e))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    let cannot = |e| Error::io(format!("cannot lock {}", lock_path.display()), e);
                    waiting(&lock_path).map_err(cannot)?;
                    file.lock().map_err(cannot)?;
                }
                Err(TryLockError::Error(e)) => {
                    return Err(Error::io(format!("cannot lock {}", lock_path.display()), e));
                }
            }
            // The holder before removed the file as it let go: this lock is on a file no longer at
            // the path, and another process may hold the one there now.
            if is_at(&file, &lock_path)
                .map_err(|e| Error::io(format!("cannot lock {}", lock_path.display()), e))?
            {
                break file;
            }
        };
        let lock = Self {
            _file: file,
            path: lock_path,
        };
        check_writable(path)
            .map_err(|(at, e)| Error::io(format!("{}: {}", unwritable(), at.display()), e))?;
        Ok(lock)
    }
}

impl Drop for SessionLock {
    /// Removes the lock file while still holding its lock (so a process that locks it next sees
    /// it is gone and locks the path's new one); the lock goes when the file closes, after this.
    fn drop(&mut self) {
        if cfg!(unix) {
            // Best effort: a lock file left behind is unlocked, and used as any other.
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Whether `file` is the file at `path` now (not one removed from it, or replaced).
#[cfg(unix)]
fn is_at(file: &File, path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt as _;
    let open = file.metadata()?;
    match fs::metadata(path) {
        Ok(now) => Ok(now.dev() == open.dev() && now.ino() == open.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Elsewhere the lock file is never removed ([`SessionLock`]'s drop), so it is the one at the path.
#[cfg(not(unix))]
fn is_at(_file: &File, _path: &Path) -> io::Result<bool> {
    Ok(true)
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Newer { path, version } => write!(
                f,
                "{}: session file version {version} is newer than this claij reads (up to \
                 {VERSION}): use a newer claij, or start a new session",
                path.display()
            ),
            Self::BadVersion { path, found } => write!(
                f,
                "{}: session file `version` must be a whole number from 1, found {found}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for SessionError {}

/// Brings a session file read at its `version` (none: 1) up to [`VERSION`], in place.
fn migrate(file: &mut Map<String, Value>, path: &Path) -> Result<(), SessionError> {
    let version = match file.get("version") {
        None => 1,
        Some(found) => match found.as_u64() {
            Some(version) if version >= 1 => version,
            _ => {
                return Err(SessionError::BadVersion {
                    path: path.to_owned(),
                    found: crate::one_line(&found.to_string())
                        .chars()
                        .take(40)
                        .collect(),
                });
            }
        },
    };
    if version > VERSION {
        return Err(SessionError::Newer {
            path: path.to_owned(),
            version,
        });
    }
    // Version 1 (`{turn, memory, extensions}`) is version 2 without history, tool results or a
    // project: their defaults.
    if version < 3 {
        to_version_3(file);
    }
    // A later version adds its step here.
    file.insert("version".into(), VERSION.into());
    Ok(())
}

/// Version 2 to 3: `memory` becomes the memory interceptor's state, `tool_results` the states of
/// the interceptors that ran them (by origin: `tools`, `mcp`, or the interceptor named), each in
/// version 1 of its format, under `interceptors`.
fn to_version_3(file: &mut Map<String, Value>) {
    let mut carried = Map::new();
    if let Some(memory) = file.remove("memory") {
        let empty = MemoryState::deserialize(&memory).is_ok_and(|m| m.is_empty());
        if !empty {
            carried.insert("memory".into(), json!({"version": 1, "state": memory}));
        }
    }
    if let Some(Value::Array(results)) = file.remove("tool_results") {
        let mut by_origin: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for result in results {
            let origin = &result["origin"];
            let name = match origin["kind"].as_str() {
                Some("rust") => "tools".to_owned(),
                Some("mcp") => "mcp".to_owned(),
                _ => origin["interceptor"].as_str().unwrap_or("tools").to_owned(),
            };
            by_origin.entry(name).or_default().push(result);
        }
        for (name, results) in by_origin {
            carried.insert(name, json!({"version": 1, "state": results}));
        }
    }
    if !carried.is_empty() {
        file.insert("interceptors".into(), Value::Object(carried));
    }
}

/// The session file can be replaced: an existing one opens for writing, and a temp file can be made
/// (and is removed) beside it.
/// The error is the file that failed, and why.
fn check_writable(path: &Path) -> Result<(), (PathBuf, io::Error)> {
    match OpenOptions::new().write(true).open(path) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err((path.to_owned(), e)),
    }
    let temp = crate::fs::temp_path(path);
    File::create(&temp).map_err(|e| (temp.clone(), e))?;
    fs::remove_file(&temp).map_err(|e| (temp.clone(), e))?;
    Ok(())
}

/// A session that cannot be written as JSON (it always can: its parts are JSON values).
fn json(e: serde_json::Error) -> Error {
    Error::file_because("cannot write the session as JSON", e)
}
