//! `--session FILE` (alias `--memory`): the conversation carried from one `claij ask` (or `claij
//! chat`) to the next. Version 2 of the file:
//!
//! ```json
//! {"version": 2, "turn": 3, "memory": {"summaries": ["..."]},
//!  "history": {"messages": [{"role": "user", "content": "..."}, {"role": "assistant", "content": "{...}"}]},
//!  "tool_results": [{"name": "now", "args": {}, "output": {"Ok": "2026-..."}, "origin": {"kind": "rust"}}],
//!  "project": "NAME", "extensions": {"active": [...], "audit": [...]}}
//! ```
//!
//! `history` is the pipeline's message history (`Context::history`, already cut to the window of
//! `--history-messages` and `--history-tokens`); `tool_results` are the tool and MCP results of the last turn, which the model sees only on the next
//! one (each interceptor's prompt cuts them to `--tool-results-budget`); `project` is the `--project`
//! the conversation uses (a later run without `--project` keeps it); `extensions` the schema
//! extensions approved with `--interceptors proposals` and their audit log. Empty ones are left out.
//! A version 1 file (`{turn, memory, extensions}`, no `version`) is read as version 2 and written
//! back as one; a newer version is refused ([`SessionError::Newer`]), so an older claij never
//! rewrites, and loses, what it does not know.
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
//! have answered without the other's). Keys of the file this version does not know survive a
//! rewrite.

use std::fmt;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use claij_interceptors::{Context, History, MemoryState, ToolResult};
use claij_schema::SavedRegistry;
use serde::Deserialize;
use serde_json::{Map, Value};

/// The version of the session file this claij writes (and the newest it reads).
pub(crate) const VERSION: u64 = 2;

/// What one invocation hands to the next.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Session {
    /// Completed turns.
    pub turn: u64,
    /// What the memory interceptor remembers.
    pub memory: MemoryState,
    /// The messages of the conversation, as the pipeline keeps them.
    pub history: History,
    /// The results of the last turn's tool and MCP calls, not yet shown to the model.
    pub tool_results: Vec<ToolResult>,
    /// The `--project` of the conversation.
    pub project: Option<String>,
    /// The approved schema extensions and their audit log (its `base` is not saved: the schema
    /// of the run that reads it is).
    pub extensions: Option<SavedRegistry>,
    /// The file as read, for the keys this version does not know.
    file: Map<String, Value>,
}

/// A session file this claij cannot read for what it says, not for its syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SessionError {
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
    memory: MemoryState,
    #[serde(default)]
    history: History,
    #[serde(default)]
    tool_results: Vec<ToolResult>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    extensions: Option<Extensions>,
}

/// The `extensions` key: a [`SavedRegistry`] without its base.
#[derive(serde::Serialize, Deserialize)]
struct Extensions {
    #[serde(default)]
    active: Vec<claij_schema::SchemaDelta>,
    #[serde(default)]
    audit: claij_schema::AuditLog,
}

/// The exclusive lock on a session file's sidecar `FILE.lock`, held until dropped; dropped, it
/// removes `FILE.lock`, then lets go of the lock.
#[derive(Debug)]
pub(crate) struct SessionLock {
    /// The lock file, open and locked (closing it unlocks it).
    _file: File,
    /// Where it is.
    path: PathBuf,
}

impl Session {
    /// The session in `path`; a new one when the file does not exist or is empty.
    pub(crate) fn load(path: &Path) -> Result<Self> {
        let text = match crate::input::read_file_capped(
            path,
            crate::input::MAX_INPUT_BYTES,
            "a session file",
        ) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let not_session = || {
            format!(
                "{}: not a claij session file (`{{\"version\": {VERSION}, \"turn\": N, \"memory\": {{\"summaries\": [...]}}}}`)",
                path.display()
            )
        };
        let mut file: Map<String, Value> = serde_json::from_str(&text).with_context(not_session)?;
        migrate(&mut file, path)?;
        let known: Known =
            serde_json::from_value(Value::Object(file.clone())).with_context(not_session)?;
        Ok(Self {
            turn: known.turn,
            memory: known.memory,
            history: known.history,
            tool_results: known.tool_results,
            project: known.project,
            extensions: known.extensions.map(|e| SavedRegistry {
                base: Value::Null,
                extensions: e.active,
                audit: e.audit,
            }),
            file,
        })
    }

    /// Whether one more turn can be counted: a counter at its maximum is an error, never a wrap to 0.
    pub(super) fn check_turn(turn: u64, path: Option<&Path>) -> Result<()> {
        if turn < u64::MAX {
            return Ok(());
        }
        let name = path.map_or_else(String::new, |p| format!("{}: ", p.display()));
        bail!(
            "{name}the turn counter is at its maximum ({}): start a new conversation",
            u64::MAX
        )
    }

    /// This session carried on by `ctx`: its turn, memory, history and tool results, the rest of the file as
    /// it was.
    pub(super) fn continued(&self, ctx: &Context) -> Self {
        Self {
            turn: ctx.turn,
            memory: ctx.memory.clone(),
            history: ctx.history.clone(),
            tool_results: ctx.tool_results.clone(),
            project: self.project.clone(),
            extensions: self.extensions.clone(),
            file: self.file.clone(),
        }
    }

    /// The same session with the extensions `registry` holds (kept as read when it is `None`).
    #[must_use]
    pub(crate) fn with_extensions(mut self, registry: Option<&claij_schema::Registry>) -> Self {
        if let Some(registry) = registry {
            self.extensions = Some(registry.to_saved());
        }
        self
    }

