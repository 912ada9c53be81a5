//! Tests for the Restate server cache: its layout, its stamp, and when an install is trusted.

use std::os::unix::fs::PermissionsExt;

use super::*;

/// The path the harness of `claij-restate` starts the server from: changing it breaks those tests.
#[test]
fn layout_is_the_one_the_tests_rely_on() {
    let package = package_for("linux", "x86_64").unwrap();
    assert_eq!(
        binary_in(&Path::new("/c").join(FOLDER), &package),
        Path::new("/c/npm/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server")
    );
}

#[track_caller]
fn check_package(os: &str, arch: &str, expected: Option<&str>) {
    assert_eq!(package_for(os, arch).as_deref(), expected, "{os} {arch}");
}

#[test]
fn each_platform_restate_publishes_has_its_package() {
    check_package(
        "linux",
        "x86_64",
        Some("@restatedev/restate-server-linux-x64"),
    );
    check_package(
        "linux",
        "aarch64",
        Some("@restatedev/restate-server-linux-arm64"),
    );
    check_package(
        "macos",
        "x86_64",
        Some("@restatedev/restate-server-darwin-x64"),
    );
    check_package(
        "macos",
        "aarch64",
        Some("@restatedev/restate-server-darwin-arm64"),
    );
    check_package("windows", "x86_64", None);
    check_package("linux", "riscv64", None);
}

#[track_caller]
fn check_version(text: &str, expected: Option<&str>) {
    assert_eq!(parse_version(text).as_deref(), expected, "{text:?}");
}

#[test]
fn version_is_read_from_what_the_binary_prints() {
    check_version("restate-server 1.7.12\n", Some("1.7.12"));
    check_version("  restate-server 1.8.0-rc.1 ", Some("1.8.0-rc.1"));
    check_version("restate-server \n", None);
    check_version("restate 1.7.12", None);
    check_version("restate-server 1.7.12 (577e032)", None);
    check_version("", None);
}

#[test]
fn stamp_round_trips_through_its_text() {
    let stamp = Stamp {
        package: "@restatedev/restate-server-linux-x64".to_owned(),
        version: VERSION.to_owned(),
        size: 225_600_128,
    };
    let text = stamp.to_text();
    assert!(text.ends_with("}\n"), "{text}");
    assert_eq!(Stamp::parse(&text), Some(stamp));
}

#[track_caller]
fn check_parse_rejects(text: &str) {
    assert_eq!(Stamp::parse(text), None, "{text:?}");
}

