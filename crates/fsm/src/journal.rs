//! The journal: a run's trail appended to a JSONL file as it happens, flushed (and by default fsynced)
//! per transition, so a killed process can resume from the last recorded transition.
//!
//! Line 1 is the header `{"kind": "run", "run_id", "fsm", "started_at", "definition", "sub_fsms"}`;
//! every other line is `{"kind": "transition", ...entry}`, or `{"kind": "suspended", ...}` (a
//! [`Suspended`] sub-FSM run waiting for a person, which the transition out of its state supersedes),
//! or `{"kind": "remedy", "state", "remedy"}` (a meta-debugging [`Remedy`] for a state, applied for the
//! rest of the run when it is a prompt remedy, with its `effect` when it was tried), or
//! `{"kind": "extensions", "registry"}` (the run's schema extensions and their audit log, a
//! [`SavedRegistry`]; the last such line wins, see [`read_extensions`]), or `{"kind": "applied",
//! "state", "entries"}` (the change in the schema deltas an `llm` state's requests were composed
//! of, written after the transition of the step that changed them: each delta when first
//! applied, changed or dropped, who added it and when; [`read_applied`] folds them per state).
//!
//! A journal has one writer at a time: an open [`Journal`] holds an exclusive advisory lock on its
//! file (`flock` on Unix, `LockFileEx` on Windows) until it is dropped, and opening one that another
//! handle holds is [`Error::JournalLocked`]. So two resumes of one journal cannot both run.
//!
//! # A torn last line
//!
//! A process killed (or a machine losing power) while writing leaves at most its last line cut
//! short. The rule for what was recorded:
//!
//! - every line but the last must parse as a journal line, or the journal is corrupt
//!   ([`Error::CorruptJournal`] naming the line);
//! - the last line, when it ends with its newline, must parse too (each line is written with its
//!   newline as its last byte, so a line that has it was written whole);
//! - the last line without its newline is complete when it parses as a journal line (only the newline
//!   was lost), and torn otherwise: its transition did not happen, and it is ignored.
//!
//! [`read`] applies the rule without changing the file; [`Journal::resume`] also repairs the file
//! before appending: it truncates a torn line away, or adds the newline a complete last line lacks,
//! and fsyncs, so the lines it appends start on a line of their own.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use claij_schema::{AppliedLog, AuditEntry, SavedRegistry};

use crate::builtin::meta_debug::Remedy;
use crate::error::Error;
use crate::trail::Entry;

/// How hard each line is pushed to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Durability {
    /// Flushed and fsynced: survives a power cut.
    #[default]
    Fsync,
    /// Flushed to the OS: survives the process being killed.
    Flush,
}

/// What starting a new run does when its journal file already holds something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ExistingJournal {
    /// Refuse with [`Error::JournalExists`] and leave the file alone (an empty file is taken).
    #[default]
    Refuse,
    /// Start the new run's journal over it.
    Overwrite,
}

/// An open journal, appending, holding the journal file's lock until dropped.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    durability: Durability,
}

/// The first line of a journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Header {
    /// The run.
    pub run_id: String,
    /// The machine's id.
    pub fsm: String,
    /// When the run started.
    #[serde(with = "claij_schema::rfc3339")]
    pub started_at: SystemTime,
    /// The machine itself, so the journal alone is enough to resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<crate::definition::Definition>,
    /// The sub-FSMs registered with the runner, so the journal alone is enough to rebuild them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sub_fsms: Vec<SubDefinition>,
}

/// A sub-FSM a runner was given: the name `fsm` states use in `config.fsm`, its definition, and its
/// own sub-FSMs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SubDefinition {
    /// The name states refer to it by.
    pub name: String,
    /// The machine.
    pub definition: crate::definition::Definition,
    /// Its sub-FSMs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sub_fsms: Vec<SubDefinition>,
}

impl SubDefinition {
    /// `definition` under `name`, with its own sub-FSMs.
    pub fn new(
        name: impl Into<String>,
        definition: crate::definition::Definition,
        sub_fsms: Vec<SubDefinition>,
    ) -> Self {
        Self {
            name: name.into(),
            definition,
            sub_fsms,
        }
    }
}

