//! A configuration for the MCP servers `cargo xtask mcp-servers` installs (the set claij's tests
//! and examples use): every command an absolute path into the cache (the servers are not on
//! PATH), with the project `docs` ([`DOCS`]) when `fs` is among them.
//!
//! The cache's layout is xtask's (`xtask/src/mcp_servers.rs`): `<dir>/servers.json` once the set
//! is installed and verified; the npm packages as `<dir>/npm/node_modules/<package>/dist/index.js`,
//! run with `node`; the PyPI distributions as console scripts in the venv, `<dir>/venv/bin/<name>`.
//!
//! ```
//! use claij::mcp::servers;
//!
//! // Where the cache is: given the variables (here none), there is none.
//! assert_eq!(servers::cache_dir(|_| None), None);
//! let cache = servers::cache_dir(|name| (name == "HOME").then(|| "/home/me".into()));
//! assert_eq!(cache, Some("/home/me/.cache/claij/mcp-servers".into()));
//! assert!(servers::names().any(|name| name == "fs"));
//! // A directory without the installed set is an error that says how to install it.
//! let error = servers::configuration("/nonexistent".as_ref(), &[], &[], || None).unwrap_err();
//! assert!(error.to_string().contains("cargo xtask mcp-servers"));
//! ```

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::Error;

/// The command that fills the cache, for errors.
pub const INSTALL: &str = "cargo xtask mcp-servers";

/// How a server is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// An npm package, run as `node <dir>/npm/node_modules/<package>/dist/index.js`.
    Npm(&'static str),
    /// A PyPI distribution's console script, `<dir>/venv/bin/<script>`.
    Pip(&'static str),
}

/// One server of the set: the name it gets in the configuration, where it is, its own arguments.
struct Known {
    name: &'static str,
    part: Part,
    /// Arguments after the program (the filesystem server's roots come after these).
    args: &'static [&'static str],
    /// Whether it is in the default selection.
    default: bool,
}

/// The servers `cargo xtask mcp-servers` installs, by the names they get here.
const KNOWN: [Known; 6] = [
    Known {
        name: "fs",
        part: Part::Npm("@modelcontextprotocol/server-filesystem"),
        args: &[],
        default: true,
    },
    Known {
        name: "time",
        part: Part::Pip("mcp-server-time"),
        args: &[],
        default: true,
    },
    Known {
        name: "memory",
        part: Part::Npm("@modelcontextprotocol/server-memory"),
        args: &[],
        default: false,
    },
    Known {
        name: "fetch",
        part: Part::Pip("mcp-server-fetch"),
        args: &[],
        default: false,
    },
    Known {
        name: "git",
        part: Part::Pip("mcp-server-git"),
        args: &[],
        default: false,
    },
    Known {
        name: "everything",
        part: Part::Npm("@modelcontextprotocol/server-everything"),
        args: &["stdio"],
        default: false,
    },
];

/// The project printed with `fs`: `--project docs` offers a model only `fs.read_text_file`, the
/// one tool the embedded 135M model uses well (the README's tool loop: it reads the file and
/// answers with it). Offered more it is led astray: with `fs.list_directory` too it lists the file
/// as a directory until the loop check stops the run. Its name is part of the prompt ("You are
/// working on project `docs`") and changes what the model does: named `read`, the same project
/// has it read only the file's last lines.
pub const DOCS: (&str, &[&str]) = ("docs", &["fs.read_text_file"]);

/// The names of the servers of the set, in order: `fs`, `time`, `memory`, `fetch`, `git`,
/// `everything` (the protocol's test server).
pub fn names() -> impl Iterator<Item = &'static str> {
    KNOWN.iter().map(|known| known.name)
}

/// A server's name as given (`claij mcp servers --servers`): one of [`names`].
///
/// # Errors
///
/// Another name: the known ones.
pub fn known(text: &str) -> Result<String, String> {
    let text = text.trim();
    if names().any(|name| name == text) {
        Ok(text.to_owned())
    } else {
        let names: Vec<&str> = names().collect();
        Err(format!("expected one of {}", names.join(", ")))
    }
}

/// The names of the servers chosen when none is named: `fs` and `time`.
pub fn default_names() -> impl Iterator<Item = &'static str> {
    KNOWN.iter().filter(|k| k.default).map(|known| known.name)
}

