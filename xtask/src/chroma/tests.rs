//! What the Chroma venv installs, and where.

use super::*;

#[test]
fn the_requirement_is_chromadb_alone_pinned() {
    assert_eq!(CHROMADB.requirement(), "chromadb==1.5.9");
    // The client's 80 dependencies are not the server's.
    let pip = CHROMADB.pip(std::path::Path::new("/c"));
    let args: Vec<_> = pip.get_args().map(|a| a.to_string_lossy()).collect();
    assert_eq!(args[args.len() - 2..], ["--no-deps", "chromadb==1.5.9"]);
    assert!(
        CHROMADB
            .verify_py
            .contains("import importlib.metadata as m, chromadb_rust_bindings")
    );
}

#[test]
fn python_versions_are_checked_against_chromadb_s_range() {
    assert!(!CHROMADB.supports((3, 8)));
    assert!(CHROMADB.supports((3, 9)));
    assert!(CHROMADB.supports((3, 14)));
}

#[test]
fn the_cache_is_claij_chroma() {
    assert_eq!(CHROMADB.cache.var, "CLAIJ_CHROMA");
    assert_eq!(CHROMADB.cache.folder, "chroma");
}