/// A sub-FSM's run, stopped in a `human` state (perhaps inside a sub-FSM of its own), and the
/// parent state that runs it: what resuming the parent needs to go on with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Suspended {
    /// The parent's `fsm` state.
    pub in_state: String,
    /// The sub-FSM run's id.
    pub run_id: String,
    /// Where the sub-FSM run is.
    pub state: String,
    /// The event that entered it.
    pub event: Value,
    /// The sub-FSM run's trail so far.
    pub trail: crate::trail::Trail,
    /// Whether it waits (`waiting`) or was given its input and runs on (`running`).
    pub status: crate::runner::Status,
    /// The run of its own sub-FSM it waits in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<Box<Suspended>>,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    Run(Header),
    Transition(Entry),
    Suspended(Suspended),
    Remedy {
        state: String,
        remedy: Remedy,
    },
    Extensions {
        registry: SavedRegistry,
    },
    Applied {
        state: String,
        entries: Vec<AuditEntry>,
    },
}

/// What a journal's bytes hold, by the torn-line rule of the module docs.
struct Scan {
    header: Header,
    entries: Vec<Entry>,
    /// The length of the recorded part: everything after it is a torn line.
    recorded: u64,
    /// Whether the recorded part's last line lacks its newline.
    missing_newline: bool,
    /// The last suspension line no transition followed.
    suspended: Option<Suspended>,
    /// The remedies recorded, by state, the last for a state winning.
    remedies: Vec<(String, Remedy)>,
    /// The last schema extensions line.
    extensions: Option<SavedRegistry>,
    /// The applied lines, folded per state.
    applied: BTreeMap<String, AppliedLog>,
}

/// What resuming a journal read, for the runner.
pub(crate) struct Resumed {
    pub(crate) header: Header,
    pub(crate) entries: Vec<Entry>,
    pub(crate) suspended: Option<Suspended>,
    pub(crate) remedies: Vec<(String, Remedy)>,
    pub(crate) applied: BTreeMap<String, AppliedLog>,
}

impl Journal {
    /// Creates the journal at `path` for a new run and writes its header; `existing` says what to do
    /// when the file already holds something.
    ///
    /// # Errors
    ///
    /// [`Error::Journal`] when the file cannot be written, [`Error::JournalLocked`] when another
    /// handle holds it, [`Error::JournalExists`] when it is not empty and `existing` refuses.
    pub fn create(
        path: impl AsRef<Path>,
        header: &Header,
        existing: ExistingJournal,
    ) -> Result<Self, Error> {
        let mut journal = Self::open_new(path.as_ref(), existing)?;
        journal.begin(header)?;
        Ok(journal)
    }

    /// Opens an existing journal to append to it: [`Journal::resume`] without what it read.
    ///
    /// # Errors
    ///
    /// As [`Journal::resume`].
    pub fn append_to(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::resume(path).map(|(journal, _, _)| journal)
    }

    /// Opens an existing journal to go on with its run: locks it, reads its header and transitions,
    /// and repairs a torn last line (see the module docs) before anything is appended.
    ///
    /// # Errors
    ///
    /// [`Error::Journal`] when the file cannot be opened, read or repaired,
    /// [`Error::JournalLocked`] when another handle holds it, [`Error::CorruptJournal`] naming the
    /// line.
    pub fn resume(path: impl AsRef<Path>) -> Result<(Self, Header, Vec<Entry>), Error> {
        Self::resume_run(path.as_ref()).map(|(journal, scan)| (journal, scan.header, scan.entries))
    }

    /// [`Journal::resume`], with the sub-FSM run the parent waits in.
    pub(crate) fn resume_suspended(path: &Path) -> Result<(Self, Resumed), Error> {
        Self::resume_run(path).map(|(journal, scan)| {
            let resumed = Resumed {
                header: scan.header,
                entries: scan.entries,
                suspended: scan.suspended,
                remedies: scan.remedies,
                applied: scan.applied,
            };
            (journal, resumed)
        })
    }

