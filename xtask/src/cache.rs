//! The caches xtask fills outside the repository: each in the directory its own variable names, else
//! `$XDG_CACHE_HOME/claij/<folder>`, else `$HOME/.cache/claij/<folder>`.

use std::ffi::OsString;
use std::path::PathBuf;

/// One cache: the variable that overrides it and its folder under `claij/`.
#[derive(Debug, Clone, Copy)]
pub struct Cache {
    /// The variable naming the directory outright.
    pub var: &'static str,
    /// The folder under the user's `claij` cache.
    pub folder: &'static str,
}

/// The embedded model (`cargo xtask model`).
pub const MODELS: Cache = Cache {
    var: "CLAIJ_MODEL_DIR",
    folder: "models",
};

/// The MCP test servers (`cargo xtask mcp-servers`).
pub const MCP_SERVERS: Cache = Cache {
    var: "CLAIJ_MCP_SERVERS",
    folder: "mcp-servers",
};

impl Cache {
    /// The directory, absolute (the temp dir's `claij/<folder>` when the environment names none).
    pub fn dir(self) -> PathBuf {
        let dir = self
            .resolve(|name| std::env::var_os(name))
            .unwrap_or_else(|| std::env::temp_dir().join("claij").join(self.folder));
        absolute(dir)
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

/// `path` made absolute against the current directory: child processes run elsewhere.
pub fn absolute(path: PathBuf) -> PathBuf {
    std::path::absolute(&path).unwrap_or(path)
}

#[cfg(test)]
mod tests;