/// The cache `cargo xtask mcp-servers` fills: `$CLAIJ_MCP_SERVERS`, else
/// `$XDG_CACHE_HOME/claij/mcp-servers` (an absolute `XDG_CACHE_HOME`), else
/// `$HOME/.cache/claij/mcp-servers`; `None` without any of them. Empty variables count as unset.
pub fn cache_dir(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    set("CLAIJ_MCP_SERVERS")
        .or_else(|| {
            set("XDG_CACHE_HOME")
                .filter(|p| p.is_absolute())
                .map(|cache| cache.join("claij").join("mcp-servers"))
        })
        .or_else(|| set("HOME").map(|home| home.join(".cache/claij/mcp-servers")))
}

/// `program` on `PATH` (through `var`), as an absolute path.
pub fn which(program: &str, var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let path = var("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// The directories `given` (the current directory when none is), resolved to absolute paths, as
/// [`configuration`] takes them for `fs`.
///
/// # Errors
///
/// [`Error::Io`] naming the directory as given: it cannot be resolved, or is not a directory.
pub fn roots(given: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let current = [PathBuf::from(".")];
    let given = if given.is_empty() {
        &current[..]
    } else {
        given
    };
    given
        .iter()
        .map(|root| {
            let what = || root.display().to_string();
            let resolved = std::fs::canonicalize(root).map_err(|e| Error::io(what(), e))?;
            if !resolved.is_dir() {
                let not_a_directory =
                    std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory");
                return Err(Error::io(what(), not_a_directory));
            }
            Ok(resolved)
        })
        .collect()
}

/// The configuration of the servers `selected` (all the default ones when empty) installed in
/// `dir`, `fs` on `roots`, with the project [`DOCS`] when `fs` is one of them; `node` finds the
/// program the npm servers run with.
///
/// # Errors
///
/// The set is not installed in `dir` (or a selected server's entry point is missing): the error
/// names the directory and the command that installs it; an npm server is selected and `node` is
/// not on PATH.
pub fn configuration(
    dir: &Path,
    selected: &[String],
    roots: &[PathBuf],
    node: impl Fn() -> Option<PathBuf>,
) -> Result<Value, Error> {
    if !dir.join("servers.json").is_file() {
        return Err(Error::NotInstalled {
            dir: dir.to_path_buf(),
        });
    }
    let chosen: Vec<&Known> = KNOWN
        .iter()
        .filter(|k| match selected {
            [] => k.default,
            names => names.iter().any(|n| n == k.name),
        })
        .collect();
    let mut node_path = None;
    let mut servers = Map::new();
    for known in chosen {
        let (command, mut args) = match known.part {
            Part::Npm(package) => {
                let script = dir
                    .join("npm/node_modules")
                    .join(package)
                    .join("dist/index.js");
                check_installed(&script, dir)?;
                let node = match &node_path {
                    Some(node) => node,
                    None => node_path.insert(node().ok_or(Error::NoNode { package })?),
                };
                (node.clone(), vec![text(&script)])
            }
            Part::Pip(script) => {
                let program = dir.join("venv/bin").join(script);
                check_installed(&program, dir)?;
                (program, Vec::new())
            }
        };
        args.extend(known.args.iter().map(|a| (*a).to_owned()));
        if known.name == "fs" {
            args.extend(roots.iter().map(|root| text(root)));
        }
        let mut entry = json!({"command": text(&command)});
        if !args.is_empty() {
            entry["args"] = json!(args);
        }
        servers.insert(known.name.to_owned(), entry);
    }
    let mut config = json!({"mcpServers": servers});
    if config["mcpServers"].get("fs").is_some() {
        let (name, tools) = DOCS;
        config["projects"] = json!({name: {"services": ["fs"], "tools": tools}});
    }
    Ok(config)
}

/// `{"mcpServers": {NAME: {"command": ..., "args": [...]}}, "projects": {NAME: {...}}}` as
/// `[mcpServers.NAME]` and `[projects.NAME]` tables. A JSON string is a TOML basic string (the
/// same escapes), an array of strings a TOML array, and the names are bare keys.
pub fn to_toml(config: &Value) -> String {
    let mut text = String::new();
    for table in ["mcpServers", "projects"] {
        let entries = config.get(table).and_then(Value::as_object);
        for (name, entry) in entries.into_iter().flatten() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&format!("[{table}.{name}]\n"));
            for (key, value) in entry.as_object().into_iter().flatten() {
                text.push_str(&format!("{key} = {value}\n"));
            }
        }
    }
    text
}

/// Fails when `path`, a server's entry point in the cache `dir`, is missing.
fn check_installed(path: &Path, dir: &Path) -> Result<(), Error> {
    if path.is_file() {
        Ok(())
    } else {
        Err(Error::Incomplete {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
        })
    }
}

/// A path as configuration text.
fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests;