    fn resume_run(path: &Path) -> Result<(Self, Scan), Error> {
        let path = path.to_owned();
        let io = |source| Error::Journal {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        lock(&file, &path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let scan = scan(&path, &bytes)?;
        let torn = scan.recorded < bytes.len() as u64;
        if torn {
            file.set_len(scan.recorded).map_err(io)?;
        }
        if scan.missing_newline {
            file.write_all(b"\n").map_err(io)?;
        }
        if torn || scan.missing_newline {
            file.sync_data().map_err(io)?;
        }
        let journal = Self {
            path,
            file,
            durability: Durability::default(),
        };
        Ok((journal, scan))
    }

    /// The same journal with another durability.
    #[must_use]
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one transition.
    ///
    /// # Errors
    ///
    /// [`Error::Journal`] when it cannot be written.
    pub fn record(&mut self, entry: &Entry) -> Result<(), Error> {
        self.write(&Line::Transition(entry.clone()))
    }

    /// Appends the state of a sub-FSM run the parent waits in (superseded by the next transition).
    ///
    /// # Errors
    ///
    /// [`Error::Journal`] when it cannot be written.
    pub fn record_suspended(&mut self, suspended: &Suspended) -> Result<(), Error> {
        self.write(&Line::Suspended(suspended.clone()))
    }

    /// Appends a meta-debugging remedy for `state`.
    ///
    /// # Errors
    ///
    /// [`Error::Journal`] when it cannot be written.
    pub fn record_remedy(&mut self, state: &str, remedy: &Remedy) -> Result<(), Error> {
        self.write(&Line::Remedy {
            state: state.to_owned(),
            remedy: remedy.clone(),
        })
    }

    /// Appends the run's schema extensions and their audit log (the last line of this kind is what
    /// [`read_extensions`] returns).
    ///
    /// # Errors
    ///
    /// [`Error::Journal`] when it cannot be written.
    pub fn record_extensions(&mut self, registry: &SavedRegistry) -> Result<(), Error> {
        self.write(&Line::Extensions {
            registry: registry.clone(),
        })
    }

    /// Appends a change in the schema deltas `state`'s requests were composed of: the audit
    /// entries [`AppliedLog::record`] returned (nothing is written for none).
    ///
    /// # Errors
    ///
    /// [`Error::Journal`] when it cannot be written.
    pub fn record_applied(&mut self, state: &str, entries: &[AuditEntry]) -> Result<(), Error> {
        if entries.is_empty() {
            return Ok(());
        }
        self.write(&Line::Applied {
            state: state.to_owned(),
            entries: entries.to_vec(),
        })
    }

    /// Opens (creating it) and locks the journal of a new run, writing nothing yet: a refused or
    /// locked journal is left as it was.
    pub(crate) fn open_new(path: &Path, existing: ExistingJournal) -> Result<Self, Error> {
        let io = |source| Error::Journal {
            path: path.to_owned(),
            source,
        };
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(io)?;
        lock(&file, path)?;
        let len = file.metadata().map_err(io)?.len();
        if len > 0 && existing == ExistingJournal::Refuse {
            return Err(Error::JournalExists {
                path: path.to_owned(),
            });
        }
        Ok(Self {
            path: path.to_owned(),
            file,
            durability: Durability::default(),
        })
    }

    /// Empties the file and writes the run's header.
    pub(crate) fn begin(&mut self, header: &Header) -> Result<(), Error> {
        self.file.set_len(0).map_err(|source| Error::Journal {
            path: self.path.clone(),
            source,
        })?;
        self.write(&Line::Run(header.clone()))
    }

    fn write(&mut self, line: &Line) -> Result<(), Error> {
        let io = |source| Error::Journal {
            path: self.path.clone(),
            source,
        };
        let mut text = serde_json::to_string(line)
            .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        text.push('\n');
        self.file.write_all(text.as_bytes()).map_err(io)?;
        self.file.flush().map_err(io)?;
        if self.durability == Durability::Fsync {
            self.file.sync_data().map_err(io)?;
        }
        Ok(())
    }
}

/// Reads a journal: its header and every recorded transition, a torn last line ignored (see the
/// module docs). Takes no lock and changes nothing, so it can read a journal a run is appending to.
///
/// # Errors
///
/// [`Error::Journal`] when the file cannot be read, [`Error::CorruptJournal`] naming the line, or
/// [`Error::JournalLocked`] when it cannot be read as a journal yet because another handle holds it
/// (a run that has locked it and not yet written its header).
pub fn read(path: impl AsRef<Path>) -> Result<(Header, Vec<Entry>), Error> {
    let path = path.as_ref();
    let io = |source| Error::Journal {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    (&file).read_to_end(&mut bytes).map_err(io)?;
    match scan(path, &bytes) {
        Ok(scan) => Ok((scan.header, scan.entries)),
        // Being written by a run that holds the lock: say so rather than what is missing yet.
        Err(error) => match try_lock_patiently(|| file.try_lock_shared()) {
            Err(TryLockError::WouldBlock) => Err(Error::JournalLocked {
                path: path.to_owned(),
            }),
            _ => Err(error),
        },
    }
}

/// The schema extensions a journal's run last recorded ([`Journal::record_extensions`]), or `None`;
/// read as [`read`] reads.
///
/// # Errors
///
/// As [`read`].
pub fn read_extensions(path: impl AsRef<Path>) -> Result<Option<SavedRegistry>, Error> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|source| Error::Journal {
        path: path.to_owned(),
        source,
    })?;
    Ok(scan(path, &bytes)?.extensions)
}

/// The schema deltas each `llm` state's requests were composed of and their audit logs, as the
/// journal's run recorded them ([`Journal::record_applied`]), by state; read as [`read`] reads.
///
/// # Errors
///
/// As [`read`].
pub fn read_applied(path: impl AsRef<Path>) -> Result<BTreeMap<String, AppliedLog>, Error> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|source| Error::Journal {
        path: path.to_owned(),
        source,
    })?;
    Ok(scan(path, &bytes)?.applied)
}

