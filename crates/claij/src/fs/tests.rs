//! The bounded read and the atomic write.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use super::{read_file_capped, temp_path, write_atomic};

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("claij-fs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_write_replaces_the_file_whole_and_leaves_no_temporary_file() {
    let dir = dir("replace");
    let path = dir.join("f.json");
    std::fs::write(&path, "old").unwrap();
    write_atomic(&path, b"new", None).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["f.json"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The write fails (here its temporary file cannot be made: a directory is in its place): the
/// old file is still there, whole.
#[test]
fn a_failed_write_leaves_the_old_file_whole() {
    let dir = dir("fail");
    let path = dir.join("f.json");
    std::fs::write(&path, "old content").unwrap();
    std::fs::create_dir_all(temp_path(&path)).unwrap();
    assert!(write_atomic(&path, b"new", None).is_err());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old content");
    // The rename fails (the target is a directory that is not empty): the temporary file is
    // removed, the directory untouched.
    let target = dir.join("target");
    std::fs::create_dir_all(target.join("inside")).unwrap();
    assert!(write_atomic(&target, b"new", None).is_err());
    assert!(target.join("inside").is_dir());
    assert!(
        !temp_path(&target).exists(),
        "the temporary file is removed"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[test]
fn the_mode_is_set_before_the_content_lands() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = dir("mode");
    let path = dir.join("tokens.json");
    // A stale temporary file with a wide mode does not leak its mode into the result.
    std::fs::write(temp_path(&path), "stale").unwrap();
    std::fs::set_permissions(temp_path(&path), std::fs::Permissions::from_mode(0o644)).unwrap();
    write_atomic(&path, b"{}", Some(0o600)).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_capped_read_names_its_limit() {
    let dir = dir("capped");
    let path = dir.join("big");
    std::fs::write(&path, "12345").unwrap();
    assert_eq!(read_file_capped(&path, 5, "a test").unwrap(), "12345");
    let err = read_file_capped(&path, 4, "a test").unwrap_err();
    assert_eq!(err.to_string(), "larger than 4 bytes, the limit for a test");
    std::fs::remove_dir_all(&dir).unwrap();
}
