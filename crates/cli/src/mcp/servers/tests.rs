//! Tests of `claij mcp servers`' errors.
#![allow(clippy::unwrap_used)]

/// A cache without the installed set: the library's error, and the flag that names another.
#[test]
fn a_missing_install_names_the_dir_flag() {
    let dir = std::env::temp_dir().join(format!("claij-no-servers-{}", std::process::id()));
    let error = claij::mcp::servers::configuration(&dir, &[], &[], || None).unwrap_err();
    assert_eq!(
        super::flag_error(error).to_string(),
        format!(
            "no MCP servers installed in {}: run `cargo xtask mcp-servers` in the claij repository \
             (or name another cache with --dir)",
            dir.display()
        )
    );
}
