//! `cargo xtask llama-server`: llama.cpp's Python server (`llama-cpp-python[server]`, pinned), the
//! real OpenAI-compatible server the CLI's `openai-compatible` tests start, installed with pip into
//! a venv in a cache outside the repository ([`PinnedVenv`]).
//!
//! The layout is a contract with those tests, which find the cache through `CLAIJ_LLAMA_SERVER`:
//! `<dir>/venv/bin/python` runs `-m llama_cpp.server`, and `<dir>/installed.json`
//! (`{"llama-cpp-python": "<version>"}`) vouches for it: deleted before the venv changes, written
//! last, once the installed version is verified.
//!
//! PyPI has no binary wheel for Linux, so pip builds llama.cpp from source (cmake comes as a build
//! dependency): about 8 to 10 minutes on 2 cores, with `CMAKE_BUILD_PARALLEL_LEVEL` the cores
//! unless set, and `CMAKE_ARGS` a portable baseline ([`PORTABLE`]). pip keeps the built wheel in
//! `<dir>/pip-cache/build-<hash of the arguments>`, so a rebuilt venv takes seconds.

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::cache;
use crate::cache::venv::{CmakeBuild, PinnedVenv};

/// The server, pinned, with the extra that brings FastAPI, uvicorn and the rest; the verify
/// script imports the server module (so a broken build or a missing extra fails there).
const LLAMA_CPP_PYTHON: PinnedVenv = PinnedVenv {
    command: "llama-server",
    cache: cache::LLAMA_SERVER,
    distribution: "llama-cpp-python",
    version: "0.3.36",
    extras: "[server]",
    verify_py: "import importlib.metadata as m, llama_cpp.server.app; \
        print(m.version('llama-cpp-python'))",
    constraints: None,
    no_deps: false,
    python: None,
    install_note: " (a build from source: about 10 minutes on 2 cores, once; the wheel is then \
        cached)",
    pip_hint: "the build needs a C++ compiler (g++) and pip's index (check pip config list)",
    cmake: Some(PORTABLE),
};

/// llama.cpp's own default, `GGML_NATIVE=ON`, builds for the CPU that compiles it; on these machines
/// (Xeons with AVX-512 and AMX) that build dies with a general protection fault in
/// `libggml-cpu.so` on the first generation. A portable x86-64 baseline runs on every CPU of the
/// machine kind: AVX2, FMA and F16C, nothing newer.
const PORTABLE: CmakeBuild = CmakeBuild {
    args: "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
        -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF",
    about: "a portable x86-64 baseline (AVX2, FMA, F16C; no AVX-512, no AMX, nothing for this CPU \
        alone)",
};

pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    LLAMA_CPP_PYTHON.run(args)
}

/// [`server_dir`], with the pinned server installed and verified first if it is not.
pub(crate) fn ensure() -> Result<PathBuf> {
    LLAMA_CPP_PYTHON.ensure()
}

/// The server cache, absolute: `$CLAIJ_LLAMA_SERVER`, else `$XDG_CACHE_HOME/claij/llama-server`,
/// else `$HOME/.cache/claij/llama-server` (else the temp dir's `claij/llama-server`).
pub(crate) fn server_dir() -> PathBuf {
    LLAMA_CPP_PYTHON.cache.dir()
}
