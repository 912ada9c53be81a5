//! The stamp that vouches for the llama-server venv.

use super::*;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-llama-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_stamp_vouches_only_for_the_pinned_version_with_its_python() {
    let dir = temp_dir("stamp");
    assert_eq!(check(&dir), Err("not installed yet".to_owned()));
    fs::write(dir.join(STAMP), "{").unwrap();
    assert!(check(&dir).unwrap_err().ends_with("is malformed"));
    fs::write(dir.join(STAMP), stamp_text("0.3.35")).unwrap();
    assert_eq!(
        check(&dir),
        Err(format!("installed 0.3.35 (pinned {VERSION})"))
    );
    fs::write(dir.join(STAMP), stamp_text(VERSION)).unwrap();
    assert!(
        check(&dir)
            .unwrap_err()
            .ends_with("venv/bin/python is missing")
    );
    fs::create_dir_all(dir.join("venv/bin")).unwrap();
    fs::write(python(&dir), "").unwrap();
    assert_eq!(check(&dir), Ok(()));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_requirement_pins_the_version() {
    assert_eq!(REQUIREMENT, format!("{DISTRIBUTION}[server]=={VERSION}"));
}
