//! The caches xtask fills outside the repository: each in the directory its own variable names, else
//! `$XDG_CACHE_HOME/claij/<folder>`, else `$HOME/.cache/claij/<folder>`.

pub(crate) mod venv;

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

/// One cache: the variable that overrides it and its folder under `claij/`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cache {
    /// The variable naming the directory outright.
    pub var: &'static str,
    /// The folder under the user's `claij` cache.
    pub folder: &'static str,
}

/// The embedded model (`cargo xtask model`).
pub(crate) const MODELS: Cache = Cache {
    var: "CLAIJ_MODEL_DIR",
    folder: "models",
};

/// The MCP test servers (`cargo xtask mcp-servers`).
pub(crate) const MCP_SERVERS: Cache = Cache {
    var: "CLAIJ_MCP_SERVERS",
    folder: "mcp-servers",
};

/// llama.cpp's Python server, the OpenAI-compatible test server (`cargo xtask llama-server`).
pub(crate) const LLAMA_SERVER: Cache = Cache {
    var: "CLAIJ_LLAMA_SERVER",
    folder: "llama-server",
};

/// Arize Phoenix, the OpenTelemetry collector of the tracing test (`cargo xtask collector`).
pub(crate) const COLLECTOR: Cache = Cache {
    var: "CLAIJ_COLLECTOR",
    folder: "collector",
};

/// Chroma, the vector database server of the recall store's server tests and bench (`cargo xtask
/// chroma`).
pub(crate) const CHROMA: Cache = Cache {
    var: "CLAIJ_CHROMA",
    folder: "chroma",
};

/// The Restate server the `claij-restate` tests start (`cargo xtask restate`). Its variable names the
/// cache; the tests take the binary from `CLAIJ_RESTATE_SERVER`, which `cargo xtask test` sets.
pub(crate) const RESTATE: Cache = Cache {
    var: "CLAIJ_RESTATE_DIR",
    folder: "restate",
};

impl Cache {
    /// The directory, absolute (the temp dir's `claij/<folder>` when the environment names none).
    pub(crate) fn dir(self) -> PathBuf {
        let dir = self
            .resolve(|name| std::env::var_os(name))
            .unwrap_or_else(|| std::env::temp_dir().join("claij").join(self.folder));
        absolute(dir)
    }

    /// The arguments of a command that fills this cache: `--dir DIR` (or `--dir=DIR`; default
    /// [`Cache::dir`], made absolute) and `--force`; or the usage error, naming `command`.
    pub(crate) fn dir_args(
        self,
        command: &str,
        args: &[String],
    ) -> Result<(PathBuf, bool), String> {
        let (mut dir, mut force) = (None, false);
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--force" => force = true,
                "--dir" => match args.next() {
                    Some(value) => dir = Some(PathBuf::from(value)),
                    None => return Err(format!("`{command} --dir` needs a directory")),
                },
                other => match other.strip_prefix("--dir=") {
                    Some(value) => dir = Some(PathBuf::from(value)),
                    None => return Err(format!("`{command}` does not take `{other}`")),
                },
            }
        }
        Ok((dir.map_or_else(|| self.dir(), absolute), force))
    }

    /// `cargo xtask <command> [--dir DIR] [--force]` ([`Cache::dir_args`]): `ensure_in(dir, force)`
    /// fills the cache if needed, then the directory is printed.
    pub(crate) fn run(
        self,
        command: &str,
        args: &[String],
        ensure_in: impl FnOnce(&Path, bool) -> Result<()>,
    ) -> Result<ExitCode> {
        let (dir, force) = match self.dir_args(command, args) {
            Ok(parsed) => parsed,
            Err(message) => return crate::usage_error(&message),
        };
        ensure_in(&dir, force)?;
        println!("{}", dir.display());
        Ok(ExitCode::SUCCESS)
    }

    /// The directory the environment names, if any. Empty variables count as unset, and a relative
    /// `XDG_CACHE_HOME` is ignored, as the XDG base directory spec says.
    fn resolve(self, var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        let var = |name| {
            var(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        };
        var(self.var)
            .or_else(|| {
                var("XDG_CACHE_HOME")
                    .filter(|cache| cache.is_absolute())
                    .map(|cache| cache.join("claij").join(self.folder))
            })
            .or_else(|| var("HOME").map(|home| home.join(".cache").join("claij").join(self.folder)))
    }
}

/// Best effort: removes the temp dirs (named `prefix...`) that fetches and installs killed midway
/// left in `dir`. Those younger than a day may belong to one running right now, so they stay.
pub(crate) fn remove_abandoned_temps(dir: &Path, prefix: &str) {
    const MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let abandoned = entry.file_name().to_string_lossy().starts_with(prefix)
            && entry
                .metadata()
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|modified| modified.elapsed().ok())
                .is_some_and(|age| age > MAX_AGE);
        if abandoned {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// `path` made absolute against the current directory: child processes run elsewhere.
pub(crate) fn absolute(path: PathBuf) -> PathBuf {
    std::path::absolute(&path).unwrap_or(path)
}

#[cfg(test)]
mod tests;