    /// The same session for the project `project` (kept as read when it is `None`).
    #[must_use]
    pub(crate) fn with_project(mut self, project: Option<&str>) -> Self {
        if let Some(project) = project {
            self.project = Some(project.to_owned());
        }
        self
    }

    /// A context that continues this session.
    pub(super) fn to_context(&self) -> Context {
        let mut ctx = Context::default();
        ctx.turn = self.turn;
        ctx.memory = self.memory.clone();
        ctx.history = self.history.clone();
        ctx.tool_results = self.tool_results.clone();
        ctx
    }

    /// The file's JSON: the keys it was read with, the known ones replaced (inside `memory`, the
    /// keys [`MemoryState`] does not have are kept too), at [`VERSION`].
    pub(super) fn to_value(&self) -> Result<Value> {
        let mut file = self.file.clone();
        let mut memory = match file.remove("memory") {
            Some(Value::Object(old)) => {
                let known = memory_keys()?;
                old.into_iter()
                    .filter(|(key, _)| !known.contains(key))
                    .collect()
            }
            _ => Map::new(),
        };
        if let Value::Object(new) = serde_json::to_value(&self.memory)? {
            memory.extend(new);
        }
        file.insert("version".into(), VERSION.into());
        file.insert("turn".into(), self.turn.into());
        file.insert("memory".into(), Value::Object(memory));
        if self.history.is_empty() {
            file.remove("history");
        } else {
            file.insert("history".into(), serde_json::to_value(&self.history)?);
        }
        if self.tool_results.is_empty() {
            file.remove("tool_results");
        } else {
            file.insert(
                "tool_results".into(),
                serde_json::to_value(&self.tool_results)?,
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
            };
            file.insert("extensions".into(), serde_json::to_value(extensions)?);
        }
        Ok(Value::Object(file))
    }

    /// Writes the session to `path` atomically: a temp file in the same directory, then a rename, so
    /// an interrupted write never leaves half a file.
    pub(crate) fn save(&self, path: &Path) -> Result<()> {
        let mut text = serde_json::to_string_pretty(&self.to_value()?)?;
        text.push('\n');
        let temp = temp_path(path);
        let written = fs::write(&temp, text).and_then(|()| fs::rename(&temp, path));
        if let Err(e) = written {
            let _ = fs::remove_file(&temp);
            return Err(e).with_context(|| format!("cannot write {}", path.display()));
        }
        Ok(())
    }
}

impl SessionLock {
    /// Locks the session file `path` (through `path.lock`, created if need be), waiting for another
    /// process that holds it (saying so on stderr unless `quiet`), then checks that `path` can be
    /// written, so a turn is never paid for and then lost. The lock file is removed when the lock
    /// is dropped.
    pub(crate) fn acquire(path: &Path, quiet: bool) -> Result<Self> {
        let mut told = quiet;
        Self::acquire_with(path, &mut |lock_path| {
            if !told {
                super::report::notice(&format!(
                    "waiting for {}: another claij is on this conversation",
                    lock_path.display()
                ))?;
                told = true;
            }
            Ok(())
        })
    }

    /// [`SessionLock::acquire`], calling `waiting` with the lock file's path each time before it
    /// waits for another process's lock.
    pub(crate) fn acquire_with(
        path: &Path,
        waiting: &mut dyn FnMut(&Path) -> Result<()>,
    ) -> Result<Self> {
        let unwritable = || format!("the session file {} cannot be written", path.display());
        let name = path
            .file_name()
            .ok_or_else(|| anyhow!("{}: not a file name", path.display()))
            .with_context(unwritable)?;
        if path.is_dir() {
            return Err(anyhow!("{} is a directory", path.display())).with_context(unwritable);
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
                .with_context(|| lock_path.display().to_string())
                .with_context(unwritable)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    waiting(&lock_path)?;
                    file.lock()
                        .with_context(|| format!("cannot lock {}", lock_path.display()))?;
                }
                Err(TryLockError::Error(e)) => {
                    return Err(e).with_context(|| format!("cannot lock {}", lock_path.display()));
                }
            }
            // The holder before removed the file as it let go: this lock is on a file no longer at
            // the path, and another process may hold the one there now.
            if is_at(&file, &lock_path)
                .with_context(|| format!("cannot lock {}", lock_path.display()))?
            {
                break file;
            }
        };
        let lock = Self {
            _file: file,
            path: lock_path,
        };
        check_writable(path).with_context(unwritable)?;
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
    // Version 1 (`{turn, memory, extensions}`) is version 2 without history, tool results or a project:
    // their defaults. A later version adds its step here.
    file.insert("version".into(), VERSION.into());
    Ok(())
}

/// The session file can be replaced: an existing one opens for writing, and a temp file can be made
/// (and is removed) beside it.
fn check_writable(path: &Path) -> Result<()> {
    match OpenOptions::new().write(true).open(path) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| path.display().to_string()),
    }
    let temp = temp_path(path);
    File::create(&temp).with_context(|| temp.display().to_string())?;
    fs::remove_file(&temp).with_context(|| temp.display().to_string())?;
    Ok(())
}

/// The keys [`MemoryState`] writes when every field is set.
fn memory_keys() -> Result<Vec<String>> {
    let full = MemoryState {
        summaries: Vec::new(),
        insights: Some(String::new()),
    };
    Ok(match serde_json::to_value(full)? {
        Value::Object(keys) => keys.into_iter().map(|(key, _)| key).collect(),
        _ => Vec::new(),
    })
}

/// `path`'s sibling `.<name>.<pid>.tmp`.
fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "memory".into(), |n| n.to_string_lossy());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}