/// How long a lock that another handle holds is retried before the journal is said to be in use.
///
/// A lock belongs to the open file, which a child process shares from its fork until its exec (or
/// exit): a lock just released can be held a moment longer by a process being spawned elsewhere in
/// the program. A run that really holds the journal holds it far longer.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(250);

/// `try_lock` retried for up to [`LOCK_PATIENCE`] while another handle holds the lock.
fn try_lock_patiently(try_lock: impl Fn() -> Result<(), TryLockError>) -> Result<(), TryLockError> {
    let started = std::time::Instant::now();
    loop {
        match try_lock() {
            Err(TryLockError::WouldBlock) if started.elapsed() < LOCK_PATIENCE => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// Takes the journal's exclusive lock, or says another handle holds it.
fn lock(file: &File, path: &Path) -> Result<(), Error> {
    match try_lock_patiently(|| file.try_lock()) {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(Error::JournalLocked {
            path: path.to_owned(),
        }),
        Err(TryLockError::Error(source)) => Err(Error::Journal {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Splits `bytes` into lines and applies the torn-line rule.
fn scan(path: &Path, bytes: &[u8]) -> Result<Scan, Error> {
    let corrupt = |line: usize, message: String| Error::CorruptJournal {
        path: path.to_owned(),
        line,
        message,
    };
    let mut header = None;
    let mut entries = Vec::new();
    let mut suspended = None;
    let mut remedies = Vec::new();
    let mut extensions = None;
    let mut applied: BTreeMap<String, AppliedLog> = BTreeMap::new();
    let mut recorded = 0;
    let mut missing_newline = false;
    let mut start = 0;
    let mut number = 0;
    while start < bytes.len() {
        number += 1;
        let rest = &bytes[start..];
        let (text, next, terminated) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], start + i + 1, true),
            None => (rest, bytes.len(), false),
        };
        start = next;
        if text.trim_ascii().is_empty() {
            if terminated {
                recorded = next;
            }
            continue;
        }
        match serde_json::from_slice::<Line>(text) {
            Ok(Line::Run(h)) if header.is_none() && number == 1 => header = Some(h),
            Ok(Line::Run(_)) => return Err(corrupt(number, "a second run header".into())),
            Ok(
                Line::Transition(_)
                | Line::Suspended(_)
                | Line::Remedy { .. }
                | Line::Extensions { .. }
                | Line::Applied { .. },
            ) if header.is_none() => {
                return Err(corrupt(number, "a transition before the run header".into()));
            }
            Ok(Line::Transition(entry)) => {
                suspended = None;
                entries.push(entry);
            }
            Ok(Line::Suspended(s)) => suspended = Some(s),
            Ok(Line::Remedy { state, remedy }) => remedies.push((state, remedy)),
            Ok(Line::Extensions { registry }) => extensions = Some(registry),
            Ok(Line::Applied { state, entries }) => {
                applied.entry(state).or_default().extend(entries);
            }
            // Written but not finished when the process died: the transition did not happen.
            Err(_) if !terminated => break,
            Err(e) => return Err(corrupt(number, e.to_string())),
        }
        recorded = next;
        missing_newline = !terminated;
    }
    let header = header.ok_or_else(|| corrupt(1, "no run header".into()))?;
    Ok(Scan {
        header,
        entries,
        recorded: recorded as u64,
        missing_newline,
        suspended,
        remedies,
        extensions,
        applied,
    })
}
