//! The journal: a run's trail appended to a JSONL file as it happens, flushed (and by default fsynced)
//! per transition, so a killed process can resume from the last recorded transition.
//!
//! Line 1 is the header `{"kind": "run", "run_id", "fsm", "started_at"}`; every other line is
//! `{"kind": "transition", ...entry}`.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

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

/// An open journal, appending.
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
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    Run(Header),
    Transition(Entry),
}

impl Journal {
    /// Creates (or truncates) the journal at `path` for a new run.
    ///
    /// # Errors
    ///
    /// [`Error::Journal`] when the file cannot be written.
    pub fn create(path: impl AsRef<Path>, header: &Header) -> Result<Self, Error> {
        let path = path.as_ref().to_owned();
        let file = File::create(&path).map_err(|source| Error::Journal {
            path: path.clone(),
            source,
        })?;
        let mut journal = Self {
            path,
            file,
            durability: Durability::default(),
        };
        journal.write(&Line::Run(header.clone()))?;
        Ok(journal)
    }

    /// Opens an existing journal to append to it.
    ///
    /// # Errors
    ///
    /// [`Error::Journal`] when the file cannot be opened.
    pub fn append_to(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref().to_owned();
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|source| Error::Journal {
                path: path.clone(),
                source,
            })?;
        Ok(Self {
            path,
            file,
            durability: Durability::default(),
        })
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

/// Reads a journal: its header and every recorded transition. A last line cut short by a crash is
/// ignored; any other bad line is an error.
///
/// # Errors
///
/// [`Error::Journal`] when the file cannot be read, [`Error::CorruptJournal`] naming the line.
pub fn read(path: impl AsRef<Path>) -> Result<(Header, Vec<Entry>), Error> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| Error::Journal {
        path: path.to_owned(),
        source,
    })?;
    let lines: Vec<String> = BufReader::new(file)
        .lines()
        .collect::<Result<_, _>>()
        .map_err(|source| Error::Journal {
            path: path.to_owned(),
            source,
        })?;
    let corrupt = |line: usize, message: String| Error::CorruptJournal {
        path: path.to_owned(),
        line,
        message,
    };
    let mut header = None;
    let mut entries = Vec::new();
    let last = lines.len();
    for (index, text) in lines.iter().enumerate() {
        let number = index + 1;
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Line>(text) {
            Ok(Line::Run(h)) if header.is_none() && number == 1 => header = Some(h),
            Ok(Line::Run(_)) => return Err(corrupt(number, "a second run header".into())),
            Ok(Line::Transition(_)) if header.is_none() => {
                return Err(corrupt(number, "a transition before the run header".into()));
            }
            Ok(Line::Transition(entry)) => entries.push(entry),
            // Written but not finished when the process died: the transition did not happen.
            Err(_) if number == last && !text.ends_with('}') => {}
            Err(e) => return Err(corrupt(number, e.to_string())),
        }
    }
    let header = header.ok_or_else(|| corrupt(1, "no run header".into()))?;
    Ok((header, entries))
}
