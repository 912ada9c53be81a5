//! The constraints the collector venv is installed with, the Python it needs.

use super::*;

/// Each line pins one distribution to one version, and none is Phoenix itself (pinned in
/// [`PHOENIX`]), pip or setuptools (the venv's own), or names where to get it.
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
        CONSTRAINTS.contains(&format!("#   pip install {}\n", PHOENIX.requirement())),
        "regenerate collector/constraints.txt for {} (see its header)",
        PHOENIX.version
    );
}

#[test]
fn python_versions_are_checked_against_phoenix_s_range() {
    assert!(!PHOENIX.supports((3, 10)));
    assert!(PHOENIX.supports((3, 11)));
    assert!(PHOENIX.supports((3, 14)));
    assert!(!PHOENIX.supports((3, 15)));
}

#[test]
fn the_requirement_is_phoenix_alone() {
    assert_eq!(PHOENIX.requirement(), "arize-phoenix==20.26.1");
}
