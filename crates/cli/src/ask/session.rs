//! `--memory FILE`: the conversation carried from one `claij ask` to the next, as `{turn, memory}`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use claij_interceptors::{Context, Memory};
use serde::{Deserialize, Serialize};

/// What one invocation hands to the next.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// Completed turns.
    #[serde(default)]
    pub turn: u64,
    /// What the memory interceptor remembers.
    #[serde(default)]
    pub memory: Memory,
}

impl Session {
    /// The session in `path`; a new one when the file does not exist or is empty.
    pub fn load(path: &Path) -> Result<Self> {
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: not a claij memory file (`{{\"turn\": N, \"memory\": {{\"summaries\": [...]}}}}`)",
                path.display()
            )
        })
    }

    /// What `ctx` carries to the next turn.
    pub fn of(ctx: &Context) -> Self {
        Self {
            turn: ctx.turn,
            memory: ctx.memory.clone(),
        }
    }

    /// A context that continues this session.
    pub fn into_context(self) -> Context {
        let mut ctx = Context::default();
        ctx.turn = self.turn;
        ctx.memory = self.memory;
        ctx
    }

    /// Writes the session to `path` atomically: a temp file in the same directory, then a rename, so
    /// an interrupted write never leaves half a file.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut text = serde_json::to_string_pretty(self)?;
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

/// `path`'s sibling `.<name>.<pid>.tmp`.
fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "memory".into(), |n| n.to_string_lossy());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}
