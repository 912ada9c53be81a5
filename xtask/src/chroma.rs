//! `cargo xtask chroma`: the Chroma vector database server the recall store's server tests and
//! bench start (`chromadb`, pinned), installed with pip into a venv in a cache outside the
//! repository ([`PinnedVenv`]).
//!
//! The server is Rust, compiled into the wheel's `chromadb_rust_bindings` module; the wheel's ~80
//! dependencies (onnxruntime, kubernetes, grpc, numpy: a 517 MB venv) are its Python client's, so
//! pip installs the wheel alone (`--no-deps`): a venv of about 90 MB in seconds. The server needs no
//! network: it never embeds (the default embedding function is the Python client's) and sends no
//! telemetry.
//!
//! The layout is a contract with the tests (`claij_test_support::chroma`), which find the cache
//! through `CLAIJ_CHROMA`: `<dir>/venv/bin/python -I -c "import chromadb_rust_bindings;
//! chromadb_rust_bindings.cli(['chroma', 'run', ...])"` runs the server, and `<dir>/installed.json`
//! (`{"chromadb": "<version>"}`) vouches for it: deleted before the venv changes, written last, once
//! the installed version is verified.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::cache;
use crate::cache::venv::PinnedVenv;

/// Chroma, pinned, without its client's dependencies; the verify script imports the server's
/// module (so a wheel without it, or one that does not load, fails here).
const CHROMADB: PinnedVenv = PinnedVenv {
    command: "chroma",
    cache: cache::CHROMA,
    distribution: "chromadb",
    version: "1.5.9",
    extras: "",
    verify_py: "import importlib.metadata as m, chromadb_rust_bindings; \
        print(m.version('chromadb'))",
    constraints: None,
    no_deps: true,
    python: Some(((3, 9), (3, 14))),
    install_note: " alone, without its Python client's dependencies (a 23 MB wheel, a venv of \
        about 90 MB)",
    pip_hint: "check the network and pip's index settings (pip config list)",
    cmake: None,
};

pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    CHROMADB.run(args)
}

/// [`server_dir`], with the pinned server installed and verified first if it is not.
pub(crate) fn ensure() -> Result<PathBuf> {
    CHROMADB.ensure()
}

/// The Chroma cache, absolute: `$CLAIJ_CHROMA`, else `$XDG_CACHE_HOME/claij/chroma`, else
/// `$HOME/.cache/claij/chroma` (else the temp dir's `claij/chroma`).
pub(crate) fn server_dir() -> PathBuf {
    CHROMADB.cache.dir()
}
