//! `cargo xtask collector`: a real OpenTelemetry collector for the CLI's tracing test, Arize Phoenix
//! (`arize-phoenix`, pinned, with every dependency pinned by `collector/constraints.txt`), installed
//! with pip into a venv in a cache outside the repository ([`PinnedVenv`]).
//!
//! Phoenix receives OTLP over HTTP (`/v1/traces`, protobuf) and stores the spans in SQLite, where its
//! REST API (`GET /v1/projects/{project}/spans`) reads them back: the test sends `claij`'s spans there
//! and asserts what arrived.
//!
//! The layout is a contract with that test, which finds the cache through `CLAIJ_COLLECTOR`:
//! `<dir>/venv/bin/python` imports `phoenix`, and `<dir>/installed.json`
//! (`{"arize-phoenix": "<version>"}`) vouches for it: deleted before the venv changes, written last,
//! once the installed version is verified. `<dir>/constraints.txt` is the copy of the constraints
//! the venv was installed with; when the repository's differ, the venv is installed again.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::cache;
use crate::cache::venv::PinnedVenv;

/// Phoenix, pinned; the verify script imports the server's entry point.
const PHOENIX: PinnedVenv = PinnedVenv {
    command: "collector",
    cache: cache::COLLECTOR,
    distribution: "arize-phoenix",
    version: "20.26.1",
    extras: "",
    verify_py: "import importlib.metadata as m, phoenix.server.main; \
        print(m.version('arize-phoenix'))",
    constraints: Some(CONSTRAINTS),
    no_deps: false,
    python: Some(((3, 11), (3, 14))),
    install_note: " and its pinned dependencies (about 850 MB; a minute or two)",
    pip_hint: "check the network and pip's index settings (pip config list)",
    cmake: None,
};
/// Every other package pip installs with it, at the version it had when the pin was chosen.
const CONSTRAINTS: &str = include_str!("collector/constraints.txt");

pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    PHOENIX.run(args)
}

/// [`collector_dir`], with the pinned collector installed and verified first if it is not.
pub(crate) fn ensure() -> Result<PathBuf> {
    PHOENIX.ensure()
}

/// The collector cache, absolute: `$CLAIJ_COLLECTOR`, else `$XDG_CACHE_HOME/claij/collector`,
/// else `$HOME/.cache/claij/collector` (else the temp dir's `claij/collector`).
pub(crate) fn collector_dir() -> PathBuf {
    PHOENIX.cache.dir()
}