#[test]
fn stamp_parse_rejects_missing_and_mistyped_fields() {
    check_parse_rejects("");
    check_parse_rejects("{");
    check_parse_rejects("[]");
    check_parse_rejects(r#"{"package": "p", "version": "1"}"#);
    check_parse_rejects(r#"{"package": "p", "version": "1", "size": -1}"#);
    check_parse_rejects(r#"{"package": "p", "version": 1, "size": 1}"#);
    check_parse_rejects(r#"{"version": "1", "size": 1}"#);
}

/// A fresh directory under the temp dir, removed by the caller.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("claij-xtask-restate-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

const PACKAGE: &str = "@restatedev/restate-server-linux-x64";

/// Puts a stand-in for the binary (a script printing `prints`) and a stamp of its size in `cache`,
/// as a finished install leaves them; returns the binary's path.
fn fake_install(cache: &Path, prints: &str) -> PathBuf {
    let npm = cache.join(FOLDER);
    let binary = binary_in(&npm, PACKAGE);
    fs::create_dir_all(binary.parent().unwrap()).unwrap();
    fs::write(&binary, format!("#!/bin/sh\necho '{prints}'\n")).unwrap();
    fs::set_permissions(&binary, fs::Permissions::from_mode(0o755)).unwrap();
    restamp(cache);
    binary
}

/// Stamps the binary in `cache` as it is now, the pinned version with its size.
fn restamp(cache: &Path) {
    let npm = cache.join(FOLDER);
    let stamp = Stamp {
        package: PACKAGE.to_owned(),
        version: VERSION.to_owned(),
        size: fs::metadata(binary_in(&npm, PACKAGE)).unwrap().len(),
    };
    fs::write(npm.join(STAMP), stamp.to_text()).unwrap();
}

/// Each way an install can be torn or stale is found, so `ensure_in` installs again; a whole one
/// is trusted unless `--force`.
#[test]
fn problem_says_why_an_install_is_not_trusted() {
    let cache = scratch("problem");
    let npm = cache.join(FOLDER);
    let nothing = problem(&cache, PACKAGE, false);
    let binary = fake_install(&cache, &format!("restate-server {VERSION}"));
    let whole = problem(&cache, PACKAGE, false);
    let forced = problem(&cache, PACKAGE, true);
    let other_platform = problem(&cache, "@restatedev/restate-server-darwin-arm64", false);
    // A binary cut short (a copy interrupted, a disk full) no longer has the stamped size.
    let text = fs::read(&binary).unwrap();
    fs::write(&binary, &text[..text.len() - 3]).unwrap();
    let truncated = problem(&cache, PACKAGE, false);
    fake_install(&cache, "restate-server 1.6.0");
    let wrong_version = problem(&cache, PACKAGE, false);
    fake_install(&cache, "garbage");
    let unreadable_version = problem(&cache, PACKAGE, false);
    fs::write(&binary, "#!/bin/sh\nexit 3\n").unwrap();
    restamp(&cache);
    let fails = problem(&cache, PACKAGE, false);
    fs::remove_file(&binary).unwrap();
    let missing = problem(&cache, PACKAGE, false);
    fs::write(
        npm.join(STAMP),
        r#"{"package": "x", "version": "1.0.0", "size": 1}"#,
    )
    .unwrap();
    let stale = problem(&cache, PACKAGE, false);
    fs::write(npm.join(STAMP), "{").unwrap();
    let malformed = problem(&cache, PACKAGE, false);
    fs::remove_dir_all(&cache).unwrap();

    let shown = binary.display();
    assert_eq!(nothing.as_deref(), Some("not installed yet"));
    assert_eq!(whole, None);
    assert_eq!(forced.as_deref(), Some("--force"));
    assert_eq!(
        other_platform,
        Some(format!(
            "installed {PACKAGE}@{VERSION} (pinned @restatedev/restate-server-darwin-arm64@{VERSION})"
        ))
    );
    let truncated = truncated.unwrap();
    assert!(
        truncated.starts_with(&format!("{shown} has ")) && truncated.ends_with(" installed"),
        "{truncated}"
    );
    assert_eq!(
        wrong_version,
        Some(format!("{shown} prints version 1.6.0 (pinned {VERSION})"))
    );
    assert_eq!(
        unreadable_version,
        Some(format!(
            "{shown} --version printed \"garbage\", not `restate-server VERSION`"
        ))
    );
    assert_eq!(
        fails,
        Some(format!("{shown} --version failed (exit status: 3)"))
    );
    assert_eq!(missing, Some(format!("{shown} is missing")));
    assert_eq!(
        stale,
        Some(format!("installed x@1.0.0 (pinned {PACKAGE}@{VERSION})"))
    );
    assert_eq!(
        malformed,
        Some(format!("{} is malformed", npm.join(STAMP).display()))
    );
}

/// A whole install is reused: `ensure_in` neither runs npm nor touches the tree.
#[test]
fn ensure_in_reuses_a_whole_install() {
    if package().ok().as_deref() != Some(PACKAGE) {
        return;
    }
    let cache = scratch("ensure");
    let binary = fake_install(&cache, &format!("restate-server {VERSION}"));
    let before = fs::metadata(&binary).unwrap().modified().unwrap();
    let ensured = ensure_in(&cache, false);
    let after = fs::metadata(&binary).unwrap().modified().unwrap();
    let entries = fs::read_dir(&cache).unwrap().count();
    let path = super::binary(&cache).unwrap();
    fs::remove_dir_all(&cache).unwrap();
    ensured.unwrap();
    assert_eq!(before, after);
    assert_eq!(entries, 1, "only npm/ is in the cache");
    assert_eq!(path, binary);
}

/// The temp dirs of installs are the ones `ensure_in` clears when abandoned.
#[test]
fn temp_dirs_carry_the_prefix_that_is_cleared() {
    let temp = temp_path(Path::new("/c"), FOLDER);
    let name = temp.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("{TEMP_PREFIX}{FOLDER}-")),
        "{name}"
    );
}

#[test]
fn dir_args_take_the_cache_from_the_command_line() {
    assert_eq!(
        cache::RESTATE.dir_args("restate", &["--dir=/r".to_owned(), "--force".to_owned()]),
        Ok((PathBuf::from("/r"), true))
    );
    assert_eq!(
        cache::RESTATE.dir_args("restate", &["--yes".to_owned()]),
        Err("`restate` does not take `--yes`".to_owned())
    );
}
