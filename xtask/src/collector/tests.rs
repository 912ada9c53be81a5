//! The stamp that vouches for the collector venv, the constraints it is installed with, the Python
//! it needs.

use super::*;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-collector-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_stamp_vouches_only_for_the_pinned_version_its_constraints_and_its_python() {
    let dir = temp_dir("stamp");
    assert_eq!(check(&dir), Err("not installed yet".to_owned()));
    fs::write(dir.join(STAMP), "{").unwrap();
    assert!(check(&dir).unwrap_err().ends_with("is malformed"));
    fs::write(dir.join(STAMP), stamp_text("20.26.0")).unwrap();
    assert_eq!(
        check(&dir),
        Err(format!("installed 20.26.0 (pinned {VERSION})"))
    );
    fs::write(dir.join(STAMP), stamp_text(VERSION)).unwrap();
    let other = "other constraints".to_owned();
    assert_eq!(check(&dir), Err(format!("installed with {other}")));
    fs::write(dir.join(CONSTRAINTS_FILE), "numpy==1.0\n").unwrap();
    assert_eq!(check(&dir), Err(format!("installed with {other}")));
    fs::write(dir.join(CONSTRAINTS_FILE), CONSTRAINTS).unwrap();
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

/// Each line pins one distribution to one version, and none is Phoenix itself (pinned in
/// [`VERSION`]), pip or setuptools (the venv's own), or names where to get it.
#[test]
fn the_constraints_pin_every_dependency_and_nothing_else() {
    let mut pins = 0;
    for line in CONSTRAINTS.lines() {
        if line.starts_with('#') {
            continue;
        }
        let (name, version) = line
            .split_once("==")
            .unwrap_or_else(|| panic!("not `name==version`: {line}"));
        let plain = |text: &str, extra: &str| {
            !text.is_empty()
                && text
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
        };
        assert!(plain(name, "-_.") && plain(version, ".+"), "{line}");
        let name = name.to_ascii_lowercase().replace('_', "-");
        assert!(
            !matches!(name.as_str(), "arize-phoenix" | "pip" | "setuptools"),
            "{line}"
        );
        pins += 1;
    }
    assert!(
        pins > 100,
        "{pins} pins: Phoenix has about 140 dependencies"
    );
    // Generated for the pinned version: a new pin needs new constraints.
    assert!(
        CONSTRAINTS.contains(&format!("#   pip install {DISTRIBUTION}=={VERSION}\n")),
        "regenerate collector/constraints.txt for {VERSION} (see its header)"
    );
}

#[test]
fn python_versions_are_read_and_checked_against_phoenix_s_range() {
    assert_eq!(parse_python_version("3 11\n"), Some((3, 11)));
    assert_eq!(parse_python_version("3 9 1"), None);
    assert_eq!(parse_python_version("three"), None);
    assert_eq!(parse_python_version(""), None);
    assert!(!supported((3, 10)));
    assert!(supported((3, 11)));
    assert!(supported((3, 14)));
    assert!(!supported((3, 15)));
    assert!(!supported((2, 12)));
}
