//! Tests for the command builder: what the cargo that xtask spawns inherits.

use std::ffi::{OsStr, OsString};

use super::*;

#[track_caller]
fn check(name: &str, removed: bool) {
    assert_eq!(is_cargo_run_var(OsStr::new(name)), removed, "{name}");
}

#[test]
fn the_variables_of_xtasks_own_build_are_removed_and_the_users_kept() {
    for name in [
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "CARGO_PKG_NAME",
        "CARGO_PKG_VERSION",
        "CARGO_PKG_VERSION_MAJOR",
        "CARGO_PKG_AUTHORS",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_BIN_EXE_xtask",
        "CARGO_PRIMARY_PACKAGE",
        "OUT_DIR",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
    ] {
        check(name, true);
    }
    for name in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_HOME",
        "CARGO_BUILD_JOBS",
        "CARGO_INCREMENTAL",
        "CARGO",
        "RUSTUP_TOOLCHAIN",
        "PATH",
        "HOME",
        "CARGO_PKG",
        "MY_CARGO_PKG_NAME",
    ] {
        check(name, false);
    }
}

/// Under `cargo test` (and nextest) this process has the variables of the xtask package: the
/// command `Cmd::cargo()` builds removes each of them, and only them.
#[test]
fn cargo_is_spawned_without_xtasks_package_variables() {
    assert!(
        std::env::var_os("CARGO_MANIFEST_DIR").is_some()
            && std::env::var_os("CARGO_PKG_NAME").is_some(),
        "the test runner sets the package's variables"
    );
    let command = Cmd::cargo().arg("--version").command().unwrap();
    let removed: Vec<OsString> = command
        .get_envs()
        .filter(|(_, value)| value.is_none())
        .map(|(name, _)| name.to_owned())
        .collect();
    for name in ["CARGO_MANIFEST_DIR", "CARGO_PKG_NAME", "CARGO_PKG_VERSION"] {
        assert!(
            removed.iter().any(|r| r == name),
            "{name} not removed: {removed:?}"
        );
    }
    assert!(
        removed.iter().all(|name| is_cargo_run_var(name)),
        "{removed:?}"
    );
    // Other commands (the claij binary) keep their environment as it is.
    let plain = Cmd::new("true").command().unwrap();
    assert_eq!(plain.get_envs().count(), 0);
}

/// The same through a real process: `env` prints what the spawned program sees.
#[cfg(unix)]
#[test]
fn a_spawned_program_sees_no_package_variables_but_the_rest() {
    let seen = Cmd::new("env")
        .without_cargo_run_env()
        .env("CARGO_PKG_NAME", "set-on-purpose")
        .read()
        .unwrap();
    let names: Vec<&str> = seen
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(n, _)| n)
        .collect();
    assert!(!names.contains(&"CARGO_MANIFEST_DIR"), "{seen}");
    assert!(!names.contains(&"CARGO_PRIMARY_PACKAGE"), "{seen}");
    assert!(names.contains(&"PATH"), "{seen}");
    // A variable the caller sets on purpose is kept.
    assert!(
        seen.lines().any(|l| l == "CARGO_PKG_NAME=set-on-purpose"),
        "{seen}"
    );
}
